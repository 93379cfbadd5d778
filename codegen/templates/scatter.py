"""Scatter-adds in index order: x[..., index[i], ...] += source[..., i, ...] for i = 0, 1, 2 ...

PyTorch's CPU index_add_ (and embedding's backward, which the index_select formula reaches) adds the slices one
index after the other, so a row hit k times is ((x + s0) + s1) + ... rounded after each add; np.add.at gives
the same sums in the same order but costs ~7 ns per element added (0.27 ms for an embedding gradient of 1536 x 24
float32), where this loop costs ~5 µs. Any other pair of dtypes (a source of another dtype than x, whose
casting error NumPy raises; a dtype Numba lacks) keeps np.add.at. (16-bit floats arrive here as float32: the
array-op bodies run them through float32, reftorch/_array.py.)

Copied verbatim into reftorch/kernels/scatter.py by `python -m codegen`; the array-op bodies of ops.yaml
call it as `scatter.<name>`, and reftorch/_indexing.py's accumulating writes (x[idx] += v, index_put_) as
`scatter.add_at`.
"""
import importlib
import math

import numpy as np

# the dtypes the loop adds as NumPy does (bool: logical or)
_NATIVE = frozenset(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                          np.uint32, np.uint64, np.float32, np.float64, np.complex64,
                                          np.complex128))


def _add_slices(x, index, s):
    # x (outer, n, inner), index (k,), s (outer, k, inner); index checked by the caller
    for o in range(x.shape[0]):
        for i in range(index.shape[0]):
            r = index[i]
            for j in range(x.shape[2]):
                x[o, r, j] += s[o, i, j]


def _or_slices(x, index, s):
    for o in range(x.shape[0]):
        for i in range(index.shape[0]):
            r = index[i]
            for j in range(x.shape[2]):
                x[o, r, j] = x[o, r, j] or s[o, i, j]


def add_at(x, where, v):
    """np.add.at(x, where, v), the same sums in the same order. One integer array among whole slices -- the rows
    W[idx] picks, whose gradient comes here -- is index_add along its dim (np.add.at costs ~0.3 µs per element
    once a slice is among the indices); any other index keeps np.add.at, whose own loop is fast when every index
    is an integer array, and which raises NumPy's errors (an index out of range, values that do not fit)."""
    dim = _single_array_dim(x, where)
    if dim is not None:
        index, n = where[dim], x.shape[dim]
        if index.size and -n <= index.min() and index.max() < n:
            rows = index.reshape(-1) % n
            shape = x.shape[:dim] + index.shape + x.shape[dim + 1:]
            try:
                s = np.broadcast_to(v, shape)
            except ValueError:
                s = None
            if s is not None:
                index_add(x, dim, rows, s.reshape(x.shape[:dim] + (rows.shape[0],) + x.shape[dim + 1:]))
                return
    np.add.at(x, where, v)


def _single_array_dim(x, where):
    """The dim of where's one integer array when every other entry is a whole slice (x C-contiguous), else None."""
    if not isinstance(where, tuple) or len(where) > x.ndim or not x.flags.c_contiguous:
        return None
    dim = None
    for d, w in enumerate(where):
        if isinstance(w, np.ndarray) and w.dtype.kind in "iu" and w.ndim > 0 and dim is None:
            dim = d
        elif not (isinstance(w, slice) and w == slice(None)):
            return None
    return dim


def index_add(x, dim, index, s):
    """x's slices at index (a 1-D array of valid positions) along dim += s's slices, in index order, in place."""
    if x.dtype != s.dtype or x.dtype not in _NATIVE:
        at = [slice(None)] * x.ndim
        at[dim] = index
        np.add.at(x, tuple(at), s)
        return
    outer, inner = math.prod(x.shape[:dim]), math.prod(x.shape[dim + 1:])
    x3 = x.reshape(outer, x.shape[dim], inner)      # x C-contiguous (every caller's), so this is a view
    s3 = s.reshape(outer, index.shape[0], inner)
    loop(_or_slices if x.dtype == np.bool_ else _add_slices)(x3, index, s3)


_KERNELS = {}       # Python loop -> its Numba dispatcher (Numba's disk cache keeps the compiled code)


def loop(fn, fastmath=False):
    """The Numba dispatcher of a loop of this module's kind (here, rows.py), made on first use through
    reftorch/kernels/_cache.py (which reftorch's cpu kernels have imported by then): importing Numba while
    reftorch's modules load, as an import at the top here would, costs ~16 MB more resident memory than importing
    it after them. fastmath: Numba's flags for the loop, on its first use."""
    d = _KERNELS.get(fn)
    if d is None:
        cache = importlib.import_module(__package__ + "._cache")
        d = cache.jitted(cache.njit(cache=cache.CACHE, nogil=True, fastmath=fastmath)(fn))
        _KERNELS[fn] = _KERNELS[d] = d      # (jitting puts d in the loop's module in fn's place)
    return d
