"""Gradients of the ops of branch ops-math where PyTorch makes a choice gradcheck cannot see (which element of a
tie gets the gradient, NaN masking), checked against torch 2.13."""
import numpy as np
import pytest

import reftorch as torch

X = [3., 1., 2., 1., 1.]
THIRD = 1 / 3

CASES = [   # (function of x, x, torch 2.13's x.grad)
    (lambda x: torch.median(x), X, [0, THIRD, 0, THIRD, THIRD]),
    (lambda x: torch.median(x, 0).values, X, [0, 0, 0, 0, 1]),
    (lambda x: torch.kthvalue(x, 3).values, X, [0, 1, 0, 0, 0]),
    (lambda x: torch.mode(x).values, X, [0, 0, 0, 0, 1]),
    (lambda x: torch.quantile(x, 0.3), X, [0, 0, 0, 0.8, 0.2]),
    (lambda x: torch.nanmedian(x), X, [0, THIRD, 0, THIRD, THIRD]),
    (lambda x: torch.nansum(x), [1., float("nan"), 2.], [1, 0, 1]),
    (lambda x: torch.nanmean(x), [1., float("nan"), 2.], [0.5, 0, 0.5]),
    (lambda x: torch.frexp(x).mantissa.sum(), [0.75, 3.0], [1.0, 0.25]),
    (lambda x: torch.nextafter(x, torch.tensor(5.)).sum(), [0.75, 3.0], [1.0, 1.0]),
    (lambda x: torch.renorm(x, 2, 0, 3).sum(), [[1., 2.], [3., 4.]], [[1.0, 1.0], [0.096, -0.072]]),
    (lambda x: torch.cov(x).sum(), [[1., 2.], [3., 4.]], [[-2.0, 2.0], [-2.0, 2.0]]),
    (lambda x: torch.aminmax(x).min, [[1., 2.], [3., 4.]], [[1.0, 0.0], [0.0, 0.0]]),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_gradient_matches_torch(i):
    f, data, expected = CASES[i]
    x = torch.tensor(data, requires_grad=True)
    f(x).backward()
    np.testing.assert_allclose(np.asarray(x.grad.tolist()), np.asarray(expected), atol=1e-5)


def test_heaviside_has_no_gradient_like_torch():
    x = torch.tensor([1., 0.], requires_grad=True)
    assert not torch.heaviside(x.detach(), torch.tensor(0.5)).requires_grad
