"""Stochastic weight averaging and EMA of model weights (AveragedModel, SWALR, update_bn), as torch.optim.swa_utils."""
from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy

import reftorch as torch
from reftorch.nn import Module
from reftorch.nn.modules.normalization import _BatchNorm

from .lr_scheduler import LRScheduler, _per_group

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place multi-tensor update: ema <- lerp(ema, current, 1 - decay)."""
    _check_decay(decay)

    @torch.no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        floating = ema_param_list[0].is_floating_point() or ema_param_list[0].is_complex()
        for p_ema, p_model in zip(ema_param_list, current_param_list):
            if floating:
                p_ema.lerp_(p_model, 1 - decay)
            else:
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place multi-tensor running mean: avg <- avg + (current - avg) / (n + 1)."""

    @torch.no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        floating = averaged_param_list[0].is_floating_point() or averaged_param_list[0].is_complex()
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            if floating:
                p_avg.lerp_(p_model, float(1 / (num_averaged + 1)))
            elif isinstance(num_averaged, torch.Tensor):
                p_avg.addcdiv_(p_model - p_avg, num_averaged + 1)
            else:
                p_avg.add_(p_model - p_avg, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """A per-tensor EMA: returns decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    @torch.no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """A per-tensor running mean: returns avg + (current - avg) / (n + 1)."""

    @torch.no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters (and buffers, with use_buffers) are a running average of model's.

    The average is the equal-weight mean (SWA) unless avg_fn (per tensor, returns the new average) or
    multi_avg_fn (over lists, in place) says otherwise; `n_averaged` counts the updates.
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", torch.tensor(0, dtype=torch.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold model's current parameters into the average (the first call copies them)."""
        if self.use_buffers:
            self_params = itertools.chain(self.module.parameters(), self.module.buffers())
            model_params = itertools.chain(model.parameters(), model.buffers())
        else:
            self_params, model_params = self.parameters(), model.parameters()
        averaged, current = [], []
        first = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_params, model_params):
            p_model_ = p_model.detach().to(p_averaged.device)
            averaged.append(p_averaged.detach())
            current.append(p_model_)
            if first:
                p_averaged.detach().copy_(p_model_)
        if self.n_averaged > 0:
            self._average(averaged, current)
        if not self.use_buffers:
            # buffers (e.g. BatchNorm's running statistics) follow the model; update_bn recomputes them
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1

    def _average(self, averaged, current):
        if self.multi_avg_fn is not None or self.avg_fn is None:
            groups = {}
            for a, c in zip(averaged, current):
                groups.setdefault((a.device.type, a.dtype), ([], []))
                groups[(a.device.type, a.dtype)][0].append(a)
                groups[(a.device.type, a.dtype)][1].append(c)
            for (_device, _dtype), (avgs, curs) in groups.items():
                n_averaged = self.n_averaged.to(avgs[0].device)
                if self.multi_avg_fn is not None:
                    self.multi_avg_fn(avgs, curs, n_averaged)
                else:       # the per-tensor SWA mean, which PyTorch uses on the cpu too
                    avg_fn = get_swa_avg_fn()
                    for a, c in zip(avgs, curs):
                        a.copy_(avg_fn(a, c, n_averaged))
        else:
            for a, c in zip(averaged, current):
                a.detach().copy_(self.avg_fn(a.detach(), c, self.n_averaged.to(a.device)))


@torch.no_grad()
def update_bn(loader, model, device=None):
    """Recompute every BatchNorm's running statistics with one pass over `loader` (a cumulative average)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to its swa_lr over anneal_epochs ("cos" or "linear"), then hold it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for lr, group in zip(_per_group(optimizer, swa_lr, "swa_lr"), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        # the schedule restarts from whatever lr the group has: recover the un-annealed lr of the last step
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
