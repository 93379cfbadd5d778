"""What the transforms share: how deep they are nested, the leaves they made, and what their results look
like to a caller outside every transform."""
from __future__ import annotations

import weakref

from .._tensor import Tensor
from ..autograd.graph import AccumulateGrad
from ._pytree import tree_map


class _Depth:
    n = 0       # transforms running (nested ones must keep their graphs for the outer one)


depth = _Depth()
ours = {}   # {id: weak reference} of the leaves transforms made (a result reaching only these is detached at the
#            end; by id: a WeakSet would compare tensors with ==)


def add_ours(t):
    key = id(t)
    ours[key] = weakref.ref(t, lambda _, key=key: ours.pop(key, None))


def _is_ours(t):
    ref = ours.get(id(t))
    return ref is not None and ref() is t


def reaches_other_leaves(outputs, mine=()):
    """Whether the outputs' graph reaches a leaf requiring grad that no transform made (a closed-over one)."""
    mine = {id(t) for t in mine}
    seen, stack = set(), [o.grad_fn for o in outputs if isinstance(o, Tensor) and o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            if id(node.variable) not in mine and not _is_ours(node.variable):
                return True
            continue
        stack.extend(e[0] for e in node.next_functions)
    return False


def finish(tree):
    """A transform's results as a caller outside every transform sees them: tensors whose graph reaches only
    the transforms' own leaves are detached (the graph kept for nested transforms is of no use there)."""
    return tree_map(lambda t: t.detach() if isinstance(t, Tensor) and t.requires_grad and
                    not reaches_other_leaves([t]) else t, tree)
