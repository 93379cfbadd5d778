"""Sparse COO tensors, as torch's: a Tensor kind of its own holding indices (sparse_dim x nnz, int64) and values
(nnz x dense dims), maybe with repeated coordinates (uncoalesced) until coalesce() sums them.

A SparseTensor has a shape, dtype, device and autograd state like any Tensor, and no strided storage: the ops
it supports are its own methods (and torch.mm / matmul / addmm / add / mul / sum through reftorch.sparse), written
on the public Tensor API of its values, so they run on every device and differentiate. Each differentiable op
is an autograd.Function whose input is the sparse tensor itself, so gradients reach a sparse leaf (as a sparse
.grad, or a dense one where torch gives one: torch.mm) and, through sparse_coo_tensor's node, the values it was
built from.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import reftorch._dtype as D
import reftorch._functional as F
from reftorch._device import device as _device
from reftorch._tensor import Tensor
from reftorch.autograd.function import Function
from reftorch.autograd.grad_mode import is_grad_enabled

LAYOUT = "torch.sparse_coo"


def _rows(indices):
    """indices as a NumPy int64 array (sparse_dim x nnz), for the bookkeeping that never differentiates."""
    return indices.detach().cpu().numpy().astype(np.int64, copy=False)


def _linear(idx, sizes):
    """The row-major linear position of each coordinate column of idx (sparse_dim x nnz) in sizes."""
    lin = np.zeros(idx.shape[1], dtype=np.int64)
    for d, s in enumerate(sizes):
        lin = lin * s + idx[d]
    return lin


class SparseTensor(Tensor):
    __slots__ = ("_sp_indices", "_sp_values", "_sp_coalesced")

    @property
    def layout(self):
        return LAYOUT

    @property
    def is_sparse(self):
        return True

    def sparse_dim(self):
        return self._sp_indices._shape[0]

    def dense_dim(self):
        return len(self._shape) - self.sparse_dim()

    def _nnz(self):
        return self._sp_indices._shape[1]

    def is_coalesced(self):
        return self._sp_coalesced

    def _indices(self):
        return self._sp_indices

    def _values(self):
        return self._sp_values

    def indices(self):
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._sp_indices

    def values(self):
        if not self._sp_coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._sp_values

    def coalesce(self):
        return self if self._sp_coalesced else _Coalesce.apply(self)

    def to_dense(self, dtype=None, *, masked_grad=None):
        dense = _ToDense.apply(self)
        return dense if dtype is None else dense.to(dtype)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout not in (None, LAYOUT) or blocksize is not None:
            raise RuntimeError("to_sparse: reftorch has the COO layout only")
        if sparse_dim is not None and sparse_dim != self.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument != "
                               "self.sparse_dim() is not supported")
        return self

    def __repr__(self):
        return _repr(self)

    __str__ = __repr__

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    # ------------------------------------------------------------------ autograd and copies
    def detach(self):
        return _sparse(self._sp_indices, self._sp_values.detach(), self._shape, self._sp_coalesced)

    def clone(self, *, memory_format=None):
        return _Clone.apply(self)

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    def to(self, *args, **kwargs):
        dtype = next((a for a in args if isinstance(a, D.dtype)), kwargs.get("dtype"))
        device = next((a for a in args if isinstance(a, (str, _device))), kwargs.get("device"))
        if (dtype is None or dtype is self.dtype) and (device is None or _device(device) == self.device):
            return self
        return _Convert.apply(self, dtype or self.dtype, _device(device) if device else self.device)

    def double(self):
        return self.to(D.float64)

    def float(self):
        return self.to(D.float32)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to(device or "cuda")

    # ------------------------------------------------------------------ arithmetic
    def mul(self, other):
        if isinstance(other, SparseTensor):
            raise RuntimeError("mul(sparse, sparse): reftorch multiplies a sparse tensor by a scalar or a dense "
                               "tensor only")
        return _Scale.apply(self, other, False)

    __mul__ = __rmul__ = mul

    def div(self, other, *, rounding_mode=None):
        if isinstance(other, Tensor) and other.dim() > 0:
            raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor (got shape "
                               f"{list(other.shape)} for divisor)")
        if rounding_mode is not None:
            raise RuntimeError("div(sparse, rounding_mode=...): reftorch divides sparse tensors exactly only")
        return _Scale.apply(self, other, True)

    __truediv__ = div

    def neg(self):
        return _Scale.apply(self, -1, False)

    __neg__ = neg

    def add(self, other, *, alpha=1):
        if not isinstance(other, SparseTensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        return _Add.apply(self, other, alpha)

    __add__ = add

    def sub(self, other, *, alpha=1):
        return self.add(other, alpha=-alpha)

    __sub__ = sub

    def __radd__(self, other):          # dense + sparse: a dense result (Python asks the subclass first)
        return other + self.to_dense()

    def __rsub__(self, other):
        return other - self.to_dense()

    def add_(self, other, *, alpha=1):
        """In place, as the engine accumulates a sparse .grad: the sum's entries become self's."""
        res = self.add(other, alpha=alpha)
        self._sp_indices, self._sp_values, self._sp_coalesced = res._sp_indices, res._sp_values, res._sp_coalesced
        return self

    def mm(self, mat2):
        return mm(self, mat2)

    def matmul(self, other):
        return mm(self, other)

    __matmul__ = matmul

    def __rmatmul__(self, other):       # dense @ sparse = (sparse^T @ dense^T)^T
        return mm(self.t(), other.t()).t()

    def t(self):
        if self.dim() < 2:
            return self
        if self.sparse_dim() != 2 or self.dense_dim() != 0:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but self is "
                               f"{self.sparse_dim()} sparse and {self.dense_dim()} dense dimensions")
        return _Transpose.apply(self)

    @property
    def mT(self):           # (lobpcg symmetrizes a sparse A needing a gradient as (A + A.mT) / 2)
        if self.dim() < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {self.dim()}-D "
                               "tensor.")
        return self.t()

    def sum(self, dim=None, keepdim=False, dtype=None):
        if keepdim:
            raise RuntimeError("sum(sparse, keepdim=True): reftorch's sparse sum drops the summed dims")
        return sum(self, dim, dtype=dtype)


class _NoStrides:
    """What a sparse tensor has in place of strided storage: any op that reaches for it is one the sparse layout
    lacks, and says so as torch does."""
    __slots__ = ()
    inference = False       # (what autograd asks of every storage: a sparse tensor is never an inference tensor)

    def _refuse(self, *args):
        raise NotImplementedError("Could not run this operator with arguments from the 'SparseCPU' backend. This "
                                  "could be because the operator doesn't exist for this backend (reftorch's sparse "
                                  "COO tensors support coalesce, to_dense, mm, addmm, sum, add, sub, mul, div)")

    __getattr__ = __getitem__ = __iter__ = __len__ = _refuse


_NO_STORAGE = _NoStrides()


def _sparse(indices, values, size, coalesced):
    t = SparseTensor._make(_NO_STORAGE, 0, tuple(int(s) for s in size), _NO_STORAGE, values.dtype, values.device)
    t._sp_indices, t._sp_values, t._sp_coalesced = indices, values, bool(coalesced)
    return t


def _inner(x):
    """A dense tensor as the sparse repr shows it: its values, without dtype or grad suffixes (those are the
    sparse tensor's), empty ones with their size."""
    x = x.detach()
    if x.numel() == 0:
        return f"tensor([], size={tuple(x.shape)})"
    text = repr(x.cpu())
    return text[:text.rindex("]") + 1] + ")"


def _repr(t):
    """torch's layout: the indices and values as tensors, indented under `tensor(`, then size, nnz and flags."""
    ind = _inner(t._sp_indices).replace("\n", "\n" + " " * 15)
    val = _inner(t._sp_values).replace("\n", "\n" + " " * 14)
    tail = f"size={tuple(t._shape)}, nnz={t._nnz()}"
    if t.dtype not in (D.get_default_dtype(), D.int64, D.bool_):
        tail += f", dtype={t.dtype}"
    if t.device.type != "cpu":
        tail += f", device='{t.device}'"
    tail += f", layout={LAYOUT}"
    if t.grad_fn is not None:
        tail += f", grad_fn=<{t.grad_fn.name()}>"
    elif t.requires_grad:
        tail += ", requires_grad=True"
    return f"tensor(indices={ind},\n       values={val},\n       {tail})"


# ---------------------------------------------------------------------- gathering values at coordinates

def _gather(grad, indices, dense_shape):
    """The values of grad (dense, or sparse of the same shape) at the coordinates of indices: what a gradient
    with respect to a sparse tensor says about each of its entries."""
    if not isinstance(grad, SparseTensor):
        return grad[tuple(indices[d] for d in range(indices._shape[0]))]
    g = grad.coalesce()
    sizes = grad._shape[:indices._shape[0]]
    have, want = _linear(_rows(g._sp_indices), sizes), _linear(_rows(indices), sizes)
    pos = np.minimum(np.searchsorted(have, want), max(len(have) - 1, 0))
    found = (have[pos] == want) if len(have) else np.zeros(len(want), dtype=bool)
    pos = np.where(found, pos, len(have))           # a coordinate grad lacks reads the zero row appended below
    padded = F.cat([g._sp_values, F.zeros((1, *dense_shape), dtype=g.dtype, device=g.device)])
    return padded.index_select(0, F.tensor(pos, device=g.device))


def _like(t, values):
    """A sparse tensor with t's coordinates and other values."""
    return _sparse(t._sp_indices, values, t._shape, t._sp_coalesced)


def _coords(linear, sizes, device):
    """Coordinates (sparse_dim x n, int64) of row-major linear positions in sizes."""
    rows = np.stack(np.unravel_index(linear, sizes)).reshape(len(sizes), -1) if len(sizes) else \
        np.zeros((0, len(linear)), np.int64)
    return F.tensor(rows, dtype=D.int64, device=device)


# ---------------------------------------------------------------------- the differentiable ops

class SparseCooTensorWithDimsAndTensors(Function):
    """sparse_coo_tensor(indices, values): the sparse tensor's gradient read back at its coordinates."""

    @staticmethod
    def forward(ctx, values, indices, size, coalesced):
        ctx.indices, ctx.dense_shape = indices, tuple(values.shape[1:])
        return _sparse(indices, values, size, coalesced)

    @staticmethod
    def backward(ctx, grad):
        return _gather(grad, ctx.indices, ctx.dense_shape), None, None, None


def _coalesced(s):
    """s with each coordinate once, its values summed, in row-major order (no autograd: see _Coalesce)."""
    sizes = s._shape[:s.sparse_dim()]
    uniq, inverse = np.unique(_linear(_rows(s._sp_indices), sizes), return_inverse=True)
    values = F.zeros((len(uniq), *s._sp_values.shape[1:]), dtype=s.dtype, device=s.device)
    values.index_add_(0, F.tensor(inverse.reshape(-1), device=s.device), s._sp_values)
    return _sparse(_coords(uniq, sizes, s.device), values, s._shape, True)


class _Coalesce(Function):
    @staticmethod
    def forward(ctx, s):
        return _coalesced(s)

    @staticmethod
    def backward(ctx, grad):
        return grad         # the same dense tensor, written once per coordinate


class _ToDense(Function):
    @staticmethod
    def forward(ctx, s):
        ctx.s = s.detach()
        idx, sizes = _rows(s._sp_indices), s._shape[:s.sparse_dim()]
        flat = F.zeros((math.prod(sizes), *s._shape[len(sizes):]), dtype=s.dtype, device=s.device)
        flat.index_add_(0, F.tensor(_linear(idx, sizes), device=s.device), s._sp_values)
        return flat.reshape(s._shape)

    @staticmethod
    def backward(ctx, grad):
        c = ctx.s.coalesce()
        return _like(c, _gather(grad, c._sp_indices, tuple(c._sp_values.shape[1:])))


class _Clone(Function):
    @staticmethod
    def forward(ctx, s):
        return _sparse(s._sp_indices.clone(), s._sp_values.clone(), s._shape, s._sp_coalesced)

    @staticmethod
    def backward(ctx, grad):
        return grad


class _Convert(Function):
    @staticmethod
    def forward(ctx, s, dtype, device):
        ctx.dtype, ctx.device = s.dtype, s.device
        return _sparse(s._sp_indices.to(device), s._sp_values.to(device=device, dtype=dtype), s._shape,
                       s._sp_coalesced)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(dtype=ctx.dtype, device=ctx.device), None, None


class _Scale(Function):
    """s * c or s / c for a number or 0-d tensor c (a dense tensor of s's shape multiplies entry by entry)."""

    @staticmethod
    def forward(ctx, s, c, divide):
        ctx.divide = divide
        if isinstance(c, Tensor) and c.dim() > 0:
            if tuple(c.shape) != tuple(s._shape):
                raise RuntimeError(f"mul(sparse, dense): the dense operand's shape {list(c.shape)} must be the "
                                   f"sparse tensor's {list(s._shape)}")
            c = _gather(c, s._sp_indices, tuple(s._sp_values.shape[1:]))
            ctx.s = s.detach()
        ctx.c = c
        return _like(s, s._sp_values / c if divide else s._sp_values * c)

    @staticmethod
    def backward(ctx, grad):
        c = ctx.c
        if isinstance(c, Tensor) and c.dim() > 0:       # entry by entry: the gradient lies on s's coordinates
            return _like(ctx.s, _gather(grad, ctx.s._sp_indices, tuple(c.shape[1:])) * c), None, None
        if isinstance(grad, SparseTensor):
            return _like(grad, grad._sp_values / c if ctx.divide else grad._sp_values * c), None, None
        return (grad / c if ctx.divide else grad * c), None, None


def _merge(a, b):
    """torch's merge of two coordinate lists (linear positions a, b): walking both, equal positions meet in one
    entry, the smaller goes first. Returns the merged positions and, for a and b, each entry's place in them."""
    if len(a) == len(b) and np.array_equal(a, b):
        places = np.arange(len(a))
        return a, places, places
    if (len(a) < 2 or np.all(a[1:] > a[:-1])) and (len(b) < 2 or np.all(b[1:] > b[:-1])):
        merged = np.union1d(a, b)                # sorted inputs (coalesced ones): the walk is a sorted union
        return merged, np.searchsorted(merged, a), np.searchsorted(merged, b)
    merged, pa, pb = [], np.empty(len(a), np.int64), np.empty(len(b), np.int64)
    i = j = 0
    while i < len(a) or j < len(b):
        if j == len(b) or (i < len(a) and a[i] < b[j]):
            pa[i] = len(merged)
            merged.append(a[i])
            i += 1
        elif i == len(a) or b[j] < a[i]:
            pb[j] = len(merged)
            merged.append(b[j])
            j += 1
        else:
            pa[i] = pb[j] = len(merged)
            merged.append(a[i])
            i, j = i + 1, j + 1
    return np.array(merged, dtype=np.int64), pa, pb


class _Add(Function):
    """s + alpha * o, merged as torch merges them (coalesced when both operands are)."""

    @staticmethod
    def forward(ctx, s, o, alpha):
        if tuple(s._shape) != tuple(o._shape):
            raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                               f"{list(s._shape)} while other has size {list(o._shape)} (FYI: dense-sparse "
                               "addition does not currently support broadcasting)")
        if s.sparse_dim() != o.sparse_dim():
            raise RuntimeError(f"add: expected same number of sparse dims, but got {s.sparse_dim()} and "
                               f"{o.sparse_dim()}")
        ctx.alpha = alpha
        sizes = s._shape[:s.sparse_dim()]
        merged, pa, pb = _merge(_linear(_rows(s._sp_indices), sizes), _linear(_rows(o._sp_indices), sizes))
        dev = s.device
        values = F.zeros((len(merged), *s._sp_values.shape[1:]), dtype=s.dtype, device=dev)
        values = values.index_add(0, F.tensor(pa, device=dev), s._sp_values)
        values = values.index_add(0, F.tensor(pb, device=dev), o._sp_values, alpha=alpha)
        return _sparse(_coords(merged, sizes, dev), values, s._shape, s._sp_coalesced and o._sp_coalesced)

    @staticmethod
    def backward(ctx, grad):
        return grad, (grad * ctx.alpha if ctx.alpha != 1 else grad), None


