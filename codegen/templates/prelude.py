# Scalar helpers shared by the scalar expressions of ops.yaml. The generator copies this text into
# every generated kernel module so that each module stays self-contained (Numba's cache notices edits
# to the file itself, not to modules it imports). Each helper is inlined into the kernels that use it.
import math
import numpy as np
from numba import njit

from math import (exp, log, log1p, expm1, sqrt, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, asinh,
                  acosh, atanh, erf, erfc, fabs, atan2, hypot, copysign, fmod, lgamma, log2, log10, inf, nan,
                  pi, e)


@njit(inline="always")
def isnan(x):
    return x != x


@njit(inline="always")
def isinf(x):
    return x == inf or x == -inf


@njit(inline="always")
def isfinite(x):
    return not (x != x or x == inf or x == -inf)


@njit(inline="always")
def floor(x):
    return np.floor(x)


@njit(inline="always")
def ceil(x):
    return np.ceil(x)


@njit(inline="always")
def trunc(x):
    return np.trunc(x)


@njit(inline="always")
def rint(x):
    # round half to even, as torch.round and np.round do
    return np.rint(x)


@njit(inline="always")
def exp2(x):
    return np.exp2(x)


@njit(inline="always")
def sign(x):
    return (x > 0) - (x < 0) if x == x else x


@njit(inline="always")
def fmin(a, b):
    return np.fmin(a, b)


@njit(inline="always")
def fmax(a, b):
    return np.fmax(a, b)


@njit(inline="always")
def signbit(x):
    return np.signbit(x)


@njit(inline="always")
def floordiv(a, b):
    # Python/PyTorch floor division for integers and floats
    return a // b


@njit(inline="always")
def pymod(a, b):
    # remainder with the sign of the divisor (torch.remainder, Python %)
    return a % b


@njit(inline="always")
def logaddexp(a, b):
    m = a if a > b else b
    if m == -inf:
        return m
    if m == inf:
        return m
    return m + log1p(exp(-abs(a - b)))


@njit(inline="always")
def lshift(a, b):
    return a << b


@njit(inline="always")
def rshift(a, b):
    return a >> b
