
# ---------------------------------------------------------------- float16 / bfloat16 (DESIGN §5)
# Numba has no half arithmetic: 16-bit floats travel as uint16 bit patterns, kernels load them as
# float32, compute in float32 and store with round-to-nearest-even. The conversions are bit-exact
# against NumPy's float16 and ml_dtypes' bfloat16, NaN payloads, infinities, subnormals and overflow
# to inf included. float16 has two paths: LLVM's half conversion (one F16C instruction, vectorised)
# where the CPU has F16C, else integer bit manipulation; NaNs take the integer formula on both paths
# because the hardware quiets signalling NaNs and NumPy does not. Both paths are tested. The helpers
# are plain (not inline="always") functions: LLVM inlines them, and Numba types each only once.
from llvmlite import ir as _ir
from llvmlite import binding as _llvm
from numba import types as _types
from numba.extending import intrinsic as _intrinsic



def _target_has_f16c():
    # the CPU Numba compiles for: the host, or the one NUMBA_CPU_NAME / NUMBA_CPU_FEATURES name (then only
    # an explicit +f16c counts). Numba's cache keys compiled code on that CPU, so each choice caches apart;
    # tests/test_half.py runs the kernels once with F16C taken away to test the integer path end to end.
    from numba.core import config
    if config.CPU_NAME is not None or config.CPU_FEATURES is not None:
        return "+f16c" in (config.CPU_FEATURES or "").split(",")
    return bool(_llvm.get_host_cpu_features().get("f16c", False))


HAVE_F16C = _target_has_f16c()


@_intrinsic
def _f32_bits(typingctx, x):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], _ir.IntType(32))
    return _types.uint32(_types.float32), codegen


@_intrinsic
def _bits_f32(typingctx, x):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], _ir.FloatType())
    return _types.float32(_types.uint32), codegen


@_intrinsic
def _f16_hw_load(typingctx, x):
    def codegen(context, builder, sig, args):
        return builder.fpext(builder.bitcast(args[0], _ir.HalfType()), _ir.FloatType())
    return _types.float32(_types.uint16), codegen


@_intrinsic
def _f16_hw_store(typingctx, x):
    def codegen(context, builder, sig, args):
        return builder.bitcast(builder.fptrunc(args[0], _ir.HalfType()), _ir.IntType(16))
    return _types.uint16(_types.float32), codegen


# The conversions are branch-free (selects, not ifs) so that the loops around them vectorise. Their integer
# arithmetic goes through _and/_or/_add/_sub/_shl/_shr: 32-bit operations (Numba widens every uint32
# operation to 64 bits, which halves the vector width and adds packing; measured by benches/half.py).
_U = np.uint32


def _u32_op(name, method):
    def op(typingctx, a, b):
        def codegen(context, builder, sig, args):
            x, y = [context.cast(builder, v, t, _types.uint32) for v, t in zip(args, sig.args)]
            return getattr(builder, method)(x, y)
        return _types.uint32(a, b), codegen
    op.__name__ = op.__qualname__ = name
    return _intrinsic(op)


_and = _u32_op("_and", "and_")
_or = _u32_op("_or", "or_")
_add = _u32_op("_add", "add")
_sub = _u32_op("_sub", "sub")
_shl = _u32_op("_shl", "shl")
_shr = _u32_op("_shr", "lshr")


@njit(cache=False)
def f16_to_f32_int(h):
    # exact: every float16 is a float32. Normal: rebias the exponent (112 = 127 - 15); inf/NaN: exponent
    # 0xFF with the payload; subnormal (and zero): m * 2**-24, computed exactly as (2**-14 + m * 2**-24) - 2**-14
    v = _U(h)
    a = _shl(_and(v, 0x7FFF), 13)
    e = _and(v, 0x7C00)
    sub = _f32_bits(_bits_f32(_add(a, 0x38800000)) - np.float32(6.103515625e-05))
    mag = _or(a, 0x7F800000) if e == _U(0x7C00) else (sub if e == _U(0) else _add(a, 0x38000000))
    return _bits_f32(_or(_shl(_and(v, 0x8000), 16), mag))


@njit(cache=False)
def _f16_nan_bits(x):
    # NumPy's NaN from float32 bits x: the payload's top 10 bits, kept non-zero (the sign bit not included)
    return _or(0x7C00, max(_and(_shr(x, 13), 0x3FF), _U(1)))


@njit(cache=False)
def f32_to_f16_int(f):
    # round to nearest even; >= 65520 overflows to inf. Normal half: rebias and round on the 13 dropped bits
    # (a carry into the exponent is right, up to inf). Subnormal half (below 2**-14): adding 0.5, whose ulp is
    # 2**-24, rounds |f| to the nearest even multiple of 2**-24 in the FPU; those units are the result's bits.
    x = _f32_bits(np.float32(f))
    a = _and(x, 0x7FFFFFFF)
    normal = _shr(_add(_sub(a, 0x37FFF001), _and(_shr(a, 13), 1)), 13)
    sub = _sub(_f32_bits(_bits_f32(a) + np.float32(0.5)), 0x3F000000)
    mag = _f16_nan_bits(x) if a > _U(0x7F800000) else (
        _U(0x7C00) if a >= _U(0x477FF000) else (normal if a >= _U(0x38800000) else sub))
    return np.uint16(_or(_and(_shr(x, 16), 0x8000), mag))


@njit(cache=False)
def f16_to_f32_hw(h):
    # the hardware quiets signalling NaNs (sets the payload's top bit, bit 22 of the float32); NumPy keeps
    # the payload as it is: clear that bit again where the half's payload had its top bit (bit 9) clear
    r = _f16_hw_load(np.uint16(h))
    keep = _U(0xFFBFFFFF) if (r != r) & ((np.uint16(h) & np.uint16(0x200)) == np.uint16(0)) else _U(0xFFFFFFFF)
    return _bits_f32(_f32_bits(r) & keep)


@njit(cache=False)
def f32_to_f16_hw(f):
    f = np.float32(f)
    r = _f16_hw_store(f)
    x = _f32_bits(f)
    nan = np.uint16(_or(_and(_shr(x, 16), 0x8000), _f16_nan_bits(x)))
    return nan if f != f else r


@njit(cache=False)
def f16_to_f32_hw_q(h):
    # the bare hardware load, signalling NaNs quieted: only where a float32 add or multiply quiets them anyway
    # (the reductions' contiguous-row loops; emit_cpu_half.ROWS_LOADS)
    return _f16_hw_load(np.uint16(h))


# the kernels' float16 path, chosen once per process (Numba never types the other)
f16_to_f32 = f16_to_f32_hw if HAVE_F16C else f16_to_f32_int
f16_to_f32_q = f16_to_f32_hw_q if HAVE_F16C else f16_to_f32_int
f32_to_f16 = f32_to_f16_hw if HAVE_F16C else f32_to_f16_int


@njit(cache=False)
def bf16_to_f32(h):
    return _bits_f32(np.uint32(h) << np.uint32(16))


@njit(cache=False)
def f32_to_bf16(f):
    # ml_dtypes (Eigen): round to nearest even; every NaN becomes the quiet NaN 0x7FC0 with its sign
    f = np.float32(f)
    x = _f32_bits(f)
    if f != f:
        return np.uint16((x >> np.uint32(16)) & np.uint32(0x8000) | np.uint32(0x7FC0))
    lsb = (x >> np.uint32(16)) & np.uint32(1)
    return np.uint16((x + np.uint32(0x7FFF) + lsb) >> np.uint32(16))