class _Transpose(Function):
    @staticmethod
    def forward(ctx, s):
        return _sparse(s._sp_indices.flip(0), s._sp_values, (s._shape[1], s._shape[0]), False)

    @staticmethod
    def backward(ctx, grad):
        return grad.t()


def _spmm_values(s, dense, rows_from, cols_from):
    """Σ over entries k of values[k] * dense[cols[k]] placed at rows[k]: the product of s (2-D) with dense."""
    idx = s._sp_indices
    rows, cols = idx[rows_from], idx[cols_from]
    v = s._sp_values
    picked = dense.index_select(0, cols)
    picked = picked * (v.unsqueeze(1) if dense.dim() == 2 else v)
    out = F.zeros((s._shape[rows_from], *dense.shape[1:]), dtype=picked.dtype, device=dense.device)
    return out.index_add(0, rows, picked)


class _Mm(Function):
    """sparse (M x K) @ dense (K x N or K): the dense operand's gradient is s^T @ grad; the sparse one's is
    grad @ dense^T, dense (torch.mm) or on s's coordinates (torch.sparse.mm, masked)."""

    @staticmethod
    def forward(ctx, s, dense, masked):
        ctx.s, ctx.dense, ctx.masked = s.detach(), dense.detach(), masked
        return _spmm_values(s, dense, 0, 1)

    @staticmethod
    def backward(ctx, grad):
        s, dense = ctx.s, ctx.dense
        g_dense = _spmm_values(s, grad, 1, 0) if ctx.needs_input_grad[1] else None
        g_s = None
        if ctx.needs_input_grad[0]:
            if ctx.masked:
                c = s.coalesce()
                rows, cols = c._sp_indices[0], c._sp_indices[1]
                g, d = grad.index_select(0, rows), dense.index_select(0, cols)
                g_s = _sparse(c._sp_indices, (g * d).sum(1) if grad.dim() == 2 else g * d, c._shape,
                              False)       # torch's flag: s's coordinates, not marked coalesced
            else:
                g_s = grad.unsqueeze(1) * dense if grad.dim() == 1 else grad @ dense.t()
        return g_s, g_dense, None


