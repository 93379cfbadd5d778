"""Sparse COO tensors against torch 2.13: construction and its errors, coalescing, printing (torch's own text),
sparse @ dense and its gradients (dense operand, values, a sparse leaf's .grad under torch.mm and torch.sparse.mm),
sums, scalar arithmetic, same-pattern addition. Values checked against the dense computation they stand for;
the gradients below were printed by torch 2.13 for the same inputs."""
import warnings

import numpy as np
import pytest

import reftorch as torch

I = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]
V = [3., 4., 5., 1., -2.]
DENSE = np.array([[0, 0, 4], [4, 0, 5], [0, -2, 0]], dtype=np.float64)


def _s(values=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.sparse_coo_tensor(torch.tensor(I), values if values is not None else
                                       torch.tensor(V, dtype=torch.float64), (3, 3), **kw)


def _np(t):
    return (t.to_dense() if t.is_sparse else t).detach().numpy()


def _weights(shape):
    return torch.tensor(np.linspace(-1, 1, int(np.prod(shape))).reshape(shape))


def test_construction_layout_and_coalesce():
    s = _s()
    assert s.is_sparse and s.layout == torch.sparse_coo and not torch.ones(1).is_sparse
    assert (s.sparse_dim(), s.dense_dim(), s._nnz(), tuple(s.shape), s.dtype) == (2, 0, 5, (3, 3), torch.float64)
    assert not s.is_coalesced() and s.coalesce().is_coalesced()
    c = s.coalesce()
    assert c.indices().tolist() == [[0, 1, 1, 2], [2, 0, 2, 1]] and c.values().tolist() == [4., 4., 5., -2.]
    assert np.array_equal(_np(s), DENSE) and np.array_equal(_np(c), DENSE)
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor, please call .coalesce"):
        s.indices()
    inferred = torch.sparse_coo_tensor([[0, 3]], [1., 2.], check_invariants=False)
    assert tuple(inferred.shape) == (4,)
    d = torch.tensor([[0., 1.5, 0], [2, 0, -1]])
    sd = d.to_sparse()
    assert sd.is_coalesced() and sd._indices().tolist() == [[0, 1, 1], [1, 0, 2]] and np.array_equal(_np(sd), d)
    hybrid = torch.ones(2, 3, 2).to_sparse(2)
    assert (hybrid.sparse_dim(), hybrid.dense_dim(), hybrid._nnz()) == (2, 1, 6)


def test_construction_errors_are_torchs():
    i = torch.tensor(I)
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 0, size is 1 but found index "
                                           "2"):
        torch.sparse_coo_tensor(i, torch.tensor(V), (1, 3), check_invariants=False)
    with pytest.raises(RuntimeError, match="indices and values must have same nnz, but got nnz from indices: 5, nnz "
                                           "from values: 3"):
        torch.sparse_coo_tensor(i, torch.tensor(V[:3]), (3, 3), check_invariants=False)
    with pytest.raises(RuntimeError, match="found negative index -1 for dim 0"):
        torch.sparse_coo_tensor([[-1, 1]], [1., 2.], (2,), check_invariants=True)
    with pytest.raises(RuntimeError, match=r"'len\(size\) == sparse_dim \+ dense_dim' is not satisfied: len\(size\) "
                                           r"= 2, sparse_dim = 1, dense_dim = 0"):
        torch.sparse_coo_tensor([[0, 1]], [1., 2.], (2, 3), check_invariants=False)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported. Use add\(dense, sparse\)"):
        _s() + torch.ones(3, 3, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        torch.mm(_s(), torch.ones(3, 2))
    with pytest.raises(NotImplementedError, match="'SparseCPU' backend"):
        _s().exp()


def test_prints_as_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1, 0], [2, 0, 2, 2]]), torch.tensor([3., 4., 5., 1.]),
                                    (2, 3))
        empty = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0), (2, 3))
    assert repr(s) == ("tensor(indices=tensor([[0, 1, 1, 0],\n                       [2, 0, 2, 2]]),\n"
                       "       values=tensor([3., 4., 5., 1.]),\n"
                       "       size=(2, 3), nnz=4, layout=torch.sparse_coo)")
    assert repr(s.double().requires_grad_()).endswith("nnz=4, dtype=torch.float64, layout=torch.sparse_coo, "
                                                      "requires_grad=True)")
    assert repr(s * 2).endswith("values=tensor([ 6.,  8., 10.,  2.]),\n       size=(2, 3), nnz=4, "
                                "layout=torch.sparse_coo)")
    assert repr(empty) == ("tensor(indices=tensor([], size=(2, 0)),\n       values=tensor([], size=(0,)),\n"
                           "       size=(2, 3), nnz=0, layout=torch.sparse_coo)")


