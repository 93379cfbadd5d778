"""Simulator settings for this process (tests/test_cuda_simulator.py runs it with NUMBA_ENABLE_CUDASIM=1).

The simulator runs a block's threads as Python threads and polls them at every syncthreads(); a short
GIL switch interval makes each barrier cheap. It also exposes a race in the simulator itself:
`cuda.shared.array` looks its array up in a per-line table and then stores a new one, so two threads
switched between the lookup and the store get different arrays (seen as a wrong cumprod scan). The
same allocation done under a lock closes it; real GPUs and our kernels are not involved.
"""
import sys
import threading
import traceback

import numpy as np
from numba.core import types
from numba.np import numpy_support

from numba.cuda.simulator import kernelapi

_lock = threading.Lock()


def _shared_array(self, shape, dtype, alignment=None):
    if alignment is not None:
        raise RuntimeError("Array alignment is not supported in cudasim")
    if isinstance(dtype, types.Type):
        dtype = numpy_support.as_dtype(dtype)
    if shape == 0:
        return np.frombuffer(self._dynshared.data, dtype=dtype, count=self._dynshared_size // dtype.itemsize)
    caller = traceback.extract_stack(sys._getframe())[-2][0:2]      # the kernel's file and line: one array each
    with _lock:
        res = self._allocations.get(caller)
        if res is None:
            res = self._allocations[caller] = np.empty(shape, dtype)
    return res


kernelapi.FakeCUDAShared.array = _shared_array
sys.setswitchinterval(1e-4)


# REFTORCH_SIM_SHARD=i/k (set by tests/test_cuda_simulator.py): this process runs every k-th test, from the
# i-th, so the simulator's work spreads over k processes that pytest-xdist runs side by side.
def pytest_collection_modifyitems(config, items):
    import os
    import zlib
    shard = os.environ.get("REFTORCH_SIM_SHARD")
    if not shard:
        return
    i, k = (int(v) for v in shard.split("/"))
    keep = [it for it in items if zlib.crc32(it.nodeid.encode()) % k == i]
    config.hook.pytest_deselected(items=[it for it in items if it not in keep])
    items[:] = keep
