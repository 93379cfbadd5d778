"""Input checks, error reports and tolerances shared by the linear-algebra composites of ops.yaml.

PyTorch's linalg functions check their inputs in one order and word their errors one way; these helpers
say it once, so that every composite of the registry's linear-algebra section raises what torch raises."""
from __future__ import annotations

import numpy as np

from ._dtype import promote_types

__all__ = ["LinAlgError", "linalg_check", "linalg_check_norm_dtype", "linalg_check_eig", "linalg_check_lu", "linalg_raise", "linalg_same_dtype", "linalg_check_solve",
           "linalg_check_pivot", "linalg_check_uplo", "linalg_check_driver", "linalg_check_lstsq_driver",
           "linalg_check_householder", "linalg_tolerance", "chain_order_matmul"]


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a linear-algebra routine failed on valid input (singular, not definite)."""


# torch.linalg.LinAlgError is torch._C._LinAlgError: that is the name a traceback and type(e).__name__ show
LinAlgError.__module__, LinAlgError.__name__, LinAlgError.__qualname__ = "torch._C", "_LinAlgError", "_LinAlgError"

_INFO_MESSAGES = {
    "inv": "The diagonal element {i} is zero, the inversion could not be completed because the input matrix is "
           "singular.",
    "cholesky": "The factorization could not be completed because the input is not positive-definite (the leading "
                "minor of order {i} is not positive-definite).",
    "solve": "The solver failed because the input matrix is singular.",
    "lu": "U[{i},{i}] is zero and using it on lu_solve would result in a division by zero. If you still want to "
          "perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)",
    "ldl": "The factorization could not be completed because the input matrix is singular: D[{i},{i}] is zero.",
}
_INFO_ERRORS = {"lu": RuntimeError}


def linalg_check(A, fn, square=False, name="A", min_dims=2, floating=True, kernel=None, dtype_first=False):
    """PyTorch's checks, in its order: dimensions, squareness (after the dtype where dtype_first, as solve's), the
    dtype: not floating ("Expected a floating point"), then a dtype the CPU kernel lacks (half; with floating
    False, integers too): kernel names that kernel in torch's NotImplementedError (default: fn's own name where
    floating), "low precision" words it as inv's and slogdet's RuntimeError, False refuses none."""
    if A.ndim < min_dims:
        raise RuntimeError(f"{fn}: The input tensor {name} must have at least {min_dims} dimensions.")
    if square and not dtype_first:
        _check_square(A, fn, name)
    if floating and A.dtype.category < 2:        # floating or complex
        raise RuntimeError(f"{fn}: Expected a floating point or complex tensor as input. Got {A.dtype.short}")
    low = A.dtype.itemsize == 2 or (A.dtype.category == 3 and A.dtype.itemsize == 4)      # 16-bit, complex32
    if kernel is not False and (floating or kernel) and (low or A.dtype.category < 2):
        if kernel == "low precision":
            raise RuntimeError(f"{fn}: Low precision dtypes not supported. Got {A.dtype.short}")
        raise NotImplementedError(f'"{kernel or fn.split(".")[-1] + "_cpu"}" not implemented for \'{A.dtype.short}\'')
    if square and dtype_first:
        _check_square(A, fn, name)


def linalg_check_eig(A, fn):
    """eig's and eigvals': its complex result type first (no complex type for an integer), half's missing kernel,
    the shape, then LAPACK geev's refusal of non-finite values, as torch words them."""
    if A.dtype.category < 2:
        raise RuntimeError(f"Unknown Complex ScalarType for {A.dtype.short}")
    linalg_check(A, fn, square=True, kernel="linalg_eig_out_cpu")
    if not np.isfinite(A.detach().cpu().numpy()).all():
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")


def linalg_check_lu(A, fn):
    """lu's and lu_factor's: their own wording of the dimension check, then the LU kernel's missing dtypes."""
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} instead")
    linalg_check(A, fn, floating=False, kernel="lu_cpu")


def _check_square(A, fn, name):
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fn}: {name} must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def linalg_raise(info, fn, kind):
    """LAPACK's info codes as PyTorch's errors: the first failed matrix, with its batch index when batched."""
    codes = info.detach().cpu().numpy()
    if not codes.any():
        return
    bad = np.flatnonzero(codes.reshape(-1) > 0)
    first = int(bad[0])
    where = f"(Batch element {first}): " if codes.ndim else ""
    message = _INFO_MESSAGES[kind].format(i=int(codes.reshape(-1)[first]))
    raise _INFO_ERRORS.get(kind, LinAlgError)(f"{fn}: {where}{message}")


