"""Running the float16/bfloat16 kernels (DESIGN §5).

16-bit tensors keep NumPy float16 / ml_dtypes bfloat16 storage (so `.numpy()` shares memory and the
NumPy bodies of array ops work on them); the Numba kernels of reftorch/kernels/cpu_half.py see that
storage as uint16 bit patterns, compute in float32 and round to nearest even on store. The dispatcher
hands a call here when an operand is 16-bit; everything per-op still comes from the spec.
"""
from __future__ import annotations

import numpy as np

from . import _dtype as D
from . import _layout as L

_mod = None
_cache = {}
PROMOTED = ("Tensor", "Tensor?", "Tensor[]")


def module():
    global _mod
    if _mod is None:
        from .kernels import cpu_half
        _mod = cpu_half
    return _mod


def kernel(name, fmt, suffix):
    key = (name, fmt, suffix)
    k = _cache.get(key)
    if k is None:
        k = _cache[key] = getattr(module(), f"{name}_{fmt}_{suffix}")
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


def run_elementwise(spec, ins, scalars, out):
    fmt = compute_format(spec, ins)
    if fmt is None or (out.dtype.category == 2 and out.dtype.half != fmt):
        # a conversion into or out of a 16-bit type (`.to()`), or into another float: through NumPy's cast,
        # which rounds to nearest even as the kernels do
        from ._dispatch import empty, run_elementwise as run
        tmp_dtype = next(t.dtype for t, ty in zip(ins, spec.tensor_types) if ty in PROMOTED) if fmt is None \
            else next(t.dtype for t in ins if t.dtype.half == fmt)
        tmp = empty(out._shape, tmp_dtype)
        if tmp_dtype.half:
            run_elementwise(spec, ins, scalars, tmp)
        else:
            run(spec, ins, scalars, tmp)
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
        from ._dispatch import _run_contig     # in threads from PARALLEL_MIN elements, as float32
        _run_contig(kernel(spec.name, fmt, "contig"), args, scalars, n)
        return out
    strides = [out._strides] + [L.broadcast_strides(t._shape, t._strides, shape) for t in ins]
    cshape, cstrides = L.collapse(shape, strides)
    args = [np.array(cshape, np.int64), odata, out._offset, np.array(cstrides[0], np.int64)]
    for t, st in zip(ins, cstrides[1:]):
        args += [bits(t._storage.data), t._offset, np.array(st, np.int64)]
    kernel(spec.name, fmt, "strided")(*args, *scalars)
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
    from ._dispatch import _run_contig
    _run_contig(getattr(module(), name), [bits(src._storage.data[src._offset:src._offset + n]),
                                          bits(out._storage.data[out._offset:out._offset + n])], (), n)
    return True


def acc_dtype(rule):
    """Reductions and scans over 16-bit floats accumulate in float32 (float64 when the op asks for it)."""
    return D.float64 if rule == "float64" else D.float32


def to_half(arrays, dtype):
    """Results of a NumPy body computed through float32, rounded back to the 16-bit compute dtype."""
    out = []
    for a in arrays:
        a = np.asarray(a)
        out.append(a.astype(dtype.np) if a.dtype.kind == "f" and a.dtype != dtype.np else a)
    return out


def up(arr):
    """A 16-bit array as float32 for a NumPy body (exact)."""
    return arr.astype(np.float32) if arr is not None and arr.dtype.itemsize == 2 and arr.dtype.kind not in "iu" \
        else arr