@pytest.mark.parametrize("how", ["mm", "sparse.mm", "spmm", "matmul", "@"])
def test_sparse_times_dense_and_gradients(how):
    v = torch.tensor(V, dtype=torch.float64, requires_grad=True)
    dense = torch.tensor(np.arange(6.).reshape(3, 2) / 3, requires_grad=True)
    s = _s(v)
    fn = {"mm": torch.mm, "sparse.mm": torch.sparse.mm, "spmm": torch.spmm, "matmul": torch.matmul,
          "@": lambda a, b: a @ b}[how]
    out = fn(s, dense)
    assert np.allclose(_np(out), DENSE @ dense.detach().numpy())
    (out * _weights((3, 2))).sum().backward()
    assert np.allclose(v.grad.numpy(), [-2.333333, 0.066667, 0.066667, -2.333333, 1.4], atol=1e-6)   # torch's
    assert np.allclose(dense.grad.numpy(), [[-0.8, 0.8], [-1.2, -2.0], [-5.0, -1.4]], atol=1e-6)
    assert np.allclose(_np(s @ torch.ones(3, dtype=torch.float64)), DENSE.sum(1))


def test_sparse_leaf_grads_follow_torch():
    dense = torch.tensor(np.arange(6.).reshape(3, 2) / 3)
    leaf = _s(requires_grad=True)
    (torch.sparse.mm(leaf, dense) * _weights((3, 2))).sum().backward()
    assert leaf.grad.is_sparse and not leaf.grad.is_coalesced()     # torch's: on the leaf's coordinates
    assert np.allclose(_np(leaf.grad), [[0, 0, -2.333333], [0.066667, 0, 0.066667], [0, 1.4, 0]], atol=1e-6)
    leaf.grad = None
    for _ in range(2):      # torch.mm gives a dense gradient, accumulated in place
        (torch.mm(leaf, dense) * _weights((3, 2))).sum().backward()
    assert not leaf.grad.is_sparse
    assert np.allclose(leaf.grad.numpy(), 2 * np.array([[-0.2, -1.266667, -2.333333], [0.066667] * 3,
                                                        [0.333333, 1.4, 2.466667]]), atol=1e-5)
    x = torch.tensor([[0., 1.5, 0], [2, 0, -1]], dtype=torch.float64, requires_grad=True)
    (torch.mm(x.to_sparse(), dense) * _weights((2, 2))).sum().backward()     # to_sparse: the dense gradient
    assert np.allclose(x.grad.numpy(), (_weights((2, 2)).numpy() @ dense.numpy().T))


def test_sums_scalars_addition_and_addmm():
    v = torch.tensor(V, dtype=torch.float64, requires_grad=True)
    s = _s(v)
    assert torch.sparse.sum(s).item() == 11.0 and torch.sum(s).item() == 11.0
    by_col = torch.sparse.sum(s, 0)
    assert by_col.is_sparse and np.array_equal(_np(by_col), DENSE.sum(0))
    assert np.array_equal(_np(torch.sparse.sum(s, dim=(0, 1))), 11.0)
    (torch.sparse.sum(s, dim=1).to_dense() * torch.tensor([-1., 0., 1.], dtype=torch.float64)).sum().backward()
    assert v.grad.tolist() == [-1.0, 0.0, 0.0, -1.0, 1.0]
    assert np.array_equal(_np(s * 2.5), DENSE * 2.5) and np.array_equal(_np(2 * s), DENSE * 2)
    assert np.array_equal(_np(s / 4), DENSE / 4) and np.array_equal(_np(-s), -DENSE)
    same = s + s * 2
    assert same._nnz() == 5 and np.array_equal(_np(same), 3 * DENSE)        # one pattern: values add
    c = s.coalesce()
    merged = c + _s().t().coalesce()
    assert merged.is_coalesced() and np.array_equal(_np(merged), DENSE + DENSE.T)
    assert np.array_equal(_np(torch.ones(3, 3, dtype=torch.float64) + s), 1 + DENSE)
    dense = torch.tensor(np.arange(6.).reshape(3, 2) / 3)
    base = torch.ones(3, 2, dtype=torch.float64)
    for fn in (torch.addmm, torch.sparse.addmm):
        got = fn(base, s, dense, beta=0.5, alpha=2)
        assert np.allclose(_np(got), 0.5 + 2 * DENSE @ dense.numpy())


def test_checkpoints_hold_sparse_tensors_as_torch_writes_them(tmp_path):
    s = _s()
    path = tmp_path / "adj.pt"
    torch.save({"adj": s, "c": s.coalesce()}, path)
    back = torch.load(path)         # weights-only: torch._utils._rebuild_sparse_tensor is allowed, as in torch
    assert back["adj"].is_sparse and not back["adj"].is_coalesced() and back["c"].is_coalesced()
    assert back["adj"]._indices().tolist() == I and np.array_equal(_np(back["adj"]), DENSE)
    with open(path, "rb") as f:
        assert b"_rebuild_sparse_tensor" in f.read()
