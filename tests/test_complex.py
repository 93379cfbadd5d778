"""complex64/complex128: promotion, creation, printing, reinterpreting views, conj/abs/angle/sgn, checkpoints,
and conjugate-Wirtinger gradients (checked by finite differences through view_as_complex/view_as_real).
Expected strings and dtypes are torch 2.13's, checked side by side."""
import io

import numpy as np
import pytest

import reftorch as torch
from reftorch.autograd import gradcheck


def test_dtypes_and_promotion():
    assert torch.cfloat is torch.complex64 and torch.cdouble is torch.complex128
    assert torch.complex64.is_complex and not torch.float32.is_complex
    assert torch.complex64.to_real() is torch.float32 and torch.float64.to_complex() is torch.complex128
    assert torch.promote_types(torch.float64, torch.complex64) is torch.complex128
    assert torch.promote_types(torch.int64, torch.complex64) is torch.complex64
    assert torch.result_type(torch.ones(2, dtype=torch.float64), 1j) is torch.complex128
    assert (torch.ones(2) + 1j).dtype is torch.complex64
    assert (torch.ones(2) * torch.tensor(1j, dtype=torch.complex128)).dtype is torch.complex64   # 0-d keeps width
    assert torch.tensor([1 + 2j, 3]).dtype is torch.complex64
    torch.set_default_dtype(torch.float64)
    try:
        assert torch.tensor([1j]).dtype is torch.complex128
    finally:
        torch.set_default_dtype(torch.float32)


def test_creation_numpy_item():
    z = torch.tensor([1.5 + 2j, -3.25j])
    a = z.numpy()
    a[0] = 7 - 1j
    assert z[0].item() == 7 - 1j and isinstance(z[0].item(), complex)
    assert torch.zeros(2, dtype=torch.cfloat).is_complex()
    assert torch.full((2,), 1 + 1j).dtype is torch.complex64
    r = torch.randn(1000, dtype=torch.cdouble)
    assert r.dtype is torch.complex128 and abs(float(r.real.std()) - 0.5 ** 0.5) < 0.1
    np.testing.assert_array_equal(torch.complex(torch.tensor([1., 2.]), torch.tensor([0.5, -1.])).numpy(),
                                  np.array([1 + 0.5j, 2 - 1j], np.complex64))
    np.testing.assert_allclose(torch.polar(torch.tensor([2.0]), torch.tensor([np.pi / 2])).numpy(), [2j], atol=1e-6)


def test_printing():
    assert repr(torch.tensor([1 + 2j, 3])) == "tensor([1.+2.j, 3.+0.j])"
    assert repr(torch.tensor([[1 + 1j, 2.5 - 1j], [0, 1e-5j]])) == \
        "tensor([[1.0000+1.0000e+00j, 2.5000-1.0000e+00j],\n        [0.0000+0.0000e+00j, 0.0000+1.0000e-05j]])"
    assert repr(torch.ones(2, dtype=torch.cdouble)) == "tensor([1.+0.j, 1.+0.j], dtype=torch.complex128)"
    assert repr(torch.tensor(2 - 3.5j)) == "tensor(2.-3.5000j)"


def test_real_imag_views_share_storage_and_version():
    z = torch.tensor([1 + 2j, 3 - 4j])
    re, im = z.real, z.imag
    assert re.dtype is torch.float32 and re.stride() == (2,) and im.storage_offset() == 1
    v = z._version
    im.mul_(10)
    assert z[1].item() == 3 - 40j and z._version > v
    z.real = torch.tensor([0.0, 5.0])
    np.testing.assert_array_equal(z.numpy(), [20j, 5 - 40j])
    vr = torch.view_as_real(z)
    assert vr.shape == (2, 2) and vr.stride() == (2, 1)
    back = torch.view_as_complex(vr)
    back[0] = 1j
    assert z[0].item() == 1j
    x = torch.ones(3)
    assert x.real is not None and x.real.dtype is torch.float32


@pytest.mark.parametrize("call, msg", [
    (lambda: torch.ones(2).imag, "imag is not implemented for tensors with non-complex dtypes."),
    (lambda: torch.view_as_real(torch.ones(2)), "view_as_real is only supported for complex tensors"),
    (lambda: torch.view_as_complex(torch.ones(3)), "Tensor must have a last dimension of size 2"),
    (lambda: torch.view_as_complex(torch.ones(2, 2).t()), "Tensor must have a last dimension with stride 1"),
    (lambda: torch.view_as_complex(torch.ones(2, dtype=torch.int64)), "only supported for half, float and double"),
])
def test_view_errors(call, msg):
    with pytest.raises(RuntimeError, match=msg):
        call()


