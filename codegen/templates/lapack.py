"""LAPACK routines NumPy does not expose, written over NumPy arrays and batched over leading dims.

NumPy's linalg (LAPACK underneath) serves inv, solve, det, cholesky, eigh, svd, qr and lstsq. PyTorch's
linalg also returns LU factors with LAPACK's pivots (getrf), triangular solves (trsm), Bunch-Kaufman LDL
factors (sytrf) and the matrix exponential; these are those algorithms, unblocked, with the pivot choices
and `info` codes of the LAPACK routine they mirror, so results agree with PyTorch's element for element up
to rounding. The loops run over one matrix dimension; each step is a NumPy operation over the whole batch.

Copied verbatim into reftorch/kernels/lapack.py by `python -m codegen`; the array-op bodies of ops.yaml
call it as `lapack.<name>`.

The hot four (potrf, gesv, syevd, gesdd: cholesky, solve, eigh, svd) are also called directly, in the LAPACK
that NumPy's own wheel ships (its OpenBLAS), from a Numba loop over the batch: numpy.linalg computes float32 in
float64 (twice the time at 256 x 256), copies every matrix into Fortran order and back, and costs ~10 µs of
Python per call. They take Fortran-ordered copies, as NumPy and torch do, so that eigenvectors and singular
vectors come out with the same signs; only potrf, whose factor is unique, reads the C buffer as it is (its
transpose in Fortran order, so the other triangle is named). Where that LAPACK is not found, or a call reports
a failure, the caller takes NumPy's path (and the unblocked routines above for the info codes). SciPy's
scipy.linalg.lapack reaches the same routines but is not a runtime dependency (importing scipy.linalg alone
costs ~0.25 s at startup), and its per-call wrappers would loop over a batch in Python.
"""
import ctypes
import glob
import math
import os

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from ._cache import CACHE  # first: _cache also sets the vector width Numba's CPU target is made with


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
        p = j + np.argmax(np.abs(x[:, j:, j]), axis=1) if m > j else np.full(b, j)
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
    if not left:
        return lu_solve(lu, pivots, np.swapaxes(b, -1, -2), True, not adjoint).swapaxes(-1, -2)
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
    luT = np.swapaxes(lu, -1, -2)  # U^T L^T P^T X = B: X = P L^-T U^-T B
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
        x = np.swapaxes(x, -1, -2).copy()
    info = np.zeros(bsz, np.int32)
    low = np.tril(x)
    for j in range(n):
        live = info == 0
        d = low[:, j, j] - np.einsum("bk,bk->b", low[:, j, :j], low[:, j, :j])
        bad = live & ~(d > 0)
        info[bad] = j + 1
        low[bad, j, j] = d[bad]                 # LAPACK stops there: the failed pivot's updated value
        ok = live & ~bad
        low[ok, j, j] = np.sqrt(d[ok])
        if j + 1 < n:
            col = low[ok, j + 1:, j] - np.einsum("bik,bk->bi", low[ok, j + 1:, :j], low[ok, j, :j])
            low[ok, j + 1:, j] = col / low[ok, j, j][:, None]
    done = np.tril(low)
    if upper:
        done = np.swapaxes(done, -1, -2)
    return np.ascontiguousarray(done).reshape(a.shape), info.reshape(lead)


def _ldl_one(x):
    """sytf2 (lower): Bunch-Kaufman LDL^T of one symmetric matrix, in place; (pivots, info)."""
    n = x.shape[0]
    alpha = (1 + math.sqrt(17)) / 8
    piv = np.zeros(n, np.int32)
    info, k = 0, 0
    while k < n:
        kstep, absakk = 1, abs(x[k, k])
        imax = k + 1 + int(np.argmax(np.abs(x[k + 1:, k]))) if k < n - 1 else k
        colmax = abs(x[imax, k]) if k < n - 1 else 0.0
        if max(absakk, colmax) == 0 or math.isnan(absakk):
            info = info or k + 1
            kp = k
        elif absakk >= alpha * colmax:
            kp = k
        else:
            row = np.abs(x[imax, k:imax])
            rowmax = row.max()
            if imax < n - 1:
                rowmax = max(rowmax, np.abs(x[imax + 1:, imax]).max())
            if absakk >= alpha * colmax * (colmax / rowmax):
                kp = k
            elif abs(x[imax, imax]) >= alpha * rowmax:
                kp = imax
            else:
                kp, kstep = imax, 2
        kk = k + kstep - 1
        if kp != kk:
            _ldl_swap(x, k, kk, kp, kstep)
        _ldl_update(x, k, kstep, n)
        piv[k:k + kstep] = kp + 1 if kstep == 1 else -(kp + 1)
        k += kstep
    return piv, info


