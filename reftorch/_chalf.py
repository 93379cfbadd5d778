"""complex32 (torch.chalf, ComplexHalf): pairs of float16, the way PyTorch's cpu supports it.

NumPy has no complex32, so its storage is a structured dtype of two float16 (reftorch/_dtype.py CHALF_NP): views,
indexing, concatenation and copies move its bytes as they are, view_as_real/.real/.imag read them as float16, and
Tensor._array() reads its values as complex64 (exact); .numpy() refuses, with PyTorch's TypeError.

PyTorch's cpu kernels accept complex32 for a few ops only (add, mul, neg, abs, eq, cat, where, indexing, fill_,
copy_ ...) and raise NotImplementedError '"<kernel>" not implemented for 'ComplexHalf'' for the rest (sum, div, exp,
matmul ...); ops.yaml says which, per op (`chalf:`). The ones that run compute as PyTorch's complex<Half> does,
through complex<float>: the dispatcher (reftorch/_dispatch.py, on the slow path _conj.used opens) converts the
complex32 arguments to complex64, runs the op, and rounds the results back -- complex64 to complex32, float32 to
float16 (abs) -- where the op's promoted dtype is complex32. The conversions are recorded ops (.to()), so autograd
works through them.
"""
from __future__ import annotations

import reftorch._dtype as D
from ._tensor import Tensor

PROMOTED = ("Tensor", "Tensor?", "Tensor[]")
def is_chalf(t):
    return isinstance(t, Tensor) and t.dtype is D.complex32


def involved(tensors):
    """Whether a complex32 tensor is among the op's tensor arguments (lists of tensors too)."""
    for t in tensors:
        if is_chalf(t) or isinstance(t, (list, tuple)) and any(is_chalf(e) for e in t):
            return True
    return False


def _narrow(spec, tensors):
    """Whether the op's promoted dtype is complex32 (its complex results are then rounded back to it)."""
    dims, zero, scalars = [], [], []
    for t, ty in zip(tensors, spec.tensor_types):
        if ty not in PROMOTED:
            continue
        for e in (t if isinstance(t, (list, tuple)) else (t,)):
            if isinstance(e, Tensor):
                (scalars.append(e.dtype.category) if e._wrapped else dims.append(e.dtype) if e._shape else
                 zero.append(e.dtype))
            elif isinstance(e, (bool, int, float, complex)):
                scalars.append(D.scalar_category(e))
    return D.result_type(dims, zero, scalars) is D.complex32


def up(t, narrow=False):
    """complex32 as complex64 (and, where the op's promoted dtype is complex32, float16 as float32)."""
    if isinstance(t, Tensor):
        return t.to(D.complex64) if t.dtype is D.complex32 else t.to(D.float32) if narrow and t.dtype is D.float16 \
            else t
    if isinstance(t, (list, tuple)) and any(isinstance(e, Tensor) for e in t):
        return type(t)(up(e, narrow) for e in t)
    return t


_DOWN = {"complex64": D.complex32, "float32": D.float16}


def _down(r):
    if isinstance(r, Tensor):
        to = _DOWN.get(r.dtype.name)
        return r.to(to) if to is not None else r
    if isinstance(r, tuple) and hasattr(r, "_fields"):     # torch.return_types
        return type(r)(*(_down(e) for e in r))
    if isinstance(r, (list, tuple)):
        return type(r)(_down(e) for e in r)
    return r


def _wider_dtype(spec, scalars):
    """Whether the call names a dtype= other than complex32 (sum(dtype=torch.cfloat)): PyTorch casts the input to
    it first, so the computation is not complex32's."""
    if "dtype" not in spec.scalar_names:
        return False
    dt = scalars[spec.scalar_names.index("dtype")]
    return dt is not None and dt is not D.complex32


def check(spec, tensors):
    """PyTorch's refusals of a complex32 computation on cpu: the op's complex ones (ops.yaml `rejects:`), then its
    complex32 one (ops.yaml `chalf:`). Backward kernels fused from formulas (kind fused) serve every dtype."""
    if spec.rejects:
        spec.check_inputs([e for t, ty in zip(tensors, spec.tensor_types) if ty in PROMOTED
                           for e in (t if isinstance(t, (list, tuple)) else (t,)) if isinstance(e, Tensor)])
    if spec.chalf is True or spec.kind == "fused":
        return
    if spec.chalf is not None and spec.chalf.startswith("RuntimeError: "):    # PyTorch's own words
        raise RuntimeError(spec.chalf[len("RuntimeError: "):])
    raise NotImplementedError(f"\"{spec.chalf or spec.kernel_name}\" not implemented for 'ComplexHalf'")


def call(spec, tensors, scalars, run):
    """run(spec, tensors, scalars) with complex32 arguments, as PyTorch's cpu runs it (see the module docstring):
    where the promoted dtype is complex32 the op must take it (check), else (complex32 beside complex64 ...) the
    arguments are only converted."""
    narrow = _narrow(spec, tensors) and not _wider_dtype(spec, scalars)
    if narrow:
        check(spec, tensors)
    result = run(spec, [up(t, narrow) for t in tensors], scalars)
    return _down(result) if narrow else result


def call_inplace(spec, tensors, scalars, run):
    """An in-place op whose destination is complex32: the op's values, computed as call() does, copied into it."""
    return tensors[0].copy_(call(spec, tensors, scalars, run))


def host_values(src, dtype):
    """src's values as a NumPy array of dtype (either of them complex32), ready to assign into a tensor of dtype."""
    if dtype is D.complex32:
        return D.to_chalf(src._array())
    vals = src._array()         # (complex64 values of a complex32 tensor)
    if not dtype.is_complex:
        vals = vals.real
    return vals.astype(dtype.np)
