"""The dispatcher: one code path per kind of op, none per op.

call(name, tensors, scalars) looks up the op's spec (generated from ops.yaml), then its kind's
handler parses arguments, promotes types, broadcasts, allocates, picks the kernel and records the
autograd node. Per-op knowledge comes only from the spec and the generated kernels.
"""
from __future__ import annotations

import numpy as np

from ._layout import contiguous_array as _contig

from . import _dtype as D
from . import _layout as L
from . import _reference
from . import _cuda_dispatch as _cuda_d
from ._tensor import Storage, Tensor
from .autograd import grad_mode
from .autograd.graph import NO_EDGE, OpNode, SavedTensor, gradient_edge
from .autograd.inplace import note_view, rebase_history
from .autograd.anomaly_mode import record_trace
from .kernels import api as _api
from .kernels import array_ops as _array_ops
from .kernels import composites as _composites
from .kernels import derivatives as _derivatives

TENSOR_TYPES = ("Tensor", "Tensor?", "Tensor[]", "Index", "Index?", "Mask")
PROMOTED = ("Tensor", "Tensor?", "Tensor[]")
_tracer = None  # reftorch.compile's Tracer while it records a call (every op then goes through it)
_cpu = None  # reftorch.kernels.cpu, imported on first kernel use (Numba import cost stays off `import reftorch`)


def _kernels():
    global _cpu
    if _cpu is None:
        from .kernels import cpu
        _cpu = cpu
    return _cpu


class OpSpec:
    """Runtime view of one ops.yaml entry (from the generated SPECS table)."""
    __slots__ = ("name", "kind", "args", "tensor_args", "scalar_names", "dtypes", "families", "result", "outputs",
                 "differentiable", "saves", "identity", "accumulate", "backward", "handler", "promote_idx",
                 "list_arg", "arg_types", "_kernel_cache", "tensor_types", "kernel_idx", "rejects", "cuda")

    def __init__(self, d):
        self.name = d["name"]
        self.kind = d["kind"]
        self.args = d["args"]
        self.tensor_args = tuple(a[0] for a in self.args if a[1] in TENSOR_TYPES)
        self.tensor_types = tuple(a[1] for a in self.args if a[1] in TENSOR_TYPES)
        self.arg_types = {a[0]: a[1] for a in self.args}
        self.list_arg = next((a[0] for a in self.args if a[1] == "Tensor[]"), None)
        self.scalar_names = tuple(a[0] for a in self.args if a[1] not in TENSOR_TYPES)
        self.dtypes = d["dtypes"]
        self.families = {f: True for f in d["dtypes"]}
        self.result = d["result"]
        self.outputs = d["outputs"]
        self.differentiable = d["differentiable"]
        self.saves = d["saves"]
        self.identity = d["identity"]
        self.accumulate = d["accumulate"]
        self.backward = getattr(_derivatives, f"{self.name}_backward", None)
        kernel_args = d.get("kernel_args", ())
        self.kernel_idx = tuple(i for i, n in enumerate(self.scalar_names) if n in kernel_args) \
            if d["kind"] != "fused" else None
        self._kernel_cache = {}
        self.rejects = d.get("rejects", ())
        self.cuda = d.get("cuda")      # array ops: the device implementation (reftorch/_cuda_dispatch.py IMPLS)

    def check_inputs(self, ts):
        """PyTorch's refusals by input dtype (ops.yaml `rejects`), checked before any promotion."""
        fams = [("bool", "int", "float")[t.dtype.category] for t in ts]
        for quant, fam, msg in self.rejects:
            if (any if quant == "any" else all)(f == fam for f in fams):
                raise RuntimeError(msg)

    def check_dtype(self, dtype):
        fam = ("bool", "int", "float")[dtype.category]
        if fam not in self.families:
            raise RuntimeError(f"\"{self.name}\" not implemented for '{dtype.short}'")

    def kernel(self, suffix):
        k = self._kernel_cache.get(suffix)
        if k is None:
            k = getattr(_kernels(), f"{self.name}_{suffix}")
            self._kernel_cache[suffix] = k
        return k


SPECS = {name: OpSpec(d) for name, d in _api.SPECS.items()}
_fused_specs = {}


# ---------------------------------------------------------------------------- helpers

