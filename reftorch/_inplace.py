"""Ops that write into an existing tensor: elementwise in-place ops (`add_`, `a += b`), the in-place forms of
view ops (`t_`, `unsqueeze_`) and of composite and array ops (`clamp_`, `scatter_`), and out= (PyTorch's resize,
cast and no-autograd rules). Every check that can fail runs before anything is written.
"""
from __future__ import annotations

import warnings

import reftorch._backend as _backend
import reftorch._dtype as D
from ._dtype import CPP_NAMES
import reftorch._cuda_dispatch as _cuda_d
import reftorch._functional as _functional
import reftorch._intercept as _intercept
import reftorch._layout as L
import reftorch._meta as _meta
from ._args import (OVERLAP, _can_cast, _check_extent, _info, _kernel_scalars, _operands, _result_dtypes,
                    as_tensor_arg, check_inplace, check_no_internal_overlap, overlap)
from ._cpu import empty
from ._elementwise import _convert, _fast_scalars, _plan_for, _run_strided
from ._spec import SPECS
from ._tensor import Storage, Tensor
import reftorch.autograd.grad_mode as grad_mode
from .autograd.inplace import restride_history
from .autograd.record import record
import reftorch.kernels.api as _api



def inplace(spec, tensors, scalars):
    """An elementwise op in place (`add_`, `a += b`): the plan's cheap case when operands have self's shape, else
    the general path with PyTorch's casting and shape rules. Computes only: _dispatch.run_inplace records."""
    self = tensors[0]
    if spec.plans is not None and isinstance(self, Tensor) and not (_cuda_d.used and _backend.off_cpu(tensors)):
        plan = _plan_for(spec, tensors)
        if plan is not None and plan.out is self.dtype and plan.fmt is None:   # (16 bits: the general path)
            done = _fast_inplace(spec, plan, self, tensors, scalars)
            if done is not None:
                return done
    return _inplace_general(spec, tensors, scalars)


def _fast_inplace(spec, plan, self, tensors, scalars):
    """The in-place op when every operand has self's shape (or is 0-d) and none overlaps self partially; None
    sends the call down the general path."""
    shape = self._shape
    storage = self._storage
    for t in tensors:
        if isinstance(t, Tensor):
            if t._shape != shape and t._shape != ():
                return None
            if t._storage is storage and (t._offset != self._offset or t._strides != self._strides):
                return None
    if not storage.data.flags.writeable:
        return None
    check_inplace(self)
    check_no_internal_overlap(self)
    ins = tensors if plan.plain else _convert(plan, tensors)
    cs, n = _info(shape)
    if n:
        _run_strided(spec, plan, ins, _fast_scalars(spec, plan, scalars), self, shape, cs, n, self._offset,
                     self._strides)
    storage.version += 1
    return self


def _inplace_general(spec, tensors, scalars):
    """PyTorch's in-place rules over the back end of the arguments' device (cpu, cuda or meta): no operand may
    overlap self partially, the result dtype must cast to self's, the broadcast shape must be self's; an operand
    sharing self's memory in a layout PyTorch cannot judge (not dense) is read from a copy."""
    self = tensors[0]
    if not isinstance(self, Tensor):
        raise TypeError(f"{spec.name}_(): expected a Tensor as self")
    be = _backend.of(tensors)
    dev = be.destination(self, tensors)
    ts = [self] + [be.operand(dev, as_tensor_arg(t)) for t in tensors[1:]]
    if any(overlap(self, t) == "partial" for t in ts[1:]):      # TensorIterator's check, before shapes and dtypes
        raise RuntimeError(OVERLAP)
    compute, out_dtype = _result_dtypes(spec, ts)
    if spec.result == "real" and self.dtype.is_complex:     # (out= takes the real result; in place PyTorch refuses)
        raise RuntimeError(f"In-place {spec.name} is not supported for complex tensors.")
    if not _can_cast(out_dtype, self.dtype):
        raise RuntimeError(f"result type {out_dtype.short} can't be cast to the desired output type "
                           f"{self.dtype.short}")
    shape = L.broadcast_shapes(*[t._shape for t in ts])
    if shape != self._shape:
        raise RuntimeError(f"output with shape [{', '.join(map(str, self._shape))}] doesn't match the broadcast "
                           f"shape [{', '.join(map(str, shape))}]")
    check_inplace(self)
    check_no_internal_overlap(self)
    ins = [be.clone(t) if t._storage is self._storage and (t._offset, t._strides) != (self._offset, self._strides)
           else t for t in _operands(spec, ts, compute, be.cast)]
    target = self if out_dtype is self.dtype else be.alloc(shape, out_dtype, dev)
    be.run_elementwise(spec, ins, _kernel_scalars(spec, scalars, compute), target)
    if target is not self:
        be.copy_into(self, target)
    self._storage.version += 1
    return self


