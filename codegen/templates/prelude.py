# Scalar helpers shared by the scalar expressions of ops.yaml. The generator copies this text into
# every generated kernel module so that each module stays self-contained (Numba's cache notices edits
# to the file itself, not to modules it imports). Each helper is inlined into the kernels that use it.
import math
import numpy as np
from numba import njit

from math import (exp, log, log1p, expm1, sqrt, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, asinh,
                  acosh, atanh, erf, erfc, fabs, atan2, hypot, copysign, fmod, lgamma, log2, log10, inf, nan,
                  pi, e)


# `isinstance(x, (float, np.float32, np.float64))` is decided while Numba types a helper, so only the branch
# for x's type is compiled (an integer branch may use integer-only operations). It tests for floats because
# Numba's isinstance(x, int) matches int64 alone (and the tuple is written out: Numba cannot read a global
# one). numba.cuda cannot compile isinstance without a GPU: cuda_prelude.py gives those helpers its own.


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
    # integers (and bools) are their own floor: np.floor would round them through float64
    if not isinstance(x, (float, np.float32, np.float64)):
        return x
    return np.floor(x)


@njit(inline="always")
def ceil(x):
    if not isinstance(x, (float, np.float32, np.float64)):
        return x
    return np.ceil(x)


@njit(inline="always")
def trunc(x):
    if not isinstance(x, (float, np.float32, np.float64)):
        return x
    return np.trunc(x)


@njit(inline="always")
def rint(x):
    # round half to even, as torch.round and np.round do
    if not isinstance(x, (float, np.float32, np.float64)):
        return x
    return np.rint(x)


@njit(inline="always")
def exp2(x):
    return np.exp2(x)


@njit(inline="always")
def sign(x):
    # -1, 0 or 1; NaN gives 0, as torch.sign does
    return (x > 0) - (x < 0)


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
    # torch.floor_divide: integers exactly (dividing by zero raises, as PyTorch does); floats by CPython's
    # algorithm, which is PyTorch's div_floor (fmod-based, so 1.0 // 0.1 is 9), IEEE results at b == 0
    if not isinstance(a, (float, np.float32, np.float64)):
        if b == 0:
            raise RuntimeError("ZeroDivisionError")
        return np.int64(a) // np.int64(b)
    return a // b


@njit(inline="always")
def divtrunc(a, b):
    # torch.div(rounding_mode="trunc"): the quotient rounded toward zero; floats as trunc(a / b)
    if not isinstance(a, (float, np.float32, np.float64)):
        if b == 0:
            raise RuntimeError("ZeroDivisionError")
        q = np.int64(a) // np.int64(b)
        if q < 0 and q * np.int64(b) != np.int64(a):
            q += 1
        return q
    return np.trunc(a / b)


@njit(inline="always")
def pymod(a, b):
    # torch.remainder: the sign of the divisor (Python's %); floats as PyTorch computes them, from fmod
    if not isinstance(a, (float, np.float32, np.float64)):
        if b == 0:
            raise RuntimeError("ZeroDivisionError")
        return np.int64(a) % np.int64(b)
    m = np.fmod(a, b)
    if m != 0 and (b < 0) != (m < 0):
        m = m + b
    return m


@njit(inline="always")
def cfmod(a, b):
    # torch.fmod: C's remainder, with the sign of the dividend
    if not isinstance(a, (float, np.float32, np.float64)):
        if b == 0:
            raise RuntimeError("ZeroDivisionError")
        m = np.int64(a) % np.int64(b)
        if m != 0 and (m < 0) != (a < 0):
            m -= np.int64(b)
        return m
    return np.fmod(a, b)


@njit(inline="always")
def tpow(a, b):
    # torch.pow: integers by repeated squaring, wrapping like C; a negative exponent gives 0 except for the
    # bases 1 and -1 (PyTorch's powi). Floats through libm's pow (squares as a product).
    if not isinstance(a, (float, np.float32, np.float64)):
        base = np.int64(a)
        e = np.int64(b)
        r = np.int64(1)
        if e < 0:
            if base == 1:
                return r
            if base == -1:
                return -r if e % 2 != 0 else r
            return r - r
        while e > 0:
            if e & 1:
                r = r * base
            base = base * base
            e = e >> 1
        return r
    if b == 2:
        return a * a
    return a ** b


@njit(inline="always")
def round_decimals(x, decimals):
    # torch.round(x, decimals=d): half to even at the d-th decimal (d < 0: to tens, hundreds...)
    if not isinstance(x, (float, np.float32, np.float64)):
        return x
    if decimals == 0:
        return rint(x)
    p = 10.0 ** (decimals if decimals > 0 else -decimals)
    if isinstance(x, np.float32):
        p = np.float32(p)       # float32 arithmetic, as PyTorch's (2.675 rounds to 2.68 there, not 2.67)
    if decimals > 0:
        return rint(x * p) / p
    return rint(x / p) * p


@njit(inline="always")
def logit(x, eps):
    # torch.logit: log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given
    if eps is not None:
        lo = eps
        hi = 1.0 - eps
        x = lo if x < lo else (hi if x > hi else x)
    return log(x / (1.0 - x))


@njit(inline="always")
def clamp3(x, lo, hi):
    # torch.clamp with both bounds: min(max(x, lo), hi), a NaN anywhere giving NaN
    if x != x:
        return x
    y = lo if (lo > x or lo != lo) else x
    return hi if (hi < y or hi != hi) else y


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
    # torch.bitwise_left_shift: a negative shift, or one by the type's width or more, gives 0
    if b < 0 or b >= np.iinfo(a).bits:
        return np.int64(0)
    return np.int64(a) << np.int64(b)


@njit(inline="always")
def rshift(a, b):
    # torch.bitwise_right_shift: a negative shift, or one past the type's width, fills with the sign bit
    info = np.iinfo(a)
    most = info.bits - 1 if info.min < 0 else info.bits
    s = np.int64(b)
    if s < 0 or s > most:
        s = np.int64(most)
    return np.int64(a) >> s


@njit(inline="always")
def gcd(a, b):
    # torch.gcd: Euclid's algorithm on the absolute values; gcd(0, 0) is 0
    x = np.int64(a)
    y = np.int64(b)
    x = -x if x < 0 else x
    y = -y if y < 0 else y
    while x != 0:
        c = x
        x = y % x
        y = c
    return y


@njit(inline="always")
def lcm(a, b):
    # torch.lcm: |a / gcd * b| (0 when both are 0), wrapping in the integer type as PyTorch's does
    g = gcd(a, b)
    if g == 0:
        return g
    r = np.int64(a) // g * np.int64(b)
    return -r if r < 0 else r


@njit(inline="always")
def logaddexp2(a, b):
    # torch.logaddexp2: log2(2**a + 2**b) without overflow; equal infinities give themselves
    if (a == inf and b == inf) or (a == -inf and b == -inf):
        return a
    m = b if a < b else a
    return m + log1p(exp2(-abs(a - b))) * 1.4426950408889634
