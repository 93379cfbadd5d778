# Complex helpers of the math names that cmath lacks (issue 25): c10's formulas for log1p, expm1 and log2 of a
# complex number (aten/src/ATen/native/Math.h, c10/util/complex_math.h), written once for both targets. The
# functions carry no decorator here: the generator emits them into reftorch/kernels/cpu.py (and cpu_half.py) with
# @njit(error_model="numpy") where templates/vmath.py names this file, and into reftorch/kernels/cuda.py as device
# functions where templates/cuda_prelude.py does (codegen/common.py complex_helpers). They compute in float64
# (complex(...) of two float64 is complex128 in Numba and numba.cuda); the kernel rounds once when it stores a
# complex64.
import cmath
import math
import numpy as np


def _log1p_c(z):
    # log(1 + z) = log|1 + z| + i atan2(y, 1 + x); |1 + z| through log1p(x (x + 2) + y^2) while |z| < 1/2, where
    # forming 1 + z would lose the digits of a small z
    x = np.float64(z.real)
    y = np.float64(z.imag)
    theta = math.atan2(y, x + 1)
    if math.hypot(x, y) < 0.5:
        r = x * (x + 2) + y * y
        if r == 0:
            return complex(x, theta)
        return complex(0.5 * math.log1p(r), theta)
    return complex(math.log(math.hypot(x + 1, y)), theta)


def _expm1_c(z):
    # exp(z) - 1 = (expm1(x) cos y - 2 sin^2(y / 2)) + i e^x sin y: no cancellation for small z
    x = np.float64(z.real)
    y = np.float64(z.imag)
    a = math.sin(y / 2)
    return complex(math.expm1(x) * math.cos(y) - 2 * a * a, math.exp(x) * math.sin(y))


def _logaddexp_c(a, b):
    # c10's _log_add_exp_helper: the operand of the smaller real part is min (one with a NaN part is both, and the
    # result NaN); equal infinite real parts give -inf's operand, or log(exp(min) + exp(max)) for +inf
    x = complex(np.float64(a.real), np.float64(a.imag))
    y = complex(np.float64(b.real), np.float64(b.imag))
    if y.real != y.real or y.imag != y.imag:
        lo = y
        hi = y
    elif x.real != x.real or x.imag != x.imag:
        lo = x
        hi = x
    elif x.real < y.real:
        lo = x
        hi = y
    else:
        lo = y
        hi = x
    if lo.real != lo.real or lo.imag != lo.imag:
        return complex(math.nan, math.nan)
    if (lo.real == math.inf or lo.real == -math.inf) and lo.real == hi.real:
        if lo.real < 0:
            return lo
        return cmath.log(cmath.exp(lo) + cmath.exp(hi))
    return _log1p_c(cmath.exp(lo - hi)) + hi


def _log2_c(z):
    # c10: log(z) / log(2)
    return cmath.log(complex(np.float64(z.real), np.float64(z.imag))) / 0.6931471805599453
