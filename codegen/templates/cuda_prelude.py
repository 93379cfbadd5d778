# Scalar helpers for the CUDA kernels: the names of prelude.py (the CPU helpers), as numba.cuda
# device functions, so that one scalar expression of ops.yaml compiles for both targets. The generator
# copies this text into reftorch/kernels/cuda.py; a helper that prelude.py defines and this file does
# not is copied from prelude.py with its decorator switched to a device function (the PTX check in
# tests/test_cuda_ptx.py tells when such a copy does not compile for CUDA).
import cmath
import math
import numpy as np
from numba import cuda, types
from numba.core import config as _numba_config
from numba.core.extending import overload as _cuda_overload

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
    _floor, _ceil, _trunc = np.floor, np.ceil, np.trunc

    def isinstance(x, classes, _builtin=isinstance):  # noqa: A001
        # numba types array elements as int/bool/float; the simulator hands out NumPy scalars
        if _builtin(x, (np.integer, np.bool_)):
            x = x.item()
        return _builtin(x, classes)
else:
    # libdevice's floor/ceil/trunc: on CUDA math.floor keeps the float type (np.floor has no CUDA lowering)
    _floor, _ceil, _trunc = math.floor, math.ceil, math.trunc


# Complex arguments (issue 25), as templates/vmath.py does for the CPU: each math name also takes complex64/complex128,
# through numba.cuda's cmath, or c10's formulas where cmath has none (log1p, expm1, log2: templates/complex_math.py,
# shared with the CPU). The simulator's NumPy ufuncs take complex numbers already.
# @complex_math: the helpers of templates/complex_math.py, emitted here as device functions (codegen/common.py)


def _complex_aware(real_fn, complex_fn):
    """A name for kernels: real_fn on real arguments, complex_fn on complex ones (picked while typing)."""
    def fn(x):
        return real_fn(x)

    @_cuda_overload(fn, target="cuda")
    def _typed(x):
        if isinstance(x, types.Complex):
            return lambda x: complex_fn(x)
        return lambda x: real_fn(x)
    return fn


def _complex_aware2(real_fn, complex_fn):
    """_complex_aware's, for two arguments typed by the first."""
    def fn(a, b):
        return real_fn(a, b)

    @_cuda_overload(fn, target="cuda")
    def _typed(a, b):
        if isinstance(a, types.Complex):
            return lambda a, b: complex_fn(a, b)
        return lambda a, b: real_fn(a, b)
    return fn


if not SIMULATOR:
    exp, log, log1p, expm1, sqrt, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, asinh, acosh, atanh, log2, \
        log10 = (_complex_aware(r, c) for r, c in (
            (math.exp, cmath.exp), (math.log, cmath.log), (math.log1p, _log1p_c), (math.expm1, _expm1_c),
            (math.sqrt, cmath.sqrt), (math.sin, cmath.sin), (math.cos, cmath.cos), (math.tan, cmath.tan),
            (math.asin, cmath.asin), (math.acos, cmath.acos), (math.atan, cmath.atan), (math.sinh, cmath.sinh),
            (math.cosh, cmath.cosh), (math.tanh, cmath.tanh), (math.asinh, cmath.asinh), (math.acosh, cmath.acosh),
            (math.atanh, cmath.atanh), (math.log2, _log2_c), (math.log10, cmath.log10)))


@cuda.jit(device=True, inline=True)
def cast_like(c, x):
    # prelude.py's keeps float32 arithmetic for the CPU's vectorised float32 erf/exp; libdevice has no such
    # split (and isinstance needs a GPU to compile), so the constant stays as written
    return c


@cuda.jit(device=True, inline=True)
def isnan(x):
    return x != x


@cuda.jit(device=True, inline=True)
def isinf(x):
    # either part infinite, for complex and real numbers alike (numba.cuda types both branches of an isinstance)
    y = x * 1      # a bool as an integer (bools have no .imag here)
    return y.real == inf or y.real == -inf or y.imag == inf or y.imag == -inf


