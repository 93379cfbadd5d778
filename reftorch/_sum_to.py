"""sum_to: a gradient summed down to the shape of the input it was broadcast from. Tensor methods only, so
the backward engine (below the op layer) and the derivative formulas (above it) share it."""
from __future__ import annotations


def sum_to(t, shape):
    """t summed down to shape (undoing broadcasting); t itself when the shape already matches."""
    shape = tuple(shape)
    if tuple(t._shape) == shape:
        return t
    lead = t.ndim - len(shape)
    inner = tuple(lead + i for i, s in enumerate(shape) if s == 1 and t._shape[lead + i] != 1)
    if not inner and lead:
        return t.sum(tuple(range(lead)))       # only leading dims to sum: the result has the shape already
    dims = tuple(range(lead)) + inner
    r = t.sum(dims, keepdim=True) if dims else t
    return r.reshape(shape)
