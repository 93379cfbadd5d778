"""REFTORCH_EAGER_INIT: when Numba's start-up work is done (importing numba, the kernel module, Numba's runtime).

sync (the default): inside `import reftorch`, so that the first op finds everything ready. Numba's import is
most of it (~0.27 s of Python here), and a process that computes anything pays it once either way: measured
on the project's machine, `import reftorch` takes 0.34 s and the first op 12 ms this way, against 0.13 s and
0.23 s lazily (benches/compare.py). Kernels themselves still load lazily, each on its first call.
0: lazily, on the first op (for processes that import reftorch and may never compute).
1: on a daemon thread started at the end of `import reftorch`, while the program goes on (reading data,
building a model); the first op then waits only for what is left. Most of it is Python imports that hold
the GIL, so it overlaps with work that releases the GIL (I/O, NumPy, sleeping), not with other Python code.
The thread is opt-in: a process that forks while it imports (DataLoader workers with fork) would hand the
child a held import lock.
"""
from __future__ import annotations

import os
import threading
import reftorch._cpu as _cpu

_thread = None


def warm_up():
    """Import the CPU kernels and initialise what loading a cached kernel needs."""
    _cpu.kernels()
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target
    from numba.core.runtime import rtsys
    context = cpu_target.target_context     # outside the compiler lock: making the context takes that lock,
    with global_compiler_lock:              # and a first op may be making it on the main thread meanwhile
        rtsys.initialize(context)           # (under the lock Numba holds when a cache load initialises it)


def _run():
    try:
        warm_up()
    except Exception:   # noqa: BLE001 -- a warm-up only: the first op does the same work and reports errors
        pass


def start(mode=None):
    """Run warm_up() now (mode "sync", the default), never (mode "0": the first op does it) or on a daemon
    thread (any other value)."""
    global _thread
    mode = (os.environ.get("REFTORCH_EAGER_INIT") or "sync") if mode is None else mode
    if mode == "0" or _thread is not None:
        return
    if mode == "sync":
        _run()
        return
    _thread = threading.Thread(target=_run, name="reftorch-warm-up", daemon=True)
    _thread.start()
