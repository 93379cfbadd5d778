"""Adadelta (Zeiler, 2012), as PyTorch's Adadelta."""
from __future__ import annotations

import reftorch as torch

from .optimizer import Optimizer, _bump, _check_capturable, _check_lr, _scalar_step, _use_grad_for_differentiable


class Adadelta(Optimizer):
    """Adadelta: an adaptive step with no base learning rate needed (lr scales it, default 1).

    Per parameter with gradient g (negated when maximize):
        g <- g + weight_decay * p
        v <- rho * v + (1 - rho) * g * g
        delta <- sqrt(u + eps) / sqrt(v + eps) * g
        u <- rho * u + (1 - rho) * delta * delta
        p <- p - lr * delta
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        lr = _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, rho, eps, weight_decay = group["lr"], group["rho"], group["eps"], group["weight_decay"]
            for p, grad in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_step()
                    state["square_avg"] = torch.zeros_like(p)
                    state["acc_delta"] = torch.zeros_like(p)
                if group["capturable"]:
                    _check_capturable([p, state["step"]], supports_xla=False)
                _bump(state["step"])
                if group["maximize"]:
                    grad = -grad
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_()
                if group["differentiable"]:
                    delta = delta.clone()       # sqrt_'s backward needs its output unchanged
                delta.div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
