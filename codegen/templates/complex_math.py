# Complex helpers of the math names that cmath lacks (issue 25): c10's formulas for log1p, expm1, log2 and sgn of a
# complex number (aten/src/ATen/native/Math.h, c10/util/complex_math.h), written once for both targets. The
# functions carry no decorator here: the generator emits them into reftorch/kernels/cpu.py (and cpu_half.py) with
# @njit(error_model="numpy") where templates/vmath.py names this file, and into reftorch/kernels/cuda.py as device
# functions where templates/cuda_prelude.py does (codegen/common.py complex_helpers). Most compute in float64
# (complex(...) of two float64 is complex128 in Numba and numba.cuda) and the kernel rounds once when it stores a
# complex64; those whose NaNs depend on where c10 rounds (log1p, sgn) stay in the argument's precision.
import cmath
import math
import numpy as np


def _c10_div(a, b):
    # c10::complex's division (NumPy's Smith algorithm): a zero divisor gives each part over zero (inf or NaN)
    ar = a.real
    ai = a.imag
    c = b.real
    d = b.imag
    abs_c = abs(c)
    abs_d = abs(d)
    if abs_c >= abs_d:
        if abs_c == 0 and abs_d == 0:
            return complex(ar / abs_c, ai / abs_d)
        rat = d / c
        scl = 1 / (c + d * rat)
        return complex((ar + ai * rat) * scl, (ai - ar * rat) * scl)
    rat = c / d
    scl = 1 / (d + c * rat)
    return complex((ar * rat + ai) * scl, (ai * rat - ar) * scl)


def _log1p_c(z):
    # c10's CPU log1p (Kahan's trick): u = 1 + z; z itself where u rounds to 1, log(u) where u - 1 gives z back,
    # else log(u) * (z / (u - 1)), divided as c10::complex divides and multiplied plainly (no C99 recovery), so an
    # infinite part comes out NaN + NaN i as PyTorch's does. u and its tests in the argument's precision (where c10
    # rounds them), the rest in float64. log(u) as glibc's clog: near the unit circle log|u| = log1p(|u|^2 - 1) / 2
    # with |u|^2 - 1 = d (d + 2) + y^2, d = u - 1 exact (log(hypot) would lose the digits the trick relies on).
    x = z.real
    y = z.imag
    one = cast_like(1.0, x)
    ur = x + one
    if ur == one and y == 0:
        return complex(np.float64(x), np.float64(y))
    dr = ur - one
    a = np.float64(ur)
    b = np.float64(y)
    d = np.float64(dr)
    h = math.hypot(a, b)
    if h > 0.5 and h < 2:
        lu = complex(0.5 * math.log1p(d * (d + 2) + b * b), math.atan2(b, a))
    else:
        lu = cmath.log(complex(a, b))
    if dr == x and y == y:      # (u - 1 == z as complex numbers: a NaN imaginary part is never equal)
        return lu
    q = _c10_div(complex(np.float64(x), b), complex(d, b))
    return complex(lu.real * q.real - lu.imag * q.imag, lu.real * q.imag + lu.imag * q.real)


def _sgn_c(z):
    # torch.sgn of a complex number: 0 at 0, else each part over |z| (c10 divides a complex number by a real one
    # part by part: infj gives 0 + NaN i, where a complex division would give NaN + NaN i)
    m = abs(z)
    if m == 0:
        zero = cast_like(0.0, z.real)
        return complex(zero, zero)
    return complex(z.real / m, z.imag / m)


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
    # c10: log(z) / log(2), each part over log(2) (a complex division would make log(0) = -inf + 0i -inf + NaN i)
    w = cmath.log(complex(np.float64(z.real), np.float64(z.imag)))
    return complex(w.real / 0.6931471805599453, w.imag / 0.6931471805599453)


# exp, sinh, cosh, tanh (and sin, cos, tan through them) of a complex number with a zero part reduce to the real
# functions, as C99 Annex G has them (glibc's, so c10's): exp(x + 0i) = exp(x) + 0i, sinh(0 + iy) = 0 + i sin(y)...
# where cmath's formulas multiply an overflowed or NaN part by the zero one and get NaN. Other arguments keep cmath.
# These stay in the argument's precision (complex(float32, float32) is complex64).

