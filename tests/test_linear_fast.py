"""nn.functional.linear through the one-op _linear (ops.yaml): values, gradcheck and gradgradcheck for 1-D, 2-D
and batched inputs, with and without bias; the weight's gradient keeps the weight's layout."""
import numpy as np
import pytest

import reftorch as torch
import reftorch.nn.functional as F
from reftorch.autograd import gradcheck, gradgradcheck


@pytest.mark.parametrize("in_shape", [(3,), (4, 3), (2, 2, 3)])
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_values_and_grads(in_shape, with_bias):
    rng = np.random.default_rng(0)
    xn, wn, bn = rng.standard_normal(in_shape), rng.standard_normal((5, 3)), rng.standard_normal(5)
    x, w = torch.tensor(xn, requires_grad=True), torch.tensor(wn, requires_grad=True)
    b = torch.tensor(bn, requires_grad=True) if with_bias else None
    out = F.linear(x, w, b)
    np.testing.assert_allclose(out.detach().numpy(), xn @ wn.T + (bn if with_bias else 0), rtol=1e-12)
    args = (x, w, b) if with_bias else (x, w)
    assert gradcheck(lambda *a: F.linear(*a), args)
    assert gradgradcheck(lambda *a: F.linear(*a), args)


def test_linear_weight_grad_layout_and_float32():
    x = torch.randn(8, 6)
    lin = torch.nn.Linear(6, 4)
    lin(x).sum().backward()
    assert lin.weight.grad.is_contiguous() and lin.weight.grad.stride() == lin.weight.stride()
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.tile(x.numpy().sum(0), (4, 1)), rtol=1e-5)
    np.testing.assert_allclose(lin.bias.grad.numpy(), np.full(4, 8.0), rtol=1e-6)


def test_matmul_with_a_transposed_operand_gives_its_gradient_in_its_layout():
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    (x @ w.t()).sum().backward()
    assert w.grad.is_contiguous()
    np.testing.assert_allclose(w.grad.numpy(), np.tile(x.detach().numpy().sum(0), (5, 1)), rtol=1e-12)
    v = w.detach().clone().requires_grad_()
    assert gradcheck(lambda a, b: a @ b.t(), (x, w)) and gradgradcheck(lambda a, b: a @ b.t(), (x, w))
    assert gradcheck(lambda a, b: a.t() @ b, (w, v)) and gradgradcheck(lambda a, b: a.t() @ b, (w, v))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_linear_in_16_bits_is_one_op_rounded_once(dtype):
    # as torch's addmm: the float32 product plus bias, rounded once (three rounded ops differ in the last bits)
    dt = getattr(torch, dtype)
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.standard_normal((4, 8, 16)).astype(np.float32)).to(dt).requires_grad_()
    w = torch.tensor(rng.standard_normal((5, 16)).astype(np.float32)).to(dt).requires_grad_()
    b = torch.tensor(rng.standard_normal(5).astype(np.float32)).to(dt).requires_grad_()
    out = F.linear(x, w, b)
    assert out.dtype is dt and out.grad_fn.name() == "ViewBackward0"
    exact = x.detach().float().numpy() @ w.detach().float().numpy().T + b.detach().float().numpy()
    np.testing.assert_array_equal(out.detach().float().numpy(), torch.from_numpy(exact.astype(np.float32)).to(dt).float().numpy())
    out.float().sum().backward()
    assert x.grad.dtype is dt and w.grad.dtype is dt and b.grad.dtype is dt
    np.testing.assert_array_equal(b.grad.float().numpy(), np.full(5, 32.0, np.float32))


@pytest.mark.parametrize("other", ["transposed", "large", "small"])
@pytest.mark.parametrize("stack", [(3, 4), (2, 0), (2, 3, 5)])
def test_stack_times_matrix_folded_or_not_gives_numpys_values(other, stack):
    # matmul folds a stack of rows into one 2-D product against a transposed or large matrix (ops.yaml's body):
    # the values are NumPy's stacked product's, empty stacks and non-contiguous stacks included
    rng = np.random.default_rng(1)
    k, n = (8, 6) if other != "large" else (256, 160)
    bn = rng.standard_normal((n, k)).astype(np.float32).T if other == "transposed" else \
        rng.standard_normal((k, n)).astype(np.float32)
    an = rng.standard_normal(stack + (k,)).astype(np.float32)
    a, b = torch.from_numpy(an), torch.from_numpy(bn)
    for lhs, ref in ((a, an), (a.transpose(0, 1), an.swapaxes(0, 1))):
        out = lhs @ b
        assert out.shape == ref.shape[:-1] + (n,)
        np.testing.assert_allclose(out.numpy(), np.matmul(ref, bn), rtol=1e-5, atol=1e-5)
    w = torch.from_numpy(np.ascontiguousarray(bn.T))
    np.testing.assert_allclose(F.linear(a, w).numpy(), np.matmul(an, bn), rtol=1e-5, atol=1e-5)
