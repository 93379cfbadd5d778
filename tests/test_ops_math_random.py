"""The random fillers and samplers of reftorch/_random.py: reproducible under manual_seed, the right
distributions (sample moments of a few thousand draws, bounds generous enough never to flake), dtypes,
shapes, in-place semantics and torch 2.13's errors."""
import math

import numpy as np
import pytest

import reftorch as torch

N = 4000


def draws(fill, dtype=torch.float64):
    torch.manual_seed(3)
    a = fill(torch.empty(N, dtype=dtype)).numpy().astype(np.float64)
    torch.manual_seed(3)
    b = fill(torch.empty(N, dtype=dtype)).numpy().astype(np.float64)
    np.testing.assert_array_equal(a, b)         # the same seed replays the same draws
    return a


@pytest.mark.parametrize("fill, mean, var", [
    (lambda t: t.uniform_(-2, 4), 1.0, 3.0),
    (lambda t: t.normal_(1.5, 2.0), 1.5, 4.0),
    (lambda t: t.exponential_(2.0), 0.5, 0.25),
    (lambda t: t.log_normal_(0.0, 0.5), math.exp(0.125), (math.exp(0.25) - 1) * math.exp(0.25)),
    (lambda t: t.geometric_(0.25), 4.0, 12.0),
    (lambda t: t.bernoulli_(0.3), 0.3, 0.21),
    (lambda t: t.random_(3, 9), 5.5, 35 / 12),
])
def test_moments(fill, mean, var):
    x = draws(fill)
    assert abs(x.mean() - mean) < 6 * math.sqrt(var / N)
    assert abs(x.var() - var) < 0.25 * var


def test_cauchy_median_and_quartiles():
    x = draws(lambda t: t.cauchy_(1.0, 2.0))
    q1, med, q3 = np.quantile(x, [0.25, 0.5, 0.75])
    assert abs(med - 1.0) < 0.3 and abs(q1 + 1.0) < 0.4 and abs(q3 - 3.0) < 0.4


def test_supports_and_dtypes():
    assert set(draws(lambda t: t.random_(5), torch.int64)) <= set(range(5))
    assert draws(lambda t: t.geometric_(0.5), torch.int32).min() >= 1
    assert set(draws(lambda t: t.bernoulli_(0.5), torch.bool)) == {0.0, 1.0}
    x = draws(lambda t: t.uniform_(), torch.float32)
    assert 0 <= x.min() and x.max() < 1
    h = torch.empty(2000, dtype=torch.float16).random_()
    assert h.dtype is torch.float16 and 0 <= float(h.min()) and float(h.max()) <= 2048
    assert int(torch.empty(2000, dtype=torch.int8).random_().min()) >= 0
    t = torch.empty(3, 2)
    assert t.normal_() is t and t.shape == (2, 3)[::-1]


def test_bernoulli_with_tensor_p_and_methods():
    p = torch.tensor([0.0, 1.0, 1.0, 0.0])
    assert torch.empty(4).bernoulli_(p).tolist() == [0.0, 1.0, 1.0, 0.0]
    assert p.bernoulli().tolist() == [0.0, 1.0, 1.0, 0.0]
    assert torch.bernoulli(p).dtype is torch.float32
    assert set(torch.zeros(200).bernoulli(0.5).tolist()) == {0.0, 1.0}


