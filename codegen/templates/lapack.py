"""LAPACK routines NumPy does not expose, written over NumPy arrays and batched over leading dims.

NumPy's linalg (LAPACK underneath) serves inv, solve, det, cholesky, eigh, svd, qr and lstsq. PyTorch's
linalg also returns LU factors with LAPACK's pivots (getrf), triangular solves (trsm), Bunch-Kaufman LDL
factors (sytrf) and the matrix exponential; these are those algorithms, unblocked, with the pivot choices
and `info` codes of the LAPACK routine they mirror, so results agree with PyTorch's element for element up
to rounding. The loops run over one matrix dimension; each step is a NumPy operation over the whole batch.

The hot four (cholesky, solve, eigh, svd) run in NumPy's own LAPACK, called directly from Numba loops
(lapack_calls.py, the entry points at the end), with NumPy's path and these routines behind them.

Copied verbatim into reftorch/kernels/lapack.py by `python -m codegen`; the array-op bodies of ops.yaml
call it as `lapack.<name>`.
"""
import importlib
import math

import numpy as np

from .._linalg_checks import LinAlgError


def batched(a, core=2):
    """a as (batch, *core dims) and the leading shape to restore."""
    lead = a.shape[:a.ndim - core]
    return a.reshape((math.prod(lead),) + a.shape[a.ndim - core:]), lead     # (not -1: a core dim may be 0)


def lu_factor(a):
    """getrf: (LU, pivots (1-based, int32), info (int32)) of (..., m, n) with partial pivoting."""
    x, lead = batched(np.array(a, copy=True))
    b, m, n = x.shape
    k = min(m, n)
    piv = np.empty((b, k), np.int32)
    info = np.zeros(b, np.int32)
    rows = np.arange(b)
    for j in range(k):
        col = x[:, j:, j]
        mag = np.abs(col.real) + np.abs(col.imag) if x.dtype.kind == "c" else np.abs(col)     # izamax's |re| + |im|
        p = j + np.argmax(mag, axis=1) if m > j else np.full(b, j)
        piv[:, j] = p + 1
        top = x[rows, j].copy()
        x[rows, j] = x[rows, p]
        x[rows, p] = top
        pivot = x[:, j, j]
        zero = pivot == 0
        info[(info == 0) & zero] = j + 1
        recip = np.where(zero, 0, 1 / np.where(zero, 1, pivot)).astype(x.dtype)
        x[:, j + 1:, j] *= recip[:, None]
        x[:, j + 1:, j + 1:] -= x[:, j + 1:, j:j + 1] * x[:, j:j + 1, j + 1:]
    return x.reshape(lead + (m, n)), piv.reshape(lead + (k,)), info.reshape(lead)


def permutation(pivots, m):
    """The row order that LAPACK's 1-based sequential swaps make of range(m), per batch: (..., m)."""
    p, lead = batched(pivots, 1)
    perm = np.tile(np.arange(m), (p.shape[0], 1))
    rows = np.arange(p.shape[0])
    for j in range(p.shape[1]):
        q = p[:, j].astype(np.int64) - 1
        top = perm[rows, j].copy()
        perm[rows, j] = perm[rows, q]
        perm[rows, q] = top
    return perm.reshape(lead + (m,))


def solve_triangular(a, b, upper, left=True, unitriangular=False):
    """trsm: X with op(A) X = B (left) or X A = B (right); only A's triangle is read; no singularity check."""
    if not left:
        return solve_triangular(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), not upper, True,
                                unitriangular).swapaxes(-1, -2)
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, shape + a.shape[-2:])
    x = np.array(np.broadcast_to(b, shape + b.shape[-2:]), dtype=np.result_type(a, b), copy=True)
    n = a.shape[-1]
    order = range(n - 1, -1, -1) if upper else range(n)
    for i in order:
        rest = slice(i + 1, n) if upper else slice(0, i)
        if rest.stop > rest.start:
            x[..., i, :] -= np.matmul(a[..., i:i + 1, rest], x[..., rest, :])[..., 0, :]
        if not unitriangular:
            x[..., i, :] /= a[..., i, i, None]
    return x


