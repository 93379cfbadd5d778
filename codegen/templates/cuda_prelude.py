# Scalar helpers for the CUDA kernels: the names of prelude.py (the CPU helpers), as numba.cuda
# device functions, so that one scalar expression of ops.yaml compiles for both targets. The generator
# copies this text into reftorch/kernels/cuda.py; a helper that prelude.py defines and this file does
# not is copied from prelude.py with its decorator switched to a device function (the PTX check in
# tests/test_cuda_ptx.py tells when such a copy does not compile for CUDA).
import math
import numpy as np
from numba import cuda, types
from numba.core import config as _numba_config

from math import (exp, log, log1p, expm1, sqrt, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, asinh,
                  acosh, atanh, erf, erfc, fabs, atan2, hypot, copysign, fmod, lgamma, log2, log10, inf, nan,
                  pi, e)

# The simulator (NUMBA_ENABLE_CUDASIM=1) runs kernels as plain Python over NumPy scalars. There the
# `math` functions would raise where CUDA's libdevice returns inf or nan (log(0), sqrt(-1)) and would
# turn float32 into float64; NumPy's ufuncs behave like the device, so the simulator uses them.
SIMULATOR = bool(_numba_config.ENABLE_CUDASIM)
if SIMULATOR:
    from numpy import (exp, log, log1p, expm1, sqrt, sin, cos, tan, arcsin as asin, arccos as acos,  # noqa
                       arctan as atan, sinh, cosh, tanh, arcsinh as asinh, arccosh as acosh, arctanh as atanh,
                       fabs, arctan2 as atan2, hypot, copysign, fmod, log2, log10)


@cuda.jit(device=True, inline=True)
def isnan(x):
    return x != x


@cuda.jit(device=True, inline=True)
def isinf(x):
    return x == inf or x == -inf


@cuda.jit(device=True, inline=True)
def isfinite(x):
    return not (x != x or x == inf or x == -inf)


# On CUDA math.floor/ceil/trunc keep the float type (libdevice floorf/floor), as np.floor does on CPU;
# in the simulator math.floor would return a Python int (and raise on inf), so it takes NumPy's.
if SIMULATOR:
    floor, ceil, trunc = np.floor, np.ceil, np.trunc
else:
    @cuda.jit(device=True, inline=True)
    def floor(x):
        return math.floor(x)

    @cuda.jit(device=True, inline=True)
    def ceil(x):
        return math.ceil(x)

    @cuda.jit(device=True, inline=True)
    def trunc(x):
        return math.trunc(x)


@cuda.jit(device=True, inline=True)
def rint(x):
    # round half to even, as torch.round and np.rint do (inf and nan fall through unchanged)
    f = floor(x)
    d = x - f
    if d > 0.5 or (d == 0.5 and fmod(f, 2.0) != 0):
        f = f + 1
    return f


@cuda.jit(device=True, inline=True)
def exp2(x):
    return 2.0 ** x


@cuda.jit(device=True, inline=True)
def sign(x):
    if x != x:
        return x
    return 1 if x > 0 else (-1 if x < 0 else 0)


@cuda.jit(device=True, inline=True)
def fmin(a, b):
    # NaN-ignoring minimum (np.fmin)
    if a != a:
        return b
    if b != b:
        return a
    return a if a <= b else b


@cuda.jit(device=True, inline=True)
def fmax(a, b):
    # NaN-ignoring maximum (np.fmax)
    if a != a:
        return b
    if b != b:
        return a
    return a if a >= b else b


@cuda.jit(device=True, inline=True)
def signbit(x):
    return copysign(1.0, x) < 0


@cuda.jit(device=True, inline=True)
def floordiv(a, b):
    # Python/PyTorch floor division for integers and floats
    return a // b


@cuda.jit(device=True, inline=True)
def pymod(a, b):
    # remainder with the sign of the divisor (torch.remainder, Python %)
    return a % b


@cuda.jit(device=True, inline=True)
def logaddexp(a, b):
    m = a if a > b else b
    if m == -inf:
        return m
    if m == inf:
        return m
    return m + log1p(exp(-abs(a - b)))


@cuda.jit(device=True, inline=True)
def lshift(a, b):
    return a << b


@cuda.jit(device=True, inline=True)
def rshift(a, b):
    return a >> b
