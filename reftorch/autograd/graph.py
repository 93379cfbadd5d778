"""The backward graph: nodes, the edges between them, and the tensors they save.

A Node is one step of the backward pass. `next_functions` holds one edge (node, output_nr) per
input of the forward op -- (None, 0) where that input needs no gradient -- exactly as PyTorch
shows it. Kinds of node:

  OpNode         an op of ops.yaml: runs the backward function generated from its formulas
  AccumulateGrad the sink of a leaf tensor: adds the incoming gradient into `leaf.grad`
  FunctionNode   a user's autograd.Function (function.py)
  CopySlices...  the history of a tensor written in place through a view (inplace.py)

A saved tensor remembers the storage version it had when saved; using it after an in-place
change raises PyTorch's error. After a backward without retain_graph the saved tensors are
dropped, so the intermediate values they kept alive can be freed.
"""
from __future__ import annotations

import math
import re
import weakref

import numpy as np

from .._layout import contiguous_strides
from .._tensor import Storage, Tensor
from ..kernels import derivatives as _derivatives
from ..kernels.api import SPECS
import reftorch.autograd.anomaly_mode as anomaly_mode

NO_EDGE = (None, 0)
# the raw requires_grad slot (per-op cost: the checking property that _methods.bind() installs is for users)
_requires_grad = Tensor.__dict__["requires_grad"].__get__


def gradient_edge(t):
    """The edge that receives tensor t's gradient: its grad_fn, a leaf's AccumulateGrad, or NO_EDGE."""
    fn = t.grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    if not _requires_grad(t):
        return NO_EDGE
    return (grad_accumulator(t), 0)


def grad_accumulator(leaf):
    """The leaf's AccumulateGrad. The leaf refers to it weakly (the node refers to the leaf), so the
    two never form a reference cycle; a new one is made when the old graph is gone."""
    acc = leaf._accum
    if acc.__class__ is _weakref_type:
        acc = acc()
    elif isinstance(acc, weakref.ref):
        acc = acc()
    if acc is None:
        acc = AccumulateGrad(leaf)
        leaf._accum = _weakref_type(acc)
    return acc


_weakref_type = weakref.ref


# ------------------------------------------------------------------------------------ saved tensors

def _freed_error():
    return RuntimeError(
        "Trying to backward through the graph a second time (or directly access saved tensors after they have "
        "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
        "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
        "if you need to access saved tensors after calling backward.")


INFERENCE_SAVED = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
                   "mode in computation tracked by autograd. To work around this, you can make a clone to get a normal "
                   "tensor and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.")


class SavedTensor:
    """A tensor kept for backward, with the storage version it had when saved.

    A node's own output is kept as an alias without grad_fn (the output points to the node, so
    keeping the output itself would be a reference cycle); unpacking gives it the node back, so
    double backward through `result` reaches the node again."""
    __slots__ = ("tensor", "version", "is_output")

    def __init__(self, t, is_output=False, version=None):
        if is_output:
            t = Tensor._make(t._storage, t._offset, t._shape, t._strides, t.dtype, t.device)
        elif t._storage.inference:
            raise RuntimeError(INFERENCE_SAVED)
        self.tensor = t
        self.version = t._storage.version if version is None else version
        self.is_output = is_output

    def unpack(self, node, output_nr=0):
        t = self.tensor
        if t is None:
            raise _freed_error()
        if t._storage.version != self.version:
            if self.is_output:
                raise _version_error(t, self.version, node, output_nr)
            raise _version_error(t, self.version, t.grad_fn, t._output_nr)
        if self.is_output:
            out = Tensor._make(t._storage, t._offset, t._shape, t._strides, t.dtype, t.device)
            if t._fw is not None:       # a forward-AD tangent set on the output (autograd/forward_ad.py)
                out._fw = t._fw
            if t.dtype.differentiable:
                out.requires_grad = True
                out.grad_fn = node
                out._output_nr = output_nr
            return out
        return t

    def release(self):
        self.tensor = None


def _version_error(t, expected, grad_fn, output_nr):
    which = f", which is output {output_nr} of {_short_name(grad_fn)}," if grad_fn is not None else ""
    if anomaly_mode.is_anomaly_enabled():
        hint = ("Hint: the backtrace further above shows the operation that failed to compute its gradient. "
                "The variable in question was changed in there or anywhere later. Good luck!")
    else:
        hint = ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
                "with torch.autograd.set_detect_anomaly(True, check_nan=False).")
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"[torch.{_tensor_type(t)} [{', '.join(map(str, t._shape))}]]{which} is at version "
        f"{t._storage.version}; expected version {expected} instead. {hint}")


