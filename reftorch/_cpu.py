"""The cpu back end: kernel lookup (and its dtype variant for 16-bit floats), allocation, threads, and the
elementwise runner every cpu path ends in.

Kernels come from reftorch/kernels/cpu.py (spec.kernel(suffix) looks them up there); 16-bit float storage runs
the kernels of reftorch/kernels/cpu_half.py, which see the storage as uint16 bit patterns, compute in float32
and round to nearest even on store (DESIGN §5).
"""
from __future__ import annotations

import importlib
import os
import warnings

import numpy as np

import reftorch._alloc as _alloc
from ._chalf import host_values
import reftorch._blas as _blas
import reftorch._dtype as D
import reftorch._layout as L
from ._layout import contiguous_array as _contig
import reftorch._threads as _threads
from ._tensor import Storage, Tensor

PROMOTED = ("Tensor", "Tensor?", "Tensor[]")
_half_cache = {}

_cpu = None         # reftorch.kernels.cpu, loaded on first kernel use
_cpu_half = None    # reftorch.kernels.cpu_half, likewise


def kernels():
    """reftorch.kernels.cpu, loaded on the first kernel use, not at `import reftorch`: it imports Numba (and its
    _cache keeps SciPy and Numba's registries off warm-cache loads), which costs most of start-up
    (README: REFTORCH_EAGER_INIT). The runtime's one deliberately deferred kind of module load."""
    global _cpu
    if _cpu is None:
        _cpu = importlib.import_module("reftorch.kernels.cpu")
    return _cpu


def new_tensor(arr, dtype):
    """A fresh tensor owning a contiguous array."""
    flat = arr.reshape(-1)
    return Tensor._make(Storage(flat), 0, arr.shape, L.contiguous_strides(arr.shape), dtype)


def empty(shape, dtype, strides=None):
    n = L.numel(shape)
    try:
        data = np.empty(n, dtype.np)
    except (ValueError, MemoryError):   # too big for any memory: PyTorch's error (reftorch/_alloc.py)
        raise _alloc.error(shape, dtype.itemsize) from None
    return Tensor._make(Storage(data), 0, tuple(shape), strides or L.contiguous_strides(shape), dtype)