@cuda.jit(device=True, inline=True)
def isfinite(x):
    y = x * 1
    return not (y.real != y.real or y.real == inf or y.real == -inf or y.imag != y.imag or y.imag == inf
                or y.imag == -inf)


@cuda.jit(device=True, inline=True)
def floor(x):
    # integers (and bools) are their own floor
    if isinstance(x, (int, bool)):
        return x
    return _floor(x)


@cuda.jit(device=True, inline=True)
def ceil(x):
    if isinstance(x, (int, bool)):
        return x
    return _ceil(x)


@cuda.jit(device=True, inline=True)
def trunc(x):
    if isinstance(x, (int, bool)):
        return x
    return _trunc(x)


@cuda.jit(device=True, inline=True)
def rint(x):
    # round half to even, as torch.round and np.rint do (inf and nan fall through unchanged)
    if isinstance(x, (int, bool)):
        return x
    f = _floor(x)
    d = x - f
    if d > 0.5 or (d == 0.5 and fmod(f, 2.0) != 0):
        f = f + 1
    return f


@cuda.jit(device=True, inline=True)
def exp2(x):
    return 2.0 ** x


@cuda.jit(device=True, inline=True)
def sign(x):
    # -1, 0 or 1; NaN gives 0, as torch.sign does
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


# Integer division by zero raises on the CPU; a kernel cannot raise, so these give 0 there.

@cuda.jit(device=True, inline=True)
def floordiv(a, b):
    # torch.floor_divide: integers exactly; floats by CPython's algorithm (PyTorch's div_floor)
    if isinstance(a, (int, bool)):
        if b == 0:
            return np.int64(0)
        if b == -1:         # the one quotient that overflows: it wraps, INT_MIN // -1 == INT_MIN as in PyTorch
            return np.int64(0) - np.int64(a)
        return np.int64(a) // np.int64(b)
    return a // b


@cuda.jit(device=True, inline=True)
def divtrunc(a, b):
    # torch.div(rounding_mode="trunc"): the quotient rounded toward zero; floats as trunc(a / b)
    if isinstance(a, (int, bool)):
        if b == 0:
            return np.int64(0)
        if b == -1:         # wraps, as floordiv's
            return np.int64(0) - np.int64(a)
        q = np.int64(a) // np.int64(b)
        if q < 0 and q * np.int64(b) != np.int64(a):
            q += 1
        return q
    return _trunc(a / b)


@cuda.jit(device=True, inline=True)
def pymod(a, b):
    # torch.remainder: the sign of the divisor (Python's %); floats from fmod, as PyTorch computes them
    if isinstance(a, (int, bool)):
        if b == 0:
            return np.int64(0)
        return np.int64(a) % np.int64(b)
    m = fmod(a, b)
    if m != 0 and (b < 0) != (m < 0):
        m = m + b
    return m


@cuda.jit(device=True, inline=True)
def cfmod(a, b):
    # torch.fmod: C's remainder, with the sign of the dividend
    if isinstance(a, (int, bool)):
        if b == 0:
            return np.int64(0)
        m = np.int64(a) % np.int64(b)
        if m != 0 and (m < 0) != (a < 0):
            m -= np.int64(b)
        return m
    return fmod(a, b)


@cuda.jit(device=True, inline=True)
def _logaddexp_real(a, b):
    m = a if (a > b or a != a) else b      # NaN wins, as in PyTorch (logaddexp(nan, inf) is nan)
    if m == -inf:
        return m
    if m == inf:
        return m
    return m + log1p(exp(-abs(a - b)))


if SIMULATOR:
    @cuda.jit(device=True, inline=True)
    def logaddexp(a, b):
        if isinstance(a, (complex, np.complex64, np.complex128)):
            return _logaddexp_c(a, b)
        return _logaddexp_real(a, b)
else:       # complex operands by c10's formula (templates/complex_math.py), picked while typing
    logaddexp = _complex_aware2(_logaddexp_real, _logaddexp_c)


