"""reftorch.backends.mkl: whether the BLAS that reftorch's matmuls call (NumPy's) is Intel MKL."""
from __future__ import annotations

import numpy as np


def is_available():
    try:
        name = np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]
    except (AttributeError, KeyError, TypeError):
        return False
    return "mkl" in str(name).lower()
