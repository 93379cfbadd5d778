"""Random factories (rand, randn, randint, randperm, normal and their _like forms) and the cpu Generator.

rand/randn (and dropout, through rand) draw from the counter-based Philox generator of _philox.py on cpu, the
other samplers from the Generator's NumPy PCG64 stream and from the counter-based generator of
reftorch/_cuda_random.py on cuda (imported on the first cuda draw: it imports numba.cuda). Argument handling is
_creation.py's (sizes, dtypes, out=, devices).
"""
from __future__ import annotations

import functools
import numbers
import pickle

import numpy as np

import reftorch._alloc as _alloc
import reftorch._dtype as D
import reftorch._layout as L
from ._creation import (_GRAD_DTYPE_ERROR, _finish, _grad, _into, _meta_device, _on_cuda, _on_meta, _out_dtype,
                        _sequence_size, _size_args, _size_items, _zero_gradient, tensor as _t)
import reftorch.cuda as cuda
from ._lazy import lazy_module
from ._device import as_device
from ._tensor import Tensor

_philox = lazy_module("reftorch._philox")              # Numba's JIT: on the first cpu draw
_cuda_random = lazy_module("reftorch._cuda_random")    # numba.cuda: on the first cuda draw


class Generator:
    """A seeded source of random numbers: rand / randn (and dropout, through rand) draw from the counter-based
    Philox generator of _philox.py -- element i of a draw is a function of (seed, offset + i), and the offset
    moves on by the size of each draw --, the other samplers from NumPy's PCG64 seeded with the same seed."""

    def __init__(self, device="cpu"):
        self.device = as_device(device)
        self._seed = 67280421310721
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        self._offset = 0

    def manual_seed(self, seed):
        self._seed = int(seed)
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        self._offset = 0
        return self

    def _counters(self, n):
        """(key, first counter) of a Philox draw of n elements; the next draw starts after them."""
        first = self._offset
        self._offset = first + int(n)
        return self._seed & 0xFFFFFFFFFFFFFFFF, first

    def seed(self):
        s = int(np.random.SeedSequence().entropy % (2 ** 63))
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return _t(list(pickle.dumps((self._rng.bit_generator.state, self._seed, self._offset))), dtype=D.uint8)

    def set_state(self, state):
        pcg, self._seed, self._offset = pickle.loads(bytes(state.tolist()))
        self._rng.bit_generator.state = pcg
        return self


default_generator = Generator()


def manual_seed(seed):
    default_generator.manual_seed(seed)
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


_random_hook = None     # while vmap is on: how a random op runs there (reftorch/func/_vmap.py: randomness)


def random_op(kind):
    """A public random op of a kind ("factory": draws of a given size; "fill": an in-place filler of self;
    "sample": draws parameterised by tensors): inside vmap, vmap's hook runs it by its randomness flag."""
    def decorate(fn):
        @functools.wraps(fn)
        def op(*args, **kwargs):
            if _random_hook is None:
                return fn(*args, **kwargs)
            return _random_hook(kind, fn, args, kwargs)
        return op
    return decorate


def _rng(generator):
    return (generator or default_generator)._rng


def _counters(generator, n):
    """(key, first counter) of a Philox draw of n elements from generator (default: the global one)."""
    return (generator or default_generator)._counters(n)


_RANDOM_OVERLOADS = (
    " * (tuple of ints size, *, torch.Generator generator, Tensor out = None, torch.dtype dtype = None, "
    "torch.layout layout = None, torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n"
    " * (tuple of ints size, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
    "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n")


def _check_one_size(fname, args, size, bare):
    """rand/randn given a size both ways, or called bare: PyTorch's parser finds no overload (zeros & co say
    'multiple values' and 'missing')."""
    if (args and size is not None) or (not args and size is None and bare):
        got = [type(a).__name__ for a in args] + ([f"size={type(size).__name__}"] if size is not None else [])
        raise TypeError(f"{fname}() received an invalid combination of arguments - got ({', '.join(got)}), but "
                        f"expected one of:\n" + _RANDOM_OVERLOADS)


