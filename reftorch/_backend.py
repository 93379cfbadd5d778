"""Which back end runs a call: the device of its tensor arguments.

cpu is the default (reftorch/_cpu.py and the kind modules' plans); an argument on cuda sends the call to
reftorch/_cuda_dispatch.py, one on meta to reftorch/_meta.py (geometry without data). Both answer the same
contract -- elementwise, inplace, reduction, argreduction, scan, array -- so a kind's handler asks here once and
hands over. The question is only asked once a tensor off the cpu exists (_cuda_dispatch.used).
"""
from __future__ import annotations

from ._cpu import new_tensor
import reftorch._cuda_dispatch as _cuda_d
import reftorch._meta as _meta


def off_cpu(tensors):
    """The back end of the arguments' device when one is off the cpu, else None."""
    if _meta.used and _meta.find(tensors):
        return _meta
    if _cuda_d.find(tensors):
        return _cuda_d
    return None


def clone(t):
    """A contiguous copy of t on its device, without history."""
    be = off_cpu((t,)) if _cuda_d.used else None
    return be.clone(t) if be is not None else new_tensor(t._array().copy(), t.dtype)