def _exp_c(z):
    if z.imag == 0:
        return complex(math.exp(z.real), z.imag)
    return cmath.exp(z)


def _sinh_c(z):
    # an infinite real part with a non-finite imaginary one: glibc's +inf + NaN i (cmath's NaN + NaN i)
    x = z.real
    y = z.imag
    if (x == math.inf or x == -math.inf) and not y - y == 0:
        return complex(abs(x), y - y)
    if y == 0:
        return complex(math.sinh(x), y)
    if x == 0:
        return complex(x, math.sin(y))
    return cmath.sinh(z)


def _cosh_c(z):
    # the zero imaginary part takes the sign of sinh(x) sin(y)
    x = z.real
    y = z.imag
    if (x == math.inf or x == -math.inf) and not y - y == 0:
        return complex(abs(x), y - y)
    if y == 0:
        return complex(math.cosh(x), -y if x < 0 else y)
    if x == 0:
        s = math.sin(y)
        return complex(math.cos(y), -x if s < 0 else x)
    return cmath.cosh(z)


def _tanh_c(z):
    x = z.real
    y = z.imag
    if y == 0:
        return complex(math.tanh(x), y)
    if x == 0:
        return complex(x, math.tan(y))
    return cmath.tanh(z)


def _sin_c(z):
    # sin(z) = -i sinh(iz); a non-finite real part with an infinite imaginary one: glibc's NaN + inf i
    if not z.real - z.real == 0 and (z.imag == math.inf or z.imag == -math.inf):
        return complex(z.real - z.real, abs(z.imag))
    s = _sinh_c(complex(-z.imag, z.real))
    return complex(s.imag, -s.real)


def _cos_c(z):
    # cos(z) = cosh(iz)
    return _cosh_c(complex(-z.imag, z.real))


def _tan_c(z):
    # tan(z) = -i tanh(iz)
    t = _tanh_c(complex(-z.imag, z.real))
    return complex(t.imag, -t.real)


# The inverse functions' arguments with a NaN part, as C99 Annex G (glibc, so c10) where cmath's differ: a zero part
# beside the NaN is kept (asin(0 + NaN i) = 0 + NaN i, acos(0 + NaN i) = pi/2 + NaN i, acosh(0 + NaN i) = NaN + i pi/2,
# asinh(NaN + 0i) = NaN + 0i), and atanh (atan through it) is NaN + NaN i but at a zero or infinite real part
# (+-0 + NaN i) and an infinite imaginary one (0 +- i pi/2). cast_like (prelude.py's, in the module these are emitted
# into) keeps the constants in the argument's precision.

def _asin_c(z):
    if z.real == 0 and z.imag != z.imag:
        return complex(z.real, z.imag)
    return cmath.asin(z)


def _acos_c(z):
    if z.real == 0 and z.imag != z.imag:
        return complex(cast_like(1.5707963267948966, z.real), z.imag)
    return cmath.acos(z)


def _asinh_c(z):
    if z.imag == 0 and z.real != z.real:
        return complex(z.real, z.imag)
    return cmath.asinh(z)


def _acosh_c(z):
    if z.real == 0 and z.imag != z.imag:
        return complex(z.imag, cast_like(1.5707963267948966, z.real))
    return cmath.acosh(z)


def _atanh_c(z):
    x = z.real
    y = z.imag
    if x == x and y == y:
        return cmath.atanh(z)
    zero = cast_like(0.0, x)
    if y != y and (x == 0 or x == math.inf or x == -math.inf):
        return complex(x if x == 0 else (zero if x > 0 else -zero), y)
    if y == math.inf or y == -math.inf:
        h = cast_like(1.5707963267948966, x)
        return complex(zero, h if y > 0 else -h)
    return complex(x + y, x + y)


def _atan_c(z):
    # atan(z) = -i atanh(iz) for a NaN part
    if z.real == z.real and z.imag == z.imag:
        return cmath.atan(z)
    t = _atanh_c(complex(-z.imag, z.real))
    return complex(t.imag, -t.real)


