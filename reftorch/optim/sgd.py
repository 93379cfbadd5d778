"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize, as PyTorch's SGD."""
from __future__ import annotations

import reftorch as torch

from .optimizer import Optimizer, _check_fused, _check_fused_param, _use_grad_for_differentiable


class SGD(Optimizer):
    """Stochastic gradient descent.

    Per parameter with gradient g (negated when maximize):
        g <- g + weight_decay * p
        buf <- g (first step), else momentum * buf + (1 - dampening) * g
        g <- g + momentum * buf (nesterov) or buf
        p <- p - lr * g
    """

    _foreach_differentiable = True

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
            weight_decay, nesterov = group["weight_decay"], group["nesterov"]
            for p, grad in self._params_with_grad(group):
                if group["fused"]:
                    _check_fused_param(p)
                if group["maximize"]:
                    grad = -grad
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = torch.clone(grad).detach()
                        state["momentum_buffer"] = buf
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                    grad = grad.add(buf, alpha=momentum) if nesterov else buf
                p.add_(grad, alpha=-lr)
        return loss
