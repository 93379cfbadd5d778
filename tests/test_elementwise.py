"""The elementwise ops of issue 2 against NumPy, and the PyTorch conventions a NumPy reference cannot state.

The registry-driven suites (tests/test_registry_*.py) fuzz every entry and gradcheck every differentiable
one; this file checks, per op: values against NumPy in float64 and float32 (a strided view), integer
inputs (promotion to float, or the integer result), a Python number on either side of a binary op, the
in-place variant; then PyTorch's integer, NaN and rounding rules, the error messages, and derivatives by
central differences in float64 for a handful of ops. Inputs are few and small: most time is Numba
compiling one kernel per (op, dtype, layout), so each op is run on few signatures.
"""
import math

import numpy as np
import pytest

import reftorch as torch

# the NumPy references meet log(0), 0/0 and the like on purpose
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

NAN, INF = float("nan"), float("inf")
# values with ties (halves), signed zeros and both signs; SPECIAL adds NaN and infinities
X = np.array([-2.5, -1.5, -0.75, -0.0, 0.0, 0.25, 0.5, 1.5, 2.5, 3.0])
SPECIAL = np.array([NAN, INF, -INF, -0.0, 1.0])
UNIT = np.array([-0.9, -0.5, -0.1, 0.0, 0.2, 0.6, 0.95])           # inside (-1, 1)
POS = np.array([0.05, 0.3, 1.0, 1.5, 2.0, 7.0])                     # > 0
INTS = np.array([-7, -3, -1, 0, 1, 2, 5, 9], np.int64)


def npy(t):
    return t.detach().numpy()


def check(got, want, dtype=None, tol=1e-12):
    """got (a reftorch tensor) equals want (a NumPy value) within tol, NaN matching NaN; and has dtype."""
    if dtype is not None:
        assert got.dtype == dtype, (got.dtype, dtype)
    g, w = npy(got), np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    if g.dtype.kind in "biu" and w.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)


def strided32(a):
    """a as float32 in a non-contiguous view (every other element of a bigger buffer)."""
    big = np.zeros(2 * len(a), np.float32)
    big[::2] = a
    return torch.from_numpy(big)[::2]


def f64(a):
    return torch.tensor(np.asarray(a, np.float64))


# ------------------------------------------------------------------------------------------ unary ops

def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


