"""Which back end runs a call: the device of its tensor arguments.

cpu is the default (reftorch/_cpu.py and the kind modules' plans); an argument on cuda sends the call to
reftorch/_cuda_dispatch.py, one on meta to reftorch/_meta.py (geometry without data). cuda and meta answer the
kinds' contract -- elementwise, reduction, argreduction, scan, array -- so a kind's handler asks here once and
hands over; the in-place handler (reftorch/_inplace.py) is written once over primitives every back end, the cpu
included, names alike: destination, operand, alloc, clone, run_elementwise, copy_into. The question is only
asked once a tensor off the cpu exists (_cuda_dispatch.used).
"""
from __future__ import annotations

import reftorch._cpu as _cpu
import reftorch._cuda_dispatch as _cuda_d
import reftorch._meta as _meta


def off_cpu(tensors):
    """The back end of the arguments' device when one is off the cpu, else None."""
    if _meta.used and _meta.find(tensors):
        return _meta
    if _cuda_d.find(tensors):
        return _cuda_d
    return None


def of(tensors):
    """The back end module of the arguments' device: reftorch/_cpu.py unless one is off the cpu."""
    be = off_cpu(tensors) if _cuda_d.used else None
    return _cpu if be is None else be


def clone(t):
    """A contiguous copy of t on its device, without history."""
    return of((t,)).clone(t)
