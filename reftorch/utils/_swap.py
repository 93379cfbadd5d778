"""torch.utils.swap_tensors: exchange the contents of two Tensor objects, keeping their identities."""
from __future__ import annotations

import weakref

import reftorch as torch

# every slot of Tensor: the raw `requires_grad` slot is swapped through its descriptor (a property hides it)
_SLOTS = tuple(s for s in torch.Tensor.__slots__ if s not in ("__weakref__", "__dict__", "requires_grad"))


def swap_tensors(t1, t2):
    """After swap_tensors(t1, t2), t1 holds what t2 held (class, data, attributes, autograd state) and
    vice versa; references to either object see the swap."""
    if weakref.getweakrefs(t1):
        raise RuntimeError("Cannot swap t1 because it has weakref associated with it")
    if weakref.getweakrefs(t2):
        raise RuntimeError("Cannot swap t2 because it has weakref associated with it")
    raw = torch.Tensor._requires_grad_slot
    t1.__class__, t2.__class__ = t2.__class__, t1.__class__
    d1, d2 = dict(t1.__dict__), dict(t2.__dict__)
    t1.__dict__.clear()
    t1.__dict__.update(d2)
    t2.__dict__.clear()
    t2.__dict__.update(d1)
    for slot in _SLOTS:
        a, b = getattr(t1, slot, _MISSING), getattr(t2, slot, _MISSING)
        _put(t1, slot, b)
        _put(t2, slot, a)
    r1, r2 = raw.__get__(t1, torch.Tensor), raw.__get__(t2, torch.Tensor)
    raw.__set__(t1, r2)
    raw.__set__(t2, r1)
    t1._accum = t2._accum = None     # a leaf's gradient accumulator belongs to the object it was made for


_MISSING = object()


def _put(t, slot, value):
    if value is _MISSING:
        if hasattr(t, slot):
            delattr(t, slot)
    else:
        setattr(t, slot, value)
