"""reftorch.autocast / reftorch.amp.autocast: mixed precision regions (see reftorch/_autocast.py)."""
from __future__ import annotations

import functools
import warnings

import reftorch._autocast as _autocast
import reftorch._dtype as D


class autocast:
    """`with reftorch.autocast(device_type="cpu", dtype=reftorch.bfloat16):` or as a decorator.

    Inside the region, ops whose ops.yaml entry says `autocast: lower` (matmul, linear, conv, bmm...)
    run in `dtype`, ops marked `fp32` (softmax, log_softmax, losses, norms, sum, mean, exp, log, pow...)
    run in float32, and `promote` ops run in the widest floating type of their inputs."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _autocast.DEVICES:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = _autocast.get_dtype(device_type) if dtype is None else D.as_dtype(dtype)
        self._enabled = bool(enabled)
        self._cache_enabled = cache_enabled
        if device_type == "cpu" and self._enabled and self.fast_dtype not in D.HALF:
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.")
            self._enabled = False
        if device_type == "cuda" and self._enabled:
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling")
                self._enabled = False
            elif self.fast_dtype not in D.HALF:
                warnings.warn("In CUDA autocast, but the target dtype is not supported. Disabling autocast.\n"
                              "CUDA Autocast only supports dtypes of torch.float16 and torch.bfloat16 currently.")
                self._enabled = False
        self._prev = []

    def __enter__(self):
        self._prev.append(_autocast.enter(self.device, self._enabled, self.fast_dtype, self._cache_enabled))
        return self

    def __exit__(self, exc_type, exc, tb):
        _autocast.exit(self.device, self._prev.pop())
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        decorate_autocast.__script_unsupported = "@autocast() decorator is not supported in script mode"
        return decorate_autocast


def is_autocast_available(device_type):
    return device_type in _autocast.DEVICES


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for device_type (PyTorch's old no-argument form asks about cuda)."""
    return _autocast.is_enabled("cuda" if device_type is None else device_type)


def get_autocast_dtype(device_type):
    return _autocast.get_dtype(device_type)


def set_autocast_enabled(device_type, enabled=None):
    if enabled is None:         # set_autocast_enabled(enabled): the old cuda-only form
        device_type, enabled = "cuda", device_type
    _autocast.state.enabled[device_type] = bool(enabled)
    _autocast.state.any = any(_autocast.state.enabled.values())


def set_autocast_dtype(device_type, dtype):
    _autocast.state.dtype[device_type] = D.as_dtype(dtype)


def is_autocast_cache_enabled():
    return _autocast.state.cache_enabled


def set_autocast_cache_enabled(enabled):
    _autocast.state.cache_enabled = bool(enabled)


def clear_autocast_cache():
    _autocast.clear_cache()


# The device-specific spellings PyTorch deprecated (DeprecationWarning there too) in favour of the ones above.

def _deprecated(old, new):
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled():
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return _autocast.is_enabled("cpu")


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return _autocast.get_dtype("cpu")


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return _autocast.get_dtype("cuda")


def set_autocast_cpu_enabled(enabled):
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def set_autocast_cpu_dtype(dtype):
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype):
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)