def as_tensor_arg(x, dtype=None):
    """Python scalars and sequences become tensors; scalars are marked 'wrapped' for promotion."""
    if isinstance(x, Tensor):
        return x
    from ._creation import tensor as make_tensor, scalar_tensor
    if isinstance(x, (bool, int, float, np.number, np.bool_)):
        if dtype is None and isinstance(x, (float, np.floating)):
            dtype = D.float64       # a wrapped number keeps double precision (only its category promotes)
        t = scalar_tensor(x, dtype)
        t._wrapped = True
        return t
    if isinstance(x, np.ndarray):
        return Tensor._from_array(x)
    return make_tensor(x)


def new_tensor(arr, dtype):
    """A fresh tensor owning a contiguous array."""
    flat = arr.reshape(-1)
    return Tensor._make(Storage(flat), 0, arr.shape, L.contiguous_strides(arr.shape), dtype)


def empty(shape, dtype):
    n = L.numel(shape)
    return Tensor._make(Storage(np.empty(n, dtype.np)), 0, tuple(shape), L.contiguous_strides(shape), dtype)


def promoted(spec, ts):
    """Result type of the op's promotable tensor arguments (PyTorch's three tiers)."""
    dim, zero, scal = [], [], []
    for t in ts:
        if t._wrapped:
            scal.append(t.dtype.category)
        elif t._shape:
            dim.append(t.dtype)
        else:
            zero.append(t.dtype)
    return D.result_type(dim, zero, scal)


def _cast(t, dtype):
    """t converted to dtype (a no-op when it already is); wrapped scalars convert for free."""
    if t.dtype is dtype:
        return t
    arr = t._array().astype(dtype.np)
    out = new_tensor(_contig(arr), dtype)
    out._wrapped = t._wrapped
    return out


def _result_dtypes(spec, ts):
    """(compute dtype, output dtype) of an elementwise op."""
    promotable = [t for t, ty in zip(ts, spec.tensor_types) if ty in PROMOTED]
    if spec.rejects:
        spec.check_inputs(promotable)
    dt = promoted(spec, promotable)
    spec.check_dtype(dt)
    if spec.result == "float" and dt.category < 2:
        dt = D.defaults.float
    out = {"bool": D.bool_, "int64": D.int64}.get(spec.result, dt)
    return dt, out


# ---------------------------------------------------------------------------- elementwise

def run_elementwise(spec, ins, scalars, out):
    """Run the op's kernel over inputs already cast to the compute dtype, writing into `out`."""
    shape = out._shape
    n = L.numel(shape)
    if n == 0:
        return out
    odata = out._storage.data
    if all(t._shape == shape and L.is_contiguous(t._shape, t._strides) for t in ins) and \
            L.is_contiguous(shape, out._strides):
        args = [odata[out._offset:out._offset + n]]
        args += [t._storage.data[t._offset:t._offset + n] for t in ins]
        spec.kernel("contig")(*args, *scalars)
        return out
    strides = [out._strides] + [L.broadcast_strides(t._shape, t._strides, shape) for t in ins]
    cshape, cstrides = L.collapse(shape, strides)
    # geometry travels as int64 arrays, not tuples: Numba then compiles one strided kernel per dtype
    # instead of one per (dtype, ndim), which cuts cold-compile time several-fold
    args = [np.array(cshape, np.int64), odata, out._offset, np.array(cstrides[0], np.int64)]
    for t, st in zip(ins, cstrides[1:]):
        args += [t._storage.data, t._offset, np.array(st, np.int64)]
    spec.kernel("strided")(*args, *scalars)
    return out


def elementwise(spec, tensors, scalars):
    if _cuda_d.used and _cuda_d.find(tensors):      # an argument on cuda: reftorch/_cuda_dispatch.py
        return _cuda_d.elementwise(spec, tensors, scalars)
    ts = [as_tensor_arg(t) for t in tensors]
    compute, out_dtype = _result_dtypes(spec, ts)
    shape = L.broadcast_shapes(*[t._shape for t in ts])
    ins = _operands(spec, ts, compute)
    out = empty(shape, out_dtype)
    run_elementwise(spec, ins, _kernel_scalars(spec, scalars, compute), out)
    if spec.differentiable and grad_mode.state.enabled:
        record(spec, ts, scalars, (out,))
    return out


