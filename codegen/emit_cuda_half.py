"""float16 and bfloat16 variants of the CUDA kernels (reftorch/kernels/cuda_half.py).

A cuda tensor of a 16-bit float dtype keeps its elements as a uint16 device array of bit patterns
(reftorch/_cuda_dispatch.py). Every kernel here loads them to float32, runs the op's own scalar function
(the text of reftorch/kernels/cuda.py) and stores with round-to-nearest-even; reductions, scans and the
matmul accumulate in float32. The conversions are the integer ones of templates/half_prelude.py, copied
as device functions, so the CPU and the device round alike (DESIGN §5). Per op and format fmt (f16, bf16):
  <op>_<fmt>_contig / <op>_<fmt>_strided       elementwise (the loops of emit_cuda.elementwise_kernels)
  <op>_<fmt>_reduce / _reduce_serial            reductions and argreductions (acc: float32)
  <op>_<fmt>_scan / _scan_serial                scans (out: the float32 running result)
  matmul_<fmt>_tiled                            the tiled matmul with float32 tiles and accumulator
  cvt_to_any_<fmt>_..., cvt_from_any_<fmt>_..., cvt_to_<other fmt>_<fmt>_...   dtype conversions
"""
from __future__ import annotations

import ast

from .common import HEADER, kernel_scalars, template
from .emit_cpu_half import FORMATS, PROMOTED
from .emit_cuda import (DEVICE, TILE, BLOCK, argreduction_kernels, elementwise_kernels, prelude, reduction_kernels,
                        reduction_scalars, scalar_fn, scan_kernels, tree_merge, _same, _fused_op)

# the integer conversions of templates/half_prelude.py that the device uses, and what the kernels call them
CONVERSIONS = ("f16_to_f32_int", "_f16_nan_bits", "f32_to_f16_int", "bf16_to_f32", "f32_to_bf16")


def conversions():
    """The integer float16/bfloat16 conversions of templates/half_prelude.py as device functions (one text
    for the CPU's integer path and the device), and the names the kernels call."""
    src = template("half_prelude.py")
    lines = src.splitlines()
    found = {}
    for node in ast.parse(src).body:
        if isinstance(node, ast.FunctionDef) and node.name in CONVERSIONS:
            found[node.name] = "\n".join(lines[node.lineno - 1:node.end_lineno])   # without its @njit line
    missing = [n for n in CONVERSIONS if n not in found]
    if missing:
        raise RuntimeError(f"codegen/templates/half_prelude.py lacks {', '.join(missing)}")
    out = [f"{DEVICE}  # copied from codegen/templates/half_prelude.py\n{found[n]}" for n in CONVERSIONS]
    out.append("# the device takes the integer float16 path (no F16C question there)\n"
               "f16_to_f32 = f16_to_f32_int\nf32_to_f16 = f32_to_f16_int")
    return "\n\n\n".join(out) + "\n"


U32_OPS = ("_and", "_or", "_add", "_sub", "_shl", "_shr")
_U32_MARK = "    pass  # U32_OPS: half_prelude.py's _u32_op and the six operations, copied here by emit_cuda_half\n"


def _u32_ops():
    """half_prelude.py's 32-bit integer intrinsics (_u32_op and the operations made with it), indented for the
    device branch of cuda_half_prelude.py: one text for the CPU and the device."""
    src = template("half_prelude.py")
    lines = src.splitlines()
    parts = []
    for node in ast.parse(src).body:
        if isinstance(node, ast.FunctionDef) and node.name == "_u32_op" or \
                isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets][0] in U32_OPS:
            parts.append(lines[node.lineno - 1:node.end_lineno])
    if len(parts) != 1 + len(U32_OPS):
        raise RuntimeError("codegen/templates/half_prelude.py lacks _u32_op or one of " + ", ".join(U32_OPS))
    text = "\n".join(parts[0]) + "\n\n" + "\n".join(line for p in parts[1:] for line in p)
    return "".join("    " + line + "\n" if line else "\n" for line in text.splitlines())


def _template():
    src = template("cuda_half_prelude.py")
    if _U32_MARK not in src:
        raise RuntimeError("codegen/templates/cuda_half_prelude.py lacks its U32_OPS line")
    return src.replace(_U32_MARK, _u32_ops())


