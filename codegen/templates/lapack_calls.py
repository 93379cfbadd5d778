"""The hot four of reftorch/kernels/lapack.py (cholesky, solve, eigh, svd: potrf, getrf + getrs, syevd, gesdd),
called directly in the LAPACK that NumPy's own wheel ships (its OpenBLAS), from a Numba loop over the batch.

numpy.linalg computes float32 in float64 (twice the time at 256 x 256), and costs ~10 µs of Python per call.
syevd and gesdd take Fortran-ordered copies, as NumPy and torch do, so that eigenvectors and singular vectors
come out with the same signs; the copy is one Numba pass that also checks the input is finite (where those
drivers misbehave). Their factors come back as LAPACK leaves them, matrices in column-major order, which is how
torch returns them (the runtime wraps such an array with its strides, no copy); potrf's too, on the same kind of
copy (its factor is unique, but torch's is column-major). solve factors
the C buffer, A^T in Fortran order, and solves with getrs('T'), as torch does for a contiguous A: no transposed
copy of A. Where that LAPACK is not found, or a call reports a failure, the caller takes NumPy's path (and
lapack.py's unblocked routines for the info codes). SciPy's scipy.linalg.lapack reaches the same routines but is
not a runtime dependency (importing scipy.linalg alone costs ~0.25 s at startup), and its per-call wrappers
would loop over a batch in Python.

eigh stays on syevd (measured on 64 x 32 x 32, one thread, as benches/linalg.py): syevr and syev give other
eigenvectors' signs than torch's syevd on about half of them (syevd's agree on all, above n = 25); SciPy's own
OpenBLAS build gives the same bits and no speed, and its per-matrix wrappers cost ~20 us a call. ~90% of the time
is OpenBLAS's syevd itself (its divide and conquer, stedc, ~2/3 of it; a Numba sytd2 in place of sytrd saved
nothing). torch's wheel calls MKL: the same syevd of MKL called from this loop takes torch's time and returns
torch's eigenvectors bit for bit, at every n; so where the optional `mkl` wheel is installed, syevd is MKL's
(_FROM_MKL below).

Copied verbatim into reftorch/kernels/lapack_calls.py by `python -m codegen`; reftorch/kernels/lapack.py
imports it on the first call (`import reftorch` imports no Numba).
"""
import ctypes
import glob
import math
import os
import sys

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from ._cache import CACHE  # first: _cache also sets the vector width Numba's CPU target is made with
from .lapack import LinAlgError, cholesky
from .. import _blas


# (symbol pattern, Fortran INTEGER) of the LAPACKs looked for: MKL's ILP64 names and the OpenBLAS builds in
# NumPy's wheels: scipy-openblas64 (NumPy 2), openblas64_ (NumPy 1.22 to 1.26), scipy-openblas32
_PATTERNS = (("{}_64_", np.int64), ("scipy_{}_64_", np.int64), ("scipy_{}_", np.int32))
_ROUTINES = ("potrf", "getrf", "getrs", "syevd", "gesdd")
_LETTER = {np.dtype(np.float32): "s", np.dtype(np.float64): "d"}


# syevd comes from MKL where the optional `mkl` wheel is installed (reftorch[mkl]): it is torch's own LAPACK,
# so eigenvectors come out with torch's signs bit for bit, and batched float32 eigh at torch's speed (64 x 32 x 32,
# one thread: 2.56 ms against OpenBLAS's 2.94, torch 2.47). The others stay on NumPy's OpenBLAS, measured faster
# at these sizes: potrf 0.13 vs 0.16 ms, getrf + getrs 0.22-0.36 vs 0.38-0.42 ms, gesdd even.
_FROM_MKL = ("syevd",)


def _openblas():
    """Paths of the OpenBLAS NumPy's wheel ships (Linux, macOS)."""
    pkg = os.path.dirname(np.__file__)
    return sorted(glob.glob(os.path.join(os.path.dirname(pkg), "numpy.libs", "*openblas*"))) + \
        sorted(glob.glob(os.path.join(pkg, ".dylibs", "*openblas*")))


def _mkl():
    """The path of MKL's runtime library where the `mkl` wheel is installed in this environment, or none."""
    return sorted(glob.glob(os.path.join(sys.prefix, "lib", "libmkl_rt.so*")))[:1]


def _find_lapack(paths):
    """({'dpotrf': address, ...}, Fortran INTEGER dtype, the library) of the first LAPACK of `paths` that has
    every routine, or (None, None, None)."""
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for pattern, itype in _PATTERNS:
            names = [p + r for r in _ROUTINES for p in "sd"]
            if all(hasattr(lib, pattern.format(name)) for name in names):
                return {name: ctypes.cast(getattr(lib, pattern.format(name)), ctypes.c_void_p).value
                        for name in names}, itype, lib
    return None, None, None


def _follow_threads(lib):
    """MKL's thread count follows torch.set_num_threads, as torch's own MKL does (OpenBLAS's already does:
    it is NumPy's BLAS, reftorch/_blas.py)."""
    if lib is not None and hasattr(lib, "MKL_Set_Num_Threads"):
        setter = lib.MKL_Set_Num_Threads
        setter.argtypes, setter.restype = [ctypes.c_int], None
        _blas.follow(setter)