def _operands(spec, ts, compute):
    """Inputs converted for the kernel: promoted args to the compute dtype, masks to bool."""
    out = []
    for t, ty in zip(ts, spec.tensor_types):
        if ty == "Mask":
            out.append(_cast(t, D.bool_))
        elif ty in PROMOTED:
            out.append(_cast(t, compute))
        else:
            check_index(t, spec.name)
            out.append(t)
    return out


def check_index(t, name):
    if t.dtype.category == 2:
        raise IndexError(f"{name}(): Expected dtype int64 for index, got {t.dtype.short}")


def _kernel_scalars(spec, scalars, dtype):
    if spec.kernel_idx is None:
        return [_scalar_arg(s, dtype) for s in scalars]
    return [_scalar_arg(scalars[i], dtype) for i in spec.kernel_idx]


def _scalar_arg(v, dtype):
    if isinstance(v, Tensor):
        v = v.item()
    if v is None:
        return v
    if dtype.category == 2:
        return float(v)
    D.check_scalar_fits(v, dtype)
    if dtype.category == 1 and isinstance(v, float) and v != int(v):
        return v
    return int(v) if not isinstance(v, bool) else v


def call_inplace(name, tensors, scalars):
    spec = SPECS[name]
    if _tracer is not None:
        _tracer.inplace(name)
    if _reference.enabled:
        return _reference.checked_call(spec, _inplace, tensors, scalars)
    return _inplace(spec, tensors, scalars)


def _inplace(spec, tensors, scalars):
    name = spec.name
    self = tensors[0]
    if not isinstance(self, Tensor):
        raise TypeError(f"{name}_(): expected a Tensor as self")
    if _cuda_d.used and _cuda_d.find(tensors):
        return _cuda_d.inplace(spec, tensors, scalars)
    ts = [self] + [as_tensor_arg(t) for t in tensors[1:]]
    compute, out_dtype = _result_dtypes(spec, ts)
    if not _can_cast(out_dtype, self.dtype):
        raise RuntimeError(f"result type {out_dtype.short} can't be cast to the desired output type "
                           f"{self.dtype.short}")
    shape = L.broadcast_shapes(*[t._shape for t in ts])
    if shape != self._shape:
        raise RuntimeError(f"output with shape [{', '.join(map(str, self._shape))}] doesn't match the broadcast "
                           f"shape [{', '.join(map(str, shape))}]")
    check_inplace(self)
    check_no_internal_overlap(self)
    ins = []
    for t in _operands(spec, ts, compute):
        c = t
        if c is t and t._storage is self._storage and (t._offset, t._strides) != (self._offset, self._strides):
            c = new_tensor(_contig(t._array()), t.dtype)      # overlapping operand: read a copy
        ins.append(c)
    if out_dtype is self.dtype:
        target = self
    else:
        target = empty(shape, out_dtype)
    needs_grad = spec.differentiable and grad_mode.state.enabled and any(t.requires_grad for t in ts)
    saved_inputs = _snapshot_for_inplace(spec, ts) if needs_grad else None
    run_elementwise(spec, ins, _kernel_scalars(spec, scalars, compute), target)
    if target is not self:
        self._array()[...] = target._array()
    self._storage.version += 1
    if needs_grad:
        record(spec, saved_inputs, scalars, (self,), inplace=True)
    return self


def _can_cast(src, dst):
    return src.category <= dst.category


def check_inplace(t):
    """PyTorch's checks before an in-place write that autograd may record."""
    if not grad_mode.state.enabled:
        return
    base = t._base
    if base is not None and base.requires_grad and t.grad_fn is None:
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
                           "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
                           "your code by moving both the view and the inplace either both inside the no_grad block "
                           "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
                           "to be tracked).")
    if base is not None and base.requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if t.requires_grad and t.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def check_no_internal_overlap(t):
    """An in-place write into a tensor with repeated elements (an expand) is refused, as in PyTorch."""
    if any(st == 0 and n > 1 for n, st in zip(t._shape, t._strides)):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")


def _snapshot_for_inplace(spec, ts):
    """Inputs as the node must see them: self before it is overwritten (a copy, if a formula reads it)."""
    out = list(ts)
    if "self" in spec.saves and ts[0].requires_grad is not None:
        s = ts[0]
        c = new_tensor(s._array().copy(), s.dtype)     # a copy even when s is contiguous
        c.requires_grad = s.requires_grad
        c.grad_fn, c._output_nr, c._accum = s.grad_fn, s._output_nr, s._accum
        out[0] = c
    return out


# ---------------------------------------------------------------------------- reductions

