"""ASGD: averaged stochastic gradient descent (Polyak & Juditsky, 1992), as PyTorch's ASGD."""
from __future__ import annotations

import reftorch as torch

from .optimizer import Optimizer, _bump, _check_capturable, _check_lr, _scalar_step, _use_grad_for_differentiable


class ASGD(Optimizer):
    """ASGD: SGD with a decaying step eta, whose average of iterates is kept in state["ax"].

    Per parameter, at step t with gradient g (negated when maximize):
        g <- g + weight_decay * p
        p <- p * (1 - lambd * eta) - eta * g
        ax <- ax + mu * (p - ax)      (ax <- p while mu == 1)
        eta <- lr / (1 + lambd * lr * t) ** alpha;  mu <- 1 / max(1, t - t0)
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        lr = _check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
            weight_decay = group["weight_decay"]
            for p, grad in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _scalar_step()
                    state["eta"] = torch.tensor(float(lr), dtype=torch.float32)
                    state["mu"] = torch.ones((), dtype=torch.float32)
                    state["ax"] = torch.zeros_like(p)
                if group["capturable"]:
                    _check_capturable([p, state["step"]])
                if group["maximize"]:
                    grad = -grad
                step = _bump(state["step"])
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                eta = state["eta"].item()
                p.mul_(1 - lambd * eta)
                p.add_(grad, alpha=-eta)
                ax = state["ax"]
                if state["mu"].item() != 1:
                    ax.add_(p.sub(ax).mul_(state["mu"]))
                else:
                    ax.copy_(p)
                state["eta"].fill_(lr / ((1 + lambd * lr * step) ** alpha))
                state["mu"].fill_(1 / max(1, step - t0))
        return loss
