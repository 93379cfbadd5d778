"""PyTorch's lazy conjugate bit (reftorch/_conj.py): conj() of a complex tensor is a view read conjugated. Expected
values, flags and messages are torch 2.13's, checked side by side."""
import numpy as np
import pytest

import reftorch as torch

TORCH_GRAD = [[1.8356010126946427 + 4.986393923832144j, 4.61677772071786 - 2.6303837968857167j],
              [1.3151918984428583 + 6.27437366993929j, 5.9727878476642875 - 2.3287979746107146j]]


def test_conj_is_a_view_with_the_bit():
    x = torch.tensor([1 + 2j, 3 - 4j])
    c = x.conj()
    assert c.is_conj() and torch.is_conj(c) and not x.is_conj()
    assert c.data_ptr() == x.data_ptr() and c._base is x
    assert repr(c) == "tensor([1.-2.j, 3.+4.j])"
    assert c.tolist() == [1 - 2j, 3 + 4j] and c[1].item() == 3 + 4j
    assert c[0].is_conj() and c.view(2, 1).is_conj() and not c.conj().is_conj()
    assert c.conj().data_ptr() == x.data_ptr()
    r = torch.tensor([1.0, 2.0])
    assert r.conj() is r and r.resolve_conj() is r and x.resolve_conj() is x and not r.conj().is_conj()


def test_resolve_clone_contiguous_conj_physical():
    x = torch.tensor([1 + 2j, 3 - 4j])
    c = x.conj()
    for t in (c.resolve_conj(), c.clone(), c.conj_physical()):
        assert not t.is_conj() and t.data_ptr() != x.data_ptr()
    assert c.resolve_conj().tolist() == [1 - 2j, 3 + 4j]
    assert c.conj_physical().tolist() == [1 + 2j, 3 - 4j]
    assert c.contiguous() is c and c.contiguous().is_conj()
    assert not (c * 1).is_conj() and (c * 1).tolist() == [1 - 2j, 3 + 4j]


def test_ops_read_conjugated_values():
    x = torch.tensor([1 + 2j, 3 - 4j])
    c = x.conj()
    assert c.sum().item() == 4 + 2j
    assert (c @ c).item() == -10 + 20j
    np.testing.assert_allclose(c.abs().numpy(), [5 ** 0.5, 5], rtol=1e-6)
    assert not torch.stack([c, x]).is_conj() and torch.stack([c, x]).tolist() == [[1 - 2j, 3 + 4j], [1 + 2j, 3 - 4j]]
    assert torch.real(c).tolist() == [1, 3] and not torch.real(c).is_conj()
    assert torch.imag(c).tolist() == [-2, 4]
    assert (torch.exp(c) - torch.exp(x).conj()).abs().max().item() < 1e-6


def test_numpy_and_view_as_real_refuse():
    c = torch.tensor([1 + 2j]).conj()
    with pytest.raises(RuntimeError, match=r"^Can't call numpy\(\) on Tensor that has conjugate bit set\. Use "
                                           r"tensor\.resolve_conj\(\)\.numpy\(\) instead\.$"):
        c.numpy()
    with pytest.raises(RuntimeError, match="view_as_real doesn't work on unresolved conjugated tensors."):
        torch.view_as_real(c)
    np.testing.assert_array_equal(c.resolve_conj().numpy(), [1 - 2j])


def test_inplace_writes_through_conjugated():
    x = torch.tensor([1 + 2j, 3 - 4j])
    c = x.conj()
    c.mul_(1j)
    assert x.tolist() == [2 - 1j, -4 - 3j] and c.tolist() == [2 + 1j, -4 + 3j]
    c.add_(1)
    assert x.tolist() == [3 - 1j, -3 - 3j]
    y = torch.zeros(2, dtype=torch.cfloat)
    y.copy_(c)
    assert y.tolist() == [3 + 1j, -3 + 3j] and not y.is_conj()
    z = torch.tensor([1 + 1j, 2j])
    z.conj().copy_(torch.tensor([5 + 1j, 1]))
    assert z.tolist() == [5 - 1j, 1]


def test_mH_and_adjoint_are_conjugate_views():
    m = torch.tensor([[1 + 1j, 2], [3j, 4]])
    for t in (m.mH, m.adjoint(), m.H):
        assert t.is_conj() and t._base is m and t.data_ptr() == m.data_ptr()
        assert t.tolist() == [[1 - 1j, -3j], [2, 4]]
    assert repr(m.mH) == "tensor([[1.-1.j, 0.-3.j],\n        [2.-0.j, 4.-0.j]])"
    r = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert not r.adjoint().is_conj() and r.adjoint().tolist() == [[1, 3], [2, 4]]
    with pytest.raises(RuntimeError, match="tensor.adjoint\\(\\) is only supported on matrices or batches of matrices. "
                                           "Got 1-D tensor."):
        torch.tensor([1j]).adjoint()


def test_gradients_through_conjugate_views():
    a = torch.tensor([1 + 1j], requires_grad=True)
    b = a.conj()
    assert b.grad_fn.name() == "ConjBackward0"
    assert b.resolve_conj().grad_fn.name() == "CloneBackward0"
    (b * (2 + 1j)).sum().abs().backward()
    np.testing.assert_allclose(a.grad.numpy(), [1.5811388 + 1.5811388j], rtol=1e-6)
    m = torch.tensor([[1 + 2j, 0.5], [1j, 2 - 1j]], dtype=torch.complex128, requires_grad=True)
    (g,) = torch.autograd.grad((m.mH @ m).abs().sum(), m)
    # torch 2.13, the same expression
    np.testing.assert_allclose(g.numpy(), TORCH_GRAD, rtol=1e-9)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an in-place "
                                           "operation."):        # PyTorch's refusal (reftorch/_conj.py write_through)
        m.conj().mul_(2)


def test_indexing_reads_and_writes_through():
    x = torch.tensor([1 + 2j, 3 - 4j, 5j])
    c = x.conj()
    r = c[[0, 2]]
    assert r.tolist() == [1 - 2j, -5j] and not r.is_conj()
    c[1] = 7 + 1j
    c[c.real > 4] = 2j
    assert x.tolist() == [1 + 2j, -2j, 5j] and c.tolist() == [1 - 2j, 2j, -5j] and c.is_conj()
    assert c[1].is_conj() and c[1].item() == 2j
