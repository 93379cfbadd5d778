"""torch.svd_lowrank and torch.pca_lowrank: randomized low-rank SVD (Halko, Martinsson and Tropp 2009,
arXiv:0909.4061, algorithms 4.4 and 5.1) on reftorch's tensor ops, so gradients flow as through any other chain
of matmul, qr and svd. Sparse A is only multiplied (A @ R, A^H @ Q), as in torch."""
from __future__ import annotations

import reftorch as torch


def _floating(A):
    """The dtype the sketch is computed in: A's when floating, else the default float dtype (as torch)."""
    return A.dtype if A.dtype.is_floating_point or A.dtype.is_complex else torch.get_default_dtype()


def _adjoint(A):
    """A^H; of a sparse COO A, the COO tensor of its entries at swapped indices (2-D)."""
    if not A.is_sparse:
        return A.mH
    A = A.coalesce()
    return torch.sparse_coo_tensor(A.indices().flip(0), A.values().conj(), A.shape[::-1], check_invariants=False)


def _minus_mean(A, M, R, adjoint=False):
    """(A - M) @ R, or (A - M)^H @ R, without forming A - M."""
    X = torch.matmul(_adjoint(A) if adjoint else A, R)
    return X if M is None else X - torch.matmul(M.mH if adjoint else M, R)


def get_approximate_basis(A, q, niter=2, M=None):
    """Q with q orthonormal columns such that Q Q^H (A - M) approximates A - M (algorithm 4.4: a Gaussian sketch
    refined by niter power iterations, each re-orthonormalized by QR)."""
    niter = 2 if niter is None else niter
    R = torch.randn(A.shape[-1], q, dtype=_floating(A), device=A.device)
    Q = torch.linalg.qr(_minus_mean(A, M, R)).Q
    for _ in range(niter):
        Q = torch.linalg.qr(_minus_mean(A, M, Q, adjoint=True)).Q
        Q = torch.linalg.qr(_minus_mean(A, M, Q)).Q
    return Q


def _svd_lowrank(A, q=6, niter=2, M=None):
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())
    if m < n:               # the sketch is taken of the tall side
        A = _adjoint(A)
        M = None if M is None else M.mH
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = torch.matmul(Q.mH, A)          # (dense @ sparse where A is sparse)
    if M is not None:
        B = B - torch.matmul(Q.mH, M)
    U, S, Vh = torch.linalg.svd(B, full_matrices=False)
    U, V = torch.matmul(Q, U), Vh.mH
    return (V, S, U) if m < n else (U, S, V)


def svd_lowrank(A, q=6, niter=2, M=None):
    """torch.svd_lowrank: (U, S, V) with A - M ~ U diag(S) V^H, of rank q (default 6), by a randomized range
    finder with niter (default 2) subspace iterations; M (broadcast to A's shape) is subtracted implicitly."""
    return _svd_lowrank(A, q=q, niter=niter, M=M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """torch.pca_lowrank: the low-rank SVD (U, S, V) of A centered over its rows (center=True), q defaulting
    to min(6, m, n); V's columns are the principal directions and S**2 / (m - 1) the covariance's eigenvalues."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter=niter, M=None)
    if A.is_sparse:
        if len(A.shape) != 2:
            raise ValueError("pca_lowrank input is expected to be 2-dimensional tensor")
        ones = torch.ones(1, m, dtype=_floating(A), device=A.device)
        c = torch.matmul(ones, A) / m                 # the column means, (1, n), dense
        return _svd_lowrank(A, q, niter=niter, M=c)   # broadcast to A's shape, subtracted implicitly
    return _svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter=niter, M=None)
