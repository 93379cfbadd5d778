"""The hot four of reftorch/kernels/lapack.py (potrf, gesv, syevd, gesdd: cholesky, solve, eigh, svd), called
directly in the LAPACK that NumPy's own wheel ships (its OpenBLAS), from a Numba loop over the batch.

numpy.linalg computes float32 in float64 (twice the time at 256 x 256), and costs ~10 µs of Python per call.
These calls take Fortran-ordered copies, as NumPy and torch do, so that eigenvectors and singular vectors come
out with the same signs; only potrf, whose factor is unique, reads the C buffer as it is (its transpose in
Fortran order, so the other triangle is named). Where that LAPACK is not found, or a call reports a failure,
the caller takes NumPy's path (and lapack.py's unblocked routines for the info codes). SciPy's
scipy.linalg.lapack reaches the same routines but is not a runtime dependency (importing scipy.linalg alone
costs ~0.25 s at startup), and its per-call wrappers would loop over a batch in Python.

Copied verbatim into reftorch/kernels/lapack_calls.py by `python -m codegen`; reftorch/kernels/lapack.py
imports it on the first call (`import reftorch` imports no Numba).
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
from .lapack import cholesky


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
    positive-definite (NaN included, which NumPy's path lets through with info 0), lapack.py's unblocked
    `cholesky` redoes the batch: its factor stops at the failed minor as LAPACK's does.

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
