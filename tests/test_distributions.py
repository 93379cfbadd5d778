"""reftorch.distributions against torch 2.13: every family's log_prob / cdf / icdf / entropy / moments and the
KL table on batched float64 parameters (values written by tests/fixtures/make_distribution_cases.py with real
torch), sample shapes and statistics of every sampler, pathwise gradients, validation errors, transforms."""
import json
import math
import os

import numpy as np
import pytest

import reftorch as torch
from reftorch import distributions as D

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "fixtures", "distributions_expected.json")) as f:
    EXPECTED = json.load(f)


def t(*v):
    return torch.tensor(v, dtype=torch.float64)


def build(source):
    return eval(source, {"D": D, "t": t, "torch": torch})


def _close(got, want, name):
    got = np.asarray(got.detach().numpy() if isinstance(got, torch.Tensor) else got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{name}: shape {got.shape} vs torch's {want.shape}"
    assert np.allclose(got, want, rtol=1e-6, atol=1e-9, equal_nan=True), f"{name}: {got} vs torch's {want}"


METHODS = ("log_prob", "cdf", "icdf", "entropy", "mean", "variance", "mode", "stddev")


@pytest.mark.parametrize("family", sorted(EXPECTED["cases"]))
def test_family_matches_torch(family):
    row = EXPECTED["cases"][family]
    d, v = build(row["ctor"]), build(row["value"])
    for m in METHODS:
        want = row[m]

        def call():
            if m in ("log_prob", "cdf"):
                return getattr(d, m)(v)
            if m == "icdf":
                return d.icdf(d.cdf(v))
            if m == "entropy":
                return d.entropy()
            return getattr(d, m)
        if isinstance(want, dict):
            with pytest.raises(getattr(__builtins__, want["raises"], None) or Exception):
                call()
            continue
        _close(call(), want, f"{family}.{m}")


@pytest.mark.parametrize("pair", sorted(EXPECTED["kl"]))
def test_kl_matches_torch(pair):
    row = EXPECTED["kl"][pair]
    _close(D.kl_divergence(build(row["p"]), build(row["q"])), row["kl"], f"KL({pair})")


def test_kl_missing_pair_raises_as_torch():
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type StudentT and q "
                                                  "type Normal"):
        D.kl_divergence(D.StudentT(t(3.)), D.Normal(t(0.), t(1.)))
    with pytest.raises(NotImplementedError, match="The cross KL-divergence between different exponential families"):
        D.kl_divergence(D.Beta(t(1.), t(2.)), D.Poisson(t(1.)))
    _close(D.kl_divergence(D.Beta(t(1., 2.), t(2., 0.5)), D.Normal(t(0., 1.), t(1., 2.))), [1.1954190470979513, 2.38807895481368], "beta|normal")


def test_register_kl_picks_the_most_specific_pair():
    class MyNormal(D.Normal):
        pass

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return torch.zeros(p.batch_shape)
    assert D.kl_divergence(MyNormal(t(0.), t(1.)), D.Normal(t(3.), t(1.))).item() == 0.0
    assert D.kl_divergence(D.Normal(t(0.), t(1.)), D.Normal(t(3.), t(1.))).item() == pytest.approx(4.5)


SAMPLERS = [   # constructor, analytic mean, analytic variance (per element)
    (lambda: D.Normal(t(1., -2.), t(2., 0.5)), [1., -2.], [4., 0.25]),
    (lambda: D.Gamma(t(2., 0.5), t(1., 3.)), [2., 1 / 6], [2., 1 / 18]),
    (lambda: D.Beta(t(2., 0.5), t(3., 0.5)), [0.4, 0.5], [0.04, 0.125]),
    (lambda: D.Dirichlet(t(1., 2., 3.)), [1 / 6, 1 / 3, 1 / 2], [5 / 252, 8 / 252, 9 / 252]),
    (lambda: D.Poisson(t(3., 40.)), [3., 40.], [3., 40.]),
    (lambda: D.Binomial(t(10., 50.), t(0.3, 0.9)), [3., 45.], [2.1, 4.5]),
    (lambda: D.Exponential(t(2.)), [0.5], [0.25]),
    (lambda: D.Geometric(t(0.3)), [7 / 3], [7 / 0.9]),
    (lambda: D.StudentT(t(5.)), [0.], [5 / 3]),
    (lambda: D.Laplace(t(1.), t(2.)), [1.], [8.]),
    (lambda: D.Uniform(t(-1.), t(3.)), [1.], [4 / 3]),
    (lambda: D.VonMises(t(0.5), t(2.)), None, None),
    (lambda: D.Chi2(t(3.)), [3.], [6.]),
    (lambda: D.NegativeBinomial(t(4.), t(0.3)), [4 * 0.3 / 0.7], [4 * 0.3 / 0.49]),
    (lambda: D.Bernoulli(t(0.3)), [0.3], [0.21]),
    (lambda: D.Categorical(t(0.2, 0.3, 0.5)), [1.3], [0.61]),
    (lambda: D.MultivariateNormal(t(0., 1.), torch.tensor([[2., 0.5], [0.5, 1.]], dtype=torch.float64)),
     [0., 1.], [2., 1.]),
    (lambda: D.Gumbel(t(1.), t(2.)), [1 + 2 * 0.5772156649], [math.pi ** 2 / 6 * 4]),
]