def linalg_check_norm_dtype(A, dtype, fn):
    """A norm's dtype= as PyTorch's checks it: floating or complex, of A's kind (complex for complex inputs), and
    not narrower than A's dtype."""
    if dtype is None:
        return
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{fn}: dtype should be floating point or complex, but got {dtype.short}")
    if dtype.is_complex != A.dtype.is_complex:
        raise RuntimeError(f"{fn}: dtype should be {'complex' if A.dtype.is_complex else 'real'} for "
                           f"{'complex' if A.dtype.is_complex else 'real'} inputs, but got {dtype.short}")
    if promote_types(A.dtype, dtype) is not dtype:
        raise RuntimeError(f"{fn}: the dtype of the input ({A.dtype.short}) should be convertible without narrowing "
                           f"to the specified dtype ({dtype.short})")


def linalg_same_dtype(A, B, fn):
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{fn}: Expected A and B to have the same dtype, but found A of type {A.dtype.short} and B "
                           f"of type {B.dtype.short} instead")


def linalg_check_solve(A, B, left, fn):
    """solve's shape rule: B is a (batch of) vector(s) when 1-D or when B.shape == A.shape[:-1]."""
    linalg_check(A, fn, square=True, kernel="lu_cpu", dtype_first=True)
    linalg_same_dtype(A, B, fn)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rows = B.shape[-1] if vector else B.shape[-2 if left else -1]
    if B.ndim == 0 or rows != A.shape[-1]:
        shape_b = f"{B.shape[-1]}x1" if vector or B.ndim < 2 else f"{B.shape[-2]}x{B.shape[-1]}"
        equation = "AX = B" if left else "XA = B"
        if not left and vector:
            shape_b = f"{B.shape[-1]}x1"
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {equation} "
                           f"({A.shape[-2]}x{A.shape[-1]} and {shape_b})")


def linalg_check_pivot(pivot, A):
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


def linalg_check_uplo(uplo):
    if uplo not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {uplo}")


def linalg_check_driver(driver, A):
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")


def linalg_check_lstsq_driver(driver, A):
    """lstsq's drivers on the CPU (gelsy by default); the driver decides which results are reported."""
    driver = "gelsy" if driver is None else driver
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"parameter `driver` should be one of (gels, gelsy, gelsd, gelss). Got {driver}")
    return driver


def linalg_check_householder(A, tau):
    fn = "torch.linalg.householder_product"
    if A.dtype.is_floating_point and A.dtype.itemsize == 2:
        raise NotImplementedError(f"\"orgqr_cpu\" not implemented for '{A.dtype.short}'")
    if A.ndim < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{fn}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{fn}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tuple(A.shape[:-2]) != tuple(tau.shape[:-1]):
        raise RuntimeError(f"{fn}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    linalg_same_dtype(A, tau, fn)
    if A.dtype.category < 2:
        raise NotImplementedError(f"\"orgqr_cpu\" not implemented for '{A.dtype.short}'")


def linalg_tolerance(S, A, atol, rtol):
    """max(atol, rtol * max(S)) per matrix, with PyTorch's default rtol = eps * max(m, n) when neither is given."""
    if rtol is None:        # PyTorch's get_atol_rtol: the default rtol where atol is not positive, else 0
        default = float(np.finfo(A.dtype.np).eps) * max(A.shape[-2], A.shape[-1])
        if hasattr(atol, "shape"):
            rtol = (atol <= 0).to(S.dtype) * default
        else:
            rtol = default if atol is None or atol <= 0 else 0.0
    atol = 0.0 if atol is None else atol
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else S.sum(-1, keepdim=True)
    tol = smax * (rtol.unsqueeze(-1) if hasattr(rtol, "shape") else rtol)      # tensor tolerances: one per matrix
    return tol.clamp_min(atol) if not hasattr(atol, "shape") else tol.maximum(atol.unsqueeze(-1))


def chain_order_matmul(mats, matmul):
    """The product of a chain of matrices in the order that needs the fewest multiplications (the classic
    dynamic programme over split points), as multi_dot computes it."""
    n = len(mats)
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return matmul(product(i, k), product(k + 1, j))

    return product(0, n - 1)
