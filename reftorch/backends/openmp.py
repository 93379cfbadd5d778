"""reftorch.backends.openmp: reftorch's parallel kernels run on its own thread pool (reftorch.set_num_threads),
not on OpenMP."""
from __future__ import annotations


def is_available():
    return False
