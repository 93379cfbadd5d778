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


from .common import CACHE_GUARD, HEADER, LAZY_MODULE, kernel_scalars, prelude, template, vmath
from .emit_cpu import (SCALAR_DECORATOR, argreduction_loops, better_fn, combine_fn, elementwise_kernels, recorded,
                       reduction_loops, scalar_fn, scan_loops)

# format -> (load helper, store helper) of templates/half_prelude.py
FORMATS = {"f16": ("f16_to_f32", "f32_to_f16"), "bf16": ("bf16_to_f32", "f32_to_bf16")}
# the load of the reductions' contiguous-row loops (`acc + f(x)` / `acc * f(x)`, emit_cpu._reassociable):
# float16 skips the signalling-NaN fix-up of f16_to_f32 there (three more vector instructions per 8 elements,
# a sixth of the time of a threaded sum); a row whose result is NaN runs again with the exact load
ROWS_LOADS = {"f16": "f16_to_f32_q"}
PROMOTED = ("Tensor", "Tensor?")


def half_prelude():
    return template("half_prelude.py")


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
    return (f"{SCALAR_DECORATOR}\ndef _s_{name}_{fmt}({', '.join(params)}):\n"   # (see emit_cpu.scalar_fn)
            f"    return {body}\n")


def elementwise_half(name, tensors, scalars, expr, comment, loaded, store):
    parts = [scalar_fn(name, list(tensors) + list(scalars), expr, comment)]
    for fmt in FORMATS:
        parts.append(_wrap_scalar(name, fmt, list(tensors) + list(scalars), loaded, store))
        parts.append(elementwise_kernels(f"{name}_{fmt}", tensors, scalars, f"{comment} [{fmt}]"))
    return "\n\n".join(parts)


def reduction_half(op):
    """The loops of emit_cpu (reductions, argreductions, scans) once per format, reading through its load."""
    head, loops = {"reduction": (combine_fn, reduction_loops), "argreduction": (better_fn, argreduction_loops),
                   "scan": (combine_fn, scan_loops)}[op.kind]
    if op.kind == "reduction":
        return "\n\n".join([head(op)] + [loops(op, fmt, load, ROWS_LOADS.get(fmt)) for fmt, (load, _) in FORMATS.items()])
    return "\n\n".join([head(op)] + [loops(op, fmt, load) for fmt, (load, _) in FORMATS.items()])


def emit_half_module(ops, fused):
    parts = [HEADER, '"""float16/bfloat16 CPU kernels of ops.yaml: uint16 storage, float32 compute (DESIGN §5)."""\n',
             CACHE_GUARD, recorded(prelude()), recorded(vmath()), half_prelude(), conversion_kernels()]
    for op in ops:
        if "float" not in op.dtypes:
            continue
        if op.kind in ("unary", "binary", "ternary"):
            tensors = [a.name for a in op.signature.tensor_args]
            loaded = {a.name for a in op.signature.tensor_args if a.type in PROMOTED}
            parts.append(elementwise_half(op.name, tensors, kernel_scalars(op), op.scalar,
                                          f"{op.name} -- {op.scalar}", loaded, op.result not in ("bool", "int64")))
        elif op.kind in ("reduction", "argreduction", "scan"):
            parts.append(reduction_half(op))
    for fk in fused:
        parts.append(elementwise_half(fk.name, fk.tensors, fk.scalars, fk.expr, fk.comment, set(fk.tensors), True))
    parts.append(LAZY_MODULE)
    return "\n\n".join(p.rstrip() + "\n" for p in parts)
