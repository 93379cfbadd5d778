"""Graph nodes: what one recorded op keeps for its backward.

A Node holds the generated backward function of its op, the values its formulas mention (nothing
more: a formula reading only `self.shape` keeps only the shape), the version of every saved tensor
at save time, and one edge (node, output_nr) per tensor input.
"""
from __future__ import annotations

from .._tensor import Tensor


class SavedTensor:
    """A tensor kept for backward, with the storage version it had when saved.

    An op's own output is kept without its grad_fn (that would be a reference cycle) and gets it
    back on unpacking, so double backward through `result` reaches the node again."""
    __slots__ = ("tensor", "version", "is_output", "requires_grad")

    def __init__(self, t, is_output=False):
        if is_output:
            alias = Tensor._make(t._storage, t._offset, t._shape, t._strides, t.dtype, t.device)
            self.tensor = alias
        else:
            self.tensor = t
        self.version = t._storage.version
        self.is_output = is_output
        self.requires_grad = t.requires_grad

    def unpack(self, node, output_nr=0):
        t = self.tensor
        if t._storage.version != self.version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: [torch.{_tensor_type(t)} [{', '.join(map(str, t._shape))}]], which is output "
                f"{output_nr} of {node.name()}, is at version {t._storage.version}; expected version "
                f"{self.version} instead. Hint: the backtrace further above can point at the op that failed "
                "to compute its gradient; enable anomaly detection with "
                "torch.autograd.set_detect_anomaly(True) to find it.")
        if self.is_output and self.requires_grad:
            out = Tensor._make(t._storage, t._offset, t._shape, t._strides, t.dtype, t.device)
            out.requires_grad = True
            out.grad_fn = node
            out._output_nr = output_nr
            return out
        return t


def _tensor_type(t):
    return {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor", "int32": "IntTensor",
            "bool": "BoolTensor", "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor"}.get(
        t.dtype.name, "Tensor")


class Node:
    """One recorded op. `next_functions` mirrors PyTorch's: ((node or None, output_nr), ...)."""
    __slots__ = ("op", "backward_fn", "saved", "next_functions", "input_meta", "n_outputs", "_pre_hooks",
                 "_hooks", "released", "trace", "list_arity", "__weakref__", "metadata")

    def __init__(self, op, backward_fn, saved, next_functions, input_meta, n_outputs=1, list_arity=None):
        self.op = op
        self.backward_fn = backward_fn
        self.saved = saved                  # {name: SavedTensor | value}
        self.next_functions = next_functions
        self.input_meta = input_meta        # [(shape, dtype)] per tensor input, for reducing broadcast grads
        self.n_outputs = n_outputs
        self._pre_hooks = None
        self._hooks = None
        self.released = False
        self.trace = None
        self.list_arity = list_arity        # how many inputs each tensor argument spreads over (Tensor[] args)
        self.metadata = {}

    def name(self):
        return f"{_camel(self.op)}Backward0"

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"

    def register_hook(self, fn):
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        return _Handle(self._hooks, fn)

    def register_prehook(self, fn):
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(fn)
        return _Handle(self._pre_hooks, fn)

    def apply(self, grads, fused):
        """Input gradients from output gradients, through the generated backward function."""
        if self.released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after "
                "they have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through "
                "the graph a second time or if you need to access saved tensors after calling backward.")
        from .. import _functional as F
        saved = {}
        for k, v in self.saved.items():
            saved[k] = v.unpack(self) if isinstance(v, SavedTensor) else (
                [s.unpack(self) for s in v] if isinstance(v, list) and v and isinstance(v[0], SavedTensor) else v)
        if "results" in saved and isinstance(saved["results"], list):
            saved["results"] = [self.saved["results"][i].unpack(self, i) for i in range(len(self.saved["results"]))]
        needs = [e is not None for e in self._arg_edges()]
        g = self.backward_fn(F, grads, saved, needs, fused)
        return self._spread(g)

    def _arg_edges(self):
        """One entry per tensor argument (a Tensor[] argument counts once): any edge needing a grad."""
        if self.list_arity is None:
            return [e if e is not None else None for e in self.next_functions]
        out, i = [], 0
        for n in self.list_arity:
            group = self.next_functions[i:i + n]
            out.append(True if any(e is not None for e in group) else None)
            i += n
        return out

    def _spread(self, g):
        if self.list_arity is None:
            return list(g)
        out = []
        for n, gi in zip(self.list_arity, g):
            if n == 1 and not isinstance(gi, (list, tuple)):
                out.append(gi)
            else:
                out.extend(gi if gi is not None else [None] * n)
        return out

    def release(self):
        self.saved = {}
        self.released = True


class AccumulateGrad:
    """The sink of a leaf: adds the incoming gradient into `leaf.grad`."""
    __slots__ = ("variable", "next_functions", "_pre_hooks", "_hooks", "__weakref__", "metadata")

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()
        self._pre_hooks = None
        self._hooks = None
        self.metadata = {}

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def __repr__(self):
        return f"<AccumulateGrad object at {id(self):#x}>"

    def register_hook(self, fn):
        if self._hooks is None:
            self._hooks = []
        self._hooks.append(fn)
        return _Handle(self._hooks, fn)

    def register_prehook(self, fn):
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(fn)
        return _Handle(self._pre_hooks, fn)


class _Handle:
    def __init__(self, hooks, fn):
        self.hooks, self.fn = hooks, fn

    def remove(self):
        if self.fn in self.hooks:
            self.hooks.remove(self.fn)


def _camel(name):
    return "".join(p.capitalize() for p in name.split("_"))