def _reduce_geometry(x, dims):
    """(array, offset, M, sm, K, sk) over x's storage, copying x only when the kept or the reduced
    dims cannot be walked with one stride each."""
    keep = [d for d in range(x.ndim) if d not in dims]
    kshape = tuple(x._shape[d] for d in keep)
    rshape = tuple(x._shape[d] for d in dims)
    ks, kst = L.collapse(kshape, [tuple(x._strides[d] for d in keep)])
    rs, rst = L.collapse(rshape, [tuple(x._strides[d] for d in dims)])
    if len(ks) == 1 and len(rs) == 1:
        return x._storage.data, x._offset, ks[0], kst[0][0], rs[0], rst[0][0]
    arr = _contig(x._array().transpose(keep + list(dims))).reshape(-1)
    M, K = L.numel(kshape), L.numel(rshape)
    return arr, 0, M, K, K, 1


def _acc_dtype(spec, dt):
    rule = spec.accumulate
    if rule == "wide":
        return D.float64 if dt.category == 2 else D.int64
    return {"float64": D.float64, "int64": D.int64, "bool": D.bool_}.get(rule, dt)


def _reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def reduction(spec, tensors, scalars):
    if _cuda_d.used and _cuda_d.find(tensors):
        return _cuda_d.reduction(spec, tensors, scalars)
    x = as_tensor_arg(tensors[0])
    kw = dict(zip(spec.scalar_names, scalars))
    if isinstance(kw.get("dim"), (tuple, list)) and len(kw["dim"]) == 0:
        kw["dim"] = None        # dim=() / [] reduces every dim, as in PyTorch
    dims = L.wrap_dims(kw.get("dim"), x.ndim, spec.name)
    keepdim = bool(kw.get("keepdim", False))
    dtype = kw.get("dtype")
    xin = x
    if dtype is not None:
        dtype = D.as_dtype(dtype)
        xin = _cast(x, dtype)
    spec.check_dtype(xin.dtype)
    if spec.result in ("bool", "int64"):
        out_dtype = D.bool_ if spec.result == "bool" else D.int64
    elif spec.result == "float" and xin.dtype.category < 2:
        out_dtype = D.defaults.float
        xin = _cast(xin, out_dtype)
    elif spec.accumulate == "wide" and xin.dtype.category < 2:
        out_dtype = D.int64
    else:
        out_dtype = xin.dtype
    acc_dtype = _acc_dtype(spec, xin.dtype)
    out_shape = _reduced_shape(x._shape, dims, keepdim)
    M = L.numel(out_shape)
    K = L.numel(tuple(x._shape[d] for d in dims))
    if K == 0 and spec.identity is None and M > 0:
        raise IndexError(f"{spec.name}(): Expected reduction dim to be specified for input.numel() == 0. "
                         "Specify the reduction dim with the 'dim' argument.") if kw.get("dim") is None else \
            IndexError(f"{spec.name}(): Expected reduction dim {dims[0]} to have non-zero size.")
    extra = [_scalar_arg(kw[n], xin.dtype) for n in spec.scalar_names if n not in ("dim", "keepdim", "dtype")]
    if M == 0:
        acc = np.empty(0, acc_dtype.np)
    else:
        arr, off, M_, sm, K_, sk = _reduce_geometry(xin, dims)
        if spec.identity is not None:
            acc = np.full(M_, _identity(spec.identity, acc_dtype), acc_dtype.np)
            start = 0
        else:
            acc = np.empty(M_, acc_dtype.np)
            start = 1
        if K_ > 0:
            spec.kernel("reduce")(arr, off, M_, sm, K_, sk, acc, start, *extra)
    res = acc if acc.dtype == out_dtype.np else acc.astype(out_dtype.np)
    out = new_tensor(res.reshape(out_shape), out_dtype)
    if spec.differentiable and grad_mode.state.enabled:
        record(spec, (x,), scalars, (out,))
    return out


def _identity(src, dtype):
    v = {"inf": np.inf, "-inf": -np.inf}.get(str(src))
    if v is None:
        v = float(src) if dtype.category == 2 else (bool(float(src)) if dtype.category == 0 else int(float(src)))
    return v