def test_conj_abs_angle_sgn():
    z = torch.tensor([3 + 4j, -1 + 0j, 0j])
    np.testing.assert_array_equal(z.conj().resolve_conj().numpy(), np.conj(z.numpy()))
    assert z.conj().is_conj() and z.resolve_conj() is z          # a lazy view: tests/test_conj_bit.py
    x = torch.tensor([1.0, -2.0])
    assert x.conj() is x and x.conj_physical() is x
    assert z.abs().dtype is torch.float32
    np.testing.assert_allclose(z.abs().numpy(), [5, 1, 0])
    np.testing.assert_allclose(z.angle().numpy(), [np.arctan2(4, 3), np.pi, 0], rtol=1e-6)
    np.testing.assert_allclose(z.sgn().numpy(), [0.6 + 0.8j, -1, 0], rtol=1e-6)
    np.testing.assert_array_equal(torch.tensor([-0.0, -1.0, 2.0]).angle().numpy(), [0, np.float32(np.pi), 0])


def test_arithmetic_matmul_sum():
    a = np.array([[1 + 2j, -1j], [0.5, 2 - 1j]])
    t = torch.tensor(a)
    np.testing.assert_allclose((t * t.conj() / (t + 2) - 1j).numpy(), a * np.conj(a) / (a + 2) - 1j)
    np.testing.assert_allclose((t @ t).numpy(), a @ a)
    np.testing.assert_allclose(t.sum(0).numpy(), a.sum(0))


def test_checkpoint_round_trip():
    z = torch.tensor([[1 + 2j, -3.5j]], dtype=torch.complex128)
    buf = io.BytesIO()
    torch.save({"z": z}, buf)
    buf.seek(0)
    got = torch.load(buf)["z"]
    assert got.dtype is torch.complex128
    np.testing.assert_array_equal(got.numpy(), z.numpy())


_GRADS = {
    "mul_div": lambda p: torch.view_as_real(_c(p) * _c(p).conj() / (_c(p) + 3)),
    "abs_angle": lambda p: _c(p).abs() + _c(p).angle(),
    "sgn": lambda p: torch.view_as_real(_c(p).sgn()),
    "matmul_sum": lambda p: torch.view_as_real((_c(p) @ _c(p).mT).sum(0)),
    "real_imag": lambda p: _c(p).real * _c(p).imag,
    "polar": lambda p: torch.view_as_real(torch.polar(p[..., 0].abs() + 1, p[..., 1])),
}


def _c(p):
    return torch.view_as_complex(p)


@pytest.mark.parametrize("name", sorted(_GRADS))
def test_wirtinger_gradients(name):
    p = torch.tensor(np.random.default_rng(3).standard_normal((3, 3, 2)), requires_grad=True)
    assert gradcheck(_GRADS[name], (p,))


def test_linalg_eig():
    A = np.random.default_rng(0).standard_normal((2, 4, 4))
    L, V = torch.linalg.eig(torch.tensor(A, dtype=torch.float32))
    assert L.dtype is torch.complex64 and V.dtype is torch.complex64
    np.testing.assert_allclose(A.astype(np.complex64) @ V.numpy(), V.numpy() * L.numpy()[:, None, :], atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(V.numpy(), axis=-2), 1, rtol=1e-5)
    assert torch.linalg.eigvals(torch.tensor(A)).dtype is torch.complex128
    with pytest.raises(RuntimeError, match="A must be batches of square matrices"):
        torch.linalg.eig(torch.ones(2, 3))


def test_linalg_eig_gradients():
    a = torch.tensor(np.random.default_rng(1).standard_normal((3, 3)), requires_grad=True)
    assert gradcheck(lambda a: torch.view_as_real(torch.linalg.eigvals(a)), (a,))
    assert gradcheck(lambda a: torch.linalg.eig(a).eigenvectors.abs(), (a,))     # |V| is gauge-invariant
    p = torch.tensor(np.random.default_rng(2).standard_normal((3, 3, 2)), requires_grad=True)
    assert gradcheck(lambda p: torch.view_as_real(torch.linalg.eigvals(_c(p))), (p,))
