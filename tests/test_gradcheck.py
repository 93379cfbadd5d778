"""gradcheck, gradgradcheck and reftorch.testing.assert_close: what they accept, what they catch, their words."""
from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import reftorch as torch
from reftorch.autograd import Function, gradcheck, gradgradcheck
from reftorch.autograd import gradcheck as gradcheck_fn
from reftorch.autograd.gradcheck import GradcheckError
from reftorch.testing import assert_close


def leaf(values, dtype=torch.float64):
    return torch.tensor(values, dtype=dtype, requires_grad=True)


class WrongBackward(Function):
    """x * x with a backward off by a factor 2 (grad * x instead of 2 * grad * x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x


class DetachedBackward(Function):
    """x ** 3 whose backward is right but not differentiable: it reads x detached."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x.detach() * x.detach()


def test_correct_gradients_pass():
    x, y = leaf([[0.5, -1.5], [2.0, 0.25]]), leaf([1.0, -2.0])
    assert gradcheck(lambda a, b: torch.tanh(a) * b + a.sum(), (x, y))
    assert gradgradcheck(lambda a, b: torch.tanh(a) * b, (x, y))
    assert gradcheck(lambda a: (a * 2, a > 0), (x,))                 # bool outputs are not differentiated
    assert gradcheck(lambda a: torch.exp(a), (x,), fast_mode=True)
    assert gradgradcheck(lambda a: torch.exp(a), (x,), fast_mode=True)
    assert gradcheck_fn is torch.testing.gradcheck


def test_wrong_backward_is_caught():
    x = leaf([0.5, -1.5, 2.0])
    with pytest.raises(GradcheckError, match=r"Jacobian mismatch for output 0 with respect to input 0,\nnumerical:"):
        gradcheck(WrongBackward.apply, (x,))
    assert gradcheck(WrongBackward.apply, (x,), raise_exception=False) is False
    with pytest.raises(GradcheckError, match="fast mode"):
        gradcheck(WrongBackward.apply, (x,), fast_mode=True)
    assert isinstance(GradcheckError("x"), RuntimeError)


def test_gradgradcheck_catches_a_backward_that_is_not_differentiable():
    x = leaf([0.5, -1.5, 2.0])
    assert gradcheck(DetachedBackward.apply, (x,))
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(DetachedBackward.apply, (x,))


def test_large_outputs_are_checked_through_random_projections(monkeypatch):
    module = sys.modules["reftorch.autograd.gradcheck"]     # (reftorch.autograd.gradcheck is the function)
    monkeypatch.setattr(module, "PROJECTION_THRESHOLD", 2)
    x = leaf([0.5, -1.5, 2.0, 0.75])
    assert gradcheck(lambda a: torch.sin(a) * a, (x,))
    with pytest.raises(GradcheckError, match="random vector"):
        gradcheck(WrongBackward.apply, (x,))


def test_input_errors_and_warnings():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda a: a * 2, (torch.tensor([1.0], dtype=torch.float64),))
    with pytest.warns(UserWarning, match="not a double precision floating point"):
        gradcheck(lambda a: a * 2, (leaf([1.0, 2.0], torch.float32),), eps=1e-2, atol=1e-2, rtol=1e-2)
    expanded = torch.tensor([1.0], dtype=torch.float64).expand(3).requires_grad_(True)
    with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
        gradcheck(lambda a: a * 2, (expanded,))


def test_non_contiguous_inputs_and_integer_arguments():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64).t().requires_grad_(True)
    assert not x.is_contiguous()
    assert gradcheck(lambda a, k: torch.sum(a * a, k), (x, 1))
    assert gradgradcheck(lambda a, k: torch.sum(a * a * a, k), (x, 0))


# ---------------------------------------------------------------------------------- assert_close

def message(actual, expected, **kw):
    with pytest.raises(Exception) as info:
        assert_close(actual, expected, **kw)
    return type(info.value), str(info.value)


def test_assert_close_passes_within_default_tolerances():
    assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-6]))
    assert_close(torch.tensor([1.0], dtype=torch.float64), torch.tensor([1.0 + 1e-8], dtype=torch.float64))
    assert_close(torch.tensor([float("nan")]), torch.tensor([float("nan")]), equal_nan=True)
    assert_close([torch.tensor([1, 2]), 3.0, None], (torch.tensor([1, 2]), 3.0, None))
    assert_close({"a": torch.tensor(1.0)}, {"a": torch.tensor(1.0)})
    assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.0]))
    assert_close(math.sqrt(2) ** 2, 2.0)


def test_assert_close_messages():
    kind, msg = message(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.5, 3.0]))
    assert kind is AssertionError
    assert msg == ("Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
                   "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
                   "Greatest relative difference: 0.2 at index (1,) (up to 1.3e-06 allowed)")
    kind, msg = message(torch.tensor([1, 2]), torch.tensor([1, 4]))
    assert msg.startswith("Tensor-likes are not equal!") and "Greatest absolute difference: 2 at index (1,)\n" in msg
    kind, msg = message(torch.tensor(1.0), torch.tensor(2.0))
    assert msg.startswith("Scalars are not close!\n\nExpected 2.0 but got 1.0.\nAbsolute difference: 1.0")
    kind, msg = message(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64))
    assert msg == "The values for attribute 'dtype' do not match: torch.float32 != torch.float64."
    kind, msg = message(torch.zeros(2), torch.zeros(3))
    assert msg == "The values for attribute 'shape' do not match: torch.Size([2]) != torch.Size([3])."
    kind, msg = message([torch.zeros(1), torch.zeros(1)], [torch.zeros(1), torch.ones(1)])
    assert msg.endswith("The failure occurred for item [1]")
    kind, msg = message(torch.zeros(1), torch.zeros(1), rtol=1e-3)
    assert kind is ValueError and "Both 'rtol' and 'atol' must be either specified or omitted, but got no atol." in msg
    kind, msg = message(torch.zeros(1), 0.0)
    assert kind is TypeError and "No comparison pair was able to handle inputs of type" in msg
    kind, msg = message(1, 1.0)
    assert msg == "The (d)types do not match: <class 'int'> != <class 'float'>."
    kind, msg = message(torch.tensor([1.0]), torch.tensor([2.0]), msg="custom")
    assert msg == "custom"
    kind, msg = message(torch.tensor([float("nan")]), torch.tensor([float("nan")]))
    assert "not close" in msg


def test_assert_close_explicit_tolerances_and_dtype_check():
    assert_close(torch.tensor([1.0]), torch.tensor([1.1]), rtol=0.0, atol=0.2)
    assert_close(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64), check_dtype=False)
    with pytest.raises(AssertionError, match="not equal"):
        assert_close(torch.tensor([1.0]), torch.tensor([1.0 + 1e-6]), rtol=0, atol=0)
