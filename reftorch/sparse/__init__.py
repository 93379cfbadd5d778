"""torch.sparse: sparse COO tensors (reftorch/sparse/_coo.py) and the functions over them -- mm, addmm, sum --
plus the sparse-aware forms of torch.mm / matmul / addmm / add / sub / mul / div / sum that reftorch's top level
exposes (a dense operand goes straight to the op of ops.yaml)."""
from __future__ import annotations

import reftorch._functional as F
from reftorch._tensor import Tensor

import reftorch.sparse._coo as _coo
import reftorch.sparse._products as _products
from ._coo import SparseTensor, check_sparse_tensor_invariants, sparse_coo_tensor

__all__ = ["mm", "addmm", "sum", "spmm", "sparse_coo_tensor", "check_sparse_tensor_invariants"]


def mm(mat1, mat2, reduce="sum"):
    """torch.sparse.mm: sparse @ dense (or sparse @ sparse as dense); the sparse operand's gradient lies on its
    own coordinates."""
    if reduce != "sum":
        raise RuntimeError("torch.sparse.mm: reftorch reduces by sum only")
    if not isinstance(mat1, SparseTensor):
        return F.mm(mat1, mat2)
    if isinstance(mat2, SparseTensor):
        mat2 = mat2.to_dense()
    return _coo.mm(mat1, mat2, masked=True)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """torch.sparse.addmm: beta * mat + alpha * (mat1 @ mat2), mat1 sparse."""
    return _scaled(mat, beta) + _scaled(_coo.mm(mat1, mat2, masked=True), alpha)


def _scaled(t, c):
    return t if c == 1 else t * c


def sum(input, dim=None, dtype=None):
    """torch.sparse.sum: a 0-d dense tensor over every dim; over some dims, sparse while sparse dims remain."""
    return _coo.sum(input, dim, dtype=dtype)




# ---------------------------------------------------------------------- torch.* forms that take sparse operands

def _sparse_first(dense_fn, sparse_fn):
    """dense_fn, unless an operand is sparse: then sparse_fn."""
    def fn(*args, **kwargs):
        for a in args:      # (a loop, not any(): this runs on every torch.add / mm / sum call)
            if a.__class__ is SparseTensor:
                return sparse_fn(*args, **kwargs)
        return dense_fn(*args, **kwargs)
    fn.__name__, fn.__doc__, fn.__wrapped__ = dense_fn.__name__, dense_fn.__doc__, dense_fn
    return fn


def _mm(a, b, *, out=None):
    if not isinstance(a, SparseTensor):
        return (b.t() @ a.t()).t() if isinstance(b, SparseTensor) else F.mm(a, b)
    return _coo.mm(a, b.to_dense() if isinstance(b, SparseTensor) else b)


def _addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    return _scaled(input, beta) + _scaled(_mm(mat1, mat2), alpha)


def _add(input, other, *, alpha=1, out=None):
    if isinstance(input, SparseTensor):
        return input.add(other, alpha=alpha)
    return input + _scaled(other.to_dense(), alpha)       # dense + sparse: dense


def _sub(input, other, *, alpha=1, out=None):
    return _add(input, other, alpha=-alpha)


def _mul(input, other, *, out=None):
    return input.mul(other) if isinstance(input, SparseTensor) else other.mul(input)


def _div(input, other, *, rounding_mode=None, out=None):
    if isinstance(other, SparseTensor):
        raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor (got sparse)")
    return input.div(other, rounding_mode=rounding_mode)


def _sum(input, dim=None, keepdim=False, *, dtype=None):
    if keepdim:
        raise RuntimeError("sum(sparse, keepdim=True): reftorch's sparse sum drops the summed dims")
    return _coo.sum(input, dim, dtype=dtype)


def spmm(input, mat2):
    """torch.spmm: input @ mat2 with input sparse (or dense)."""
    return _mm(input, mat2)


def dsmm(input, mat2):
    """torch.dsmm: input @ mat2 as a dense tensor, input sparse (or dense), differentiable as torch.mm."""
    return _mm(input, mat2)


def _is_sparse(self):
    return False


def bind(namespace):
    """The sparse-aware torch.* functions into reftorch's namespace, and to_sparse / is_sparse on Tensor."""
    forms = {"mm": _mm, "matmul": _mm, "addmm": _addmm, "add": _add, "sub": _sub, "subtract": _sub, "mul": _mul,
             "multiply": _mul, "div": _div, "divide": _div, "true_divide": _div, "sum": _sum}
    for name, sparse_fn in forms.items():
        namespace[name] = _sparse_first(namespace[name], sparse_fn)
    namespace["sparse_coo_tensor"] = sparse_coo_tensor
    namespace["spmm"] = spmm
    namespace["dsmm"] = dsmm
    namespace.update(_products.FUNCTIONS)       # sspaddmm, smm, hspmm ..., indices_copy, values_copy
    for name, method in _products.METHODS.items():
        setattr(Tensor, name, method)
    namespace["sparse_coo"] = _coo.LAYOUT
    Tensor.to_sparse = _coo.to_sparse
    Tensor.to_sparse_coo = _coo.to_sparse
    Tensor.is_sparse = property(_is_sparse)