class _MmDense(_Mm):
    pass


class _MmMasked(_Mm):
    pass


def _type_name(dtype):
    return {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int", "float16": "Half",
            "bfloat16": "BFloat16"}.get(str(dtype).replace("torch.", ""), str(dtype))


def _check_mm(s, dense):
    if not isinstance(dense, Tensor) or isinstance(dense, SparseTensor):
        raise RuntimeError("addmm: reftorch multiplies a sparse matrix by a dense one")
    if s.sparse_dim() != 2 or s.dense_dim() != 0:
        raise RuntimeError(f"addmm: matrices expected, got {s.dim()}D tensor")
    if dense.dim() not in (1, 2):
        raise RuntimeError(f"addmm: matrices expected, got {dense.dim()}D tensor")
    if dense.shape[0] != s._shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s._shape[1]}, got {dense.shape[0]}")
    if dense.dtype is not s.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(s.dtype)} but found {_type_name(dense.dtype)}")


def mm(s, dense, masked=False):
    """s @ dense for a 2-D sparse s and a dense matrix (or vector); masked: torch.sparse.mm's gradient."""
    _check_mm(s, dense)
    return (_MmMasked if masked else _MmDense).apply(s, dense, masked)


# ---------------------------------------------------------------------- sums

class _SumDims(Function):
    """Σ over some of s's dims: sparse while sparse dims remain, dense once every sparse dim is summed."""

    @staticmethod
    def forward(ctx, s, dims):
        ctx.s, ctx.dims = s.detach(), dims
        sd = s.sparse_dim()
        dense_dims = [d - sd + 1 for d in dims if d >= sd]
        values = s._sp_values.sum(dense_dims) if dense_dims else s._sp_values
        keep = [d for d in range(sd) if d not in dims]
        if not keep:
            return values.sum(0)
        size = [s._shape[d] for d in range(len(s._shape)) if d not in dims]
        return _coalesced(_sparse(s._sp_indices[keep], values, size, False))

    @staticmethod
    def backward(ctx, grad):
        s, dims = ctx.s.coalesce(), ctx.dims
        sd = s.sparse_dim()
        keep = [d for d in range(sd) if d not in dims]
        per_entry = grad.unsqueeze(0).expand(s._nnz(), *grad.shape) if not keep else \
            _gather(grad, s._sp_indices[keep], tuple(grad.shape[len(keep):]))
        for d in sorted(d - sd + 1 for d in dims if d >= sd):
            per_entry = per_entry.unsqueeze(d)
        return _like(s, per_entry.expand(s._sp_values.shape)), None


