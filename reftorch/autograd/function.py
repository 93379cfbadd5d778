"""autograd.Function: an op whose forward and backward the user writes.

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            y, = ctx.saved_tensors
            return grad * y

`Exp.apply(x)` runs forward without recording and, when an input requires grad, attaches one node
to the outputs. As in PyTorch, `ctx` *is* that node (an instance of `ExpBackward`), so it plugs
into the same engine as the ops of ops.yaml. A backward written with reftorch ops is itself
recorded under create_graph=True, so it can be differentiated again.
"""
from __future__ import annotations

import functools

from .._tensor import Tensor
import reftorch.autograd.forward_ad as forward_ad
import reftorch.autograd.grad_mode as grad_mode
from .anomaly_mode import record_trace
from .graph import Node, SavedTensor, gradient_edge
from .inplace import note_view, rebase_history


class FunctionCtx:
    """What forward leaves for backward: saved tensors and flags about inputs and outputs."""

    def save_for_backward(self, *tensors):
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is of type "
                                f"{type(t).__name__}")
        self.to_save = tensors

    def mark_dirty(self, *tensors):
        """These inputs were modified in place by forward (and are returned as outputs)."""
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        """These outputs get no gradient (they will not require grad)."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value):
        """With False, backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        if self._saved is None:             # not recorded (no input required grad): what was given
            return tuple(self.to_save)
        return tuple(None if s is None else s.unpack(self, nr) for s, nr in self._saved)


class BackwardCFunction(FunctionCtx, Node):
    """The node of one Function.apply; subclassed per Function as `<Name>Backward`."""
    _forward_cls = None

    def __init__(self):
        Node.__init__(self)
        self.to_save = ()
        self.dirty_tensors = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._saved = None                  # [(SavedTensor, output_nr) or None] once recorded
        self._arg_is_tensor = ()

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<torch.autograd.function.{self.name()} object at {id(self):#x}>"

    def apply(self, grads, create_graph=False, needs=None):
        if self.materialize_grads:
            grads = self._materialize(grads)
        result = self._forward_cls.backward(self, *grads)
        if not isinstance(result, tuple):
            result = (result,)
        n = len(self._arg_is_tensor)
        if len(result) > n and all(r is None for r in result[n:]):
            result = result[:n]
        if len(result) != n:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected {n}, "
                               f"got {len(result)})")
        in_grads = []
        for i, (g, is_tensor) in enumerate(zip(result, self._arg_is_tensor)):
            if is_tensor:
                in_grads.append(g)
            elif g is not None:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                   f"{i + 1}, but the corresponding forward input was not a Variable")
        return in_grads

    def release(self):
        for entry in self._saved or ():
            if entry is not None:
                entry[0].release()


class Function:
    """Base class of user-defined differentiable ops: define forward and backward as staticmethods
    (or forward without ctx plus setup_context(ctx, inputs, output)), then call `apply`."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._backward_cls = type(f"{cls.__name__}Backward", (BackwardCFunction,),
                                 {"_forward_cls": cls, "__module__": __name__})

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = cls._backward_cls()
        record = grad_mode.state.enabled and any(isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx.needs_input_grad = tuple(record and isinstance(a, Tensor) and a.requires_grad for a in args)
        tangents = forward_ad.tangents_of(args)     # (None outside a dual level, or with no dual input)
        with grad_mode.no_grad(), forward_ad.suspended_if(tangents is not None):
            if cls.setup_context is not Function.setup_context:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        for t in ctx.dirty_tensors:
            t._storage.version += 1
        if tangents is not None:    # forward mode: the output tangents are the Function's jvp (as PyTorch's)
            forward_ad.set_output_tangents(output, cls.jvp(ctx, *tangents))
        if not record:
            return output
        return _record(ctx, args, output)


def _record(ctx, args, output):
    """Make ctx the grad_fn of the outputs and save what forward asked to save."""
    tensor_args = [a for a in args if isinstance(a, Tensor)]
    ctx._arg_is_tensor = tuple(isinstance(a, Tensor) for a in args)
    ctx.next_functions = tuple(gradient_edge(a) if a.dtype.differentiable else (None, 0) for a in tensor_args)
    ctx.input_meta = [(a._shape, a.dtype) for a in tensor_args]
    is_tuple = isinstance(output, tuple)
    outputs = list(output) if is_tuple else [output]
    ctx.out_meta = [(o._shape, o.dtype) if isinstance(o, Tensor) else None for o in outputs]
    record_trace(ctx)
    originals = list(outputs)
    for i, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            continue
        differentiable = o.dtype.differentiable and not _contains(ctx.non_differentiable, o)
        if _contains(ctx.dirty_tensors, o):
            if o.grad_fn is None and o.requires_grad:
                raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
            if differentiable:
                rebase_history(o, ctx, i)
            continue
        if _contains(args, o):      # an input returned as is: the output is a new view of it
            o = outputs[i] = Tensor._make(o._storage, o._offset, o._shape, o._strides, o.dtype, o.device,
                                          o._base if o._base is not None else o)
        if differentiable:
            o.requires_grad = True
            o.grad_fn = ctx
            o._output_nr = i
            if o._base is not None:
                note_view(o)
    ctx._saved = [_save(t, originals, outputs, ctx) for t in ctx.to_save]
    ctx.to_save = ()
    return tuple(outputs) if is_tuple else outputs[0]


def _save(t, originals, outputs, ctx):
    """An output is saved without its grad_fn (it points back at ctx); anything else as it is."""
    if t is None:
        return None
    for i, (orig, out) in enumerate(zip(originals, outputs)):
        if (t is orig or t is out) and out.grad_fn is ctx:
            return SavedTensor(out, is_output=True), i
    return SavedTensor(t), 0


def _contains(seq, t):
    return any(x is t for x in seq)


def once_differentiable(fn):
    """Marks a backward that cannot itself be differentiated: it runs without recording."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            return fn(ctx, *args)
    return wrapper


class _NoDerivative(Function):
    """An op PyTorch records with no derivative formula: its outputs require grad when an input does, and a
    backward through them raises PyTorch's error."""

    @staticmethod
    def forward(ctx, op, compute, *operands):
        ctx.op = op
        return compute(*operands)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(f"derivative for aten::{ctx.op} is not implemented")


def without_derivative(op, compute, *operands):
    """compute(*operands), recorded as PyTorch records aten::op: with no derivative."""
    return _NoDerivative.apply(op, compute, *operands)