@random_op("factory")
def rand(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    _check_one_size("rand", args, size, bare=dtype is None and out is None and device is None and generator is None)
    shape = _size_args("rand", args, size)
    dt = _out_dtype("rand", dtype, out)
    if dt.category < 2:        # checked before drawing: the generator's state is left as it was
        raise NotImplementedError(f"\"check_uniform_bounds\" not implemented for '{dt.short}'")
    if out is None and _meta_device(device):
        return _on_meta(shape, dt, requires_grad)
    if dt.is_complex:       # PyTorch: real and imaginary parts each uniform on [0, 1), drawn as interleaved pairs
        return _complex_draw("rand", _philox.uniform, 1.0, shape, dt, generator, device, out, requires_grad)
    if _on_cuda(device) and out is None:
        return _grad(_cuda_random.uniform(shape, dt, as_device(device)), requires_grad)
    with _alloc.sized(shape, 8):
        arr = _philox.uniform(L.numel(shape), *_counters(generator, L.numel(shape)), dt.np).reshape(shape)
    t = _finish(arr, dt, device if out is None else None, requires_grad)
    return _into("rand", out, t)


@random_op("factory")
def randn(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False):
    _check_one_size("randn", args, size, bare=dtype is None and out is None and device is None and generator is None)
    shape = _size_args("randn", args, size)
    dt = _out_dtype("randn", dtype, out)
    if dt.category < 2:
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for '{dt.short}'")
    if out is None and _meta_device(device):
        return _on_meta(shape, dt, requires_grad)
    if dt.is_complex:       # PyTorch: real and imaginary parts each N(0, 1/2), drawn as interleaved pairs
        return _complex_draw("randn", _philox.normal, np.sqrt(0.5), shape, dt, generator, device, out,
                             requires_grad)
    if _on_cuda(device) and out is None:
        return _grad(_cuda_random.normal(shape, dt, as_device(device)), requires_grad)
    with _alloc.sized(shape, 8):
        arr = _philox.normal(L.numel(shape), *_counters(generator, L.numel(shape)), dt.np).reshape(shape)
    t = _finish(arr, dt, device if out is None else None, requires_grad)
    return _into("randn", out, t)


def _complex_draw(fname, draw, scale, shape, dt, generator, device, out, requires_grad):
    """A complex rand/randn: 2n draws of the generator's stream (float32 for complex32 and complex64, float64 for
    complex128), scaled, as the interleaved real and imaginary parts (complex32 rounded from complex64)."""
    real_np = np.float64 if dt is D.complex128 else np.float32
    n = 2 * L.numel(shape)
    with _alloc.sized(shape, 2 * np.dtype(real_np).itemsize):
        pairs = draw(n, *_counters(generator, n), real_np)
    arr = (pairs * real_np(scale)).astype(real_np).view(np.complex128 if dt is D.complex128 else np.complex64)
    t = _finish(arr.reshape(shape), dt, device if out is None else None, requires_grad)
    return _into(fname, out, t)


_RANDINT_OVERLOADS = (
    " * (int high, tuple of ints size, *, torch.Generator generator, Tensor out = None, torch.dtype dtype = None, "
    "torch.layout layout = None, torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n"
    " * (int high, tuple of ints size, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, "
    "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n"
    " * (int low, int high, tuple of ints size, *, torch.Generator generator, Tensor out = None, torch.dtype dtype = "
    "None, torch.layout layout = None, torch.device device = None, bool pin_memory = False, bool requires_grad = "
    "False)\n"
    " * (int low, int high, tuple of ints size, *, Tensor out = None, torch.dtype dtype = None, torch.layout layout = "
    "None, torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n")


def _randint_args(args, kw):
    """randint's overloads: (high, size), (low, high, size), any of them by keyword."""
    names = ("low", "high", "size") if len(args) == 3 or "low" in kw or (len(args) == 2 and "size" in kw) \
        else ("high", "size")
    got = dict(zip(names, args)) if set(kw) <= {"low", "high", "size"} and len(args) <= 3 else None
    for k in ("low", "high", "size") if got is not None else ():
        if k in kw and kw[k] is not None:
            if k in got or k not in names:
                got = None
                break
            got[k] = kw[k]
    if got is not None and not args and kw and "high" not in got:
        raise TypeError('randint() missing 2 required positional argument: "high", "size"')
    bad = got is None or any(k not in got for k in names) or \
        any(isinstance(got[k], (tuple, list)) for k in names[:-1]) or \
        (len(args) == 3 and not isinstance(got["size"], (tuple, list)))
    if bad:
        types = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kw.items() if v is not None]
        raise TypeError(f"randint() received an invalid combination of arguments - got ({', '.join(types)}), but "
                        f"expected one of:\n" + _RANDINT_OVERLOADS)
    for i, k in enumerate(names[:-1]):
        v = got.get(k)
        if isinstance(v, Tensor) and v.dim() == 0 and v.dtype.category < 2:
            got[k] = v = int(v)
        if not isinstance(v, numbers.Integral):
            raise TypeError(f"randint(): argument '{k}' (position {i + 1}) must be int, not {type(v).__name__}")
    size = got["size"]
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' (position {len(names)}) must be tuple of ints, not "
                        f"{type(size).__name__}")
    return int(got.get("low", 0)), int(got["high"]), _size_items("randint", size)