# name: (NumPy reference, inputs, whether integers promote to float)
UNARY = {
    "exp2": (np.exp2, X, True), "expm1": (np.expm1, X, True), "log2": (np.log2, POS, True),
    "log10": (np.log10, POS, True), "log1p": (np.log1p, POS, True), "rsqrt": (lambda x: 1 / np.sqrt(x), POS, True),
    "reciprocal": (lambda x: 1 / x, POS, True), "sin": (np.sin, X, True), "cos": (np.cos, X, True),
    "tan": (np.tan, UNIT, True), "asin": (np.arcsin, UNIT, True), "acos": (np.arccos, UNIT, True),
    "atan": (np.arctan, X, True), "sinh": (np.sinh, X, True), "cosh": (np.cosh, X, True),
    "asinh": (np.arcsinh, X, True), "acosh": (np.arccosh, POS + 1, True), "atanh": (np.arctanh, UNIT, True),
    "logit": (lambda x: np.log(x / (1 - x)), UNIT * 0.5 + 0.5, True), "erf": (_erf, X, True),
    "erfc": (lambda x: 1 - _erf(x), X, True), "exp": (np.exp, X, True), "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), X, True),
    "floor": (np.floor, X, False), "ceil": (np.ceil, X, False), "trunc": (np.trunc, X, False),
    "round": (np.round, X, False), "frac": (lambda x: x - np.trunc(x), X, None), "square": (np.square, X, False),
    "sign": (np.sign, X, False), "abs": (np.abs, X, False), "neg": (np.negative, X, False),
    "relu": (lambda x: np.maximum(x, 0), X, False),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_against_numpy(name):
    ref, x, promotes = UNARY[name]
    fn = getattr(torch, name)
    check(fn(f64(x)), ref(x), torch.float64)
    check(getattr(f64(x), name)(), ref(x))                                        # the method
    y = f64(x)
    assert getattr(y, name + "_")() is y                                          # in place
    check(y, ref(x))
    if promotes:        # integers compute in float32, the kernel float32 inputs use too
        check(fn(torch.tensor(x, dtype=torch.float32)), ref(x.astype(np.float32)), torch.float32, tol=2e-6)
    if promotes is not None and name != "logit":
        ints = np.array([0, 1, 2, 3]) if name not in ("atanh", "asin", "acos") else np.array([0, 0, 1, -1])
        want = ref(ints.astype(np.float64))
        check(fn(torch.tensor(ints)), want, torch.float32 if promotes else torch.int64, tol=1e-6)


def test_unary_aliases():
    x = f64(UNIT)
    for alias, name in [("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("arcsinh", "asinh"),
                        ("arctanh", "atanh"), ("fix", "trunc"), ("sgn", "sign"), ("negative", "neg"),
                        ("absolute", "abs")]:
        check(getattr(torch, alias)(x), npy(getattr(torch, name)(x)))
        check(getattr(x, alias)(), npy(getattr(x, name)()))
    check(torch.arccosh(f64(POS + 1)), np.arccosh(POS + 1))
    check(abs(f64(X)), np.abs(X))
    check(-f64(X), -X)


def test_unary_dtype_rules():
    b = torch.tensor([True, False])
    check(torch.exp(b), np.exp([1.0, 0.0]), torch.float32, tol=1e-6)
    check(torch.square(b), np.array([1, 0]), torch.int64)           # pow(bool, 2) promotes to int64
    check(torch.sign(b), np.array([True, False]), torch.bool)
    i8 = torch.tensor([-128, -1, 5], dtype=torch.int8)
    check(torch.abs(i8), np.abs(np.array([-128, -1, 5], np.int8)), torch.int8)   # wraps like C
    check(-torch.tensor([1, 200], dtype=torch.uint8), np.array([255, 56], np.uint8), torch.uint8)
    big = torch.tensor([2**53 + 1, -(2**62) - 1])
    for name in ("floor", "ceil", "trunc", "round"):                 # integers unchanged, exactly
        check(getattr(torch, name)(big), np.array([2**53 + 1, -(2**62) - 1]), torch.int64)
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor is not supported"):
        torch.neg(b)                                                  # PyTorch's own words (ops.yaml rejects)
    for name, kernel, msg in [("abs", "abs_cpu", "'Bool'"), ("floor", "floor_vml_cpu", "'Bool'"),
                              ("frac", "frac_cpu", "'Long'"), ("bitwise_not", "bitwise_not_cpu", "'Double'")]:
        arg = torch.tensor([1.0]) .double() if msg == "'Double'" else (b if msg == "'Bool'" else torch.tensor([1]))
        with pytest.raises(RuntimeError, match=f'"{kernel}" not implemented for {msg}'):     # torch 2.13's names
            getattr(torch, name)(arg)


def test_unary_specials():
    x = f64(SPECIAL)
    check(torch.sign(x), [0.0, 1.0, -1.0, 0.0, 1.0])                 # NaN gives 0, as in PyTorch
    check(torch.relu(x), [NAN, INF, 0.0, 0.0, 1.0])                  # NaN stays NaN
    check(torch.frac(x), [NAN, NAN, NAN, -0.0, 0.0])
    check(torch.floor(x), np.floor(SPECIAL))
    check(torch.isnan(x), np.isnan(SPECIAL), torch.bool)
    check(torch.isinf(x), np.isinf(SPECIAL), torch.bool)
    check(torch.isfinite(x), np.isfinite(SPECIAL), torch.bool)
    for name in ("isnan", "isinf", "isfinite"):
        check(getattr(torch, name)(torch.tensor(INTS)), getattr(np, name)(INTS.astype(float)), torch.bool)
        check(getattr(torch.tensor([True]), name)(), getattr(np, name)([1.0]), torch.bool)
    check(torch.logical_not(x), [False, False, False, True, False], torch.bool)      # NaN is truthy
    check(torch.logical_not(torch.tensor(INTS)), INTS == 0, torch.bool)
    check(torch.exp(x), np.exp(SPECIAL))
    check(torch.logit(x), [NAN, NAN, NAN, -INF, INF])


def test_round_half_even_and_decimals():
    check(torch.round(f64([0.5, 1.5, 2.5, -0.5, -1.5])), [0.0, 2.0, 2.0, -0.0, -2.0])
    check(torch.round(f64([1.2345, -1.2355, 0.125]), decimals=2), np.round([1.2345, -1.2355, 0.125], 2))
    check(torch.round(f64([1234.5678, 1250.0, -1350.0]), decimals=-2), [1200.0, 1200.0, -1400.0])
    y = torch.tensor([0.125, 2.675], dtype=torch.float32)
    assert y.round_(decimals=2) is y
    check(y, np.round(np.array([0.125, 2.675], np.float32), 2), tol=1e-7)
    check(torch.tensor([7, -3]).round(), [7, -3], torch.int64)


def test_logit_eps():
    x = np.array([0.0, 0.05, 0.5, 0.97, 1.0])
    c = np.clip(x, 0.1, 0.9)
    check(torch.logit(f64(x), eps=0.1), np.log(c / (1 - c)))
    check(f64(x).logit(0.1), np.log(c / (1 - c)))


def test_nan_to_num():
    x32 = torch.tensor([NAN, INF, -INF, 2.0])
    big = float(np.finfo(np.float32).max)
    check(torch.nan_to_num(x32), [0.0, big, -big, 2.0], torch.float32)
    check(torch.nan_to_num(f64(SPECIAL)), np.nan_to_num(SPECIAL), torch.float64)
    check(torch.nan_to_num(x32, nan=1.5, posinf=10, neginf=-10.0), [1.5, 10.0, -10.0, 2.0])
    check(torch.nan_to_num(x32, posinf=1e39), [0.0, INF, -big, 2.0])        # rounds to float32's inf
    check(x32.nan_to_num(neginf=-1.0), [0.0, big, -1.0, 2.0])
    i = torch.tensor(INTS)
    out = torch.nan_to_num(i)
    check(out, INTS, torch.int64)
    assert out._storage is not i._storage
    y = x32.clone()
    assert y.nan_to_num_(nan=-3.0) is y
    check(y, [-3.0, big, -big, 2.0])


def test_bitwise_not():
    check(~torch.tensor([True, False]), [False, True], torch.bool)
    check(torch.bitwise_not(torch.tensor(INTS)), ~INTS, torch.int64)
    u = torch.tensor([0, 5, 255], dtype=torch.uint8)
    check(~u, np.array([255, 250, 0], np.uint8), torch.uint8)
    assert u.bitwise_not_() is u
    check(u, np.array([255, 250, 0], np.uint8))


# ------------------------------------------------------------------------------------------ binary ops

A = np.array([-2.5, -0.5, 0.0, 1.5, 3.0, 0.75, -2.0])
B = np.array([-2.0, -0.5, 0.75, 2.0, 3.0, 0.75, 2.5])           # ties with A at the end
IA = np.array([-7, -2, 0, 5, 9, 4])
IB = np.array([-3, -1, 2, 4, 9, -2])

# name: (NumPy reference, float left/right operands, whether integer inputs give a float result)
BINARY = {
    "add": (np.add, A, B, False), "sub": (np.subtract, A, B, False), "mul": (np.multiply, A, B, False),
    "div": (np.true_divide, A, B, True), "true_divide": (np.true_divide, A, B, True),
    "floor_divide": (np.floor_divide, A, B, False), "remainder": (np.remainder, A, B, False),
    "fmod": (np.fmod, A, B, False), "pow": (np.power, np.abs(A) + 0.5, B, False),
    "atan2": (np.arctan2, A, B, True), "maximum": (np.maximum, A, B, False), "minimum": (np.minimum, A, B, False),
    "fmax": (np.fmax, A, B, False), "fmin": (np.fmin, A, B, False), "hypot": (np.hypot, A, B, None),
    "logaddexp": (np.logaddexp, A, B, None), "copysign": (np.copysign, A, B, True),
    "eq": (np.equal, A, B, False), "ne": (np.not_equal, A, B, False), "lt": (np.less, A, B, False),
    "le": (np.less_equal, A, B, False), "gt": (np.greater, A, B, False), "ge": (np.greater_equal, A, B, False),
    "logical_and": (np.logical_and, A, B, False), "logical_or": (np.logical_or, A, B, False),
    "logical_xor": (np.logical_xor, A, B, False), "clamp_min": (np.maximum, A, B, False),
    "clamp_max": (np.minimum, A, B, False),
}
INPLACE = {"add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "atan2", "hypot",
           "copysign", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "clamp_min",
           "clamp_max"}
COMPARE = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}
# PyTorch's argument parser: no Number overload at all, or one for the right operand only
NO_NUMBER = {"atan2", "maximum", "minimum", "fmax", "fmin", "hypot", "logaddexp", "logical_and", "logical_or",
             "logical_xor"}
RIGHT_NUMBER = {"fmod", "copysign", "eq", "ne", "lt", "le", "gt", "ge", "clamp_min", "clamp_max"}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_against_numpy(name):
    ref, a, b, promotes = BINARY[name]
    fn = getattr(torch, name)
    want_dtype = torch.bool if name in COMPARE else torch.float64
    check(fn(f64(a), f64(b)), ref(a, b), want_dtype)
    check(getattr(f64(a), name)(f64(b)), ref(a, b))                                # the method
    s = 0.75
    check(fn(f64(a), f64(s)), ref(a, s), want_dtype)                               # a 0-d tensor on the right
    check(fn(f64(s), f64(b)), ref(s, b), want_dtype)                               # ... and on the left
    if name in NO_NUMBER:
        with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'other' \(position 2\) must be Tensor, not float$"):
            fn(f64(a), s)
    else:
        check(fn(f64(a), s), ref(a, s), want_dtype)                                # a Python number on the right
    if name in NO_NUMBER | RIGHT_NUMBER:
        with pytest.raises(TypeError, match=rf"^{name}\(\)(: argument 'input' \(position 1\) must be Tensor, not float$"
                                            rf"| received an invalid combination of arguments - got \(float, Tensor\))"):
            fn(s, f64(b))
    else:
        check(fn(s, f64(b)), ref(s, b), want_dtype)                                # ... and on the left
    if name in INPLACE:
        y = f64(a)
        assert getattr(y, name + "_")(f64(s) if name in NO_NUMBER else s) is y
        check(y, ref(a, s))
    if promotes is not None:
        ib = IB if name not in ("floor_divide", "remainder", "fmod", "pow") else np.abs(IB)
        got = fn(torch.tensor(IA), torch.tensor(ib))
        dt = torch.bool if name in COMPARE else (torch.float32 if promotes else torch.int64)
        check(got, ref(IA.astype(np.float64) if promotes else IA, ib), dt, tol=1e-6)


def test_binary_broadcasting():
    a, b = np.array([[-2.5], [0.0], [1.5]]), np.array([-2.0, 0.75, 2.0, 3.0])
    for name, ref in [("add", np.add), ("maximum", np.maximum), ("remainder", np.remainder), ("lt", np.less)]:
        check(getattr(torch, name)(f64(a), f64(b)), ref(a, b))
        check(getattr(torch, name)(f64(b), f64(a)), ref(b, a))
    check(torch.where(torch.tensor([[True], [False], [True]]), f64(b), 0.0), np.where([[True], [False], [True]], b, 0.0))
    check(torch.clamp(f64(b), f64(a), 2.5), np.minimum(np.maximum(b, a), 2.5))
    check(torch.lerp(f64(a), f64(b), 0.25), a + 0.25 * (b - a))


def test_binary_float32_strided_and_promotion():
    a32 = strided32(np.array([1.5, -2.0, 3.25, 0.5]))
    check(torch.mul(a32, f64([2.0, 2.0, 2.0, 2.0])), [3.0, -4.0, 6.5, 1.0], torch.float64)
    check(a32 * 2.5, [3.75, -5.0, 8.125, 1.25], torch.float32)          # a Python float keeps float32
    check(torch.tensor([1, 2]) * 2.5, [2.5, 5.0], torch.float32)          # ... but promotes integers
    check(torch.tensor([1, 2]) + True, [2, 3], torch.int64)
    check(torch.tensor([True, False]) + torch.tensor([True, True]), [True, True], torch.bool)
    check(torch.tensor([1, 2], dtype=torch.int8) + 1, np.array([2, 3], np.int8), torch.int8)
    check(torch.tensor([7, 8]) / 2, [3.5, 4.0], torch.float32)
    check(torch.tensor([1, 2]) < 1.5, [True, False], torch.bool)
    check(torch.add(f64([1.0]), f64([2.0]), alpha=3), [7.0])
    check(torch.sub(f64([1.0]), 2, alpha=0.5), [0.0])
    check(torch.subtract(f64([1.0]), 2), [-1.0])
    check(torch.multiply(f64([3.0]), 2), [6.0])


def test_operators_and_reflected():
    x, xs = f64(X), X
    ix = torch.tensor(INTS)
    cases = [(x + 2, xs + 2), (2 + x, 2 + xs), (x - 2, xs - 2), (2 - x, 2 - xs), (x * 3, xs * 3), (3 * x, 3 * xs),
             (x / 4, xs / 4), (4 / (x + 10), 4 / (xs + 10)), (x // 0.75, xs // 0.75), (7 // (x + 10), 7 // (xs + 10)),
             (x % 0.75, xs % 0.75), (7 % (x + 10), 7 % (xs + 10)), (x ** 2, xs ** 2), (2 ** x, 2 ** xs),
             (ix & 6, INTS & 6), (6 & ix, 6 & INTS), (ix | 6, INTS | 6), (6 | ix, 6 | INTS), (ix ^ 6, INTS ^ 6),
             (6 ^ ix, 6 ^ INTS), (ix << 2, INTS << 2), (1 << torch.tensor([1, 3]), [2, 8]), (ix >> 1, INTS >> 1),
             (64 >> torch.tensor([1, 3]), [32, 8]), (~ix, ~INTS),
             (x == 0.5, xs == 0.5), (x != 0.5, xs != 0.5), (x < 0.5, xs < 0.5), (x <= 0.5, xs <= 0.5),
             (x > 0.5, xs > 0.5), (x >= 0.5, xs >= 0.5), (0.5 < x, 0.5 < xs), (0.5 >= x, 0.5 >= xs)]
    for got, want in cases:
        check(got, want)
    y = f64(X)
    for op, want in [("__iadd__", X + 1), ("__isub__", X), ("__imul__", X * 2), ("__itruediv__", X),
                     ("__ifloordiv__", X // 1), ("__imod__", (X // 1) % 2), ("__ipow__", ((X // 1) % 2) ** 2)]:
        arg = {"__imul__": 2, "__itruediv__": 2, "__imod__": 2, "__ipow__": 2}.get(op, 1)
        res = getattr(y, op)(arg)
        assert res is y
        check(y, want)
    j = torch.tensor([5, 6])
    for op, arg, want in [("__iand__", 3, [1, 2]), ("__ior__", 8, [9, 10]), ("__ixor__", 1, [8, 11]),
                          ("__ilshift__", 2, [32, 44]), ("__irshift__", 3, [4, 5])]:
        assert getattr(j, op)(arg) is j
        check(j, want)


def test_comparison_aliases_and_inplace():
    x = f64([1.0, 2.0, 3.0])
    for alias, name in [("not_equal", "ne"), ("less", "lt"), ("less_equal", "le"), ("greater", "gt"),
                        ("greater_equal", "ge")]:
        check(getattr(torch, alias)(x, 2.0), npy(getattr(torch, name)(x, 2.0)))
    y = f64([1.0, 2.0, 3.0])
    assert y.ge_(2) is y
    check(y, [0.0, 1.0, 1.0], torch.float64)          # the bool result, written in self's dtype
    assert (x == None) is False and (x != None) is True  # noqa: E711 -- Python's protocol, not an op
    check(torch.eq(f64([NAN, 1.0]), f64([NAN, 1.0])), [False, True])
    check(torch.ne(f64([NAN]), f64([NAN])), [True])


def test_division_family():
    a, b = torch.tensor([7, -7, 7, -7, 0]), torch.tensor([2, 2, -2, -2, 3])
    check(torch.div(a, b), [3.5, -3.5, -3.5, 3.5, 0.0], torch.float32)
    check(torch.divide(a, b, rounding_mode="trunc"), [3, -3, -3, 3, 0], torch.int64)
    check(torch.div(a, b, rounding_mode="floor"), [3, -4, -4, 3, 0], torch.int64)
    check(torch.floor_divide(a, b), [3, -4, -4, 3, 0], torch.int64)
    check(torch.remainder(a, b), [1, 1, -1, -1, 0], torch.int64)
    check(torch.fmod(a, b), [1, -1, 1, -1, 0], torch.int64)
    u = torch.tensor([7, 200], dtype=torch.uint8)
    check(u // torch.tensor([2, 3], dtype=torch.uint8), np.array([3, 66], np.uint8), torch.uint8)
    check(u % 3, np.array([1, 2], np.uint8), torch.uint8)
    for fn in (torch.floor_divide, torch.remainder, torch.fmod,
               lambda p, q: torch.div(p, q, rounding_mode="trunc"), lambda p, q: torch.div(p, q, rounding_mode="floor")):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn(a, torch.tensor([1, 0, 1, 1, 1]))
    fa, fb = f64([7.0, -7.0, 0.0, 1.0, INF, -4.0, 5.0]), f64([0.0, 0.0, 0.0, 0.1, 1.0, 2.0, INF])
    check(torch.floor_divide(fa, fb), [INF, -INF, NAN, 9.0, NAN, -2.0, 0.0])   # 1 // 0.1 is 9, as in Python
    check(torch.remainder(fa, fb), [NAN, NAN, NAN, np.fmod(1.0, 0.1), NAN, -0.0, 5.0])
    assert np.signbit(npy(torch.remainder(f64([-4.0]), 2.0))[0])                # fmod's zero, as PyTorch
    check(torch.fmod(fa, fb), np.fmod(npy(fa), npy(fb)))
    check(torch.div(fa, fb, rounding_mode="trunc"), np.trunc(npy(fa) / npy(fb)))
    check(torch.div(f64([1.0]), 0.1, rounding_mode="trunc"), [10.0])           # trunc(a / b), not of the exact quotient
    check(torch.true_divide(torch.tensor([1]), 0), [INF], torch.float32)
    y = f64([7.0, -7.0])
    assert y.div_(2, rounding_mode="floor") is y
    check(y, [3.0, -4.0])
    assert y.divide_(2) is y and y.true_divide_(0.5) is y
    check(y, [3.0, -4.0])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch.tensor([1, 2]).div_(2)
    with pytest.raises(RuntimeError, match="div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"):
        torch.div(y, 2, rounding_mode="round")


def test_pow_integer_rules():
    check(torch.pow(torch.tensor([2, 1, -1, -1, 0, 5]), torch.tensor([-1, -3, -3, -2, -1, 0])), [0, 1, -1, 1, 0, 1],
          torch.int64)
    check(torch.tensor([3]) ** 40, np.array([3], np.int64) ** 40, torch.int64)          # wraps like C
    check(torch.tensor([3, 200], dtype=torch.uint8) ** 2, np.array([9, 64], np.uint8), torch.uint8)
    check(torch.tensor([2, 3]) ** 0.5, np.sqrt([2.0, 3.0]), torch.float32, tol=1e-6)
    check(2 ** torch.tensor([1, 2]), [2, 4], torch.int64)
    check(2.5 ** torch.tensor([1, 2]), [2.5, 6.25], torch.float32)
    check(torch.pow(f64([0.0, -2.0, 4.0]), f64([-1.0, 0.5, 0.5])), [INF, NAN, 2.0])
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        torch.pow(torch.tensor([True]), torch.tensor([True]))


def test_shifts():
    x = torch.tensor([1, -8, 255, 3])
    check(torch.bitwise_left_shift(x, torch.tensor([3, 1, 64, -1])), [8, -16, 0, 0])     # out of range: 0
    check(torch.bitwise_right_shift(torch.tensor([-8, 8, 8, -1]), torch.tensor([1, 70, -1, 63])), [-4, 0, 0, -1])
    i8 = torch.tensor([-128, 64, 1], dtype=torch.int8)
    check(i8 << 1, np.array([0, -128, 2], np.int8), torch.int8)
    check(i8 >> 9, np.array([-1, 0, 0], np.int8), torch.int8)                              # sign fill
    u = torch.tensor([200, 1], dtype=torch.uint8)
    check(u << 1, np.array([144, 2], np.uint8), torch.uint8)
    check(u >> 8, np.array([0, 0], np.uint8), torch.uint8)
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        torch.tensor([1.0]) << 1


def test_bitwise_and_logical():
    t, f = torch.tensor([True, True, False]), torch.tensor([True, False, False])
    check(t & f, [True, False, False], torch.bool)
    check(t | f, [True, True, False], torch.bool)
    check(t ^ f, [False, True, False], torch.bool)
    check(torch.bitwise_and(t, torch.tensor([5, 6, 7])), [1, 0, 0], torch.int64)
    check(torch.bitwise_xor(torch.tensor(INTS), 5), INTS ^ 5, torch.int64)
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        torch.bitwise_or(torch.tensor([1.0]), 1)
    fl = f64([NAN, 0.0, -0.0, 2.0])
    check(torch.logical_and(fl, torch.tensor(1)), [True, False, False, True], torch.bool)
    check(torch.logical_or(fl, torch.tensor([0, 0, 1, 0])), [True, False, True, True], torch.bool)
    check(torch.logical_xor(fl, torch.tensor(True)), [False, True, True, False], torch.bool)
    with pytest.raises(TypeError, match=r"^logical_and\(\): argument 'other' \(position 2\) must be Tensor, not int$"):
        torch.logical_and(fl, 1)            # PyTorch has no Number overload for the logical ops
    y = torch.tensor([1, 0, 3])
    assert y.logical_and_(torch.tensor([1, 1, 0])) is y
    check(y, [1, 0, 0], torch.int64)


def test_min_max_nan_rules():
    a, b = f64([NAN, 1.0, NAN, 2.0, -0.0]), f64([1.0, NAN, NAN, 3.0, 0.0])
    check(torch.maximum(a, b), np.maximum(npy(a), npy(b)))
    check(torch.minimum(a, b), np.minimum(npy(a), npy(b)))
    check(torch.fmax(a, b), np.fmax(npy(a), npy(b)))
    check(torch.fmin(a, b), np.fmin(npy(a), npy(b)))
    check(torch.maximum(torch.tensor([True, False]), torch.tensor([False, False])), [True, False], torch.bool)
    check(torch.fmin(torch.tensor(INTS), torch.tensor(0)), np.fmin(INTS, 0), torch.int64)
    check(torch.logaddexp(f64([-INF, INF, INF, 1.0]), f64([-INF, INF, -INF, 1.0])), [-INF, INF, INF, 1 + math.log(2)])
    check(torch.hypot(f64([3e200, 3.0]), f64([4e200, 4.0])), [5e200, 5.0])
    check(torch.copysign(f64([1.0, 2.0, 3.0]), f64([-0.0, 0.0, -INF])), [-1.0, 2.0, -3.0])
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.hypot(torch.tensor([1]), torch.tensor([1]))


# ------------------------------------------------------------------------------------------ ternary ops

def test_where():
    c = torch.tensor([True, False, True])
    check(torch.where(c, f64([1.0, 2.0, 3.0]), f64([-1.0, -2.0, -3.0])), [1.0, -2.0, 3.0])
    check(torch.where(c, 1.0, 0.0), [1.0, 0.0, 1.0], torch.float32)
    check(torch.where(c, torch.tensor([1, 2, 3]), 0.5), [1.0, 0.5, 3.0], torch.float32)
    check(torch.where(c[:, None], torch.tensor([1, 2]), torch.tensor([7, 8])), [[1, 2], [7, 8], [1, 2]], torch.int64)
    with pytest.warns(UserWarning, match="where received a uint8 condition tensor"):    # torch 2.13: deprecated
        check(torch.where(torch.tensor([1, 0, 2], dtype=torch.uint8), f64([1.0, 2.0, 3.0]), 0.0), [1.0, 0.0, 3.0])
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, but got a tensor with "
                                           "dtype Long"):
        torch.where(torch.tensor([1, 0, 2]), f64([1.0, 2.0, 3.0]), 0.0)


def test_clamp():
    x = f64([NAN, -3.0, -1.0, 0.0, 0.5, 1.0, 4.0])
    xs = npy(x)
    check(torch.clamp(x, -1, 1), np.clip(xs, -1, 1))
    check(torch.clamp(x, min=0), np.maximum(xs, 0))
    check(torch.clamp(x, max=0.5), np.minimum(xs, 0.5))
    check(x.clip(-1, 1), np.clip(xs, -1, 1))
    check(torch.clip(x, max=0), np.minimum(xs, 0))
    check(torch.clamp(x, 2, 1), np.where(np.isnan(xs), NAN, 1.0))          # min > max: everything becomes max
    lo, hi = f64([0, 0, 0, 0, NAN, 0, 0]), f64([1, 1, 1, 1, 1, 1, NAN])
    check(torch.clamp(x, lo, hi), np.minimum(np.maximum(xs, npy(lo)), npy(hi)))   # NaN anywhere gives NaN
    check(torch.clamp(x, lo), np.maximum(xs, npy(lo)))
    check(torch.clamp(torch.tensor([1, 5, 9]), 2, 6), [2, 5, 6], torch.int64)
    check(torch.clamp(torch.tensor([1, 5]), min=0.5), [1.0, 5.0], torch.float32)       # promotes, as PyTorch
    check(torch.clamp_min(torch.tensor([1, 5]), 3), [3, 5])
    check(torch.clamp_max(x, 0.0), np.minimum(xs, 0.0))
    y = f64([-2.0, 0.5, 2.0])
    assert y.clamp_(-1, 1) is y and y.clip_(max=0.75) is y
    check(y, [-1.0, 0.5, 0.75])
    assert y.clamp_min_(0) is y and y.clamp_max_(0.6) is y
    check(y, [0.0, 0.5, 0.6])
    assert torch.clamp_(y, 0.55) is y
    check(y, [0.55, 0.55, 0.6])
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        torch.clamp(x)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch.tensor([1, 2]).clamp_(0.5)
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the broadcast shape \[3, 2\]"):
        f64([1.0, 2.0]).clamp_(torch.zeros(3, 1))


def test_lerp_addcmul_addcdiv():
    a, b, w = np.array([1.0, 2.0, -1.0]), np.array([3.0, 5.0, 1.0]), np.array([0.25, 0.75, 2.0])
    check(torch.lerp(f64(a), f64(b), f64(w)), a + w * (b - a))
    check(torch.lerp(f64(a), f64(b), 0.6), a + 0.6 * (b - a))
    check(f64(a).lerp(f64(b), 0.6), a + 0.6 * (b - a))
    y = f64(a)
    assert y.lerp_(f64(b), 0.5) is y
    check(y, (a + b) / 2)
    check(torch.addcmul(f64(a), f64(b), f64(w), value=0.5), a + 0.5 * b * w)
    check(torch.addcmul(torch.tensor([1, 2]), torch.tensor([3, 4]), torch.tensor([2, 2]), value=2), [13, 18],
          torch.int64)
    check(torch.addcdiv(f64(a), f64(b), f64(w), value=-2), a - 2 * b / w)
    check(f64(a).addcdiv(f64(b), 4.0), a + b / 4)
    y = f64(a)
    assert y.addcmul_(f64(b), f64(w)) is y and y.addcdiv_(f64(b), f64(w), value=2) is y
    check(y, a + b * w + 2 * b / w)
    for name in ("lerp", "addcdiv"):
        with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
            getattr(torch, name)(torch.tensor([1]), torch.tensor([1]), torch.tensor([1]))


# ------------------------------------------------------------------------------------------ gradients

def numeric_grads(fn, arrays, w, eps=1e-6):
    """Central differences of sum(fn(*arrays) * w) with respect to each array (float64)."""
    out = []
    for k in range(len(arrays)):
        g = np.zeros_like(arrays[k])
        for idx in np.ndindex(arrays[k].shape):
            vals = []
            for sgn in (1, -1):
                args = [a.copy() for a in arrays]
                args[k][idx] += sgn * eps
                with torch.no_grad():
                    vals.append(float((fn(*[f64(a) for a in args]) * f64(w)).sum()))
            g[idx] = (vals[0] - vals[1]) / (2 * eps)
        out.append(g)
    return out


def analytic_grads(fn, arrays, w, create_graph=False):
    ts = [f64(a).requires_grad_() for a in arrays]
    y = (fn(*ts) * f64(w)).sum()
    return ts, torch.autograd.grad(y, ts, create_graph=create_graph)


rng = np.random.default_rng(1)
M = rng.uniform(0.3, 1.7, (2, 3))                # positive, away from kinks
N = rng.uniform(-1.5, -0.2, (2, 3))
W = rng.uniform(0.5, 1.5, (2, 3))
GRAD_CASES = {
    "pow": (lambda a, b: a ** b, [M, N]),
    "rpow": (lambda a: 1.7 ** a, [N]),
    "atan2": (torch.atan2, [M, N]),
    "lerp": (torch.lerp, [M, N, M / 2]),
    "addcdiv": (lambda a, b, c: torch.addcdiv(a, b, c, value=0.3), [N, M, M + 1]),
    "addcmul": (lambda a, b, c: torch.addcmul(a, b, c, value=-2), [N, M, M]),
    "logit": (lambda a: torch.logit(a / 2, eps=0.2), [M]),
    "clamp": (torch.clamp, [M, N + 1.5, M[:, :1] + 0.2]),
    "remainder": (torch.remainder, [M * 2.5, M]),
    "fmod": (torch.fmod, [N * 3, M]),
    "hypot": (torch.hypot, [M, N]),
    "logaddexp": (torch.logaddexp, [M, N]),
    "copysign": (torch.copysign, [M, N]),
    "div": (torch.div, [N, M[:1]]),
    "erf": (torch.erf, [N]),
    "acosh": (torch.acosh, [M + 1]),
    "rsqrt": (torch.rsqrt, [M]),
    "maximum": (torch.maximum, [M, N + 1.5]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_by_finite_differences(name):
    fn, arrays = GRAD_CASES[name]
    w = W[tuple(slice(0, s) for s in np.broadcast_shapes(*[a.shape for a in arrays]))]
    _, got = analytic_grads(fn, arrays, w)
    want = numeric_grads(fn, arrays, w)
    for g, n in zip(got, want):
        np.testing.assert_allclose(npy(g), n, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["pow", "atan2", "lerp", "logaddexp", "acosh"])
def test_second_derivatives_by_finite_differences(name):
    fn, arrays = GRAD_CASES[name]
    w = W[tuple(slice(0, s) for s in np.broadcast_shapes(*[a.shape for a in arrays]))]

    def first(*args):       # the sum of squared first derivatives, as a function the differences probe
        with torch.enable_grad():
            ts, gs = analytic_grads(fn, [npy(a) for a in args], w, create_graph=True)
            return sum((g * g).sum() for g in gs)

    ts, gs = analytic_grads(fn, arrays, w, create_graph=True)
    got = torch.autograd.grad(sum((g * g).sum() for g in gs), ts)
    want = numeric_grads(first, arrays, np.ones(()), eps=1e-5)
    for g, n in zip(got, want):
        np.testing.assert_allclose(npy(g), n, rtol=1e-5, atol=1e-6)


def test_gradient_conventions():
    x = f64([-1.0, 0.0, 2.0]).requires_grad_()
    torch.relu(x).sum().backward()
    check(x.grad, [0.0, 0.0, 1.0])                                      # relu'(0) = 0
    x.grad = None
    a, b = f64([1.0, 2.0, 3.0]).requires_grad_(), f64([1.0, 1.0, 5.0]).requires_grad_()
    torch.maximum(a, b).sum().backward()
    check(a.grad, [0.5, 1.0, 0.0])                                      # ties split evenly
    check(b.grad, [0.5, 0.0, 1.0])
    a.grad = b.grad = None
    torch.where(torch.tensor([True, False, True]), a * 2, b * 3).sum().backward()
    check(a.grad, [2.0, 0.0, 2.0])                                      # the untaken branch gets zero
    check(b.grad, [0.0, 3.0, 0.0])
    a.grad = None
    torch.clamp(a, 1.0, 2.0).sum().backward()
    check(a.grad, [1.0, 1.0, 0.0])                                      # the bounds pass the gradient to x
    a.grad = None
    (torch.floor(a) + torch.round(a) + torch.sign(a)).sum().backward()
    check(a.grad, [0.0, 0.0, 0.0])                                      # differentiable, with zero gradient
    a.grad = None
    torch.pow(a * 0, f64([0.0, 1.0, 2.0])).sum().backward()
    check(a.grad, [0.0, 0.0, 0.0])                                      # d/dx 0**0 is 0, as PyTorch
    e = f64([0.0, 1.0]).requires_grad_()
    torch.pow(f64([0.0, 0.0]), e).sum().backward()
    check(e.grad, [0.0, 0.0])                                           # d/de 0**e is 0 for e >= 0
    for out in (a > 1, torch.isnan(a), torch.floor_divide(torch.tensor([3]), 2), torch.logical_not(a)):
        assert not out.requires_grad                                    # bool and integer outputs
    fd = torch.floor_divide(a, 2.0)
    assert fd.requires_grad
    fd.sum().backward()
    check(a.grad, [0.0, 0.0, 0.0])
    n = f64([NAN, 1.0, INF]).requires_grad_()
    torch.nan_to_num(n).sum().backward()
    check(n.grad, [0.0, 1.0, 0.0])


def test_inplace_autograd():
    a = f64([0.5, 1.5, 2.5]).requires_grad_()
    y = a * 1
    y.clamp_(1.0, 2.0)
    y.div_(2.0, rounding_mode=None)
    y.square_()
    y.sum().backward()
    inner = np.clip([0.5, 1.5, 2.5], 1.0, 2.0) / 2
    check(a.grad, 2 * inner / 2 * np.array([0.0, 1.0, 0.0]))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        a.clamp_(0, 1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        a.exp_()


def test_inplace_refuses_an_operand_that_overlaps_self_partially():
    """TensorIterator's memory-overlap check for in-place ops: a dense operand sharing some of self's bytes (a
    shifted slice, the transpose) raises before anything is written; the same tensor, or a layout PyTorch cannot
    judge (steps), goes through."""
    msg = "^unsupported operation: some elements of the input tensor and the written-to tensor refer to a single"
    a = torch.arange(6.0)
    for write in (lambda: a[1:].add_(a[:-1]), lambda: a[:3].mul_(a[2:5])):
        with pytest.raises(RuntimeError, match=msg):
            write()
        assert a.tolist() == [0, 1, 2, 3, 4, 5]
    x = torch.arange(4.0).reshape(2, 2)
    with pytest.raises(RuntimeError, match=msg):
        x.add_(x.t())
    assert x.add_(x).tolist() == [[0, 2], [4, 6]]
    y = torch.arange(6.0)
    y[::2].add_(y[1::2])
    assert y.tolist() == [1, 1, 5, 3, 9, 5]
    z = torch.arange(6.0)       # columns 0-1 and 1-2 of a 2x3 view: not dense, read as they were (torch's values)
    z.view(2, 3)[:, :2].add_(z.view(2, 3)[:, 1:])
    assert z.tolist() == [1, 3, 2, 7, 9, 5]


def test_numpy_scalars_on_the_left_give_tensors():
    """Tensor.__array_priority__ (PyTorch's 1000): NumPy defers to the reflected method, so a NumPy scalar is a
    Python number there (wrapped: a float32 tensor stays float32), not an ndarray of NumPy's promotion."""
    t = torch.tensor([1.0, 2.0])
    for r, want in ((np.float64(3) / t, [3.0, 1.5]), (np.float32(2) * t, [2.0, 4.0]), (np.int64(1) + t, [2.0, 3.0]),
                    (np.float64(2) ** t, [2.0, 4.0]), (np.float64(1.5) - t, [0.5, -0.5])):
        assert isinstance(r, torch.Tensor) and r.dtype == torch.float32 and r.tolist() == want
    assert (np.float64(2) < t).tolist() == [False, False] and (np.int64(7) // torch.tensor([2, 3])).tolist() == [3, 2]


def test_numpy_arrays_on_the_left_as_torch():
    """torch 2.13's C-bound reflected operators return NotImplemented for an ndarray, so NumPy's TypeError is
    raised (its own words for +); its __rtruediv__ (Python: reciprocal(t) * a) takes one, as does __eq__; the
    forward operators take the ndarray as a tensor."""
    t, a = torch.tensor([1.0, 2.0, 4.0]), np.ones(3)
    with pytest.raises(TypeError, match="^Concatenation operation is not implemented for NumPy arrays"):
        a + t
    for op, sym in ((lambda x, y: x - y, "-"), (lambda x, y: x * y, "\\*"), (lambda x, y: x ** y, "\\*\\* or pow\\(\\)"),
                    (lambda x, y: x // y, "//"), (lambda x, y: x % y, "%")):
        with pytest.raises(TypeError, match=f"^unsupported operand type\\(s\\) for {sym}: 'numpy.ndarray' and 'Tensor'$"):
            op(a, t)
    with pytest.raises(TypeError, match="^unsupported operand type\\(s\\) for &: 'numpy.ndarray' and 'Tensor'$"):
        np.ones(3, dtype=np.int64) & torch.tensor([1, 2, 3])
    assert t.__radd__(a) is NotImplemented and t.__rmatmul__(a) is NotImplemented
    r = a / t
    assert isinstance(r, torch.Tensor) and r.dtype == torch.float64 and r.tolist() == [1.0, 0.5, 0.25]
    assert (a == t).tolist() == [True, False, False]
    r = t - a
    assert isinstance(r, torch.Tensor) and r.dtype == torch.float64 and r.tolist() == [0.0, 1.0, 3.0]
    assert (2 - t).tolist() == [1.0, 0.0, -2.0] and (np.float64(2) * t).tolist() == [2.0, 4.0, 8.0]
