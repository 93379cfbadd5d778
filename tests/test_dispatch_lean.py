"""The dispatcher's lean elementwise paths (reftorch/_dispatch.py call -> _elementwise.py plan.run) keep state between calls:
per-op plans, kernel entry points, the floats of scalar arguments seen before, the 1-element tensors of Python
numbers. These tests call the same op repeatedly with arguments that must not share that state (signed
zeros, NaN, bool/int/float scalars, views with offsets and strides) and compare each result with NumPy."""
import numpy as np
import pytest

import reftorch as torch
from reftorch._spec import SPECS


def _same(t, expected):
    got = t.numpy()
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))     # -0.0 is not 0.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_alpha_values_do_not_share_cached_floats(dtype):
    a_np = np.array([-0.0, 1.0, -2.5], dtype)
    b_np = np.array([1.0, -0.0, 4.0], dtype)
    a, b = torch.tensor(a_np), torch.tensor(b_np)
    for alpha in (1, 1.0, 2, 0.0, -0.0, 0, -0.0, 0.0, float("nan"), float("inf"), -3, 1):
        with np.errstate(invalid="ignore"):
            expected = (a_np + dtype(alpha) * b_np).astype(dtype)
        _same(torch.add(a, b, alpha=alpha), expected)
        with np.errstate(invalid="ignore"):
            expected = (a_np - dtype(alpha) * b_np).astype(dtype)
        _same(torch.sub(a, b, alpha=alpha), expected)
    for alpha in (True, False):     # True == 1, but PyTorch refuses a bool alpha for a float result
        with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
            torch.add(a, b, alpha=alpha)


def test_integer_alpha_rules_survive_a_warm_float_plan():
    f = torch.tensor([1.0, 2.0])
    for _ in range(3):
        torch.add(f, f, alpha=2)
    i = torch.tensor([1, 2])
    _same(torch.add(i, i, alpha=3), np.array([4, 8]))
    with pytest.raises(RuntimeError, match="alpha"):
        torch.add(i, i, alpha=1.5)
    _same(torch.add(f, f, alpha=1.5), np.array([2.5, 5.0], np.float32))
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not be a floating"):
        torch.sub(i, i, alpha=0.5)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results"):
        torch.add(i, i, alpha=True)
    m = torch.tensor([True, False])
    _same(torch.add(m, m, alpha=2), np.array([True, False]))       # alpha becomes bool for a bool result
    _same(torch.add(m, ~m, alpha=True), np.array([True, True]))
    _same(torch.add(i, 2.5, alpha=2), np.array([6.0, 7.0], np.float32))   # the result is float: any alpha


@pytest.mark.parametrize("alpha", [1j, np.complex128(1j), torch.tensor(1j)])
def test_complex_alpha_only_for_a_complex_result(alpha):
    # torch 2.13's alpha_check: a complex alpha is not integral (so an integral or bool result calls it a floating
    # point number) and not allowed for a floating result; it is refused before the kernel converts it with float()
    f, i, m = torch.ones(3), torch.ones(3, dtype=torch.int64), torch.ones(3, dtype=torch.bool)
    for x in (i, m):
        with pytest.raises(RuntimeError, match="^For integral input tensors, argument alpha must not be a floating "
                                               "point number.$"):
            torch.add(x, x, alpha=alpha)
    with pytest.raises(RuntimeError, match="^For integral input tensors, argument alpha must not be a floating"):
        torch.sub(i, i, alpha=alpha)
    for call in (lambda: torch.add(f, f, alpha=alpha), lambda: torch.sub(f, 2, alpha=alpha),
                 lambda: f.clone().add_(f, alpha=alpha)):
        with pytest.raises(RuntimeError, match="^For non-complex input tensors, argument alpha must not be a complex "
                                               "number.$"):
            call()
    c = torch.ones(3, dtype=torch.complex64)
    for got in (torch.add(c, c, alpha=alpha), torch.add(f, c, alpha=alpha)):     # a complex result: taken
        assert got.dtype == torch.complex64
        np.testing.assert_array_equal(got.numpy(), np.full(3, 1 + 1j, np.complex64))


def test_complex_value_into_a_real_kernel_needs_no_imaginary_part():
    # addcmul's value is converted to the result dtype by PyTorch's checked conversion (no alpha_check)
    f, i = torch.ones(3), torch.ones(3, dtype=torch.int32)
    _same(torch.addcmul(f, f, f, value=2 + 0j), np.full(3, 3, np.float32))
    _same(torch.addcmul(i, i, i, value=2 + 0j), np.full(3, 3, np.int32))
    with pytest.raises(RuntimeError, match="^value cannot be converted to type float without overflow$"):
        torch.addcmul(f, f, f, value=1j)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type float without overflow$"):
        torch.addcdiv(f, f, f, value=1j)
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int without overflow$"):
        torch.addcmul(i, i, i, value=1j)


