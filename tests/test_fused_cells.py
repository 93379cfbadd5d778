"""The fused recurrent cells (ops.yaml: _rnn_tanh_cell, _lstm_cell, _gru_cell and their backward ops): nn.RNN /
nn.LSTM / nn.GRU / RNNCell / LSTMCell / GRUCell give the gate arithmetic's values and gradients, first (one NumPy kernel) and second
(the composite formulas, grad mode on) derivatives."""
from __future__ import annotations

import numpy as np
import pytest

import reftorch as torch
from reftorch.autograd.gradcheck import gradcheck, gradgradcheck


def sig(x):
    return 1 / (1 + np.exp(-x))


def lstm_ref(x, h, c, wi, wh, bi, bh):
    for t in range(x.shape[0]):
        i, f, g, o = np.split(x[t] @ wi.T + bi + h @ wh.T + bh, 4, -1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
    return h, c


def gru_ref(x, h, wi, wh, bi, bh):
    for t in range(x.shape[0]):
        xr, xz, xn = np.split(x[t] @ wi.T + bi, 3, -1)
        hr, hz, hn = np.split(h @ wh.T + bh, 3, -1)
        r, z = sig(xr + hr), sig(xz + hz)
        n = np.tanh(xn + r * hn)
        h = (1 - z) * n + z * h
    return h


def rnn_ref(x, h, wi, wh, bi, bh):
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ wi.T + bi + h @ wh.T + bh)
    return h


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN"])
def test_sequence_module_matches_reference(mode, dtype):
    torch.manual_seed(0)
    m = getattr(torch.nn, mode)(3, 4).to(dtype)
    x = torch.randn(5, 2, 3, dtype=dtype)
    out, state = m(x)
    w = [p.detach().numpy().astype(np.float64) for p in (m.weight_ih_l0, m.weight_hh_l0, m.bias_ih_l0, m.bias_hh_l0)]
    xs, z = x.numpy().astype(np.float64), np.zeros((2, 4))
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    if mode == "LSTM":
        h, c = lstm_ref(xs, z, z, *w)
        np.testing.assert_allclose(state[0][0].detach().numpy(), h, atol=tol)
        np.testing.assert_allclose(state[1][0].detach().numpy(), c, atol=tol)
    else:
        ref = gru_ref if mode == "GRU" else rnn_ref
        np.testing.assert_allclose(state[0].detach().numpy(), ref(xs, z, *w), atol=tol)
    np.testing.assert_allclose(out[-1].detach().numpy(), (state[0] if mode == "LSTM" else state)[0].detach().numpy())
    cell = getattr(torch.nn, mode + "Cell")(3, 4).to(dtype)
    h = cell(x[0])
    h = h[0] if mode == "LSTM" else h
    assert h.grad_fn.name() == {"LSTM": "LstmCellBackward0", "GRU": "GruCellBackward0",
                                "RNN": "RnnTanhCellBackward0"}[mode]        # the fused op ran


def test_sequence_gradient_through_time_steps():
    # the steps' gradients come back stacked in one node (_TimeSteps), for the input and the weights
    torch.manual_seed(3)
    m = torch.nn.LSTM(2, 3, dtype=torch.float64)
    x = torch.randn(4, 1, 2, dtype=torch.float64, requires_grad=True)
    assert gradcheck(lambda x: m(x)[0], (x,))
    assert gradgradcheck(lambda x: m(x)[0], (x,))


def test_lstm_cell_first_and_second_derivatives():
    torch.manual_seed(1)
    cell = torch.nn.LSTMCell(3, 2).double()
    x, h, c = (torch.randn(2, n, dtype=torch.float64, requires_grad=True) for n in (3, 2, 2))
    assert gradcheck(lambda x, h, c: cell(x, (h, c)), (x, h, c))
    assert gradgradcheck(lambda x, h, c: cell(x, (h, c)), (x, h, c))
    assert gradcheck(lambda x, h, c: cell(x, (h, c))[0], (x, h, c))     # c' unused: its gradient is zero


def test_gru_cell_first_and_second_derivatives():
    torch.manual_seed(2)
    cell = torch.nn.GRUCell(3, 2).double()
    x, h = (torch.randn(2, n, dtype=torch.float64, requires_grad=True) for n in (3, 2))
    assert gradcheck(lambda x, h: cell(x, h), (x, h))
    assert gradgradcheck(lambda x, h: cell(x, h), (x, h))


def test_rnn_cell_first_and_second_derivatives():
    torch.manual_seed(4)
    cell = torch.nn.RNNCell(3, 2).double()
    x, h = (torch.randn(2, n, dtype=torch.float64, requires_grad=True) for n in (3, 2))
    assert gradcheck(lambda x, h: cell(x, h), (x, h))
    assert gradgradcheck(lambda x, h: cell(x, h), (x, h))


def test_saturated_gates_stay_finite():
    # exp(-x) overflows for very negative gates: sigmoid is 0 there, and no warning escapes
    cell = torch.nn.LSTMCell(1, 1)
    with torch.no_grad():
        cell.weight_ih.fill_(1000.0)
    x = torch.tensor([[-1.0], [1.0]], requires_grad=True)
    h, c = cell(x)
    (h.sum() + c.sum()).backward()
    assert np.isfinite(h.detach().numpy()).all() and np.isfinite(x.grad.numpy()).all()


def test_a_cell_with_only_its_second_input_requiring_grad():
    # the two inputs share one gradient formula, computed once: the second alone still gets it (through the
    # first input's fused kernel, the one generated)
    rng = np.random.default_rng(5)
    x = torch.tensor(rng.standard_normal((3, 4)))
    h = torch.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    torch._functional._rnn_tanh_cell(x, h).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), 1 - np.tanh(x.numpy() + h.detach().numpy()) ** 2, rtol=1e-12)
    xg = torch.tensor(rng.standard_normal((3, 16)))
    hg = torch.tensor(rng.standard_normal((3, 16)), requires_grad=True)
    c = torch.tensor(rng.standard_normal((3, 4)))
    hn, cn = torch._functional._lstm_cell(xg, hg, c)
    (hn.sum() + cn.sum()).backward()
    hg2 = hg.detach().clone().requires_grad_()
    hn2, cn2 = torch._functional._lstm_cell(xg.clone().requires_grad_(), hg2, c)
    (hn2.sum() + cn2.sum()).backward()
    np.testing.assert_allclose(hg.grad.numpy(), hg2.grad.numpy(), rtol=1e-12)
