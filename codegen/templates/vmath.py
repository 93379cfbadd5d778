# Vectorisable exp, log, tanh, log1p, expm1 and erf for the CPU kernels (DESIGN §5). Numba lowers math.exp & co.
# to one libm call per element, which stops LLVM from vectorising the loop (NumPy's SIMD versions are 5-20x
# faster). The generator appends this text to reftorch/kernels/cpu.py after prelude.py; the functions
# named like the `math` ones rebind those names there, so every scalar expression of ops.yaml, every
# prelude helper and every fused backward kernel picks them up. They take the float32 path only for
# float32 arguments (range reduction + polynomial, branch-free so that the loop vectorises; ~1-2 ulp,
# checked by tests/test_kernel_accuracy.py) and keep libm for every other type. Not used by CUDA:
# emit_cuda reads only prelude.py and cuda_prelude.py (libdevice is already vectorised per thread).
# The polynomials are Cephes' (expf, logf, tanhf), by Stephen L. Moshier; erff's are Norbert Juffa's published
# minimax fits (about 1 ulp with a correctly rounded expf).
import cmath
import math
import numpy as np
from llvmlite import ir as _ir
from numba import njit
from numba import types as _types
from numba.core import cgutils as _cgutils
from numba.extending import overload as _numba_overload
from numba.core.extending import intrinsic as _intrinsic
from ._cache import jitted as _jitted

_F32_INF = np.float32(np.inf)
_F32_NAN = np.float32(np.nan)


@_intrinsic
def _fma(typingctx, a, b, c):
    # a * b + c rounded once (LLVM's fma: one instruction where the CPU has FMA); Numba never contracts
    # a multiply and an add by itself. All three arguments have one float type.
    def codegen(context, builder, signature, args):
        t = args[0].type
        name = "llvm.fma.f32" if t == _ir.FloatType() else "llvm.fma.f64"
        return builder.call(_cgutils.get_or_insert_function(builder.module, _ir.FunctionType(t, [t, t, t]), name),
                            args)
    return a(a, a, a), codegen


@njit(error_model="numpy")
def _pow2_f32(k):
    # 2**k for an int32 k in [-126, 127], from the exponent bits
    return np.int32((k + np.int32(127)) << np.int32(23)).view(np.float32)


@njit(error_model="numpy")
def _exp_f32(x):
    # e**x = 2**k * e**r with k = round(x / ln2), r = x - k ln2 (ln2 split in two, Cody-Waite), |r| <= ln2/2
    xc = min(max(x, np.float32(-104.0)), np.float32(89.0))     # beyond: 0 and inf all the same
    k = np.floor(xc * np.float32(1.44269504088896341) + np.float32(0.5))
    r = _fma(-k, np.float32(-2.12194440e-4), _fma(-k, np.float32(0.693359375), xc))
    p = _fma(np.float32(1.9875691500e-4), r, np.float32(1.3981999507e-3))
    p = _fma(p, r, np.float32(8.3334519073e-3))
    p = _fma(p, r, np.float32(4.1665795894e-2))
    p = _fma(p, r, np.float32(1.6666665459e-1))
    p = _fma(p, r, np.float32(5.0000001201e-1))
    p = _fma(p, r * r, r) + np.float32(1.0)
    # 2**k in two factors: k reaches -150 (subnormal results) and 128, outside one float32 exponent
    ki = np.int32(k)
    k1 = ki >> np.int32(1)
    y = p * _pow2_f32(k1) * _pow2_f32(ki - k1)
    return y if x == x else x


@njit(error_model="numpy")
def _log_f32(x):
    # x = m * 2**e with m in [sqrt(1/2), sqrt(2)); log(x) = log1p(m - 1) (polynomial) + e ln2
    sub = x < np.float32(1.17549435e-38)                         # subnormal: scale into the normal range
    ix = np.float32(x * (np.float32(8388608.0) if sub else np.float32(1.0))).view(np.int32)
    e = ((ix >> np.int32(23)) & np.int32(0xff)) - np.int32(126) - (np.int32(23) if sub else np.int32(0))
    m = np.int32((ix & np.int32(0x007fffff)) | np.int32(0x3f000000)).view(np.float32)    # in [0.5, 1)
    low = m < np.float32(0.707106781186547524)
    e = e - (np.int32(1) if low else np.int32(0))
    m = (m + m if low else m) - np.float32(1.0)
    z = m * m
    y = _fma(np.float32(7.0376836292e-2), m, np.float32(-1.1514610310e-1))
    y = _fma(y, m, np.float32(1.1676998740e-1))
    y = _fma(y, m, np.float32(-1.2420140846e-1))
    y = _fma(y, m, np.float32(1.4249322787e-1))
    y = _fma(y, m, np.float32(-1.6668057665e-1))
    y = _fma(y, m, np.float32(2.0000714765e-1))
    y = _fma(y, m, np.float32(-2.4999993993e-1))
    y = _fma(y, m, np.float32(3.3333331174e-1))
    fe = np.float32(e)
    y = _fma(y * m, z, _fma(fe, np.float32(-2.12194440e-4), np.float32(-0.5) * z))
    r = _fma(fe, np.float32(0.693359375), m + y)
    if (x > np.float32(0.0)) & (x < _F32_INF):
        return r
    if x == np.float32(0.0):
        return -_F32_INF
    return x if x == _F32_INF else _F32_NAN       # log(inf) = inf; negative numbers and NaN give NaN


