"""Complex corner cases found by a differential sweep against torch 2.13: the gradient of acosh left of the imaginary
axis, complex division by zero in forward kernels and fused backward kernels (inf/nan, never ZeroDivisionError), pow
of complex numbers (PyTorch's exact small exponents, cpow's zero base, a Python-number base's gradient in double),
log2's parts, and exp/exp2/sin/cos/tan/sinh/cosh/tanh/sigmoid/sgn/sinc where one part is zero or infinite.
Expected values are torch 2.13's (CPU), computed by the same code with torch in place of reftorch; a complex value
is written (real, imag). Signs of zeros are not compared."""
import math

import pytest

import reftorch as torch

nan, inf = math.nan, math.inf


def acosh_grad_complex_left_half_plane(torch):
    x = torch.tensor([-0.5 + 0.1j, 0.3 - 2j, -3 + 0j, 2 + 0j, -2 - 0.0j], dtype=torch.complex128, requires_grad=True)
    torch.acosh(x).real.sum().backward()
    return x.grad.tolist()


def acosh_grad_real_below_minus_one(torch):
    x = torch.tensor([-2.0, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
    torch.acosh(x).sum().backward()
    return x.grad.tolist()


EXPECTED = {
    acosh_grad_complex_left_half_plane: (1e-12, [
        (-0.07466008671226487, 1.1397240881748487), (0.05318129507105232, -0.44160474776811504),
        (-0.35355339059327373, 0.0), (0.5773502691896258, 0.0), (-0.5773502691896258, 0.0)]),
    acosh_grad_real_below_minus_one: (1e-12, [
        0.5773502691896258, nan, 0.5773502691896258]),
}


def _same(got, want, rtol):
    if math.isnan(want) or math.isinf(want):
        return (math.isnan(got) and math.isnan(want)) or got == want
    return abs(got - want) <= rtol * max(1.0, abs(want))


@pytest.mark.parametrize("case", list(EXPECTED), ids=lambda c: c.__name__)
def test_matches_torch(case):
    rtol, want = EXPECTED[case]
    got = case(torch)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        gp = (complex(g).real, complex(g).imag) if isinstance(w, tuple) else (float(g),)
        wp = w if isinstance(w, tuple) else (w,)
        assert all(_same(a, b, rtol) for a, b in zip(gp, wp)), f"element {i}: got {g!r}, torch gives {w!r}"
