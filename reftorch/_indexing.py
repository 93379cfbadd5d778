"""Tensor indexing: __getitem__, __setitem__ and index_put_, with PyTorch's rules.

An index is taken apart the way PyTorch's applySlicing does it:
  * basic items -- int, slice, None, Ellipsis -- become view ops (select, slice_dim, unsqueeze), so the
    result shares storage and autograd runs through each view;
  * advanced items -- integer tensors and lists, bool masks, Python bools -- become NumPy integer
    arrays, one per indexed dim of that view (a mask stands for as many dims as it has, through its
    nonzero positions), and go through the `index` op of ops.yaml, where NumPy's rules place the
    broadcast index dims (in front when the indexed dims are not adjacent).
Integers are applied as `select` before the advanced indices are looked at (PyTorch's rule, not NumPy's:
for x of shape [2, 3, 4], x[0, :, [0, 1]] has shape [3, 2], where NumPy gives [2, 3]).

Writes check everything first -- index types, bounds, mask and value shapes, leaf rules -- and only
then touch storage. With autograd recording, a write is an out-of-place `index_put` whose result is
copied back, the tensor taking its history (an in-place op on a non-leaf).
"""
from __future__ import annotations

import warnings

import numpy as np

import reftorch._conj as _conj
import reftorch._dispatch as _dispatch
import reftorch._dtype as D
import reftorch._functional as F
from ._device import CPU
from ._tensor import Tensor
from ._args import check_inference_write
import reftorch.autograd.grad_mode as grad_mode
from ._cuda_dispatch import clone, copy_into, write
from .autograd.inplace import assign_history
from ._layout import expand
from ._creation import arange
from .autograd.graph import _tensor_type
from .kernels import scatter

_VALID = "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices"
_INDEX_DTYPES = ("int64", "int32", "uint8", "bool")


# ------------------------------------------------------------------------------ parsing