def argreduction(spec, tensors, scalars):
    if _cuda_d.used and _cuda_d.find(tensors):
        return _cuda_d.argreduction(spec, tensors, scalars)
    x = as_tensor_arg(tensors[0])
    kw = dict(zip(spec.scalar_names, scalars))
    spec.check_dtype(x.dtype)
    dim = kw.get("dim")
    keepdim = bool(kw.get("keepdim", False))
    if dim is None:
        src = x.reshape(-1) if x.is_contiguous() else x.contiguous().reshape(-1)
        dims = (0,) if src.ndim else ()
        out_shape = tuple(1 for _ in x._shape) if keepdim else ()
    else:
        d = L.wrap_dim(dim, x.ndim)
        src = x
        dims = (d,) if x.ndim else ()
        out_shape = _reduced_shape(x._shape, dims, keepdim)
    K = L.numel(tuple(src._shape[d] for d in dims))
    if K == 0:
        raise IndexError(f"{spec.name}(): Expected reduction dim to be specified for input.numel() == 0.")\
            if dim is None else IndexError(f"{spec.name}(): Expected reduction dim {dims[0]} to have non-zero size.")
    M = L.numel(out_shape)
    res = np.zeros(M, np.int64)
    if M and K:
        arr, off, M_, sm, K_, sk = _reduce_geometry(src, dims)
        spec.kernel("reduce")(arr, off, M_, sm, K_, sk, res)
    return new_tensor(res.reshape(out_shape), D.int64)


def scan(spec, tensors, scalars):
    if _cuda_d.used and _cuda_d.find(tensors):
        return _cuda_d.scan(spec, tensors, scalars)
    x = as_tensor_arg(tensors[0])
    kw = dict(zip(spec.scalar_names, scalars))
    d = L.wrap_dim(kw["dim"], x.ndim)
    dtype = kw.get("dtype")
    xin = _cast(x, D.as_dtype(dtype)) if dtype is not None else x
    spec.check_dtype(xin.dtype)
    out_dtype = D.int64 if (spec.accumulate == "wide" and xin.dtype.category < 2) else xin.dtype
    acc_dtype = _acc_dtype(spec, xin.dtype)
    if x.ndim == 0:
        xin = xin.reshape(1)
        d = 0
    n = xin.numel()
    K = xin._shape[d]
    M = n // K if K else 0
    res = np.empty(n, acc_dtype.np)
    if n:
        arr, off, M_, sm, K_, sk = _reduce_geometry(xin, (d,))
        acc0 = np.full(1, _identity(spec.identity, acc_dtype), acc_dtype.np)
        spec.kernel("scan")(arr, off, M_, sm, K_, sk, res, acc0)
    keep = [i for i in range(xin.ndim) if i != d]
    moved = tuple(xin._shape[i] for i in keep) + (K,)
    res = res.reshape(moved)
    inv = np.argsort(keep + [d])
    res = _contig(res.transpose(inv)).astype(out_dtype.np, copy=False)
    out = new_tensor(res.reshape(x._shape), out_dtype)
    if spec.differentiable and grad_mode.state.enabled:
        record(spec, (x,), scalars, (out,))
    return out


# ---------------------------------------------------------------------------- array, view, composite

def array(spec, tensors, scalars):
    if _cuda_d.used and any(isinstance(t, Tensor) and t.device.type == "cuda" for t in tensors):
        return _cuda_d.array(spec, tensors, scalars)
    ts = inputs = [as_tensor_arg(t) if t is not None else None for t in tensors]
    names = _tensor_names(spec, len(ts))
    promo = [t for t, name in zip(ts, names) if t is not None and spec.arg_types[name] in PROMOTED]
    for t, name in zip(ts, names):
        if t is not None and spec.arg_types[name] in ("Index", "Index?"):
            check_index(t, spec.name)
    if promo:
        dt = promoted(spec, promo)
        spec.check_dtype(dt)
        ts = [(_cast(t, dt) if (t is not None and any(t is p for p in promo)) else t) for t in ts]
    arrays = [t._array() if t is not None else None for t in ts]
    args = _group_list(spec, arrays)
    kw = dict(zip(spec.scalar_names, scalars))
    _wrap_dim_args(spec, kw, next((t.ndim for t in ts if t is not None), 0))
    try:
        # tensors by name: a signature may put scalars between them (index_put(self, indices, values));
        # IEEE overflow and 0/0 give inf/nan silently, as in PyTorch, not NumPy's RuntimeWarning
        with np.errstate(all="ignore"):
            res = getattr(_array_ops, f"{spec.name}_forward")(**dict(zip(spec.tensor_args, args)), **kw)
    except IndexError as err:
        raise IndexError(str(err)) from None
    outs = res if isinstance(res, tuple) else (res,)
    tensors_out = []
    for a in outs:
        a = np.asarray(a)
        if any(np.may_share_memory(a, t._storage.data) for t in ts if t is not None):
            a = a.copy()
        tensors_out.append(Tensor._from_array(_contig(a)))
    if spec.differentiable and grad_mode.state.enabled:
        record(spec, inputs, scalars, tuple(tensors_out))
    return tuple(tensors_out) if isinstance(res, tuple) else tensors_out[0]


