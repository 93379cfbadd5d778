"""Sparse x dense products with sparse results (torch.sspaddmm / saddmm, smm, hspmm / hsmm), torch.dsmm,
indices_copy / values_copy and Tensor.resize_as_sparse_ (issue surface16). The layouts (which coordinates, in which
order, the coalesced flag) are those torch 2.13's CPU kernels build; values are checked against the dense product."""
import warnings

import numpy as np
import pytest

import reftorch as torch

DENSE_S = np.array([[0.0, 0.0, 3.0], [4.0, 0.0, 5.0]])
D = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
M = np.array([[1.0, 1.0], [2.0, 2.0]])


def _sparse(indices, values, size):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), size)


def _S():
    return _sparse([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))


def _parts(s):
    return s._indices().tolist(), s._values().tolist(), s.is_coalesced()


def test_smm_rows_with_entries_times_every_column():
    r = torch.smm(_S(), torch.tensor(D, dtype=torch.float32))
    prod = DENSE_S @ D
    assert r.is_sparse and r.shape == (2, 2)
    assert _parts(r) == ([[0, 0, 1, 1], [0, 1, 0, 1]], prod.reshape(-1).tolist(), False)
    assert _parts(_S().smm(torch.tensor(D, dtype=torch.float32))) == _parts(r)
    # an uncoalesced operand is coalesced first: row 1's two entries at column 0 add up
    u = _sparse([[1, 0, 1], [0, 2, 0]], [3.0, 4.0, 5.0], (2, 3))
    assert _parts(torch.smm(u, torch.tensor(D, dtype=torch.float32)))[1] == [20.0, 24.0, 8.0, 16.0]
    empty = torch.smm(torch.zeros(2, 3).to_sparse(), torch.tensor(D, dtype=torch.float32))
    assert _parts(empty) == ([[], []], [], True)


def test_sspaddmm_puts_beta_input_first_then_the_product():
    Ms, S, Dt = torch.tensor(M, dtype=torch.float32).to_sparse(), _S(), torch.tensor(D, dtype=torch.float32)
    r = torch.sspaddmm(Ms, S, Dt, beta=0.5, alpha=2)
    idx, vals, coalesced = _parts(r)
    assert idx == [[0, 0, 1, 1, 0, 0, 1, 1], [0, 1, 0, 1, 0, 1, 0, 1]] and not coalesced
    assert vals == (0.5 * M).reshape(-1).tolist() + (2 * DENSE_S @ D).reshape(-1).tolist()
    np.testing.assert_array_equal(r.to_dense().numpy(), 0.5 * M + 2 * DENSE_S @ D)
    assert _parts(Ms.sspaddmm(S, Dt)) == _parts(torch.sspaddmm(Ms, S, Dt))
    assert _parts(torch.saddmm(Ms, S, Dt, alpha=-1))[1][4:] == (-(DENSE_S @ D)).reshape(-1).tolist()
    out = torch.tensor([[1.0]]).to_sparse()
    assert torch.sspaddmm(Ms, S, Dt, out=out) is out and out.shape == (2, 2) and out._nnz() == 8


def test_hspmm_keeps_one_sparse_dim():
    r = torch.hspmm(_S(), torch.tensor(D, dtype=torch.float32))
    assert r.sparse_dim() == 1 and r.dense_dim() == 1
    assert _parts(r) == ([[0, 1]], (DENSE_S @ D).tolist(), False)
    assert _parts(torch.hsmm(_S(), torch.tensor(D, dtype=torch.float32))) == _parts(r)


def test_dsmm_is_a_dense_differentiable_product():
    d = torch.tensor(D, dtype=torch.float32, requires_grad=True)
    r = torch.dsmm(_S(), d)
    assert not r.is_sparse and r.tolist() == (DENSE_S @ D).tolist()
    r.sum().backward()
    np.testing.assert_array_equal(d.grad.numpy(), DENSE_S.T @ np.ones((2, 2)))


def test_products_with_sparse_results_have_no_derivative():
    d = torch.tensor(D, dtype=torch.float32, requires_grad=True)
    r = torch.smm(_S(), d)
    assert r.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::sspaddmm is not implemented"):
        r.to_dense().sum().backward()
    with pytest.raises(RuntimeError, match="derivative for aten::hspmm is not implemented"):
        torch.hspmm(_S(), d).to_dense().sum().backward()