def sum(s, dim=None, dtype=None):
    """torch.sparse.sum: every entry (a 0-d dense tensor), or over dims."""
    if dtype is not None:
        s = s.to(dtype)
    if dim is None:
        dims = tuple(range(s.dim()))
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = tuple(sorted({d % s.dim() for d in dims}))
    return _SumDims.apply(s, dims)


# ---------------------------------------------------------------------- construction

class check_sparse_tensor_invariants:
    """Whether sparse_coo_tensor checks its arguments' invariants when check_invariants is not given (it always
    checks that the indices fit the size); a context manager and decorator that turns the checks on or off."""
    _enabled = False

    def __init__(self, enable=True):
        self.state, self.saved = enable, None

    @staticmethod
    def is_enabled():
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable():
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable():
        check_sparse_tensor_invariants._enabled = False

    def __enter__(self):
        self.saved = check_sparse_tensor_invariants._enabled
        check_sparse_tensor_invariants._enabled = self.state
        return self

    def __exit__(self, *exc):
        check_sparse_tensor_invariants._enabled = self.saved
        return False

    def __call__(self, fn):
        def wrapped(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return fn(*args, **kwargs)
        return wrapped


_warned_invariants = False


def _invariant_warning():
    global _warned_invariants
    if not _warned_invariants:
        _warned_invariants = True
        warnings.warn("Sparse invariant checks are implicitly disabled. Memory errors (e.g. SEGFAULT) will occur "
                      "when operating on a sparse tensor which violates the invariants, but checks incur performance "
                      "overhead. To silence this warning, explicitly opt in or out. See "
                      "`torch.sparse.check_sparse_tensor_invariants.__doc__` for guidance.", UserWarning,
                      stacklevel=3)


def _check_indices(idx, values, size, check_invariants):
    nnz = idx.shape[1]
    if values.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           f"values: {values.shape[0]}")
    sparse_dim, dense_dim = idx.shape[0], values.dim() - 1
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sparse_dim}, dense_dim = {dense_dim}")
    if tuple(values.shape[1:]) != tuple(size[sparse_dim:]):
        raise RuntimeError(f"values has incorrect size, expected {list(size[:sparse_dim]) + [nnz]}"
                           f"{list(size[sparse_dim:])}, got {list(values.shape)}")
    for d in range(sparse_dim):
        if nnz and check_invariants and idx[d].min() < 0:
            raise RuntimeError(f"found negative index {int(idx[d].min())} for dim {d}")
        if nnz and idx[d].max() >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found index "
                               f"{int(idx[d].max())}")