@pytest.mark.parametrize("case", range(len(SAMPLERS)))
def test_sample_shapes_and_statistics(case):
    make, mean, var = SAMPLERS[case]
    torch.manual_seed(case)
    d = make()
    s = d.sample((20000,)).double()
    assert tuple(s.shape) == (20000,) + tuple(d.batch_shape) + tuple(d.event_shape)
    if mean is None:       # VonMises: the circular mean and concentration
        assert abs(math.atan2(torch.sin(s).mean().item(), torch.cos(s).mean().item()) - 0.5) < 0.03
        return
    got_mean, got_var = s.mean(0).numpy().reshape(-1), s.var(0).numpy().reshape(-1)
    sd = np.sqrt(np.asarray(var) / 20000)
    assert np.all(np.abs(got_mean - mean) < 5 * sd + 1e-3), (got_mean, mean)
    assert np.allclose(got_var, var, rtol=0.08), (got_var, var)


def test_samples_replay_under_manual_seed():
    for make in (lambda: D.Gamma(t(0.7), t(1.)), lambda: D.Poisson(t(4.)), lambda: D.Normal(t(0.), t(1.))):
        torch.manual_seed(3)
        a = make().sample((50,))
        torch.manual_seed(3)
        b = make().sample((50,))
        assert torch.equal(a, b) if hasattr(torch, "equal") else np.array_equal(a.numpy(), b.numpy())


def test_gamma_rsample_gradient_is_torchs_implicit_reparameterisation():
    from reftorch.distributions._samplers import standard_gamma_grad
    # -dP(a, x)/da / density(x; a) by mpmath at 30 digits; torch 2.13's approximation gives 0.8677018, 0.7940506
    _close(standard_gamma_grad(t(2.0, 0.5), t(1.3, 0.2)), [0.8677258352387687, 0.7940505663308433], "d x / d alpha")
    a = t(2.0, 0.5).requires_grad_()
    x = D.Gamma(a, t(1., 1.)).rsample((4,))
    x.sum().backward()
    assert a.grad is not None and bool((a.grad > 0).all())


def test_log_prob_gradients():
    loc, scale = t(0.5, -1.).requires_grad_(), t(1., 2.).requires_grad_()
    D.Normal(loc, scale).log_prob(t(1., 0.)).sum().backward()
    _close(loc.grad, [0.5, 0.25], "dlogp/dloc")
    _close(scale.grad, [-0.75, -0.375], "dlogp/dscale")


def test_validation_errors_as_torch():
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(1,\)\) of distribution "
                                         r"Normal\(loc: tensor\(\[0\.\]\), scale: tensor\(\[-1\.\]\)\) to satisfy the "
                                         r"constraint GreaterThan\(lower_bound=0\.0\), but found invalid values"):
        D.Normal(torch.tensor([0.]), torch.tensor([-1.]), validate_args=True)
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        D.Bernoulli()
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        D.Normal(0., 1., validate_args=True).log_prob(0.5)
    with pytest.raises(ValueError, match="to be within the support"):
        D.Exponential(t(1.), validate_args=True).log_prob(t(-1.))
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_expand_and_enumerate_support():
    d = D.Normal(t(0.), t(1.)).expand((3, 2))
    assert tuple(d.batch_shape) == (3, 2) and tuple(d.sample((4,)).shape) == (4, 3, 2)
    c = D.Categorical(t(0.2, 0.8).expand(3, 2))
    assert tuple(c.enumerate_support().shape) == (2, 3)
    assert tuple(D.Bernoulli(t(0.1, 0.2)).enumerate_support(expand=False).shape) == (2, 1)
    assert tuple(D.Binomial(t(3.), t(0.5)).enumerate_support().shape) == (4, 1)
    o = D.OneHotCategorical(t(0.2, 0.3, 0.5))
    assert tuple(o.enumerate_support().shape) == (3, 3) and o.sample().sum().item() == 1