def view_inplace(name, tensors, scalars):
    """The in-place variant of a view op (`unsqueeze_`, `t_`, `transpose_`, `as_strided_`...): self's own
    shape, strides and offset become the view's, its data untouched; the storage's version moves on, as in
    PyTorch. Under autograd the view op's node, fed by self's old geometry, becomes self's history."""
    spec = SPECS[name]
    self = tensors[0]
    if not isinstance(self, Tensor):
        raise TypeError(f"{name}_(): expected a Tensor as self")
    _intercept.note_inplace(name)     # reftorch.compile: a tensor changing shape in place ends the captured region
    if self._vmap is not None and self._vmap[0].open:   # inside vmap: self becomes the view of the whole batch
        view = _functional.__dict__[name](*tensors, *scalars)   # (batched by vmap's rule, reftorch/func/_vmap.py)
        self._shape, self._strides, self._offset, self._vmap = view._shape, view._strides, view._offset, view._vmap
        self._storage.version += 1
        return self
    shape, strides, off = spec.geometry(self._shape, self._strides, self._offset, *scalars, inplace=True)
    _check_extent(self, shape, strides, off)
    check_inplace(self)
    tracked = grad_mode.state.enabled and self.requires_grad
    if tracked:
        old = Tensor._make(self._storage, self._offset, self._shape, self._strides, self.dtype, self.device)
        old.requires_grad, old.grad_fn, old._output_nr = True, self.grad_fn, self._output_nr
    self._shape, self._strides, self._offset = tuple(shape), tuple(strides), off
    self._storage.version += 1
    if tracked:
        new = Tensor._make(self._storage, off, self._shape, self._strides, self.dtype, self.device)
        record(spec, (old,), scalars, (new,))
        restride_history(self, new.grad_fn)
    return self


def composite_inplace(name, self, *args, **kwargs):
    """The in-place variant of a composite or array op (`clamp_`, `div_`, `scatter_`, `masked_fill_`...): the
    op's result, computed out of place before anything is written, copied into self, with
    PyTorch's casting and shape rules, and self's autograd history continued through the op."""
    if not isinstance(self, Tensor):
        raise TypeError(f"{name}_(): expected a Tensor as self")
    _intercept.note_inplace(name)
    src = self
    if grad_mode.state.enabled and any(isinstance(t, Tensor) and t.requires_grad
                                       for t in (self, *args, *kwargs.values())):
        check_inplace(self)
        src = _functional.clone(self)     # the op may save its input; the write below must not invalidate that
    res = getattr(_api, name)(src, *args, **kwargs)
    if not _can_cast(res.dtype, self.dtype):
        raise RuntimeError(f"result type {res.dtype.short} can't be cast to the desired output type "
                           f"{self.dtype.short}")
    if res._shape != self._shape:
        raise RuntimeError(f"output with shape [{', '.join(map(str, self._shape))}] doesn't match the broadcast "
                           f"shape [{', '.join(map(str, res._shape))}]")
    check_no_internal_overlap(self)
    return self.copy_(res)


def call_out(name, out, fn, *args, **kwargs):
    """fn(*args, **kwargs) written into `out` (a tensor, or a tuple of them for an op with several results), by
    PyTorch's rules: no autograd through out=, the result dtype must cast to out's without changing category (or
    be it: ops.yaml `out: {dtype: ...}`), out shares no memory with an input where the op refuses that (`overlap`),
    an out of another shape is resized (with PyTorch's warning unless it was empty). Returns out."""
    tensors = [out] if isinstance(out, Tensor) else list(out) if isinstance(out, (tuple, list)) else []
    inputs = [x for a in (*args, *kwargs.values()) for x in (a if isinstance(a, (tuple, list)) else (a,))
              if isinstance(x, Tensor)]
    if grad_mode.state.enabled and any(t.requires_grad for t in tensors + inputs):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, but "
                           "one of the arguments requires grad.")
    spec = SPECS[name]
    if spec.out_dtype == "compute" and isinstance(out, Tensor):
        kwargs = _out_computes(kwargs, out)
    if spec.out_overlap == "partial":       # TensorIterator's: before the dtypes are looked at
        _check_out_overlap(tensors, inputs, ("partial",))
    res = fn(*args, **kwargs)
    many = isinstance(res, tuple)
    outs = tuple(out) if many and isinstance(out, (tuple, list)) else (out,) if not many else None
    if outs is None or any(not isinstance(o, Tensor) for o in outs) or len(outs) != (len(res) if many else 1):
        what = "tuple of Tensors" if many else "Tensor"
        raise TypeError(f"{name}(): argument 'out' must be {what}, not {type(out).__name__}" if outs is None or not
                        all(isinstance(o, Tensor) for o in outs) else
                        f"{name}(): argument 'out' must be a tuple of {len(res)} Tensors, not {len(outs)}")
    results = res if many else (res,)
    _check_out_dtypes(spec, results, outs, inputs)
    if spec.out_overlap == "any":           # a structured kernel's assert_no_overlap: after its meta's dtype check
        _check_out_overlap([_resized_probe(o, r._shape) for r, o in zip(results, outs)], inputs, ("partial", "full"))
    for r, o in zip(results, outs):
        _write_out(r, o)
    return res.__class__(*outs) if many and hasattr(res, "_fields") else tuple(outs) if many else out


