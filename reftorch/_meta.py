"""Tensors on `meta`: a shape, dtype and strides, and no data -- how models are built before their weights exist.

A meta tensor's Storage.data is a read-only placeholder of the storage's length whose elements all share one
zero (`np.broadcast_to`: one element of memory whatever the length), so view geometry (offsets, strides,
bounds) works exactly as on cpu and nothing can be written by mistake. The dispatcher's handlers delegate
here when an argument is on meta (reftorch/_backend.py `off_cpu`); each computes what the cpu handler
would -- result dtype by promotion, broadcast shape, reduced shape, memory layout, the op's dtype and
argument errors -- with the same device-independent helpers, then allocates a meta result instead of
running a kernel, and records the autograd node as usual (backward on meta gives meta gradients).

Array ops (NumPy bodies: matmul, cat, indexing, sort, conv...) have no geometry function of their own: their
body runs over zero-strided placeholder arrays and only the shapes and dtypes of what it returns are kept.
A body whose result shape depends on the values (nonzero, unique, masked_select) is found by running it a
second time over varied values (a temporary array of the input's size), and raises NotImplementedError, as
PyTorch does for those ops on meta.
"""
from __future__ import annotations

import numpy as np

import reftorch._cuda_dispatch as _cuda_d
import reftorch._dtype as D
import reftorch._layout as L
from ._device import device
from ._tensor import Storage, Tensor
import reftorch.autograd.grad_mode as grad_mode
import reftorch.kernels.array_ops as _array_ops
from ._args import ReductionCall, _result_layout, _kernel_scalars, _reduced_shape, _result_dtypes, _tensor_names, as_tensor_arg, promoted

META = device("meta")
used = False        # set by the first meta tensor; the dispatcher tests _cuda_d.used, which it sets as well
NO_DATA = "Cannot copy out of meta tensor; no data!"


def _placeholder(n, np_dtype, value=0):
    return np.broadcast_to(np.full(1, value, np_dtype), (n,))


def empty(shape, dtype, strides=None):
    """A meta tensor of this geometry (contiguous unless strides are given)."""
    global used
    if not used:
        used = _cuda_d.used = True      # the dispatcher's "a tensor off the cpu exists" test
    shape = tuple(shape)
    strides = tuple(strides) if strides is not None else L.contiguous_strides(shape)
    n = L.storage_extent(shape, strides, 0) if L.numel(shape) else 0
    return Tensor._make(Storage(_placeholder(n, dtype.np)), 0, shape, strides, dtype, META)


def rebuild(shape, strides, dtype_name, requires_grad):
    """A meta tensor from its pickle (Tensor.__reduce_ex__)."""
    t = empty(shape, D.as_dtype(dtype_name), strides)
    return t.requires_grad_(True) if requires_grad else t


def like(t, dtype=None):
    return empty(t._shape, dtype or t.dtype)


def clone(t):
    """The back ends' copy (no history): on meta, a tensor of t's shape and dtype."""
    return like(t)


def find(tensors, lenient=()):
    """True when an argument is on meta. Raises PyTorch's error when a cpu (or cuda) tensor of one or more dims
    meets a meta one; 0-d tensors and the arguments at positions in `lenient` (index tensors) may stay elsewhere."""
    expected = other = None
    meta = False
    for i, t in enumerate(tensors):
        for x in (t if isinstance(t, (list, tuple)) else (t,)):
            if not isinstance(x, Tensor):
                continue
            if x.device.type == "meta":
                meta = True
            elif not x._shape or i in lenient:
                continue
            if expected is None:
                expected = x.device
            elif x.device.type != expected.type and other is None:
                other = x.device
    if meta and other is not None:
        raise RuntimeError(f"Tensor on device {other} is not on the expected device {expected}!")
    return meta


def no_data_error():
    return NotImplementedError(NO_DATA)


# ---------------------------------------------------------------------------- the handlers

def elementwise(spec, tensors, scalars):
    find(tensors)
    ts = [as_tensor_arg(t) for t in tensors]
    compute, out_dtype = _result_dtypes(spec, ts)
    shape = L.broadcast_shapes(*[t._shape for t in ts])
    _kernel_scalars(spec, scalars, compute)        # the scalar arguments' errors (alpha, bounds) as on cpu
    layout = None if "memory_format" in spec.arg_types else _result_layout(shape, ts)
    return empty(shape, out_dtype, layout)


def destination(self, tensors):
    """The device an in-place op on self writes on: PyTorch's error when self is not on meta."""
    find(tensors)
    if self.device.type != "meta":
        other = next(t.device for t in tensors if isinstance(t, Tensor) and t.device.type == "meta")
        raise RuntimeError(f"Tensor on device {other} is not on the expected device {self.device}!")
    return self.device


def operand(dev, t):
    return t


def alloc(shape, dtype, dev):
    return empty(shape, dtype)


def run_elementwise(spec, ins, scalars, out):
    return out


def copy_into(dst, src):
    return dst


def cast(t, dtype):
    return t if t.dtype is dtype else like(t, dtype)


def reduction(spec, tensors, scalars):
    x = as_tensor_arg(tensors[0])
    r = ReductionCall(spec, x, scalars, cast)      # dims, result dtype and shape, the empty-input errors
    return empty(r.out_shape, r.out_dtype)


