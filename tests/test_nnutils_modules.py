"""AdaptiveLogSoftmaxWithLoss (and other nn modules of issue 22) against values checked with torch 2.13."""
import numpy as np
import pytest

import reftorch as torch
from reftorch import nn

_REPR = """AdaptiveLogSoftmaxWithLoss(
  (head): Linear(in_features=8, out_features=5, bias=False)
  (tail): ModuleList(
    (0): Sequential(
      (0): Linear(in_features=8, out_features=4, bias=False)
      (1): Linear(in_features=4, out_features=3, bias=False)
    )
    (1): Sequential(
      (0): Linear(in_features=8, out_features=2, bias=False)
      (1): Linear(in_features=2, out_features=4, bias=False)
    )
  )
)"""


def _asm():
    rng = np.random.RandomState(0)
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0)
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.tensor(rng.uniform(-1, 1, tuple(p.shape)).astype(np.float32)))
    x = torch.tensor(rng.randn(5, 8).astype(np.float32)).requires_grad_(True)
    return m, x


def test_adaptive_log_softmax_structure():
    m, _ = _asm()
    assert repr(m) == _REPR
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == [
        ("head.weight", (5, 8)), ("tail.0.0.weight", (4, 8)), ("tail.0.1.weight", (3, 4)),
        ("tail.1.0.weight", (2, 8)), ("tail.1.1.weight", (4, 2))]


def test_adaptive_log_softmax_forward_backward_log_prob_predict():
    m, x = _asm()
    out, loss = m(x, torch.tensor([0, 4, 9, 2, 7]))
    loss.backward()
    np.testing.assert_allclose(out.detach().numpy(), [-1.6199, -2.9457, -3.2564, -2.9514, -5.3737], atol=1e-4)
    np.testing.assert_allclose(float(loss.detach()), 3.2294, atol=1e-4)
    np.testing.assert_allclose(x.grad.numpy().sum(1), [-0.1308, 0.2992, -0.0861, -0.4101, 0.4928], atol=1e-4)
    np.testing.assert_allclose(float(m.tail[1][0].weight.grad.sum()), -0.6256, atol=1e-4)
    lp = m.log_prob(x).detach().numpy()
    np.testing.assert_allclose(lp[:, [0, 5, 9]], [[-1.6199, -6.7462, -3.061], [-3.0805, -3.8327, -2.7048],
                                                  [-3.6673, -1.8929, -3.2564], [-2.158, -7.5567, -2.4547],
                                                  [-1.9877, -6.6381, -5.1155]], atol=1e-4)
    np.testing.assert_allclose(np.exp(lp).sum(1), np.ones(5), atol=1e-5)
    assert m.predict(x).tolist() == [6, 8, 8, 8, 1]
    assert m.predict(x[1:2]).tolist() == [8] and m.predict(x[:1]).tolist() == [6]
    o1 = m(x[0], torch.tensor(0))
    assert tuple(o1.output.shape) == () and abs(float(o1.loss.detach()) - 1.6199) < 1e-4


def test_adaptive_log_softmax_errors():
    msg = ("^cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where each "
           "value is between 1 and n_classes-1$")
    with pytest.raises(ValueError, match="^cutoffs should be a sequence of length larger than 0$"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [])
    for bad in ([3, 3], [0, 4], [4, 10]):
        with pytest.raises(ValueError, match=msg):
            nn.AdaptiveLogSoftmaxWithLoss(8, 10, bad)
    m, x = _asm()
    with pytest.raises(RuntimeError, match=r"^Target values should be in \[0, 9\], but values in range \[0, 12\] "
                                           r"were found. $"):
        m(x, torch.tensor([0, 4, 12, 2, 7]))
    with pytest.raises(RuntimeError, match="^0D or 1D target tensor expected, multi-target not supported$"):
        m(x, torch.tensor([[0]]))
    with pytest.raises(RuntimeError, match="^Input and target should have the same size in the batch dimension.$"):
        m(x, torch.tensor([0, 1]))
