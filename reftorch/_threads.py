"""The thread pools large kernels run in, and what a forked child does with them.

Kernels release the GIL, so the dispatcher (reftorch/_cpu.py, _in_threads) and compiled regions
(reftorch/compile, _threaded) run chunks of one large op in a concurrent.futures pool. A fork copies the pool
object but none of its threads: in the child, work submitted to it waits forever for workers that do not
exist (a DataLoader worker forked after the main process ran a threaded op hung in its first such op). So a
forked child drops the pools it inherited (an os.register_at_fork hook, as PyTorch resets its intra-op pool)
and starts fresh ones when it next needs threads. Spawned and forkserver children start with none.

Numba's own threading layer (workqueue, omp, tbb: GNU OpenMP's kills a child forked after it ran) is not
involved: no reftorch kernel is compiled parallel=True; threads come only from these pools. NumPy's OpenBLAS
resets its own threads at fork. DataLoader workers also run serial, as PyTorch's do (see worker_loop).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_pools = {}                 # name -> (workers, ThreadPoolExecutor), this process's
_lock = threading.Lock()


def pool(name, workers):
    """This process's pool `name` with `workers` threads (made on first use, remade when the count changes)."""
    entry = _pools.get(name)
    if entry is not None and entry[0] == workers:
        return entry[1]
    with _lock:
        entry = _pools.get(name)
        if entry is None or entry[0] != workers:
            if entry is not None:
                entry[1].shutdown(wait=False)
            entry = (workers, ThreadPoolExecutor(workers, thread_name_prefix=name))
            _pools[name] = entry
    return entry[1]


def _after_fork_in_child():
    """The inherited pools have no threads here: forget them (never shut down: that would wait on their
    queues' locks, which a parent thread may have held at the fork) and make a fresh lock."""
    global _lock
    _pools.clear()
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