def _ldl_swap(x, k, kk, kp, kstep):
    """Symmetric interchange of rows and columns kk and kp of the trailing lower triangle."""
    x[kp + 1:, [kk, kp]] = x[kp + 1:, [kp, kk]]
    seg = x[kk + 1:kp, kk].copy()
    x[kk + 1:kp, kk] = x[kp, kk + 1:kp]
    x[kp, kk + 1:kp] = seg
    x[kk, kk], x[kp, kp] = x[kp, kp], x[kk, kk]
    if kstep == 2:
        x[k + 1, k], x[kp, k] = x[kp, k], x[k + 1, k]


def _ldl_update(x, k, kstep, n):
    """The rank-1 or rank-2 update of the trailing lower triangle, and the columns of L."""
    if kstep == 1:
        if k < n - 1 and x[k, k] != 0:
            v = x[k + 1:, k].copy()
            x[k + 1:, k + 1:] -= np.outer(v, v) / x[k, k]
            x[k + 1:, k] = v / x[k, k]
        return
    if k < n - 2:
        d21 = x[k + 1, k]
        d11, d22 = x[k + 1, k + 1] / d21, x[k, k] / d21
        t = 1 / (d11 * d22 - 1)
        d21 = t / d21
        a0, a1 = x[k + 2:, k].copy(), x[k + 2:, k + 1].copy()
        wk, wkp1 = d21 * (d11 * a0 - a1), d21 * (d22 * a1 - a0)
        x[k + 2:, k + 2:] -= np.outer(a0, wk) + np.outer(a1, wkp1)
        x[k + 2:, k], x[k + 2:, k + 1] = wk, wkp1


def ldl_factor(a):
    """sytrf (lower): (LD, pivots, info) of (..., n, n) symmetric matrices; LD's strict upper triangle is 0."""
    x, lead = batched(np.array(a, copy=True))
    piv = np.zeros(x.shape[:2], np.int32)
    info = np.zeros(x.shape[0], np.int32)
    for i in range(x.shape[0]):
        piv[i], info[i] = _ldl_one(x[i])
    return np.tril(x).reshape(a.shape), piv.reshape(lead + (x.shape[-1],)), info.reshape(lead)


def _ldl_solve_one(ld, piv, b):
    """sytrs (lower) for one factorization: b overwritten with X."""
    n = ld.shape[0]
    k = 0
    while k < n:
        if piv[k] > 0:
            kp = piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1:] -= np.outer(ld[k + 1:, k], b[k])
            b[k] /= ld[k, k]
            k += 1
            continue
        kp = -piv[k] - 1
        b[[k + 1, kp]] = b[[kp, k + 1]]
        b[k + 2:] -= np.outer(ld[k + 2:, k], b[k]) + np.outer(ld[k + 2:, k + 1], b[k + 1])
        akm1k = ld[k + 1, k]
        akm1, ak = ld[k, k] / akm1k, ld[k + 1, k + 1] / akm1k
        denom = akm1 * ak - 1
        bkm1, bk = b[k] / akm1k, b[k + 1] / akm1k
        b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
        k += 2
    k = n - 1
    while k >= 0:
        step = 1 if piv[k] > 0 else 2
        b[k] -= ld[k + 1:, k] @ b[k + 1:]
        if step == 2:
            b[k - 1] -= ld[k + 1:, k - 1] @ b[k + 1:]
        kp = abs(piv[k]) - 1
        b[[k, kp]] = b[[kp, k]]
        k -= step
    return b


