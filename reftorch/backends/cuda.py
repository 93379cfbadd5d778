"""reftorch.backends.cuda: reftorch's cuda back end is numba.cuda (reftorch/_cuda_dispatch.py); `is_built()` says
whether it is installed. `matmul.allow_tf32` is the float32 matmul precision of reftorch/_config.py seen as
PyTorch's legacy switch ("high" or "medium" allow TF32); reftorch's tiled matmul computes in full float32
either way. The reduced-precision-reduction flags are kept for programs that read them."""
from __future__ import annotations

import importlib.util

import reftorch._config as _config


def is_built():
    """Whether reftorch's cuda back end (numba.cuda) is installed; reftorch.cuda.is_available() says if a GPU is."""
    try:
        return importlib.util.find_spec("numba.cuda") is not None
    except (ImportError, ValueError):
        return False


class cuBLASModule:
    """PyTorch's torch.backends.cuda.matmul."""
    _names = ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction",
              "allow_fp16_accumulation")

    def __init__(self):
        object.__setattr__(self, "_flags", {"allow_fp16_reduced_precision_reduction": True,
                                            "allow_bf16_reduced_precision_reduction": True,
                                            "allow_fp16_accumulation": False})

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _config.matmul_precision != "highest"
        if name in self._flags:
            return self._flags[name]
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            _config.matmul_precision = "high" if value else "highest"
        elif name in self._flags:
            self._flags[name] = bool(value)
        else:
            raise AttributeError("Unknown attribute " + name)


matmul = cuBLASModule()