# Complex helpers: numba.cuda types both branches of an isinstance test, so these are written once for real
# and complex numbers alike (.real/.imag/abs exist on both).
@cuda.jit(device=True, inline=True)
def cabs(x):
    return abs(x)


@cuda.jit(device=True, inline=True)
def _sgn_real(x):
    m = abs(x)
    if m != m:
        return 0        # NaN: torch.sign's 0
    return x / m if m != 0 else x * 0


# complex numbers by templates/complex_math.py's _sgn_c (each part over |z|, as c10), picked by type as logaddexp is
if SIMULATOR:
    @cuda.jit(device=True, inline=True)
    def sgn(x):
        if isinstance(x, (complex, np.complex64, np.complex128)):
            return _sgn_c(x)
        return _sgn_real(x)
else:
    sgn = _complex_aware(_sgn_real, _sgn_c)


@cuda.jit(device=True, inline=True)
def _tpow_real(a, b):
    # prelude.py's real branches
    if not isinstance(a, (float, np.float32, np.float64, complex, np.complex64, np.complex128)):
        return ipow(a, b)
    if b == 2:
        return a * a
    return a ** b


@cuda.jit(device=True, inline=True)
def _tpow_number_exponent_c(a, b):
    # prelude.py's exact small powers of a Python-number exponent (a plain complex division for the reciprocals)
    if b.imag == 0:
        e = b.real
        if e == 0:
            return complex(cast_like(1.0, a.real), cast_like(0.0, a.real))   # PyTorch fills 1 (inf ** 0 too)
        if e == 1:
            return a
        if e == 2:
            return a * a
        if e == 3:
            return a * a * a
        if e == -1:
            return 1 / a
        if e == -2:
            return 1 / (a * a)
        if e == 0.5:
            return sqrt(a)
        if e == -0.5:
            return 1 / sqrt(a)
    return _cpow_c(a, b)


@cuda.jit(device=True, inline=True)
def _tpow_number_base_c(a, b):
    if a == 1:
        return complex(cast_like(1.0, b.real), cast_like(0.0, b.real))   # PyTorch fills 1 (1 ** inf too)
    return _cpow_c(a, b)


# pow's three kernels: complex numbers through templates/complex_math.py's _cpow_c (glibc's cpow, as the CPU's),
# picked by type while typing: numba.cuda types both branches of an isinstance test, which would make every real
# power complex
if SIMULATOR:
    @cuda.jit(device=True, inline=True)
    def tpow(a, b):
        if isinstance(a, (complex, np.complex64, np.complex128)):
            return _cpow_c(a, b)
        return _tpow_real(a, b)

    @cuda.jit(device=True, inline=True)
    def tpow_number_exponent(a, b):
        if isinstance(a, (complex, np.complex64, np.complex128)):
            return _tpow_number_exponent_c(a, b)
        return _tpow_real(a, b)

    @cuda.jit(device=True, inline=True)
    def tpow_number_base(a, b):
        if isinstance(a, (complex, np.complex64, np.complex128)):
            return _tpow_number_base_c(a, b)
        return _tpow_real(a, b)
else:
    tpow = _complex_aware2(_tpow_real, _cpow_c)
    tpow_number_exponent = _complex_aware2(_tpow_real, _tpow_number_exponent_c)
    tpow_number_base = _complex_aware2(_tpow_real, _tpow_number_base_c)


@cuda.jit(device=True, inline=True)
def cdiv(a, b):
    # prelude.py's guards a complex zero divisor against Numba's ZeroDivisionError; a device kernel raises nothing
    return a / b


@cuda.jit(device=True, inline=True)
def sinc(x):
    # prelude.py's branches on complex with isinstance, which numba.cuda types both ways: one branch for both here
    y = x * 1.0    # a float, or a complex number
    if y == 0:
        return y * 0 + 1
    p = pi * y
    return sin(p) / p


@cuda.jit(device=True, inline=True)
def cangle(x):
    y = x * 1      # a bool as an integer (bools have no .imag here)
    if y.imag != 0:
        return atan2(y.imag, y.real)
    return pi if y.real < 0 else y.real * 0.0
