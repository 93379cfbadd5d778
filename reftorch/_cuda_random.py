"""Random numbers on cuda: a counter-based generator.

Element i of a draw is a pure function of (seed, offset + i): a splitmix64 hash of the counter,
keyed by the seed. So a draw does not depend on the launch shape (grid-stride threads each compute
their own elements), and `reftorch.cuda.manual_seed(s)` replays the same sequence. The offset
advances by the number of counters each draw uses (two per normal: Box-Muller), like PyTorch's
Philox offset. `hashed` is the same function in NumPy (tests and the host side use it).
Imported on the first cuda draw (it imports numba.cuda).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from numba import cuda

import reftorch._dtype as D
import reftorch.cuda as _rt_cuda
import reftorch._cuda_launch as launch
from ._cuda_dispatch import empty

M0 = np.uint64(0x9E3779B97F4A7C15)
M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)
S30, S27, S31 = np.uint64(30), np.uint64(27), np.uint64(31)
# numba's simulator runs the kernels over NumPy scalars, which warn where the device wraps silently
warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning, __name__)


@cuda.jit(device=True)
def mix(z):
    z = (z ^ (z >> S30)) * M1
    z = (z ^ (z >> S27)) * M2
    return z ^ (z >> S31)


@cuda.jit(device=True)
def draw(seed, counter):
    return mix(seed ^ mix(counter * M0 + M0))


@cuda.jit
def uniform_kernel(out, seed, offset, shift, scale):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        z = draw(seed, offset + np.uint64(i))
        out[i] = np.float64(z >> shift) * scale


@cuda.jit
def normal_kernel(out, seed, offset):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        c = offset + np.uint64(2) * np.uint64(i)
        u1 = np.float64(draw(seed, c) >> np.uint64(11)) * 1.1102230246251565e-16
        u2 = np.float64(draw(seed, c + np.uint64(1)) >> np.uint64(11)) * 1.1102230246251565e-16
        out[i] = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(6.283185307179586 * u2)


@cuda.jit
def integers_kernel(out, seed, offset, low, span):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        z = draw(seed, offset + np.uint64(i))
        out[i] = low + np.int64(z % span)


_KERNELS = {"uniform": uniform_kernel, "normal": normal_kernel, "integers": integers_kernel}


def _k(name):
    return _KERNELS[name]


def _state(n):
    """(seed, offset) for a draw of n counters; advances the cuda generator's offset."""
    seed, offset = _rt_cuda._counter_state(n)
    return np.uint64(seed), np.uint64(offset)


def _launch(kernel, out, *args):
    n = out._storage.data.shape[0]
    if n:
        t = launch._config["threads"]
        kernel[launch._blocks(n, t), t](out._storage.data, *args)
    return out


def _bits(dtype):
    return 24 if dtype is not D.float64 else 53


def uniform(shape, dtype, dev):
    out = empty(shape, D.float64 if dtype is D.float64 else D.float32, dev)
    b = _bits(dtype)
    seed, offset = _state(out.numel())
    _launch(_k("uniform"), out, seed, offset, np.uint64(64 - b), 2.0 ** -b)
    return out if out.dtype is dtype else out.to(dtype)


def normal(shape, dtype, dev):
    out = empty(shape, D.float64 if dtype is D.float64 else D.float32, dev)
    seed, offset = _state(2 * out.numel())
    _launch(_k("normal"), out, seed, offset)
    return out if out.dtype is dtype else out.to(dtype)


def integers(low, high, shape, dtype, dev):
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    out = empty(shape, D.int64, dev)
    seed, offset = _state(out.numel())
    _launch(_k("integers"), out, seed, offset, np.int64(low), np.uint64(high - low))
    return out if out.dtype is dtype else out.to(dtype)


# ---------------------------------------------------------------------------- the same, in NumPy

def _mix(z):
    z = (z ^ (z >> S30)) * M1
    z = (z ^ (z >> S27)) * M2
    return z ^ (z >> S31)


def hashed(seed, counters):
    """The 64-bit draws of the counters (a uint64 array), as the kernels compute them."""
    with np.errstate(over="ignore"):
        return _mix(np.uint64(seed) ^ _mix(np.asarray(counters, np.uint64) * M0 + M0))


def uniform_reference(seed, offset, n, dtype=D.float32):
    b = _bits(dtype)
    z = hashed(seed, np.uint64(offset) + np.arange(n, dtype=np.uint64))
    return ((z >> np.uint64(64 - b)).astype(np.float64) * 2.0 ** -b).astype(dtype.np)
