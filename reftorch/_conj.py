"""PyTorch's lazy conjugate bit (issue 25): `z.conj()` of a complex tensor is a view of the same storage whose values
read conjugated (`is_conj()` True); `resolve_conj()` materialises it, `conj_physical()` always computes.

The design, chosen to keep the core unchanged where no conjugate view exists:
  * the bit is `Tensor._conj` (a class attribute False; a conjugate view sets its own), and `used` turns True
    the first time one is made: until then the dispatcher's only cost is reading that flag;
  * resolve on read: the dispatcher (_dispatch.call / call_inplace / call_out) hands every op the conjugate views
    among its arguments resolved -- a conjugated copy whose autograd node is clone's (grad flows back as it is, as
    PyTorch's CloneBackward0 from resolve_conj) -- so no kernel, plan or formula knows about the bit. The price is one
    extra pass (a conjugated copy) per read of a conjugate view; conjugating inside the elementwise kernels would save
    it but needs a second set of kernels or a flag in every plan, and was not measured (the choice keeps the hot paths
    untouched, which is where the dispatcher's speed lives);
  * view ops (_array.view) pass the bit on to their result, so x.conj().T / x.mH / x.adjoint() stay views;
    real() of a conjugate view is the plain real view; imag() is the imaginary parts' view with the negative bit
    (below); view_as_real and a dtype view raise PyTorch's errors;
  * an in-place op on a conjugate view computes on the resolved values and writes the conjugate of the result into
    the storage, so the view reads the new values and its base sees them conjugated (torch writes through the same
    way; out= into a conjugate view is the same write, _inplace.call_out's copy_);
  * Tensor._array() (printing, tolist, item, __array__, saving) reads a conjugate view's values conjugated;
    .numpy() refuses, with PyTorch's message.

The negative bit (torch._neg_view, is_neg, resolve_neg) is the same machinery: `Tensor._neg`, a view whose values
read negated; conj().imag of a complex tensor is such a view of its imaginary parts. A view may carry both bits
(read value = -conj(stored)); resolve_conj() of a conjugate view and resolve_neg() of a negative one materialise
both, as PyTorch's do. Under autograd an in-place op on such a view rewrites the base's history (autograd/
inplace.py: CopySlices of the stored values, and the view read back out of the new base through its bits).
complex32 (reftorch/_chalf.py) takes the same slow path: `used` turns True when that dtype is first named.
"""
from __future__ import annotations

import numpy as np

import reftorch._chalf as _chalf
import reftorch._dtype as D
from ._args import check_inplace
from ._elementwise import elementwise
from ._spec import SPECS
from ._tensor import Tensor
import reftorch.autograd.grad_mode as grad_mode
from .autograd.inplace import assign_history, reread_history
from .autograd.record import record

used = False        # some conjugate or negative view, or complex32, was made in this process (until then nothing
                    # below runs)


def _enable():
    global used
    used = True


D._on_chalf.append(_enable)


# autograd/forward_ad.py's `flipped` while a dual level is open (it sets this: it imports the core, which imports
# this module)
flip_tangent = None


def raw(t):
    """t's storage, offset and strides without the bits: the stored values (what t reads, before conj/neg)."""
    return Tensor._make(t._storage, t._offset, t._shape, t._strides, t.dtype, t.device,
                        t._base if t._base is not None else t)


def _flipped(x, conj, neg, node):
    """A view of x's storage with its bits flipped as asked; differentiable as the op named by node."""
    global used
    used = True
    out = raw(x)
    out._conj, out._neg = x._conj ^ conj, x._neg ^ neg
    if grad_mode.state.enabled and x.requires_grad:
        record(SPECS["_conj_physical" if conj else "neg"], (x,), (), (out,))
        out.grad_fn.op = node       # PyTorch's node name
    if flip_tangent is not None:        # a dual level is open: the tangent is flipped alike
        flip_tangent(x, out, conj, neg)
    return out


def conj_view(x):
    """torch.conj: a real tensor itself; a complex one as a view with the conjugate bit flipped (conj of a conjugate
    view is the plain view of the storage). Its gradient is the conjugate of the output's (ConjBackward0)."""
    if not x.dtype.is_complex:
        return x
    return _flipped(x, True, False, "conj#ConjBackward0")      # (ops.yaml conj: grad_fn)