def _index_tensor(indices, values, size):
    if indices.dim() != 2:
        sparse_dim = indices.shape[0] if indices.dim() else 0
        if size is not None and len(size) != sparse_dim + values.dim() - 1:
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                               f"sparse_dim = {sparse_dim}, dense_dim = {values.dim() - 1}")
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(indices.shape)}")
    return _rows(indices)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """torch.sparse_coo_tensor: a sparse tensor with these coordinates (sparse_dim x nnz) and values."""
    if check_invariants is None:
        check_invariants = check_sparse_tensor_invariants.is_enabled()
        if not check_invariants:
            _invariant_warning()
    indices = indices if isinstance(indices, Tensor) else F.tensor(indices)
    values = values if isinstance(values, Tensor) else F.tensor(values, dtype=dtype)
    indices = indices.to(dtype=D.int64, device=device or values.device)
    if dtype is not None or device is not None:
        values = values.to(dtype=dtype or values.dtype, device=device or values.device)
    idx = _index_tensor(indices, values, size)
    if size is None:
        size = tuple(int(m) + 1 for m in (idx.max(1) if idx.shape[1] else [-1] * idx.shape[0])) + \
            tuple(values.shape[1:])
    size = tuple(int(s) for s in size)
    _check_indices(idx, values, size, check_invariants)
    coalesced = bool(is_coalesced) if is_coalesced is not None else idx.shape[1] <= 1
    if values.requires_grad and is_grad_enabled():
        out = SparseCooTensorWithDimsAndTensors.apply(values, indices, size, coalesced)
    else:
        out = _sparse(indices, values.detach(), size, coalesced)
    if requires_grad:
        out.requires_grad_(True)
    return out


