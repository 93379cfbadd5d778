"""Complex corner cases found by a differential sweep against torch 2.13: the gradient of acosh left of the imaginary
axis, complex division by zero in forward kernels and fused backward kernels (inf/nan, never ZeroDivisionError), pow
of complex numbers (PyTorch's exact small exponents for a Python-number exponent, glibc's cpow for two tensors, 1 ** x
for a Python-number base, cpow's zero base, a Python-number base's gradient in double), log2's parts, log1p's and
sgn's at infinite parts, and exp/exp2/sin/cos/tan/sinh/cosh/tanh/sigmoid/sinc where one part is zero or infinite.
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


def pow_complex_tensor_tensor_special_values(torch):
    # two tensors: glibc's cpow, exp(y log x) with C's complex product (0 ** 0, inf ** 0, 1 ** inf: NaN + NaN i)
    inf, nan = float("inf"), float("nan")
    z = [0j, 1 + 0j, -1 + 0j, 1j, 2 + 0j, -2.5 + 1e-9j, complex(inf, 0), complex(nan, 0), complex(0, inf)]
    out = []
    for dt in (torch.complex64, torch.complex128):
        t = torch.tensor(z, dtype=dt)
        out += (t[:, None] ** t[None, :]).flatten().tolist()
    return out


def pow_python_number_base_complex_specials(torch):
    # pow.Scalar: a base of 1 fills 1 (even to inf and NaN), other numbers are cpow's like a tensor's
    inf, nan = float("inf"), float("nan")
    z = [0j, 1 + 0j, -1 + 0j, 1j, 2 + 0j, complex(inf, 0), complex(nan, 0), 2.5 + 0j]
    out = []
    for dt in (torch.complex64, torch.complex128):
        for base in (0, 1, 0j, 1 + 0j, 2.0, -1):
            out += (base ** torch.tensor(z, dtype=dt)).tolist()
    return out


def rpow_complex_number_to_int_and_bool_tensors(torch):
    inf, nan = float("inf"), float("nan")
    out = []
    for base in (0j, complex(inf, 0), complex(0, nan), 1 + 2j):
        out += (base ** torch.tensor([-3, -1, 0, 1, 2, 3])).tolist() + (base ** torch.tensor([True, False])).tolist()
    return out


def pow_complex_python_exponent_specials(torch):
    # pow.Tensor_Scalar: 0 fills 1, 1 copies, small powers are products: inf and NaN bases included
    inf, nan = float("inf"), float("nan")
    z = [0j, 1 + 0j, -1 + 0j, 1j, complex(inf, 0), complex(nan, 0), complex(0, inf), -2.5 + 1e-9j]
    out = []
    for dt in (torch.complex64, torch.complex128):
        for e in (0, 0j, 1, 2, 3, -1, -2, 0.5, -0.5, 1j, 2 + 1j, complex(inf, 0), complex(0, nan)):
            out += (torch.tensor(z, dtype=dt) ** e).tolist()
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
        (nan, nan), (nan, nan), (nan, nan), (nan, nan), (inf, 0.0), (inf, 3.1415927410125732), (nan, nan), (nan,
        nan), (9.99999993922529e-09, 0.0), (88.94342041015625, 0.7853981852531433), (-inf, 0.0),
        (0.41916459798812866, 0.16514867544174194), (-1.0794702909322496e-09, 7.2493850922228376e-09), (nan,
        nan), (nan, nan), (nan, nan), (nan, nan), (inf, 0.0), (inf, 3.141592653589793), (nan, nan), (nan, nan),
        (9.999999950000003e-09, 0.0), (88.94341941272182, 0.7853981633974483), (-inf, 0.0), (0.4191645952022216,
        0.16514867741462683), (-1.0794703096230506e-09, 7.249385662041623e-09)]),
    sgn_complex_infinite_and_nan_parts: (1e-06, [
        (0.0, nan), (0.0, nan), (-0.0, nan), (nan, 0.0), (nan, nan), (0.0, nan), (nan, nan), (nan, nan), (nan,
        nan), (0.0, 0.0), (0.0, 0.0), (0.6000000238418579, 0.800000011920929), (1.0, 0.0), (0.7071068286895752,
        -0.7071068286895752), (0.0, 1.0), (0.0, 1.0), (0.0, nan), (0.0, nan), (-0.0, nan), (nan, 0.0), (nan,
        nan), (0.0, nan), (nan, nan), (nan, nan), (nan, nan), (0.0, 0.0), (0.0, 0.0), (0.6, 0.8), (1.0, 0.0),
        (0.7071067811865476, -0.7071067811865476), (0.0, 1.0), (0.0, 1.0)]),
    pow_complex_tensor_tensor_special_values: (1e-05, [
        (nan, nan), (0.0, -0.0), (inf, nan), (nan, nan), (0.0, -0.0), (inf, nan), (0.0, -0.0), (nan, nan), (nan,
        nan), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (nan, nan), (nan, nan),
        (nan, nan), (1.0, 0.0), (-1.0, -8.742277657347586e-08), (-1.0, 8.742277657347586e-08),
        (0.04321391507983208, 0.0), (1.0, 1.7484555314695172e-07), (-3.3776623808989825e-07, -1.0), (nan, nan),
        (nan, nan), (0.0, -0.0), (1.0, 0.0), (-4.371138828673793e-08, 1.0), (-4.371138828673793e-08, -1.0),
        (0.20787957310676575, 0.0), (-1.0, -8.742277657347586e-08), (-0.7071066498756409, 0.70710688829422),
        (nan, nan), (nan, nan), (0.0, -0.0), (1.0, 0.0), (2.0, 0.0), (0.5, 0.0), (0.7692388892173767,
        0.6389612555503845), (4.0, 0.0), (0.1767766922712326, 1.225322621145608e-10), (inf, nan), (nan, nan),
        (nan, nan), (1.0, 0.0), (-2.5, -2.18556948539117e-07), (-0.3999999761581421, 3.4969108497762136e-08),
        (0.026307206600904465, 0.03428371623158455), (6.250000476837158, 1.0927848279607133e-06),
        (-3.417953564621712e-08, -0.10119287669658661), (inf, nan), (nan, nan), (0.0, 0.0), (nan, nan), (inf,
        nan), (0.0, -0.0), (nan, nan), (inf, nan), (0.0, 0.0), (inf, nan), (nan, nan), (nan, nan), (nan, nan),
        (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan,
        nan), (inf, nan), (0.0, -0.0), (nan, nan), (inf, nan), (0.0, 0.0), (inf, nan), (nan, nan), (nan, nan),
        (nan, nan), (0.0, -0.0), (inf, nan), (nan, nan), (0.0, -0.0), (inf, nan), (0.0, -0.0), (nan, nan), (nan,
        nan), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (nan, nan), (nan, nan),
        (nan, nan), (1.0, 0.0), (-1.0, 1.2246467991473532e-16), (-1.0, -1.2246467991473532e-16),
        (0.04321391826377226, 0.0), (1.0, -2.4492935982947064e-16), (3.06161698825003e-16, -0.9999999968584073),
        (nan, nan), (nan, nan), (0.0, -0.0), (1.0, 0.0), (6.123233995736766e-17, 1.0), (6.123233995736766e-17,
        -1.0), (0.20787957635076193, 0.0), (-1.0, 1.2246467991473532e-16), (-0.707106780075827,
        0.7071067800758267), (nan, nan), (nan, nan), (0.0, -0.0), (1.0, 0.0), (2.0, 0.0), (0.5, 0.0),
        (0.7692389013639721, 0.6389612763136348), (4.0, 0.0), (0.1767766952966369, 1.225322679335684e-10), (inf,
        nan), (nan, nan), (nan, nan), (1.0, 0.0), (-2.5, 1.000000388902071e-09), (-0.39999999999999997,
        -1.6000006222433132e-10), (0.026307210932505785, 0.03428371896621765), (6.250000000000001,
        -5.0000019445103546e-09), (1.9391505813012527e-10, -0.10119288480748129), (inf, nan), (nan, nan), (0.0,
        0.0), (nan, nan), (inf, nan), (0.0, -0.0), (nan, nan), (inf, nan), (0.0, 0.0), (inf, nan), (nan, nan),
        (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan,
        nan), (nan, nan), (nan, nan), (inf, nan), (0.0, -0.0), (nan, nan), (inf, nan), (0.0, 0.0), (inf, nan),
        (nan, nan), (nan, nan)]),
    pow_python_number_base_complex_specials: (1e-05, [
        (nan, nan), (0.0, -0.0), (inf, nan), (nan, nan), (0.0, -0.0), (0.0, -0.0), (nan, nan), (0.0, -0.0),
        (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (nan,
        nan), (0.0, -0.0), (inf, nan), (nan, nan), (0.0, -0.0), (0.0, -0.0), (nan, nan), (0.0, -0.0), (1.0,
        0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0),
        (2.0, 0.0), (0.5, 0.0), (0.7692388892173767, 0.6389612555503845), (4.0, 0.0), (inf, nan), (nan, nan),
        (5.656854152679443, 0.0), (1.0, 0.0), (-1.0, -8.742277657347586e-08), (-1.0, 8.742277657347586e-08),
        (0.04321391507983208, 0.0), (1.0, 1.7484555314695172e-07), (nan, nan), (nan, nan),
        (-3.3776623808989825e-07, 1.0), (nan, nan), (0.0, -0.0), (inf, nan), (nan, nan), (0.0, -0.0), (0.0,
        -0.0), (nan, nan), (0.0, -0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0),
        (1.0, 0.0), (1.0, 0.0), (nan, nan), (0.0, -0.0), (inf, nan), (nan, nan), (0.0, -0.0), (0.0, -0.0), (nan,
        nan), (0.0, -0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0),
        (1.0, 0.0), (1.0, 0.0), (2.0, 0.0), (0.5, 0.0), (0.7692389013639721, 0.6389612763136348), (4.0, 0.0),
        (inf, nan), (nan, nan), (5.656854249492381, 0.0), (1.0, 0.0), (-1.0, 1.2246467991473532e-16), (-1.0,
        -1.2246467991473532e-16), (0.04321391826377226, 0.0), (1.0, -2.4492935982947064e-16), (nan, nan), (nan,
        nan), (3.061616997868383e-16, 1.0)]),
    rpow_complex_number_to_int_and_bool_tensors: (1e-05, [
        (inf, nan), (inf, nan), (nan, nan), (0.0, -0.0), (0.0, -0.0), (0.0, -0.0), (0.0, -0.0), (nan, nan),
        (0.0, -0.0), (0.0, -0.0), (nan, nan), (inf, nan), (inf, nan), (inf, nan), (inf, nan), (nan, nan), (nan,
        nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan),
        (-0.08799999207258224, 0.01600002311170101), (0.19999998807907104, -0.4000000059604645), (1.0, 0.0),
        (0.9999999403953552, 2.000000238418579), (-3.000000476837158, 3.999999761581421), (-11.0,
        -2.0000030994415283), (0.9999999403953552, 2.000000238418579), (1.0, 0.0)]),
    pow_complex_python_exponent_specials: (1e-05, [
        (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0,
        0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (0.0, 0.0),
        (1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (inf, 0.0), (nan, 0.0), (0.0, inf), (-2.5, 9.999999717180685e-10),
        (0.0, 0.0), (1.0, 0.0), (1.0, -0.0), (-1.0, 0.0), (inf, nan), (nan, nan), (-inf, nan), (6.25,
        -4.999999969612645e-09), (0.0, 0.0), (1.0, 0.0), (-1.0, 0.0), (-0.0, -1.0), (nan, nan), (nan, nan),
        (nan, nan), (-15.625, 1.8750000663203537e-08), (inf, nan), (1.0, 0.0), (-1.0, -0.0), (0.0, -1.0), (0.0,
        0.0), (nan, nan), (0.0, -0.0), (-0.4000000059604645, -1.5999999936067155e-10), (inf, nan), (1.0, 0.0),
        (1.0, 0.0), (-1.0, -0.0), (nan, nan), (nan, nan), (nan, nan), (0.1599999964237213,
        1.2799999948853724e-10), (0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (0.7071067690849304, 0.7071067690849304),
        (inf, 0.0), (nan, nan), (inf, inf), (3.162277661949986e-10, 1.5811388492584229), (inf, nan), (1.0, 0.0),
        (0.0, -1.0), (0.7071067690849304, -0.7071067690849304), (0.0, 0.0), (nan, nan), (nan, nan),
        (1.26491109253557e-10, -0.6324555277824402), (nan, nan), (1.0, 0.0), (0.04321391507983208, 0.0),
        (0.20787957310676575, 0.0), (nan, nan), (nan, nan), (nan, nan), (0.026307206600904465,
        0.03428371623158455), (0.0, -0.0), (1.0, 0.0), (0.04321391507983208, 7.555760461741556e-09),
        (-0.20787957310676575, -1.817340944398893e-08), (inf, nan), (nan, nan), (inf, nan), (0.1644200086593628,
        0.21427327394485474), (0.0, -0.0), (nan, nan), (nan, nan), (nan, nan), (inf, nan), (nan, nan), (inf,
        nan), (inf, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan),
        (nan, nan), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0,
        0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0), (1.0, 0.0),
        (0.0, 0.0), (1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (inf, 0.0), (nan, 0.0), (0.0, inf), (-2.5, 1e-09),
        (0.0, 0.0), (1.0, 0.0), (1.0, -0.0), (-1.0, 0.0), (inf, nan), (nan, nan), (-inf, nan), (6.25, -5e-09),
        (0.0, 0.0), (1.0, 0.0), (-1.0, 0.0), (-0.0, -1.0), (nan, nan), (nan, nan), (nan, nan), (-15.625,
        1.875e-08), (inf, nan), (1.0, 0.0), (-1.0, -0.0), (0.0, -1.0), (0.0, 0.0), (nan, nan), (0.0, -0.0),
        (-0.4, -1.6000000000000002e-10), (inf, nan), (1.0, 0.0), (1.0, 0.0), (-1.0, -0.0), (nan, nan), (nan,
        nan), (nan, nan), (0.16, 1.28e-10), (0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (0.7071067811865476,
        0.7071067811865476), (inf, 0.0), (nan, nan), (inf, inf), (3.1622776601683795e-10, 1.5811388300841898),
        (inf, nan), (1.0, 0.0), (0.0, -1.0), (0.7071067811865475, -0.7071067811865475), (0.0, 0.0), (nan, nan),
        (nan, nan), (1.2649110640673518e-10, -0.6324555320336759), (nan, nan), (1.0, 0.0), (0.04321391826377226,
        0.0), (0.20787957635076193, 0.0), (nan, nan), (nan, nan), (nan, nan), (0.026307210932505785,
        0.03428371896621765), (0.0, -0.0), (1.0, 0.0), (0.04321391826377226, -1.0584357336068808e-17),
        (-0.20787957635076193, 2.545790577860684e-17), (inf, nan), (nan, nan), (inf, nan), (0.1644200684995798,
        0.2142732434073242), (0.0, -0.0), (nan, nan), (nan, nan), (nan, nan), (inf, nan), (nan, nan), (inf,
        nan), (inf, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan), (nan, nan),
        (nan, nan)]),
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


def test_pow_node_names_by_overload():
    # PyTorch's three pow overloads name their nodes apart: Tensor_Scalar, Tensor_Tensor, Scalar
    x = torch.tensor([1.5, 2.0], requires_grad=True)
    assert (x ** 2).grad_fn.name() == "PowBackward0"
    assert (x ** x).grad_fn.name() == "PowBackward1"
    assert (2 ** x).grad_fn.name() == "PowBackward2"