def _wrap_scalar(name, fmt, params, loaded, store):
    load, st = FORMATS[fmt]
    args = ", ".join(f"{load}({p})" if p in loaded else p for p in params)
    body = f"_s_{name}({args})"
    if store:
        body = f"{st}({body})"
    return f"{DEVICE}\ndef _s_{name}_{fmt}({', '.join(params)}):\n    return {body}\n"


def elementwise_half(name, tensors, scalars, expr, comment, loaded, store):
    parts = [scalar_fn(name, list(tensors) + list(scalars), expr, comment)]
    for fmt in FORMATS:
        parts.append(_wrap_scalar(name, fmt, list(tensors) + list(scalars), loaded, store))
        parts.append(elementwise_kernels(f"{name}_{fmt}", len(tensors), scalars, f"{comment} [{fmt}]"))
    return "\n\n".join(parts)


def conversion_kernels():
    """Conversions, named so that the launcher's (name, fmt) finds them as <name>_<fmt>_<suffix>:
      cvt_to_any_<fmt>     a 16-bit format to any other dtype (through float32, exact; then the output's cast)
      cvt_from_any_<fmt>   any dtype that is not 16-bit to the format (rounded once, from float32)
      cvt_to_<b>_<a>       one 16-bit format to the other (through float32)"""
    pairs = []
    for fmt, (load, store) in FORMATS.items():
        pairs.append(("cvt_to_any", fmt, f"{load}(a)", f"{fmt} -> any dtype (float32 exactly, then the output's cast)"))
        pairs.append(("cvt_from_any", fmt, f"{store}(a)", f"any dtype -> {fmt} (round to nearest even)"))
    for a in FORMATS:
        for b in FORMATS:
            if a != b:
                pairs.append((f"cvt_to_{b}", a, f"{FORMATS[b][1]}({FORMATS[a][0]}(a))", f"{a} -> {b} through float32"))
    parts = []
    for name, fmt, expr, comment in pairs:
        parts.append(scalar_fn(f"{name}_{fmt}", ["a"], expr, comment))
        parts.append(elementwise_kernels(f"{name}_{fmt}", 1, [], f"conversion {comment}"))
    return "\n\n".join(parts), sorted({p[0] for p in pairs})


def matmul_half(fmt):
    load, store = FORMATS[fmt]
    return f"""@cuda.jit
def matmul_{fmt}_tiled(a, b, out):
    # ops.yaml: matmul [{fmt}] -- the tiled kernel of reftorch/kernels/cuda.py over uint16 bit patterns: tiles and
    # accumulator in float32, each output rounded once (cuBLAS's default for half inputs)
    ta = cuda.shared.array((TILE, TILE), types.float32)
    tb = cuda.shared.array((TILE, TILE), types.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    nb = out.shape[0]
    M = a.shape[1]
    K = a.shape[2]
    N = b.shape[2]
    zero = np.float32(0)
    for z in range(cuda.blockIdx.z, nb, cuda.gridDim.z):
        for r0 in range(cuda.blockIdx.y * TILE, M, cuda.gridDim.y * TILE):
            for c0 in range(cuda.blockIdx.x * TILE, N, cuda.gridDim.x * TILE):
                r = r0 + ty
                c = c0 + tx
                acc = zero
                for k0 in range(0, K, TILE):
                    ta[ty, tx] = {load}(a[z, r, k0 + tx]) if (r < M and k0 + tx < K) else zero
                    tb[ty, tx] = {load}(b[z, k0 + ty, c]) if (c < N and k0 + ty < K) else zero
                    cuda.syncthreads()
                    for k in range(TILE):
                        acc += ta[ty, k] * tb[k, tx]
                    cuda.syncthreads()
                if r < M and c < N:
                    out[z, r, c] = {store}(acc)
"""


