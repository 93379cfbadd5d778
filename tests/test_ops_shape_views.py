"""Shape and data-movement ops of issue 16 (branch ops-shape): what the registry tests do not check.

In-place view ops (self takes the view's geometry), which results share storage with their input exactly
where PyTorch's do, the warnings, and the ops whose inputs constrain each other (*_scatter, meshgrid,
take_along_dim...). Expected values, messages and strides were checked against torch 2.13.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import reftorch as torch
from reftorch import _formula_helpers
from reftorch.autograd.gradcheck import gradcheck


def shares(a, b):
    return a._storage is b._storage


def arange(*shape, dtype=None):
    n = int(np.prod(shape))
    return torch.arange(n, dtype=dtype or torch.float32).reshape(*shape)


# ------------------------------------------------------------------------- in-place view ops

def test_inplace_views_change_self_geometry_and_bump_the_version():
    x = torch.ones(2, 3)
    v = x._version
    assert x.unsqueeze_(0) is x and tuple(x.shape) == (1, 2, 3) and x._version == v + 1
    x = arange(2, 3).long()
    x.t_()
    assert x.stride() == (1, 3) and not x.is_contiguous() and x.tolist() == [[0, 3], [1, 4], [2, 5]]
    for dims, shape in ((None, (3,)), (0, (3, 1)), ((0, 2), (3,))):
        y = torch.ones(1, 3, 1)
        y.squeeze_() if dims is None else y.squeeze_(dims)
        assert tuple(y.shape) == shape
    for name in ("transpose_", "swapaxes_", "swapdims_"):
        z = torch.ones(1, 3, 2)
        getattr(z, name)(0, 2)
        assert tuple(z.shape) == (2, 3, 1) and z.stride() == (1, 2, 6)
    w = arange(2, 3)
    assert w.as_strided_((3, 2), (1, 3)) is w and w.stride() == (1, 3) and w.tolist() == [[0, 3], [1, 4], [2, 5]]
    s = torch.arange(12.)[2:]
    s.t_()
    assert s.storage_offset() == 2 and s._base is not None


def test_inplace_view_errors():
    with pytest.raises(RuntimeError, match=r"^t_\(\) expects a tensor with <= 2 dimensions, but self is 3D$"):
        torch.ones(2, 3, 4).t_()
    with pytest.raises(IndexError, match=r"expected to be in range of \[-3, 2\], but got 5"):
        torch.ones(2, 3).unsqueeze_(5)
    with pytest.raises(RuntimeError, match="requiring a storage size of 76 are out of bounds for storage of size 24"):
        torch.ones(2, 3).as_strided_((10, 10), (1, 1))
    leaf = torch.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place"):
        leaf.unsqueeze_(0)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad"):
        leaf[1:].t_()
    with torch.no_grad():
        quiet = leaf[1:]
        leaf.unsqueeze_(0)          # allowed without grad mode, as in PyTorch
    assert tuple(leaf.shape) == (1, 2, 3)
    with pytest.raises(RuntimeError, match="^A view was created in no_grad mode"):
        quiet.t_()


def test_inplace_views_record_history():
    x = torch.ones(2, 3, requires_grad=True)
    y = x * 1
    y.transpose_(0, 1)
    (y * arange(3, 2)).sum().backward()
    assert x.grad.tolist() == [[0, 2, 4], [1, 3, 5]]
    x.grad = None
    y = x * 1
    y.t_()
    y.unsqueeze_(0)
    (y * arange(1, 3, 2)).sum().backward()
    assert x.grad.tolist() == [[0, 2, 4], [1, 3, 5]]
    x.grad = None
    y = x * 1
    y[1:].t_()              # a view's geometry changes: its base keeps its history
    y.mul_(2)
    (y * arange(2, 3)).sum().backward()
    assert x.grad.tolist() == [[0, 2, 4], [6, 8, 10]]
    x.grad = None
    y = x * 1
    y.as_strided_((3,), (2,))
    (y * torch.arange(3.)).sum().backward()
    assert x.grad.tolist() == [[0, 0, 1], [0, 2, 0]]


def test_tril_triu_put_fill_diagonal_in_place():
    t = torch.ones(3, 3)
    assert t.tril_() is t and t.tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert torch.ones(3, 3).triu_(1).tolist() == [[0, 1, 1], [0, 0, 1], [0, 0, 0]]
    p = torch.ones(2, 3)
    p.put_(torch.tensor([0, 5]), torch.tensor([9., 8.]))
    assert p.tolist() == [[9, 1, 1], [1, 1, 8]]
    p.put_(torch.tensor([0, 0]), torch.tensor([1., 2.]), accumulate=True)
    assert p[0, 0].item() == 12
    assert torch.zeros(2, 3).fill_diagonal_(5).tolist() == [[5, 0, 0], [0, 5, 0]]
    tall = torch.zeros(7, 3).fill_diagonal_(1, wrap=True)
    assert tall.sum(1).tolist() == [1, 1, 1, 0, 1, 1, 1]
    assert torch.zeros(7, 3).fill_diagonal_(1).sum().item() == 3
    assert torch.zeros(2, 2, 2).fill_diagonal_(1).tolist() == [[[1, 0], [0, 0]], [[0, 0], [0, 1]]]
    assert torch.zeros(2, 2, dtype=torch.int64).fill_diagonal_(1.7).tolist() == [[1, 0], [0, 1]]
    with pytest.raises(RuntimeError, match="^all dimensions of input must be of equal length$"):
        torch.zeros(2, 3, 2).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="^dimensions must larger than 1$"):
        torch.zeros(3).fill_diagonal_(1)


# ------------------------------------------------------------------------- which results are views

def test_views_share_storage_where_torch_does():
    x = arange(2, 3)
    b, col = torch.arange(3.), torch.zeros(2, 1)
    e = torch.broadcast_to(b, (2, -1))
    assert shares(e, b) and e.stride() == (0, 1)
    eb, ec = torch.broadcast_tensors(b, col)
    assert shares(eb, b) and shares(ec, col) and eb.stride() == (0, 1) and ec.stride() == (1, 0)
    assert shares(x.adjoint(), x) and shares(torch.ravel(x), x) and not shares(torch.ravel(x.t()), x)
    assert shares(torch.atleast_3d(x), x) and tuple(torch.atleast_3d(x).shape) == (2, 3, 1)
    assert all(shares(p, x) for p in torch.tensor_split(x, 2, dim=1) + torch.hsplit(x, [1]))
    gi, gj = torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij")
    assert gi.stride() == (1, 0) and gj.stride() == (0, 1) and gi._base is not None
    for copy in (torch.t_copy(x), torch.diagonal_copy(x), torch.expand_copy(b, (2, 3)), torch.alias_copy(x),
                 torch.view_copy(x.t(), (6,)), torch.diag(x), torch.narrow_copy(x, 1, 0, 2)):
        assert not shares(copy, x) and not shares(copy, b) and copy.is_contiguous() and copy._base is None
    d = torch.detach(torch.ones(2, requires_grad=True) * 2)
    assert d._base is None and not d.requires_grad
    leaf = torch.ones(2, requires_grad=True)
    assert shares(torch.detach(leaf), leaf) and not shares(torch.detach_copy(leaf), leaf)
    assert not torch.detach_copy(leaf).requires_grad


def test_broadcast_shapes():
    assert torch.broadcast_shapes((2, 1), (3,)) == (2, 3) and torch.broadcast_shapes(2, (3, 1)) == (3, 2)
    assert repr(torch.broadcast_shapes()) == "torch.Size([])"
    with pytest.raises(RuntimeError, match=r"^Attempting to broadcast a dimension of length 3 at -1! Mismatching "
                                           r"argument at index 1 had \(3,\); but expected shape should be "
                                           r"broadcastable to \[2\]$"):
        torch.broadcast_shapes((2,), (3,))
    with pytest.raises(ValueError, match="negative length"):
        torch.broadcast_shapes((1,), (-1,))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(2\)"):
        torch.broadcast_tensors(torch.ones(3), torch.ones(2))


# ------------------------------------------------------------------------- *_scatter

def test_view_scatters():
    z = torch.zeros(2, 3)
    assert torch.diagonal_scatter(z, torch.ones(1), 2).tolist() == [[0, 0, 1], [0, 0, 0]]
    assert torch.diagonal_scatter(z.long(), torch.ones(2)).dtype == torch.int64       # src takes self's dtype
    assert torch.diagonal_scatter(z, torch.ones(2, dtype=torch.float64)).dtype == torch.float32
    assert torch.select_scatter(z, torch.ones(3), 0, -1).tolist() == [[0, 0, 0], [1, 1, 1]]
    assert torch.slice_scatter(z, torch.ones(2, 2), 1, 0, None, 2).tolist() == [[1, 0, 1], [1, 0, 1]]
    assert torch.as_strided_scatter(z, torch.ones(2), (2,), (4,)).tolist() == [[1, 0, 0], [0, 1, 0]]
    t = torch.as_strided_scatter(z.t(), torch.ones(2), (2,), (4,), 1)     # positions in self's own layout
    assert t.tolist() == [[0, 0], [1, 0], [0, 1]] and t.stride() == (1, 3)
    msg = r"^expected src to have a size equal to the slice of self. src size = \[3\], slice size = \[2\]$"
    with pytest.raises(RuntimeError, match=msg):
        torch.diagonal_scatter(z, torch.ones(3))
    with pytest.raises(RuntimeError, match=msg):
        torch.select_scatter(z, torch.ones(3), 1, 0)
    with pytest.raises(IndexError, match=r"select\(\): index 5 out of range for tensor of size \[2, 3\] at dimension 0"):
        torch.select_scatter(z, torch.ones(3), 0, 5)
    with pytest.raises(RuntimeError, match="^slice step must be positive$"):
        torch.slice_scatter(torch.zeros(4), torch.ones(2), 0, None, None, 0)
    x = torch.rand(3, 4, dtype=torch.float64, requires_grad=True)
    cases = [(lambda a, s: torch.diagonal_scatter(a, s, 1), (3,)), (lambda a, s: torch.select_scatter(a, s, 1, 2), (3,)),
             (lambda a, s: torch.slice_scatter(a, s, 1, 1, None, 2), (3, 2)),
             (lambda a, s: torch.as_strided_scatter(a, s, (2, 2), (1, 4), 1), (2, 2))]
    for fn, shape in cases:
        src = torch.rand(*shape, dtype=torch.float64, requires_grad=True)
        assert gradcheck(fn, (x, src))


def test_slice_inverse_views_the_base():
    x = torch.arange(10.)
    r = torch.slice_inverse(x[2:8:2], x, 0, 2, 8, 2)
    assert r.tolist() == x.tolist() and r.storage_offset() == 0 and shares(r, x)


# ------------------------------------------------------------------------- grids and combinations

def test_meshgrid():
    _formula_helpers._warned.discard("torch.meshgrid: in an upcoming release, it will be required to pass the "
                                     "indexing argument.")
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        torch.meshgrid(torch.arange(2), torch.arange(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.meshgrid(torch.arange(2), torch.arange(3))       # once per process, as TORCH_WARN_ONCE
        a, b = torch.meshgrid([torch.arange(2), torch.arange(3)], indexing="xy")
    assert tuple(a.shape) == (3, 2) and a.tolist() == [[0, 1]] * 3 and b.tolist() == [[0, 0], [1, 1], [2, 2]]
    a, b = torch.meshgrid(torch.tensor(3), torch.arange(2), indexing="ij")
    assert a.tolist() == [[3, 3]] and b.tolist() == [[0, 1]]
    with pytest.raises(RuntimeError, match='^torch.meshgrid: indexing must be one of "xy" or "ij", but received: foo$'):
        torch.meshgrid(torch.arange(2), indexing="foo")
    with pytest.raises(RuntimeError, match="^meshgrid expects a non-empty TensorList$"):
        torch.meshgrid(indexing="ij")
    with pytest.raises(RuntimeError, match="^meshgrid expects all tensors to have the same dtype$"):
        torch.meshgrid(torch.arange(2), torch.arange(2.), indexing="ij")
    with pytest.raises(RuntimeError, match="Expected 0D or 1D tensor in the tensor list"):
        torch.meshgrid(torch.zeros(2, 2), indexing="ij")
    x, y = torch.rand(2, dtype=torch.float64, requires_grad=True), torch.rand(3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda p, q: torch.meshgrid(p, q, indexing="xy"), (x, y))


def test_cartesian_prod_and_combinations():
    a, b = torch.tensor([1, 2]), torch.tensor([5, 6, 7])
    assert torch.cartesian_prod(a, b).tolist() == [list(p) for p in itertools.product([1, 2], [5, 6, 7])]
    assert torch.cartesian_prod(b).tolist() == [5, 6, 7]
    with pytest.raises(RuntimeError, match=r"^Expect a 1D vector, but got shape \[\]$"):
        torch.cartesian_prod(torch.tensor(1.), torch.ones(2))
    v = torch.tensor([4, 5, 6, 7])
    assert torch.combinations(v, 3).tolist() == [list(c) for c in itertools.combinations([4, 5, 6, 7], 3)]
    assert torch.combinations(v, with_replacement=True).tolist() == \
        [list(c) for c in itertools.combinations_with_replacement([4, 5, 6, 7], 2)]
    assert tuple(torch.combinations(v, 0).shape) == (0,) and tuple(torch.combinations(v, 1).shape) == (4, 1)
    assert tuple(torch.combinations(torch.arange(3), 5).shape) == (0, 5)
    with pytest.raises(RuntimeError, match="^Expect a non-negative number, but got -1$"):
        torch.combinations(v, -1)
    with pytest.raises(RuntimeError, match=r"^Expect a 1D vector, but got shape \[2, 2\]$"):
        torch.combinations(torch.zeros(2, 2))
    x = torch.rand(4, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: torch.combinations(t, 2), (x,))


def test_block_diag():
    out = torch.block_diag(torch.ones(2, 2), torch.tensor(5), torch.tensor([1, 2]), torch.zeros(0, 3))
    assert out.tolist() == [[1, 1, 0, 0, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0], [0, 0, 5, 0, 0, 0, 0, 0],
                            [0, 0, 0, 1, 2, 0, 0, 0]]
    assert tuple(torch.block_diag().shape) == (1, 0)
    assert torch.block_diag(torch.ones(2, 2, dtype=torch.int32), torch.ones(1, dtype=torch.float64)).dtype == \
        torch.float64
    with pytest.raises(RuntimeError, match="^torch.block_diag: Input tensors must have 2 or fewer dimensions. Input 0 "
                                           "has 3 dimensions$"):
        torch.block_diag(torch.ones(2, 2, 2))
    a, b = torch.rand(2, 3, dtype=torch.float64, requires_grad=True), torch.rand(2, dtype=torch.float64, requires_grad=True)
    assert gradcheck(torch.block_diag, (a, b))


# ------------------------------------------------------------------------- indexing helpers

def test_take_along_dim():
    a = arange(2, 3)
    assert torch.take_along_dim(a, torch.tensor([[0], [2]]), 1).tolist() == [[0], [5]]
    assert torch.take_along_dim(a, torch.tensor([5, 0])).tolist() == [5, 0]
    assert torch.take_along_dim(a, torch.tensor([[1], [0]]), 0).tolist() == [[3, 4, 5], [0, 1, 2]]   # broadcast
    with pytest.raises(RuntimeError, match="^gather\\(\\): Expected dtype int32/int64 for index$"):
        torch.take_along_dim(a, torch.tensor([0.]))
    with pytest.raises(RuntimeError, match="^torch.take_along_dim\\(\\): dtype of indices should be Long but got Int$"):
        torch.take_along_dim(a, torch.tensor([[0]], dtype=torch.int32), 1)
    with pytest.raises(RuntimeError, match="should have the same number of dimensions, but got 2 dimensions for input, "
                                           "and 1 dimensions for indices"):
        torch.take_along_dim(a, torch.tensor([0]), 1)
    x = torch.rand(2, 3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: torch.take_along_dim(t, torch.tensor([[0, 2, 2]]), 1), (x,))


def test_unravel_index():
    assert [t.tolist() for t in torch.unravel_index(torch.tensor([4, 1]), (2, 3))] == [[1, 0], [1, 1]]
    assert [t.tolist() for t in torch.unravel_index(torch.tensor([-1]), (2, 3))] == [[1], [2]]
    assert [t.tolist() for t in torch.unravel_index(torch.tensor([[1, 2]]), torch.Size([2, 3]))] == [[[0, 0]], [[1, 2]]]
    assert torch.unravel_index(torch.tensor([1], dtype=torch.int32), (2, 3))[0].dtype == torch.int64
    assert torch.unravel_index(torch.tensor([1]), ()) == ()
    with pytest.raises(TypeError, match="^expected 'indices' to be integer dtype, but got torch.float32$"):
        torch.unravel_index(torch.tensor([1.]), (2, 3))
    with pytest.raises(ValueError, match=r"^'shape' cannot have negative values, but got \(2, -3\)$"):
        torch.unravel_index(torch.tensor([1]), (2, -3))


def test_repeat_interleave_forms():
    assert torch.repeat_interleave(torch.tensor([2, 1])).tolist() == [0, 0, 1]
    assert torch.repeat_interleave(torch.tensor([[1, 2], [3, 4]]), torch.tensor([1, 2]), dim=0).tolist() == \
        [[1, 2], [3, 4], [3, 4]]
    assert torch.repeat_interleave(torch.ones(2, 3), torch.tensor([2]), dim=1).shape == (2, 6)
    assert torch.repeat_interleave(torch.tensor(5.), 3).tolist() == [5, 5, 5]
    assert torch.repeat_interleave(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 3]), output_size=6).tolist() == \
        [1, 2, 2, 3, 3, 3]
    errors = [(lambda: torch.repeat_interleave(torch.tensor([1, 2, 3]), torch.tensor([1, 2])),
               "repeats must have the same size as input along dim, but got repeats.size(0) = 2 and input.size(0) = 3"),
              (lambda: torch.repeat_interleave(torch.tensor([1, 2, 3]), torch.tensor([1, -2, 1])),
               "repeats can not be negative"),
              (lambda: torch.repeat_interleave(torch.tensor([1, 2, 3]), -1), "Repeats must be non-negative"),
              (lambda: torch.repeat_interleave(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 3]), output_size=5),
               "allocated size does not match required size"),
              (lambda: torch.repeat_interleave(torch.tensor([1, 2, 3]), 2, output_size=5),
               "repeat_interleave: Invalid output_size, expected 6 but got 5"),
              (lambda: torch.repeat_interleave(torch.tensor([[2, 1]])), "repeat_interleave only accept 1D vector as repeat")]
    for fn, msg in errors:
        with pytest.raises(RuntimeError) as err:
            fn()
        assert str(err.value) == msg
    x = torch.rand(2, 3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda t: torch.repeat_interleave(t, torch.tensor([0, 2, 1]), dim=-1), (x,))


def test_unique_consecutive():
    v, inv, cnt = torch.unique_consecutive(torch.tensor([1, 1, 2, 2, 3, 1, 1, 2]), return_inverse=True,
                                           return_counts=True)
    assert (v.tolist(), inv.tolist(), cnt.tolist()) == ([1, 2, 3, 1, 2], [0, 0, 1, 1, 2, 3, 3, 4], [2, 2, 1, 2, 1])
    v, cnt = torch.unique_consecutive(torch.tensor([[1, 1], [1, 1], [2, 3]]), return_counts=True, dim=0)
    assert (v.tolist(), cnt.tolist()) == ([[1, 1], [2, 3]], [2, 1])
    v, inv, cnt = torch.unique_consecutive(torch.tensor(3), return_inverse=True, return_counts=True)
    assert (v.tolist(), inv.shape, cnt.tolist()) == ([3], (), [1])
    v, inv, cnt = torch.unique_consecutive(torch.tensor([]), return_inverse=True, return_counts=True)
    assert v.shape == inv.shape == cnt.shape == (0,)


def test_stack_and_split_errors():
    for name in ("hstack", "vstack", "dstack", "column_stack"):
        with pytest.raises(RuntimeError, match=f"^{name} expects a non-empty TensorList$"):
            getattr(torch, name)([])
    with pytest.raises(RuntimeError, match="^vstack expects a non-empty TensorList$"):
        torch.row_stack([])
    assert torch.column_stack([torch.tensor(1.), torch.tensor(2)]).tolist() == [[1, 2]]
    x = arange(3, 4)
    assert [tuple(p.shape) for p in torch.tensor_split(x, [3, 1])] == [(3, 4), (0, 4), (2, 4)]
    assert [tuple(p.shape) for p in torch.tensor_split(x, torch.tensor(2))] == [(2, 4), (1, 4)]
    with pytest.raises(RuntimeError, match="^tensor_split expected tensor_indices_or_sections to have dtype of long, "
                                           "but got Float$"):
        torch.tensor_split(x, torch.tensor([1.]))
    with pytest.raises(RuntimeError, match="^number of sections must be larger than 0, got 0$"):
        torch.tensor_split(x, 0)
    with pytest.raises(RuntimeError, match="^torch.hsplit attempted to split along dimension 1, but the size of the "
                                           "dimension 4 is not divisible by the split_size 3!$"):
        torch.hsplit(x, 3)
    with pytest.raises(RuntimeError, match="^torch.dsplit requires a tensor with at least 3 dimension, but got a "
                                           "tensor with 2 dimensions!$"):
        torch.dsplit(x, 2)
    assert x.sum_to_size(1, 4).tolist() == [[12, 15, 18, 21]] and x.sum_to_size(3, 4) is x
    with pytest.raises(RuntimeError, match=r"^size \{\[4, 4\]\} is not expandable to size \{\[3, 4\]\}.$"):
        x.sum_to_size(4, 4)


def test_rot90_and_trace_errors():
    assert torch.rot90(arange(2, 3).long()).tolist() == [[2, 5], [1, 4], [0, 3]]
    assert torch.rot90(arange(2, 3).long(), -1).tolist() == [[3, 0], [4, 1], [5, 2]]
    with pytest.raises(RuntimeError, match="^expected rotation dims to be different, but got dim0 = 0 and dim1 = -2$"):
        torch.rot90(arange(2, 3), 1, [0, -2])
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 2"):
        torch.rot90(arange(2, 3), 1, [0, 2])
    assert torch.trace(arange(2, 3).to(torch.uint8)).dtype == torch.int64
    with pytest.raises(NotImplementedError, match="\"trace\" not implemented for 'Bool'"):
        torch.trace(torch.ones(2, 2, dtype=torch.bool))
    assert torch.diag_embed(arange(2, 3), 1, 0, 2).shape == (4, 2, 4)
    with pytest.raises(RuntimeError, match="^diag\\(\\): Supports 1D or 2D tensors. Got 3D$"):
        torch.diag(torch.ones(2, 2, 2))