def _items(index):
    """The index as a tuple of items; a short list holding a tensor, sequence, slice, None or Ellipsis
    counts as a tuple (the NumPy heuristic PyTorch keeps), any other list is one advanced index."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and len(index) < 32 and any(
            isinstance(i, (Tensor, list, tuple, np.ndarray, slice)) or i is None or i is Ellipsis for i in index):
        return tuple(index)
    return (index,)


def _classify(item):
    """(kind, value): kind is int, slice, none, ellipsis, bool, array (int64) or mask (bool array)."""
    if item is None:
        return "none", None
    if item is Ellipsis:
        return "ellipsis", None
    if isinstance(item, (bool, np.bool_)):
        return "bool", bool(item)
    if isinstance(item, Tensor):
        return _classify_tensor(item)
    if isinstance(item, slice):
        return "slice", _slice_bounds(item)
    if isinstance(item, (int, np.integer)):
        return "int", int(item)
    if isinstance(item, (list, tuple, np.ndarray, range)):
        return _classify_array(np.asarray(item))
    if isinstance(item, str):
        raise TypeError("new(): invalid data type 'str'")
    if isinstance(item, (float, np.floating)) or not hasattr(item, "__index__"):
        raise IndexError(f"{_VALID} (got {type(item).__name__})")
    return "int", item.__index__()


def _classify_tensor(t):
    if t.dtype.name not in _INDEX_DTYPES:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if t.ndim == 0:
        return ("bool", bool(t.item())) if t.dtype.name in ("bool", "uint8") else ("int", int(t.item()))
    if t.dtype.name in ("bool", "uint8"):
        return ("mask" if t.dtype.name == "bool" else "bytemask"), t._array().astype(bool)
    return "array", t._array().astype(np.int64)


def _classify_array(a):
    if a.size == 0 and a.dtype.kind == "f":     # [] indexes nothing, as an empty integer index
        a = a.astype(np.int64)
    if a.dtype.kind == "b":
        return ("bool", bool(a)) if a.ndim == 0 else ("mask", a)
    if a.dtype.kind not in "iu":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return ("int", int(a)) if a.ndim == 0 else ("array", a.astype(np.int64))


def _slice_bounds(s):
    start, stop, step = (None if v is None else v.__index__() for v in (s.start, s.stop, s.step))
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if step is not None and step < 0:
        raise ValueError("step must be greater than zero")
    return start, stop, 1 if step is None else step


# ------------------------------------------------------------------------------ applying an index

class _Indexed:
    """self[index] taken apart: `view` has the basic items applied (a chain of view ops); `indices`
    holds, per dim of view, an int64 array or None (empty when the index is basic only)."""
    __slots__ = ("view", "indices")

    def __init__(self, view, indices):
        self.view, self.indices = view, indices

    @property
    def shape(self):
        """Shape of the indexing result (NumPy's placement of the broadcast index dims)."""
        shape = tuple(self.view._shape)
        if not self.indices:
            return shape
        dims = [d for d, a in enumerate(self.indices) if a is not None]
        bshape = np.broadcast_shapes(*(self.indices[d].shape for d in dims))
        if dims == list(range(dims[0], dims[-1] + 1)):
            return shape[:dims[0]] + bshape + shape[dims[-1] + 1:]
        return bshape + tuple(s for d, s in enumerate(shape) if d not in dims)

    def numpy_index(self):
        return tuple(slice(None) if a is None else a for a in self.indices)


def _apply(self, index, warn_at=None):
    """Validate index against self and apply its basic items (views of self); see _Indexed. A uint8 mask
    warns as PyTorch does, naming the caller `warn_at` frames up (None: no warning)."""
    items = [_classify(i) for i in _items(index)]
    if any(kind == "bytemask" for kind, _ in items):
        if warn_at is not None:
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
                          "instead.", UserWarning, stacklevel=warn_at + 1)
        items = [("mask" if kind == "bytemask" else kind, v) for kind, v in items]
    ndim = self.ndim
    specified = sum(1 if kind in ("int", "slice", "array") else v.ndim if kind == "mask" else 0
                    for kind, v in items)
    if ndim == 0 and not isinstance(index, tuple) and items[0][0] == "slice":
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if ndim == 0 and not isinstance(index, tuple) and items[0][0] == "int":
        if items[0][1] == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
                             "in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"index {items[0][1]} is out of bounds for dimension 0 with size 0")
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    result, dim, real_dim = self, 0, 0     # dim: in result; real_dim: in self (for error messages)
    advanced, masks = [], []
    for kind, v in items:
        if kind == "int":
            result = _select(result, dim, v, real_dim)
            real_dim += 1
        elif kind == "slice":
            result = _slice(result, dim, v)
            dim, real_dim = dim + 1, real_dim + 1
        elif kind == "none":
            result = F.unsqueeze(result, dim)
            dim += 1
        elif kind == "ellipsis":
            dim, real_dim = dim + ndim - specified, real_dim + ndim - specified
        elif kind == "bool":                # a new dim of size 1, indexed by [0] (True) or [] (False)
            result = F.unsqueeze(result, dim)
            advanced.append((dim, np.zeros(1 if v else 0, np.int64)))
            dim += 1
        elif kind == "array":
            advanced.append((dim, v))
            dim, real_dim = dim + 1, real_dim + 1
        else:
            masks.append((dim, v))
            advanced += [(dim + j, a) for j, a in enumerate(np.nonzero(v))]
            dim, real_dim = dim + v.ndim, real_dim + v.ndim
    return _Indexed(result, _index_list(result, advanced, masks))


def _select(result, dim, v, real_dim):
    """result[..., v, ...] at dim (real_dim: that dim's place in the indexed tensor, for the message)."""
    size = result._shape[dim]
    if not -size <= v < size:
        raise IndexError(f"index {v} is out of bounds for dimension {real_dim} with size {size}")
    return F.select(result, dim, v)


def _slice(result, dim, bounds):
    """result[..., start:stop:step, ...] at dim (bounds: _slice_bounds'); a whole-dim slice is result itself."""
    start, stop, step = bounds
    if start in (None, 0) and (stop is None or stop >= result._shape[dim]) and step == 1:
        return result
    return F.slice_dim(result, dim, start, stop, step)