def emit_module(ops, fused):
    parts = [HEADER, '"""float16/bfloat16 numba.cuda kernels of ops.yaml: uint16 bit patterns on the device, float32\n'
                     'compute, round to nearest even on store (DESIGN §5; codegen/emit_cuda_half.py). Nothing compiles at\n'
                     'import: each kernel compiles on its first launch (reftorch/_cuda_launch.py)."""\n',
             prelude(), _template(), conversions(),
             f"BLOCK = {BLOCK}  # the most threads per block of the reduction and scan kernels\n"
             f"TILE = {TILE}  # matmul tile edge (TILE x TILE threads per block)\n"]
    table = []

    def row(name, kind, entry, tensors, scalars, suffixes, split=False):
        line = f"    {name!r}: dict(kind={kind!r}, op={entry!r}, tensors={tuple(tensors)!r}, scalars={tuple(scalars)!r}, "
        more = f"kernels={tuple(suffixes)!r}" + (", split=True" if split else "") + "),"
        table.append(line + more if len(line + more) <= 140 else line.rstrip() + "\n        " + more)

    parts.append("# " + "-" * 70 + " dtype conversions\n")
    text, names = conversion_kernels()
    parts.append(text)
    for n in names:
        row(n, "conversion", "clone", ("a",), (), ("contig", "strided"))
    parts.append("# " + "-" * 70 + " elementwise ops\n")
    for op in ops:
        if "float" not in op.dtypes:
            continue
        if op.kind in ("unary", "binary", "ternary"):
            tensors = [a.name for a in op.signature.tensor_args]
            loaded = {a.name for a in op.signature.tensor_args if a.type in PROMOTED}
            scalars = kernel_scalars(op)
            parts.append(elementwise_half(op.name, tensors, scalars, op.scalar, f"{op.name} -- {op.scalar}", loaded,
                                          op.result not in ("bool", "int64")))
            row(op.name, "elementwise", op.name, tensors, scalars, ("contig", "strided"))
    parts.append("# " + "-" * 70 + " fused backward kernels (from derivative formulas)\n")
    for fk in fused:
        op = _fused_op(fk, ops)
        parts.append(elementwise_half(fk.name, fk.tensors, fk.scalars, fk.expr, fk.comment, set(fk.tensors), True))
        row(fk.name, "elementwise", op.name if op else fk.name, fk.tensors, fk.scalars, ("contig", "strided"))
    parts.append("# " + "-" * 70 + " reductions, argreductions, scans\n")
    for op in ops:
        if "float" not in op.dtypes:
            continue
        if op.kind == "reduction":
            parts.append("\n\n".join(reduction_kernels(op, fmt, combine=i == 0) for i, fmt in enumerate(FORMATS)))
            merge = tree_merge(op)
            fns = (("reduce",) if merge else ()) + ("reduce_serial",)
            row(op.name, "reduction", op.name, ("self",), reduction_scalars(op), fns,
                split=merge is not None and _same(merge, op.reduce.combine))
        elif op.kind == "argreduction":
            parts.append("\n\n".join(argreduction_kernels(op, fmt, combine=i == 0) for i, fmt in enumerate(FORMATS)))
            row(op.name, "argreduction", op.name, ("self",), (), ("reduce", "reduce_serial"))
        elif op.kind == "scan":
            parts.append("\n\n".join(scan_kernels(op, fmt, combine=i == 0) for i, fmt in enumerate(FORMATS)))
            fns = (("scan",) if tree_merge(op) else ()) + ("scan_serial",)
            row(op.name, "scan", op.name, ("self",), (), fns)
    parts.append("# " + "-" * 70 + " matmul\n")
    parts += [matmul_half(fmt) for fmt in FORMATS]
    row("matmul", "matmul", "matmul", ("self", "other"), (), ("tiled",))
    parts.append("# Every kernel family of this module: name -> its kind, the ops.yaml entry, its tensor and scalar\n"
                 "# arguments and its kernels, each as <name>_<fmt>_<suffix> for fmt in f16, bf16 (cvt_to_f16 and\n"
                 "# cvt_to_bf16 from the other format only). A split reduction merges its float32 partials with the\n"
                 "# float32 kernel of reftorch/kernels/cuda.py.\n"
                 f"FORMATS = {tuple(FORMATS)!r}\n"
                 "KERNELS = {\n" + "\n".join(table) + "\n}\n")
    return "\n\n".join(p.rstrip() + "\n" for p in parts)
