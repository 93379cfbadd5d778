"""NAdam: Adam with Nesterov momentum (Dozat, 2016), as PyTorch's NAdam."""
from __future__ import annotations

import reftorch as torch

from .optimizer import Optimizer, _bump, _check_capturable, _check_lr, _scalar_step, _use_grad_for_differentiable


def _check_adam_args(eps, betas, weight_decay):
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class NAdam(Optimizer):
    """NAdam.

    Per parameter, at step t with gradient g (negated when maximize):
        p <- p * (1 - lr * weight_decay) if decoupled_weight_decay, else g <- g + weight_decay * p
        mu_t = beta1 * (1 - 0.96 ** (t * momentum_decay) / 2);  mu_product <- mu_product * mu_t
        m <- lerp(m, g, 1 - beta1);  v <- beta2 * v + (1 - beta2) * g * g
        denom = sqrt(v / (1 - beta2^t)) + eps
        p <- p - lr * (1 - mu_t) / (1 - mu_product) * g / denom
               - lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        lr = _check_lr(lr)
        _check_adam_args(eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay, momentum_decay = group["lr"], group["eps"], group["weight_decay"], \
                group["momentum_decay"]
            for p, grad in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_step()
                    state["mu_product"] = torch.tensor(1.0, dtype=torch.float32)
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                if group["capturable"]:
                    _check_capturable([p, state["mu_product"], state["step"]])
                if group["maximize"]:
                    grad = -grad
                step = _bump(state["step"])
                if weight_decay != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * weight_decay)
                    else:
                        grad = grad.add(p, alpha=weight_decay)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                mu_product = state["mu_product"]
                mu_product.mul_(mu)         # a float32 tensor, as PyTorch keeps it
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                second = exp_avg_sq.clone() if group["differentiable"] else exp_avg_sq    # (as for exp_avg below)
                denom = second.div(1 - beta2 ** step).sqrt()
                if group["differentiable"]:
                    # out of place, and with the coefficients as tensors, so that autograd records them
                    denom = denom.add(eps)
                    p.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
                    # (a clone: reftorch's mul saves both operands, and exp_avg moves in place next step)
                    p.addcdiv_(exp_avg.clone() * (-lr * mu_next / (1.0 - mu_product * mu_next)), denom)
                    continue
                denom.add_(eps)
                product = mu_product.item()
                p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - product))
                p.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - product * mu_next))
        return loss