def _index_list(result, advanced, masks):
    """Check masks, bounds and broadcasting of the advanced indices; one entry per dim of result."""
    shape = tuple(result._shape)
    for dim, mask in masks:
        for j, m in enumerate(mask.shape):
            if m != shape[dim + j]:
                raise IndexError(f"The shape of the mask {list(mask.shape)} at index {j} does not match the shape "
                                 f"of the indexed tensor {list(shape)} at index {dim + j}")
    if not advanced:
        return []
    advanced.sort(key=lambda p: p[0])
    for j, (dim, a) in enumerate(advanced):
        size = shape[dim]
        bad = a[(a < -size) | (a >= size)]
        if bad.size:
            raise IndexError(f"index {bad[0]} is out of bounds for dimension {j} with size {size}")
    try:
        np.broadcast_shapes(*(a.shape for _, a in advanced))
    except ValueError:
        shapes = ", ".join(str(list(a.shape)) for _, a in advanced)
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with shapes "
                         f"{shapes}") from None
    indices = [None] * (advanced[-1][0] + 1)
    for dim, a in advanced:
        indices[dim] = a
    return indices


# ------------------------------------------------------------------------------ reading

_vmap_index = None      # while vmap is on: indexing by batched index tensors, per sample (reftorch/func/_vmap.py)


def getitem(self, index):
    if type(index) is int and self._shape:                  # the common x[i]
        size = self._shape[0]
        if not -size <= index < size:
            raise IndexError(f"index {index} is out of bounds for dimension 0 with size {size}")
        return F.select(self, 0, index)
    if type(index) is tuple and _vmap_index is None:
        out = _basic(self, index)
        if out is not None:
            return out
    if _vmap_index is not None:
        out = _vmap_index.read(self, index)
        if out is not None:
            return out
    ix = _apply(self, index, warn_at=2)
    if ix.indices:
        return F.index(ix.view, tuple(ix.indices))
    if ix.view is self:                                      # x[...], x[:]: a new view of the same data
        return F.expand(self, self._shape)
    return ix.view


def _basic(self, index):
    """self[i, a:b, ...] of Python ints and slices only, at most one per dim (x[:, t], x[:, :n]: the commonest
    tuples): the views applied as _apply would, without taking the index apart first; None for any other index."""
    shape = self._shape
    if len(index) > len(shape):
        return None
    for v in index:
        if v.__class__ is not int and v.__class__ is not slice:
            return None
    result, dim = self, 0
    for real_dim, v in enumerate(index):
        if v.__class__ is int:
            result = _select(result, dim, v, real_dim)
        else:
            result = _slice(result, dim, _slice_bounds(v))
            dim += 1
    return F.expand(self, shape) if result is self else result


# ------------------------------------------------------------------------------ writing

def setitem(self, index, value):
    _write(self, index, value, accumulate=False)


def index_put_(self, indices, values, accumulate=False):
    """self[indices] = values (or +=, accumulate=True, duplicate indices adding up), in place."""
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put_(): argument 'values' must be Tensor, not {type(values).__name__}")
    if values.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {_type_word(self)} "
                           f"for the destination and {_type_word(values)} for the source.")
    if isinstance(indices, Tensor) or not isinstance(indices, (tuple, list)):
        raise TypeError("index_put_(): argument 'indices' must be tuple of Tensors")
    if len(indices) > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim} (got {len(indices)})")
    _write(self, tuple(slice(None) if i is None else i for i in indices), values, accumulate)
    return self


def _write(self, index, value, accumulate):
    if not isinstance(value, (Tensor, bool, int, float, complex, np.number, np.bool_)):
        name = type(value).__name__ if type(value).__module__ == "builtins" else \
            f"{type(value).__module__.split('.')[0]}.{type(value).__name__}"
        raise TypeError(f"can't assign a {name} to a torch.{_type_name(self)}")
    if not isinstance(value, Tensor):
        value = D.fill_value(value, self.dtype)
    if _vmap_index is not None and _vmap_index.write(self, index, value, accumulate):
        return
    check_inference_write(self)
    with grad_mode.no_grad():
        ix = _apply(self, index, warn_at=3)
    target = ix.shape
    vshape = _value_shape(value, target, bool(ix.indices))
    if grad_mode.state.enabled and (self.requires_grad or isinstance(value, Tensor) and value.requires_grad) or \
            _dispatch._forward is not None:     # (a transform is on: the write as ops, so tangents follow it)
        _check_not_leaf(self, ix.view is not self)
        _write_recorded(self, index, value, vshape, accumulate)
        return
    val = value._array() if isinstance(value, Tensor) else np.asarray(value)
    view = ix.view
    if view._conj or view._neg:     # a conjugate/negative view (reftorch/_conj.py): its storage takes the
        val = val.astype(self.dtype.host)               # values' conjugates/negations (in its dtype: -0.0)
        val = np.conj(val) if view._conj else val
        val = np.negative(val) if view._neg else val
        view = _conj.raw(view)
    val = val.astype(self.dtype.np, copy=False) if self.dtype is not D.complex32 else D.to_chalf(val)
    if np.may_share_memory(val, self._storage.data):
        val = val.copy()
    val = val.reshape(vshape)
    arr = view._raw_array()
    if self.device.type == "cuda":          # written on a host copy of the view, then copied back
        arr = np.array(arr)
    where = ix.numpy_index() if ix.indices else Ellipsis
    if accumulate:
        scatter.add_at(arr, where, val)
    else:
        arr[where] = val
    if self.device.type == "cuda":
        write(view, arr)
    self._storage.version += 1


