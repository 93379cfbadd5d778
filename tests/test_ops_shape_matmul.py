"""The matmul family, cross and the scatter/index reductions of issue 16 (branch ops-shape).

What the registry tests leave out: shapes that constrain each other (addr, addbmm, chain_matmul), PyTorch's
errors and warnings, and every reduce= mode of scatter_reduce / index_reduce with its gradient. Expected
values and messages were checked against torch 2.13.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import reftorch as torch
from reftorch import _formula_helpers
from reftorch.autograd.gradcheck import gradcheck, gradgradcheck


def arange(*shape, dtype=None):
    return torch.arange(int(np.prod(shape)), dtype=dtype or torch.float32).reshape(*shape)


def f64(*shape):
    return torch.rand(*shape, dtype=torch.float64, requires_grad=True)


def test_addmv_addr_addbmm():
    a, b = arange(2, 3), torch.arange(3.)
    assert torch.addmv(torch.ones(2), a, b, beta=2, alpha=3).tolist() == [17, 44]
    assert torch.addmv(torch.tensor(1.), a, b).shape == (2,)
    assert torch.addmv(torch.ones(2).long(), a.long(), b.long(), beta=0.5).tolist() == [5, 14]
    y = torch.ones(2)
    assert y.addmv_(a, b) is y and y.tolist() == [6, 15]
    with pytest.raises(RuntimeError, match=r"^size mismatch, got input \(3\), mat \(2x3\), vec \(3\)$"):
        torch.addmv(torch.ones(3), a, b)
    with pytest.raises(RuntimeError, match="^addmv input tensors must have the same dtype, but got Double, Float, and "
                                           "Float$"):
        torch.addmv(torch.ones(2, dtype=torch.float64), a, b)
    assert torch.addr(torch.zeros(2, 3), torch.ones(2), b, beta=2, alpha=2).tolist() == [[0, 2, 4], [0, 2, 4]]
    assert torch.addr(torch.zeros(3), torch.ones(2), b).tolist() == [[0, 1, 2], [0, 1, 2]]
    t = torch.ones(3, dtype=torch.bool)
    assert torch.addr(torch.zeros(2, 3, dtype=torch.bool), t[:2], t, beta=2).all().item()
    assert not torch.addr(torch.zeros(2, 3, dtype=torch.bool), t[:2], t, alpha=0).any().item()
    with pytest.raises(RuntimeError, match="^For integral input tensors, argument beta must not be a floating point "
                                           "number.$"):
        torch.addr(torch.zeros(2, 3, dtype=torch.int64), torch.ones(2, dtype=torch.int64), torch.arange(3), beta=0.5)
    with pytest.raises(RuntimeError, match="^addr: Expected 1-D argument vec1, but got 2-D$"):
        torch.addr(torch.zeros(2, 3), torch.ones(2, 1), b)
    z = torch.zeros(2, 4)
    assert z.addbmm_(torch.ones(3, 2, 5), torch.ones(3, 5, 4)) is z and z.tolist() == [[15] * 4] * 2
    assert torch.addbmm(torch.zeros(2, 4), torch.ones(3, 2, 5), torch.ones(3, 5, 4), beta=2, alpha=0.5)[0, 0] == 7.5
    with pytest.raises(RuntimeError, match="^batch1 and batch2 must have same number of batches, got 3 and 2$"):
        torch.addbmm(torch.zeros(2, 4), torch.ones(3, 2, 5), torch.ones(2, 5, 4))
    assert torch.zeros(3, 2, 4).baddbmm_(torch.ones(3, 2, 5), torch.ones(3, 5, 4)).sum().item() == 120
    assert torch.zeros(2, 4).addmm_(torch.ones(2, 5), torch.ones(5, 4)).sum().item() == 40
    assert gradcheck(lambda s, p, q: torch.addr(s, p, q, beta=0.5, alpha=2), (f64(2, 3), f64(2), f64(3)))
    assert gradcheck(lambda s, p, q: torch.addbmm(s, p, q, alpha=2), (f64(3), f64(2, 3, 2), f64(2, 2, 3)))


def test_chain_matmul_tensordot_inner():
    _formula_helpers._warned.discard(next((m for m in _formula_helpers._warned if "chain_matmul" in m), ""))
    with pytest.warns(UserWarning, match="torch.chain_matmul is deprecated"):
        out = torch.chain_matmul(torch.ones(2, 3), torch.ones(3, 4), torch.ones(4, 1))
    assert out.tolist() == [[12], [12]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # once per process
        with pytest.raises(RuntimeError, match=r"^multi_dot\(\): tensors 0 and 1 with shapes \[2, 3\] and \[4, 1\] "
                                               r"cannot be multiplied$"):
            torch.chain_matmul(torch.ones(2, 3), torch.ones(4, 1))
        with pytest.raises(RuntimeError, match="^Tensor dimension is 1, expected 2 instead.$"):
            torch.chain_matmul(torch.ones(3), torch.ones(3))
    x, y = arange(2, 3, 4), arange(4, 3, 5)
    assert torch.tensordot(x, y, dims=([1, 2], [1, 0])).tolist() == np.tensordot(
        np.arange(24.).reshape(2, 3, 4), np.arange(60.).reshape(4, 3, 5), ([1, 2], [1, 0])).tolist()
    assert torch.tensordot(torch.ones(2, 3), torch.ones(3, 2), dims=0).shape == (2, 3, 3, 2)
    errors = [(dict(dims=-1), "tensordot expects dims >= 0, but got dims=-1"),
              (dict(dims=([0], [1])), "contracted dimensions need to match, but first has size 2 in dim 0 and second "
                                      "has size 3 in dim 1"),
              (dict(dims=([0], [0, 1])), "both dimension lists should have same length"),
              (dict(dims=3), "tensordot expects dims < ndim_a or ndim_b, but got dims=3")]
    for kw, msg in errors:
        with pytest.raises(RuntimeError) as err:
            torch.tensordot(torch.ones(2, 3), torch.ones(2, 3), **kw)
        assert str(err.value) == msg
    with pytest.raises(RuntimeError, match="^both inputs should have same dtype$"):
        torch.tensordot(torch.ones(2, 3), torch.ones(3, 3).long(), dims=1)
    assert torch.inner(torch.ones(2, 3), torch.ones(4, 3)).shape == (2, 4)
    assert torch.inner(torch.tensor(2.), torch.ones(4, 3)).tolist() == [[2] * 3] * 4
    with pytest.raises(RuntimeError, match=r"^inner\(\) the last dimension must match on both input tensors but got "
                                           r"shapes \[2, 3\] and \[2\]$"):
        torch.inner(torch.ones(2, 3), torch.ones(2))
    assert torch.kron(torch.tensor([[1, 2], [3, 4]]), torch.ones(2, 2)).tolist() == np.kron(
        [[1, 2], [3, 4]], np.ones((2, 2))).tolist()
    assert gradcheck(lambda p, q: torch.tensordot(p, q, dims=([0], [1])), (f64(2, 3), f64(4, 2)))


def test_cross():
    _formula_helpers._warned.discard(next((m for m in _formula_helpers._warned if "torch.cross" in m), ""))
    a, b = arange(2, 3), torch.ones(2, 3)
    with pytest.warns(UserWarning, match="Using torch.cross without specifying the dim arg is deprecated"):
        out = torch.cross(a, b)
    assert out.tolist() == [[-1, 2, -1], [-1, 2, -1]]
    assert torch.cross(a.t(), b.t()).tolist() == [[-1, -1], [2, 2], [-1, -1]]          # first dim of size 3
    assert torch.cross(torch.ones(1, 3), a, dim=1).tolist() == [[1, -2, 1], [1, -2, 1]]   # broadcasting
    assert torch.cross(torch.tensor([1, 2, 3]), torch.tensor([3, 1, 2]), dim=0).tolist() == [1, 7, -5]
    errors = [((a, b, 0), RuntimeError, "linalg.cross: inputs dimension 0 must have length 3. Got 2 and 2"),
              ((torch.ones(2, 4), torch.ones(2, 4), None), RuntimeError, "no dimension of size 3 in input"),
              ((torch.ones(3), torch.ones(2, 3), None), RuntimeError,
               "linalg.cross: inputs must have the same number of dimensions."),
              ((torch.ones(3), torch.ones(3, dtype=torch.int64), None), RuntimeError,
               "expected scalar type Float but found Long"),
              ((torch.ones(3, dtype=torch.bool), torch.ones(3, dtype=torch.bool), None), NotImplementedError,
               "\"cross\" not implemented for 'Bool'")]
    for (p, q, dim), cls, msg in errors:
        with pytest.raises(cls) as err:
            torch.cross(p, q, dim=dim)
        assert str(err.value) == msg
    assert gradgradcheck(lambda p, q: torch.cross(p, q, dim=-1), (f64(2, 3), f64(1, 3)))


INDEX = [0, 1, 0, 1, 2, 1]
SRC = [1., 2., 3., 4., 5., 6.]
SELF = [1., 2., 3., 4.]
# torch 2.13: (values, self's gradient, src's gradient) of
# self.scatter_reduce(0, INDEX, SRC, reduce, include_self).mul([1, 2, 3, 4]).sum().backward()
TORCH_SCATTER_REDUCE = {
    ("sum", True): ([5, 14, 8, 4], [1, 2, 3, 4], [1, 2, 1, 2, 3, 2]),
    ("sum", False): ([4, 12, 5, 4], [0, 0, 0, 4], [1, 2, 1, 2, 3, 2]),
    ("prod", True): ([3, 96, 15, 4], [3, 96, 15, 4], [3, 96, 1, 48, 9, 32]),
    ("prod", False): ([3, 48, 5, 4], [0, 0, 0, 4], [3, 48, 1, 24, 3, 16]),
    ("mean", True): ([5 / 3, 3.5, 4, 4], [1 / 3, 0.5, 1.5, 4], [1 / 3, 0.5, 1 / 3, 0.5, 1.5, 0.5]),
    ("mean", False): ([2, 4, 5, 4], [0, 0, 0, 4], [0.5, 2 / 3, 0.5, 2 / 3, 3, 2 / 3]),
    ("amax", True): ([3, 6, 5, 4], [0, 0, 0, 4], [0, 0, 1, 0, 3, 2]),
    ("amax", False): ([3, 6, 5, 4], [0, 0, 0, 4], [0, 0, 1, 0, 3, 2]),
    ("amin", True): ([1, 2, 3, 4], [0.5, 1, 3, 4], [0.5, 1, 0, 0, 0, 0]),
    ("amin", False): ([1, 2, 5, 4], [0, 0, 0, 4], [0.5, 1, 0, 0, 3, 0]),
}


@pytest.mark.parametrize("reduce, include_self", list(TORCH_SCATTER_REDUCE))
def test_scatter_reduce_values_and_gradients(reduce, include_self):
    x = torch.tensor(SELF, requires_grad=True)
    src = torch.tensor(SRC, requires_grad=True)
    out = x.scatter_reduce(0, torch.tensor(INDEX), src, reduce, include_self=include_self)
    (out * torch.tensor([1., 2., 3., 4.])).sum().backward()
    values, g_self, g_src = TORCH_SCATTER_REDUCE[reduce, include_self]
    np.testing.assert_allclose(out.detach().numpy(), values, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), g_self, rtol=1e-6)
    np.testing.assert_allclose(src.grad.numpy(), g_src, rtol=1e-6)
    index = torch.tensor([[0, 1, 0], [2, 2, 1]])
    assert gradcheck(lambda s, v: s.scatter_reduce(1, index, v, reduce, include_self=include_self),
                     (f64(2, 3) + 0.5, f64(2, 4) + 0.5))


def test_scatter_reduce_details():
    idx = torch.tensor(INDEX)
    assert torch.tensor([1, 2, 3, 4]).scatter_reduce(0, idx, torch.tensor([1, 2, 3, 4, 5, 6]), "mean").tolist() == \
        [1, 3, 4, 4]                                            # integer means round down
    assert torch.tensor([1, 2, 3]).scatter_reduce(0, torch.tensor([0, 0]), torch.tensor([-3, -2]), "mean").tolist() \
        == [-2, 2, 3]
    assert torch.tensor(SELF).scatter_reduce(0, idx, torch.tensor(SRC), "max").tolist() == [3, 6, 5, 4]
    x = torch.tensor([1., 2., 3.])
    assert x.scatter_reduce_(0, torch.tensor([0, 1, 0]), torch.tensor([5., 6., 7.]), reduce="amax") is x
    assert x.tolist() == [7, 6, 3]
    zero_self, zero_src = torch.tensor([0., 2., 3., 0.], requires_grad=True), torch.tensor([1., 0., 3., 0., 5., 6.],
                                                                                          requires_grad=True)
    zero_self.scatter_reduce(0, idx, zero_src, "prod").mul(torch.tensor([1., 2., 3., 4.])).sum().backward()
    assert zero_self.grad.tolist() == [3, 0, 15, 4] and zero_src.grad.tolist() == [0, 0, 0, 0, 9, 0]
    with pytest.raises(RuntimeError, match="^reduce argument must be either sum, prod, mean, amax or amin, got add$"):
        torch.ones(3).scatter_reduce(0, torch.tensor([0]), torch.ones(1), "add")
    with pytest.raises(RuntimeError, match=r"^scatter\(\): Expected self.dtype to be equal to src.dtype$"):
        torch.ones(3).scatter_reduce(0, torch.tensor([0]), torch.ones(1, dtype=torch.float64), "sum")
    with pytest.raises(RuntimeError, match="^index 9 is out of bounds for dimension 0 with size 4$"):
        torch.ones(4).scatter_reduce(0, torch.tensor([9]), torch.ones(2), "sum")
    with pytest.raises(RuntimeError, match=r"^Expected index \[1, 4\] to be no larger than self \[2, 3\] apart from "
                                           r"dimension 1 and to be no larger size than src \[3, 3\]$"):
        torch.ones(2, 3).scatter_reduce(1, torch.tensor([[0, 1, 2, 0]]), torch.ones(3, 3), "sum")


def test_index_reduce():
    _formula_helpers._warned.discard("index_reduce() is in beta and the API may change at any time.")
    x, src, idx = torch.ones(3, 2), arange(4, 2), torch.tensor([0, 2, 0, 1])
    with pytest.warns(UserWarning, match="index_reduce"):
        out = x.index_reduce(0, idx, src, "prod")
    assert out.tolist() == [[0, 5], [6, 7], [2, 3]]
    np.testing.assert_allclose(x.index_reduce(0, idx, src, "mean").numpy(), [[5 / 3, 7 / 3], [3.5, 4], [1.5, 2]],
                               rtol=1e-6)
    assert x.index_reduce(0, idx, src, "mean", include_self=False).tolist() == [[2, 3], [6, 7], [2, 3]]
    assert x.index_reduce(0, idx, src, "amin", include_self=False).tolist() == [[0, 1], [6, 7], [2, 3]]
    assert torch.index_reduce(x, 0, idx, src, "amax").tolist() == [[4, 5], [6, 7], [2, 3]]
    y = torch.ones(3, 2)
    assert y.index_reduce_(0, idx, src, "amin") is y and y.tolist() == [[0, 1], [1, 1], [1, 1]]
    errors = [((0, idx, src, "sum"), RuntimeError,
               "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got sum."),
              ((0, idx.view(2, 2), src, "prod"), IndexError,
               "index_reduce_(): Index is supposed to be a vector, but got dim: 2 with type: Long and size: [2, 2]"),
              ((0, idx, src[:3], "prod"), RuntimeError,
               "index_reduce_(): Number of indices (4) should be equal to source.size(dim): (3), for dim: 0"),
              ((0, idx, src.double(), "prod"), RuntimeError,
               "index_reduce_(): self (Float) and source (Double) must have the same scalar type"),
              ((0, torch.tensor([0, 5, 0, 1]), src, "prod"), IndexError, "index out of range in self")]
    for args, cls, msg in errors:
        with pytest.raises(cls) as err:
            x.index_reduce(*args)
        assert str(err.value) == msg
    assert gradcheck(lambda s, v: s.index_reduce(1, torch.tensor([1, 1, 0]), v, "mean"), (f64(2, 3), f64(2, 3)))


def test_complex_beta_alpha_into_a_real_product_as_torch():
    # torch 2.13 converts beta and alpha to the product's dtype, checked: an imaginary part is refused, a complex
    # number without one is its real part (the result stays real)
    m, v, b = torch.ones(2, 2), torch.ones(2), torch.ones(1, 2, 2)
    calls = {"addmm": lambda **k: torch.addmm(m, m, m, **k), "baddbmm": lambda **k: torch.baddbmm(b, b, b, **k),
             "addbmm": lambda **k: torch.addbmm(m, b, b, **k), "addmv": lambda **k: torch.addmv(v, m, v, **k),
             "addr": lambda **k: torch.addr(m, v, v, **k)}
    for name, call in calls.items():
        for kw in ({"beta": 1j}, {"alpha": 1j}, {"alpha": torch.tensor(1j)}):
            with pytest.raises(RuntimeError, match="^value cannot be converted to type float without overflow$"):
                call(**kw)
        r = call(beta=2 + 0j)
        assert r.dtype == torch.float32 and r.flatten().tolist()[0] == (3.0 if name == "addr" else 4.0), name
    i = torch.ones(2, 2, dtype=torch.int64)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int64_t without overflow$"):
        torch.addmm(i, i, i, beta=1j)
    r = torch.addmm(i, i, i, alpha=2 + 0j)
    assert r.dtype == torch.int64 and r.tolist() == [[5, 5], [5, 5]]
