
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

HAVE_F16C = bool(_llvm.get_host_cpu_features().get("f16c", False))


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


@njit(cache=False)
def f16_to_f32_int(h):
    # exact: every float16 is a float32
    v = np.int64(h)
    sign = (v & 0x8000) << 16
    e = (v >> 10) & 0x1F
    m = v & 0x3FF
    if e == 0x1F:
        return _bits_f32(np.uint32(sign | 0x7F800000 | (m << 13)))        # inf, NaN with its payload
    if e == 0:
        r = np.float32(m) * np.float32(5.960464477539063e-08)               # subnormal: m * 2**-24
        return -r if sign else r
    return _bits_f32(np.uint32(sign | ((e + 112) << 23) | (m << 13)))


@njit(cache=False)
def _f16_nan_bits(x):
    # NumPy's NaN: the payload's top 10 bits, kept non-zero
    m = (x >> 13) & 0x3FF
    return ((x >> 16) & 0x8000) | 0x7C00 | (m if m != 0 else 1)


@njit(cache=False)
def f32_to_f16_int(f):
    # round to nearest even; >= 65520 overflows to inf; below 2**-25 flushes to (signed) zero
    x = np.int64(_f32_bits(np.float32(f)))
    sign = (x >> 16) & 0x8000
    a = x & 0x7FFFFFFF
    if a > 0x7F800000:
        return np.uint16(_f16_nan_bits(x))
    if a >= 0x477FF000:
        return np.uint16(sign | 0x7C00)
    if a >= 0x38800000:                       # normal half
        h = (a - 0x38000000) >> 13
        rem = a & 0x1FFF
        if rem > 0x1000 or (rem == 0x1000 and (h & 1) == 1):
            h += 1
        return np.uint16(sign | h)
    shift = 126 - (a >> 23)                   # subnormal half: m * 2**(e-150) in units of 2**-24
    if shift > 24:
        return np.uint16(sign)
    m = (a & 0x7FFFFF) | 0x800000
    h = m >> shift
    rem = m & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    if rem > half or (rem == half and (h & 1) == 1):
        h += 1
    return np.uint16(sign | h)


@njit(cache=False)
def f16_to_f32_hw(h):
    r = _f16_hw_load(np.uint16(h))
    v = np.int64(h)
    if (v & 0x7C00) == 0x7C00 and (v & 0x3FF) != 0:    # the hardware quiets signalling NaNs; NumPy keeps them
        return _bits_f32(np.uint32(((v & 0x8000) << 16) | 0x7F800000 | ((v & 0x3FF) << 13)))
    return r


@njit(cache=False)
def f32_to_f16_hw(f):
    f = np.float32(f)
    r = _f16_hw_store(f)
    if f != f:
        return np.uint16(_f16_nan_bits(np.int64(_f32_bits(f))))
    return r


# the kernels' float16 path, chosen once per process (Numba never types the other)
f16_to_f32 = f16_to_f32_hw if HAVE_F16C else f16_to_f32_int
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