def _tables():
    """The routines' addresses, their INTEGER dtype and MKL's library where syevd comes from it (_FROM_MKL)."""
    fns, itype, _ = _find_lapack(_openblas())
    mkl_fns, mkl_int, mkl = _find_lapack(_mkl())
    if mkl_fns is None:
        return fns, itype, None
    if fns is None or itype is not mkl_int:
        return mkl_fns, mkl_int, mkl
    return {**fns, **{name: a for name, a in mkl_fns.items() if name[1:] in _FROM_MKL}}, itype, mkl


_FNS, _INT, _MKL = _tables()
_follow_threads(_MKL)
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


_CHAR = {c: np.array([ord(c)], np.uint8) for c in "ULVASTN"}     # CHARACTER arguments (LAPACK only reads them)


def _stack(a):
    """a (..., m, n) as (batch, m, n): a view of a C-ordered array, so LAPACK's writes land in a."""
    return a.reshape((-1,) + a.shape[-2:])


_TILE = 16


@numba.njit(cache=CACHE)
def _transpose_into(src, dst):
    """dst[i] = src[i].T for each matrix (src (batch, m, n) of any strides, dst (batch, n, m) C-ordered: src's
    matrices in Fortran order), in tiles; whether every value is finite (v * 0 is 0 for a finite v, else NaN)."""
    b, m, n = src.shape
    acc = src.dtype.type(0)
    for i in range(b):
        for r0 in range(0, m, _TILE):
            for c0 in range(0, n, _TILE):
                for r in range(r0, min(r0 + _TILE, m)):
                    for c in range(c0, min(c0 + _TILE, n)):
                        v = src[i, r, c]
                        dst[i, c, r] = v
                        acc += v * 0
    return acc == 0


def _fortran_copy(a):
    """(x, finite): x a C-ordered array whose matrices hold a's transposed (a's matrices in Fortran order), and
    whether a holds no inf or NaN."""
    x = np.empty(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)
    return x, _transpose_into(_stack(a), _stack(x))


def _columns(x):
    """The matrices x (C-ordered) holds transposed, as column-major matrices: a view, no copy."""
    return np.swapaxes(x, -1, -2)


@numba.njit(cache=CACHE)
def _potrf_batch(f, x, info, iv, uplo, keep_lower):
    """potrf on each C-ordered matrix of x in place, then the triangle the factor does not use cleared (keep_lower:
    the buffer's lower triangle, read in C order); returns whether any failed (info, per matrix, says which)."""
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
    """(L, info) of cholesky(a) by LAPACK potrf, the factor's matrices column-major (as torch returns them); None
    where NumPy's path is to run. When a matrix is not positive-definite (NaN included, which NumPy's path lets
    through with info 0), lapack.py's unblocked `cholesky` redoes the batch: its factor stops at the failed minor
    as LAPACK's does.

    On a Fortran-ordered copy (one tiled pass, as for syevd), factored in the triangle named: the factor lies
    in Fortran order, and the other triangle, the buffer's lower one in C order for L, is cleared."""
    p = _letter(a)
    if p is None:
        return None
    x, _ = _fortran_copy(a)         # a fresh array: the runtime wraps its column-major matrices as they lie
    info = np.zeros(a.shape[:-2], np.int32)
    failed = _potrf_batch(_FNS[p + "potrf"], _stack(x), info.reshape(-1), np.zeros(2, _INT),
                          _CHAR["U" if upper else "L"], upper)
    if failed:
        factor, info = cholesky(a, upper)
        return _columns(np.ascontiguousarray(_columns(factor))), info
    return _columns(x), info


@numba.njit(cache=CACHE)
def _lu_solve_batch(getrf, getrs, a, b, piv, iv, trans):
    """getrf on each matrix of a ((batch, n, n) in C order: Fortran reads each transposed), then getrs(trans)
    with it on the right side of b ((batch, k, n): B^T, so B in Fortran order), both in place; whether any
    failed (a singular matrix)."""
    bsz, n, k = a.shape[0], a.shape[1], b.shape[1]
    iv[0], iv[1] = n, k
    ip, w = iv.ctypes.data, iv.itemsize
    sa, sb = n * n * a.itemsize, k * n * b.itemsize
    for i in range(bsz):
        _fortran_call(getrf, (ip, ip, a.ctypes.data + i * sa, ip, piv.ctypes.data, ip + 2 * w))
        if iv[2] != 0:
            return True
        _fortran_call(getrs, (trans.ctypes.data, ip, ip + w, a.ctypes.data + i * sa, ip, piv.ctypes.data,
                              b.ctypes.data + i * sb, ip, ip + 2 * w, 1))
    return False


