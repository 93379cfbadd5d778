"""reftorch.utils.checkpoint: trade compute for memory by recomputing a segment's forward in backward.

use_reentrant=True is torch's CheckpointFunction: an autograd.Function whose forward runs under
no_grad and whose backward reruns the forward with grad and backpropagates through it (gradients of
tensors the function closes over, such as a module's parameters, are accumulated into their .grad by
that inner backward, which is why this variant cannot serve torch.autograd.grad).

use_reentrant=False: torch builds it on saved-tensor hooks, which reftorch does not have. Here the
forward runs once with grad, the tensors its graph reaches outside the segment (the arguments and
the leaves it closes over) become the inputs of one autograd.Function node, and the segment's own
graph -- with every activation it saved -- is dropped. Backward reruns the forward and asks
autograd.grad for the gradients of those inputs, so kwargs, non-tensor outputs, nested outputs,
torch.autograd.grad and double backward all work. The memory profile is torch's: only the inputs
and outputs of the segment stay alive between forward and backward. Unlike torch, a non-leaf tensor
that the function reaches only through a closure (not an argument) is not a boundary: the walk goes
on into the graph that made it, and the recomputation backpropagates through that graph itself
(retain_graph) -- right as long as the outer backward has not freed it first, which happens when the
same non-leaf is also used outside the checkpoint; pass such tensors as arguments.

Both variants stash the cpu generator's state (and cuda's, when an argument is on cuda) and restore
it for the recomputation, so dropout draws the same mask twice.
"""
from __future__ import annotations

import contextlib
import warnings

import reftorch.autograd as autograd
import reftorch.random as _random
from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.graph import AccumulateGrad

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "noop_context_fn",
           "detach_variable", "check_backward_validity", "set_checkpoint_debug_enabled"]

_DEFAULT_DETERMINISM_MODE = "default"
_debug_enabled = None


class CheckpointError(RuntimeError):
    pass


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Turn debug mode on (True), off (False) or back to each call's own `debug` (None) inside the block."""
    global _debug_enabled
    previous, _debug_enabled = _debug_enabled, enabled
    try:
        yield
    finally:
        _debug_enabled = previous


def detach_variable(inputs):
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


# ------------------------------------------------------------------------------------------- RNG

class _RngStash:
    """The generator states at the forward, replayed around the recomputation when asked."""

    def __init__(self, preserve, tensors):
        self.preserve = preserve
        self.cuda_devices = sorted({t.device.index or 0 for t in tensors
                                    if isinstance(t, Tensor) and t.device.type == "cuda"})
        if preserve:
            self.cpu_state = _random.get_rng_state()
            self.cuda_states = [_random.cuda_get_rng_state(d) for d in self.cuda_devices]

    @contextlib.contextmanager
    def replay(self):
        if not self.preserve:
            yield
            return
        with _random.fork_rng(devices=self.cuda_devices, enabled=True):
            _random.set_rng_state(self.cpu_state)
            for d, state in zip(self.cuda_devices, self.cuda_states):
                _random.cuda_set_rng_state(state, d)
            yield


# ----------------------------------------------------------------------------------- reentrant

class CheckpointFunction(autograd.Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.rng = _RngStash(preserve_rng_state, args)
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        detached = detach_variable(tuple(inputs))
        with ctx.rng.replay(), grad_mode.enable_grad():
            outputs = ctx.run_function(*detached)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in detached)


# ------------------------------------------------------------------------------- non-reentrant

def _flatten(obj, out):
    """The tensors of a nested output (tuples, lists, dicts) in order, and a rebuilder of its structure."""
    if isinstance(obj, Tensor):
        out.append(obj)
        return lambda ts: ts.pop(0)
    if isinstance(obj, (tuple, list)):
        parts = [_flatten(o, out) for o in obj]
        kind = type(obj)
        if hasattr(obj, "_fields"):      # a namedtuple
            return lambda ts: kind(*[p(ts) for p in parts])
        return lambda ts: kind([p(ts) for p in parts])
    if isinstance(obj, dict):
        parts = [(k, _flatten(v, out)) for k, v in obj.items()]
        kind = type(obj)
        return lambda ts: kind((k, p(ts)) for k, p in parts)
    return lambda ts: obj


def _boundary(outputs, arg_copies):
    """The tensors the segment's graph reaches from outside it: the argument copies (leaves made for
    the run) and the leaves it closes over, such as parameters; node names in graph order for debug."""
    copies = {id(c) for c in arg_copies}
    found, seen, names = [], set(), []
    stack = [o.grad_fn for o in outputs if o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            if id(node.variable) not in copies:
                found.append(node.variable)
            continue
        names.append(node.name())
        stack.extend(fn for fn, _ in node.next_functions)
    return found, names


def _tensor_arguments(args, kwargs):
    """The tensors among the positional and keyword arguments (the segment's inputs), in order."""
    return [a for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)]


def _substitute(args, kwargs, tensors):
    """args and kwargs with their tensors replaced, in _tensor_arguments' order, by `tensors`."""
    it = iter(tensors)
    args = [next(it) if isinstance(a, Tensor) else a for a in args]
    kwargs = {k: next(it) if isinstance(v, Tensor) else v for k, v in kwargs.items()}
    return args, kwargs


