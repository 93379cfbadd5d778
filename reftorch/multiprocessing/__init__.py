"""reftorch.multiprocessing: the standard multiprocessing module, with cpu tensors sent through
shared memory (reftorch/multiprocessing/_shared.py) by every Queue, Pipe and Pool, and torch's spawn.
reftorch imports it with itself: it registers the pickling of tensors and Tensor.share_memory_ / is_shared."""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from .._tensor import Tensor
from ._shared import (get_all_sharing_strategies, get_sharing_strategy, init_reductions,  # noqa: F401
                      is_shared, set_sharing_strategy, share_memory_)
from .spawn import (ProcessContext, ProcessExitedException, ProcessRaisedException, SpawnContext,  # noqa: F401
                    spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]
__all__ += multiprocessing.__all__

init_reductions()
Tensor.share_memory_, Tensor.is_shared = share_memory_, is_shared
