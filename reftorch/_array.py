"""Array ops (ops.yaml kind `array`: a generated NumPy body per op, kernels/array_ops.py) and views.

An array op's arguments are promoted once (a plan per op: positions of promoted and index arguments, dtypes
checked) and its body runs over the storage arrays; fresh results are wrapped as they are. A view op's geometry
comes from _layout.py and shares storage (a copy only where no view has the shape: reshape).
"""
from __future__ import annotations

import numpy as np

from ._layout import contiguous_array as _contig
import reftorch._blas as _blas
import reftorch._conj as _conj
import reftorch._creation as _creation
import reftorch._cuda_dispatch as _cuda_d
import reftorch._dtype as D
import reftorch._layout as L
import reftorch._meta as _meta
from ._args import (_cast, _group_list, _info, _tensor_names, _wrap_dim_args, as_tensor_arg,
                    check_index, promoted)
from ._cpu import half_up, to_half
from ._spec import PROMOTED, all_specs
from ._tensor import Storage, Tensor, reinterpreted
import reftorch.kernels.array_ops as _array_ops

_make_tensor = Tensor._make
_FROM_NP = D._FROM_NP
try:        # NumPy 2's error state is a context variable: set it to "ignore all" directly (np.errstate costs µs)
    from numpy._core._ufunc_config import _extobj_contextvar as _np_extobj
    with np.errstate(all="ignore"):
        _NP_QUIET = _np_extobj.get()
except Exception:   # noqa: BLE001 -- another NumPy: np.errstate it is
    _np_extobj = None


def _new_array_plan(spec):
    """What array() needs of an op, worked out once: the positions of its promoted and of its Index tensor
    arguments (promo None: every tensor, the one Tensor[] argument of cat or einsum), whether it has `dim`
    arguments, and the dtypes already checked. False for ops with a Tensor[] argument beside other tensors (the
    general path)."""
    if spec.list_arg is not None:
        if spec.tensor_args != (spec.list_arg,):
            return False
        promo, index = None, ()
    else:
        promo = tuple(i for i, ty in enumerate(spec.tensor_types) if ty in PROMOTED)
        index = tuple(i for i, ty in enumerate(spec.tensor_types) if ty in ("Index", "Index?"))
    dims = any(spec.arg_types[n] in ("dim", "dim?", "dim[]?") for n in spec.scalar_names)
    return promo, index, dims, set()


_array_plans = {}       # spec -> _new_array_plan(spec)


def _forget_plans():
    """Plans hold result dtypes, and int / int or a float number's category resolve to the default float dtype:
    set_default_dtype drops them all (a plan is rebuilt on the next call)."""
    for spec in all_specs():
        if spec.plans is not None:
            spec.plans.clear()
    _array_plans.clear()


D._on_default_change.append(_forget_plans)


def array(spec, tensors, scalars):
    if _cuda_d.used:        # an argument on meta or cuda: its back end (index tensors may stay on cpu)
        types = {t.device.type for t in tensors if isinstance(t, Tensor)}
        if "meta" in types:
            return _meta.array(spec, tensors, scalars, array)
        if "cuda" in types:
            return _cuda_d.array(spec, tensors, scalars, array)
    plan = _array_plans.get(spec)
    if plan is None:
        plan = _array_plans[spec] = _new_array_plan(spec)
    dt = None
    if plan and (len(tensors) == len(spec.tensor_types) or plan[0] is None):
        # the lean path: every tensor argument a Tensor (or an absent optional), the promoted ones of one dtype
        # that is not 16-bit, so nothing is promoted or cast
        promo, index, dims, checked = plan
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                break
        else:
            for i in (range(len(tensors)) if promo is None else promo):
                t = tensors[i]
                if t is not None:
                    if t._wrapped or (dt is not None and t.dtype is not dt):
                        break
                    dt = t.dtype
            else:
                if dt is None or not dt.half:
                    if dt is not None and dt not in checked:
                        spec.check_dtype(dt)
                        checked.add(dt)
                    for i in index:
                        if tensors[i] is not None:
                            check_index(tensors[i], spec.name)
                    ts = inputs = tensors
                    arrays = [t._array() if t is not None else None for t in tensors]
                    args = arrays if promo is not None else [arrays]    # (the Tensor[] argument: one list)
                    kw = dict(zip(spec.scalar_names, scalars)) if scalars else {}
                    if dims:
                        _wrap_dim_args(spec, kw, next((t.ndim for t in ts if t is not None), 0))
                    return _array_run(spec, ts, inputs, scalars, arrays, args, kw, dt)
            dt = None
    ts = inputs = [t if isinstance(t, Tensor) else (as_tensor_arg(t) if t is not None else None) for t in tensors]
    names = spec.tensor_args if spec.list_arg is None else _tensor_names(spec, len(ts))
    arg_types = spec.arg_types
    promo = [t for t, name in zip(ts, names) if t is not None and arg_types[name] in PROMOTED]
    for t, name in zip(ts, names):
        if t is not None and arg_types[name] in ("Index", "Index?"):
            check_index(t, spec.name)
    if promo:
        dt = promo[0].dtype
        if any(t.dtype is not dt or t._wrapped for t in promo) or not promo[0]._shape:
            dt = promoted(spec, promo)
        spec.check_dtype(dt)
        if any(t.dtype is not dt for t in promo):
            ts = [(_cast(t, dt) if (t is not None and any(t is p for p in promo)) else t) for t in ts]
    arrays = [t._array() if t is not None else None for t in ts]
    if dt is not None and dt.half:      # NumPy bodies run on 16-bit floats through float32, rounded back below
        arrays = [half_up(a) for a in arrays]
    args = _group_list(spec, arrays)
    kw = dict(zip(spec.scalar_names, scalars))
    if kw:
        _wrap_dim_args(spec, kw, next((t.ndim for t in ts if t is not None), 0))
    return _array_run(spec, ts, inputs, scalars, arrays, args, kw, dt)


