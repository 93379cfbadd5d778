"""reftorch.backends: what PyTorch's torch.backends says about the libraries behind its ops, answered for
reftorch -- whose kernels are its own (Numba-generated, on cpu and numba.cuda) and whose matmuls call NumPy's
BLAS -- so cudnn, MKL-DNN, MPS and OpenMP are not available, and the flags that tune them hold their values
without changing what reftorch computes. Flags that do change something are said so where they are defined.
"""
from __future__ import annotations

import reftorch.backends.cpu as cpu  # noqa: F401
import reftorch.backends.cuda as cuda  # noqa: F401
import reftorch.backends.cudnn as cudnn  # noqa: F401
import reftorch.backends.mkl as mkl  # noqa: F401
import reftorch.backends.mkldnn as mkldnn  # noqa: F401
import reftorch.backends.mps as mps  # noqa: F401
import reftorch.backends.openmp as openmp  # noqa: F401
import reftorch.backends.opt_einsum as opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
