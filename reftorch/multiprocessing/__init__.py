"""reftorch.multiprocessing: the standard multiprocessing module, with cpu tensors sent through
shared memory (reftorch/multiprocessing/_shared.py) by every Queue, Pipe and Pool, and torch's spawn."""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from ._shared import (get_all_sharing_strategies, get_sharing_strategy, init_reductions,  # noqa: F401
                      set_sharing_strategy)
from .spawn import (ProcessContext, ProcessExitedException, ProcessRaisedException, SpawnContext,  # noqa: F401
                    spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]
__all__ += multiprocessing.__all__

init_reductions()
