"""Adamax: Adam with the infinity norm (Kingma & Ba, 2014, section 7), as PyTorch's Adamax."""
from __future__ import annotations

import reftorch as torch

from .optimizer import Optimizer, _bump, _check_capturable, _check_lr, _scalar_step, _use_grad_for_differentiable


class Adamax(Optimizer):
    """Adamax.

    Per parameter, at step t with gradient g (negated when maximize):
        g <- g + weight_decay * p
        m <- lerp(m, g, 1 - beta1);  u <- max(beta2 * u, |g| + eps)
        p <- p - lr / (1 - beta1^t) * m / u
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        lr = _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            for p, grad in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_step()
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_inf"] = torch.zeros_like(p)
                if group["capturable"]:
                    _check_capturable([p, state["step"]])
                if group["maximize"]:
                    grad = -grad
                step = _bump(state["step"])
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_inf.copy_(torch.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
                p.addcdiv_(exp_avg, exp_inf, value=-lr / (1 - beta1 ** step))
        return loss