def lu_solve(lu, pivots, b, left=True, adjoint=False):
    """getrs: X with A X = B (or A^T X = B when adjoint; X A = B and X A^T = B when not left) from getrf's factors."""
    if not left:            # X op(A) = B is op(A)^H X^H = B^H (conjugates: complex adjoints)
        return np.conj(lu_solve(lu, pivots, np.conj(np.swapaxes(b, -1, -2)), True, not adjoint).swapaxes(-1, -2))
    n = lu.shape[-1]
    perm = permutation(pivots, n)
    shape = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2])
    lu = np.broadcast_to(lu, shape + lu.shape[-2:])
    perm = np.broadcast_to(perm, shape + (n,))
    b = np.broadcast_to(b, shape + b.shape[-2:])
    if not adjoint:            # P L U X = B: X = U^-1 L^-1 P^T B
        pb = np.take_along_axis(b, perm[..., None], -2)
        y = solve_triangular(lu, pb, upper=False, unitriangular=True)
        return solve_triangular(lu, y, upper=True)
    luT = np.conj(np.swapaxes(lu, -1, -2))  # U^H L^H P^T X = B: X = P L^-H U^-H B (the adjoint: conjugated)
    y = solve_triangular(luT, b, upper=False)
    z = solve_triangular(luT, y, upper=True, unitriangular=True)
    x = np.empty_like(z)
    np.put_along_axis(x, perm[..., None], z, -2)
    return x


def cholesky(a, upper=False):
    """potrf: (L, info) of (..., n, n) from the lower (upper=True: upper) triangle; info names the order of
    the first leading minor that is not positive-definite, and that matrix's factor stops at it."""
    x, lead = batched(np.array(a, copy=True))
    bsz, n, _ = x.shape
    if upper:
        x = np.conj(np.swapaxes(x, -1, -2))     # U^H U: the upper triangle read as the lower one of A^H
    info = np.zeros(bsz, np.int32)
    low = np.tril(x)
    for j in range(n):
        live = info == 0
        # Hermitian: the rows' products are conjugated (a no-op on real factors); the pivot is real
        d = (low[:, j, j] - np.einsum("bk,bk->b", low[:, j, :j], np.conj(low[:, j, :j]))).real
        bad = live & ~(d > 0)
        info[bad] = j + 1
        low[bad, j, j] = d[bad]                 # LAPACK stops there: the failed pivot's updated value
        ok = live & ~bad
        low[ok, j, j] = np.sqrt(d[ok])
        if j + 1 < n:
            col = low[ok, j + 1:, j] - np.einsum("bik,bk->bi", low[ok, j + 1:, :j], np.conj(low[ok, j, :j]))
            low[ok, j + 1:, j] = col / low[ok, j, j][:, None]
    done = np.tril(low)
    if upper:
        done = np.conj(np.swapaxes(done, -1, -2))
    return np.ascontiguousarray(done).reshape(a.shape), info.reshape(lead)


def _cabs1(v):
    """LAPACK's CABS1, |re| + |im| (abs of a real number): the magnitude its complex pivot searches compare."""
    v = np.asarray(v)
    return np.abs(v.real) + np.abs(v.imag) if v.dtype.kind == "c" else np.abs(v)


def _ldl_one(x, herm):
    """sytf2 / hetf2 (lower): Bunch-Kaufman LDL^T (herm: LDL^H, D Hermitian) of one matrix, in place;
    (pivots, info). Complex pivots compare |re| + |im|, as zsytf2 and zhetf2; a Hermitian diagonal is real."""
    n = x.shape[0]
    alpha = (1 + math.sqrt(17)) / 8
    piv = np.zeros(n, np.int32)
    info, k = 0, 0
    diag = (lambda v: abs(v.real)) if herm else (lambda v: float(_cabs1(v)))
    while k < n:
        kstep, absakk = 1, diag(x[k, k])
        imax = k + 1 + int(np.argmax(_cabs1(x[k + 1:, k]))) if k < n - 1 else k
        colmax = float(_cabs1(x[imax, k])) if k < n - 1 else 0.0
        if max(absakk, colmax) == 0 or math.isnan(absakk):
            info = info or k + 1
            kp = k
        elif absakk >= alpha * colmax:
            kp = k
        else:
            row = _cabs1(x[imax, k:imax])
            rowmax = row.max()
            if imax < n - 1:
                rowmax = max(rowmax, _cabs1(x[imax + 1:, imax]).max())
            if absakk >= alpha * colmax * (colmax / rowmax):
                kp = k
            elif diag(x[imax, imax]) >= alpha * rowmax:
                kp = imax
            else:
                kp, kstep = imax, 2
        kk = k + kstep - 1
        if kp != kk:
            _ldl_swap(x, k, kk, kp, kstep, herm)
        if herm:
            x[k, k] = x[k, k].real
            if kstep == 2:
                x[k + 1, k + 1] = x[k + 1, k + 1].real
        _ldl_update(x, k, kstep, n, herm)
        piv[k:k + kstep] = kp + 1 if kstep == 1 else -(kp + 1)
        k += kstep
    return piv, info


