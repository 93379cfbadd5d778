"""torch.linalg: the linear-algebra functions of ops.yaml's linear-algebra section under PyTorch's names.

Each name is the registry's `linalg_<name>` op (its checks, derivative formulas and tests live there);
eig and eigvals give complex results (LAPACK geev through numpy.linalg.eig)."""
from __future__ import annotations

import reftorch._functional as _F
from .._linalg_checks import LinAlgError  # noqa: F401
from .._linalg_checks import linalg_check_norm_dtype

_NAMES = ("cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "householder_product",
          "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex",
          "lu_solve", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv", "qr",
          "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander",
          "vecdot")
globals().update({_n: getattr(_F, "linalg_" + _n) for _n in _NAMES})
matmul = _F.matmul


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.vector_norm: sum(|x|^ord)^(1/ord) over dim (all dims when None); dtype= computes in it."""
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{x.dtype.short}")
    linalg_check_norm_dtype(x, dtype, "linalg.vector_norm")
    if dtype is not None:
        x = x.to(dtype)
    return _F.linalg_vector_norm(x, ord, dim, keepdim)


__all__ = list(_NAMES) + ["matmul", "vector_norm", "LinAlgError"]
