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
