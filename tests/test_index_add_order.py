"""index_add (and the index_select / embedding gradient it computes) adds repeated slices one after the other, in
index order, rounding after each add as PyTorch's CPU kernel does: np.add.at is the reference, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

import reftorch as torch

RNG = np.random.default_rng(1919)


def _add_at(x, dim, index, s):
    out = x.copy()
    at = [slice(None)] * out.ndim
    at[dim] = index
    np.add.at(out, tuple(at), s)
    return out


def test_order_of_the_adds_is_the_index_order():
    # ((0 + 1e8) + 1) - 1e8 is 0 in float32 (1e8 + 1 rounds to 1e8), ((0 + 1e8) - 1e8) + 1 is 1
    x = torch.zeros(2, 1).index_add(0, torch.tensor([1, 1, 1]), torch.tensor([[1e8], [1.0], [-1e8]]))
    assert x.numpy().tolist() == [[0.0], [0.0]]
    y = torch.zeros(2, 1).index_add(0, torch.tensor([1, 1, 1]), torch.tensor([[1e8], [-1e8], [1.0]]))
    assert y.numpy().tolist() == [[0.0], [1.0]]


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "int8", "int64", "uint8"])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_index_add_matches_sequential_add_at(dtype, dim):
    shape = [5, 4, 3]
    k = 9
    index = RNG.integers(0, shape[dim], k)
    sshape = list(shape)
    sshape[dim] = k
    if dtype.startswith("int") or dtype.startswith("uint"):
        x0 = RNG.integers(0, 100, shape).astype(dtype)
        s = RNG.integers(0, 100, sshape).astype(dtype)      # int8 / uint8 sums wrap as in torch
    else:
        x0 = (RNG.standard_normal(shape) * 1e3).astype(dtype)
        s = (RNG.standard_normal(sshape) * 10.0 ** RNG.integers(-3, 4, sshape)).astype(dtype)
        if dtype.startswith("complex"):
            s = s + 1j * s[::-1].copy()
    got = torch.from_numpy(x0.copy()).index_add(dim, torch.from_numpy(index), torch.from_numpy(s))
    want = _add_at(x0, dim, index, s)
    assert got.numpy().dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_bool_index_add_is_logical_or():
    x = torch.tensor([[False, True], [False, False]])
    s = torch.tensor([[True, False], [False, False], [True, True]])
    got = x.index_add(0, torch.tensor([0, 1, 0]), s)
    assert got.numpy().tolist() == [[True, True], [False, False]]


def test_non_contiguous_source_and_alpha():
    x0 = RNG.standard_normal((4, 6)).astype(np.float32)
    src = RNG.standard_normal((5, 6)).astype(np.float32)
    index = np.array([3, 0, 3, 3, 1])
    got = torch.from_numpy(x0).index_add(1, torch.from_numpy(index), torch.from_numpy(src).t()[:4], alpha=3)
    want = _add_at(x0, 1, index, 3 * src.T[:4])
    np.testing.assert_array_equal(got.numpy(), want)
    inplace = torch.from_numpy(x0.copy())
    inplace.index_add_(1, torch.from_numpy(index), torch.from_numpy(src).t()[:4], alpha=3)
    np.testing.assert_array_equal(inplace.numpy(), want)


def test_embedding_gradient_sums_rows_in_index_order():
    w = torch.zeros(4, 3, requires_grad=True)
    idx = torch.tensor([[2, 2], [0, 2]])
    g = RNG.standard_normal((2, 2, 3)).astype(np.float32) * np.float32(1e4)
    torch.nn.functional.embedding(idx, w).backward(torch.from_numpy(g))
    want = _add_at(np.zeros((4, 3), np.float32), 0, idx.numpy().reshape(-1), g.reshape(4, 3))
    np.testing.assert_array_equal(w.grad.numpy(), want)
    assert w.grad.dtype == torch.float32



def test_indexing_gradient_adds_rows_in_index_order():
    # W[idx] backward: index_put(accumulate=True) with a slice among the indices (rows of W)
    w = torch.zeros(3, 2, requires_grad=True)
    idx = torch.tensor([1, 1, 1, 0])
    g = torch.tensor([[1e8, 1.0], [1.0, 1e8], [-1e8, -1e8], [2.0, 3.0]])
    w[idx].backward(g)
    assert w.grad.numpy().tolist() == [[2.0, 3.0], [0.0, 0.0], [0.0, 0.0]]


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128", "int16", "bool"])
@pytest.mark.parametrize("case", ["rows", "cols", "cols2d", "rows_negative", "pair", "mask", "negative", "scalar"])
def test_index_put_accumulate_matches_add_at(dtype, case):
    shape = (6, 5, 4)
    x0 = (RNG.standard_normal(shape) * 100).astype(dtype)
    if case == "rows":
        where = (RNG.integers(0, 6, 10),)
    elif case == "cols":
        where = (slice(None), RNG.integers(0, 5, 7))
    elif case == "cols2d":
        where = (slice(None), RNG.integers(0, 5, (2, 3)))
    elif case == "rows_negative":
        where = (np.array([-1, 5, -6, 0, -1]),)
    elif case == "pair":
        where = (RNG.integers(0, 6, (3, 4)), RNG.integers(0, 5, (1, 4)))
    elif case == "mask":
        where = (RNG.random(6) > 0.4,)
    elif case == "negative":
        where = (np.array([-1, 5, -1, 0]), slice(None), np.array([3, -1, 3, 3]))
    else:
        where = (np.array([2, 2, 2]),)
    result_shape = np.zeros(shape)[where].shape
    v = (RNG.standard_normal(result_shape) * 10.0 ** RNG.integers(-3, 6, result_shape)).astype(dtype)
    if case == "scalar":
        v = v[0, 0, :1]         # broadcast over the indexing result
    want = x0.copy()
    np.add.at(want, where, v)
    indices = tuple(None if isinstance(i, slice) else torch.from_numpy(np.asarray(i)) for i in where)
    got = torch.from_numpy(x0.copy()).index_put(indices, torch.from_numpy(np.ascontiguousarray(v)), True)
    np.testing.assert_array_equal(got.numpy(), want)
    inplace = torch.from_numpy(x0.copy())
    inplace.index_put_(indices, torch.from_numpy(np.ascontiguousarray(v)), accumulate=True)
    np.testing.assert_array_equal(inplace.numpy(), want)


def test_index_put_accumulate_strided_target():
    base = torch.zeros(4, 6)
    view = base[:, ::2]                 # not C-contiguous: written through its strides
    view.index_put_((torch.tensor([0, 0, 3]),), torch.ones(3, 3), accumulate=True)
    want = np.zeros((4, 6), np.float32)
    want[0, ::2] = 2.0
    want[3, ::2] = 1.0
    np.testing.assert_array_equal(base.numpy(), want)


def test_index_put_accumulate_out_of_range_leaves_self():
    x = torch.zeros(3, 2)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x.index_put_((torch.tensor([0, 3]),), torch.ones(2, 2), accumulate=True)
    assert not x.any().item()