def _value_shape(value, target, advanced):
    """The value's shape without its leading 1s, checked to broadcast to the indexing result's shape."""
    shape = tuple(value._shape) if isinstance(value, Tensor) else ()
    while shape and shape[0] == 1:
        shape = shape[1:]
    if advanced:
        ok = len(shape) <= len(target) and all(v in (1, t) for v, t in zip(reversed(shape), reversed(target)))
        if not ok:
            raise RuntimeError(f"shape mismatch: value tensor of shape [{', '.join(map(str, shape))}] cannot be "
                               f"broadcast to indexing result of shape [{', '.join(map(str, target))}]")
    else:
        expand(shape, (0,) * len(shape), 0, target)     # raises expand's errors, as copy_ does in PyTorch
    return shape


def _check_not_leaf(self, through_view):
    base = self._base
    if self.requires_grad and self.grad_fn is None:
        raise RuntimeError(("a view of a leaf Variable" if through_view else "a leaf Variable") +
                           " that requires grad is being used in an in-place operation.")
    if base is not None and base.requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


def _assign_with_history(self, new, op="inplace arithmetic"):
    """Write new's values into self and make self's history new's (an in-place op on a non-leaf, or
    on a view of one: the base's history is rewritten too, see autograd/inplace.py)."""
    # a transform first (forward AD: self's tangent becomes new's; vmap: the whole batch written, True, or its
    # error naming `op` before anything is written -- autograd/forward_ad.py, func/_vmap.py)
    written = _dispatch._forward is not None and _dispatch._forward.assigned(self, new, op)
    if not written and self.device.type == "cuda":
        copy_into(self, clone(new))
    elif not written and self.device.type != "meta":
        val = new._array() if self.dtype is not D.complex32 else D.to_chalf(new._array())
        if np.may_share_memory(val, self._storage.data):
            val = val.copy()
        self._raw_array()[...] = val        # (a conjugate/negative view is written by reftorch/_conj.py)
    self._storage.version += 1
    if new.requires_grad or self.requires_grad:     # self's history becomes CopyBackwards(new)
        assign_history(self, new)


def _write_recorded(self, index, value, vshape, accumulate):
    """The write as autograd sees it: index_put on self's flat positions, the result copied back into
    self, self taking the result's history (_assign_with_history, above)."""
    with grad_mode.no_grad():
        ix = _apply(arange(self.numel(), dtype=D.int64, device=CPU).reshape(self._shape), index)   # host positions
        positions = F.index(ix.view, tuple(ix.indices)) if ix.indices else ix.view
    # (the op PyTorch's write is, named in vmap's error for an unbatched self: a 0-d value fills a basic slice)
    op = "index_put_" if ix.indices else "fill_" if isinstance(value, Tensor) and value.ndim == 0 and \
        ix.view.ndim > 0 else "inplace arithmetic"
    if isinstance(value, Tensor):
        value = value.to(self.dtype).reshape(vshape)
    else:
        value = F.scalar_tensor(value, dtype=self.dtype)
    flat = F.reshape(self, (-1,))
    new = F.index_put(flat, (positions._array(),), value, accumulate)
    _assign_with_history(self, F.reshape(new, self._shape), op)


def _type_name(t):
    return _tensor_type(t)


def _type_word(t):
    return {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int", "int16": "Short",
            "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(t.dtype.name, t.dtype.short)
