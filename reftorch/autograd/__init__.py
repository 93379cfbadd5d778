"""reftorch.autograd: the engine's public face (backward, grad, Function, gradcheck, grad modes)."""
from __future__ import annotations

from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,  # noqa: F401
                        is_inference_mode_enabled)
from .engine import run_backward as _run_backward
from .graph import Node  # noqa: F401


def _as_list(x):
    if x is None:
        return None
    from .._tensor import Tensor
    return [x] if isinstance(x, Tensor) else list(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    from .. import _functional as F
    grads = [F.ones_like(t) if g is None else g for t, g in zip(tensors, grads)]
    for t, g in zip(tensors, grads):
        if g is None and t.numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
    if retain_graph is None:
        retain_graph = create_graph
    _run_backward(tensors, grads, retain_graph, create_graph, inputs=_as_list(inputs), allow_unused=True,
                  accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of outputs with respect to inputs, returned rather than accumulated into .grad."""
    outputs = _as_list(outputs)
    single = not isinstance(inputs, (list, tuple))
    inputs = _as_list(inputs)
    from .. import _functional as F
    grad_outputs = _as_list(grad_outputs) or [None] * len(outputs)
    gs = []
    for o, g in zip(outputs, grad_outputs):
        if g is None:
            if o.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = F.ones_like(o)
        gs.append(g)
    for o in outputs:
        if not o.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    res = _run_backward(outputs, gs, retain_graph, create_graph, inputs=inputs,
                        allow_unused=allow_unused, accumulate=False)
    if materialize_grads:
        res = tuple(F.zeros_like(i) if r is None else r for r, i in zip(res, inputs))
    return res


def set_detect_anomaly(mode=True, check_nan=True):
    from . import grad_mode as gm
    gm.state.anomaly = bool(mode)


class detect_anomaly:
    def __init__(self, check_nan=True):
        pass

    def __enter__(self):
        from . import grad_mode as gm
        self.prev = gm.state.anomaly
        gm.state.anomaly = True

    def __exit__(self, *a):
        from . import grad_mode as gm
        gm.state.anomaly = self.prev
