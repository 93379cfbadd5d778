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


def rsqrt_complex_zero(torch):
    return torch.rsqrt(torch.tensor([0j, 4j], dtype=torch.complex128)).tolist()


def div_complex_by_real_zero_backward(torch):
    x = torch.tensor([1j, 1.0], requires_grad=True)
    (x / torch.tensor([1.0, 0.0])).abs().sum().backward()
    return x.grad.tolist()


def div_complex_by_bool_zero_backward(torch):
    x = torch.tensor([1 + 1j, 2j], dtype=torch.complex128, requires_grad=True)
    (x / torch.tensor([True, False])).real.sum().backward()
    return x.grad.tolist()


def sqrt_log_rsqrt_backward_at_zero(torch):
    out = []
    for op in (torch.sqrt, torch.log, torch.rsqrt, torch.reciprocal):
        x = torch.tensor([0j, 1 + 1j], dtype=torch.complex128, requires_grad=True)
        op(x).abs().sum().backward()
        out += x.grad.tolist()
    return out


def addcdiv_complex_zero_divisor(torch):
    c = torch.complex128
    one = torch.tensor([1 + 0j, 1 + 0j], dtype=c)
    return torch.addcdiv(one, torch.tensor([1 + 2j, 0j], dtype=c), torch.tensor([0j, 2j], dtype=c)).tolist()


EXPECTED = {
    acosh_grad_complex_left_half_plane: (1e-12, [
        (-0.07466008671226487, 1.1397240881748487), (0.05318129507105232, -0.44160474776811504),
        (-0.35355339059327373, 0.0), (0.5773502691896258, 0.0), (-0.5773502691896258, 0.0)]),
    acosh_grad_real_below_minus_one: (1e-12, [
        0.5773502691896258, nan, 0.5773502691896258]),
    rsqrt_complex_zero: (1e-12, [
        (inf, nan), (0.35355339059327373, -0.35355339059327373)]),
    div_complex_by_real_zero_backward: (1e-06, [
        (0.0, 1.0), (nan, nan)]),
    div_complex_by_bool_zero_backward: (1e-12, [
        (1.0, 0.0), (inf, nan)]),
    sqrt_log_rsqrt_backward_at_zero: (1e-12, [
        (nan, nan), (0.2973017787506803, 0.29730177875068026), (nan, nan), (-0.2555865204422219,
        0.6592992723856426), (nan, nan), (-0.21022410381342854, -0.21022410381342854), (nan, nan),
        (-0.35355339059327373, -0.35355339059327373)]),
    addcdiv_complex_zero_divisor: (1e-12, [
        (inf, inf), (1.0, 0.0)]),
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