def _meta(t, mode):
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device} if mode == "default" else None


class _Segment:
    """What the non-reentrant node remembers between forward and backward (no activations)."""

    def __init__(self, function, args, kwargs, rng, recompute_context, mode, debug):
        self.function, self.args, self.kwargs, self.rng = function, args, kwargs, rng
        self.recompute_context, self.mode, self.debug = recompute_context, mode, debug
        self.n_args = 0
        self.forward_meta = self.forward_ops = None

    def rerun(self, inputs):
        """The recomputation: fresh leaves for the tensor arguments, or under create_graph the arguments
        themselves (so the gradients it returns are functions of them); closed-over tensors as they are."""
        create_graph = grad_mode.is_grad_enabled()
        copies = [t if create_graph else t.detach().requires_grad_(t.requires_grad) for t in inputs[:self.n_args]]
        args, kwargs = _substitute(self.args, self.kwargs, copies)
        with self.rng.replay(), grad_mode.enable_grad(), self.recompute_context:
            out = self.function(*args, **kwargs)
        flat = []
        _flatten(out, flat)
        return copies, flat

    def check(self, flat):
        recomputed = [_meta(t, self.mode) for t in flat]
        if self.mode == "none" or recomputed == self.forward_meta:
            return
        mismatched = "".join(f"tensor at position {i}:\nsaved metadata: {a}\nrecomputed metadata: {b}\n"
                             for i, (a, b) in enumerate(zip(self.forward_meta, recomputed)) if a != b)
        if len(recomputed) != len(self.forward_meta):
            mismatched += f"the forward returned {len(self.forward_meta)} tensors, the recomputation {len(recomputed)}\n"
        detail = ""
        if self.debug:
            _, names = _boundary([t for t in flat if t.requires_grad], [])
            detail = (f"\nOperators of the original forward: {self.forward_ops}\n"
                      f"Operators of the recomputation: {names}\n")
        raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have different "
                              f"metadata than during the forward pass.\n{mismatched}.\n{detail}")


class _NonReentrant(autograd.Function):
    @staticmethod
    def forward(ctx, segment, outputs, *inputs):
        ctx.segment = segment
        ctx.differentiable = [needs for _, needs in outputs]
        ctx.mark_non_differentiable(*[o for o, needs in outputs if not needs])
        ctx.save_for_backward(*inputs)
        return tuple(o for o, _ in outputs)

    @staticmethod
    def backward(ctx, *grads):
        segment = ctx.segment
        inputs = ctx.saved_tensors
        copies, flat = segment.rerun(inputs)
        segment.check(flat)
        targets = copies + list(inputs[segment.n_args:])
        pairs = [(o, g) for o, g, d in zip(flat, grads, ctx.differentiable)
                 if d and g is not None and o.requires_grad]
        result = [None] * len(targets)
        if pairs:
            wanted = [i for i, t in enumerate(targets) if t.requires_grad]
            got = autograd.grad([o for o, _ in pairs], [targets[i] for i in wanted], [g for _, g in pairs],
                                allow_unused=True, create_graph=grad_mode.is_grad_enabled(),
                                retain_graph=True)   # a closed-over non-leaf's own graph is still to come
            for i, g in zip(wanted, got):
                result[i] = g
        return (None, None) + tuple(result)


def _checkpoint_non_reentrant(function, preserve, context_fn, determinism_check, debug, args, kwargs):
    forward_context, recompute_context = context_fn()
    tensor_args = _tensor_arguments(args, kwargs)
    segment = _Segment(function, args, kwargs, _RngStash(preserve, tensor_args), recompute_context,
                       determinism_check, debug)
    segment.n_args = len(tensor_args)
    if not grad_mode.is_grad_enabled():      # nothing will be backpropagated: just run it
        with forward_context:
            return function(*args, **kwargs)
    copies = [t.detach().requires_grad_(t.requires_grad) for t in tensor_args]
    run_args, run_kwargs = _substitute(args, kwargs, copies)
    with forward_context:
        out = function(*run_args, **run_kwargs)
    flat = []
    rebuild = _flatten(out, flat)
    closed_over, segment.forward_ops = _boundary([t for t in flat if t.requires_grad], copies)
    segment.forward_meta = [_meta(t, determinism_check) for t in flat]
    if not flat:
        return out
    outputs = [(t.detach(), t.requires_grad) for t in flat]
    del out, flat           # the segment's graph and the activations it saved go with them
    return rebuild(list(_NonReentrant.apply(segment, outputs, *(tensor_args + closed_over))))


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False, early_stop=True, **kwargs):
    """Run function(*args, **kwargs) without keeping its activations; recompute them in backward.
    (early_stop is accepted for torch's signature: the recomputation here always runs whole.)"""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
            "without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], "
                         f"but got {determinism_check}")
    debug = debug if _debug_enabled is None else _debug_enabled
    return _checkpoint_non_reentrant(function, preserve, context_fn, determinism_check, debug, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Checkpoint all but the last of `segments` equal runs of a Sequential (or list of modules)."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
            "parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1)(input)
