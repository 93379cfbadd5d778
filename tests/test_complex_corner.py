"""Complex corner cases found by a differential sweep against torch 2.13: the gradient of acosh left of the imaginary
axis, complex division by zero in forward kernels and fused backward kernels (inf/nan, never ZeroDivisionError), pow
of complex numbers (PyTorch's exact small exponents, cpow's zero base, a Python-number base's gradient in double),
log2's parts, log1p's and sgn's at infinite parts, and exp/exp2/sin/cos/tan/sinh/cosh/tanh/sigmoid/sinc where one part is zero or infinite.
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


def sigmoid_silu_complex_overflow(torch):
    x = torch.tensor([-1e30 + 0j, 1e30 + 0j, 0.5 + 0.5j], dtype=torch.complex64)
    return torch.sigmoid(x).tolist() + torch.nn.functional.silu(x).tolist()


def addcdiv_complex_zero_divisor(torch):
    c = torch.complex128
    one = torch.tensor([1 + 0j, 1 + 0j], dtype=c)
    return torch.addcdiv(one, torch.tensor([1 + 2j, 0j], dtype=c), torch.tensor([0j, 2j], dtype=c)).tolist()


def pow_complex_python_exponents_exact(torch):
    c = torch.complex128
    out = []
    for base in (1j, 1 + 2j, -1 + 0j, complex("inf"), 0j):
        for e in (0, 0j, 1, 2, 3, -1, -2, 0.5, -0.5, 2.5):
            out += (torch.tensor([base], dtype=c) ** e).tolist()
    return out


def pow_complex_tensor_exponents(torch):
    c = torch.complex128
    base = torch.tensor([0j, 0j, 0j, 2 + 0j, 1 + 2j, -2 + 0j], dtype=c)
    e = torch.tensor([2 + 0.5j, -1 + 1j, 1j, 2.5 + 0j, 0.3 - 0.7j, 0.5 + 0.5j], dtype=c)
    return (base ** e).tolist() + (torch.tensor([0.0]) ** torch.tensor([2 + 0.5j])).tolist()


def rpow_complex_and_negative_scalar_base_backward(torch):
    out = []
    for base in (1 + 2j, 2j, -2.0, 3, 2.5):
        x = torch.tensor([0.5 + 0.3j], dtype=torch.complex128, requires_grad=True)
        y = base ** x
        y.abs().sum().backward()
        out += y.tolist() + x.grad.tolist()
    return out


def rpow_zero_base_backward(torch):
    out = []
    for base in (0, 0.0, 0j):
        x = torch.tensor([0.5, 0.0, -1.0], dtype=torch.float64, requires_grad=True)
        (base ** x).real.sum().backward()
        out += x.grad.tolist()
    return out


def pow_negative_real_tensor_base_complex_exponent_backward(torch):
    out = []
    for dt in (torch.float32, torch.float64):
        x = torch.tensor([0.5 + 0.3j], dtype=torch.complex128, requires_grad=True)
        y = torch.tensor([-2.0], dtype=dt) ** x
        y.abs().sum().backward()
        out += y.tolist() + x.grad.tolist()
    return out


def int_scalar_base_backward_in_double(torch):
    x = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    (3 ** x).sum().backward()
    z = torch.tensor([0.5 + 0.2j], dtype=torch.complex128, requires_grad=True)
    (3 ** z).abs().sum().backward()
    return x.grad.tolist() + [z.grad.tolist()[0].real]


def log2_complex_zero_and_imaginary_infinity(torch):
    inf = float("inf")
    return torch.log2(torch.tensor([0j, complex(0, inf), complex(0, -inf), 8 + 0j], dtype=torch.complex64)).tolist()


def exp_exp2_zero_imaginary_overflow(torch):
    x = torch.tensor([1e30 + 0j, 1e30 - 0j, -1e30 + 0j, 2 + 0j], dtype=torch.complex64)
    return torch.exp(x).tolist() + torch.exp2(x).tolist()


def trig_hyperbolic_zero_part_overflow(torch):
    inf, nan = float("inf"), float("nan")
    z = [1e30j, -1e30j, 1e30 + 0j, -1e30 + 0j, complex(0, nan), complex(nan, 0), complex(0, inf), complex(inf, 0),
         complex(inf, inf), complex(-inf, inf), complex(nan, inf), 0.5 + 0.25j]
    out = []
    for op in (torch.sin, torch.cos, torch.tan, torch.sinh, torch.cosh, torch.tanh):
        out += op(torch.tensor(z, dtype=torch.complex64)).tolist()
    return out


def sinc_imaginary_overflow(torch):
    inf = float("inf")
    return torch.sinc(torch.tensor([1e30j, -1e30j, complex(0, inf), 0.5 + 0j], dtype=torch.complex64)).tolist()


def inverse_functions_nan_parts(torch):
    inf, nan = float("inf"), float("nan")
    z = [complex(0, nan), complex(-0.0, nan), complex(nan, 0), complex(nan, -0.0), complex(1, nan), complex(inf, nan),
         complex(nan, inf), complex(nan, -inf), complex(nan, nan), 0.5 + 0.25j]
    out = []
    for dt in (torch.complex64, torch.complex128):
        for op in (torch.asin, torch.acos, torch.atan, torch.asinh, torch.acosh, torch.atanh):
            out += op(torch.tensor(z, dtype=dt)).tolist()
    return out


def sinc_grad_where_square_underflows(torch):
    out = []
    for dt in (torch.complex64, torch.complex128):
        z = torch.tensor([1e-30j, 1e-30 + 0j, 0j, 0.3 + 0.2j], dtype=dt, requires_grad=True)
        torch.sinc(z).real.sum().backward()
        out += z.grad.tolist()
    return out


def log1p_complex_infinite_parts(torch):
    # c10's Kahan-trick log1p: an infinite part gives NaN + NaN i (the ratio z / (u - 1) is inf / inf)
    inf, nan = float("inf"), float("nan")
    z = [complex(1e-30, inf), complex(1e-30, -inf), complex(inf, nan), complex(-inf, nan), complex(inf, 0),
         complex(-inf, 0), complex(0, nan), complex(nan, 0), complex(1e-8, 0), complex(3e38, 3e38), -1 + 0j,
         0.5 + 0.25j, -1.0794703353172185e-09 + 7.249385654216125e-09j]
    out = []
    for dt in (torch.complex64, torch.complex128):
        out += torch.log1p(torch.tensor(z, dtype=dt)).tolist()
    return out


def sgn_complex_infinite_and_nan_parts(torch):
    # each part over |z| (infj: 0 + NaN i), 0 at 0
    inf, nan = float("inf"), float("nan")
    z = [complex(0, inf), complex(0, -inf), complex(-0.0, inf), complex(inf, 0), complex(inf, inf), complex(1, inf),
         complex(nan, 0), complex(0, nan), complex(inf, nan), 0j, complex(-0.0, 0), 3 + 4j, 1e-30 + 0j, 1e30 - 1e30j]
    out = []
    for dt in (torch.complex64, torch.complex128):
        # 16 elements: torch's vectorised kernel for every element (its scalar tail divides as complex numbers)
        out += torch.sgn(torch.tensor(z + [1j, 1j], dtype=dt)).tolist()
    return out


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
    sigmoid_silu_complex_overflow: (1e-06, [
        (0.0, 0.0), (1.0, 0.0), (0.6299354434013367, 0.11954506486654282), (-0.0, 0.0), (1.0000000150474662e+30,
        0.0), (0.2551952004432678, 0.37474027276039124)]),
    addcdiv_complex_zero_divisor: (1e-12, [
        (inf, inf), (1.0, 0.0)]),
    pow_complex_python_exponents_exact: (1e-15, [
        (1.0, 0.0), (1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (-0.0, -1.0), (0.0, -1.0), (-1.0, -0.0),
        (0.7071067811865476, 0.7071067811865476), (0.7071067811865475, -0.7071067811865475),
        (-0.7071067811865477, -0.7071067811865475), (1.0, 0.0), (1.0, 0.0), (1.0, 2.0), (-3.0, 4.0), (-11.0,
        -2.0), (0.2, -0.4), (-0.12, -0.16), (1.272019649514069, 0.7861513777574233), (0.5688644810057831,
        -0.3515775842541429), (-6.960664459571899, 2.7296244647840076), (1.0, 0.0), (1.0, 0.0), (-1.0, 0.0),
        (1.0, -0.0), (-1.0, 0.0), (-1.0, -0.0), (1.0, 0.0), (0.0, 1.0), (0.0, -1.0), (3.061616997868383e-16,
        1.0), (1.0, 0.0), (1.0, 0.0), (inf, 0.0), (inf, nan), (nan, nan), (0.0, 0.0), (nan, nan), (inf, 0.0),
        (0.0, 0.0), (inf, nan), (1.0, 0.0), (1.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (inf, nan), (inf,
        nan), (0.0, 0.0), (inf, nan), (0.0, -0.0)]),
    pow_complex_tensor_exponents: (1e-12, [
        (0.0, -0.0), (inf, nan), (nan, nan), (5.656854249492381, 0.0), (2.6897849488056855,
        -0.6330835734826811), (-0.09986035877622107, 0.2765063204930927), (0.0, -0.0)]),
    rpow_complex_and_negative_scalar_base_backward: (1e-12, [
        (0.7512301560114765, 0.765781600594168), (0.8632531251860367, -1.1876812187628838),
        (0.48190973728098424, 0.739652134360786), (0.611905005468626, -1.386686928685276),
        (-0.11376650393874996, 0.5391927174423373), (0.3819685031054, -1.7312188189083115), (1.6388269227357832,
        0.5605767720092968), (1.9028523017926922, 7.387204300913717e-17), (1.5217762640087047,
        0.4291817823483528), (1.4487828558124873, 3.76070198112374e-18)]),
    rpow_zero_base_backward: (1e-12, [
        0.0, 0.0, -inf, 0.0, 0.0, -inf, 0.0, 0.0, nan]),
    pow_negative_real_tensor_base_complex_exponent_backward: (1e-06, [
        (-0.11376650393874996, 0.5391927174423373), (0.3819685031054, -1.7312188189083115),
        (-0.11376650393874996, 0.5391927174423373), (0.3819685031054, -1.7312188189083115)]),
    int_scalar_base_backward_in_double: (1e-14, [
        1.902852301792692, 5.708556905378076, 1.902852301792692]),
    log2_complex_zero_and_imaginary_infinity: (1e-06, [
        (-inf, 0.0), (inf, 2.2661800384521484), (inf, -2.2661800384521484), (3.0, 0.0)]),
    exp_exp2_zero_imaginary_overflow: (1e-06, [
        (inf, 0.0), (inf, 0.0), (0.0, 0.0), (7.389056205749512, 0.0), (inf, 0.0), (inf, 0.0), (0.0, 0.0), (4.0,
        0.0)]),
    trig_hyperbolic_zero_part_overflow: (1e-06, [
        (0.0, inf), (-0.0, -inf), (-0.791163444519043, -0.0), (0.791163444519043, -0.0), (0.0, nan), (nan, 0.0),
        (0.0, inf), (nan, 0.0), (nan, inf), (nan, inf), (nan, inf), (0.4944857954978943, 0.2216881662607193),
        (inf, -0.0), (inf, -0.0), (-0.6116048097610474, 0.0), (-0.6116048097610474, -0.0), (nan, 0.0), (nan,
        0.0), (inf, -0.0), (nan, 0.0), (inf, nan), (inf, nan), (inf, nan), (0.9051501154899597,
        -0.12110880017280579), (0.0, 1.0), (-0.0, -1.0), (1.293586015701294, 0.0), (-1.293586015701294, 0.0),
        (0.0, nan), (nan, 0.0), (0.0, 1.0), (nan, 0.0), (0.0, 1.0), (-0.0, 1.0), (0.0, 1.0),
        (0.5045007467269897, 0.31242072582244873), (-0.0, -0.791163444519043), (0.0, 0.791163444519043), (inf,
        0.0), (-inf, 0.0), (0.0, nan), (nan, 0.0), (0.0, nan), (inf, 0.0), (inf, nan), (inf, nan), (nan, nan),
        (0.5048956871032715, 0.2789791226387024), (-0.6116048097610474, -0.0), (-0.6116048097610474, -0.0),
        (inf, 0.0), (inf, -0.0), (nan, 0.0), (nan, 0.0), (nan, 0.0), (inf, 0.0), (inf, nan), (inf, nan), (nan,
        nan), (1.0925707817077637, 0.1289210319519043), (0.0, 1.293586015701294), (-0.0, -1.293586015701294),
        (1.0, 0.0), (-1.0, 0.0), (0.0, nan), (nan, 0.0), (0.0, nan), (1.0, 0.0), (1.0, 0.0), (-1.0, 0.0), (nan,
        nan), (0.4854872524738312, 0.1980554610490799)]),
    sinc_imaginary_overflow: (1e-06, [
        (inf, nan), (inf, nan), (nan, nan), (0.6366197466850281, -0.0)]),
    inverse_functions_nan_parts: (1e-06, [
        (0.0, nan), (-0.0, nan), (nan, nan), (nan, nan), (nan, nan), (nan, inf), (nan, inf), (nan, -inf), (nan,
        nan), (0.5016088485717773, 0.2813960611820221), (1.5707963705062866, nan), (1.5707963705062866, nan),
        (nan, nan), (nan, nan), (nan, nan), (nan, -inf), (nan, -inf), (nan, inf), (nan, nan),
        (1.0691875219345093, -0.2813960611820221), (nan, nan), (nan, nan), (nan, 0.0), (nan, -0.0), (nan, nan),
        (1.5707963705062866, 0.0), (nan, 0.0), (nan, -0.0), (nan, nan), (0.48425450921058655,
        0.20058661699295044), (nan, nan), (nan, nan), (nan, 0.0), (nan, -0.0), (nan, nan), (inf, nan), (inf,
        nan), (inf, nan), (nan, nan), (0.49267566204071045, 0.22432845830917358), (nan, 1.5707963705062866),
        (nan, 1.5707963705062866), (nan, nan), (nan, nan), (nan, nan), (inf, nan), (inf, nan), (inf, nan), (nan,
        nan), (0.2813960611820221, 1.0691875219345093), (0.0, nan), (-0.0, nan), (nan, nan), (nan, nan), (nan,
        nan), (0.0, nan), (0.0, 1.5707963705062866), (0.0, -1.5707963705062866), (nan, nan),
        (0.5003700256347656, 0.3143981695175171), (0.0, nan), (-0.0, nan), (nan, nan), (nan, nan), (nan, nan),
        (nan, inf), (nan, inf), (nan, -inf), (nan, nan), (0.5016088532755008, 0.28139605624529274),
        (1.5707963267948966, nan), (1.5707963267948966, nan), (nan, nan), (nan, nan), (nan, nan), (nan, -inf),
        (nan, -inf), (nan, inf), (nan, nan), (1.0691874735193958, -0.28139605624529274), (nan, nan), (nan, nan),
        (nan, 0.0), (nan, -0.0), (nan, nan), (1.5707963267948966, 0.0), (nan, 0.0), (nan, -0.0), (nan, nan),
        (0.4842544903299662, 0.20058661813123432), (nan, nan), (nan, nan), (nan, 0.0), (nan, -0.0), (nan, nan),
        (inf, nan), (inf, nan), (inf, nan), (nan, nan), (0.4926756834207706, 0.2243284526346675), (nan,
        1.5707963267948966), (nan, 1.5707963267948966), (nan, nan), (nan, nan), (nan, nan), (inf, nan), (inf,
        nan), (inf, nan), (nan, nan), (0.28139605624529274, 1.0691874735193958), (0.0, nan), (-0.0, nan), (nan,
        nan), (nan, nan), (nan, nan), (0.0, nan), (0.0, 1.5707963267948966), (0.0, -1.5707963267948966), (nan,
        nan), (0.5003700000525311, 0.3143981432077165)]),
    sinc_grad_where_square_underflows: (1e-06, [
        (0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (-1.009445071220398, 0.5101443529129028), (-0.0, 0.0), (0.0, 0.0),
        (0.0, 0.0), (-1.0094448023570057, 0.5101443966821784)]),
    log1p_complex_infinite_parts: (1e-06, [
        (nan, nan), (nan, nan), (nan, nan), (nan, nan), (inf, 0.0), (inf, 3.1415927410125732), (nan, nan), (nan, nan), (9.99999993922529e-09, 0.0), (88.94342041015625, 0.7853981852531433), (-inf, 0.0), (0.41916459798812866, 0.16514867544174194), (-1.0794702909322496e-09, 7.2493850922228376e-09), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (inf, 0.0), (inf, 3.141592653589793), (nan, nan), (nan, nan), (9.999999950000003e-09, 0.0), (88.94341941272182, 0.7853981633974483), (-inf, 0.0), (0.4191645952022216, 0.16514867741462683), (-1.0794703096230506e-09, 7.249385662041623e-09)]),
    sgn_complex_infinite_and_nan_parts: (1e-06, [
        (0.0, nan), (0.0, nan), (-0.0, nan), (nan, 0.0), (nan, nan), (0.0, nan), (nan, nan), (nan, nan), (nan, nan), (0.0, 0.0), (0.0, 0.0), (0.6000000238418579, 0.800000011920929), (1.0, 0.0), (0.7071068286895752, -0.7071068286895752), (0.0, 1.0), (0.0, 1.0), (0.0, nan), (0.0, nan), (-0.0, nan), (nan, 0.0), (nan, nan), (0.0, nan), (nan, nan), (nan, nan), (nan, nan), (0.0, 0.0), (0.0, 0.0), (0.6, 0.8), (1.0, 0.0), (0.7071067811865476, -0.7071067811865476), (0.0, 1.0), (0.0, 1.0)]),
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


def test_pow_bool_tensor_to_python_bool():
    # torch 2.13: a bool tensor to a Python bool stays bool (pow_Tensor_Scalar fills or copies); a bool exponent
    # tensor with a bool base, or a Python bool base, has no kernel
    b = torch.tensor([True, False, True])
    assert (b ** True).dtype is torch.bool and (b ** True).tolist() == [True, False, True]
    assert torch.pow(b, False).tolist() == [True, True, True]
    assert b.clone().pow_(False).tolist() == [True, True, True]
    assert (b ** 2).dtype is torch.int64 and (b ** 2).tolist() == [1, 0, 1]
    for f in (lambda: b ** b, lambda: b ** torch.tensor(True), lambda: True ** b, lambda: torch.pow(True, b)):
        with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
            f()
