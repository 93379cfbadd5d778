# ---------------------------------------------------------------- float16 / bfloat16 on CUDA (DESIGN §5)
# 16-bit cuda tensors are uint16 device arrays of bit patterns; the kernels load them to float32, compute
# in float32 and store with round-to-nearest-even. The conversions are the integer ones of
# codegen/templates/half_prelude.py (copied below as device functions by codegen/emit_cuda_half.py), so
# they are bit-exact against NumPy's float16 and ml_dtypes' bfloat16 -- NaN payloads, infinities,
# subnormals and overflow to inf included -- on every GPU and in the simulator, which has neither
# cuda.fp16 nor bf16 intrinsics. The only primitive they need is a float32 <-> uint32 bit cast: an LLVM
# bitcast on the device, NumPy's view in the simulator (which runs kernels as Python).
if SIMULATOR:
    def _f32_bits(x):
        return np.float32(x).view(np.uint32)

    def _bits_f32(x):
        return np.uint32(x).view(np.float32)
else:
    from llvmlite import ir as _ir
    from numba.core import types as _types
    from numba.core.extending import intrinsic as _intrinsic

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

# The conversions' 32-bit integer arithmetic (_and/_or/_add/_sub/_shl/_shr, see half_prelude.py): the same
# LLVM operations on the device; Python integers wrapped to 32 bits in the simulator.
_U = np.uint32
if SIMULATOR:
    def _u32_op(fn):
        return lambda a, b: np.uint32(fn(int(a), int(b)) & 0xFFFFFFFF)

    _and = _u32_op(lambda a, b: a & b)
    _or = _u32_op(lambda a, b: a | b)
    _add = _u32_op(lambda a, b: a + b)
    _sub = _u32_op(lambda a, b: a - b)
    _shl = _u32_op(lambda a, b: a << b)
    _shr = _u32_op(lambda a, b: a >> b)
else:
    pass  # U32_OPS: half_prelude.py's _u32_op and the six operations, copied here by emit_cuda_half
