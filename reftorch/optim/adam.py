"""Adam (with amsgrad, L2 or decoupled weight decay, maximize), as PyTorch's Adam."""
from __future__ import annotations

import reftorch as torch

from .optimizer import (Optimizer, _bump, _check_capturable, _check_fused, _check_fused_param, _scalar_step,
                        _use_grad_for_differentiable)

_FOREACH_DTYPES = (torch.float32, torch.float64)    # the dtypes the multi-tensor step (ops.yaml: _adam_step) takes


_FUSED_DEVICES = ["cpu", "cuda"]


def _check_fused_params(params):
    """fused=True takes floating-point parameters on a device with fused kernels (PyTorch's check and message,
    made, as there, for the parameters that have a gradient)."""
    for p in params:
        if p.grad is not None and not (p.device.type in _FUSED_DEVICES and p.dtype.is_floating_point):
            raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported "
                               f"devices: {_FUSED_DEVICES} but {p.dtype} and {p.device.type}")


class Adam(Optimizer):
    """Adam: adaptive moment estimation (Kingma & Ba, 2014).

    Every step runs generated fused kernels (ops.yaml: _adam_step over a whole group of float32/float64
    parameters in one call, else _adam_exp_avg, _adam_exp_avg_sq, _adam_param per parameter), so fused=True
    is accepted as in torch 2.13 and changes nothing: torch's fused cpu step gives the same bits as its default.

    Per parameter, at step t with gradient g (negated when maximize):
        p <- p * (1 - lr * weight_decay)            if decoupled_weight_decay (AdamW)
        g <- g + weight_decay * p                   otherwise
        m <- lerp(m, g, 1 - beta1);  v <- beta2 * v + (1 - beta2) * g * g
        v_hat <- max(v_hat, v) (amsgrad) or v
        p <- p - lr / (1 - beta1^t) * m / (sqrt(v_hat) / sqrt(1 - beta2^t) + eps)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        if isinstance(lr, torch.Tensor):
            lr = lr.item()
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    def _init_state(self, p, amsgrad, group):
        if group["fused"]:
            _check_fused_param(p)
        if group["capturable"]:
            _check_capturable([p])
        state = self.state[p]
        if len(state) == 0:
            state["step"] = _scalar_step(group["fused"])
            state["exp_avg"] = torch.zeros_like(p)
            state["exp_avg_sq"] = torch.zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = torch.zeros_like(p)
        return state

    @_use_grad_for_differentiable
    def step(self, closure=None):
        loss = self._run_closure(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, weight_decay, amsgrad = group["lr"], group["eps"], group["weight_decay"], group["amsgrad"]
            maximize, decoupled = bool(group["maximize"]), bool(group["decoupled_weight_decay"])
            lr, eps, weight_decay = float(lr), float(eps), float(weight_decay)
            beta1, beta2 = float(beta1), float(beta2)
            if group["differentiable"]:
                self._differentiable_step(group, beta1, beta2, lr, eps, weight_decay, maximize, decoupled)
                continue
            if not amsgrad and group["foreach"] is not False and all(
                    p.device.type == "cpu" and p.dtype in _FOREACH_DTYPES
                    and (p.grad is None or p.grad.dtype == p.dtype)
                    for p in group["params"]):
                self._multi_tensor_step(group, beta1, beta2, lr, eps, weight_decay, maximize, decoupled)
                continue
            for p, grad in self._params_with_grad(group):
                state = self._init_state(p, amsgrad, group)
                step = _bump(state["step"])
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                # three generated kernels (ops.yaml: _adam_*), each one pass over one buffer, in place of a
                # dozen ops: m <- lerp(m, g, 1 - beta1), v <- beta2 * v + (1 - beta2) * g * g, then p
                exp_avg._adam_exp_avg_(grad, p, beta1, weight_decay, maximize, decoupled)
                exp_avg_sq._adam_exp_avg_sq_(grad, p, beta2, weight_decay, maximize, decoupled)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
                second = exp_avg_sq
                if amsgrad:
                    second = state["max_exp_avg_sq"]
                    second.copy_(torch.maximum(second, exp_avg_sq))
                p._adam_param_(exp_avg, second, lr, weight_decay, decoupled, bias_correction1, bias_correction2_sqrt,
                               eps)
        return loss

    def _differentiable_step(self, group, beta1, beta2, lr, eps, weight_decay, maximize, decoupled):
        """The update op by op with the public Tensor API (the generated kernels have no derivatives), so that
        autograd records it; the bias corrections are 0-d tensors of the step count, as in PyTorch's."""
        for p, grad in self._params_with_grad(group):
            state = self._init_state(p, group["amsgrad"], group)
            step_t = state["step"]
            step_t.add_(1)
            if maximize:
                grad = -grad
            if weight_decay != 0:
                if decoupled:
                    p.mul_(1 - lr * weight_decay)
                else:
                    grad = grad.add(p, alpha=weight_decay)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            step_size_neg = (lr / (1 - beta1 ** step_t)).neg()
            bias_correction2_sqrt = (1 - beta2 ** step_t).sqrt()
            second = exp_avg_sq
            if group["amsgrad"]:
                state["max_exp_avg_sq"].copy_(torch.maximum(state["max_exp_avg_sq"].clone(), exp_avg_sq))
                second = state["max_exp_avg_sq"]
            denom = (second.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(eps / step_size_neg)
            p.addcdiv_(exp_avg.clone(), denom)

    def _multi_tensor_step(self, group, beta1, beta2, lr, eps, weight_decay, maximize, decoupled):
        """The group's update as one generated kernel call over all its parameters (ops.yaml: _adam_step) per
        step count (they differ only when some parameters missed steps), with the same bits as the loop above."""
        params, grads, states = [], [], []
        for p, grad in self._params_with_grad(group):
            params.append(p)
            grads.append(grad)
            states.append(self._init_state(p, False, group))
        steps = [state["step"] for state in states]
        if all(s.dtype is torch.float32 and s.device.type == "cpu" for s in steps):
            torch._foreach_add_(steps, 1.0)     # every step count in one kernel call
            counts = [float(s._storage.data[s._offset]) for s in steps]    # s.item() of a 0-d cpu float32
        else:
            for s in steps:
                s.add_(1)
            counts = [s.item() for s in steps]
        by_step = {}
        for p, grad, state, step in zip(params, grads, states, counts):
            lists = by_step.get(step)
            if lists is None:
                lists = by_step[step] = ([], [], [], [])
            for lst, t in zip(lists, (p, grad, state["exp_avg"], state["exp_avg_sq"])):
                lst.append(t)
        for step, (ps, grads, exp_avgs, exp_avg_sqs) in by_step.items():
            torch._adam_step(ps, grads, exp_avgs, exp_avg_sqs, beta1, beta2, lr, weight_decay, maximize, decoupled,
                             1 - beta1 ** step, (1 - beta2 ** step) ** 0.5, eps)
