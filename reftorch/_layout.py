"""Strided layout: shapes, strides (in elements), broadcasting, dimension collapsing.

Pure functions over tuples; nothing here touches data. The geometry of each view op is its ops.yaml
`geometry:` body, generated into reftorch/kernels/views.py (the helpers those bodies share, dim wrapping
and size inference among them, are reftorch/kernels/geometry.py, re-exported here for the runtime).
"""
from __future__ import annotations

import numpy as np

from .kernels.geometry import (check_extent, contiguous_strides, flatten_shape, infer_size, numel,  # noqa: F401
                               size_tuple, storage_extent, view_strides, wrap_dim, wrap_dims)
from .kernels.views import expand  # noqa: F401  (broadcasting a tensor to a shape: the expand view's geometry)






def is_contiguous(shape, strides):
    if 0 in shape:          # PyTorch: a tensor without elements is contiguous, whatever its strides
        return True
    acc = 1
    for s, st in zip(reversed(shape), reversed(strides)):
        if s == 1:
            continue
        if st != acc:
            return False
        acc *= s
    return True






def broadcast_shapes(*shapes):
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, size in enumerate(s):
            j = ndim - len(s) + i
            if out[j] == 1:
                out[j] = size
            elif size != 1 and size != out[j]:
                raise RuntimeError(_mismatch(shapes, j - ndim))
    return tuple(out)


def _mismatch(shapes, neg_dim):
    a, b = shapes[0], shapes[1] if len(shapes) > 1 else shapes[0]
    # find the pair that disagrees, as PyTorch names them
    for x in shapes:
        for y in shapes:
            if len(x) >= -neg_dim and len(y) >= -neg_dim:
                sx, sy = x[neg_dim], y[neg_dim]
                if sx != sy and sx != 1 and sy != 1:
                    a, b = x, y
                    ndim = max(len(s) for s in shapes)
                    return (f"The size of tensor a ({sx}) must match the size of tensor b ({sy}) at "
                            f"non-singleton dimension {ndim + neg_dim}")
    return "shapes cannot be broadcast together"


def broadcast_strides(shape, strides, to_shape):
    """Strides of a tensor viewed at to_shape (stride 0 along broadcast dims)."""
    pad = len(to_shape) - len(shape)
    out = [0] * pad
    for s, st, t in zip(shape, strides, to_shape[pad:]):
        out.append(st if s == t else 0)
    return tuple(out)


def collapse(shape, stride_lists):
    """Drop size-1 dims and merge adjacent dims that every operand walks as one (DESIGN §5).

    Returns (shape, [strides per operand]); most calls end with one or two dims."""
    keep = [i for i, s in enumerate(shape) if s != 1]
    if not keep:
        return (1,), [(0,) for _ in stride_lists]
    new_shape = [shape[keep[0]]]
    new_strides = [[st[keep[0]]] for st in stride_lists]
    for i in keep[1:]:
        size = shape[i]
        if all(ns[-1] == st[i] * size for ns, st in zip(new_strides, stride_lists)):
            new_shape[-1] *= size
            for ns, st in zip(new_strides, stride_lists):
                ns[-1] = st[i]
        else:
            new_shape.append(size)
            for ns, st in zip(new_strides, stride_lists):
                ns.append(st[i])
    return tuple(new_shape), [tuple(ns) for ns in new_strides]




def contiguous_array(a):
    """a as a C-contiguous NumPy array, copying only when needed (np.ascontiguousarray turns 0-d into 1-d)."""
    return a if a.flags.c_contiguous else np.array(a, order="C")


def collapse_operands(shape, tensors):
    """Contiguous output of `shape` and each tensor broadcast to it, dimension-collapsed: (collapsed shape, a
    list of (storage array, offset, collapsed strides) per tensor); at least 1-D, as the strided kernels index."""
    strides = [contiguous_strides(shape)] + [broadcast_strides(t._shape, t._strides, shape) for t in tensors]
    cshape, cstrides = collapse(shape, strides)
    if not cshape:
        cshape, cstrides = (1,), [(0,)] * len(strides)
    return cshape, [(t._storage.data, t._offset, st) for t, st in zip(tensors, cstrides[1:])]

