"""Gradient clipping: clip_grad_norm_ and clip_grad_value_."""
from __future__ import annotations

import math
import warnings

import reftorch as torch

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _tensors(parameters):
    if isinstance(parameters, torch.Tensor):
        return [parameters]
    return list(parameters)


def _norm(t, norm_type):
    t = t.detach()
    if norm_type == math.inf:
        return torch.abs(t).amax() if t.numel() else torch.zeros((), dtype=t.dtype)
    if norm_type == -math.inf:
        return -((-torch.abs(t)).amax()) if t.numel() else torch.zeros((), dtype=t.dtype)
    if norm_type == 0:
        return (torch.abs(t) > 0).to(t.dtype).sum()
    if norm_type == 1:
        return torch.abs(t).sum()
    if norm_type == 2:
        return torch.sqrt((t * t).sum())
    return (torch.abs(t) ** norm_type).sum() ** (1.0 / norm_type)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the norms of the tensors (= the norm of all their elements together)."""
    tensors = _tensors(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return torch.tensor(0.0)
    norms = torch.stack([_norm(t, norm_type) for t in tensors]) if len(tensors) > 1 \
        else _norm(tensors[0], norm_type).reshape(1)
    total = _norm(norms, norm_type)
    value = float(total)
    if error_if_nonfinite and (math.isnan(value) or math.isinf(value)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    if not grads:
        return
    coef = float(max_norm) / (float(total_norm) + 1e-6)
    coef = min(coef, 1.0)           # clamp(max=1): gradients are only ever scaled down
    with torch.no_grad():
        for g in grads:
            g.mul_(coef)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales the gradients in place so that their total norm is at most max_norm; returns the total norm
    (before clipping) as a tensor."""
    parameters = _tensors(parameters)
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.tensor(0.0)
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient element into [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with torch.no_grad():
        for p in _tensors(parameters):
            g = p.grad
            if g is None:
                continue
            clipped = torch.where(g > clip_value, clip_value, g)
            clipped = torch.where(torch.gt(-clip_value, clipped), -clip_value, clipped)
            g.copy_(clipped)
