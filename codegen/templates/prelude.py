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
def cast_like(c, x):
    # The constant c in x's type when x is float32. Numba types a Python float literal as float64, and
    # float32 * float64 is float64: in `erf(self * 0.7071)` a float32 self would take float64's libm erf
    # instead of templates/vmath.py's vectorised float32 one (gelu: 20x slower). Other types keep c as is.
    if isinstance(x, np.float32):
        return np.float32(c)
    return c


@njit(inline="always")
def isnan(x):
    return x != x


@njit(inline="always")
def isinf(x):
    # a complex number is infinite when either part is (NaN in the other part included), as torch.isinf
    if isinstance(x, (complex, np.complex64, np.complex128)):
        return x.real == inf or x.real == -inf or x.imag == inf or x.imag == -inf
    return x == inf or x == -inf


@njit(inline="always")
def isfinite(x):
    if isinstance(x, (complex, np.complex64, np.complex128)):
        r, i = x.real, x.imag
        return not (r != r or r == inf or r == -inf or i != i or i == inf or i == -inf)
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
    # a complex x as c10's exp2: e^(ln2 x), ln2 in x's precision and multiplied into each part (a complex product
    # with ln2 + 0i would turn an infinite part into NaN)
    if isinstance(x, (complex, np.complex64, np.complex128)):
        ln2 = cast_like(0.6931471805599453, x.real)
        return exp(complex(ln2 * x.real, ln2 * x.imag))
    return np.exp2(x)


@njit(inline="always")
def sign(x):
    # -1, 0 or 1; NaN gives 0, as torch.sign does
    return (x > 0) - (x < 0)


# Complex numbers: Numba types them complex64/complex128 and has their arithmetic, abs (the modulus, a float)
# and .real/.imag/.conjugate() (which real numbers have too). The isinstance test picks the branch while typing.
@njit(inline="always")
def cabs(x):
    # the modulus of a complex number; a real number its absolute value in its own type (abs would widen int8)
    if isinstance(x, (complex, np.complex64, np.complex128)):
        return abs(x)
    return x if x >= 0 else -x


@njit(inline="always")
def cconj(x):
    # the complex conjugate; a real number (bool included, which has no .conjugate() in Numba) is itself
    if isinstance(x, (complex, np.complex64, np.complex128)):
        return x.conjugate()
    return x


@njit(inline="always")
def sgn(x):
    # torch.sgn: x / |x| for complex x (0 at 0), the sign of a real one
    if isinstance(x, (complex, np.complex64, np.complex128)):
        return _sgn_c(x)        # templates/complex_math.py
    return (x > 0) - (x < 0)


@njit(inline="always")
def cdiv(a, b):
    # true division; a complex one by c10::complex's algorithm (Smith's: a zero divisor gives each part over zero,
    # inf or nan), as PyTorch's cpu kernels divide (Numba's complex division raises ZeroDivisionError at zero)
    if isinstance(a, (complex, np.complex64, np.complex128)) or isinstance(b, (complex, np.complex64, np.complex128)):
        ar, ai, c, d = a.real, a.imag, b.real, b.imag
        abs_c, abs_d = abs(c), abs(d)
        if abs_c >= abs_d:
            if abs_c == 0 and abs_d == 0:
                return complex(ar / abs_c, ai / abs_d)
            rat = d / c
            scl = 1.0 / (c + d * rat)
            return complex((ar + ai * rat) * scl, (ai - ar * rat) * scl)
        rat = c / d
        scl = 1.0 / (d + c * rat)
        return complex((ar * rat + ai) * scl, (ai * rat - ar) * scl)
    return a / b


@njit(inline="always")
def cangle(x):
    # torch.angle: the argument of a complex number; of a real one pi below 0, else 0 (NaN stays NaN)
    if isinstance(x, (complex, np.complex64, np.complex128)):
        return atan2(x.imag, x.real)
    if x != x:
        return x
    return pi if x < 0 else 0.0


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
        if b == -1:         # the one quotient that overflows: it wraps, INT_MIN // -1 == INT_MIN as in PyTorch
            return np.int64(0) - np.int64(a)
        return np.int64(a) // np.int64(b)
    return a // b


@njit(inline="always")
def divtrunc(a, b):
    # torch.div(rounding_mode="trunc"): the quotient rounded toward zero; floats as trunc(a / b)
    if not isinstance(a, (float, np.float32, np.float64)):
        if b == 0:
            raise RuntimeError("ZeroDivisionError")
        if b == -1:         # wraps, as floordiv's
            return np.int64(0) - np.int64(a)
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
def ipow(a, b):
    # an integer power by repeated squaring, wrapping like C; a negative exponent gives 0 except for the bases
    # 1 and -1 (PyTorch's powi). The CUDA kernels' tpow (templates/cuda_prelude.py) calls it too.
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


@njit(inline="always")
def tpow(a, b):
    # torch.pow of two tensors: integers through ipow; floats through libm's pow (squares as a product); complex
    # numbers through glibc's cpow, as std::pow of c10::complex (templates/complex_math.py; Numba's complex power is
    # CPython's, and exp(b log a) with a plain product differs at zeros and infinities)
    if not isinstance(a, (float, np.float32, np.float64, complex, np.complex64, np.complex128)):
        return ipow(a, b)
    if isinstance(a, (complex, np.complex64, np.complex128)) or isinstance(b, (complex, np.complex64, np.complex128)):
        return _cpow_c(a, b)
    if b == 2:
        return a * a
    return a ** b