def _wrap_dim_args(spec, kw, ndim):
    """`dim`-typed arguments of an array op, wrapped against the first tensor's ndim."""
    for name, value in kw.items():
        ty = spec.arg_types[name]
        if value is None or ty not in ("dim", "dim?", "dim[]?"):
            continue
        if ty == "dim[]?" and isinstance(value, (tuple, list)):
            kw[name] = tuple(L.wrap_dim(d, ndim) for d in value)
        else:
            kw[name] = L.wrap_dim(value, ndim)


def _tensor_names(spec, n):
    names = []
    for name in spec.tensor_args:
        if name == spec.list_arg:
            names += [name] * (n - (len(spec.tensor_args) - 1))
        else:
            names.append(name)
    return names


def _group_list(spec, items):
    """Flat tensor inputs back into the op's positional tensor arguments (a Tensor[] gets a list)."""
    if spec.list_arg is None:
        return list(items)
    n_list = len(items) - (len(spec.tensor_args) - 1)
    out, i = [], 0
    for name in spec.tensor_args:
        if name == spec.list_arg:
            out.append(list(items[i:i + n_list]))
            i += n_list
        else:
            out.append(items[i])
            i += 1
    return out


def view(spec, tensors, scalars):
    x = tensors[0]
    if not isinstance(x, Tensor):
        x = as_tensor_arg(x)
    shape, strides, off = getattr(L, spec.name)(x._shape, x._strides, x._offset, *scalars)
    storage = x._storage
    if strides is None:         # no view has this shape (reshape, flatten): a contiguous copy takes it
        from ._creation import _copy_tensor
        storage, strides, off = _copy_tensor(x, keep_graph=False)._storage, L.contiguous_strides(shape), 0
    elif L.storage_extent(shape, strides, off) > storage.data.shape[0]:
        raise RuntimeError(f"setStorage: sizes {list(shape)}, strides {list(strides)}, storage offset {off}, and "
                           f"itemsize {x.dtype.itemsize} requiring a storage size of "
                           f"{L.storage_extent(shape, strides, off) * x.dtype.itemsize} are out of bounds for "
                           f"storage of size {storage.data.shape[0] * x.dtype.itemsize}")
    base = x._base if x._base is not None else x
    out = Tensor._make(storage, off, tuple(shape), tuple(strides), x.dtype, x.device,
                       base if storage is x._storage else None)
    if grad_mode.state.enabled and x.requires_grad:
        record(spec, (x,), scalars, (out,))
    return out


def composite(name, *args, **kwargs):
    from . import _functional as F
    return getattr(_composites, name)(F, *args, **kwargs)


def composite_inplace(name, self, *args, **kwargs):
    """The in-place variant of a composite or array op (`clamp_`, `div_`, `scatter_`, `masked_fill_`...): the
    op's result, computed out of place before anything is written, copied into self, with
    PyTorch's casting and shape rules, and self's autograd history continued through the op."""
    if not isinstance(self, Tensor):
        raise TypeError(f"{name}_(): expected a Tensor as self")
    if _tracer is not None:
        _tracer.inplace(name)
    src = self
    if grad_mode.state.enabled and any(isinstance(t, Tensor) and t.requires_grad
                                       for t in (self, *args, *kwargs.values())):
        check_inplace(self)
        from . import _functional as F
        src = F.clone(self)     # the op may save its input; the write below must not invalidate that
    res = getattr(_api, name)(src, *args, **kwargs)
    if not _can_cast(res.dtype, self.dtype):
        raise RuntimeError(f"result type {res.dtype.short} can't be cast to the desired output type "
                           f"{self.dtype.short}")
    if res._shape != self._shape:
        raise RuntimeError(f"output with shape [{', '.join(map(str, self._shape))}] doesn't match the broadcast "
                           f"shape [{', '.join(map(str, res._shape))}]")
    check_no_internal_overlap(self)
    return self.copy_(res)


