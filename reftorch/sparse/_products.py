"""Sparse x dense products with a sparse result, as torch's CPU kernels build them (torch.sspaddmm / saddmm, smm,
hspmm / hsmm), torch.indices_copy / values_copy, and Tensor.resize_as_sparse_.

torch records sspaddmm and hspmm without a derivative: their results require grad when an operand does, and a
backward through them raises. Their values are computed on the public Tensor API of the operands' values.
"""
from __future__ import annotations

import numpy as np

import reftorch._functional as F
import reftorch._dtype as D
from reftorch._device import no_kernel
from reftorch.autograd.function import without_derivative

from ._coo import SparseTensor, _rows, _sparse, _type_name

_NOT_SPARSE = ("self.is_sparse() INTERNAL ASSERT FAILED at \"aten/src/ATen/native/SparseTensorUtils.h\":28, please "
               "report a bug to PyTorch. _internal_get_SparseTensorImpl: not a sparse tensor")
_RESIZE_OPTIONS = ("You could try the following options:\n1. If you need an empty sparse tensor of this size, call "
                   "`x = torch.sparse_coo_tensor(size)`.\n2. If you need to resize this tensor, you have the following "
                   "options:\n    1. For both sparse and dense dimensions, keep the number of them constant and the "
                   "size of them non-shrinking, and then try the same call again.\n    2. Or, create a new sparse "
                   "tensor with the correct indices and values from this sparse tensor.")


def _row_products(s, dense, alpha):
    """The rows of alpha * (s @ dense) that s has entries in, in order, and those rows' numbers: for each entry
    (alpha * value) * dense[col] added to its row, as torch's axpy loop does."""
    c = s.coalesce()
    idx = _rows(c._sp_indices)
    rows, pos = np.unique(idx[0], return_inverse=True)
    v = c._sp_values.detach()
    picked = dense.detach().index_select(0, c._sp_indices[1]) * (v * alpha).unsqueeze(1)
    out = F.zeros((len(rows), dense.shape[1]), dtype=v.dtype, device=v.device)
    return out.index_add(0, F.tensor(pos.reshape(-1), dtype=D.int64, device=v.device), picked), rows


def _check_product(name, s, dense):
    """torch's checks of mat1 (2-D sparse, scalar values) and mat2 (a strided matrix of mat1's rows)."""
    if not isinstance(s, SparseTensor):
        if name == "hspmm":
            raise no_kernel("hspmm", "CUDA" if s.device.type == "cuda" else "CPU")
        raise RuntimeError(f"{name}: expected 'mat1' to have sparse layout, got 'mat1' with layout Strided")
    if s.sparse_dim() != 2:
        raise RuntimeError(f"{name}: Argument #2: matrices expected, got {s.sparse_dim()}D tensor")
    if s.dense_dim() != 0:
        raise RuntimeError(f"{name}: Argument #2: scalar values expected, got {s.dense_dim()}D values")
    if dense.dim() != 2:
        raise RuntimeError(f"{name}: Argument #3: matrices expected, got {dense.dim()}D tensor")
    if dense.shape[0] != s._shape[1]:
        raise RuntimeError(f"{name}: Argument #3: Expected dim 0 size {s._shape[1]}, got {dense.shape[0]}")


def _check_dense(name, s, dense):
    if isinstance(dense, SparseTensor):
        raise RuntimeError(f"{name}: expected 'mat2' to have strided layout, got 'mat2' with layout Sparse")
    if dense.dtype is not s.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(s.dtype)} but found {_type_name(dense.dtype)}")


def _sspaddmm_values(t, s, dense, beta, alpha):
    """beta * t (its entries first) + alpha * (s @ dense) (each row of s with entries, every column of it)."""
    prod, rows = _row_products(s, dense, alpha)
    k = dense.shape[1]
    idx = np.stack([np.repeat(rows, k), np.tile(np.arange(k), len(rows))]).astype(np.int64).reshape(2, -1)
    indices = F.tensor(idx, dtype=D.int64, device=prod.device)
    values = prod.reshape(-1)
    if t is not None and t._nnz():
        indices = F.cat([t._sp_indices, indices], 1)
        values = F.cat([t._sp_values.detach().to(values.dtype) * beta, values])
    return _sparse(indices, values, (s._shape[0], k), values.shape[0] < 2)


def _into(out, result):
    """out= of a sparse result: out becomes it (shape, entries), as torch's out kernels resize out."""
    if not isinstance(out, SparseTensor):
        raise RuntimeError(_NOT_SPARSE)
    out._shape = result._shape
    out._sp_indices, out._sp_values, out._sp_coalesced = result._sp_indices, result._sp_values, result._sp_coalesced
    return out


def sspaddmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """torch.sspaddmm: beta * input + alpha * (mat1 @ mat2) as a sparse tensor, input's entries first, then for
    each row of mat1 with entries all columns of its product (uncoalesced)."""
    if not isinstance(input, SparseTensor) and not isinstance(mat1, SparseTensor) and \
            not isinstance(mat2, SparseTensor):
        raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")
    if not isinstance(input, SparseTensor):
        raise RuntimeError(_NOT_SPARSE)
    _check_product("sspaddmm", mat1, mat2)
    m, k = mat1._shape[0], mat2.shape[1]
    if input.dim() < 1 or input._shape[0] != m:
        raise RuntimeError(f"sspaddmm: Argument #1: Expected dim 0 size {m}, got {input._shape[0]}")
    if input.dim() < 2 or input._shape[1] != k:
        raise RuntimeError(f"sspaddmm: Argument #1: Expected dim 1 size {k}, got {input._shape[1]}")
    _check_dense("sspaddmm", mat1, mat2)
    if input.dtype is not mat1.dtype:
        raise RuntimeError(f"dtype of values ({_type_name(mat1.dtype)}) must match dtype of sparse tensor "
                           f"({_type_name(input.dtype)})")
    result = without_derivative("sspaddmm", lambda t, s, d: _sspaddmm_values(t, s, d, beta, alpha), input, mat1,
                                 mat2)
    return result if out is None else _into(out, result)