def _out_computes(kwargs, out):
    """kwargs with out's dtype as the dtype= of the computation (ops.yaml `out: {dtype: compute}`): PyTorch's
    reductions infer it from out when none is given, so sum(z, 1, out=real) casts z first (the imaginary part
    dropped) and sum(x, 1, out=int64) sums truncated values; a dtype= given must be out's."""
    given = kwargs.get("dtype")
    if given is None:
        return {**kwargs, "dtype": out.dtype}
    if D.as_dtype(given) is not out.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {CPP_NAMES[D.as_dtype(given).name]}, but got "
                           f"{CPP_NAMES[out.dtype.name]} instead")
    return kwargs


def _check_out_dtypes(spec, results, outs, inputs):
    """The out= dtype rule of the op (ops.yaml `out: {dtype:}`; by default TensorIterator's cast rule)."""
    for r, o in zip(results, outs):
        if spec.out_dtype == "complex" and not o.dtype.is_complex:
            raise RuntimeError(f"{spec.out_fname} expects a complex output tensor, but got {o.dtype.short}")
        if spec.out_dtype == "floating" and not o.dtype.is_floating_point:
            raise RuntimeError(f"{spec.out_fname} expects a floating point output tensor, but got {o.dtype.short}")
        if spec.out_exact == "real" and inputs and not inputs[0].dtype.is_complex and r.dtype != o.dtype:
            raise RuntimeError(f"Found dtype {o.dtype.short} but expected {r.dtype.short}")
        if spec.out_dtype == "exact" and r.dtype != o.dtype:
            raise RuntimeError(f"Expected out tensor to have dtype {CPP_NAMES[r.dtype.name]}, but got "
                               f"{CPP_NAMES[o.dtype.name]} instead")
        if spec.out_dtype == "input" and inputs and inputs[0].dtype != o.dtype:
            raise RuntimeError(f"Expected the dtype for input and out to match, but got {inputs[0].dtype.short} for "
                               f"input's dtype and {o.dtype.short} for out's dtype.")
        if not _can_cast(r.dtype, o.dtype):
            raise RuntimeError(f"result type {r.dtype.short} can't be cast to the desired output type {o.dtype.short}")


def _resized_probe(o, shape):
    """o as its meta function's resize leaves it, for the overlap check that follows: contiguous at its offset where
    its storage holds that many elements (a resize past the storage's end moves it to new memory)."""
    n = L.numel(shape)
    if o._shape == tuple(shape) or o.device.type != "cpu" or o._offset + n > o._storage.data.shape[0]:
        return o
    return Tensor._make(o._storage, o._offset, tuple(shape), L.contiguous_strides(shape), o.dtype)


def _check_out_overlap(outs, inputs, refused):
    """PyTorch's assert_no_internal_overlap of each out, then its overlap status against every input."""
    for o in outs:
        if not isinstance(o, Tensor):
            continue
        check_no_internal_overlap(o)
        if any(overlap(o, t) in refused for t in inputs):
            raise RuntimeError(OVERLAP)


def _write_out(r, o):
    """r's values into o, resized to r's shape first when it has another (PyTorch's resize_output)."""
    if o._shape != r._shape:
        if o.numel():
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(o._shape)}, "
                          f"which does not match the required output shape {list(r._shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning, stacklevel=4)
        if o.device.type == "cpu" and (type(o._storage) is Storage or
                                       o._offset + L.numel(r._shape) <= o._storage.data.shape[0]):
            # PyTorch's resize_: contiguous at o's offset in its own storage, grown in place when too small, so the
            # tensors sharing it (a conjugate view's base ...) see the values written
            o.resize_(r._shape)
        else:
            fresh = empty(r._shape, o.dtype) if o.device.type == "cpu" else _meta.empty(r._shape, o.dtype) \
                if o.device.type == "meta" else _cuda_d.empty(r._shape, o.dtype, o.device)
            o._storage, o._offset, o._shape, o._strides = fresh._storage, 0, fresh._shape, fresh._strides
    with grad_mode.no_grad():
        o.copy_(r)
