"""Indexing on cuda without a host round trip of the data: gather (`index`) and scatter (`index_put`,
duplicates adding up with atomics when accumulating) by flat storage positions.

The positions are computed on the host from the index arrays only (result-sized work: each dim's
coordinate is a broadcast view indexed like the tensor would be), then one grid-stride kernel moves the
elements. Imported on first use (it imports numba.cuda).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from . import _dtype as D
from . import _layout as L
from ._tensor import Tensor

ATOMIC = ("int32", "int64", "float32", "float64")     # dtypes cuda.atomic.add takes


@cuda.jit
def take_kernel(out, src, pos):
    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        out[i] = src[pos[i]]


@cuda.jit
def put_kernel(out, pos, vals):
    for i in range(cuda.grid(1), vals.shape[0], cuda.gridsize(1)):
        out[pos[i]] = vals[i]


@cuda.jit
def put_add_kernel(out, pos, vals):
    for i in range(cuda.grid(1), vals.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(out, pos[i], vals[i])


def _launch(kernel, n, *args):
    from . import _cuda_launch as launch
    if n:
        t = launch._config["threads"]
        kernel[launch._blocks(n, t), t](*args)


def _host_index(i):
    if i is None:
        return slice(None)
    if isinstance(i, Tensor):
        return np.asarray(i.cpu()._array())
    return np.asarray(i)


def positions(t, indices):
    """Flat storage positions of t[indices] (NumPy's advanced-indexing rules), as an int64 array."""
    where = tuple(_host_index(i) for i in indices)
    shape = t._shape
    pos = None
    for k, (n, st) in enumerate(zip(shape, t._strides)):
        coord = np.arange(n, dtype=np.int64).reshape(tuple(n if j == k else 1 for j in range(len(shape))))
        part = np.broadcast_to(coord, shape)[where] * st
        pos = part if pos is None else pos + part
    if pos is None:
        pos = np.zeros((), np.int64)[where]
    return np.ascontiguousarray(pos + t._offset, dtype=np.int64)


def gather_positions(spec, tensors, kw):
    """self[indices] on the device (an op `(Tensor self, any indices)`), or None to take the host path."""
    from ._cuda_dispatch import empty, from_host
    self = tensors[0]
    try:
        pos = positions(self, kw["indices"])
    except IndexError:
        return None             # the host path raises the body's error
    out = empty(pos.shape, self.dtype, self.device)
    flat = pos.reshape(-1)
    if flat.size:
        d_pos = from_host(flat, D.int64, self.device)._storage.data
        _launch(take_kernel, flat.size, out._storage.data, self._storage.data, d_pos)
    return out


def scatter_positions(spec, tensors, kw):
    """A copy of self with values written (added) at indices, on the device (an op `(Tensor self, any indices,
    Tensor values, bool accumulate)`); None: the host path."""
    from ._cuda_dispatch import cast, clone, from_host
    from ._dispatch import promoted
    self, values = tensors
    if not isinstance(values, Tensor) or values.device != self.device:
        return None
    dt = promoted(spec, [self, values])
    accumulate = bool(kw.get("accumulate", False))
    if accumulate and dt.name not in ATOMIC:
        return None
    out = clone(self, dt)
    try:
        pos = positions(out, kw["indices"])
        vshape, vstrides, voff = L.expand(values._shape, values._strides, values._offset, pos.shape)
    except (IndexError, RuntimeError):
        return None
    v = cast(Tensor._make(values._storage, voff, tuple(vshape), tuple(vstrides), values.dtype, values.device), dt)
    v = clone(v) if not L.is_contiguous(v._shape, v._strides) or v._offset else v
    flat = pos.reshape(-1)
    if flat.size:
        d_pos = from_host(flat, D.int64, self.device)._storage.data
        vals = v._storage.data[:flat.size]
        _launch(put_add_kernel if accumulate else put_kernel, flat.size, out._storage.data, d_pos, vals)
    return out
