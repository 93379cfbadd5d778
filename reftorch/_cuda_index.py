"""Indexing on cuda without a host round trip of the data: gather (`index`) and scatter (`index_put`,
duplicates adding up with atomics when accumulating) by flat storage positions.

The positions are computed on the host from the index arrays only (result-sized work: each dim's
coordinate is a broadcast view indexed like the tensor would be), then one grid-stride kernel moves the
elements. Imported on first use (it imports numba.cuda).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

import reftorch._config as _config
import reftorch._dtype as D
import reftorch._layout as L
from ._tensor import Tensor
from ._args import promoted
import reftorch._cuda_launch as launch
from ._cuda_dispatch import empty
from ._cuda_dispatch import from_host
from ._cuda_dispatch import cast
from ._cuda_dispatch import clone
import reftorch.autograd.grad_mode as grad_mode

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
    self, values = tensors
    if not isinstance(values, Tensor) or values.device != self.device:
        return None
    dt = promoted(spec, [self, values])
    accumulate = bool(kw.get("accumulate", False))
    if accumulate and (dt.name not in ATOMIC or (_config.deterministic and dt.category == 2)):
        return None     # (float atomics add in whatever order threads arrive: deterministic mode sums on the host)
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


# ---------------------------------------------------------------------------- ops along one dim, as positions
# index_select / index_add / gather / scatter_add are advanced indexing with an index tuple built from `dim` and
# `index`; inputs the body would refuse (bad shapes, out-of-range or negative indices) return None, so the host
# path raises the body's error.

def _index_along(t, kw, index):
    """(dim, the index as a host int64 array) or None."""
    if t.ndim == 0 or not isinstance(index, Tensor) or index.dtype.is_floating_point or index.dtype is D.bool_:
        return None
    d = L.wrap_dim(kw["dim"], t.ndim)
    return d, np.asarray(_host_index(index), dtype=np.int64)


def _in_range(idx, n):
    return not idx.size or (idx.min() >= 0 and idx.max() < n)


def select_positions(spec, tensors, kw):
    """index_select(self, dim, index): the slices at a 1-D index along dim."""
    self, index = tensors
    got = _index_along(self, kw, index)
    if got is None:
        return None
    d, idx = got
    if idx.ndim > 1 or not _in_range(idx.reshape(-1), self._shape[d]):
        return None
    return gather_positions(spec, [self], {"indices": (None,) * d + (idx.reshape(-1),)})


def add_at_positions(spec, tensors, kw):
    """index_add(self, dim, index, source, alpha): alpha * source added at the slices index along dim."""
    self, index, source = tensors
    got = _index_along(self, kw, index)
    if got is None or not isinstance(source, Tensor) or source.ndim != self.ndim:
        return None
    d, idx = got
    idx = idx.reshape(-1) if idx.ndim <= 1 else None
    if idx is None or source._shape[d] != idx.shape[0] or not _in_range(idx, self._shape[d]) or \
            any(source._shape[k] != self._shape[k] for k in range(self.ndim) if k != d):
        return None
    alpha = kw.get("alpha", 1)
    if alpha != 1:
        with grad_mode.no_grad():
            source = source * alpha
    return scatter_positions(spec, [self, source], {"indices": (None,) * d + (idx,), "accumulate": True})


def _along_indices(idx, dim):
    """gather/scatter's index tuple: idx along dim, each other dim k its own position (0..idx.shape[k])."""
    nd = idx.ndim
    return tuple(idx if k == dim else np.arange(idx.shape[k]).reshape(tuple(-1 if j == k else 1 for j in range(nd)))
                 for k in range(nd))


def _along_ok(x, idx, d, src=None):
    if idx.ndim != x.ndim or (src is not None and src.ndim != x.ndim):
        return False
    for k in range(x.ndim):
        if (k != d and idx.shape[k] > x._shape[k]) or (src is not None and idx.shape[k] > src._shape[k]):
            return False
    return _in_range(idx, x._shape[d])


def gather_along(spec, tensors, kw):
    """gather(self, dim, index): out[i][j] = self[index[i][j]][j] for dim 0, and so on."""
    self, index = tensors
    got = _index_along(self, kw, index)
    if got is None or not _along_ok(self, got[1], got[0]):
        return None
    d, idx = got
    return gather_positions(spec, [self], {"indices": _along_indices(idx, d)})


def scatter_add_along(spec, tensors, kw):
    """scatter_add(self, dim, index, src): src added at index along dim (duplicates accumulate, with atomics)."""
    self, index, src = tensors
    got = _index_along(self, kw, index)
    if got is None or not isinstance(src, Tensor) or not _along_ok(self, got[1], got[0], src):
        return None
    d, idx = got
    with grad_mode.no_grad():
        vals = src[tuple(slice(0, n) for n in idx.shape)]
    return scatter_positions(spec, [self, vals], {"indices": _along_indices(idx, d), "accumulate": True})