def ldl_solve(ld, pivots, b):
    """sytrs (lower): X with A X = B from sytrf's (LD, pivots), batched with broadcasting."""
    shape = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    lds = np.broadcast_to(ld, shape + ld.shape[-2:]).reshape((-1,) + ld.shape[-2:])
    pv = np.broadcast_to(pivots, shape + pivots.shape[-1:]).reshape((-1, pivots.shape[-1]))
    x = np.array(np.broadcast_to(b, shape + b.shape[-2:]), dtype=np.result_type(ld, b)).reshape((-1,) + b.shape[-2:])
    for i in range(x.shape[0]):
        _ldl_solve_one(lds[i], pv[i], x[i])
    return x.reshape(shape + b.shape[-2:])


_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0,
           960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def matrix_exp(a):
    """exp(A) of (..., n, n) by scaling and squaring with the degree-13 Pade approximant (Higham 2005)."""
    x, lead = batched(np.asarray(a, np.float64))
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


# -- NumPy's LAPACK, called directly (see the module's docstring) --

# (symbol pattern, Fortran INTEGER) of the OpenBLAS builds in NumPy's wheels: scipy-openblas64 (NumPy 2),
# openblas64_ (NumPy 1.22 to 1.26), scipy-openblas32
_PATTERNS = (("scipy_{}_64_", np.int64), ("{}_64_", np.int64), ("scipy_{}_", np.int32))
_ROUTINES = ("potrf", "gesv", "syevd", "gesdd")
_LETTER = {np.dtype(np.float32): "s", np.dtype(np.float64): "d"}


def _find_lapack():
    """({'dpotrf': address, ...}, Fortran INTEGER dtype) of the LAPACK NumPy's wheel ships, or (None, None)."""
    pkg = os.path.dirname(np.__file__)
    paths = sorted(glob.glob(os.path.join(os.path.dirname(pkg), "numpy.libs", "*openblas*"))) + \
        sorted(glob.glob(os.path.join(pkg, ".dylibs", "*openblas*")))
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for pattern, itype in _PATTERNS:
            names = [p + r for r in _ROUTINES for p in "sd"]
            if all(hasattr(lib, pattern.format(name)) for name in names):
                return {name: ctypes.cast(getattr(lib, pattern.format(name)), ctypes.c_void_p).value
                        for name in names}, itype
    return None, None


_FNS, _INT = _find_lapack()
_WORK = {}          # (routine, its sizes) -> the optimal workspace LAPACK's query reported


@intrinsic
def _fortran_call(typingctx, address, args):
    """Call the Fortran routine at `address` with `args`, a tuple of integers: the addresses of its arguments,
    then the lengths of its CHARACTER ones. (An address passed as a plain integer keeps the loops below
    cacheable, and Numba's dispatch over one is ~0.5 µs where a ctypes function object costs ~13 µs.)"""
    if not isinstance(address, types.Integer) or not isinstance(args, types.BaseTuple):
        return None

    def codegen(context, builder, signature, llargs):
        word = context.get_value_type(types.intp)
        values = [context.cast(builder, v, t, types.intp)
                  for v, t in zip(cgutils.unpack_tuple(builder, llargs[1]), args.types)]
        fn = builder.inttoptr(llargs[0], ir.FunctionType(ir.VoidType(), [word] * len(values)).as_pointer())
        builder.call(fn, values)
        return context.get_dummy_value()
    return types.none(address, args), codegen


def _letter(a):
    """The routine prefix ('s', 'd') for a direct call on a, or None where NumPy's path runs instead."""
    return None if _FNS is None or a.size == 0 else _LETTER.get(a.dtype)


_CHAR = {c: np.array([ord(c)], np.uint8) for c in "ULVAS"}     # CHARACTER arguments (LAPACK only reads them)


def _fortran_copy(a):
    """A C-ordered array whose matrices hold a's transposed: a's matrices in Fortran order (and back)."""
    x = np.empty(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)
    x[...] = np.swapaxes(a, -1, -2)
    return x


def _stack(a):
    """a (..., m, n) as (batch, m, n): a view of a C-ordered array, so LAPACK's writes land in a."""
    return a.reshape((-1,) + a.shape[-2:])


@numba.njit(cache=CACHE)
def _finite(x, i):
    """Whether matrix i of x holds no inf or NaN (where LAPACK's eigen and singular value drivers misbehave)."""
    for v in x[i].flat:
        if not math.isfinite(v):
            return False
    return True


