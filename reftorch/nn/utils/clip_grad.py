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
    # the value is read only when asked to check it (as torch does): no host sync, nothing a compiled step
    # must break on
    if error_if_nonfinite and bool(torch.logical_or(total.isnan(), total.isinf())):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    if not grads:
        return
    if not isinstance(total_norm, torch.Tensor):
        total_norm = torch.tensor(float(total_norm))
    # a tensor coefficient in the norm's dtype, as torch computes it (no host sync): clamp(max=1), so
    # gradients are only ever scaled down
    coef = torch.clamp(max_norm / (total_norm + 1e-6), max=1.0)
    with torch.no_grad():
        for g in grads:
            g.mul_(coef if coef.device == g.device else coef.to(g.device))


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
            clipped = torch.where(clipped < -clip_value, -clip_value, clipped)
            g.copy_(clipped)
