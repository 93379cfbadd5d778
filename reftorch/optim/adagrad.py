"""Adagrad (with learning-rate decay and an initial accumulator value), as PyTorch's Adagrad."""
from __future__ import annotations

import reftorch as torch

from .optimizer import Optimizer, _bump, _check_fused, _check_fused_param, _use_grad_for_differentiable, _scalar_step


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011).

    Per parameter, at step t with gradient g (negated when maximize):
        g <- g + weight_decay * p
        clr <- lr / (1 + (t - 1) * lr_decay)
        s <- s + g * g;  p <- p - clr * g / (sqrt(s) + eps)
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)
        # Adagrad creates its state up front (PyTorch does too), so state_dict() is complete before a step
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _scalar_step(group["fused"])
                state["sum"] = torch.full_like(p, group["initial_accumulator_value"])

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, lr_decay, eps, weight_decay = group["lr"], group["lr_decay"], group["eps"], group["weight_decay"]
            for p, grad in self._params_with_grad(group):
                if group["fused"]:
                    _check_fused_param(p)
                state = self.state[p]
                if not state:       # a group added by add_param_group after construction
                    state["step"] = _scalar_step(group["fused"])
                    state["sum"] = torch.full_like(p, group["initial_accumulator_value"])
                if group["maximize"]:
                    grad = -grad
                step = _bump(state["step"])
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                clr = lr / (1 + (step - 1) * lr_decay)
                state["sum"].addcmul_(grad, grad, value=1)
                # out of place when autograd records the step: sqrt's backward needs its output
                std = state["sum"].sqrt() + eps if group["differentiable"] else state["sum"].sqrt().add_(eps)
                p.addcdiv_(grad, std, value=-clr)
        return loss