def call(name, tensors, scalars):
    spec = SPECS[name]
    if _tracer is not None:     # reftorch.compile is recording this call (reftorch/compile/tracer.py)
        return _tracer.call(spec, tensors, scalars)
    if _reference.enabled:      # reference mode: also run the entry's NumPy reference and compare
        return _reference.checked_call(spec, _HANDLERS[spec.kind], tensors, scalars)
    return _HANDLERS[spec.kind](spec, tensors, scalars)


def fused(name, tensors, scalars):
    """A fused backward kernel: an elementwise op generated from a derivative formula."""
    spec = _fused_specs.get(name)
    if spec is None:
        spec = OpSpec(dict(name=name, kind="fused", args=tuple((f"t{i}", "Tensor", None, False)
                                                                for i in range(len(tensors))),
                           dtypes=("bool", "int", "float"), result="same", outputs=1, differentiable=False,
                           saves=(), identity=None, accumulate=None))
        _fused_specs[name] = spec
    return elementwise(spec, tensors, scalars)


_HANDLERS = {"unary": elementwise, "binary": elementwise, "ternary": elementwise, "reduction": reduction,
             "argreduction": argreduction, "scan": scan, "array": array, "view": view}


# ---------------------------------------------------------------------------- autograd recording

def record(spec, inputs, scalars, outputs, inplace=False):
    """Attach a node to the outputs when some differentiable input requires grad. With inplace=True
    outputs[0] is the tensor just overwritten: the node becomes its history (autograd/inplace.py)."""
    if not any(isinstance(t, Tensor) and t.requires_grad for t in inputs):
        return
    names = _tensor_names(spec, len(inputs))
    edges, meta = [], []
    for t in inputs:
        differentiable = isinstance(t, Tensor) and t.dtype.category == 2
        edges.append(gradient_edge(t) if differentiable else NO_EDGE)
        meta.append((t._shape, t.dtype) if isinstance(t, Tensor) else ((), None))
    if all(e[0] is None for e in edges):
        return
    kw = dict(zip(spec.scalar_names, scalars))

    def save(x):
        # an input sharing storage with the tensor written in place is saved at its version before the write,
        # so that using it in backward raises PyTorch's "modified by an inplace operation" error
        if inplace and x._storage is outputs[0]._storage:
            return SavedTensor(x, version=x._storage.version - 1)
        if x._wrapped:      # a Python number: formulas use it in its own precision (PyTorch's double Scalar),
            x = Tensor._make(x._storage, x._offset, x._shape, x._strides, x.dtype, x.device)  # not float32
        return SavedTensor(x)

    saved = {}
    for key in spec.saves:
        if key == "result":
            saved[key] = SavedTensor(outputs[0], is_output=True)
        elif key == "results":
            saved[key] = [SavedTensor(o, is_output=True) for o in outputs]
        elif "." in key:
            base, attr = key.split(".")
            v = _by_name(base, spec, names, inputs, outputs)
            saved[key] = [getattr(x, attr) for x in v] if isinstance(v, list) else getattr(v, attr)
        elif key in kw:
            saved[key] = kw[key]
        else:
            v = _by_name(key, spec, names, inputs, outputs)
            saved[key] = [save(x) for x in v] if isinstance(v, list) else (save(v) if isinstance(v, Tensor) else v)
    list_arity = None
    if spec.list_arg is not None:
        list_arity = [names.count(n) for n in spec.tensor_args]
    node = OpNode(spec.name, spec.backward, saved, edges, meta, [(o._shape, o.dtype) for o in outputs], list_arity)
    record_trace(node)
    if inplace:
        rebase_history(outputs[0], node)
        return
    for i, o in enumerate(outputs):
        if o.dtype.category == 2:
            o.requires_grad = True
            o.grad_fn = node
            o._output_nr = i
    if spec.kind == "view" and outputs[0]._base is not None:
        note_view(outputs[0])


def _by_name(name, spec, names, inputs, outputs):
    if name == "result":
        return outputs[0]
    if name == spec.list_arg:
        return [inputs[i] for i, n in enumerate(names) if n == name]
    if name in names:
        return inputs[names.index(name)]
    raise KeyError(name)