saddmm = sspaddmm


def smm(input, mat2):
    """torch.smm / Tensor.smm: sparse input @ dense mat2 as a sparse tensor (sspaddmm into an empty one)."""
    if not isinstance(input, SparseTensor) and not isinstance(mat2, SparseTensor):
        raise RuntimeError("tensor.sspaddmm(...) can only be called on sparse tensors")
    _check_product("sspaddmm", input, mat2)
    _check_dense("sspaddmm", input, mat2)
    return without_derivative("sspaddmm", lambda s, d: _sspaddmm_values(None, s, d, 0, 1), input, mat2)


def _hspmm_values(s, dense):
    prod, rows = _row_products(s, dense, 1)
    indices = F.tensor(rows.reshape(1, -1).astype(np.int64), dtype=D.int64, device=prod.device)
    return _sparse(indices, prod, (s._shape[0], dense.shape[1]), len(rows) < 2)


def hspmm(mat1, mat2, *, out=None):
    """torch.hspmm / hsmm: sparse mat1 @ dense mat2 as a hybrid COO tensor (1 sparse dim: the rows with entries;
    1 dense dim)."""
    _check_product("hspmm", mat1, mat2)
    _check_dense("hspmm", mat1, mat2)
    result = without_derivative("hspmm", _hspmm_values, mat1, mat2)
    return result if out is None else _into(out, result)


def hsmm(input, mat2):
    return hspmm(input, mat2)


# ---------------------------------------------------------------------- copies and resizing

def _copy_out(result, out):
    if out is None:
        return result
    out.resize_(result.shape)
    return out.copy_(result)


def indices_copy(input, *, out=None):
    """torch.indices_copy: a fresh copy of input.indices() (input coalesced)."""
    if not isinstance(input, SparseTensor):
        raise RuntimeError("indices expected sparse coordinate tensor layout but got Strided")
    return _copy_out(input.indices().clone(), out)


def values_copy(input, *, out=None):
    """torch.values_copy: a fresh copy of input.values() (input coalesced), differentiable as values() is."""
    if not isinstance(input, SparseTensor):
        raise RuntimeError("values expected sparse tensor layout but got Strided")
    return _copy_out(input.values().clone(), out)


def _check_resize(self, sparse_dim, dense_dim, size):
    """torch's refusals for a non-empty sparse tensor: the number of sparse and dense dims is kept, no size
    shrinks."""
    if sparse_dim != self.sparse_dim():
        raise RuntimeError(f"changing the number of sparse dimensions (from {self.sparse_dim()} to {sparse_dim}) on "
                           f"a non-empty sparse tensor is not supported.\n{_RESIZE_OPTIONS}")
    if dense_dim != self.dense_dim():
        raise RuntimeError(f"changing the number of dense dimensions (from {self.dense_dim()} to {dense_dim}) on "
                           f"a non-empty sparse tensor is not supported.\n{_RESIZE_OPTIONS}")
    old = list(self._shape)
    for what, lo, hi in (("sparse", 0, sparse_dim), ("dense", sparse_dim, len(size))):
        if any(n < o for n, o in zip(size[lo:hi], old[lo:hi])):
            raise RuntimeError(f"shrinking the size of {what} dimensions (from {old[lo:hi]} to {list(size[lo:hi])}) "
                               f"on a non-empty sparse tensor is not supported.\n{_RESIZE_OPTIONS}")


def resize_as_sparse_(self, the_template):
    """Tensor.resize_as_sparse_: self (sparse) takes the_template's size and numbers of sparse and dense dims; a
    non-empty self keeps its entries (its dims' number fixed, no size shrinking)."""
    if not isinstance(self, SparseTensor):
        raise RuntimeError(_NOT_SPARSE)
    if self.requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    size = list(the_template.shape)
    sparse_dim = the_template.sparse_dim() if isinstance(the_template, SparseTensor) else 0
    dense_dim = len(size) - sparse_dim
    nnz = self._nnz()
    if nnz:
        _check_resize(self, sparse_dim, dense_dim, size)
    values = self._sp_values
    dense_size = tuple(size[sparse_dim:])
    if tuple(values.shape[1:]) != dense_size:       # torch resizes values in place: the flat prefix is kept
        grown = F.zeros((nnz, *dense_size), dtype=values.dtype, device=values.device)
        keep = min(values.numel(), grown.numel())
        grown.view(-1)[:keep] = values.detach().reshape(-1)[:keep]
        values = grown
    if self._sp_indices.shape[0] != sparse_dim:
        self._sp_indices = F.zeros((sparse_dim, nnz), dtype=D.int64, device=self.device)
    self._sp_values = values
    self._shape = tuple(size)
    if not nnz:
        self._sp_coalesced = True
    return self


def _tensor_sspaddmm(self, mat1, mat2, *, beta=1, alpha=1):
    return sspaddmm(self, mat1, mat2, beta=beta, alpha=alpha)


FUNCTIONS = {"sspaddmm": sspaddmm, "saddmm": saddmm, "smm": smm, "hspmm": hspmm, "hsmm": hsmm,
             "indices_copy": indices_copy, "values_copy": values_copy}
METHODS = {"smm": smm, "sspaddmm": _tensor_sspaddmm, "resize_as_sparse_": resize_as_sparse_}