def argreduction(spec, tensors, scalars):
    x = as_tensor_arg(tensors[0])
    kw = dict(zip(spec.scalar_names, scalars))
    spec.check_dtype(x.dtype)
    dim, keepdim = kw.get("dim"), bool(kw.get("keepdim", False))
    if dim is None:
        out_shape, K = (tuple(1 for _ in x._shape) if keepdim else ()), x.numel()
    else:
        d = L.wrap_dim(dim, x.ndim)
        out_shape = _reduced_shape(x._shape, (d,) if x.ndim else (), keepdim)
        K = x._shape[d] if x.ndim else 1
    if K == 0:
        raise IndexError(f"{spec.name}(): Expected reduction dim to be specified for input.numel() == 0.") \
            if dim is None else IndexError(f"{spec.name}(): Expected reduction dim {d} to have non-zero size.")
    return empty(out_shape, D.int64)


def scan(spec, tensors, scalars):
    x = as_tensor_arg(tensors[0])
    kw = dict(zip(spec.scalar_names, scalars))
    L.wrap_dim(kw["dim"], x.ndim)
    dtype = kw.get("dtype")
    xin = cast(x, D.as_dtype(dtype)) if dtype is not None else x
    spec.check_dtype(xin.dtype)
    wide = spec.accumulate == "wide" and xin.dtype.category < 2 and dtype is None
    return empty(x._shape, D.int64 if wide else xin.dtype)


def array(spec, tensors, scalars, cpu_array):
    """The op's NumPy body over placeholders (meta tensors) and the real arrays of cpu index tensors: only the
    geometry of its results is kept. Values never matter, except where the result's shape depends on them."""
    names = _tensor_names(spec, len(tensors))
    lenient = tuple(i for i, name in enumerate(names) if spec.arg_types[name] in ("Index", "Index?", "Mask"))
    find(tensors, lenient)
    if spec.matmul_body:        # the product's geometry from the matmul rules: no result-sized temporary
        metas = (_matmul(spec, tensors),)
        res = metas[0]
    else:
        metas, res = _run_body(spec, cpu_array, tensors, scalars)
    return metas if isinstance(res, tuple) else metas[0]


def _run_body(spec, cpu_array, tensors, scalars):
    """The body over zero placeholders, then over varied values to catch value-dependent result shapes."""
    with grad_mode.no_grad():
        res = cpu_array(spec, [_probe(t, False) for t in tensors], scalars)
        outs = res if isinstance(res, tuple) else (res,)
        try:
            again = cpu_array(spec, [_probe(t, True) for t in tensors], scalars)
        except Exception:   # noqa: BLE001 -- such values may be out of range (an index): the first run stands
            again = res
    agains = again if isinstance(again, tuple) else (again,)
    if any(a._shape != b._shape for a, b in zip(outs, agains)):
        raise NotImplementedError(f"{spec.name}: the shape of its result depends on the values of its input, "
                                  "which a meta tensor does not have")
    return tuple(empty(o._shape, o.dtype) for o in outs), res


def _matmul(spec, tensors):
    """A matmul-family op (its body: checks, then np.matmul): the body's checks over placeholders raise its errors,
    then NumPy's matmul rules give the shape (batch dims broadcast, a 1-D operand's dim dropped)."""
    a, b = (as_tensor_arg(t) for t in tensors)
    dt = promoted(spec, [a, b])
    spec.check_dtype(dt)
    getattr(_array_ops, f"{spec.name}_checks")(_probe(a, False)._array(), _probe(b, False)._array())
    a2 = a._shape if a.ndim > 1 else (1,) + a._shape
    b2 = b._shape if b.ndim > 1 else b._shape + (1,)
    batch = L.broadcast_shapes(a2[:-2], b2[:-2])
    return empty(tuple(batch) + a2[-2:-1] * (a.ndim > 1) + b2[-1:] * (b.ndim > 1), dt)


def _probe(t, varied):
    """A meta tensor as a cpu tensor of its shape: all zeros in one element of memory (strides 0), or (varied)
    the values 0, 1, 2, 0, 1, ... that make value-dependent results (nonzero, unique, masks) differ from it."""
    if not isinstance(t, Tensor) or t.device.type != "meta":
        return t
    if not varied:
        return Tensor._make(Storage(np.zeros(1, t.dtype.np)), 0, t._shape, (0,) * len(t._shape), t.dtype)
    n = t.numel()
    data = (np.arange(n) % (2 if t.dtype.category == 0 else 3)).astype(t.dtype.np)
    return Tensor._make(Storage(data), 0, t._shape, L.contiguous_strides(t._shape), t.dtype)


# ---------------------------------------------------------------------------- moves

def move(t, dev, dtype=None):
    """t onto `dev` from or to meta: onto meta, a tensor of its shape (differentiable like PyTorch's to()); off
    meta, PyTorch's error (there is nothing to copy)."""
    if t.device.type == "meta" and dev.type != "meta":
        raise no_data_error()
    out = like(t, dtype)
    if grad_mode.state.enabled and t.requires_grad and out.dtype.is_floating_point:
        _cuda_d._record_copy(t, out)
    return out