@pytest.mark.parametrize("transform, x", [
    (D.transforms.ExpTransform(), t(0.3, -1.)), (D.transforms.SigmoidTransform(), t(0.3, -1.)),
    (D.transforms.TanhTransform(), t(0.3, -1.)), (D.transforms.AffineTransform(1., 3.), t(0.3, -1.)),
    (D.transforms.PowerTransform(2.), t(0.3, 1.5)), (D.transforms.SoftplusTransform(), t(0.3, -1.)),
])
def test_elementwise_transforms_invert_and_have_their_jacobian(transform, x):
    y = transform(x)
    _close(transform.inv(y), x.numpy(), "inverse")
    eps = 1e-6
    numeric = (transform(x + eps) - transform(x - eps)) / (2 * eps)
    _close(transform.log_abs_det_jacobian(x, y), np.log(np.abs(numeric.numpy())), "log|dy/dx|")


def test_simplex_and_cholesky_transforms():
    x = t(0.3, -1., 2.)
    y = D.transforms.StickBreakingTransform()(x)
    assert y.shape[-1] == 4 and abs(y.sum().item() - 1) < 1e-12
    _close(D.transforms.StickBreakingTransform().inv(y), x.numpy(), "stick breaking inverse")
    corr = D.transforms.CorrCholeskyTransform()(t(0.5, -0.2, 0.1))
    assert bool(D.constraints.corr_cholesky.check(corr))
    for c in (D.constraints.positive, D.constraints.unit_interval, D.constraints.simplex, D.constraints.real,
              D.constraints.interval(-2., 3.), D.constraints.greater_than(1.)):
        tr = D.biject_to(c)
        z = tr(t(0.1, 0.2, -0.3))
        assert bool(c.check(z).all())


def test_straight_through_and_relaxed_samples_carry_gradients():
    p = t(0.2, 0.8).requires_grad_()
    s = D.OneHotCategoricalStraightThrough(probs=p).rsample()
    (s * t(1., 2.)).sum().backward()
    assert p.grad is not None
    logits = t(0.1, -0.3, 0.5).requires_grad_()
    r = D.RelaxedOneHotCategorical(t(0.5), logits=logits).rsample()
    r[0].backward()
    assert logits.grad is not None and abs(r.sum().item() - 1) < 1e-12


def _wishart():
    return D.Wishart(t(4., 5.5), scale_tril=torch.tensor([[[1.5, 0.], [0.3, 0.8]], [[1., 0.], [-0.4, 1.2]]],
                                                          dtype=torch.float64))


def test_wishart_bartlett_samples_match_moments_and_differentiate():
    torch.manual_seed(0)
    d = _wishart()
    with pytest.warns(UserWarning, match="Singular sample detected."):      # as torch warns on every draw
        s = d.rsample((20000,))
    assert tuple(s.shape) == (20000, 2, 2, 2) and bool(d.support.check(s).all())
    mean, var = d.mean.numpy(), d.variance.numpy()
    assert np.all(np.abs(s.mean(0).numpy() - mean) < 5 * np.sqrt(var / 20000))
    assert np.allclose(s.var(0).numpy(), var, rtol=0.08)
    L = torch.tensor([[1.5, 0.], [0.3, 0.8]], dtype=torch.float64, requires_grad=True)
    with pytest.warns(UserWarning):
        D.Wishart(t(4.), scale_tril=L).rsample((3,)).sum().backward()
    assert L.grad is not None and bool(torch.isfinite(L.grad).all())
    e = d.expand((3, 2))
    assert tuple(e.batch_shape) == (3, 2) and np.allclose(e.mean.numpy(), np.broadcast_to(mean, (3, 2, 2, 2)))


