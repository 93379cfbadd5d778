"""float16 and bfloat16 variants of the CPU kernels (reftorch/kernels/cpu_half.py).

A separate module so that processes that never touch a 16-bit tensor never import (or compile) it.
Storage is uint16 bit patterns; every kernel loads to float32, runs the op's own scalar function
(the same text as cpu.py), and stores with round-to-nearest-even (DESIGN §5). Per op and format:
  <op>_<fmt>_contig / <op>_<fmt>_strided    elementwise (the loops of emit_cpu.elementwise_kernels)
  <op>_<fmt>_reduce                         reductions, accumulating in the runtime's float32 acc
  <op>_<fmt>_reduce (argreductions), <op>_<fmt>_scan
with fmt in f16, bf16. Numba compiles each on its first call only.
"""
from __future__ import annotations

import os

from .emit_cpu import CACHE_GUARD, HEADER, LAZY_MODULE, TEMPLATES, elementwise_kernels, kernel_scalars, prelude, scalar_fn

# format -> (load helper, store helper) of templates/half_prelude.py
FORMATS = {"f16": ("f16_to_f32", "f32_to_f16"), "bf16": ("bf16_to_f32", "f32_to_bf16")}
PROMOTED = ("Tensor", "Tensor?")


def half_prelude():
    with open(os.path.join(TEMPLATES, "half_prelude.py")) as f:
        return f.read()


def conversion_kernels():
    """Whole-array conversions: the runtime's casts, and the tests of both float16 paths."""
    out = []
    pairs = [("f16", "f16_to_f32", "f32_to_f16"), ("bf16", "bf16_to_f32", "f32_to_bf16"),
             ("f16_int", "f16_to_f32_int", "f32_to_f16_int"), ("f16_hw", "f16_to_f32_hw", "f32_to_f16_hw")]
    for name, load, store in pairs:
        out.append(f'''@njit(cache=CACHE)
def {name}_load_array(a, out):
    # uint16 bit patterns -> float32
    for i in range(a.shape[0]):
        out[i] = {load}(a[i])


@njit(cache=CACHE)
def {name}_store_array(a, out):
    # float32 (or float64, through float32) -> uint16 bit patterns, round to nearest even
    for i in range(a.shape[0]):
        out[i] = {store}(a[i])
''')
    return "\n\n".join(out)


def _wrap_scalar(name, fmt, params, loaded, store):
    load, st = FORMATS[fmt]
    args = ", ".join(f"{load}({p})" if p in loaded else p for p in params)
    body = f"_s_{name}({args})"
    if store:
        body = f"{st}({body})"
    return (f"@njit(inline=\"always\")\ndef _s_{name}_{fmt}({', '.join(params)}):\n"
            f"    return {body}\n")


def elementwise_half(name, tensors, scalars, expr, comment, loaded, store):
    parts = [scalar_fn(name, list(tensors) + list(scalars), expr, comment)]
    for fmt in FORMATS:
        parts.append(_wrap_scalar(name, fmt, list(tensors) + list(scalars), loaded, store))
        parts.append(elementwise_kernels(f"{name}_{fmt}", tensors, scalars, f"{comment} [{fmt}]"))
    return "\n\n".join(parts)


