"""Metadata helpers that derivative formulas and composite bodies of ops.yaml may call.

They are shape arithmetic and broadcast plumbing shared by many formulas, not per-op code."""
from __future__ import annotations

from . import _layout as L


def invert_permutation(dims):
    dims = list(dims)
    n = len(dims)
    inv = [0] * n
    for i, d in enumerate(dims):
        inv[d % n] = i
    return tuple(inv)


def numel_of(shape, dim=None):
    """How many elements a reduction over dim of a tensor of this shape combines."""
    dims = L.wrap_dims(dim, len(shape))
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def reduced_shape(shape, dim, keepdim):
    dims = L.wrap_dims(dim, len(shape))
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def unsqueeze_dims(t, shape, dim, keepdim):
    """t (a reduction's output over dim of a tensor of `shape`) with the reduced dims put back as 1."""
    if keepdim or not shape:
        return t
    return t.reshape(reduced_shape(shape, dim, True))


def expand_reduced(t, shape, dim, keepdim):
    """A reduction's gradient broadcast back over the input's shape."""
    return unsqueeze_dims(t, shape, dim, keepdim).expand(tuple(shape))


def sum_to(t, shape):
    """t summed down to shape (undoing broadcasting); t itself when the shape already matches."""
    shape = tuple(shape)
    if tuple(t._shape) == shape:
        return t
    lead = t.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and t._shape[lead + i] != 1)
    r = t.sum(dims, keepdim=True) if dims else t
    return r.reshape(shape)


def normalize_dims(dim, ndim):
    return L.wrap_dims(dim, ndim)


def default_float():
    from ._dtype import defaults
    return defaults.float


def is_floating(t):
    return t.dtype.is_floating_point
