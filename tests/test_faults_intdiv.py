"""Integer division's one overflowing quotient (issue 20, point 5): INT_MIN // -1 wraps to INT_MIN in every signed
integer dtype, as in PyTorch 2.13, for floor_divide, //, div(rounding_mode='floor'|'trunc'), tensor and scalar
divisors, in place, contiguous and strided; remainder and fmod by -1 are 0. (PyTorch's own trunc division of
int32/int64 INT_MIN by -1 dies of SIGFPE; here it wraps like its int8/int16 ones.)"""
from __future__ import annotations

import pytest

import reftorch as torch

DTYPES = [torch.int64, torch.int32, torch.int16, torch.int8]
# (divide, 9 divided by -2: -5 rounded down, -4 toward zero)
DIVIDE = {
    "floor_divide": (lambda a, b: torch.floor_divide(a, b), -5), "//": (lambda a, b: a // b, -5),
    "div-floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), -5),
    "div-trunc": (lambda a, b: torch.div(a, b, rounding_mode="trunc"), -4),
    "floor_divide_": (lambda a, b: a.clone().floor_divide_(b), -5),
    "div_-trunc": (lambda a, b: a.clone().div_(b, rounding_mode="trunc"), -4),
}
LOWEST = {torch.int64: -2 ** 63, torch.int32: -2 ** 31, torch.int16: -2 ** 15, torch.int8: -2 ** 7}


def operands(dtype):
    lo = LOWEST[dtype]
    a = torch.tensor([lo, lo, 7, -7, lo + 1, 9], dtype=dtype)
    b = torch.tensor([-1, 1, -1, -1, -1, -2], dtype=dtype)
    return lo, a, b


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("how", DIVIDE)
def test_int_min_divided_by_minus_one_wraps(dtype, how):
    divide, nine_by_minus_two = DIVIDE[how]
    lo, a, b = operands(dtype)
    q = divide(a, b)
    assert q.dtype is dtype
    assert q.tolist() == [lo, lo, -7, 7, -lo - 1, nine_by_minus_two]
    assert divide(a[::2], b[::2]).tolist()[:1] == [lo]                          # strided operands
    assert divide(a[:1], -1).tolist() == [lo]                                   # a Python divisor


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_large_contiguous_quotient_wraps_everywhere(dtype):
    lo, _, _ = operands(dtype)
    a = torch.full((5000,), lo, dtype=dtype)
    assert (a // -1).tolist() == [lo] * 5000
    assert (a // torch.full((5000,), -1, dtype=dtype)).tolist() == [lo] * 5000


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_remainder_and_fmod_by_minus_one_are_zero(dtype):
    lo, a, b = operands(dtype)
    for r in (torch.remainder(a, b), torch.fmod(a, b), a % b, torch.remainder(a, -1), torch.fmod(a, -1),
              a.clone().remainder_(b)):
        assert r.dtype is dtype and r.tolist()[:5] == [0, 0, 0, 0, 0]
    assert torch.remainder(a, b).tolist()[5] == -1 and torch.fmod(a, b).tolist()[5] == 1
