"""Forward-mode AD (torch.autograd.forward_ad): dual tensors and the tangents every op propagates.

A dual tensor is a tensor carrying a tangent at the open dual level (`t._fw = (generation, tangent)`; a
tangent of a closed level is ignored, and dropped on exit). While a level is open the dispatcher hands
every op call to `call()` below (its one hook, `_dispatch._forward`): when some input has a tangent, the
op runs on the primals as usual (recorded for reverse mode as usual), then the output's tangent is
computed from the op's JVP in reftorch/kernels/transforms.py (generated from ops.yaml by
codegen/emit_forward.py) or, for ops with none there, by the generic fallback: the transpose of the VJP,

    jvp(t) = d/du Re< vjp(u), t >  (vjp(u) = the backward of the op at u, taken with create_graph; Re<a, b> =
                                     Re sum(conj(a) b), so complex tangents are right too)

which is right for every op whose backward formula is differentiable. Tangents are computed with the
hook suspended (one level: PyTorch does not nest forward levels either) and with ordinary, recorded
ops, so reverse mode differentiates through them (jacrev of a jvp) and a backward run inside a level
propagates tangents (jacfwd of a jacrev).
"""
from __future__ import annotations

import weakref
from collections import namedtuple

import reftorch._conj as _conj
import reftorch._creation as _creation
import reftorch._dispatch as _dispatch
import reftorch._dtype as _dtype
import reftorch._functional as F
from .._tensor import Tensor
from ..kernels.transforms import JVPS
import reftorch.autograd._grad as _grad
import reftorch.autograd.grad_mode as grad_mode

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]


class _State:
    level = None            # the open level (0), or None
    generation = 0          # tangents carry the generation of the level they were set at
    duals = None            # {id: weak reference} of the tensors given a tangent at the open level


_state = _State()


def _number(x):
    """A Python number as a tensor operand of a formula."""
    return _creation.tensor(x, dtype=_dtype.complex128 if isinstance(x, complex) else _dtype.float64)


# ------------------------------------------------------------------------------------ levels

def enter_dual_level():
    """Open a dual level (only one at a time, as in PyTorch) and return its number."""
    if _state.level is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _Hook.next, _dispatch._forward = _dispatch._forward, _Hook      # (under a vmap's hook, when one is installed)
    _conj.flip_tangent = flipped
    _state.level = 0
    _state.generation += 1
    _state.duals = {}
    return 0


def exit_dual_level(*, level=None):
    """Close the open level: every tangent set at it is dropped."""
    if level is None:
        level = _state.level
    if level is None or level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != _state.level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    for ref in _state.duals.values():
        t = ref()
        if t is not None:
            t._fw = None
    _state.duals = None
    _state.level = None
    _state.generation += 1
    _dispatch._forward = _Hook.next
    _conj.flip_tangent = None