@njit(inline="always")
def tpow_number_exponent(a, b):
    # torch.pow with a Python-number exponent (pow.Tensor_Scalar): a complex power is exact for 0 (1, NaN bases
    # too: PyTorch fills), 1 (a copy), 2, 3, -1, -2 (products and c10's division), 0.5 (sqrt) and -0.5 (rsqrt);
    # else as tpow
    if isinstance(a, (complex, np.complex64, np.complex128)) or isinstance(b, (complex, np.complex64, np.complex128)):
        if b.imag == 0:
            e = b.real
            if e == 0:
                return complex(cast_like(1.0, a.real), cast_like(0.0, a.real))
            if e == 1:
                return a
            if e == 2:
                return a * a
            if e == 3:
                return a * a * a
            if e == -1:
                return cdiv(1.0, a)
            if e == -2:
                return cdiv(1.0, a * a)
            if e == 0.5:
                return sqrt(a)
            if e == -0.5:
                return cdiv(1.0, sqrt(a))
    return tpow(a, b)


@njit(inline="always")
def tpow_number_base(a, b):
    # torch.pow with a Python-number base (pow.Scalar): 1 ** x is 1 (PyTorch fills), NaN and infinities too
    if isinstance(a, (complex, np.complex64, np.complex128)) or isinstance(b, (complex, np.complex64, np.complex128)):
        if a == 1:
            return complex(cast_like(1.0, b.real), cast_like(0.0, b.real))
    return tpow(a, b)


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


# ---------------------------------------------------------------- special functions (torch.special, branch special)
# Written from the mathematics: power series, asymptotic expansions, continued fractions and Newton steps on
# functions libm evaluates well (erf, erfc, lgamma). Every one computes in float64 (a float32 argument is
# widened, and the kernel rounds the result once), so float32 results are correctly rounded or 1 ulp off.
# Constants are mathematical facts computed with mpmath at 40 digits (Bernoulli-number ratios, Taylor
# coefficients of digamma at its positive root, Ai and Ai' at the Taylor centres).

# (2k)! / B_2k, k = 1..12: the Euler-Maclaurin correction terms of the Hurwitz zeta sum
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1892437580.3183792, 74724249600.0,
           -2950130727918.164, 116467828143500.67, -4597978722407473.0, 1.8152105401943546e+17,
           -7.166165256175667e+18)
# B_2k / (2k), k = 1..8: digamma's asymptotic series log(x) - 1/(2x) - sum B_2k / (2k x^2k)
_PSI_B = (0.08333333333333333, -0.008333333333333333, 0.003968253968253968, -0.004166666666666667,
          0.007575757575757576, -0.021092796092796094, 0.08333333333333333, -0.4432598039215686)
# digamma's positive root x0 as a sum of two doubles, and its Taylor coefficients there: (-1)^(k+1) zeta(k+1, x0)
_PSI_X0_HI = 1.4616321449683622
_PSI_X0_LO = 9.549995429965697e-17
_PSI_ROOT = (0.9676722454476212, -0.4427631689835921, 0.258499760955651, -0.16394270544240652,
             0.10782405069126237, -0.07219956125645471, 0.04880428816414311, -0.03316112647484736,
             0.022597648232218104, -0.01542476590494896, 0.010538791616612175, -0.007204534386356869,
             0.004926781395729853, -0.003369801655439328, 0.002305126326734928, -0.0015769367714301972,
             0.0010788252019162967, -0.0007380709389960052, 0.000504953265834602, -0.0003454680251063077,
             0.00023635601564027053, -0.00016170622091974803, 0.0001106337276874741)
_EULER_GAMMA = 0.5772156649015329
_SQRT_PI = 1.7724538509055160
_SQRT_2PI = 2.5066282746310002
_SQRT1_2 = 0.7071067811865476


@njit(error_model="numpy")
def zeta(x, q):
    # Hurwitz zeta sum_k (k + q)^-x: the first terms summed until k + q > 9, the tail by Euler-Maclaurin.
    # x < 1 is NaN and x == 1 a pole; q <= 0 integer is a pole, q < 0 needs an integer x (torch.special.zeta).
    x = np.float64(x)
    q = np.float64(q)
    if x == 1.0:
        return inf
    if x < 1.0:
        return nan
    if q <= 0.0:
        if q == floor(q):
            return inf
        if x != floor(x):
            return nan
    s = q ** -x
    a = q
    b = 0.0
    i = 0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = a ** -x
        s += b
        if abs(b / s) < 1.1102230246251565e-16:
            return s
    w = a
    s += b * w / (x - 1.0)
    s -= 0.5 * b
    fac = 1.0
    k = 0.0
    for j in range(12):
        fac *= x + k
        b /= w
        t = fac * b / _ZETA_A[j]
        s += t
        if abs(t / s) < 1.1102230246251565e-16:
            break
        k += 1.0
        fac *= x + k
        b /= w
        k += 1.0
    return s


@njit(inline="always")
def log_gamma(x):
    # lgamma with its poles (0 and the negative integers, and -inf) as +inf on every target: libm's value,
    # where the CUDA simulator's math.lgamma raises a domain error
    x = np.float64(x)
    if x <= 0.0 and x == floor(x):
        return inf
    return lgamma(x)


