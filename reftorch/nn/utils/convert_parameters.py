"""parameters_to_vector / vector_to_parameters."""
from __future__ import annotations

import reftorch as torch

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-D tensor."""
    return torch.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Slices vec into the parameters (in order), replacing their data."""
    if not isinstance(vec, torch.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec.narrow(0, pointer, n).reshape(tuple(param.shape)).detach()
        pointer += n