@pytest.mark.parametrize("call, msg", [
    (lambda S, d: torch.smm(d.t(), d), r"tensor.sspaddmm\(\.\.\.\) can only be called on sparse tensors"),
    (lambda S, d: torch.smm(S, torch.ones(2, 2)), "sspaddmm: Argument #3: Expected dim 0 size 3, got 2"),
    (lambda S, d: torch.smm(S, torch.ones(3)), "sspaddmm: Argument #3: matrices expected, got 1D tensor"),
    (lambda S, d: torch.smm(S, d.double()), "expected scalar type Float but found Double"),
    (lambda S, d: torch.smm(S, S.t()), "sspaddmm: expected 'mat2' to have strided layout"),
    (lambda S, d: torch.smm(torch.zeros(2, 3, 2).to_sparse(2), d), "Argument #2: scalar values expected, got 1D"),
    (lambda S, d: torch.sspaddmm(torch.ones(3, 3).to_sparse(), S, d), "Argument #1: Expected dim 0 size 2, got 3"),
    (lambda S, d: torch.sspaddmm(torch.ones(2, 3).to_sparse(), S, d), "Argument #1: Expected dim 1 size 2, got 3"),
    (lambda S, d: torch.sspaddmm(torch.ones(2, 2).to_sparse(), d.t(), d), "expected 'mat1' to have sparse layout"),
    (lambda S, d: torch.sspaddmm(torch.ones(2, 2).double().to_sparse(), S, d),
     r"dtype of values \(Float\) must match dtype of sparse tensor \(Double\)"),
    (lambda S, d: torch.hspmm(S, torch.ones(2, 2)), "hspmm: Argument #3: Expected dim 0 size 3, got 2"),
])
def test_errors(call, msg):
    with pytest.raises(RuntimeError, match=msg):
        call(_S(), torch.tensor(D, dtype=torch.float32))


def test_hspmm_of_a_dense_matrix_has_no_kernel():
    with pytest.raises(NotImplementedError, match="Could not run 'aten::hspmm' with arguments from the 'CPU'"):
        torch.hspmm(torch.ones(2, 3), torch.ones(3, 2))


def test_indices_and_values_copies():
    s = _S().coalesce()
    ic, vc = torch.indices_copy(s), torch.values_copy(s)
    assert ic.tolist() == [[0, 1, 1], [2, 0, 2]] and vc.tolist() == [3.0, 4.0, 5.0]
    ic[0, 0] = 7
    vc[0] = 7.0
    assert s.indices()[0, 0].item() == 0 and s.values()[0].item() == 3.0       # fresh tensors, not views
    with pytest.raises(RuntimeError, match="indices expected sparse coordinate tensor layout but got Strided"):
        torch.indices_copy(torch.ones(2))
    with pytest.raises(RuntimeError, match="values expected sparse tensor layout but got Strided"):
        torch.values_copy(torch.ones(2))


def test_resize_as_sparse_grows_a_non_empty_tensor_and_reshapes_an_empty_one():
    t = torch.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse()
    assert t.resize_as_sparse_(torch.zeros(3, 4).to_sparse()) is t
    assert t.shape == (3, 4) and _parts(t) == ([[0, 1], [1, 0]], [2.0, 3.0], True)
    e = _sparse(np.zeros((2, 0), np.int64), np.zeros(0), (2, 2))
    e.resize_as_sparse_(torch.zeros(3, 4, 5).to_sparse(1))
    assert e.shape == (3, 4, 5) and e._indices().shape == (1, 0) and e._values().shape == (0, 4, 5)
    e = _sparse(np.zeros((2, 0), np.int64), np.zeros(0), (2, 2))
    e.resize_as_sparse_(torch.ones(3))                  # a dense template: no sparse dims
    assert e.sparse_dim() == 0 and e.dense_dim() == 1 and e._values().shape == (0, 3)


@pytest.mark.parametrize("template, msg", [
    (lambda: torch.ones(3), r"changing the number of sparse dimensions \(from 2 to 0\)"),
    (lambda: torch.zeros(3, 4, 5).to_sparse(2), r"changing the number of dense dimensions \(from 0 to 1\)"),
    (lambda: torch.zeros(1, 1).to_sparse(), r"shrinking the size of sparse dimensions \(from \[2, 2\] to \[1, 1\]\)"),
])
def test_resize_as_sparse_refusals(template, msg):
    t = torch.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse()
    with pytest.raises(RuntimeError, match=msg):
        t.resize_as_sparse_(template())
    assert t.shape == (2, 2)
    with pytest.raises(RuntimeError, match="not a sparse tensor"):
        torch.ones(2).resize_as_sparse_(t)
