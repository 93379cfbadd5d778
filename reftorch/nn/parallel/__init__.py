"""reftorch.nn.parallel: DistributedDataParallel (processes on MPI; see reftorch.distributed)."""
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]