@njit(error_model="numpy")
def _tanh_f32(x):
    # |x| < 0.625: odd polynomial; else 1 - 2 / (e**2|x| + 1) (e**2|x| = inf gives exactly 1)
    a = abs(x)
    s = _exp_f32(a + a)
    big = np.float32(1.0) - np.float32(2.0) / (s + np.float32(1.0))
    big = big if x > np.float32(0.0) else -big
    z = x * x
    q = _fma(np.float32(-5.70498872745e-3), z, np.float32(2.06390887954e-2))
    q = _fma(q, z, np.float32(-5.37397155531e-2))
    q = _fma(q, z, np.float32(1.33314422036e-1))
    q = _fma(q, z, np.float32(-3.33332819422e-1))
    small = _fma(q * z, x, x)
    small = small if a != np.float32(0.0) else x                 # keeps the sign of -0.0
    return small if a < np.float32(0.625) else big


@njit(error_model="numpy")
def _log1p_f32(x):
    # log(u) * x / (u - 1) with u = 1 + x cancels the rounding of u (Goldberg's trick)
    u = np.float32(1.0) + x
    r = _log_f32(u) * (x / (u - np.float32(1.0)))
    return x if (u == np.float32(1.0)) | (x == _F32_INF) else r


@njit(error_model="numpy")
def _expm1_f32(x):
    # |x| < 1/2: Taylor series to x**9 (no cancellation); else e**x - 1
    p = _fma(np.float32(2.7557319e-6), x, np.float32(2.4801587e-5))
    p = _fma(p, x, np.float32(1.9841270e-4))
    p = _fma(p, x, np.float32(1.3888889e-3))
    p = _fma(p, x, np.float32(8.3333333e-3))
    p = _fma(p, x, np.float32(4.1666667e-2))
    p = _fma(p, x, np.float32(1.6666667e-1))
    p = _fma(p, x, np.float32(0.5))
    p = _fma(p * x, x, x)
    p = p if x != np.float32(0.0) else x                           # keeps the sign of -0.0
    big = _exp_f32(x) - np.float32(1.0)
    return p if abs(x) < np.float32(0.5) else big


@njit(error_model="numpy")
def _erf_f32(x):
    # |x| <= 0.927734375: x + x * P(x**2); beyond: sign(x) * (1 - e**(Q(|x|))), Q(t) ~ log(erfc(t)). Both
    # are computed and one is picked, so that the loop has no branch; |x| is clamped at 6 for the tail
    # (erf is exactly +-1 in float32 from 3.92 on), so Q never overflows; NaN stays NaN.
    t = min(abs(x), np.float32(6.0))
    s = x * x
    r = _fma(np.float32(-1.72853470e-5), t, np.float32(3.83197126e-4))
    u = _fma(np.float32(-3.88396438e-3), t, np.float32(2.42546219e-2))
    r = _fma(r, t * t, u)
    r = _fma(r, t, np.float32(-1.06777877e-1))
    r = _fma(r, t, np.float32(-6.34846687e-1))
    r = _fma(r, t, np.float32(-1.28717512e-1))
    r = _fma(r, t, -t)
    big = np.float32(1.0) - _exp_f32(r)
    big = big if x > np.float32(0.0) else -big
    p = _fma(np.float32(-5.96761703e-4), s, np.float32(4.99119423e-3))
    p = _fma(p, s, np.float32(-2.67681349e-2))
    p = _fma(p, s, np.float32(1.12819925e-1))
    p = _fma(p, s, np.float32(-3.76125336e-1))
    p = _fma(p, s, np.float32(1.28379166e-1))
    small = _fma(p, x, x)
    r = big if t > np.float32(0.927734375) else small
    return r if x == x else x


