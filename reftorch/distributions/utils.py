"""Shared helpers of torch.distributions: broadcasting parameters, probs <-> logits, lazily computed
attributes, and the machine epsilon a clamp needs."""
from __future__ import annotations

from functools import update_wrapper
from numbers import Number

import numpy as np

import reftorch as torch

__all__ = ["broadcast_all", "logits_to_probs", "probs_to_logits", "clamp_probs", "lazy_property", "tril_matrix_to_vec",
           "vec_to_tril_matrix", "euler_constant"]

euler_constant = 0.57721566490153286060


def finfo(dtype):
    """eps / tiny / max of a floating dtype (as torch.finfo reports them)."""
    return np.finfo(dtype.np) if dtype.name != "bfloat16" else __import__("ml_dtypes").finfo(dtype.np)


def broadcast_all(*values):
    """The values as tensors of one broadcast shape; numbers take the dtype and device of the tensors present."""
    if not all(isinstance(v, (torch.Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(isinstance(v, torch.Tensor) for v in values):
        like = next((v for v in values if isinstance(v, torch.Tensor)), None)
        dtype = like.dtype if like is not None else torch.get_default_dtype()
        device = like.device if like is not None else None
        values = [v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=dtype, device=device) for v in values]
    shape = np.broadcast_shapes(*(tuple(v.shape) for v in values))
    return tuple(v.expand(shape) for v in values)


def _sum_rightmost(value, dim):
    """value summed over its `dim` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    return torch.sigmoid(logits) if is_binary else torch.softmax(logits, dim=-1)


def clamp_probs(probs):
    eps = float(finfo(probs.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps = clamp_probs(probs)
    return torch.log(ps) - torch.log1p(-ps) if is_binary else torch.log(ps)


class lazy_property:
    """A property computed on first access and then stored on the instance (torch's lazy_property); a
    distribution's probs / logits / scale_tril are lazy so that either parametrisation can be given."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with torch.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _tril_mask(n, diag, device):
    r = torch.arange(n, device=device)
    return r < r.reshape(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """The entries on and below diagonal `diag` of the last two dims, row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of tril_matrix_to_vec: n from the vector's length, zeros above the diagonal."""
    k = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * k + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > float(finfo(vec.dtype).eps):
        raise ValueError(f"The size of last dimension is {k} which cannot be expressed as the lower triangular part "
                         f"of a {n} x {n} matrix.")
    n = round(n)
    mat = torch.zeros(tuple(vec.shape[:-1]) + (n, n), dtype=vec.dtype, device=vec.device)
    mat[..., _tril_mask(n, diag, vec.device)] = vec
    return mat