class dual_level:
    """Context manager opening a dual level: `with dual_level(): ...`."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()


def _check_level(level, what):
    if _state.level is None:
        raise RuntimeError(f"Trying to {what} for forward AD but no level exists, make sure to enter_dual_level() "
                           "first.")
    if level is not None and level != _state.level:
        raise RuntimeError("Invalid level given to _make_dual")


# ------------------------------------------------------------------------------------ dual tensors

def _own_tangent(t):
    fw = t._fw
    if fw is None or fw[0] != _state.generation:
        return None
    return fw[1]


def tangent_of(t):
    """t's tangent at the open level, or None. A view without a tangent of its own has the same view of its
    base's tangent (as in PyTorch, where a view's tangent is a view of the base's: writes through either show
    in both)."""
    if not isinstance(t, Tensor):
        return None
    own = _own_tangent(t)
    if own is not None or t._base is None:
        return own
    return _view_of_base_tangent(t)


def _view_of_base_tangent(t):
    """t's geometry on its base's tangent, when the base has one laid out as the base is (else None)."""
    base = t._base
    bt = _own_tangent(base)
    if bt is None or bt._strides != base._strides or bt.dtype is not t.dtype or base.dtype is not t.dtype or \
            bt.device != t.device:
        return None
    offset = bt._offset + t._offset - base._offset
    last = offset + sum((n - 1) * st for n, st in zip(t._shape, t._strides) if n > 0)
    if offset < 0 or (t.numel() and last >= len(bt._storage.data)) or any(st < 0 for st in t._strides):
        return None
    return Tensor._make(bt._storage, offset, t._shape, t._strides, bt.dtype, bt.device,
                        base=bt if bt._base is None else bt._base)


def _write_tangent(t, tangent):
    """t was written in place and its tangent is now `tangent`: written into t's tangent, so its base and every
    other view of it see the change (a view whose base has no tangent gives the base a zero one first), as
    PyTorch's in-place ops update the tangent in place. A tangent that cannot be written (a leaf requiring grad,
    a broadcast one) is replaced instead."""
    cur = tangent_of(t)
    if cur is None and t._base is not None and _own_tangent(t._base) is None and t.dtype is t._base.dtype:
        base = t._base
        with _suspended():
            _set_tangent(base, _creation.empty_strided(base._shape, base._strides, dtype=base.dtype,
                                                    device=base.device).zero_())
        cur = tangent_of(t)
    if cur is None or (cur.requires_grad and cur.grad_fn is None) or \
            any(st == 0 and n > 1 for n, st in zip(cur._shape, cur._strides)):     # (a broadcast tangent)
        _set_tangent(t, tangent)
        return
    with _suspended():
        cur.copy_(tangent)


def _set_tangent(t, tangent):
    t._fw = (_state.generation, tangent)
    _state.duals[id(t)] = weakref.ref(t)      # (by id: a WeakSet would compare tensors with ==)


def make_dual(tensor, tangent, *, level=None):
    """A view of `tensor` carrying `tangent` at the open level (differentiable in reverse mode as tensor is)."""
    _check_level(level, "create a dual Tensor")
    if not tensor.dtype.differentiable:
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not tangent.dtype.differentiable:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tangent_of(tensor) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
                           f"level {_state.level} is not supported.")
    if tuple(tangent._shape) != tuple(tensor._shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor._shape)} while the given "
                           f"forward gradient is of size {list(tangent._shape)}.")
    with _suspended():
        dual = F.expand(tensor, tensor._shape)       # a view of the same layout, recorded for reverse mode
        if tangent._strides != tensor._strides and tensor.numel() > 1:     # laid out as the primal (PyTorch's
            # copy), so the tangents of views of the dual can be views of it
            tangent = _creation.empty_strided(tensor._shape, tensor._strides, dtype=tangent.dtype,
                                           device=tangent.device).copy_(tangent)
    _set_tangent(dual, tangent)
    return dual


UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = "What unpack_dual returns: the primal (a view without tangent) and the tangent."


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of a dual tensor; the tangent is None for a tensor without one (or with no level)."""
    if _state.level is None or (level is not None and level != _state.level):
        return UnpackedDualTensor(tensor, None)
    tangent = tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with _suspended():
        primal = F.expand(tensor, tensor._shape)
    return UnpackedDualTensor(primal, tangent)


def tangents_of(args):
    """For autograd.Function: one tangent per argument (zeros for tensors without one, None for the rest), or
    None when no argument has a tangent at an open level."""
    if _state.level is None:
        return None
    ts = [tangent_of(a) if isinstance(a, Tensor) else None for a in args]
    if all(t is None for t in ts):
        return None
    with _suspended():
        return [F.zeros_like(a) if t is None and isinstance(a, Tensor) else t for a, t in zip(args, ts)]


def set_output_tangents(output, tangents):
    """The tangents an autograd.Function's jvp gave, on its outputs."""
    outs = output if isinstance(output, tuple) else (output,)
    tangents = tangents if isinstance(tangents, tuple) else (tangents,)
    for o, t in zip(outs, tangents):
        if t is not None and isinstance(o, Tensor) and o.dtype.differentiable:
            with _suspended():
                _set_tangent(o, _fit(t, o))


class suspended_if:
    """_suspended when the condition holds (an autograd.Function's forward runs without tangents)."""

    def __init__(self, condition):
        self.inner = _suspended() if condition else None

    def __enter__(self):
        if self.inner is not None:
            self.inner.__enter__()

    def __exit__(self, *exc):
        if self.inner is not None:
            self.inner.__exit__(*exc)


class _suspended:
    """No tangent propagation inside (tangents are computed by ordinary ops); hooks installed before the
    level (a vmap's) stay."""

    def __enter__(self):
        self.saved, _dispatch._forward = _dispatch._forward, _Hook.next

    def __exit__(self, *exc):
        _dispatch._forward = self.saved


# ------------------------------------------------------------------------------------ propagation