@pytest.mark.parametrize("call, cls, msg", [
    (lambda: torch.zeros(3, dtype=torch.long).uniform_(), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda: torch.zeros(3, dtype=torch.long).normal_(), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Long'"),
    (lambda: torch.zeros(3, dtype=torch.long).exponential_(), RuntimeError,
     "Exponential distribution is a continuous probability distribution. dtype must be a floating point but you "
     "specified Long"),
    (lambda: torch.zeros(3, dtype=torch.long).cauchy_(), RuntimeError,
     "Cauchy distribution is a continuous probability distribution. dtype must be a floating point but you "
     "specified long int"),
    (lambda: torch.zeros(3, dtype=torch.bool).geometric_(0.5), NotImplementedError,
     "\"geometric_cpu\" not implemented for 'Bool'"),
    (lambda: torch.zeros(3).uniform_(2, 1), RuntimeError,
     "uniform_ expects to return a [from, to) range, but found from=2 > to=1"),
    (lambda: torch.zeros(3).normal_(0, -1), RuntimeError, "normal expects std >= 0.0, but found std -1"),
    (lambda: torch.zeros(3).exponential_(0), RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda: torch.zeros(3).geometric_(1), RuntimeError, "geometric_ expects p to be in (0, 1), but got p=1"),
    (lambda: torch.zeros(3).log_normal_(1, 0), RuntimeError, "log_normal_ expects std > 0.0, but found std=0"),
    (lambda: torch.zeros(3).cauchy_(0, -1), RuntimeError, "cauchy_ expects sigma > 0.0, but found sigma=-1"),
    (lambda: torch.zeros(3).bernoulli_(1.5), RuntimeError, "bernoulli_ expects p to be in [0, 1], but got p=1.5"),
    (lambda: torch.zeros(3, dtype=torch.long).random_(5, 3), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=3"),
    (lambda: torch.zeros(3, dtype=torch.uint8).random_(0, 300), RuntimeError, "to - 1 is out of bounds for unsigned char"),
    (lambda: torch.ones(2, requires_grad=True).normal_(), RuntimeError,
     "a leaf Variable that requires grad is being used in an in-place operation."),
    (lambda: torch.tensor([0., 1., 1.]).multinomial(4), RuntimeError,
     "cannot sample n_sample > prob_dist.size(-1) samples without replacement"),
    (lambda: torch.tensor([-1., 1.]).multinomial(1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda: torch.tensor([0., 0.]).multinomial(1), RuntimeError,
     "invalid multinomial distribution (sum of probabilities <= 0)"),
    (lambda: torch.poisson(torch.tensor([0, 2])), NotImplementedError, "\"poisson_cpu\" not implemented for 'Long'"),
    (lambda: torch.poisson(torch.tensor([-1.])), RuntimeError, "invalid Poisson rate, expected rate to be non-negative"),
    (lambda: torch.binomial(torch.tensor([10, 5]), torch.tensor([0.5, 1.])), ValueError,
     "binomial only supports floating-point dtypes for count, got: Long"),
])
def test_errors_match_torch(call, cls, msg):
    with pytest.raises(cls) as info:
        call()
    assert str(info.value) == msg


def test_filler_on_a_non_leaf_keeps_autograd_going():
    w = torch.ones(3, requires_grad=True)
    y = w * 2
    y.uniform_()
    assert y.requires_grad and y.grad_fn is not None
    y.sum().backward()
    assert w.grad.tolist() == [0.0, 0.0, 0.0]       # the drawn values do not depend on w


def test_filler_bumps_the_version_and_keeps_storage():
    t = torch.zeros(4)
    v, ptr = t._version, t.data_ptr()
    t.exponential_()
    assert t._version > v and t.data_ptr() == ptr


def test_multinomial():
    torch.manual_seed(0)
    assert torch.tensor([0., 1., 0.]).multinomial(2, True).tolist() == [1, 1]
    s = torch.tensor([0., 1., 0.]).multinomial(2).tolist()
    assert s[0] == 1 and s[1] in (0, 2)             # without replacement zero weights come after the rest
    rows = torch.tensor([[1., 3.], [4., 0.]]).multinomial(N, True)
    assert rows.shape == (2, N) and rows.dtype is torch.int64
    assert abs(rows[0].double().mean().item() - 0.75) < 0.05 and rows[1].sum().item() == 0
    perm = torch.ones(5).multinomial(5)
    assert sorted(perm.tolist()) == [0, 1, 2, 3, 4]


def test_poisson_and_binomial():
    torch.manual_seed(1)
    rate = torch.full((N,), 3.0)
    x = torch.poisson(rate)
    assert x.dtype is torch.float32 and abs(x.mean().item() - 3.0) < 0.2
    b = torch.binomial(torch.full((N,), 10.0), torch.full((N,), 0.25))
    assert b.dtype is torch.float32 and abs(b.mean().item() - 2.5) < 0.2 and b.max().item() <= 10
    assert torch.binomial(torch.tensor([5.]), torch.tensor([1.])).tolist() == [5.0]