def _array_run(spec, ts, inputs, scalars, arrays, args, kw, dt):
    """The op's NumPy body over arrays (args: grouped by tensor argument), its results wrapped and recorded."""
    fn = _array_fns.get(spec.name)
    if fn is None:
        fn = _array_fns[spec.name] = getattr(_array_ops, f"{spec.name}_forward")
    try:
        # tensors by name: a signature may put scalars between them (index_put(self, indices, values));
        # IEEE overflow and 0/0 give inf/nan silently, as in PyTorch, not NumPy's RuntimeWarning
        # small products of a BLAS-calling body run on one BLAS thread (reftorch/_blas.py)
        run = _blas.serial_small if spec.blas else _call_body
        if _np_extobj is not None:      # np.errstate(all="ignore") without building its state per call
            token = _np_extobj.set(_NP_QUIET)
            try:
                res = run(fn, dict(zip(spec.tensor_args, args)), kw, arrays)
            finally:
                _np_extobj.reset(token)
        else:
            with np.errstate(all="ignore"):
                res = run(fn, dict(zip(spec.tensor_args, args)), kw, arrays)
    except IndexError as err:
        raise IndexError(str(err)) from None
    outs = res if isinstance(res, tuple) else (res,)
    if dt is not None and dt.half:
        outs = to_half(outs, dt)
    tensors_out = []
    for a in outs:
        if a.__class__ is not np.ndarray:
            a = np.asarray(a)
        if a.base is not None and any(np.may_share_memory(a, t._storage.data) for t in ts if t is not None):
            a = a.copy()        # a view of an input's memory: the result gets values of its own
        flat, strides = _fresh_layout(a)
        # wrapped as it is (Tensor._from_array's walk to the base array costs µs on small results)
        odt = _FROM_NP.get(flat.dtype)
        tensors_out.append(_make_tensor(Storage(flat), 0, a.shape, strides,
                                        odt if odt is not None else D.from_numpy(flat.dtype)))
    return tuple(tensors_out) if isinstance(res, tuple) else tensors_out[0]


_array_fns = {}         # array op -> its generated NumPy body (kernels/array_ops.py)


def _fresh_layout(a):
    """(flat storage array, strides in elements) of a fresh result a: C-ordered as it is, or, where its matrices
    are column-major (the factors LAPACK leaves: eigh's, svd's, solve's, which torch returns so too), as they
    lie; other layouts are copied to C order."""
    if not a.flags.c_contiguous:
        t = a.swapaxes(-1, -2) if a.ndim >= 2 else a
        if t.flags.c_contiguous and t.size:
            return t.reshape(-1), tuple(s // a.itemsize for s in a.strides)
        a = _contig(a)
    return a.reshape(-1), _info(a.shape)[0]


def _call_body(fn, args, kw, arrays):
    return fn(**args, **kw)


def view(spec, tensors, scalars):
    x = tensors[0]
    if not isinstance(x, Tensor):
        x = as_tensor_arg(x)
    conj = neg = False
    if x._conj or x._neg:       # a conjugate/negative view's views keep its bits (reftorch/_conj.py)
        conj, neg = _conj.view_bits(spec, x)
    dtype, storage = x.dtype, x._storage
    shape, strides, off, *new_dtype = spec.geometry(x._shape, x._strides, x._offset, *scalars, dtype=dtype,
                                                    storage_size=storage.data.shape[0])
    if new_dtype and (x._conj or x._neg) and spec.bits is None:
        raise _conj.dtype_view_error(x)
    if new_dtype:      # the same bytes as another dtype (real, imag, view_as_real/complex): an alias storage
        dtype = new_dtype[0]
        storage = reinterpreted(storage, dtype.np)
    if strides is None:         # no view has this shape (reshape, flatten): a contiguous copy takes it
        copy = _meta.like(x) if x.device.type == "meta" else _creation._copy_tensor(x, keep_graph=False)
        storage, strides, off = copy._storage, L.contiguous_strides(shape), 0
        conj = neg = False      # (the copy holds the values read, already conjugated/negated)
    base = x._base if x._base is not None else x
    out = Tensor._make(storage, off, tuple(shape), tuple(strides), dtype, x.device,
                       base if storage is x._storage or new_dtype else None)
    if conj:
        out._conj = True
    if neg:
        out._neg = True
    return out