def _short_name(node):
    """MulBackward0 -> Mul, as PyTorch names the op in its version error."""
    return re.sub(r"Backward\d*$", "", node.name())


def _tensor_type(t):
    return f"{t.dtype.short}Tensor"


def _unpack_value(value, node):
    if isinstance(value, SavedTensor):
        return value.unpack(node)
    if isinstance(value, list) and value and isinstance(value[0], SavedTensor):
        return [v.unpack(node) for v in value]
    return value


def _release_value(value):
    if isinstance(value, SavedTensor):
        value.release()
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, SavedTensor):
                v.release()


# ------------------------------------------------------------------------------------ nodes

def _zeros(ref, shape, dtype):
    """A zero gradient on ref's device (a cpu one when no output received a gradient)."""
    if ref is not None:
        return ref.new_zeros(shape, dtype=dtype)
    return Tensor._make(Storage(np.zeros(max(1, math.prod(shape)), dtype.np)), 0, tuple(shape),
                        contiguous_strides(shape), dtype)


class Node:
    """One step of the backward pass.

    Subclasses define name() and apply(grads, create_graph, needs) -> one gradient (or None) per
    edge of next_functions, from the gradients of the node's outputs. The engine sums incoming
    gradients, runs hooks, reduces broadcast gradients to input_meta's shapes and follows edges."""
    __slots__ = ("next_functions", "input_meta", "out_meta", "__weakref__", "__dict__")
    # rarely set, so class defaults (an instance that sets one keeps it in its __dict__): a recorded op's node is
    # made without writing them
    _pre_hooks = None                           # fn(grad_outputs) -> new grad_outputs or None
    _hooks = None                               # fn(grad_inputs, grad_outputs) -> new grad_inputs or None
    _tensor_pre_hooks = None                    # {output_nr: [fn(grad) -> new grad or None]} from Tensor.register_hook
    _retains_grad = None                        # {output_nr: weakref to the tensor} from Tensor.retain_grad
    trace = None                                # forward traceback, in anomaly mode
    _metadata = None

    def __init__(self, next_functions=(), input_meta=(), out_meta=()):
        next_functions = tuple(next_functions)
        if None in next_functions:
            next_functions = tuple(NO_EDGE if e is None else e for e in next_functions)
        self.next_functions = next_functions
        self.input_meta = list(input_meta)      # (shape, dtype) per edge: gradients are reduced to these
        self.out_meta = list(out_meta)          # (shape, dtype) per output: missing gradients become zeros

    @property
    def n_outputs(self):
        return max(len(self.out_meta), 1)

    @property
    def metadata(self):
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"

    def apply(self, grads, create_graph=False, needs=None):
        raise NotImplementedError

    def __call__(self, *grads):
        return tuple(self.apply(list(grads)))

    def release(self):
        """Drop saved tensors (after a backward without retain_graph)."""

    def _needs(self, needs):
        return needs if needs is not None else [e[0] is not None for e in self.next_functions]

    def _materialize(self, grads):
        """Zeros for outputs that received no gradient (formulas expect every grad)."""
        if all(g is not None for g in grads):
            return grads
        ref = next((g for g in grads if g is not None), None)      # the node's outputs share a device
        return [_zeros(ref, *meta) if g is None and meta is not None else g for g, meta in zip(grads, self.out_meta)]

    # hooks: PyTorch's Node.register_hook / register_prehook
    def register_hook(self, fn):
        if self._hooks is None:
            self._hooks = []
        return RemovableHandle.add(self._hooks, fn)

    def register_prehook(self, fn):
        if self._pre_hooks is None:
            self._pre_hooks = []
        return RemovableHandle.add(self._pre_hooks, fn)

    def _add_tensor_pre_hook(self, output_nr, fn):
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = {}
        return RemovableHandle.add(self._tensor_pre_hooks.setdefault(output_nr, []), fn)


