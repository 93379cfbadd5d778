"""RMSprop (with centering and momentum), as PyTorch's RMSprop."""
from __future__ import annotations

import reftorch as torch

from .optimizer import Optimizer, _bump, _check_capturable, _scalar_step, _use_grad_for_differentiable


class RMSprop(Optimizer):
    """RMSprop (Hinton's lecture 6e).

    Per parameter with gradient g (negated when maximize):
        g <- g + weight_decay * p
        v <- alpha * v + (1 - alpha) * g * g
        avg <- sqrt(v - g_avg^2) with g_avg <- lerp(g_avg, g, 1 - alpha) (centered), else sqrt(v); avg += eps
        buf <- momentum * buf + g / avg;  p <- p - lr * buf       (momentum > 0)
        p <- p - lr * g / avg                                     (otherwise)
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar_step()
            state["square_avg"] = torch.zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = torch.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = torch.zeros_like(p)
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            weight_decay, momentum = group["weight_decay"], group["momentum"]
            for p, grad in self._params_with_grad(group):
                state = self._init_state(p, group)
                if group["capturable"]:
                    _check_capturable([p, state["step"]])
                if group["maximize"]:
                    grad = -grad
                _bump(state["step"])
                if weight_decay != 0:
                    grad = grad.add(p, alpha=weight_decay)
                square_avg = state["square_avg"]
                square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                if group["centered"]:
                    grad_avg = state["grad_avg"]
                    grad_avg.lerp_(grad, 1 - alpha)
                    avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                else:
                    avg = square_avg.sqrt()
                # out of place when autograd records the step: sqrt's backward needs its output
                avg = avg.add(eps) if group["differentiable"] else avg.add_(eps)
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    buf.mul_(momentum).addcdiv_(grad, avg)
                    p.add_(buf, alpha=-lr)
                else:
                    p.addcdiv_(grad, avg, value=-lr)
        return loss