class _ToSparse(Function):
    """A dense tensor's nonzero entries over its first sparse_dim dims; the gradient comes back dense."""

    @staticmethod
    def forward(ctx, x, sd):
        lead = x.reshape(*x.shape[:sd], -1) if sd < x.dim() else x.unsqueeze(-1)
        nz = _rows((lead != 0).any(-1) if lead.shape[-1] else F.zeros(x.shape[:sd], dtype=D.bool_))
        coords = np.stack(np.nonzero(nz)).reshape(sd, -1) if sd else np.zeros((0, int(nz.any())), np.int64)
        indices = F.tensor(coords, dtype=D.int64, device=x.device)
        values = x[tuple(indices[d] for d in range(sd))] if sd else x.unsqueeze(0)[:coords.shape[1]]
        return _sparse(indices, values.clone(), tuple(x.shape), True)

    @staticmethod
    def backward(ctx, grad):
        return (grad.to_dense() if isinstance(grad, SparseTensor) else grad), None


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """Tensor.to_sparse for a dense tensor: its nonzero entries (over the first sparse_dim dims), coalesced."""
    if layout not in (None, LAYOUT) or blocksize is not None:
        raise RuntimeError("to_sparse: reftorch has the COO layout only")
    sd = self.dim() if sparse_dim is None else sparse_dim
    if not 0 <= sd <= self.dim():
        raise RuntimeError(f"sparse_dim must be in [0, {self.dim()}], but got {sd}")
    return _ToSparse.apply(self, sd)


for _fn, _name in ((SparseCooTensorWithDimsAndTensors, "SparseCooTensorWithDimsAndTensorsBackward0"),
                   (_MmDense, "MmBackward0"), (_MmMasked, "SparseAddmmBackward0"), (_Coalesce, "CoalesceBackward0"),
                   (_ToDense, "ToDenseBackward0"), (_Clone, "CloneBackward0"), (_Convert, "ToCopyBackward0"),
                   (_Scale, "MulBackward0"), (_Add, "AddBackward0"), (_Transpose, "TBackward0"),
                   (_SumDims, "SumBackward0"), (_ToSparse, "ToSparseBackward0")):
    _fn._backward_cls.__name__ = _name      # the node names torch gives these ops
    _fn._backward_cls.__repr__ = lambda self: f"<{self.name()} object at {id(self):#x}>"
del _fn, _name
