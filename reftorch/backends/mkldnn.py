"""reftorch.backends.mkldnn: reftorch has no oneDNN (MKL-DNN) kernels; `enabled` is kept for programs that set it
and changes nothing reftorch computes."""
from __future__ import annotations

import sys

import reftorch.backends._module as _module

_flags = {"enabled": True, "deterministic": False, "allow_tf32": True}


def is_available():
    return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None):
    orig = (_flags["enabled"], _flags["deterministic"], _flags["allow_tf32"])
    for key, v in zip(("enabled", "deterministic", "allow_tf32"), (_enabled, _deterministic, _allow_tf32)):
        if v is not None:
            _flags[key] = bool(v)
    return orig


def flags(enabled=False, deterministic=False, allow_tf32=True):
    return _module.temporarily(sys.modules[__name__], enabled=enabled, deterministic=deterministic,
                               allow_tf32=allow_tf32)


def _prop(key):
    def put(v):
        _flags[key] = bool(v)
    return (lambda: _flags[key]), put


_module.install(__name__, enabled=_prop("enabled"), deterministic=_prop("deterministic"),
                allow_tf32=_prop("allow_tf32"))