def reduction_half(op):
    r = op.reduce
    extra = [a.name for a in op.signature.args if a.type in ("Scalar", "float")]
    sc = "".join(", " + s for s in extra)
    parts = [f'''@njit(inline="always")
def _c_{op.name}(acc, x{sc}):
    # ops.yaml: {op.name} -- combine: {r.combine}
    return {r.combine}
''']
    for fmt, (load, _) in FORMATS.items():
        parts.append(f'''@njit(cache=CACHE, error_model="numpy")
def {op.name}_{fmt}_reduce(x, off, M, sm, K, sk, acc, start{sc}):
    # ops.yaml: {op.name} [{fmt}] -- x holds uint16 bit patterns; acc (float32) accumulates
    off = np.uint64(off)
    M = np.uint64(M)
    K = np.uint64(K)
    sm = np.uint64(sm)
    sk = np.uint64(sk)
    if start == 1:
        for m in range(M):
            acc[m] = {load}(x[off + m * sm])
    k0 = np.uint64(start)
    if sk <= sm or M == 1:
        for m in range(M):
            base = off + m * sm
            a = acc[m]
            for k in range(k0, K):
                a = _c_{op.name}(a, {load}(x[base + k * sk]){sc})
            acc[m] = a
    else:
        for k in range(k0, K):
            base = off + k * sk
            for m in range(M):
                acc[m] = _c_{op.name}(acc[m], {load}(x[base + m * sm]){sc})
''')
    return "\n\n".join(parts)


def argreduction_half(op):
    parts = [f'''@njit(inline="always")
def _b_{op.name}(x, best):
    # ops.yaml: {op.name} -- better: {op.reduce.better}
    return {op.reduce.better}
''']
    for fmt, (load, _) in FORMATS.items():
        parts.append(f'''@njit(cache=CACHE, error_model="numpy")
def {op.name}_{fmt}_reduce(x, off, M, sm, K, sk, out):
    # ops.yaml: {op.name} [{fmt}]
    off = np.uint64(off)
    sm = np.uint64(sm)
    sk = np.uint64(sk)
    for m in range(np.uint64(M)):
        base = off + m * sm
        best = {load}(x[base])
        bi = 0
        for k in range(np.uint64(1), np.uint64(K)):
            v = {load}(x[base + k * sk])
            if _b_{op.name}(v, best):
                best = v
                bi = k
        out[m] = bi
''')
    return "\n\n".join(parts)


def scan_half(op):
    parts = [f'''@njit(inline="always")
def _c_{op.name}(acc, x):
    # ops.yaml: {op.name} -- combine: {op.reduce.combine}
    return {op.reduce.combine}
''']
    for fmt, (load, _) in FORMATS.items():
        parts.append(f'''@njit(cache=CACHE, error_model="numpy")
def {op.name}_{fmt}_scan(x, off, M, sm, K, sk, out, acc0):
    # ops.yaml: {op.name} [{fmt}] -- out is the float32 (M, K) running result
    off = np.uint64(off)
    sm = np.uint64(sm)
    sk = np.uint64(sk)
    K = np.uint64(K)
    for m in range(np.uint64(M)):
        base = off + m * sm
        a = acc0[0]
        for k in range(K):
            a = _c_{op.name}(a, {load}(x[base + k * sk]))
            out[m * K + k] = a
''')
    return "\n\n".join(parts)


def emit_half_module(ops, fused):
    parts = [HEADER, '"""float16/bfloat16 CPU kernels of ops.yaml: uint16 storage, float32 compute (DESIGN §5)."""\n',
             prelude(), half_prelude(), CACHE_GUARD, conversion_kernels()]
    for op in ops:
        if "float" not in op.dtypes:
            continue
        if op.kind in ("unary", "binary", "ternary"):
            tensors = [a.name for a in op.signature.tensor_args]
            loaded = {a.name for a in op.signature.tensor_args if a.type in PROMOTED}
            parts.append(elementwise_half(op.name, tensors, kernel_scalars(op), op.scalar,
                                          f"{op.name} -- {op.scalar}", loaded, op.result not in ("bool", "int64")))
        elif op.kind == "reduction":
            parts.append(reduction_half(op))
        elif op.kind == "argreduction":
            parts.append(argreduction_half(op))
        elif op.kind == "scan":
            parts.append(scan_half(op))
    for fk in fused:
        parts.append(elementwise_half(fk.name, fk.tensors, fk.scalars, fk.expr, fk.comment, set(fk.tensors), True))
    parts.append(LAZY_MODULE)
    return "\n\n".join(p.rstrip() + "\n" for p in parts)
