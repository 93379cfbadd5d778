"""torch.functional: the module PyTorch defines einsum, split, norm, meshgrid, unique ... in.

Programs import from it (`from torch.functional import einsum`, `torch.functional.F`...); each of its
names here is reftorch's function of the same name, where reftorch has one."""
from __future__ import annotations

import reftorch as _torch
from reftorch.nn import functional as F  # noqa: F401  (torch.functional imports it as F too)

_TORCH_FUNCTIONAL = ("atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
                     "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu", "norm",
                     "meshgrid", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot", "unique",
                     "unique_consecutive", "unravel_index")


def __getattr__(name):
    """Resolved on use: the ops are bound on reftorch after this module may have been imported."""
    if name == "__all__":
        return _all()
    if name in _TORCH_FUNCTIONAL and hasattr(_torch, name):
        return getattr(_torch, name)
    raise AttributeError(f"module 'reftorch.functional' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | {n for n in _TORCH_FUNCTIONAL if hasattr(_torch, n)})


def _all():
    return [n for n in _TORCH_FUNCTIONAL if hasattr(_torch, n)]