def getrs(a, b):
    """X with a X = b ((..., n, n) and (..., n, k), batch dims broadcast) by LAPACK getrf and getrs, X's
    matrices column-major; None where NumPy's path is to run (a singular matrix included, whose info code that
    path reports). A C-ordered a is factored as it lies, A^T in Fortran order, and solved with getrs('T'), as
    torch does for a contiguous A (no transposed copy); a's with column-major matrices as A, with getrs('N')."""
    p = _letter(a)
    if p is None or b.dtype != a.dtype or b.size == 0:
        return None
    shape = a.shape[:-2] if a.shape[:-2] == b.shape[:-2] else np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    n, k = a.shape[-1], b.shape[-1]
    columns = not a.flags.c_contiguous and _columns(a).flags.c_contiguous
    af = np.array(np.broadcast_to(_columns(a) if columns else a, shape + (n, n)), order="C")
    bf, _ = _fortran_copy(np.broadcast_to(b, shape + (n, k)))
    if _lu_solve_batch(_FNS[p + "getrf"], _FNS[p + "getrs"], _stack(af), _stack(bf), np.empty(n, _INT),
                       np.zeros(3, _INT), _CHAR["N" if columns else "T"]):
        return None
    return _columns(bf)


@numba.njit(cache=CACHE)
def _syevd_batch(f, x, w, work, iwork, iv, jobz, uplo, query):
    """syevd on each matrix of x in place (eigenvectors as Fortran columns), eigenvalues into w; the index of the
    first that failed (its info left in iv[3]), or -1. query: only the workspace query (lwork = liwork = -1),
    answered in work[0] and iwork[0]."""
    b, n = x.shape[0], x.shape[1]
    iv[0] = n
    iv[1], iv[2] = (-1, -1) if query else (work.size, iwork.size)
    ip, s = iv.ctypes.data, iv.itemsize
    for i in range(1 if query else b):
        _fortran_call(f, (jobz.ctypes.data, uplo.ctypes.data, ip, x.ctypes.data + i * n * n * x.itemsize, ip,
                          w.ctypes.data + i * n * w.itemsize, work.ctypes.data, ip + s, iwork.ctypes.data, ip + 2 * s,
                          ip + 3 * s, 1, 1))
        if iv[3] != 0:
            return i
    return -1


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
    path is to run. On a Fortran-ordered copy, as for gesdd: the C buffer read as the other triangle would give
    eigenvectors of other signs (sytrd reduces it from the other end). The eigenvectors' matrices are
    column-major (as torch returns them). Non-finite input runs too: syevd's outcome on it (NaN results, or a
    failure and its info code) is torch's (MKL's) on every case checked; a failure raises torch's LinAlgError."""
    p = _letter(a)
    if p is None:
        return None
    x, _ = _fortran_copy(a)
    n = x.shape[-1]
    w = np.empty(a.shape[:-1], x.dtype)
    triangle = _CHAR["L" if uplo in "Ll" else "U"]
    iv = np.zeros(4, _INT)

    def run(work, iwork, query):
        return _syevd_batch(_FNS[p + "syevd"], _stack(x), w.reshape(-1, n), work, iwork, iv, _CHAR["V"], triangle,
                            query)
    failed = run(*_workspace(("syevd", p, n), x.dtype, run), False)
    if failed >= 0:
        where = f"(Batch element {failed}): " if a.ndim > 2 else ""
        raise LinAlgError(f"linalg.eigh: {where}The algorithm failed to converge because the input matrix is "
                          f"ill-conditioned or has too many repeated eigenvalues (error code: {int(iv[3])}).")
    return w, _columns(x)


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
        _fortran_call(f, (jobz.ctypes.data, ip, ip + w, x.ctypes.data + i * sx, ip, s.ctypes.data + i * ss,
                          u.ctypes.data + i * su, ip + 2 * w, vt.ctypes.data + i * sv, ip + 3 * w, work.ctypes.data,
                          ip + 4 * w, iwork.ctypes.data, ip + 5 * w, 1))
        if iv[5] != 0:
            return True
    return False


def gesdd(a, full_matrices=True):
    """(U, S, Vh) of a by LAPACK gesdd; None where NumPy's path is to run (inf or NaN in a, no convergence).

    Called on Fortran-ordered copies, as NumPy and torch call it: the SVD of the C buffer (a^T to Fortran)
    would save the transposes but take gesdd's other path, with singular vectors of other signs. U's and Vh's
    matrices are column-major (as torch returns them)."""
    p = _letter(a)
    if p is None:
        return None
    x, finite = _fortran_copy(a)
    if not finite:
        return None
    lead, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    s = np.empty(lead + (k,), x.dtype)
    u = np.empty(lead + (m if full_matrices else k, m), x.dtype)      # U: m x (m or k), Fortran order
    vh = np.empty(lead + (n, n if full_matrices else k), x.dtype)     # Vh: (n or k) x n

    def run(work, iwork, query):
        return _gesdd_batch(_FNS[p + "gesdd"], _stack(x), s.reshape(-1, k), _stack(u), _stack(vh), work, iwork,
                            np.zeros(6, _INT), _CHAR["A" if full_matrices else "S"], query)
    work, _ = _workspace(("gesdd", p, m, n, full_matrices), x.dtype, run)
    return None if run(work, np.empty(8 * k, _INT), False) else (_columns(u), s, _columns(vh))
