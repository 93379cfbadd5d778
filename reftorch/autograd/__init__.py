"""reftorch.autograd: the engine's public face (backward, grad, Function, grad modes, anomaly mode).

The tensor core imports this package's recording half (grad_mode, anomaly_mode, graph, record, inplace,
engine); the half written above the ops (Function, backward/grad, forward_ad, functional, gradcheck,
profiler) imports the core, so it loads on first use (PEP 562) -- importing it here would run it in the
middle of the core's own import."""
from __future__ import annotations

import importlib as _importlib
import sys as _sys
import types as _types

from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,  # noqa: F401
                        is_inference_mode_enabled)
from .anomaly_mode import (detect_anomaly, set_detect_anomaly, is_anomaly_enabled,  # noqa: F401
                           is_anomaly_check_nan_enabled)
from .graph import Node  # noqa: F401
import reftorch.autograd.graph as graph  # noqa: F401

_SUBMODULES = ("function", "profiler", "profiler_util", "forward_ad", "functional")   # (and gradcheck, variable)
_NAMES = {"Function": "function", "FunctionCtx": "function", "once_differentiable": "function",
          "gradcheck": "gradcheck", "gradgradcheck": "gradcheck", "GradcheckError": "gradcheck",
          "Variable": "variable", "variable": "variable", "backward": "_grad", "grad": "_grad"}


def __getattr__(name):
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    if name in _NAMES:
        value = getattr(_importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES) | set(_NAMES))


class _Package(_types.ModuleType):
    """The import system binds a submodule on its package when it first loads it; reftorch.autograd.gradcheck
    and .variable must stay the functions (as torch's) once their modules are imported."""

    def __setattr__(self, name, value):
        if name in ("gradcheck", "variable") and isinstance(value, _types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
