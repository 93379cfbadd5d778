"""torch.distributions: probability distributions with sampling, log-densities and KL divergences, written on
reftorch's public Tensor API (so they run on cpu and cuda and differentiate through autograd).

Sampling uses reftorch's generator (`manual_seed` replays it); the streams are not PyTorch's bit for bit, the
distributions are."""
import reftorch.distributions.constraints as constraints
import reftorch.distributions.transforms as transforms
from .constraint_registry import biject_to, transform_to
from .continuous import (Beta, Cauchy, Chi2, ContinuousBernoulli, Dirichlet, Exponential, FisherSnedecor, Gamma,
                         Laplace, Normal, StudentT, Uniform, VonMises)
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, Multinomial, NegativeBinomial, OneHotCategorical,
                       OneHotCategoricalStraightThrough, Poisson)
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .independent import Independent
from .kl import kl_divergence, register_kl
from .matrix import LKJCholesky, Wishart
from .multivariate import LowRankMultivariateNormal, MixtureSameFamily, MultivariateNormal
from .transformed import (ExpRelaxedCategorical, Gumbel, HalfCauchy, HalfNormal, InverseGamma, Kumaraswamy,
                          LogisticNormal, LogitRelaxedBernoulli, LogNormal, Pareto, RelaxedBernoulli,
                          RelaxedOneHotCategorical, TransformedDistribution, Weibull)
from .transforms import *  # noqa: F401,F403

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli", "Dirichlet",
           "Distribution", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "Geometric", "Gumbel",
           "HalfCauchy", "HalfNormal", "Independent", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace",
           "LogNormal", "LogisticNormal", "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial",
           "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough",
           "Pareto", "Poisson", "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution",
           "Uniform", "VonMises", "Weibull", "Wishart", "biject_to", "constraints", "kl_divergence", "register_kl",
           "transform_to", "transforms"]