class OpNode(Node):
    """A recorded op of ops.yaml: the generated backward function and the values its formulas read."""
    __slots__ = ("op", "backward_fn", "saved", "list_arity")

    def __init__(self, op, backward_fn, saved, next_functions, input_meta, out_meta, list_arity=None):
        # Node.__init__ inlined: one is made per recorded op, so its cost is per-op overhead
        next_functions = tuple(next_functions)
        if None in next_functions:
            next_functions = tuple(NO_EDGE if e is None else e for e in next_functions)
        self.next_functions = next_functions
        self.input_meta = input_meta if input_meta.__class__ is list else list(input_meta)
        self.out_meta = out_meta if out_meta.__class__ is list else list(out_meta)
        self.op = op
        self.backward_fn = backward_fn
        self.saved = saved                  # {name: SavedTensor | [SavedTensor] | plain value}
        self.list_arity = list_arity        # edges per tensor argument, when one is a Tensor[]

    def name(self):
        names = _NODE_NAMES.get(self.op)
        if names is None:
            return f"{_camel(self.op)}Backward0"
        if names.__class__ is str:
            return names
        ranks = ",".join(str(len(shape)) if dtype is not None else "_" for shape, dtype in self.input_meta)
        if ranks in names:
            return names[ranks]
        for key, name in names.items():         # keyed by an argument: the name when it was given
            if self.saved.get(key) is not None:
                return name
        return names.get("default") or f"{_camel(self.op)}Backward0"

    def apply(self, grads, create_graph=False, needs=None):
        for g in grads:
            if g is None:
                grads = self._materialize(grads)
                break
        if needs is None and self.list_arity is None:
            needs = [e[0] is not None for e in self.next_functions]
        else:
            needs = self._arg_needs(self._needs(needs))
        users = _SAVE_USERS.get(self.op)
        saved = {}
        for key, value in self.saved.items():
            if users is not None and key in users and not any(needs[i] for i in users[key]):
                saved[key] = None   # read only by formulas that do not run: not unpacked (nor version-checked)
            elif value.__class__ is SavedTensor:
                saved[key] = value.unpack(self)
            elif key == "results" and isinstance(value, list):
                saved[key] = [s.unpack(self, i) for i, s in enumerate(value)]
            else:
                saved[key] = _unpack_value(value, self)
        g = self.backward_fn(F, grads, saved, needs, not create_graph)
        return list(g) if self.list_arity is None else self._spread(g)

    def _arg_needs(self, needs):
        """One flag per tensor argument (a Tensor[] argument wants grads when any of its tensors does)."""
        if self.list_arity is None:
            return list(needs)
        out, i = [], 0
        for n in self.list_arity:
            out.append(any(needs[i:i + n]))
            i += n
        return out

    def _spread(self, g):
        """Per-argument gradients back to one per edge (a Tensor[] argument's list is spread out)."""
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
        for value in self.saved.values():
            if value.__class__ is SavedTensor:
                value.tensor = None
            else:
                _release_value(value)

    def __getattr__(self, attr):
        """PyTorch's grad_fn._saved_<name>: a saved value (raises once freed)."""
        if attr.startswith("_saved_"):
            key = attr[len("_saved_"):]
            saved = object.__getattribute__(self, "saved")
            if key in saved:
                return _unpack_value(saved[key], self)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")



class AccumulateGrad(Node):
    """The sink of a leaf: adds the incoming gradient into `leaf.grad` (see engine.accumulate)."""
    __slots__ = ("variable",)

    def __init__(self, variable):
        # Node.__init__ inlined (a leaf gets a new one whenever its previous graph is gone)
        self.next_functions = ()
        self.input_meta = []
        self.out_meta = [(variable._shape, variable.dtype)]
        self.variable = variable

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def __repr__(self):
        return f"<AccumulateGrad object at {id(self):#x}>"


class RemovableHandle:
    """What register_hook returns: `.remove()` takes the hook out again (also a context manager)."""

    def __init__(self, hooks, fn):
        self.hooks, self.fn = hooks, fn

    @classmethod
    def add(cls, hooks, fn):
        hooks.append(fn)
        return cls(hooks, fn)

    def remove(self):
        for i, h in enumerate(self.hooks):
            if h is self.fn:
                del self.hooks[i]
                return

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_Handle = RemovableHandle


# reftorch._functional, whose ops the backward formulas call. It binds itself here when it loads: it imports the
# tensor core, which imports this module, so this module cannot import it.
F = None


def bind_functional(module):
    global F
    F = module


# PyTorch's node names where they differ from the op's (ops.yaml `grad_fn:`)
_NODE_NAMES = {name: spec["grad_fn"] for name, spec in SPECS.items() if "grad_fn" in spec}
_SAVE_USERS = _derivatives.SAVE_USERS     # saved tensor -> the arguments whose formulas read it
# ops whose formulas give a real input a complex gradient PyTorch refuses (ops.yaml r2c_grad: false)
NO_R2C_GRAD = frozenset(name for name, spec in SPECS.items() if spec.get("r2c_grad") is False)
# a composite's result nodes are renamed "op#Name" (reftorch/_dispatch.py named_composite): they read Name
_NODE_NAMES.update({key: key.partition("#")[2] for key in (
    f"{name}#{n}" for name, spec in SPECS.items() if spec["kind"] == "composite" and "grad_fn" in spec
    for n in (spec["grad_fn"].values() if isinstance(spec["grad_fn"], dict) else [spec["grad_fn"]]))})


def _camel(name):
    return "".join(p.capitalize() for p in name.split("_"))
