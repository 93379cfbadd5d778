"""Registry -> the text of every generated file, keyed by path relative to the repository root."""
from __future__ import annotations

from . import emit_api, emit_autograd, emit_cpu, emit_cuda, emit_docs, emit_forward
from . import emit_cpu_half, emit_cuda_half, emit_views
from .common import HEADER, template
from .model import load


def generate(registry_path, text=None):
    ops = load(registry_path, text)
    deriv_src, fused, saves = emit_autograd.emit(ops)
    return {
        "reftorch/kernels/__init__.py": emit_cpu.KERNELS_INIT,
        "reftorch/kernels/_cache.py": emit_cpu.cache_module(),
        "reftorch/kernels/cpu.py": emit_cpu.emit_module(ops, fused),
        "reftorch/kernels/cuda.py": emit_cuda.emit_module(ops, fused),
        "reftorch/kernels/cpu_half.py": emit_cpu_half.emit_half_module(ops, fused),
        "reftorch/kernels/cuda_half.py": emit_cuda_half.emit_module(ops, fused),
        "reftorch/kernels/derivatives.py": deriv_src,
        "reftorch/kernels/transforms.py": emit_forward.emit(ops),
        "reftorch/kernels/api.py": emit_api.emit_api(ops, saves),
        "reftorch/kernels/composites.py": emit_api.emit_composites(ops),
        "reftorch/kernels/array_ops.py": emit_api.emit_array_ops(ops),
        "reftorch/kernels/return_types.py": emit_api.emit_return_types(ops),
        "reftorch/kernels/lapack.py": HEADER + template("lapack.py"),
        "reftorch/kernels/lapack_calls.py": HEADER + template("lapack_calls.py"),
        "reftorch/kernels/geometry.py": emit_views.emit_geometry(),
        "reftorch/kernels/views.py": emit_views.emit_views(ops),
        "reftorch/kernels/sorting.py": HEADER + template("sorting.py"),
        "reftorch/kernels/scatter.py": HEADER + template("scatter.py"),
        "reftorch/kernels/rows.py": HEADER + template("rows.py"),
        "docs/ops.md": emit_docs.emit(ops),
    }