BLOCK_MIN = 1 << 16  # elements from which operands with disagreeing stride orders take the blocked kernel
# Kernels release the GIL: from PARALLEL_MIN elements on, a contiguous elementwise kernel (or a reduction)
# runs in THREADS chunks at once, as PyTorch's intra-op pool does: every usable core by default, from a size
# (benches/compare.py's parallel threshold measures where threads start to pay) on. No load test: the
# 1-minute load average lags by a minute and counts this process's own threads, so on a quiet machine it kept
# large ops on one core (0.47x torch's broadcast add). THREADS is REFTORCH_NUM_THREADS, else NUMBA_NUM_THREADS
# (CI sets 1), else the usable CPUs; torch.set_num_threads caps it.
PARALLEL_MIN = int(os.environ.get("REFTORCH_PARALLEL_MIN", 1 << 21))
THREADS = int(os.environ.get("REFTORCH_NUM_THREADS") or os.environ.get("NUMBA_NUM_THREADS") or
              (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def set_num_threads(n):
    """The threads reftorch's kernels use (this one and THREADS - 1 in the pool) and the BLAS's threads for large
    products; small products stay on one BLAS thread (reftorch/_blas.py)."""
    global THREADS
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    THREADS = n                         # the next parallel op's pool has the new size (reftorch/_threads.py)
    _blas.set_max_threads(n)


def get_num_threads():
    return THREADS


def _parallel(n):
    """Whether n elements of work go to THREADS threads."""
    return n >= PARALLEL_MIN and THREADS >= 2


def _chunks(n, align=4096):
    """THREADS ranges covering range(n), each starting on a multiple of align."""
    step = -(-n // THREADS // align) * align
    return [(lo, min(lo + step, n)) for lo in range(0, n, step)]


def _in_threads(run, ranges):
    """run(lo, hi) for every range: all but the first in the pool, the first in this thread."""
    if len(ranges) == 1:
        run(*ranges[0])
        return
    pool = _threads.pool("reftorch", THREADS - 1)     # reftorch/_threads.py: a fresh one in a forked child
    futures = [pool.submit(run, lo, hi) for lo, hi in ranges[1:]]
    run(*ranges[0])
    for f in futures:
        f.result()


def _run_contig(kernel, arrays, scalars, n):
    if not _parallel(n):
        kernel(*arrays, *scalars)
        return
    _in_threads(lambda lo, hi: kernel(*[a[lo:hi] for a in arrays], *scalars), _chunks(n))


def run_elementwise(spec, ins, scalars, out):
    """Run the op's kernel over inputs already cast to the compute dtype, writing into `out`."""
    if out.dtype.half or ins[0].dtype.half or (out.dtype.category < 2 and any(t.dtype.half for t in ins)):
        return run_half(spec, ins, scalars, out)     # 16-bit floats: uint16 storage, f32 math
    shape = out._shape
    n = L.numel(shape)
    if n == 0:
        return out
    odata = out._storage.data
    if all(t._shape == shape and L.is_contiguous(t._shape, t._strides) for t in ins) and \
            L.is_contiguous(shape, out._strides):
        args = [odata[out._offset:out._offset + n]]
        if ins[0] is out:       # in place: out passed once (see emit_cpu.inplace_kernel)
            args += [t._storage.data[t._offset:t._offset + n] for t in ins[1:]]
            _run_contig(spec.kernel("inplace"), args, scalars, n)
            return out
        args += [t._storage.data[t._offset:t._offset + n] for t in ins]
        _run_contig(spec.kernel("contig"), args, scalars, n)
        return out
    strides = [out._strides] + [L.broadcast_strides(t._shape, t._strides, shape) for t in ins]
    # walk the dims in the output's memory order (a transposed output is then walked contiguously), then
    # merge the dims every operand walks as one
    order = sorted(range(len(shape)), key=lambda d: -out._strides[d])
    cshape, cstrides = L.collapse(tuple(shape[d] for d in order), [tuple(st[d] for d in order) for st in strides])
    if len(cshape) == 1 and all(st[0] == 1 for st in cstrides):     # every operand dense, in one order
        args = [odata[out._offset:out._offset + n]]
        args += [t._storage.data[t._offset:t._offset + n] for t in ins]
        _run_contig(spec.kernel("contig"), args, scalars, n)
        return out
    kind = "strided"
    if n >= BLOCK_MIN and len(cshape) >= 2 and any(st[-1] > 1 and 0 < st[-2] < st[-1] for st in cstrides[1:]):
        kind = "blocked"        # an input walks the output's inner dim with a large stride: tile the last two dims
    # geometry travels as int64 arrays, not tuples: Numba then compiles one strided kernel per dtype
    # instead of one per (dtype, ndim), which cuts cold-compile time several-fold
    geo = [np.array(st, np.int64) for st in cstrides]
    kernel = spec.kernel(kind)

    def run(lo, hi):    # the outermost dim's indices lo..hi (the output's slowest: each chunk writes its own block)
        args = [np.array((hi - lo,) + cshape[1:], np.int64), odata, out._offset + lo * cstrides[0][0], geo[0]]
        for t, st, g in zip(ins, cstrides[1:], geo[1:]):
            args += [t._storage.data, t._offset + lo * st[0], g]
        kernel(*args, *scalars)
    if _parallel(n) and cshape[0] >= 2 * THREADS:     # broadcasts, transposed operands (blocked: rows of tiles)
        _in_threads(run, _chunks(cshape[0], 1))
    else:
        run(0, cshape[0])
    return out


# ---------------------------------------------------------------------------- the back-end contract
# (reftorch/_backend.py): what a handler written once for every device asks of the cpu; cuda and meta answer
# the same names in reftorch/_cuda_dispatch.py and reftorch/_meta.py

def destination(self, tensors):
    """The device an in-place op on self writes on (every argument is on the cpu here)."""
    return None


def operand(dev, t):
    return t


def alloc(shape, dtype, dev):
    return empty(shape, dtype)


def clone(t):
    """A contiguous copy (no history)."""
    return new_tensor(np.array(t._array(), order="C"), t.dtype)


def copy_into(dst, src):
    dst._array()[...] = src._array()
    return dst


def cast(t, dtype):
    """t converted to dtype (a no-op when it already is); wrapped scalars convert for free."""
    if t.dtype is dtype:
        return t
    if dtype is D.complex32 or t.dtype is D.complex32:     # (reftorch/_chalf.py)
        arr = host_values(t, dtype)
    elif dtype.half or t.dtype.half:
        out = empty(t._shape, dtype)
        if cast_into(t, out):     # float32 <-> 16 bits in a kernel, rounding as NumPy does
            out._wrapped = t._wrapped
            return out
        with np.errstate(over="ignore", invalid="ignore"):     # out of range rounds to inf, silently
            arr = _real_part(t, dtype).astype(dtype.np)
    else:
        arr = _real_part(t, dtype).astype(dtype.np)
    out = new_tensor(_contig(arr), dtype)
    out._wrapped = t._wrapped
    return out


def _real_part(t, dtype):
    """t's values for a cast to dtype: a complex tensor into a real dtype keeps its real part with PyTorch's
    UserWarning (sum(z, dtype=torch.float32), a reduction into a real out=), where NumPy would raise its own
    ComplexWarning; into bool it stays complex (either part nonzero, without a warning, as PyTorch's)."""
    arr = t._array()
    if arr.dtype.kind == "c" and dtype.category < 3 and dtype is not D.bool_:
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=2)
        return arr.real
    return arr


# ---------------------------------------------------------------------------- 16-bit floats: the dtype variant of kernel lookup


def half_kernels():
    """reftorch.kernels.cpu_half, loaded on first use as kernels() is."""
    global _cpu_half
    if _cpu_half is None:
        _cpu_half = importlib.import_module("reftorch.kernels.cpu_half")
    return _cpu_half


def half_kernel(name, fmt, suffix):
    key = (name, fmt, suffix)
    k = _half_cache.get(key)
    if k is None:
        k = _half_cache[key] = getattr(half_kernels(), f"{name}_{fmt}_{suffix}")
    return k


def bits(arr):
    """A 16-bit float array as the uint16 bit patterns the kernels take (a view; other arrays as they are)."""
    return arr.view(np.uint16) if arr.dtype.itemsize == 2 and arr.dtype.kind not in "iu" else arr


def compute_format(spec, ins):
    """The half format the op computes in: that of its promoted (16-bit) inputs, or None."""
    for t, ty in zip(ins, spec.tensor_types):
        if ty in PROMOTED and t.dtype.half:
            return t.dtype.half
    return None


def run_half(spec, ins, scalars, out):
    """run_elementwise for 16-bit operands: uint16 storage, float32 arithmetic."""
    fmt = compute_format(spec, ins)
    if fmt is None or (out.dtype.category == 2 and out.dtype.half != fmt):
        # a conversion into or out of a 16-bit type (`.to()`), or into another float: through NumPy's cast,
        # which rounds to nearest even as the kernels do
        tmp_dtype = next(t.dtype for t, ty in zip(ins, spec.tensor_types) if ty in PROMOTED) if fmt is None \
            else next(t.dtype for t in ins if t.dtype.half == fmt)
        tmp = empty(out._shape, tmp_dtype)
        if tmp_dtype.half:
            run_half(spec, ins, scalars, tmp)
        else:
            run_elementwise(spec, ins, scalars, tmp)
        if not cast_into(tmp, out):
            out._array()[...] = tmp._array()
        return out
    shape = out._shape
    n = L.numel(shape)
    if n == 0:
        return out
    odata = bits(out._storage.data)
    # Python numbers go in as float32, the compute type (PyTorch's opmath; NumPy too with a Python scalar):
    # float64 arithmetic would halve the kernel's vector width
    scalars = [np.float32(s) if s.__class__ is float else s for s in scalars]
    if all(t._shape == shape and L.is_contiguous(t._shape, t._strides) for t in ins) and \
            L.is_contiguous(shape, out._strides):
        args = [odata[out._offset:out._offset + n]]
        args += [bits(t._storage.data[t._offset:t._offset + n]) for t in ins]
        _run_contig(half_kernel(spec.name, fmt, "contig"), args, scalars, n)
        return out
    strides = [out._strides] + [L.broadcast_strides(t._shape, t._strides, shape) for t in ins]
    cshape, cstrides = L.collapse(shape, strides)
    args = [np.array(cshape, np.int64), odata, out._offset, np.array(cstrides[0], np.int64)]
    for t, st in zip(ins, cstrides[1:]):
        args += [bits(t._storage.data), t._offset, np.array(st, np.int64)]
    half_kernel(spec.name, fmt, "strided")(*args, *scalars)
    return out


def cast_into(src, out):
    """out[...] = src (same shape) through the conversion kernels when one is float32 and the other 16-bit and
    both are contiguous (NumPy's float16 casts are software: ~8 against ~0.5 ns/element; the kernels round
    alike, bit for bit). False for every other case: the caller casts with NumPy."""
    if src.dtype is D.float32 and out.dtype.half:
        name = f"{out.dtype.half}_store_array"
    elif src.dtype.half and out.dtype is D.float32:
        name = f"{src.dtype.half}_load_array"
    else:
        return False
    if not (L.is_contiguous(out._shape, out._strides) and L.is_contiguous(src._shape, src._strides)):
        return False
    n = L.numel(out._shape)
    _run_contig(getattr(half_kernels(), name), [bits(src._storage.data[src._offset:src._offset + n]),
                                          bits(out._storage.data[out._offset:out._offset + n])], (), n)
    return True


def half_acc_dtype(rule):
    """Reductions and scans over 16-bit floats accumulate in float32 (float64 when the op asks for it)."""
    return D.float64 if rule == "float64" else D.float32


def to_half(arrays, dtype):
    """Results of a NumPy body computed through float32, rounded back to the 16-bit compute dtype."""
    out = []
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind == "f" and a.dtype != dtype.np:
            a = _convert(a, dtype.np, f"{dtype.half}_store_array") if a.dtype == np.float32 else a.astype(dtype.np)
        out.append(a)
    return out


def half_up(arr):
    """A 16-bit array as float32 for a NumPy body (exact)."""
    if arr is None or arr.dtype.itemsize != 2 or arr.dtype.kind in "iu":
        return arr
    return _convert(arr, np.float32, f"{D.from_numpy(arr.dtype).half}_load_array")


def _convert(arr, np_dtype, kernel):
    """arr as np_dtype through a conversion kernel of cpu_half (see cast_into: NumPy's 16-bit casts are
    software, ~16x slower; around every array op of a float16 model they were a third of its step)."""
    if not arr.flags.c_contiguous:
        return arr.astype(np_dtype)
    out = np.empty(arr.shape, np_dtype)
    _run_contig(getattr(half_kernels(), kernel), [bits(arr).reshape(-1), bits(out).reshape(-1)], (), arr.size)
    return out
