"""reftorch.backends.cudnn: reftorch's convolutions are its own kernels, not cuDNN's -- `is_available()` is False
and `version()` None; enabled, benchmark, deterministic, allow_tf32 and benchmark_limit are kept (PyTorch's
defaults) for programs that set and read them, and change nothing reftorch computes."""
from __future__ import annotations

import sys

import reftorch.backends._module as _module

_flags = {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True, "benchmark_limit": 10}


def is_available():
    return False


def version():
    return None


def is_acceptable(tensor):
    """Whether cuDNN would take this tensor: never, there is no cuDNN."""
    return False


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None, _allow_tf32=None):
    orig = (_flags["enabled"], _flags["benchmark"], _flags["benchmark_limit"], _flags["deterministic"],
            _flags["allow_tf32"])
    for key, v in zip(("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32"),
                      (_enabled, _benchmark, _benchmark_limit, _deterministic, _allow_tf32)):
        if v is not None:
            _flags[key] = v
    return orig


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """A with block under these flags (PyTorch's defaults for this context manager), restored afterwards."""
    return _module.temporarily(sys.modules[__name__], enabled=enabled, benchmark=benchmark,
                               benchmark_limit=benchmark_limit, deterministic=deterministic, allow_tf32=allow_tf32)


def _prop(key, kind):
    def put(v):
        _flags[key] = kind(v)
    return (lambda: _flags[key]), put


_module.install(__name__, enabled=_prop("enabled", bool), benchmark=_prop("benchmark", bool),
                deterministic=_prop("deterministic", bool), allow_tf32=_prop("allow_tf32", bool),
                benchmark_limit=_prop("benchmark_limit", int))