@numba.njit(cache=CACHE)
def _potrf_batch(f, x, info, iv, uplo, keep_lower):
    """potrf on each C-ordered matrix of x in place, then the triangle the factor does not use cleared; returns
    whether any failed (info, per matrix, says which)."""
    b, n = x.shape[0], x.shape[1]
    iv[0] = n
    ip, step = iv.ctypes.data, n * n * x.itemsize
    failed = False
    for i in range(b):
        _fortran_call(f, (uplo.ctypes.data, ip, x.ctypes.data + i * step, ip, ip + iv.itemsize, 1))
        info[i] = iv[1]
        failed |= iv[1] != 0
        for r in range(n):          # OpenBLAS's potrf takes a NaN pivot as positive; reference LAPACK stops
            failed |= math.isnan(x[i, r, r])
        for r in range(n):
            for c in range(r + 1, n) if keep_lower else range(r):
                x[i, r, c] = 0
    return failed


def potrf(a, upper=False):
    """(L, info) of cholesky(a) by LAPACK potrf; None where NumPy's path is to run. When a matrix is not
    positive-definite (NaN included, which NumPy's path lets through with info 0), the unblocked `cholesky`
    above redoes the batch: its factor stops at the failed minor as LAPACK's does.

    C order reads a's lower triangle as the upper one of a^T = a, so potrf('U') of the buffer leaves U with
    a = U^T U, which read back in C order is L."""
    p = _letter(a)
    if p is None:
        return None
    x = np.array(a, order="C", copy=True)       # fresh arrays: the runtime wraps them as they are
    info = np.zeros(a.shape[:-2], np.int32)
    failed = _potrf_batch(_FNS[p + "potrf"], _stack(x), info.reshape(-1), np.zeros(2, _INT),
                          _CHAR["L" if upper else "U"], not upper)
    return cholesky(a, upper) if failed else (x, info)


@numba.njit(cache=CACHE)
def _gesv_batch(f, a, b, piv, iv):
    """gesv on each matrix of a ((batch, n, n), each A^T in C order: A in Fortran's) and right side of b
    ((batch, k, n): B^T), both in place; whether any failed (a singular matrix)."""
    bsz, n, k = a.shape[0], a.shape[1], b.shape[1]
    iv[0], iv[1] = n, k
    ip, w = iv.ctypes.data, iv.itemsize
    sa, sb = n * n * a.itemsize, k * n * b.itemsize
    for i in range(bsz):
        _fortran_call(f, (ip, ip + w, a.ctypes.data + i * sa, ip, piv.ctypes.data, b.ctypes.data + i * sb, ip,
                          ip + 2 * w))
        if iv[2] != 0:
            return True
    return False


def gesv(a, b):
    """X with a X = b ((..., n, n) and (..., n, k), batch dims broadcast) by LAPACK gesv; None where NumPy's
    path is to run (a singular matrix included, whose info code that path reports)."""
    p = _letter(a)
    if p is None or b.dtype != a.dtype or b.size == 0:
        return None
    shape = a.shape[:-2] if a.shape[:-2] == b.shape[:-2] else np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    n, k = a.shape[-1], b.shape[-1]
    af = _fortran_copy(np.broadcast_to(a, shape + (n, n)))
    bf = _fortran_copy(np.broadcast_to(b, shape + (n, k)))
    if _gesv_batch(_FNS[p + "gesv"], _stack(af), _stack(bf), np.empty(n, _INT), np.zeros(3, _INT)):
        return None
    return _fortran_copy(bf)


@numba.njit(cache=CACHE)
def _syevd_batch(f, x, w, work, iwork, iv, jobz, uplo, query):
    """syevd on each matrix of x in place (eigenvectors as Fortran columns), eigenvalues into w; whether any
    failed or held inf or NaN. query: only the workspace query (lwork = liwork = -1), answered in work[0] and
    iwork[0]."""
    b, n = x.shape[0], x.shape[1]
    iv[0] = n
    iv[1], iv[2] = (-1, -1) if query else (work.size, iwork.size)
    ip, s = iv.ctypes.data, iv.itemsize
    for i in range(1 if query else b):
        if not (query or _finite(x, i)):
            return True
        _fortran_call(f, (jobz.ctypes.data, uplo.ctypes.data, ip, x.ctypes.data + i * n * n * x.itemsize, ip,
                          w.ctypes.data + i * n * w.itemsize, work.ctypes.data, ip + s, iwork.ctypes.data, ip + 2 * s,
                          ip + 3 * s, 1, 1))
        if iv[3] != 0:
            return True
    return False