def _ldl_swap(x, k, kk, kp, kstep, herm):
    """Symmetric (Hermitian: conjugating the segment between) interchange of rows and columns kk and kp of the
    trailing lower triangle."""
    c = np.conj if herm else (lambda v: v)
    x[kp + 1:, [kk, kp]] = x[kp + 1:, [kp, kk]]
    seg = x[kk + 1:kp, kk].copy()
    x[kk + 1:kp, kk] = c(x[kp, kk + 1:kp])
    x[kp, kk + 1:kp] = c(seg)
    if herm:
        x[kp, kk] = np.conj(x[kp, kk])
    x[kk, kk], x[kp, kp] = x[kp, kp], x[kk, kk]
    if kstep == 2:
        x[k + 1, k], x[kp, k] = x[kp, k], x[k + 1, k]


def _ldl_update(x, k, kstep, n, herm):
    """The rank-1 or rank-2 update of the trailing lower triangle, and the columns of L (zhetf2's where herm)."""
    c = np.conj if herm else (lambda v: v)
    if kstep == 1:
        if k < n - 1 and x[k, k] != 0:
            v = x[k + 1:, k].copy()
            x[k + 1:, k + 1:] -= np.outer(v, c(v)) / x[k, k]
            x[k + 1:, k] = v / x[k, k]
            if herm:
                idx = np.arange(k + 1, n)
                x[idx, idx] = x[idx, idx].real
        return
    if k < n - 2:
        a0, a1 = x[k + 2:, k].copy(), x[k + 2:, k + 1].copy()
        if herm:
            d = abs(x[k + 1, k])
            d11, d22 = x[k + 1, k + 1].real / d, x[k, k].real / d
            d21 = x[k + 1, k] / d
            t = 1 / (d11 * d22 - 1) / d
            wk, wkp1 = t * (d11 * a0 - d21 * a1), t * (d22 * a1 - np.conj(d21) * a0)
        else:
            d21 = x[k + 1, k]
            d11, d22 = x[k + 1, k + 1] / d21, x[k, k] / d21
            t = 1 / (d11 * d22 - 1)
            d21 = t / d21
            wk, wkp1 = d21 * (d11 * a0 - a1), d21 * (d22 * a1 - a0)
        x[k + 2:, k + 2:] -= np.outer(a0, c(wk)) + np.outer(a1, c(wkp1))
        x[k + 2:, k], x[k + 2:, k + 1] = wk, wkp1
        if herm:
            idx = np.arange(k + 2, n)
            x[idx, idx] = x[idx, idx].real


def ldl_factor(a, hermitian=False):
    """sytrf / hetrf (lower): (LD, pivots, info) of (..., n, n) symmetric (Hermitian) matrices; LD's strict upper
    triangle is 0. Real matrices: hermitian changes nothing."""
    x, lead = batched(np.array(a, copy=True))
    herm = hermitian and x.dtype.kind == "c"
    piv = np.zeros(x.shape[:2], np.int32)
    info = np.zeros(x.shape[0], np.int32)
    for i in range(x.shape[0]):
        piv[i], info[i] = _ldl_one(x[i], herm)
    return np.tril(x).reshape(a.shape), piv.reshape(lead + (x.shape[-1],)), info.reshape(lead)


def _ldl_solve_one(ld, piv, b, herm):
    """sytrs / hetrs (lower) for one factorization: b overwritten with X."""
    c = np.conj if herm else (lambda v: v)
    n = ld.shape[0]
    k = 0
    while k < n:
        if piv[k] > 0:
            kp = piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1:] -= np.outer(ld[k + 1:, k], b[k])
            b[k] /= ld[k, k].real if herm else ld[k, k]
            k += 1
            continue
        kp = -piv[k] - 1
        b[[k + 1, kp]] = b[[kp, k + 1]]
        b[k + 2:] -= np.outer(ld[k + 2:, k], b[k]) + np.outer(ld[k + 2:, k + 1], b[k + 1])
        akm1k = ld[k + 1, k]
        akm1, ak = ld[k, k] / c(akm1k), ld[k + 1, k + 1] / akm1k
        denom = akm1 * ak - 1
        bkm1, bk = b[k] / c(akm1k), b[k + 1] / akm1k
        b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
        k += 2
    k = n - 1
    while k >= 0:
        step = 1 if piv[k] > 0 else 2
        b[k] -= c(ld[k + 1:, k]) @ b[k + 1:]
        if step == 2:
            b[k - 1] -= c(ld[k + 1:, k - 1]) @ b[k + 1:]
        kp = abs(piv[k]) - 1
        b[[k, kp]] = b[[kp, k]]
        k -= step
    return b