@njit(error_model="numpy")
def _digamma_pos(x):
    # x > 0: the Taylor series at the positive root near it, else the recurrence up to x >= 10 and the
    # asymptotic series
    if abs(x - _PSI_X0_HI) < 0.25:
        h = (x - _PSI_X0_HI) - _PSI_X0_LO
        s = 0.0
        for j in range(22, -1, -1):
            s = s * h + _PSI_ROOT[j]
        return s * h
    r = 0.0
    while x < 10.0:
        r -= 1.0 / x
        x += 1.0
    z = 1.0 / (x * x)
    p = 0.0
    for j in range(7, -1, -1):
        p = p * z + _PSI_B[j]
    return r + log(x) - 0.5 / x - p * z


@njit(error_model="numpy")
def digamma(x):
    # torch.digamma: +-0 give -+inf, negative integers and -inf NaN; x < 0 by the reflection
    # psi(x) = psi(1 - x) - pi / tan(pi * frac(x))
    x = np.float64(x)
    if x == 0.0:
        return -inf if not signbit(x) else inf
    if x != x or x == inf:
        return x
    if x < 0.0:
        if x == floor(x):
            return nan
        r = x - trunc(x)
        return _digamma_pos(1.0 - x) - pi / tan(pi * r)
    return _digamma_pos(x)


@njit(error_model="numpy")
def polygamma(n, x):
    # torch.polygamma: digamma for n == 0; trigamma by zeta(2, x) with the reflection
    # psi1(x) = pi^2 / sin(pi x)^2 - psi1(1 - x) for x < 0.5 (huge, not inf, near negative integers, as torch);
    # n >= 2 as (-1)^(n+1) n! zeta(n + 1, x)
    x = np.float64(x)
    n = int(n)
    if n == 0:
        return digamma(x)
    if n == 1:
        if x == inf:
            return 0.0
        if x < 0.5:
            s = sin(pi * x)
            return (pi * pi) / (s * s) - zeta(2.0, 1.0 - x)
        return zeta(2.0, x)
    f = 1.0
    for k in range(2, n + 1):
        f *= k
    if n % 2 == 0:
        f = -f
    return f * zeta(n + 1.0, x)


@njit(error_model="numpy")
def _erfc_tail_inv(q):
    # y > 0 with erfc(y) = q for 0 < q <= 1: a first guess from the asymptotic erfc(y) ~ exp(-y^2) / (y sqrt(pi)),
    # then Newton on log(erfc(y)) - log(q) (through erfcx, so that nothing underflows)
    lq = log(q)
    if q > 0.3:
        y = 0.8862269254527580 * (1.0 - q)       # erfinv's Taylor start near 0
        for _ in range(40):
            f = erfc(y) - q
            d = -1.1283791670955126 * exp(-y * y)
            step = f / d
            y -= step / (1.0 + y * step)        # Halley's correction (erfc'' / erfc' = -2y)
            if abs(step) <= 1e-17 * abs(y) + 1e-300:
                break
        return y
    t = sqrt(-lq)
    y = t - (log(t) + 0.5723649429247001) / (2.0 * t) if t > 1.0 else 0.5
    for _ in range(60):
        c = erfcx(y)
        g = log(c) - y * y - lq
        step = g * c / -1.1283791670955126      # g / g', g' = -2 / (sqrt(pi) erfcx(y))
        y -= step
        if abs(step) <= 2e-16 * y:
            break
    return y


@njit(error_model="numpy")
def erfinv(x):
    # torch.erfinv: +-1 give +-inf, |x| > 1 NaN. |x| <= 0.5 by Halley steps on erf; beyond, on erfc(y) = 1 - |x|
    # (exact there), which keeps the relative accuracy near +-1
    x = np.float64(x)
    if x != x or x < -1.0 or x > 1.0:
        return nan
    a = abs(x)
    if a == 1.0:
        return copysign(inf, x)
    if a <= 0.5:
        y = x * (0.8862269254527580 + 0.2320136665346544 * x * x)
        for _ in range(20):
            f = erf(y) - x
            step = f / (1.1283791670955126 * exp(-y * y))
            y -= step / (1.0 + y * step)
            if abs(step) <= 1e-17 * abs(y) + 1e-308:
                break
        return y
    return copysign(_erfc_tail_inv(1.0 - a), x)


@njit(error_model="numpy")
def ndtri(p):
    # torch.special.ndtri: the standard normal quantile, sqrt(2) * erfcinv(2 (1 - p)) mirrored at p = 0.5;
    # 0 and 1 give -inf and inf, p outside [0, 1] NaN
    p = np.float64(p)
    if p != p or p < 0.0 or p > 1.0:
        return nan
    if p == 0.0:
        return -inf
    if p == 1.0:
        return inf
    if 0.25 <= p <= 0.75:
        return 1.4142135623730951 * erfinv(2.0 * p - 1.0)     # 2p - 1 exact here; erf keeps y's relative accuracy
    if p < 0.5:
        return -1.4142135623730951 * _erfc_tail_inv(2.0 * p)
    return 1.4142135623730951 * _erfc_tail_inv(2.0 * (1.0 - p))


@njit(error_model="numpy")
def erfcx(x):
    # exp(x^2) erfc(x): directly (exp(x^2) from x^2 as a sum of two doubles) up to x = 26, beyond by the continued
    # fraction of erfc, evaluated from its tail (a dozen terms are exact there)
    x = np.float64(x)
    if x != x:
        return x
    if x < 26.0:
        if x < -26.7:
            return inf
        c = 134217729.0 * x
        xh = c - (c - x)
        xl = x - xh
        x2 = x * x
        err = ((xh * xh - x2) + 2.0 * xh * xl) + xl * xl
        return exp(x2) * (1.0 + err) * erfc(x)
    if x == inf:
        return 0.0
    f = x
    for k in range(12, 0, -1):
        f = x + (0.5 * k) / f
    return 1.0 / (_SQRT_PI * f)


