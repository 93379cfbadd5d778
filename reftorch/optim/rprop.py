"""Rprop: resilient backpropagation (Riedmiller & Braun, 1993), as PyTorch's Rprop."""
from __future__ import annotations

import reftorch as torch

from .optimizer import Optimizer, _bump, _check_capturable, _check_lr, _scalar_step, _use_grad_for_differentiable


class Rprop(Optimizer):
    """Rprop: each element moves by its own step size, by the sign of its gradient only.

    Per element with gradient g (negated when maximize) and previous gradient g':
        s <- s * etaplus if g * g' > 0, s * etaminus if g * g' < 0, else s;  s clamped to step_sizes
        g <- 0 where g * g' < 0 (no move after a sign change);  p <- p - sign(g) * s;  g' <- g
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        lr = _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p, grad in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_step()
                    state["prev"] = torch.zeros_like(p)
                    state["step_size"] = torch.full_like(grad, group["lr"])
                if group["capturable"]:
                    _check_capturable([p, state["step"]])
                if group["maximize"]:
                    grad = -grad
                _bump(state["step"])
                prev, step_size = state["prev"], state["step_size"]
                sign = grad.mul(prev).sign()
                factor = torch.where(sign.gt(0), etaplus, torch.where(sign.lt(0), etaminus, 1.0)).to(sign.dtype)
                step_size.mul_(factor).clamp_(step_size_min, step_size_max)
                grad = torch.where(factor.eq(etaminus), 0.0, grad).to(grad.dtype)
                p.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
