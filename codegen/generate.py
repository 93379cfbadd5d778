"""Registry -> the text of every generated file, keyed by path relative to the repository root."""
from __future__ import annotations

from . import emit_api, emit_autograd, emit_cpu, emit_cuda, emit_docs
from . import emit_cpu_half, emit_cuda_half
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
        "reftorch/kernels/api.py": emit_api.emit_api(ops, saves),
        "reftorch/kernels/composites.py": emit_api.emit_composites(ops),
        "reftorch/kernels/array_ops.py": emit_api.emit_array_ops(ops),
        "reftorch/kernels/lapack.py": emit_cpu.HEADER + emit_cpu.template("lapack.py"),
        "reftorch/kernels/sorting.py": emit_cpu.HEADER + emit_cpu.template("sorting.py"),
        "docs/ops.md": emit_docs.emit(ops),
    }