@njit(error_model="numpy")
def ndtr(x):
    # the standard normal CDF, 0.5 erfc(-x / sqrt 2): near 0 through erf, in the tails through erfc
    z = np.float64(x) * _SQRT1_2
    if abs(z) < _SQRT1_2:
        return 0.5 + 0.5 * erf(z)
    y = 0.5 * erfc(abs(z))
    return 1.0 - y if z > 0 else y


@njit(error_model="numpy")
def log_ndtr(x):
    # log of the normal CDF: below -1 as log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 (no underflow), else log1p(-Q)
    x = np.float64(x)
    t = x * _SQRT1_2
    if x < -1.0:
        return log(erfcx(-t) / 2.0) - t * t
    return log1p(-erfc(t) / 2.0)


@njit(error_model="numpy")
def _gamma_prefix(a, x):
    # x^a e^-x / Gamma(a), by logarithms
    return exp(a * log(x) - x - lgamma(a))


@njit(error_model="numpy")
def _gammainc_series(a, x):
    # P(a, x) = x^a e^-x / Gamma(a + 1) * sum x^k / ((a+1)...(a+k))
    s = 1.0
    t = 1.0
    ak = a
    for _ in range(2000):
        ak += 1.0
        t *= x / ak
        s += t
        if t < s * 1.1102230246251565e-16:
            break
    return _gamma_prefix(a, x) * s / a


@njit(error_model="numpy")
def _gammaincc_cf(a, x):
    # Q(a, x) by the Legendre continued fraction (modified Lentz), for x > a + 1
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 2000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        if abs(d) < tiny:
            d = tiny
        c = b + an / c
        if abs(c) < tiny:
            c = tiny
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1.1102230246251565e-16:
            break
    return _gamma_prefix(a, x) * h


# (-1)^k zeta(k) / k, k = 2..29: the Taylor coefficients of lgamma(1 + a) + gamma a at 0
_LGAMMA1P = (0.8224670334241132, -0.40068563438653143, 0.27058080842778454, -0.20738555102867398,
             0.1695571769974082, -0.1440498967688461, 0.12550966952474304, -0.11133426586956469,
             0.1000994575127818, -0.09095401714582904, 0.083353840546109, -0.0769325164113522,
             0.07143294629536133, -0.06666870588242046, 0.06250095514121304, -0.058823978658684585,
             0.055555767627403614, -0.05263167937961666, 0.05000004769810169, -0.047619070330142226,
             0.04545455629320467, -0.04347826605304026, 0.04166666915034121, -0.04000000119214014,
             0.03846153903467518, -0.037037037312989324, 0.035714285847333355, -0.034482758684919304)


@njit(error_model="numpy")
def _lgamma1p(a):
    # lgamma(1 + a) without rounding 1 + a first: its Taylor series for |a| <= 0.25
    if abs(a) > 0.25:
        return lgamma(1.0 + a)
    s = 0.0
    for j in range(27, -1, -1):
        s = s * a + _LGAMMA1P[j]
    return a * (s * a - _EULER_GAMMA)


@njit(error_model="numpy")
def _gammaincc_small_a(a, x):
    # Q(a, x) for a <= 1, x < a + 1, where 1 - P cancels: Q = -expm1(a log x - lgamma(a + 1))
    # - x^a / Gamma(a) sum_k>=1 (-x)^k / (k! (a + k))
    s = 0.0
    t = 1.0
    for k in range(1, 200):
        t *= -x / k
        term = t / (a + k)
        s += term
        if abs(term) < 1e-17 * abs(s):
            break
    return -expm1(a * log(x) - _lgamma1p(a)) - exp(a * log(x) - lgamma(a)) * s


@njit(error_model="numpy")
def gammainc(a, x):
    # torch.special.gammainc, the regularized lower incomplete gamma P(a, x): NaN for a < 0 or x < 0; a == 0
    # gives 1 (x > 0), x == 0 gives 0, x == inf gives 1
    a = np.float64(a)
    x = np.float64(x)
    if a != a or x != x or a < 0.0 or x < 0.0:
        return nan
    if a == 0.0:
        return 1.0 if x > 0.0 else nan
    if x == 0.0:
        return 0.0
    if x == inf:
        return 1.0
    if a == inf:
        return nan if x == inf else 0.0
    if x < a + 1.0:
        return _gammainc_series(a, x)
    return 1.0 - _gammaincc_cf(a, x)


@njit(error_model="numpy")
def gammaincc(a, x):
    # torch.special.gammaincc, Q(a, x) = 1 - P(a, x), each side computed directly where it is small
    a = np.float64(a)
    x = np.float64(x)
    if a != a or x != x or a < 0.0 or x < 0.0:
        return nan
    if a == 0.0:
        return 0.0 if x > 0.0 else nan
    if x == 0.0:
        return 1.0
    if x == inf:
        return 0.0
    if a == inf:
        return 1.0
    if x < a + 1.0:
        if a <= 1.0:
            return _gammaincc_small_a(a, x)
        return 1.0 - _gammainc_series(a, x)
    return _gammaincc_cf(a, x)


