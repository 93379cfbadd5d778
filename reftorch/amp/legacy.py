"""The spellings PyTorch users still write: reftorch.cuda.amp.{autocast, GradScaler, custom_fwd, custom_bwd},
reftorch.cpu.amp.{autocast, GradScaler} (deprecated there too: same FutureWarning, same defaults), the
reftorch.cpu module, and reftorch.amp.custom_fwd / custom_bwd.

reftorch.cuda is a module, not a package, so `reftorch.cuda.amp` and `reftorch.cpu(.amp)` are module objects
built here and registered in sys.modules when this module loads; reftorch loads it on first use (reftorch.cpu,
reftorch.cuda.amp, or `import reftorch.cuda.amp` through reftorch/__init__.py's finder), and then
`from reftorch.cuda.amp import autocast, GradScaler` works as it does with torch.
"""
from __future__ import annotations

import functools
import sys
import types
import warnings

import reftorch._autocast as _autocast
import reftorch._dtype as D
from .autocast_mode import autocast as _autocast_cls
from .grad_scaler import GradScaler as _GradScaler


def _deprecated(old, new):
    warnings.warn(f"`{old}(args...)` is deprecated. Please use `{new}` instead.", FutureWarning,
                  stacklevel=3)


class CudaAutocast(_autocast_cls):
    """torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)."""

    def __init__(self, enabled=True, dtype=D.float16, cache_enabled=True):
        _deprecated("torch.cuda.amp.autocast", "torch.amp.autocast('cuda', args...)")
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class CpuAutocast(_autocast_cls):
    """torch.cpu.amp.autocast(enabled=True, dtype=torch.bfloat16, cache_enabled=True)."""

    def __init__(self, enabled=True, dtype=D.bfloat16, cache_enabled=True):
        _deprecated("torch.cpu.amp.autocast", "torch.amp.autocast('cpu', args...)")
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class CudaGradScaler(_GradScaler):
    """torch.cuda.amp.GradScaler(init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
    enabled=True)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        _deprecated("torch.cuda.amp.GradScaler", "torch.amp.GradScaler('cuda', args...)")
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


class CpuGradScaler(_GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        _deprecated("torch.cpu.amp.GradScaler", "torch.amp.GradScaler('cpu', args...)")
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


for _cls in (CudaAutocast, CpuAutocast, CudaGradScaler, CpuGradScaler):
    _cls.__name__ = _cls.__qualname__ = "autocast" if "Autocast" in _cls.__name__ else "GradScaler"


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom autograd.Function's forward: with cast_inputs, inside an autocast region of
    device_type, floating tensor args are cast to it and forward runs with autocast off there; the state is
    remembered for custom_bwd."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = _autocast.get_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = _autocast.is_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = _autocast.is_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if autocast_context:
            with _autocast_cls(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom autograd.Function's backward: runs it with the autocast state its forward had."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with _autocast_cls(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd


def _cast(value, device_type, dtype):
    from .._tensor import Tensor
    if isinstance(value, Tensor):
        ok = value.is_floating_point() and value.device.type == device_type and value.dtype is not D.float64
        return value.to(dtype) if ok else value
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def _cuda_custom_fwd(fwd=None, *, cast_inputs=None):
    _deprecated("torch.cuda.amp.custom_fwd", "torch.amp.custom_fwd(args..., device_type='cuda')")
    return custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def _cuda_custom_bwd(bwd):
    _deprecated("torch.cuda.amp.custom_bwd", "torch.amp.custom_bwd(args..., device_type='cuda')")
    return custom_bwd(bwd, device_type="cuda")


_cuda_custom_fwd.__name__ = _cuda_custom_fwd.__qualname__ = "custom_fwd"
_cuda_custom_bwd.__name__ = _cuda_custom_bwd.__qualname__ = "custom_bwd"


_package = sys.modules[__name__.split(".")[0]]      # reftorch (its core is imported before any library module)
cuda_amp = types.ModuleType(f"{_package.__name__}.cuda.amp", "torch.cuda.amp (deprecated spellings of torch.amp)")
cuda_amp.autocast, cuda_amp.GradScaler = CudaAutocast, CudaGradScaler
cuda_amp.custom_fwd, cuda_amp.custom_bwd = _cuda_custom_fwd, _cuda_custom_bwd
cpu_amp = types.ModuleType(f"{_package.__name__}.cpu.amp", "torch.cpu.amp (deprecated spellings of torch.amp)")
cpu_amp.autocast, cpu_amp.GradScaler = CpuAutocast, CpuGradScaler
cpu = types.ModuleType(f"{_package.__name__}.cpu", "torch.cpu: the host device")
cpu.amp = cpu_amp
cpu.is_available = lambda: True
cpu.device_count = lambda: 1
cpu.current_device = lambda: "cpu"
cpu.synchronize = lambda device=None: None
_package.cuda.amp = cuda_amp
_package.cpu = cpu
sys.modules.update({m.__name__: m for m in (cuda_amp, cpu, cpu_amp)})
