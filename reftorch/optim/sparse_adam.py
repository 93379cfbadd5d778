"""SparseAdam: Adam for sparse gradients (only the rows a gradient touches move), as PyTorch's SparseAdam."""
from __future__ import annotations

import math

import reftorch as torch

from .optimizer import Optimizer, _check_lr


class SparseAdam(Optimizer):
    """Lazy Adam: the moments and parameters are updated only where the (sparse COO) gradient has entries.

    Gradients must be sparse, as in PyTorch: a dense gradient raises and Adam is the optimizer to use.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        lr = _check_lr(lr)
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse, complex_ = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if getattr(p, "is_sparse", False):
                    sparse.append([index, d_index])
                if p.is_complex():
                    complex_.append([index, d_index])
        if sparse:
            raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense parameter tensors")
        if complex_:
            raise ValueError(f"Complex params at indices {complex_}: SparseAdam does not support complex parameters")

    @torch.no_grad()
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            updates = []
            for p in group["params"]:
                if p.grad is None:
                    continue
                if not getattr(p.grad, "is_sparse", False):
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                updates.append((p, state))
            for p, state in updates:
                self._update(p, state, group["lr"], beta1, beta2, group["eps"], group["maximize"])
        return loss

    @staticmethod
    def _update(p, state, lr, beta1, beta2, eps, maximize):
        grad = p.grad.coalesce()            # the update is not linear, so each index must appear once
        if maximize:
            grad = -grad
        values = grad._values()
        if values.numel() == 0:
            return
        where = tuple(grad._indices())      # one index tensor per sparse dimension: the touched rows
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        old_avg, old_avg_sq = exp_avg[where], exp_avg_sq[where]
        avg_update = values.sub(old_avg).mul_(1 - beta1)
        avg_sq_update = values.pow(2).sub_(old_avg_sq).mul_(1 - beta2)
        exp_avg[where] = old_avg + avg_update
        exp_avg_sq[where] = old_avg_sq + avg_sq_update
        numer = avg_update.add_(old_avg)
        denom = avg_sq_update.add_(old_avg_sq).sqrt_().add_(eps)
        step = state["step"]
        step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        p[where] = p[where] - step_size * numer.div_(denom)
