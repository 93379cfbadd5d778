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
    real() of a conjugate view is the plain real view; imag() gives the negated imaginary parts as a copy (PyTorch's
    is a view with its negative bit, which reftorch does not have); view_as_real and a dtype view raise PyTorch's
    errors;
  * an in-place op on a conjugate view computes on the resolved values and writes the conjugate of the result into
    the storage, so the view reads the new values and its base sees them conjugated (torch writes through the same
    way). With autograd recording such a write is refused (the history of the base would be needed);
  * Tensor._array() (printing, tolist, item, __array__, saving) reads a conjugate view's values conjugated;
    .numpy() refuses, with PyTorch's message.
"""
from __future__ import annotations

from ._elementwise import elementwise
from ._spec import SPECS
from ._tensor import Tensor
import reftorch.autograd.grad_mode as grad_mode
from .autograd.record import record

used = False        # some conjugate view was made in this process (until then nothing below runs)


def raw(t):
    """t's storage, offset and strides without the bit: the stored values (the conjugates of what t reads)."""
    return Tensor._make(t._storage, t._offset, t._shape, t._strides, t.dtype, t.device,
                        t._base if t._base is not None else t)


def conj_view(x):
    """torch.conj: a real tensor itself; a complex one as a view with the bit flipped (conj of a conjugate view is the
    plain view of the storage). Its gradient is the conjugate of the output's (ConjBackward0)."""
    global used
    if not x.dtype.is_complex:
        return x
    used = True
    out = raw(x)
    if not x._conj:
        out._conj = True
    if grad_mode.state.enabled and x.requires_grad:
        record(SPECS["_conj_physical"], (x,), (), (out,))
        out.grad_fn.op = "conj#ConjBackward0"       # PyTorch's node name (ops.yaml conj: grad_fn)
    return out


def resolved(t):
    """A conjugate view's values in storage of their own, differentiable as a clone of t; any other tensor itself."""
    if not isinstance(t, Tensor) or not t._conj:
        return t
    with grad_mode.no_grad():
        out = elementwise(SPECS["_conj_physical"], [raw(t)], ())
    if grad_mode.state.enabled and t.requires_grad:
        record(SPECS["clone"], (t,), (None,), (out,))
    return out


def resolve_args(tensors):
    """The op's tensor arguments with conjugate views resolved (lists of tensors too); the same list when none is."""
    out = None
    for i, t in enumerate(tensors):
        if isinstance(t, Tensor):
            if t._conj:
                out = out or list(tensors)
                out[i] = resolved(t)
        elif isinstance(t, (list, tuple)) and any(isinstance(e, Tensor) and e._conj for e in t):
            out = out or list(tensors)
            out[i] = type(t)(resolved(e) for e in t)
    return tensors if out is None else out


def write_through(dest, compute, others=()):
    """An in-place op on a conjugate view: compute() gives the new values (from resolved arguments), and their
    conjugates go into the storage. Returns dest, as in-place ops do."""
    if grad_mode.state.enabled and (dest.requires_grad or dest._base is not None and dest._base.requires_grad
                                    or any(isinstance(t, Tensor) and t.requires_grad for t in others)):
        raise RuntimeError("reftorch: an in-place operation on a conjugate view of a tensor that requires grad is not "
                           "supported; use x.resolve_conj() first")
    with grad_mode.no_grad():
        values = compute()
        stored = elementwise(SPECS["_conj_physical"], [values], ())
        raw(dest).copy_(stored)         # the plain view of the same storage (any device; bumps the version)
    return dest


def view_source(spec_name, x):
    """The tensor a view op on the conjugate view x reads (see the module docstring): x itself for the views that
    keep the bit and for real(); the resolved values for imag(); PyTorch's errors for the other reinterpreting ones."""
    if spec_name == "imag":
        return resolved(x)
    if spec_name == "view_as_real":
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate "
                           "tensor so you can view it as real, use self.resolve_conj(); however, be warned that the "
                           "resulting tensor will NOT alias the original.")
    return x


def dtype_view_error():
    return RuntimeError("torch.Tensor.view is not supported for conjugate view tensors when converting to a different "
                        "dtype.")
