"""Creation functions: tensor, zeros, arange, rand... and the seeded random generator."""
from __future__ import annotations

import math
import numbers

import numpy as np

from ._layout import contiguous_array as _contig

from . import _alloc
from . import _dtype as D
from . import _layout as L
from ._device import as_device
from . import _meta
from ._tensor import Storage, Tensor
from .autograd import grad_mode


def _finish(arr, dtype, device=None, requires_grad=False):
    dev = as_device(device)
    if dev.type == "meta":      # the geometry only (reftorch/_meta.py)
        return _meta.empty(arr.shape, dtype).requires_grad_(requires_grad)
    arr = _contig(arr)
    if dev.type == "cuda":
        from ._cuda_dispatch import from_host
        t = from_host(arr, dtype, dev)
        if requires_grad:
            t.requires_grad_(True)
        return t
    t = Tensor._make(Storage(arr.reshape(-1)), 0, tuple(arr.shape), L.contiguous_strides(arr.shape), dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer_dtype(data):
    """PyTorch's inference: bools -> bool, ints -> int64, any float -> the default float dtype."""
    cat = -1

    def walk(x):
        nonlocal cat
        if isinstance(x, Tensor):
            cat = max(cat, 3 + x.dtype.category)  # tensors inside lists keep their dtype (see below)
            return
        if isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
            return
        if isinstance(x, np.ndarray):
            cat = max(cat, 3 + D.from_numpy(x.dtype).category)
            return
        cat = max(cat, D.scalar_category(x) if not isinstance(x, complex) else 2)

    walk(data)
    return cat


def _to_nested(data):
    if isinstance(data, Tensor):
        return data._array()
    if isinstance(data, (list, tuple)):
        return [_to_nested(x) for x in data]
    return data


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of data (nested sequences, scalars, NumPy arrays or tensors)."""
    if isinstance(data, Tensor):
        arr = data._array().copy()
        dt = D.as_dtype(dtype) if dtype is not None else data.dtype
        return _finish(arr.astype(dt.np, copy=False), dt, device if device is not None else data.device, requires_grad)
    if isinstance(data, np.ndarray):
        dt = D.as_dtype(dtype) if dtype is not None else D.from_numpy(data.dtype)
        return _finish(np.array(data, dtype=dt.np), dt, device, requires_grad)
    if dtype is not None:
        dt = D.as_dtype(dtype)
    else:
        cat = _infer_dtype(data)
        if cat >= 3:        # tensors or arrays inside: their dtype decides
            dt = D.from_numpy(np.array(_to_nested(data)).dtype)
        else:
            dt = D.defaults.float if cat == -1 else D.scalar_default(cat)
    try:
        arr = np.array(_to_nested(data), dtype=dt.np)
    except (ValueError, TypeError) as err:
        raise ValueError(f"could not create a tensor from {type(data).__name__}: {err}") from None
    if arr.dtype == object:
        raise TypeError(f"could not infer a dtype for {data!r}")
    return _finish(arr, dt, device, requires_grad)


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, Tensor):
        return data if dtype is None or D.as_dtype(dtype) is data.dtype else data.to(dtype)
    if isinstance(data, np.ndarray) and (dtype is None or D.as_dtype(dtype).np == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(arr):
    """A tensor sharing memory with a NumPy array."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    return Tensor._from_array(arr)


def scalar_tensor(v, dtype=None, device=None, requires_grad=False):
    if dtype is None:
        dt = D.scalar_default(D.scalar_category(v))
    else:
        dt = D.as_dtype(dtype)
    return _finish(np.array(v, dtype=dt.np).reshape(()), dt, device, requires_grad)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s)
        if not isinstance(s, numbers.Integral):
            raise TypeError(f"expected a sequence of integers as size, got {type(s).__name__} {s!r}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


def _dt(dtype, default=None):
    return D.as_dtype(dtype) if dtype is not None else (default or D.defaults.float)


def empty(*size, dtype=None, device=None, requires_grad=False, out=None, pin_memory=False, memory_format=None):
    shape = _shape(size)
    dt = _dt(dtype)
    with _alloc.sized(shape, dt.itemsize):      # PyTorch's errors for sizes no memory holds (reftorch/_alloc.py)
        arr = np.empty(shape, dt.np)
    return _finish(arr, dt, device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None):
    shape = _shape(size)
    dt = _dt(dtype)
    with _alloc.sized(shape, dt.itemsize):
        arr = np.zeros(shape, dt.np)
    return _finish(arr, dt, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None):
    shape = _shape(size)
    dt = _dt(dtype)
    with _alloc.sized(shape, dt.itemsize):
        arr = np.ones(shape, dt.np)
    return _finish(arr, dt, device, requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    shape = _shape((size,) if isinstance(size, int) else (tuple(size),))
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dt = D.as_dtype(dtype) if dtype is not None else D.scalar_default(D.scalar_category(fill_value))
    with _alloc.sized(shape, dt.itemsize):
        arr = np.full(shape, fill_value, dt.np)
    return _finish(arr, dt, device, requires_grad)


def _like(fn, t, *args, dtype=None, device=None, requires_grad=False, memory_format=None, **kw):
    return fn(t.shape, *args, dtype=dtype if dtype is not None else t.dtype, requires_grad=requires_grad,
              device=device if device is not None else t.device)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(zeros, input, dtype=dtype, requires_grad=requires_grad, device=device)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(ones, input, dtype=dtype, requires_grad=requires_grad, device=device)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(empty, input, dtype=dtype, requires_grad=requires_grad, device=device)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None):
    return full(input.shape, fill_value, dtype=dtype if dtype is not None else input.dtype,
                requires_grad=requires_grad, device=device if device is not None else input.device)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if vals[2] == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        dt = D.defaults.float if any(isinstance(v, float) for v in vals) else D.int64
    else:
        dt = D.as_dtype(dtype)
    n = max(0, math.ceil((vals[1] - vals[0]) / vals[2]))
    with _alloc.sized((n,), dt.itemsize):
        arr = (vals[0] + np.arange(n, dtype=np.float64 if dt.category == 2 else np.int64) * vals[2])
    return _finish(arr.astype(dt.np), dt, device, requires_grad)


def _no_bool(dt, name):
    if dt is D.bool_:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    dt = _dt(dtype)
    _no_bool(dt, "linspace")
    with _alloc.sized((int(steps),), dt.itemsize):
        arr = np.linspace(float(start), float(end), int(steps)).astype(dt.np)
    return _finish(arr, dt, device, requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    dt = _dt(dtype)
    _no_bool(dt, "logspace")
    return _finish(np.logspace(float(start), float(end), int(steps), base=base).astype(dt.np), dt, device,
                   requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    dt = _dt(dtype)
    with _alloc.sized((n, m if m is not None else n), dt.itemsize):
        arr = np.eye(n, m if m is not None else n, dtype=dt.np)
    return _finish(arr, dt, device, requires_grad)


# ----------------------------------------------------------------------------- random

class Generator:
    """A seeded source of random numbers (NumPy's PCG64 underneath)."""

    def __init__(self, device="cpu"):
        self.device = as_device(device)
        self._seed = 67280421310721
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed):
        self._seed = int(seed)
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self):
        s = int(np.random.SeedSequence().entropy % (2 ** 63))
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        from ._creation import tensor as _t
        import pickle
        return _t(list(pickle.dumps(self._rng.bit_generator.state)), dtype=D.uint8)

    def set_state(self, state):
        import pickle
        self._rng.bit_generator.state = pickle.loads(bytes(state.tolist()))
        return self


default_generator = Generator()


def manual_seed(seed):
    default_generator.manual_seed(seed)
    from . import cuda
    cuda.manual_seed(seed)      # torch.manual_seed seeds every device
    return default_generator


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


def _rng(generator):
    return (generator or default_generator)._rng


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    dt = _dt(dtype)
    if dt.category != 2:        # checked before drawing: the generator's state is left as it was
        raise RuntimeError(f"\"check_uniform_bounds\" not implemented for '{dt.short}'")
    if _on_cuda(device):
        from ._cuda_random import uniform
        return _grad(uniform(_shape(size), dt, as_device(device)), requires_grad)
    with _alloc.sized(_shape(size), dt.itemsize):
        arr = _rng(generator).random(_shape(size), dtype=np.float64).astype(dt.np)
    return _finish(arr, dt, device, requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    dt = _dt(dtype)
    if dt.category != 2:
        raise RuntimeError(f"\"normal_kernel_cpu\" not implemented for '{dt.short}'")
    if _on_cuda(device):
        from ._cuda_random import normal as _cuda_normal
        return _grad(_cuda_normal(_shape(size), dt, as_device(device)), requires_grad)
    with _alloc.sized(_shape(size), dt.itemsize):
        arr = _rng(generator).standard_normal(_shape(size)).astype(dt.np)
    return _finish(arr, dt, device, requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing 1 required positional argument: 'size'")
    dt = _dt(dtype, D.int64)
    if _on_cuda(device):
        from ._cuda_random import integers
        return _grad(integers(low, high, _shape((tuple(size),)), dt, as_device(device)), requires_grad)
    with _alloc.sized(_shape((tuple(size),)), dt.itemsize):
        arr = _rng(generator).integers(low, high, _shape((tuple(size),))).astype(dt.np)
    return _finish(arr, dt, device, requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    dt = _dt(dtype, D.int64)
    return _finish(_rng(generator).permutation(int(n)).astype(dt.np), dt, device, requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        m = mean._array() if isinstance(mean, Tensor) else mean
        s = std._array() if isinstance(std, Tensor) else std
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        dt = mean.dtype if isinstance(mean, Tensor) else std.dtype
        return _finish((m + s * _rng(generator).standard_normal(shape)).astype(dt.np), dt, device, requires_grad)
    dt = _dt(dtype)
    return _finish(_rng(generator).normal(mean, std, _shape((tuple(size),))).astype(dt.np), dt, device,
                   requires_grad)


def rand_like(input, *, dtype=None, generator=None, requires_grad=False, device=None):
    return rand(input.shape, generator=generator, dtype=dtype or input.dtype, requires_grad=requires_grad,
                device=device if device is not None else input.device)


def randn_like(input, *, dtype=None, generator=None, requires_grad=False, device=None):
    return randn(input.shape, generator=generator, dtype=dtype or input.dtype, requires_grad=requires_grad,
                 device=device if device is not None else input.device)


def randint_like(input, low, high=None, *, dtype=None, requires_grad=False, device=None):
    return randint(low, high, input.shape, dtype=dtype or input.dtype,
                   device=device if device is not None else input.device)


def bernoulli(input, p=None, *, generator=None):
    if input.device.type == "cuda":
        from ._cuda_random import uniform
        u = uniform(input._shape, D.float64 if input.dtype is D.float64 else D.float32, input.device)
        return ((u < (input if p is None else p)).to(input.dtype)).detach()
    probs = input._array() if p is None else np.full(input._shape, p)
    return _finish((_rng(generator).random(input._shape) < probs).astype(input.dtype.np), input.dtype)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    p = input._array().astype(np.float64)
    rows = p.reshape(-1, p.shape[-1])
    out = []
    for row in rows:
        out.append(_rng(generator).choice(len(row), num_samples, replace=replacement, p=row / row.sum()))
    res = np.array(out).reshape(p.shape[:-1] + (num_samples,))
    return _finish(res.astype(np.int64), D.int64)


# ----------------------------------------------------------------------------- internal

def _copy_tensor(t, keep_graph=True):
    """A contiguous copy; recorded as `clone` when grad mode records (keep_graph)."""
    if keep_graph and grad_mode.state.enabled and t.requires_grad:
        from . import _functional as F
        return F.clone(t)
    if t.device.type == "meta":
        return _meta.like(t)
    if t.device.type == "cuda":
        from ._cuda_dispatch import clone
        return clone(t)
    return _finish(t._array().copy(), t.dtype)


def _on_cuda(device):
    return device is not None and as_device(device).type == "cuda"


def _grad(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild(arr, dtype_name, requires_grad, device=None):
    t = from_numpy(arr.copy())
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t