def _below(run):
    """run, through the hook installed before the level (a vmap's), if any."""
    nxt = _Hook.next
    if nxt is None:
        return run
    return lambda spec, tensors, scalars: nxt.call(spec, tensors, scalars, run)


class _Hook:
    """What the dispatcher calls while a level is open (`_dispatch._forward`): one hook of a chain, whose
    `next` is the one installed before it (reftorch/func/_vmap.py's), or None."""
    next = None

    @staticmethod
    def call(spec, tensors, scalars, run):
        """run(spec, tensors, scalars) -- one native op -- and the tangent of its outputs."""
        run = _below(run)
        tangents = [tangent_of(x) if isinstance(x, Tensor) else None for x in tensors]
        if all(t is None for t in tangents):        # (not suspended: a vmap below runs its physical ops from the
            return run(spec, tensors, scalars)      # top of the chain, and they may carry tangents)
        with _suspended():
            out = run(spec, tensors, scalars)
            if not spec.differentiable:
                return out
            outs = out if isinstance(out, (tuple, list)) else (out,)
            touts = _jvp(spec, list(tensors), scalars, tangents, outs, run)
            if spec.kind != "view":     # only a view's tangent may alias an input's (in-place ops write tangents)
                shared = {id(t._storage) for t in tangents if t is not None}
                touts = [F.clone(t) if t is not None and id(t._storage) in shared else t for t in touts]
        for o, t in zip(outs, touts):
            if t is not None and isinstance(o, Tensor) and o.dtype.differentiable:
                _attach(o, _fit(t, o))
        return out

    @staticmethod
    def call_inplace(spec, tensors, scalars, run_inplace, run):
        """An in-place op: its out-of-place tangent (computed before the write), then the write."""
        nxt = _Hook.next
        if nxt is not None:
            run_inplace = (lambda s, t, c, _r=run_inplace: nxt.call_inplace(s, t, c, _r, run))
        tangents = [tangent_of(x) if isinstance(x, Tensor) else None for x in tensors]
        if all(t is None for t in tangents) or not spec.differentiable:
            if nxt is not None and spec.differentiable:     # inside vmap the tangents are on the physical tensors
                return run_inplace(spec, tensors, scalars)  # (func.jvp's duals): its physical write carries them
            with _suspended():
                return run_inplace(spec, tensors, scalars)
        self = tensors[0]
        tangent = tangent_of(_Hook.call(spec, tensors, scalars, run))
        if nxt is not None:     # a vmap below writes the physical tensors by ops through this hook: their
            run_inplace(spec, tensors, scalars)     # tangents (the ones vmap's outputs are read from) follow
        else:
            with _suspended():
                run_inplace(spec, tensors, scalars)
        if tangent is not None and self.dtype.differentiable:
            _write_tangent(self, _fit(tangent, self))
        return self

    @staticmethod
    def converted(src, out):
        """src.to(dtype) made out: the tangent follows, in out's dtype. Returns the result."""
        if _Hook.next is not None:
            out = _Hook.next.converted(src, out)
        t = tangent_of(src)
        if t is not None and out.dtype.differentiable:
            with _suspended():
                _attach(out, _fit(t, out))
        return out


    @staticmethod
    def assigned(self, new, op="inplace arithmetic"):
        """new's values are being written into self (copy_, an indexed write): self's tangent becomes new's.
        Returns whether a vmap below wrote the values (reftorch/_methods.py: _assign_with_history)."""
        written = _Hook.next is not None and _Hook.next.assigned(self, new, op)
        t = tangent_of(new)
        if t is not None and self.dtype.differentiable:
            with _suspended():
                t = _fit(t, self)
            _write_tangent(self, t)
        elif tangent_of(self) is not None:      # new values without a tangent: a zero one (written in place)
            with _suspended():
                _write_tangent(self, F.zeros_like(self))
        return written


def flipped(src, out, conj, neg):
    """out is src's view with its conjugate/negative bit flipped (reftorch/_conj.py, outside the dispatcher): its
    tangent is src's, flipped alike."""
    t = tangent_of(src)
    if t is None:
        return
    with _suspended():
        if conj:
            t = F.conj(t)
        if neg:
            t = F._neg_view(t)
        _attach(out, t)