# Complex powers, as PyTorch's cpu kernels compute them: std::pow of two c10::complex numbers is glibc's cpow,
# exp(y log x) with C's complex product, so 0 ** 0 is NaN + NaN i (log 0 = -inf) and 1 ** inf NaN + NaN i. The log
# and the product stay in the argument's precision (cpowf's rounding of y log x decides a large exponent's phase);
# cast_like keeps the special values' constants there too.

def _isinf_f(x):
    return x == math.inf or x == -math.inf


def _box(v, inf):
    # libgcc's boxing of a factor's part: +-1 for an infinite part (inf), else 0 with the part's sign
    return math.copysign(1.0 if inf else 0.0, v)


def _c99_mul(z, w):
    # C's complex product (libgcc's __muldc3): where the plain product is NaN + NaN i, an infinite factor is boxed
    # to a unit (NaN parts beside it to 0) and the product remade times inf, as C99 Annex G recovers infinities
    a = z.real
    b = z.imag
    c = w.real
    d = w.imag
    ac = a * c
    bd = b * d
    ad = a * d
    bc = b * c
    x = ac - bd
    y = ad + bc
    if x != x and y != y:
        a2 = np.float64(a)
        b2 = np.float64(b)
        c2 = np.float64(c)
        d2 = np.float64(d)
        recalc = False
        if _isinf_f(a) or _isinf_f(b):
            a2 = _box(a, _isinf_f(a))
            b2 = _box(b, _isinf_f(b))
            if c != c:
                c2 = _box(c, False)
            if d != d:
                d2 = _box(d, False)
            recalc = True
        if _isinf_f(c) or _isinf_f(d):
            c2 = _box(c, _isinf_f(c))
            d2 = _box(d, _isinf_f(d))
            if a2 != a2:
                a2 = _box(a, False)
            if b2 != b2:
                b2 = _box(b, False)
            recalc = True
        if not recalc and (_isinf_f(ac) or _isinf_f(bd) or _isinf_f(ad) or _isinf_f(bc)):
            if a2 != a2:
                a2 = _box(a, False)
            if b2 != b2:
                b2 = _box(b, False)
            if c2 != c2:
                c2 = _box(c, False)
            if d2 != d2:
                d2 = _box(d, False)
            recalc = True
        if recalc:
            return complex(cast_like(math.inf * (a2 * c2 - b2 * d2), x), cast_like(math.inf * (a2 * d2 + b2 * c2), x))
    return complex(x, y)


def _clog_g(z):
    # glibc's clog: log(+-0 + 0i) = -inf + i(0 or pi), a NaN part NaN + NaN i (inf + NaN i beside an infinite one)
    x = z.real
    y = z.imag
    if x == 0 and y == 0:
        arg = math.pi if math.copysign(1.0, x) < 0 else 0.0
        return complex(cast_like(-math.inf, x), cast_like(math.copysign(arg, y), x))
    if x != x or y != y:
        if _isinf_f(x) or _isinf_f(y):
            return complex(cast_like(math.inf, x), cast_like(math.nan, x))
        return complex(cast_like(math.nan, x), cast_like(math.nan, x))
    return complex(cast_like(math.log(math.hypot(x, y)), x), cast_like(math.atan2(y, x), x))


def _cexp_g(z):
    # glibc's cexp at non-finite parts: a finite real part beside a non-finite imaginary one NaN + NaN i, +inf real
    # parts inf times the signs of cos y and sin y (inf + NaN i for a non-finite y), -inf ones zeros. In float64.
    x = np.float64(z.real)
    y = np.float64(z.imag)
    if x - x == 0:
        if y - y == 0:
            if y == 0:
                return complex(math.exp(x), y)
            return cmath.exp(complex(x, y))
        return complex(math.nan, math.nan)
    if x != x:
        if y == 0:
            return complex(x, y)
        return complex(x, x)
    if y - y == 0:
        v = math.inf if x > 0 else 0.0
        if y == 0:
            return complex(v, y)
        return complex(math.copysign(v, math.cos(y)), math.copysign(v, math.sin(y)))
    if x > 0:
        return complex(x, y - y)
    return complex(0.0, math.copysign(0.0, y))


def _cpow_c(a, b):
    # glibc's cpow(a, b) = cexp(b * clog(a)), what std::pow of two c10::complex numbers calls
    return _cexp_g(_c99_mul(b, _clog_g(a)))