def test_views_after_a_warm_contiguous_plan():
    base_np = np.arange(12, dtype=np.float32)
    base = torch.tensor(base_np)
    a, b = base[:4], torch.ones(4)
    for _ in range(3):
        _same(a + b, base_np[:4] + 1)
    _same(base[4:8] + b, base_np[4:8] + 1)             # same shape, an offset into the storage
    _same(base[::3] + b, base_np[::3] + 1)             # same shape, a stride
    m_np = base_np.reshape(3, 4)
    m = base.view(3, 4)
    _same(m.T + m.T, m_np.T + m_np.T)
    _same(m[1:] * m[:2], m_np[1:] * m_np[:2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_python_numbers_with_views_and_signed_zeros(dtype):
    base_np = np.array([3, -0.0, 2, 5, -7, 1], dtype)
    base = torch.tensor(base_np)
    x_np, x = base_np[1:5], base[1:5]
    for k in (2, 2, 3, True, False, 2.5, 0.0, -0.0, 0.0, -1):
        rdt = np.float32 if isinstance(k, float) and dtype == np.int64 else dtype     # a float number: float32
        want = x_np.astype(rdt) * rdt(k)
        _same(x * k, want)
        _same(k * x, want)
    _same(base[::2] * 2, base_np[::2] * 2)


def test_grad_recorded_only_when_enabled():
    r = torch.ones(3, requires_grad=True)
    b = torch.full((3,), 2.0)
    for _ in range(3):
        y = r + b
    assert y.requires_grad and y.grad_fn is not None
    (y * 3).sum().backward()
    np.testing.assert_array_equal(r.grad.numpy(), np.full(3, 3.0, np.float32))
    with torch.no_grad():
        z = r + b
        w = r * 2
    assert not z.requires_grad and z.grad_fn is None and not w.requires_grad


@pytest.mark.parametrize("n", [1, 7, 256, 257])
def test_number_operands_at_sizes_around_the_dense_limit(n):
    x_np = np.linspace(-2, 2, n).astype(np.float32)
    x = torch.tensor(x_np)
    for k in (2, 3, 2, 0.5, 0.0, -0.0, float("nan"), float("-inf"), 2):
        with np.errstate(invalid="ignore"):
            _same(x * k, x_np * np.float32(k))
            _same(k - x, np.float32(k) - x_np)
            _same(torch.where(x > 0, x, k), np.where(x_np > 0, x_np, np.float32(k)))
    r = torch.tensor(x_np, requires_grad=True)
    for _ in range(2):
        r.grad = None
        y = (3 * r - 1) * 2.5
        y.sum().backward()
        np.testing.assert_array_equal(r.grad.numpy(), np.full(n, 7.5, np.float32))
    assert y.grad_fn is not None


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_python_numbers_beside_large_dense_views(dtype):
    # above DENSE_NUMBERS elements a Python number is broadcast by stride 0 into the flat loop, from any offset
    base_np = np.arange(1203, dtype=dtype) - 600
    base = torch.tensor(base_np)
    for k in (3, 3, -0.0, 2.5):
        rdt = np.float32 if isinstance(k, float) and dtype == np.int64 else dtype
        _same(base[3:1203] * k, base_np[3:1203].astype(rdt) * rdt(k))
        _same(k - base[1:1201], rdt(k) - base_np[1:1201].astype(rdt))
        _same(torch.add(base[2:1202], k, alpha=2), base_np[2:1202].astype(rdt) + rdt(2) * rdt(k))


def test_half_signatures_remember_their_general_path():
    a = torch.tensor(np.array([1.5, -2.0, 0.25], np.float16))
    for _ in range(3):      # the first call marks the signature; later ones go straight to the general path
        _same(a * 2, np.array([3.0, -4.0, 0.5], np.float16))
        _same(a + a, np.array([3.0, -4.0, 0.5], np.float16))
    spec = SPECS["mul"]
    spec._kernel_cache["contig"] = spec.kernel("contig")    # replacing a kernel drops the plans' entry points
    _same(a * 2, np.array([3.0, -4.0, 0.5], np.float16))
    _same(torch.ones(2) * 2, np.array([2.0, 2.0], np.float32))