def _workspace(key, dtype, run):
    """(work, iwork) of the optimal sizes that LAPACK's workspace query, run(work, iwork, True), reports."""
    sizes = _WORK.get(key)
    if sizes is None:
        work, iwork = np.zeros(1, dtype), np.zeros(1, _INT)
        run(work, iwork, True)
        sizes = _WORK[key] = (max(1, int(work[0])), max(1, int(iwork[0])))
    return np.empty(sizes[0], dtype), np.empty(sizes[1], _INT)


def syevd(a, uplo="L"):
    """(eigenvalues, eigenvectors) of symmetric a from its uplo triangle by LAPACK syevd; None where NumPy's
    path is to run (inf or NaN in a, no convergence). On a Fortran-ordered copy, as for gesdd: the C buffer
    read as the other triangle would give eigenvectors of other signs (sytrd reduces it from the other end)."""
    p = _letter(a)
    if p is None:
        return None
    x = _fortran_copy(a)
    n = x.shape[-1]
    w = np.empty(a.shape[:-1], x.dtype)
    triangle = _CHAR["L" if uplo in "Ll" else "U"]

    def run(work, iwork, query):
        return _syevd_batch(_FNS[p + "syevd"], _stack(x), w.reshape(-1, n), work, iwork, np.zeros(4, _INT),
                            _CHAR["V"], triangle, query)
    if run(*_workspace(("syevd", p, n), x.dtype, run), False):
        return None
    return w, _fortran_copy(x)


@numba.njit(cache=CACHE)
def _gesdd_batch(f, x, s, u, vt, work, iwork, iv, jobz, query):
    """gesdd on each matrix of x ((batch, N, M) in C order: M x N in Fortran's) into s, u ((batch, columns, M))
    and vt ((batch, N, rows)); x is overwritten; the result and query as in _syevd_batch."""
    b, mf, nf = x.shape[0], x.shape[2], x.shape[1]
    iv[0], iv[1], iv[2], iv[3] = mf, nf, mf, vt.shape[2]
    iv[4] = -1 if query else work.size
    ip, w = iv.ctypes.data, iv.itemsize
    sx, ss = mf * nf * x.itemsize, s.shape[1] * s.itemsize
    su, sv = u.shape[1] * u.shape[2] * u.itemsize, vt.shape[1] * vt.shape[2] * vt.itemsize
    for i in range(1 if query else b):
        if not (query or _finite(x, i)):
            return True
        _fortran_call(f, (jobz.ctypes.data, ip, ip + w, x.ctypes.data + i * sx, ip, s.ctypes.data + i * ss,
                          u.ctypes.data + i * su, ip + 2 * w, vt.ctypes.data + i * sv, ip + 3 * w, work.ctypes.data,
                          ip + 4 * w, iwork.ctypes.data, ip + 5 * w, 1))
        if iv[5] != 0:
            return True
    return False


def gesdd(a, full_matrices=True):
    """(U, S, Vh) of a by LAPACK gesdd; None where NumPy's path is to run (inf or NaN in a, no convergence).

    Called on Fortran-ordered copies, as NumPy and torch call it: the SVD of the C buffer (a^T to Fortran)
    would save the transposes but take gesdd's other path, with singular vectors of other signs."""
    p = _letter(a)
    if p is None:
        return None
    x = _fortran_copy(a)
    lead, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    s = np.empty(lead + (k,), x.dtype)
    u = np.empty(lead + (m if full_matrices else k, m), x.dtype)      # U: m x (m or k), Fortran order
    vh = np.empty(lead + (n, n if full_matrices else k), x.dtype)     # Vh: (n or k) x n

    def run(work, iwork, query):
        return _gesdd_batch(_FNS[p + "gesdd"], _stack(x), s.reshape(-1, k), _stack(u), _stack(vh), work, iwork,
                            np.zeros(6, _INT), _CHAR["A" if full_matrices else "S"], query)
    work, _ = _workspace(("gesdd", p, m, n, full_matrices), x.dtype, run)
    return None if run(work, np.empty(8 * k, _INT), False) else (_fortran_copy(u), s, _fortran_copy(vh))
