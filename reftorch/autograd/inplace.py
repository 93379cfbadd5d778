"""In-place ops meet autograd: rewriting a tensor's history after it was overwritten.

An op that writes into tensor t in place is recorded as a node N whose input 0 is t's old value;
afterwards N is t's history ("rebase"). When t is a view, the values changed live in its base too,
so the base's history must change as well -- PyTorch's CopySlices:

    base.grad_fn = CopySlices(old history of base, N)
        backward(g): the view's slice of g goes through N; N's gradient for the old view value
                     replaces that slice, the rest of g flows to the old history of base unchanged
    view.grad_fn = AsStridedBackward0(base)      # the view is now read out of the new base

Other live views of the same base are read out of the new base the same way. The view-to-base
geometry is kept as an index array: element i of the view is element index[i] of the base.
"""
from __future__ import annotations

import weakref

import numpy as np

from .._tensor import Tensor
import reftorch.autograd.graph as graph
from .graph import Node, gradient_edge
from .engine import _conform


def rebase_history(t, node, output_nr=0):
    """t was just overwritten in place by the op recorded as node: make node t's history."""
    base = t._base
    if base is None or base._storage is not t._storage:
        _set_history(t, node, output_nr)
        _refresh_views(t, skip=None)
        return
    if output_nr != 0:
        raise RuntimeError("in-place modification of a view as output other than the first of an "
                           "autograd.Function is not supported")
    index = _index_in_base(base, t)
    _set_history(base, CopySlices(base, index, node), 0)
    _set_history(t, AsStridedBackward0(base, t, index), 0)
    _refresh_views(base, skip=t)


def reread_history(view):
    """view (a conjugate/negative view, reftorch/_conj.py) was written through in place: it now reads out of its
    base's new value (through its bits)."""
    _set_history(view, AsStridedBackward0(view._base, view, _index_in_base(view._base, view)), 0)


def restride_history(t, node):
    """t's geometry changed in place (unsqueeze_, t_, as_strided_): no value changed, in t or in its base, so
    node (the view op from t's old geometry) simply becomes t's history; its base keeps its own."""
    _set_history(t, node, 0)


def assign_history(t, src):
    """t was overwritten with src's values (copy_, an indexed write): t's history becomes
    CopyBackwards, which hands the whole gradient to src and none to t's old value."""
    rebase_history(t, CopyBackwards(t, src))


def _set_history(t, node, output_nr):
    old, old_nr = t.grad_fn, t._output_nr
    t.requires_grad = True
    t.grad_fn = node
    t._output_nr = output_nr
    if t._retains_grad and old is not None and old._retains_grad:    # retain_grad follows the tensor
        ref = old._retains_grad.pop(old_nr, None)
        if ref is not None:
            if node._retains_grad is None:
                node._retains_grad = {}
            node._retains_grad[output_nr] = ref


# ------------------------------------------------------------------------------------ views of a base

def note_view(view):
    """Remember a view that records history, so an in-place write to its base can refresh it."""
    base = view._base
    views = base.__dict__.get("_autograd_views")
    if views is None:
        views = base.__dict__["_autograd_views"] = {}
    key = id(view)
    views[key] = weakref.ref(view, lambda _, views=views, key=key: views.pop(key, None))


def _refresh_views(base, skip):
    views = base.__dict__.get("_autograd_views")
    if not views:
        return
    for ref in list(views.values()):
        v = ref()
        if v is None or v is skip or v.grad_fn is None or v._base is not base:
            continue
        _set_history(v, AsStridedBackward0(base, v, _index_in_base(base, v)), 0)


def _index_in_base(base, view):
    """For each element of the view, its row-major position among the base's elements."""
    data = base._storage.data
    isz = 8
    position = np.full(data.shape[0], -1, np.int64)
    np.ndarray(base._shape, np.int64, position, base._offset * isz, tuple(s * isz for s in base._strides))[...] = \
        np.arange(base.numel(), dtype=np.int64).reshape(base._shape)
    return np.ndarray(view._shape, np.int64, position, view._offset * isz,
                      tuple(s * isz for s in view._strides)).copy()


# ------------------------------------------------------------------------------------ the nodes

class CopySlices(Node):
    """The history of a base after one of its views was written in place by the op `fn`."""

    def __init__(self, base, index, fn):
        super().__init__([gradient_edge(base)] + list(fn.next_functions[1:]),
                         [(base._shape, base.dtype)] + list(fn.input_meta[1:]),
                         [(base._shape, base.dtype)])
        self.fn = fn
        self.index = index

    def name(self):
        return "CopySlices"

    def apply(self, grads, create_graph=False, needs=None):
        needs = self._needs(needs)
        g = self._materialize(grads)[0]
        slice_grad = _gather(g, self.index)
        res = list(self.fn.apply([slice_grad], create_graph, [needs[0]] + list(needs[1:])))
        base_grad = None
        if needs[0]:
            keep = np.ones(g.numel(), g.dtype.np)
            keep[self.index.reshape(-1)] = 0
            base_grad = g * Tensor._from_array(keep.reshape(g._shape))
            if res[0] is not None:
                written = _conform(res[0], self.fn.input_meta[0], self.fn, 0)
                base_grad = base_grad + _scatter_add(written, self.index, tuple(g._shape))
        return [base_grad] + res[1:]

    def release(self):
        self.fn.release()


class CopyBackwards(Node):
    """The history of a tensor after copy_(src): its old value gets no gradient, src gets it all."""

    def __init__(self, target, src):
        super().__init__([gradient_edge(target), gradient_edge(src)],
                         [(target._shape, target.dtype), (src._shape, src.dtype)], [(target._shape, target.dtype)])

    def apply(self, grads, create_graph=False, needs=None):
        return [None, grads[0]]


class AsStridedBackward0(Node):
    """The history of a view read out of its base: its gradient lands on its elements of the base."""

    def __init__(self, base, view, index):
        super().__init__([gradient_edge(base)], [(base._shape, base.dtype)], [(view._shape, view.dtype)])
        self.index = index
        self.conj, self.neg = view._conj, view._neg     # a view reading its elements conjugated/negated

    def name(self):
        return "ConjBackward0" if self.conj else "NegViewBackward0" if self.neg else "AsStridedBackward0"

    def apply(self, grads, create_graph=False, needs=None):
        g = self._materialize(grads)[0]
        if self.conj:
            g = g.conj()
        if self.neg:
            g = -g
        return [_scatter_add(g, self.index, tuple(self.input_meta[0][0]))]


# the differentiable (twice) moves between a view's elements and its base's, as registry ops
def _gather(x, index):
    """x's elements at (row-major) positions `index`, shaped like index."""
    return graph.F.take(x, graph.F.as_tensor(index, device=x.device))


def _scatter_add(src, index, shape):
    """Zeros of `shape` with src added at (row-major) positions `index`."""
    F = graph.F
    return F.put(F.zeros(shape, dtype=src.dtype, device=src.device), F.as_tensor(index, device=src.device), src, True)
