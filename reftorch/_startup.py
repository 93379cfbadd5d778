"""REFTORCH_EAGER_INIT: Numba's start-up work done before the first op asks for it.

By default `import reftorch` does not import Numba: the first op in a process pays for it (importing
numba, the kernel module and Numba's runtime). With
REFTORCH_EAGER_INIT=1 a daemon thread started at the end of `import reftorch` does that work while the
program goes on (reading data, building a model); the first op then waits only for what is left. Most of it
is Python imports that hold the GIL, so it overlaps with work that releases the GIL (I/O, NumPy, sleeping),
not with other Python code. REFTORCH_EAGER_INIT=sync does it inside `import reftorch` instead.

The thread is opt-in: a process that forks while it imports (DataLoader workers with fork) would hand
the child a held import lock.
"""
from __future__ import annotations

import os
import threading

_thread = None


def warm_up():
    """Import the CPU kernels and initialise what loading a cached kernel needs."""
    from . import _dispatch
    _dispatch._kernels()
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
    """Run warm_up() now (mode "sync") or on a daemon thread (any other true value)."""
    global _thread
    mode = os.environ.get("REFTORCH_EAGER_INIT", "") if mode is None else mode
    if not mode or mode == "0" or _thread is not None:
        return
    if mode == "sync":
        _run()
        return
    _thread = threading.Thread(target=_run, name="reftorch-warm-up", daemon=True)
    _thread.start()
