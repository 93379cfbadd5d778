"""reftorch.backends.cpu: the vector instruction set reftorch's generated cpu kernels are compiled for (Numba's
target: AVX-512 with 512-bit vectors unless REFTORCH_VECTOR_WIDTH=256, see reftorch/kernels/_cache.py)."""
from __future__ import annotations

import os


def get_cpu_capability():
    """"AVX512", "AVX2" or "DEFAULT", as PyTorch names them on x86; "DEFAULT" elsewhere."""
    import numba    # (asked here: `import reftorch` leaves Numba to the first op, benches/startup.py)
    features = numba.config.CPU_FEATURES
    if features is None:
        try:
            from numba.core.codegen import get_host_cpu_features
            features = get_host_cpu_features()
        except Exception:   # noqa: BLE001 -- no native target information
            return "DEFAULT"
    features = features.split(",")
    if "+avx512f" in features and os.environ.get("REFTORCH_VECTOR_WIDTH", "512") == "512":
        return "AVX512"
    if "+avx2" in features:
        return "AVX2"
    return "DEFAULT"