@njit(error_model="numpy")
def _bessel_i_series(x, nu):
    # I_nu(x) / (x/2)^nu = sum (x^2/4)^k / (k! (k+nu)!) for nu = 0, 1: positive terms, no cancellation
    q = 0.25 * x * x
    t = 1.0
    for k in range(1, nu + 1):
        t /= k
    s = t
    for k in range(1, 500):
        t *= q / (k * (k + nu))
        s += t
        if t < s * 1.1102230246251565e-17:
            break
    return s


@njit(error_model="numpy")
def _bessel_i_asym(x, nu):
    # I_nu(x) e^-x sqrt(2 pi x) ~ sum_k (-1)^k prod_j (4nu^2 - (2j-1)^2) / (k! (8x)^k), for x > 20
    mu = 4.0 * nu * nu
    t = 1.0
    s = 1.0
    for k in range(1, 60):
        t *= -(mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
        s += t
        if abs(t) < abs(s) * 1.1102230246251565e-17:
            break
    return s / sqrt(2.0 * pi * x)


@njit(error_model="numpy")
def bessel_i(x, nu, scaled):
    # torch.special.i0/i1 (nu = 0, 1) and i0e/i1e (scaled: times exp(-|x|)); I0 is even, I1 odd;
    # +-inf give NaN unscaled and 0 scaled, as torch
    x = np.float64(x)
    a = abs(x)
    if a == inf:
        return (0.0 if nu == 0 or x > 0 else -0.0) if scaled else nan
    if a > 20.0:
        r = _bessel_i_asym(a, nu)
        if not scaled:
            h = exp(0.5 * a)              # e^a in two halves: I0 overflows later than e^a does
            r = r * h * h
    else:
        r = _bessel_i_series(a, nu)
        if nu == 1:
            r *= 0.5 * a
        if scaled:
            r *= exp(-a)
    if nu == 1 and x < 0:
        return -r
    return r


@njit(error_model="numpy")
def bessel_k(x, nu, scaled):
    # torch.special.modified_bessel_k0/k1 (nu = 0, 1), scaled_*: times exp(x). x <= 1 by the series of
    # A&S 9.6.11 around I_nu, beyond by Steed's continued fraction (Temme's CF2) for K_0 and K_1 together
    x = np.float64(x)
    if x != x or x < 0.0:
        return nan
    if x == 0.0:
        return inf
    if x == inf:
        return 0.0
    if x <= 1.0:
        q = 0.25 * x * x
        lg = log(0.5 * x)
        if nu == 0:
            t = 1.0
            h = 0.0
            s = 0.0
            for k in range(1, 60):
                t *= q / (k * k)
                h += 1.0 / k
                s += t * h
                if t * h < 1e-17 * abs(s):
                    break
            r = -(lg + _EULER_GAMMA) * _bessel_i_series(x, 0) + s
        else:
            t = 1.0
            h = -_EULER_GAMMA          # psi(k+1) + psi(k+2), from psi(1) + psi(2) = 1 - 2 gamma
            p = 1.0 - 2.0 * _EULER_GAMMA
            s = p
            for k in range(1, 60):
                t *= q / (k * (k + 1))
                p += 1.0 / k + 1.0 / (k + 1)
                s += t * p
                if t * p < 1e-17 * abs(s):
                    break
            r = 1.0 / x + lg * 0.5 * x * _bessel_i_series(x, 1) - 0.25 * x * s
        return r * exp(x) if scaled else r
    b = 2.0 * (1.0 + x)
    d = 1.0 / b
    h = d
    delh = d
    q1 = 0.0
    q2 = 1.0
    a1 = 0.25
    q = a1
    c = a1
    a = -a1
    s = 1.0 + q * delh
    for i in range(2, 500):
        a -= 2.0 * (i - 1)
        c = -a * c / i
        qnew = (q1 - b * q2) / a
        q1 = q2
        q2 = qnew
        q += c * qnew
        b += 2.0
        d = 1.0 / (b + a * d)
        delh = (b * d - 1.0) * delh
        h += delh
        dels = q * delh
        s += dels
        if abs(dels / s) < 1e-17:
            break
    k0 = sqrt(pi / (2.0 * x)) / s
    if not scaled:
        k0 *= exp(-x)
    if nu == 0:
        return k0
    return k0 * (x + 0.5 - a1 * h) / x


@njit(error_model="numpy")
def _bessel_jy_hankel(x, nu):
    # (J_nu, Y_nu) for x >= 25 from Hankel's expansion: sqrt(2/(pi x)) (P cos chi - Q sin chi) and
    # (P sin chi + Q cos chi), chi = x - (nu/2 + 1/4) pi, written with sin x and cos x (accurate for large x)
    mu = 4.0 * nu * nu
    t = 1.0
    p = 1.0
    qq = 0.0
    for k in range(1, 80):
        t_new = t * (mu - (2 * k - 1) ** 2) / (k * 8.0 * x)
        if abs(t_new) > abs(t):
            break
        t = t_new
        m = k % 4
        if m == 0:
            p += t
        elif m == 1:
            qq += t
        elif m == 2:
            p -= t
        else:
            qq -= t
        if abs(t) < 1e-17:
            break
    sx = sin(x)
    cx = cos(x)
    if nu == 0:
        cc = (cx + sx) * _SQRT1_2       # cos(x - pi/4)
        ss = (sx - cx) * _SQRT1_2       # sin(x - pi/4)
    else:
        cc = (sx - cx) * _SQRT1_2       # cos(x - 3pi/4)
        ss = -(sx + cx) * _SQRT1_2      # sin(x - 3pi/4)
    f = sqrt(2.0 / (pi * x))
    return f * (p * cc - qq * ss), f * (p * ss + qq * cc)


@njit(error_model="numpy")
def _bessel_jy_small(x, nu):
    # (J_nu, Y_nu) for 0 < x < 1 by their power series (A&S 9.1.10, 9.1.11)
    q = -0.25 * x * x
    lg = log(0.5 * x)
    t = 1.0 if nu == 0 else 0.5 * x
    j = t
    ps = -2.0 * _EULER_GAMMA if nu == 0 else 1.0 - 2.0 * _EULER_GAMMA    # psi(k+1) + psi(k+nu+1) at k = 0
    ys = t * ps
    for k in range(1, 40):
        t *= q / (k * (k + nu))
        ps += 1.0 / k + 1.0 / (k + nu)
        j += t
        ys += t * ps
        if abs(t) < 1e-17 * abs(j):
            break
    y = (2.0 / pi) * lg * j - ys / pi
    if nu == 1:
        y -= 2.0 / (pi * x)
    return j, y


@njit(error_model="numpy")
def _bessel_jy_miller(x, nu):
    # (J_nu, Y_nu) for 1 <= x < 25: J_n by Miller's backward recurrence, normalised by J0 + 2 sum J_2k = 1,
    # and Y from Neumann's series Y0 = (2/pi)(log(x/2) + gamma) J0 - (4/pi) sum (-1)^k J_2k / k and its derivative
    n = 2 * ((int(x) + 40 + int(4.0 * sqrt(x))) // 2)
    jp1 = 0.0
    jn = 1e-30
    norm = 0.0
    s0 = 0.0        # sum (-1)^k J_2k / k
    s1 = 0.0        # sum (-1)^k (J_2k-1 - J_2k+1) / k
    j0 = 0.0
    j1 = 0.0
    jodd_above = 0.0   # J_{2k+1} while stepping through J_2k
    for m in range(n, 0, -1):
        jm1 = (2.0 * m / x) * jn - jp1      # J_{m-1}
        jp1 = jn
        jn = jm1
        k = m - 1                           # jn is J_k now
        if k % 2 == 0:
            if k > 0:
                norm += 2.0 * jn
                sg = 1.0 if (k // 2) % 2 == 0 else -1.0
                s0 += sg * jn / (k // 2)
                jodd_above = jp1            # J_{k+1}
            else:
                norm += jn
        else:
            kk = (k + 1) // 2               # J_k = J_{2kk-1}: closes the term (J_2kk-1 - J_2kk+1) / kk
            sg = 1.0 if kk % 2 == 0 else -1.0
            s1 += sg * (jn - jodd_above) / kk
        if abs(jn) > 1e250:
            jn *= 1e-250
            jp1 *= 1e-250
            norm *= 1e-250
            s0 *= 1e-250
            s1 *= 1e-250
            jodd_above *= 1e-250
            j1 *= 1e-250
        if k == 1:
            j1 = jn
        if k == 0:
            j0 = jn
    j0 /= norm
    j1 /= norm
    s0 /= norm
    s1 /= norm
    lg = log(0.5 * x) + _EULER_GAMMA
    if nu == 0:
        return j0, (2.0 / pi) * lg * j0 - (4.0 / pi) * s0
    return j1, -(2.0 / pi) * j0 / x + (2.0 / pi) * lg * j1 + (2.0 / pi) * s1


@njit(error_model="numpy")
def bessel_jy(x, nu, want_y):
    # torch.special.bessel_j0/j1/y0/y1: J0 even and J1 odd; Y of x < 0 is NaN, of 0 -inf; +-inf give NaN, as torch
    x = np.float64(x)
    if x != x:
        return x
    if want_y:
        if x < 0.0:
            return nan
        if x == 0.0:
            return -inf
    a = abs(x)
    if a == inf:
        return nan
    if a == 0.0:
        return 1.0 if nu == 0 else x
    if a < 1.0:
        j, y = _bessel_jy_small(a, nu)
    elif a < 25.0:
        j, y = _bessel_jy_miller(a, nu)
    else:
        j, y = _bessel_jy_hankel(a, nu)
    if want_y:
        return y
    return -j if (nu == 1 and x < 0) else j


@njit(error_model="numpy")
def spherical_bessel_j0(x):
    # sin(x) / x; its Taylor series near 0, where the quotient loses digits; +-inf give 0
    x = np.float64(x)
    if abs(x) == inf:
        return 0.0
    if abs(x) < 0.5:
        z = x * x
        return 1.0 - z / 6.0 * (1.0 - z / 20.0 * (1.0 - z / 42.0 * (1.0 - z / 72.0 * (1.0 - z / 110.0 * (1.0 - z / 156.0)))))
    return sin(x) / x


# Ai and Ai' at c = -10, -9.5, ..., 10 (mpmath): Taylor centres for |x| <= 10
_AIRY_TAB = (0.04024123848644319, 0.99626504413279, 0.3191032477191282, -0.10809531881187123,
             -0.022133721547341403, -0.9756639809263316, -0.33029023763020887, -0.03231334828463914,
             -0.0527050503563862, 0.9355609381983065, 0.3217757163806479, 0.3188095066985546,
             0.18428083525050565, -0.7710081684101265, -0.2380203019971158, -0.6749524925132022,
             -0.3291451736298231, 0.3459354872813429, 0.017781541276574976, 0.8641972177713984,
             0.35076100902411433, 0.32719281855444315, 0.2921527810559595, -0.5233625323157477,
             -0.07026553294928951, -0.7906285753685813, -0.37553382314043193, -0.34344343345404815,
             -0.37881429367765806, 0.3145837692165988, -0.11232506769296609, 0.6788527342647943,
             0.22740742820168558, 0.618259020741691, 0.4642565777488694, 0.3091869672024104,
             0.5355608832923521, -0.01016056711664521, 0.4757280916105396, -0.20408167033954738,
             0.3550280538878172, -0.2588194037928068, 0.23169360648083348, -0.2249105326646839,
             0.13529241631288141, -0.1591474412967932, 0.07174949700810541, -0.09738201284230132,
             0.03492413042327438, -0.05309038443365363, 0.01572592338047049, -0.026250881035903232,
             0.006591139357460719, -0.011912976705951319, 0.002584098786989635, -0.005004413967952583,
             0.0009515638512048018, -0.001958640950204179, 0.00033025032351430896, -0.0007178665675575089,
             0.00010834442813607442, -0.0002474138908684625, 3.368531190859981e-05, -8.046339130556515e-05,
             9.947694360252889e-06, -2.4765200397034955e-05, 2.7958823432049136e-06, -7.231931466601793e-06,
             7.492128863997167e-07, -2.008150894738792e-06, 1.9172560675134309e-07, -5.312713959720545e-07,
             4.6922076160992316e-08, -1.3414392979067865e-07, 1.0997009755195506e-08, -3.237725440447602e-08,
             2.47116843087249e-09, -7.480641389658946e-09, 5.330263704617492e-10, -1.6566394593740667e-09,
             1.1047532552898686e-10, -3.5206336767389237e-10)


@njit(error_model="numpy")
def airy_ai(x):
    # torch.special.airy_ai. |x| <= 10: the Taylor series of Ai'' = x Ai at the nearest centre (|h| <= 1/4);
    # beyond, the asymptotic series in zeta = (2/3)|x|^(3/2) (decaying for x > 0, oscillating for x < 0).
    # +-inf give NaN, as torch
    x = np.float64(x)
    if x != x or abs(x) == inf:
        return nan
    if abs(x) <= 10.0:
        i = int(floor(2.0 * x + 0.5))
        c = 0.5 * i
        h = x - c
        a0 = _AIRY_TAB[2 * (i + 20)]
        a1 = _AIRY_TAB[2 * (i + 20) + 1]
        a2 = 0.5 * c * a0
        s = a0 + h * (a1 + h * a2)
        p0 = a0             # a_{m-1}, a_m, a_{m+1} of the Taylor coefficients, m = 1 first
        p1 = a1
        p2 = a2
        hp = h * h * h
        for m in range(1, 40):          # |h| <= 1/4: 40 terms reach 1e-24 (some coefficients vanish at c == 0)
            an = (c * p1 + p0) / ((m + 2) * (m + 1))    # a_{m+2}, from Ai'' = x Ai
            p0 = p1
            p1 = p2
            p2 = an
            s += an * hp
            hp *= h
        return s
    a = abs(x)
    z = (2.0 / 3.0) * a * sqrt(a)
    r4 = sqrt(sqrt(a))
    if x > 0.0:
        t = 1.0
        s = 1.0
        for k in range(1, 40):
            t *= -(6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216.0 * k * z)
            s += t
            if abs(t) < 1e-17:
                break
        return exp(-z) * s / (2.0 * _SQRT_PI * r4)
    t = 1.0
    pe = 1.0
    po = 0.0
    for k in range(1, 40):
        t *= (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216.0 * k * z)
        m = k % 4
        if m == 0:
            pe += t
        elif m == 1:
            po += t
        elif m == 2:
            pe -= t
        else:
            po -= t
        if abs(t) < 1e-17:
            break
    sz = sin(z)
    cz = cos(z)
    return ((sz + cz) * _SQRT1_2 * pe - (cz - sz) * _SQRT1_2 * po) / (_SQRT_PI * r4)


@njit(inline="always")
def xlogy(x, y):
    # torch.xlogy: 0 where x == 0 (y not NaN), NaN where y is NaN
    if y != y:
        return nan
    if x == 0:
        return 0.0
    return x * log(np.float64(y))


@njit(inline="always")
def xlog1py(x, y):
    # torch.special.xlog1py: x * log1p(y), 0 where x == 0 (y not NaN)
    if y != y:
        return nan
    if x == 0:
        return 0.0
    return x * log1p(np.float64(y))


@njit(inline="always")
def entr(x):
    # torch.special.entr: -x log x; 0 at 0, -inf below
    x = np.float64(x)
    if x != x:
        return x
    if x > 0.0:
        return -x * log(x)
    if x == 0.0:
        return 0.0
    return -inf


@njit(inline="always")
def sinc(x):
    # torch.sinc: sin(pi x) / (pi x), 1 at 0; a complex x in its own precision, as c10::complex's pi * x
    if isinstance(x, (complex, np.complex64, np.complex128)):
        if x == 0:
            return x * 0 + 1
        z = cast_like(pi, x.real) * x
        return cdiv(sin(z), z)
    v = np.float64(x)
    if v == 0.0:
        return 1.0
    y = pi * v
    return sin(y) / y


# The orthogonal polynomials of torch.special, as torch evaluates them: n truncated to an integer, 0 for n < 0,
# the closed values at the ends of the interval, the trigonometric forms for large n inside it, else the
# three-term recurrence.

@njit(error_model="numpy")
def cheb_t(x, n):
    n = int(n)
    x = np.float64(x)
    if n < 0:
        return 0.0
    if abs(x) == 1.0:
        return 1.0 if (x > 0 or n % 2 == 0) else -1.0
    if n > 6 and abs(x) < 1.0:
        return cos(n * acos(x))
    if n == 0:
        return 1.0
    p = 1.0
    q = x
    for _ in range(2, n + 1):
        r = (x + x) * q - p
        p = q
        q = r
    return q


@njit(error_model="numpy")
def cheb_u(x, n):
    n = int(n)
    x = np.float64(x)
    if n < 0:
        return 0.0
    if abs(x) == 1.0:
        return n + 1.0 if (x > 0 or n % 2 == 0) else -(n + 1.0)
    if n > 8 and abs(x) < 1.0:
        t = acos(x)
        if sin(t) != 0.0:
            return sin((n + 1) * t) / sin(t)
        return (n + 1) * cos((n + 1) * t)
    if n == 0:
        return 1.0
    p = 1.0
    q = x + x
    for _ in range(2, n + 1):
        r = (x + x) * q - p
        p = q
        q = r
    return q


@njit(error_model="numpy")
def cheb_v(x, n):
    n = int(n)
    x = np.float64(x)
    if n < 0:
        return 0.0
    if abs(x) == 1.0:
        if x > 0:
            return 1.0
        return n + n + 1.0 if n % 2 == 0 else -(n + n + 1.0)
    if n > 8 and abs(x) < 1.0:
        t = acos(x)
        if sin(t / 2) != 1.0:
            return cos((n + 0.5) * t) / cos(t / 2)
        return 1.0 if n % 2 == 0 else -1.0
    if n == 0:
        return 1.0
    p = 1.0
    q = x + x - 1.0
    for _ in range(2, n + 1):
        r = (x + x) * q - p
        p = q
        q = r
    return q


@njit(error_model="numpy")
def cheb_w(x, n):
    n = int(n)
    x = np.float64(x)
    if n < 0:
        return 0.0
    if abs(x) == 1.0:
        if x > 0:
            return n + n + 1.0
        return 1.0 if n % 2 == 0 else -1.0
    if n > 8 and abs(x) < 1.0:
        t = acos(x)
        if cos(t / 2) != 1.0:
            return sin((n + 0.5) * t) / sin(t / 2)
        if x > 0:
            return n + n + 1.0
        return 1.0 if n % 2 == 0 else -1.0
    if n == 0:
        return 1.0
    p = 1.0
    q = x + x + 1.0
    for _ in range(2, n + 1):
        r = (x + x) * q - p
        p = q
        q = r
    return q


@njit(error_model="numpy")
def shifted_cheb(x, n, kind):
    # T*, U*, V*, W* (kind 0..3): the polynomial at 2x - 1, with torch's closed values at x = 0 and x = 1
    n = int(n)
    x = np.float64(x)
    if n < 0:
        return 0.0
    if x == 1.0:
        return 1.0 if kind == 0 or kind == 2 else (n + 1.0 if kind == 1 else n + n + 1.0)
    if x == 0.0:
        odd = n % 2 != 0
        if kind == 0 or kind == 3:
            return -1.0 if odd else 1.0
        m = n + 1.0 if kind == 1 else n + n + 1.0
        return -m if odd else m
    y = x + x - 1.0
    if kind == 0:
        return cheb_t(y, n)
    if kind == 1:
        return cheb_u(y, n)
    if kind == 2:
        return cheb_v(y, n)
    return cheb_w(y, n)


@njit(error_model="numpy")
def hermite_h(x, n):
    n = int(n)
    x = np.float64(x)
    if n < 0:
        return 0.0
    if n == 0:
        return 1.0
    p = 1.0
    q = x + x
    for k in range(2, n + n, 2):
        r = (x + x) * q - k * p
        p = q
        q = r
    return q


@njit(error_model="numpy")
def hermite_he(x, n):
    n = int(n)
    x = np.float64(x)
    if n < 0:
        return 0.0
    if n == 0:
        return 1.0
    p = 1.0
    q = x
    for k in range(1, n):
        r = x * q - k * p
        p = q
        q = r
    return q


@njit(error_model="numpy")
def laguerre_l(x, n):
    n = int(n)
    x = np.float64(x)
    if n < 0:
        return 0.0
    if x == 0.0 or n == 0:
        return 1.0
    p = 1.0
    q = 1.0 - x
    for k in range(1, n):
        r = ((k + k + (1.0 - x)) * q - k * p) / (k + 1)
        p = q
        q = r
    return q


@njit(error_model="numpy")
def legendre_p(x, n):
    n = int(n)
    x = np.float64(x)
    if n < 0:
        return 0.0
    if abs(x) == 1.0:
        return 1.0 if (x > 0 or n % 2 == 0) else -1.0
    if n == 0:
        return 1.0
    p = 1.0
    q = x
    for k in range(1, n):
        r = ((k + k + 1) * x * q - k * p) / (k + 1)
        p = q
        q = r
    return q


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
