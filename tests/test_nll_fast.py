"""nll_loss / cross_entropy through the one-op _nll_loss (ops.yaml): values against NumPy, gradcheck and
gradgradcheck over weights, ignore_index, reductions, K-dimensional targets and label smoothing."""
import numpy as np
import pytest

import reftorch as torch
import reftorch.nn.functional as F
from reftorch.autograd import gradcheck, gradgradcheck


def _np_nll(x, t, w, ignore, reduction):
    valid = t != ignore
    safe = np.where(valid, t, 0)
    picked = np.take_along_axis(x, np.expand_dims(safe, 1), 1).squeeze(1)
    ww = valid * (1.0 if w is None else w[safe])
    loss = -picked * ww
    return {"none": loss, "sum": loss.sum(), "mean": loss.sum() / ww.sum()}[reduction]


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2)])
def test_nll_loss_values_and_grads(reduction, weighted, shape):
    rng = np.random.default_rng(1)
    xn = rng.standard_normal(shape)
    tn = rng.integers(0, 4, (shape[0],) + shape[2:])
    tn.flat[0] = 2
    tn.flat[1] = 1                                           # ignored
    wn = rng.random(4) + 0.5 if weighted else None
    x = torch.tensor(xn, requires_grad=True)
    t = torch.tensor(tn)
    w = torch.tensor(wn) if weighted else None
    out = F.nll_loss(x, t, w, ignore_index=1, reduction=reduction)
    np.testing.assert_allclose(out.detach().numpy(), _np_nll(xn, tn, wn, 1, reduction), rtol=1e-12)
    assert gradcheck(lambda a: F.nll_loss(a, t, w, ignore_index=1, reduction=reduction), (x,))
    assert gradgradcheck(lambda a: F.cross_entropy(a, t, w, ignore_index=1, reduction=reduction,
                                                   label_smoothing=0.1), (x,))


def test_nll_loss_float32_and_errors():
    x = torch.randn(6, 3).log_softmax(1)
    t = torch.tensor([0, 1, 2, 0, 1, 2])
    assert F.nll_loss(x, t).dtype == torch.float32
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        F.nll_loss(x, torch.tensor([0, 1, 3, 0, 1, 2]))
    assert F.nll_loss(torch.randn(3), torch.tensor(1)).shape == ()
    assert F.nll_loss(torch.randn(3), torch.tensor(1), reduction="none").shape == ()
    assert torch.isnan(F.nll_loss(x, torch.full((6,), -100)))
