"""backward() and grad(): the engine's entry points (reftorch/autograd/engine.py runs the graph)."""
from __future__ import annotations

import warnings

import numpy as np

import reftorch._functional as F
from .engine import run_backward as _run_backward
from .._tensor import Storage, Tensor
from .._layout import contiguous_strides


def _as_tuple(x):
    if x is None:
        return None
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _make_grads(outputs, grads):
    """The gradient to start from at each output: the one given, or 1 for a scalar output (PyTorch's
    _make_grads, with its error messages)."""
    if grads is None:
        grads = (None,) * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grads)} gradients")
    out = []
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if isinstance(g, Tensor):
            if tuple(g._shape) != tuple(o._shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of torch.Size("
                                   f"{list(g._shape)}) and output[{i}] has a shape of torch.Size({list(o._shape)}).")
            out.append(g)
        elif g is None:
            if o.requires_grad:
                if o.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not o.dtype.is_floating_point:
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {o.dtype}")
                if o.device.type == "cpu":     # ones_like, without the factory's argument handling
                    out.append(Tensor._make(Storage(np.ones(1, o.dtype.np)), 0, o._shape,
                                            contiguous_strides(o._shape), o.dtype))
                else:
                    out.append(F.ones_like(o))
            else:
                out.append(None)
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulate the gradients of tensors into the .grad of the leaves (of `inputs` only, when given)."""
    tensors = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    inputs = _as_tuple(inputs)
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    grads = _make_grads(tensors, _as_tuple(grad_tensors))
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        warnings.warn("Using backward() with create_graph=True will create a reference cycle between the parameter "
                      "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
                      "creating the graph to avoid this. If you have to use this function, make sure to reset the "
                      ".grad fields of your parameters to None after use to break the cycle and avoid the leak.",
                      stacklevel=3)
    _run_backward(tensors, grads, retain_graph, create_graph, inputs=inputs, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs with respect to inputs, returned (not accumulated into .grad)."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("grad requires non-empty inputs.")
    grads = _make_grads(outputs, _as_tuple(grad_outputs))
    if retain_graph is None:
        retain_graph = create_graph
    result = _run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs, allow_unused=allow_unused,
                           accumulate=False)
    if materialize_grads:
        result = tuple(F.zeros_like(i) if r is None else r for r, i in zip(result, inputs))
    return result


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """is_grads_batched: each grad_output's leading dim is a batch of vectors; one vector-Jacobian product per
    entry, stacked (torch runs them under vmap: the values are these)."""
    outputs, grad_outputs = _as_tuple(outputs), _as_tuple(grad_outputs)
    if grad_outputs is None or any(g is None for g in grad_outputs):
        raise RuntimeError("is_grads_batched=True needs a batched grad_output for every output")
    if any(g.ndim == 0 for g in grad_outputs):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ "
                         "to convert a 0-dim tensor to a number")
    n = grad_outputs[0].shape[0]
    for i, (o, g) in enumerate(zip(outputs, grad_outputs)):
        if g.shape[0] != n or tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of each grad_output as "
                               "the batch dimension. The sizes of the remaining dimensions are expected to match the "
                               f"shape of corresponding output, but a mismatch was detected: grad_output[{i}] has a "
                               f"shape of torch.Size({list(g.shape[1:])}) and output[{i}] has a shape of "
                               f"torch.Size({list(o.shape)}). If you only want some tensors in `grad_output` to be "
                               "considered batched, consider using vmap.")
    rows = [grad(outputs, inputs, tuple(g[b] for g in grad_outputs), retain_graph=True if b < n - 1 else retain_graph,
                 create_graph=create_graph, allow_unused=True, materialize_grads=materialize_grads)
            for b in range(n)]
    result = tuple(None if rows and rows[0][i] is None else F.stack([r[i] for r in rows])
                   for i in range(len(_as_tuple(inputs))))
    if not allow_unused and any(r is None for r in result):
        raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. Set "
                           "allow_unused=True if this is the desired behavior.")
    return result