def ldl_solve(ld, pivots, b, hermitian=False):
    """sytrs / hetrs (lower): X with A X = B from sytrf's (hetrf's) (LD, pivots), batched with broadcasting."""
    shape = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    lds = np.broadcast_to(ld, shape + ld.shape[-2:]).reshape((-1,) + ld.shape[-2:])
    pv = np.broadcast_to(pivots, shape + pivots.shape[-1:]).reshape((-1, pivots.shape[-1]))
    x = np.array(np.broadcast_to(b, shape + b.shape[-2:]), dtype=np.result_type(ld, b)).reshape((-1,) + b.shape[-2:])
    herm = hermitian and x.dtype.kind == "c"
    for i in range(x.shape[0]):
        _ldl_solve_one(lds[i], pv[i], x[i], herm)
    return x.reshape(shape + b.shape[-2:])


_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0,
           960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def matrix_exp(a):
    """exp(A) of (..., n, n) by scaling and squaring with the degree-13 Pade approximant (Higham 2005)."""
    x, lead = batched(np.asarray(a, np.complex128 if np.asarray(a).dtype.kind == "c" else np.float64))
    n = x.shape[-1]
    norm = np.abs(x).sum(axis=-2).max(axis=-1) if n else np.zeros(x.shape[0])
    s = np.where(norm > _THETA13, np.ceil(np.log2(np.maximum(norm, 1e-300) / _THETA13)), 0).astype(np.int64)
    s = np.where(np.isfinite(norm), s, 0)
    x = x / (2.0 ** s)[:, None, None]
    eye = np.broadcast_to(np.eye(n), x.shape)
    b = _PADE13
    x2 = x @ x
    x4 = x2 @ x2
    x6 = x4 @ x2
    u = x @ (x6 @ (b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * eye)
    v = x6 @ (b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * eye
    r = np.linalg.solve(v - u, v + u) if n else x.copy()
    for step in range(int(s.max(initial=0))):
        more = s > step
        r[more] = r[more] @ r[more]
    return r.reshape(lead + (n, n)).astype(a.dtype)


# -- the hot four, called directly in NumPy's LAPACK (reftorch/kernels/lapack_calls.py) --

_calls = None


def _direct():
    """lapack_calls (Numba loops over NumPy's own LAPACK), imported on the first call: `import reftorch`
    imports no Numba."""
    global _calls
    if _calls is None:
        _calls = importlib.import_module(__package__ + ".lapack_calls")
    return _calls


def potrf(a, upper=False):
    """(L, info) of cholesky(a) by LAPACK potrf, or None where NumPy's path is to run (lapack_calls.potrf)."""
    return _direct().potrf(a, upper)


def getrs(a, b):
    """X with a X = b by LAPACK getrf and getrs, or None where NumPy's path is to run (lapack_calls.getrs)."""
    return _direct().getrs(a, b)


def syevd(a, uplo="L"):
    """(eigenvalues, eigenvectors) by LAPACK syevd, or None where NumPy's path is to run (lapack_calls.syevd)."""
    return _direct().syevd(a, uplo)


def gesdd(a, full_matrices=True):
    """(U, S, Vh) by LAPACK gesdd, or None where NumPy's path is to run (lapack_calls.gesdd)."""
    return _direct().gesdd(a, full_matrices)


def numpy_svd(a, full_matrices=True):
    """NumPy's svd, behind gesdd's direct call; its refusal (gesdd did not converge, on non-finite values) as
    torch's LinAlgError, naming the first matrix with an inf or NaN."""
    try:
        return np.linalg.svd(a, full_matrices=full_matrices)
    except np.linalg.LinAlgError:
        where = ""
        if a.ndim > 2:
            bad = ~np.isfinite(a.reshape((-1,) + a.shape[-2:])).all(axis=(1, 2))
            where = f"(Batch element {int(np.argmax(bad))}): "
        raise LinAlgError(f"linalg.svd: {where}The algorithm failed to converge because the input matrix "
                          "contained non-finite values.") from None