@random_op("factory")
def randint(*args, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
            pin_memory=False, **kw):
    """randint(high, size) or randint(low, high, size): integers drawn uniformly from [low, high)."""
    low, high, shape = _randint_args(args, kw)
    dt = _out_dtype("randint", dtype, out, D.int64)
    if dt.is_complex:
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types")
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if requires_grad and not dt.is_floating_point:
        raise RuntimeError(_GRAD_DTYPE_ERROR)
    if out is None and _meta_device(device):
        return _on_meta(shape, dt, requires_grad)
    if _on_cuda(device) and out is None:
        return _grad(_cuda_random.integers(low, high, shape, dt, as_device(device)), requires_grad)
    with _alloc.sized(shape, 8):
        arr = _rng(generator).integers(low, high, shape).astype(dt.np)
    t = _finish(arr, dt, device if out is None else None, requires_grad)
    return _into("randint", out, t)


@random_op("factory")
def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    dt = _out_dtype("randperm", dtype, out, D.int64)
    t = _finish(_rng(generator).permutation(int(n)).astype(dt.np), dt, device if out is None else None,
                requires_grad)
    return _into("randperm", out, t)


@random_op("factory")
def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           requires_grad=False, pin_memory=False):
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        m = mean._array() if isinstance(mean, Tensor) else mean
        s = std._array() if isinstance(std, Tensor) else std
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        dt = mean.dtype if isinstance(mean, Tensor) else std.dtype
        t = _finish((m + s * _rng(generator).standard_normal(shape)).astype(dt.np), dt, device, requires_grad)
        return _into("normal", out, _zero_gradient(t, mean, std))
    dt = _out_dtype("normal", dtype, out)
    if out is None and _meta_device(device):
        return _on_meta(_sequence_size("normal", size), dt, requires_grad)
    t = _finish(_rng(generator).normal(mean, std, _sequence_size("normal", size)).astype(dt.np), dt,
                device if out is None else None, requires_grad)
    return _into("normal", out, t)


def rand_like(input, *, dtype=None, generator=None, requires_grad=False, device=None):
    return rand(input.shape, generator=generator, dtype=dtype or input.dtype, requires_grad=requires_grad,
                device=device if device is not None else input.device)


def randn_like(input, *, dtype=None, generator=None, requires_grad=False, device=None):
    return randn(input.shape, generator=generator, dtype=dtype or input.dtype, requires_grad=requires_grad,
                 device=device if device is not None else input.device)


def randint_like(input, low, high=None, *, generator=None, dtype=None, layout=None, device=None,
                 requires_grad=False, pin_memory=False):
    """randint_like(input, high) or randint_like(input, low, high): input's shape, dtype and device (unless
    given), integers drawn uniformly from [low, high); high may be a 0-d tensor, as in PyTorch."""
    low, high = (0, low) if high is None else (low, high)
    return randint(int(low), int(high), tuple(input.shape), generator=generator, dtype=dtype or input.dtype,
                   layout=layout, device=device if device is not None else input.device,
                   requires_grad=requires_grad, pin_memory=pin_memory)