def neg_view(x):
    """torch._neg_view: a view with the negative bit flipped, of any dtype (NegViewBackward0: the gradient negated)."""
    return _flipped(x, False, True, "_neg_view#NegViewBackward0")


def _apply_bits(t, conj, neg):
    """t's values conjugated and/or negated, computed (no graph; complex32 through complex64, reftorch/_chalf.py)."""
    for name, on in (("_conj_physical", conj), ("neg", neg)):
        if on:
            t = elementwise(SPECS[name], [t], ()) if t.dtype is not D.complex32 else \
                _chalf.call(SPECS[name], [t], (), elementwise)
    return t


def resolved(t):
    """A conjugate or negative view's values in storage of their own (both bits resolved), differentiable as a
    clone of t; any other tensor itself."""
    if not isinstance(t, Tensor) or not (t._conj or t._neg):
        return t
    with grad_mode.no_grad():
        out = _apply_bits(raw(t), t._conj, t._neg)
    if grad_mode.state.enabled and t.requires_grad:
        record(SPECS["clone"], (t,), (None,), (out,))
    return out


def resolved_conj(t):
    """torch.resolve_conj: a conjugate view materialised (its negative bit too); any other tensor itself."""
    return resolved(t) if t._conj else t


def resolved_neg(t):
    """torch.resolve_neg: a negative view materialised (its conjugate bit too); any other tensor itself."""
    return resolved(t) if t._neg else t


def _has_bits(t):
    return isinstance(t, Tensor) and (t._conj or t._neg)


def resolve_args(tensors):
    """The op's tensor arguments with conjugate/negative views resolved (lists of tensors too); the same list when
    none is."""
    out = None
    for i, t in enumerate(tensors):
        if isinstance(t, Tensor):
            if t._conj or t._neg:
                out = out or list(tensors)
                out[i] = resolved(t)
        elif isinstance(t, (list, tuple)) and any(_has_bits(e) for e in t):
            out = out or list(tensors)
            out[i] = type(t)(resolved(e) for e in t)
    return tensors if out is None else out


def write_through(dest, compute, others=()):
    """An in-place op on a conjugate/negative view: compute() gives the new values (from resolved arguments), and
    their conjugates/negations go into the storage. Under autograd the write is recorded as PyTorch's is: the
    stored values' graph becomes the base's history (CopySlices) and dest reads out of the new base through its
    bits. Returns dest, as in-place ops do."""
    target = raw(dest)
    if not (grad_mode.state.enabled and (dest.requires_grad or dest._base is not None and dest._base.requires_grad
                                         or any(isinstance(t, Tensor) and t.requires_grad for t in others))):
        with grad_mode.no_grad():
            target.copy_(_apply_bits(compute(), dest._conj, dest._neg))     # (any device; bumps the version)
        return dest
    check_inplace(dest)             # PyTorch's refusals (a view of a leaf that requires grad ...)
    values = compute()
    stored = values
    if dest._conj:
        stored = stored.conj_physical()
    if dest._neg:
        stored = -stored
    with grad_mode.no_grad():
        val = stored._array()
        arr = target._raw_array()
        arr[...] = val.copy() if np.may_share_memory(val, target._storage.data) else val
    target._storage.version += 1
    assign_history(target, stored)      # the base's history: CopySlices of the stored values
    reread_history(dest)                # dest: read out of the new base, through its bits
    return dest


def view_bits(spec, x):
    """The (conj, neg) bits of a view op's result on a view x with bits (see the module docstring), by the op's
    ops.yaml `bits:` rule: kept by default (a view to another dtype refuses bits: dtype_view_error); `real` drops
    the conjugate bit, `imag` turns it into a flip of the negative bit (the imaginary parts of conj(z) are -Im z);
    `no_conj` is PyTorch's error for view_as_real of a conjugate view."""
    rule = spec.bits
    if rule == "real":
        return False, x._neg
    if rule == "imag":
        return False, x._neg ^ x._conj
    if rule == "no_conj" and x._conj:
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate "
                           "tensor so you can view it as real, use self.resolve_conj(); however, be warned that the "
                           "resulting tensor will NOT alias the original.")
    return x._conj, x._neg


def dtype_view_error(x):
    if x._conj:
        return RuntimeError("torch.Tensor.view is not supported for conjugate view tensors when converting to a "
                            "different dtype.")
    return RuntimeError("torch.Tensor.view is not supported for tensors with negative bit set when converting to a "
                        "different dtype.")
