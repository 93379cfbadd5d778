"""RAdam: Adam with a rectified adaptive learning rate (Liu et al., 2019), as PyTorch's RAdam."""
from __future__ import annotations

import reftorch as torch

from .nadam import _check_adam_args
from .optimizer import Optimizer, _bump, _check_capturable, _check_lr, _scalar_step, _use_grad_for_differentiable


class RAdam(Optimizer):
    """RAdam.

    Per parameter, at step t with gradient g (negated when maximize):
        p <- p * (1 - lr * weight_decay) if decoupled_weight_decay, else g <- g + weight_decay * p
        m <- lerp(m, g, 1 - beta1);  v <- beta2 * v + (1 - beta2) * g * g
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        if rho_t > 5: p <- p - lr * m / (1 - beta1^t) * r_t * sqrt(1 - beta2^t) / (sqrt(v) + eps)
        else:         p <- p - lr * m / (1 - beta1^t)
        with r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        lr = _check_lr(lr)
        _check_adam_args(eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
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
                    state["exp_avg_sq"] = torch.zeros_like(p)
                if group["capturable"]:
                    _check_capturable([p, state["step"]])
                if group["maximize"]:
                    grad = -grad
                step = _bump(state["step"])
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                # differentiable: a clone, as reftorch's div saves its operand and exp_avg moves in place next step
                corrected = (exp_avg.clone() if group["differentiable"] else exp_avg) / bias_correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    root = exp_avg_sq.sqrt()
                    root = root.add(eps) if group["differentiable"] else root.add_(eps)
                    adaptive = (bias_correction2 ** 0.5) / root
                    p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
                else:
                    p.add_(corrected * lr, alpha=-1.0)
        return loss
