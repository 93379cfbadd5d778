"""nn.functional.layer_norm as one op on cpu float tensors (ops.yaml: _layer_norm): values, the three
gradients, second derivatives (the composite backward under grad mode), and the op-by-op path it leaves to
16-bit inputs."""
from __future__ import annotations

import numpy as np
import pytest

import reftorch as torch
from reftorch.autograd.gradcheck import gradcheck, gradgradcheck


def ref(x, ns, w, b, eps):
    axes = tuple(range(x.ndim - len(ns), x.ndim))
    xc = x - x.mean(axes, keepdims=True)
    y = xc / np.sqrt((xc * xc).mean(axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@pytest.mark.parametrize("shape,ns,affine", [((4, 6, 8), (8,), True), ((3, 5, 4), (5, 4), True),
                                             ((7, 8), (8,), False), ((5,), (5,), True)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values_and_gradients(shape, ns, affine, dtype):
    rng = np.random.default_rng(0)
    npdt = np.float32 if dtype == torch.float32 else np.float64
    x, w, b = (rng.standard_normal(s).astype(npdt) for s in (shape, ns, ns))
    xt = torch.from_numpy(x.copy()).requires_grad_()
    wt, bt = (torch.from_numpy(a.copy()).requires_grad_() if affine else None for a in (w, b))
    out = torch.nn.functional.layer_norm(xt, ns, wt, bt, 1e-5)
    assert out.dtype == dtype and tuple(out.shape) == shape
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    np.testing.assert_allclose(out.detach().numpy(), ref(x.astype(np.float64), ns, w if affine else None,
                                                           b if affine else None, 1e-5), atol=tol)
    out.sum().backward()
    if affine:
        np.testing.assert_allclose(bt.grad.numpy(), np.prod(shape) / np.prod(ns) * np.ones(ns), atol=tol)
        xhat = ref(x.astype(np.float64), ns, None, None, 1e-5)
        np.testing.assert_allclose(wt.grad.numpy(), xhat.reshape((-1,) + ns).sum(0), atol=tol * 10)
    else:       # without weight, the sum of a normalised row does not depend on the input
        np.testing.assert_allclose(xt.grad.numpy(), 0, atol=tol * 10)


def test_second_derivatives():
    torch.manual_seed(0)
    x, w, b = torch.randn(3, 4, dtype=torch.float64), torch.randn(4, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    args = tuple(t.requires_grad_() for t in (x, w, b))
    fn = lambda x, w, b: torch.nn.functional.layer_norm(x, (4,), w, b)     # noqa: E731
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


def test_bfloat16_takes_the_op_by_op_path():
    x = torch.randn(2, 8).to(torch.bfloat16)
    out = torch.nn.functional.layer_norm(x, (8,))
    assert out.dtype == torch.bfloat16
    np.testing.assert_allclose(out.float().numpy(), ref(x.float().numpy().astype(np.float64), (8,), None, None, 1e-5),
                               atol=0.05)


@pytest.mark.parametrize("case", ["transposed", "offset rows", "one element", "empty batch"])
def test_row_kernel_layouts_and_hard_rows(case):
    # the float32/float64 row kernels (codegen/templates/rows.py): a non-contiguous input, rows far from zero
    # (two passes: no cancellation), rows of one element (exact zeros), and no rows at all
    rng = np.random.default_rng(3)
    x = {"transposed": rng.standard_normal((6, 5)).T, "offset rows": 1e4 + rng.standard_normal((4, 33)) * 1e-2,
         "one element": rng.standard_normal((3, 1)), "empty batch": np.zeros((0, 7))}[case]
    w, b = rng.standard_normal(x.shape[-1]), rng.standard_normal(x.shape[-1])
    xt = torch.from_numpy(x).requires_grad_()
    out = torch.nn.functional.layer_norm(xt, x.shape[-1:], torch.from_numpy(w), torch.from_numpy(b), 1e-5)
    np.testing.assert_allclose(out.detach().numpy(), ref(x, x.shape[-1:], w, b, 1e-5), rtol=1e-9, atol=1e-9)
    g = rng.standard_normal(x.shape)
    out.backward(torch.from_numpy(g))
    xs = x - x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt((xs * xs).mean(-1, keepdims=True) + 1e-5)
    gw = g * w
    want = rstd * (gw - gw.mean(-1, keepdims=True) - xs * rstd * (gw * xs * rstd).mean(-1, keepdims=True))
    np.testing.assert_allclose(xt.grad.numpy(), want, rtol=1e-7, atol=1e-9)
