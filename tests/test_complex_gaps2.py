"""Issue 25, continued: complex logcumsumexp (its scan accumulates in complex128, its gradient conjugated as
torch's FunctionsManual logcumsumexp_backward), complex linear algebra and the small leftovers. Expected values
are derived by hand or with NumPy."""
import numpy as np
import pytest

import reftorch as torch

nan, inf = float("nan"), float("inf")
RNG = np.random.default_rng(25)


def crandn(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def same_angle(a, b, tol):
    """Complex logs agree up to a multiple of 2 pi in the imaginary part."""
    d = np.asarray(a) - np.asarray(b)
    return np.allclose(d.real, 0, atol=tol) and np.allclose(np.angle(np.exp(1j * d.imag)), 0, atol=tol)


@pytest.mark.parametrize("dt, tol", [(torch.complex64, 1e-4), (torch.complex128, 1e-10)])
@pytest.mark.parametrize("dim", [0, 1])
def test_logcumsumexp_complex_values_and_gradient(dt, tol, dim):
    a = crandn(3, 4) * 2
    g = crandn(3, 4)
    x = torch.tensor(a, dtype=dt, requires_grad=True)
    y = torch.logcumsumexp(x, dim)
    assert y.dtype == dt
    ref = np.log(np.cumsum(np.exp(a), axis=dim))
    assert same_angle(y.detach().numpy(), ref, tol)
    gx, = torch.autograd.grad(y, x, torch.tensor(g, dtype=dt))
    # holomorphic: grad_i = sum_{j >= i} g_j conj(exp(x_i - y_j)) along dim
    am, gm, rm = (np.moveaxis(t, dim, -1) for t in (a, g, ref))
    want = np.zeros_like(am)
    for i in range(am.shape[-1]):
        want[..., i] = (gm[..., i:] * np.conj(np.exp(am[..., i:i + 1] - rm[..., i:]))).sum(-1)
    assert gx.dtype == dt
    assert gx.is_conj()     # as torch: the formula ends in conj()
    np.testing.assert_allclose(gx.resolve_conj().numpy(), np.moveaxis(want, -1, dim), rtol=tol * 10, atol=tol * 10)


def test_logcumsumexp_complex_stable_and_infinite():
    # exp(800) overflows float64: the scan stays in log space
    y = torch.logcumsumexp(torch.tensor([800 + 1j, 800 + 1j, complex(-inf, 0)], dtype=torch.complex64), 0)
    np.testing.assert_allclose(y.numpy(), [800 + 1j, 800 + np.log(2) + 1j, 800 + np.log(2) + 1j], rtol=1e-6)
    z = torch.logcumsumexp(torch.tensor([complex(-inf, 0), 1 + 1j, complex(inf, 1)]), 0).tolist()
    assert z[0] == complex(-inf, 0) and abs(z[1] - (1 + 1j)) < 1e-6 and z[2].real == inf
    assert torch.logcumsumexp(torch.tensor(1 + 2j), 0).item() == 1 + 2j
    x = torch.tensor(crandn(2, 3), requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch.logcumsumexp(t, 1), (x,))


def test_reflected_division_is_reciprocal_times_number():
    # torch's Tensor.__rtruediv__: reciprocal(x) * n, so 1 / 0j is (inf + nanj) * 1 = nan + nanj while
    # reciprocal(0j) and div(1, 0j) stay inf + nanj
    z = torch.tensor([0j, 2j], dtype=torch.complex64)
    assert np.isnan((1 / z)[0].item().real) and np.isnan((1 / z)[0].item().imag)
    assert (1 / z)[1].item() == -0.5j
    r = torch.reciprocal(torch.tensor(0j)).item()
    assert r.real == inf and np.isnan(r.imag)
    assert torch.div(1, torch.tensor(0j)).item().real == inf
    # two roundings: 3 / x equals reciprocal(x) * 3, not NumPy's 3 / x, wherever those differ
    a = np.arange(1, 2000, dtype=np.float64)
    got = (3 / torch.tensor(a)).numpy()
    assert np.array_equal(got, (1 / a) * 3) and not np.array_equal(got, 3 / a)
    x = torch.tensor([2.0, 4.0], requires_grad=True)
    y = 3 / x
    assert y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-0.75, -0.1875])
    assert (3 / torch.tensor([2])).dtype == torch.float32 and (3 / torch.tensor([True])).tolist() == [3.0]


@pytest.mark.parametrize("dt", [torch.float64, torch.complex128])
def test_vector_norm_ord0_has_no_gradient(dt):
    # torch's linalg_vector_norm_backward returns an undefined gradient for ord=0 (a count): grad stays None
    x = torch.tensor([1, 0, 2], dtype=dt, requires_grad=True)
    y = torch.linalg.vector_norm(x, ord=0)
    assert y.item() == 2 and y.dtype == torch.float64
    y.backward()
    assert x.grad is None
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        torch.autograd.grad(torch.linalg.vector_norm(x, ord=0, dim=0), x)
    g, = torch.autograd.grad(torch.linalg.vector_norm(x, ord=0) + x.sum().real, x)
    assert g.tolist() == [1, 1, 1]