# The names the scalar expressions use: an overload picks the implementation from the argument's type
# while Numba types a kernel (cheaper to compile than an inlined isinstance test). The implementations
# are ordinary functions (error_model="numpy": no division check), compiled once per process and
# inlined by LLVM into each kernel's loop before it vectorises.

def exp(x):
    return math.exp(x)


def log(x):
    return math.log(x)


def tanh(x):
    return math.tanh(x)


def log1p(x):
    return math.log1p(x)


def expm1(x):
    return math.expm1(x)


def erf(x):
    return math.erf(x)


def _overload(fn, fast, slow, complex_fn=None):
    @_numba_overload(fn)
    def _typed(x):
        if x == _types.float32 and fast is not None:
            jitted = _jitted(fast)      # the recorded helper's dispatcher (made as a kernel first uses it)
            return lambda x: jitted(x)
        if isinstance(x, _types.Complex) and complex_fn is not None:
            # cmath's own functions as they are, the helpers below through their recorded dispatcher
            cjitted = complex_fn if getattr(complex_fn, "__module__", None) == "cmath" else _jitted(complex_fn)
            return lambda x: cjitted(x)
        return lambda x: slow(x)


# Complex arguments (issue 25): the same names take complex64/complex128 through cmath, which Numba implements in
# the argument's own precision (complex64 stays complex64, as PyTorch's c10::complex<float>). cmath has no log1p,
# expm1 or log2: those are c10's formulas, in templates/complex_math.py (shared with the CUDA prelude). Real
# arguments keep math's function (and float32 its polynomial above), so real kernels are unchanged.

# @complex_math: the helpers of templates/complex_math.py, emitted here with @njit (codegen/common.py)


def logaddexp(a, b):
    # log(exp(a) + exp(b)) without overflow; complex operands by c10's formula (templates/complex_math.py). The
    # overload below picks the formula while typing: an isinstance branch in one function is not pruned where a
    # scan's accumulator is the argument.
    return _logaddexp_real(a, b)


def _logaddexp_real(a, b):
    m = a if (a > b or a != a) else b      # NaN wins, as in PyTorch (logaddexp(nan, inf) is nan)
    if m == -math.inf or m == math.inf:
        return m
    return m + log1p(exp(-abs(a - b)))


def _overload_logaddexp(complex_fn):
    # (complex_fn is bound now: the module's recorded helpers leave its namespace, reftorch/kernels/_cache.py)
    @_numba_overload(logaddexp)
    def _typed(a, b):
        if isinstance(a, _types.Complex):
            cjitted = _jitted(complex_fn)
            return lambda a, b: cjitted(a, b)
        return _logaddexp_real


_overload_logaddexp(_logaddexp_c)


def sqrt(x):
    return math.sqrt(x)


def sin(x):
    return math.sin(x)


def cos(x):
    return math.cos(x)


def tan(x):
    return math.tan(x)


def asin(x):
    return math.asin(x)


def acos(x):
    return math.acos(x)


def atan(x):
    return math.atan(x)


def sinh(x):
    return math.sinh(x)


def cosh(x):
    return math.cosh(x)


def asinh(x):
    return math.asinh(x)


def acosh(x):
    return math.acosh(x)


def atanh(x):
    return math.atanh(x)


def log2(x):
    return math.log2(x)


def log10(x):
    return math.log10(x)


_overload(exp, _exp_f32, math.exp, _exp_c)
_overload(log, _log_f32, math.log, cmath.log)
_overload(tanh, _tanh_f32, math.tanh, _tanh_c)
_overload(log1p, _log1p_f32, math.log1p, _log1p_c)
_overload(expm1, _expm1_f32, math.expm1, _expm1_c)
_overload(erf, _erf_f32, math.erf)
for _name, _slow, _cfn in ((sqrt, math.sqrt, cmath.sqrt), (sin, math.sin, _sin_c), (cos, math.cos, _cos_c),
                           (tan, math.tan, _tan_c), (asin, math.asin, _asin_c), (acos, math.acos, _acos_c),
                           (atan, math.atan, _atan_c), (sinh, math.sinh, _sinh_c),
                           (cosh, math.cosh, _cosh_c), (asinh, math.asinh, _asinh_c),
                           (acosh, math.acosh, _acosh_c), (atanh, math.atanh, _atanh_c),
                           (log2, math.log2, _log2_c), (log10, math.log10, cmath.log10)):
    _overload(_name, None, _slow, _cfn)
