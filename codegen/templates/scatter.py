"""Scatter-adds in index order: x[..., index[i], ...] += source[..., i, ...] for i = 0, 1, 2 ...

PyTorch's CPU index_add_ (and embedding's backward, which the index_select formula reaches) adds the slices one
index after the other, so a row hit k times is ((x + s0) + s1) + ... rounded after each add; np.add.at gives
the same sums in the same order but costs ~0.1 µs per element (0.27 ms for an embedding gradient of 1536 x 24
float32), where this loop costs ~10 µs. Any other pair of dtypes (a source of another dtype than x, whose
casting error NumPy raises; a dtype Numba lacks) keeps np.add.at. (16-bit floats arrive here as float32: the
array-op bodies run them through float32, reftorch/_array.py.)

Copied verbatim into reftorch/kernels/scatter.py by `python -m codegen`; the array-op bodies of ops.yaml
call it as `scatter.<name>`.
"""
import math

import numpy as np

from ._cache import CACHE  # first: _cache also sets the vector width Numba's CPU target is made with
from ._cache import njit

# the dtypes the loop adds as NumPy does (bool: logical or)
_NATIVE = frozenset(np.dtype(t) for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                          np.uint32, np.uint64, np.float32, np.float64, np.complex64,
                                          np.complex128))


@njit(cache=CACHE, nogil=True)
def _add_slices(x, index, s):
    # x (outer, n, inner), index (k,), s (outer, k, inner); index checked by the caller
    for o in range(x.shape[0]):
        for i in range(index.shape[0]):
            r = index[i]
            for j in range(x.shape[2]):
                x[o, r, j] += s[o, i, j]


@njit(cache=CACHE, nogil=True)
def _or_slices(x, index, s):
    for o in range(x.shape[0]):
        for i in range(index.shape[0]):
            r = index[i]
            for j in range(x.shape[2]):
                x[o, r, j] = x[o, r, j] or s[o, i, j]


def index_add(x, dim, index, s):
    """x's slices at index (a 1-D array of valid positions) along dim += s's slices, in index order, in place."""
    if x.dtype != s.dtype or x.dtype not in _NATIVE:
        at = [slice(None)] * x.ndim
        at[dim] = index
        np.add.at(x, tuple(at), s)
        return
    outer, inner = math.prod(x.shape[:dim]), math.prod(x.shape[dim + 1:])
    x3 = x.reshape(outer, x.shape[dim], inner)      # x: a fresh C-contiguous array, so this is a view
    s3 = s.reshape(outer, index.shape[0], inner)
    _kernel("_or_slices" if x.dtype == np.bool_ else "_add_slices")(x3, index, s3)


def _kernel(name):
    # the kernels leave this namespace at import (below); the first lookup binds each one's dispatcher here
    return globals().get(name) or __getattr__(name)


from ._cache import jit_on_lookup as _jit_on_lookup  # noqa: E402
__getattr__, __dir__ = _jit_on_lookup(globals())