def test_wishart_and_lkj_arguments_are_checked_as_torch():
    eye = torch.eye(2, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"Value of df=0.5 expected to be greater than ndim - 1 = 1."):
        D.Wishart(0.5, covariance_matrix=eye)
    with pytest.warns(UserWarning, match="Low df values detected"):
        D.Wishart(t(1.5), covariance_matrix=eye)
    with pytest.raises(AssertionError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        D.Wishart(t(3.), covariance_matrix=eye, scale_tril=eye)
    with pytest.raises(ValueError, match="scale_tril must be at least two-dimensional"):
        D.Wishart(t(3.), covariance_matrix=t(1., 1.))
    with pytest.raises(ValueError, match=r"Expected parameter covariance_matrix .* to satisfy the constraint "
                                         r"PositiveDefinite\(\)"):
        D.Wishart(t(3.), covariance_matrix=-eye, validate_args=True)
    with pytest.raises(ValueError, match=r"Expected value argument .* to be within the support "
                                         r"\(PositiveDefinite\(\)\)"):
        D.Wishart(3., covariance_matrix=eye, validate_args=True).log_prob(-eye)
    assert D.Wishart(3., covariance_matrix=eye).arg_constraints["df"].lower_bound == 1
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal to 2. Found dim=1."):
        D.LKJCholesky(1)
    with pytest.raises(ValueError, match=r"to be within the support \(CorrCholesky\(\)\)"):
        D.LKJCholesky(3, t(0.5, 2.), validate_args=True).log_prob(torch.eye(3, dtype=torch.float64) * 2)
    assert not D.LKJCholesky(3).has_rsample


def test_lkj_cholesky_onion_samples_are_correlation_factors():
    torch.manual_seed(1)
    d = D.LKJCholesky(3, t(0.5, 2.))
    L = d.sample((20000,))
    assert tuple(L.shape) == (20000, 2, 3, 3) and bool(d.support.check(L).all())
    corr = (L @ L.transpose(-2, -1)).numpy()
    off = corr[..., [1, 2, 2], [0, 0, 1]]
    eta = np.array([0.5, 2.])[:, None]
    # torch's onion draws: row k of L is sqrt(y_k) times a uniform direction, y_1 ~ Beta(1/2, eta + 1/2) and
    # y_2 ~ Beta(3/2, eta), so var r_10 = E y_1 and var r_20 = E y_2 / 2 (torch 2.13 measures the same)
    want_var = np.hstack([0.5 / (eta + 1), 0.75 / (1.5 + eta)])
    assert np.all(np.abs(off.mean(0)) < 5 * np.sqrt(0.4 / 20000))
    assert np.allclose(off.var(0)[:, :2], want_var, rtol=0.06)
    assert np.allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1)
    assert tuple(d.expand((4, 2)).sample().shape) == (4, 2, 3, 3)


def test_wishart_and_lkj_log_prob_gradients_are_torchs():
    df = t(4., 5.5).requires_grad_()
    L = torch.tensor([[[1.5, 0.], [0.3, 0.8]], [[1., 0.], [-0.4, 1.2]]], dtype=torch.float64, requires_grad=True)
    d = D.Wishart(df, scale_tril=L)
    value = torch.tensor([[2., 0.3], [0.3, 1.]], dtype=torch.float64)
    (d.log_prob(value).sum() + d.entropy().sum()).backward()
    _close(df.grad, [-0.1764883378781178, -0.8694536199029838], "d/d df")       # torch 2.13's
    lower = L.grad.numpy()[..., [0, 1, 1], [0, 0, 1]]     # torch's cholesky_solve also fills the unused upper corner
    _close(lower, [[-0.05324074074074048, -0.10416666666666663, 0.625],
                   [-0.19444444444444464, 0.7638888888888888, -1.1805555555555558]], "d/d scale_tril")
    c = t(0.5, 2.).requires_grad_()
    corr = torch.tensor([[1., 0.3, -0.2], [0.3, 1., 0.4], [-0.2, 0.4, 1.]], dtype=torch.float64)
    D.LKJCholesky(3, c).log_prob(torch.linalg.cholesky(corr)).sum().backward()
    _close(c.grad, [2.201215915834979, 0.30713797140809507], "d/d concentration")
