"""Nested Python containers of tensors (tuples, lists, dicts, namedtuples), flattened and rebuilt, as
torch.utils._pytree does for torch.func: leaves in order, and a spec that rebuilds the structure."""
from __future__ import annotations


class TreeSpec:
    """The structure of a tree: its node type, context (dict keys, namedtuple class) and children."""
    __slots__ = ("type", "context", "children")

    def __init__(self, type_, context, children):
        self.type, self.context, self.children = type_, context, children

    @property
    def num_leaves(self):
        return 1 if self.type is None else sum(c.num_leaves for c in self.children)

    def __eq__(self, other):
        return isinstance(other, TreeSpec) and (self.type, self.context, self.children) == \
            (other.type, other.context, other.children)

    def __repr__(self, indent=0):
        if self.type is None:
            return "*"
        name = self.type.__name__
        ctx = "None" if self.context is None else repr(list(self.context)) if self.type is dict else \
            repr(self.context)
        inner = (",\n" + " " * (indent + 2)).join(c.__repr__(indent + 2) for c in self.children)
        return f"TreeSpec({name}, {ctx}, [{inner}])"


LEAF = TreeSpec(None, None, ())


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def tree_flatten(tree):
    """(leaves, spec)."""
    leaves = []

    def go(x):
        if _is_namedtuple(x):
            return TreeSpec(type(x), type(x), [go(v) for v in x])
        if isinstance(x, (tuple, list)):
            return TreeSpec(type(x), None, [go(v) for v in x])
        if isinstance(x, dict):
            return TreeSpec(dict, tuple(x), [go(v) for v in x.values()])
        leaves.append(x)
        return LEAF

    return leaves, go(tree)


def tree_unflatten(leaves, spec):
    it = iter(leaves)

    def go(s):
        if s.type is None:
            return next(it)
        kids = [go(c) for c in s.children]
        if s.type is dict:
            return dict(zip(s.context, kids))
        if s.context is not None:           # a namedtuple
            return s.context(*kids)
        return s.type(kids)

    return go(spec)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)