def _attach(o, tangent):
    """o's tangent; also on the alias of o its node saved (so a backward inside the level sees it)."""
    _set_tangent(o, tangent)
    node = o.grad_fn
    saved = getattr(node, "saved", None)
    if saved:
        for value in saved.values():
            for st in (value if isinstance(value, list) else (value,)):
                if getattr(st, "is_output", False) and st.tensor is not None and st.tensor._storage is o._storage \
                        and st.tensor._offset == o._offset and st.tensor._shape == o._shape:
                    st.tensor._fw = o._fw


def _fit(t, o):
    """A tangent term in o's dtype and shape (elementwise terms may be broadcast)."""
    if t.dtype.is_complex and not o.dtype.is_complex:   # a real output of complex inputs (abs): the real part
        t = F.real(t)
    if t.dtype is not o.dtype:
        t = t.to(o.dtype)
    if tuple(t._shape) != tuple(o._shape):
        t = F.expand(t, o._shape)
    return t


def _jvp(spec, tensors, scalars, tangents, outs, run):
    """The outputs' tangents: from the generated JVP, else the fallback."""
    entry = JVPS.get(spec.name)
    if entry is None or spec.list_arg is not None:
        return _fallback(spec, tensors, scalars, tangents, outs, run)
    fn, how = entry
    # a Python float operand (x / 3 ** 0.5) enters the formulas as a 0-d tensor of its own precision, as the
    # backward's saved numbers do: alone in a formula's op it would otherwise promote to the default float32
    a = {n: _number(x) if isinstance(x, (float, complex)) else x for n, x in zip(spec.tensor_args, tensors)}
    a.update(zip(spec.scalar_names, scalars))
    t = dict(zip(spec.tensor_args, tangents))
    if how == "forward":
        for name, x in zip(spec.tensor_args, tensors):
            if t[name] is None and isinstance(x, Tensor):
                t[name] = F.zeros_like(x)
    elif how == "view":
        x, tx = tensors[0], tangents[0]
        if tx._strides != x._strides:       # the primal's layout, so the view is possible where it is on x
            tx = _creation.empty_strided(x._shape, x._strides, dtype=tx.dtype, device=tx.device).copy_(tx)
            t[spec.tensor_args[0]] = tx
            if _own_tangent(x) is not None:     # x's tangent from now on: views of x get views of it
                _set_tangent(x, tx)
    terms = [term for term in fn(F, a, t, outs[0]) if term is not None]
    if not terms:
        return [None]
    total = _fit(terms[0], outs[0])
    for term in terms[1:]:
        total = total + _fit(term, outs[0])
    return [total]


def _fallback(spec, tensors, scalars, tangents, outs, run):
    """jvp(t) = d/du <vjp(u), t>: the op run again on inputs that require grad, its backward taken at a
    dummy u with create_graph, and the product with the tangents differentiated with respect to u."""
    ins = list(tensors)
    wrt, tans = [], []
    for i, (x, t) in enumerate(zip(tensors, tangents)):
        if t is None:
            continue
        if not x.requires_grad:
            x = Tensor._make(x._storage, x._offset, x._shape, x._strides, x.dtype, x.device)
            x.requires_grad_(True)
            ins[i] = x
        wrt.append(x)
        tans.append(t)
    outer = grad_mode.is_grad_enabled() and (any(x.requires_grad for x in tensors if isinstance(x, Tensor)) or
                                             any(t.requires_grad for t in tans))
    with grad_mode.enable_grad():
        res = run(spec, ins, scalars)
        res = res if isinstance(res, (tuple, list)) else (res,)
        diff = [i for i, r in enumerate(res) if isinstance(r, Tensor) and r.requires_grad]
        if not diff:
            return [None] * len(outs)
        us = [F.ones_like(res[i]).requires_grad_(True) for i in diff]     # (any point: vjp is linear in u;
        # ones keep formulas finite that take log(|grad|), as logcumsumexp's does)
        gs = _grad.grad([res[i] for i in diff], wrt, us, create_graph=True, allow_unused=True)
        total = None
        for g, t in zip(gs, tans):
            if g is not None:
                term = F.real(F.conj(g) * t).sum()    # Re<t, vjp(u)>, whose gradient in u is J t
                total = term if total is None else total + term
        if total is None or not total.requires_grad:
            return [F.zeros_like(res[i]) if i in diff else None for i in range(len(outs))]
        jv = _grad.grad([total], us, create_graph=outer, allow_unused=True)
    out = [None] * len(outs)
    for i, j in zip(diff, jv):
        out[i] = j if j is not None else F.zeros_like(res[i])
    return out
