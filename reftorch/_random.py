"""Random sampling on tensors: the in-place fillers (normal_, uniform_, bernoulli_, exponential_, geometric_,
cauchy_, log_normal_, random_) and torch.bernoulli / multinomial / poisson / binomial.

Every draw comes from a seeded generator, so `manual_seed` replays it: on cpu the `Generator` of
_creation.py (the fillers through its counter-based Philox stream, _philox.py; multinomial, poisson, binomial and
random_ through its PCG64; `generator=` picks another), on cuda the counter-based generator of
_cuda_random.py (uniform and normal draws on the device). The streams are not PyTorch's bit for bit; the
distributions, dtypes, shapes and errors are. Continuous distributions are transforms of float64 uniform or
normal draws, rounded once into the tensor's dtype.
"""
from __future__ import annotations

import math

import numpy as np

import reftorch._creation_random as _crand
import reftorch._dtype as D
from ._creation import _finish, _zero_gradient
from ._creation_random import _counters, _rng, random_op
from ._args import check_inplace
from ._dispatch import values_for_check
from ._tensor import Tensor
import reftorch._functional as F
import reftorch.autograd.grad_mode as grad_mode
from ._lazy import lazy_module

_philox = lazy_module("reftorch._philox")              # Numba's JIT: on the first cpu draw
_cuda_random = lazy_module("reftorch._cuda_random")    # numba.cuda: on the first cuda draw

_MANTISSA = {"Half": 11, "BFloat16": 8, "Float": 24, "Double": 53}
_CPP_NAMES = {"Long": "long int", "Int": "int", "Short": "short int", "Char": "signed char",
              "Byte": "unsigned char", "Bool": "bool"}


def _draw(self, kind, generator):
    """float64 uniform [0, 1) or standard normal draws of self's shape, on self's device."""
    if self.device.type == "cuda" and generator is None:
        return (_cuda_random.uniform if kind == "uniform" else _cuda_random.normal)(self._shape, D.float64, self.device)
    n = self.numel()
    draw = _philox.uniform if kind == "uniform" else _philox.normal
    arr = draw(n, *_counters(generator, n), np.float64).reshape(self._shape)
    return _finish(arr, D.float64, self.device)


def _write(self, values):
    """values (a tensor of self's shape) written into self, as an in-place op: a leaf that requires grad refuses,
    and a non-leaf's gradient through the old values becomes zero (the new values are constants)."""
    check_inplace(self)
    values = values.detach().to(self.dtype)
    if grad_mode.state.enabled and self.requires_grad:
        # through where, so the old values get a zero gradient (PyTorch's UniformBackward0...) and the graph goes on
        return self.copy_(F.where(F.ones_like(self, dtype=D.bool_), values, self))
    with grad_mode.no_grad():
        return self.copy_(values)


def _from_keyword(name, value, kw):
    """PyTorch spells the lower bound `from`, a Python keyword: it arrives in **kw; anything else there is a
    wrong keyword, refused as Python refuses one."""
    value = kw.pop("from", value)
    if kw:
        raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kw))}'")
    return value


def _need_float(self, name):
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}\" not implemented for '{self.dtype.short}'")


@random_op("fill")
def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
    from_ = _from_keyword("uniform_", from_, kw)
    if not self.dtype.is_complex:
        _need_float(self, "check_uniform_bounds")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_:g} > to={to:g}")
    if self.dtype.is_complex:       # PyTorch: each part uniform on [from, to)
        uniform_(F.view_as_real(self), from_, to, generator=generator)
        return self
    return _write(self, _draw(self, "uniform", generator) * (to - from_) + from_)


@random_op("fill")
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    if not self.dtype.is_complex:
        _need_float(self, "normal_kernel_cpu")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    if self.dtype.is_complex:       # PyTorch: each part N(mean, std^2 / 2)
        normal_(F.view_as_real(self), mean, std / math.sqrt(2), generator=generator)
        return self
    return _write(self, _draw(self, "normal", generator) * std + mean)


@random_op("fill")
def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    _need_float(self, "log_normal_cpu")
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    return _write(self, F.exp(_draw(self, "normal", generator) * std + mean))


@random_op("fill")
def exponential_(self, lambd=1.0, *, generator=None):
    if not self.dtype.is_floating_point:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {self.dtype.short}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    return _write(self, -F.log1p(-_draw(self, "uniform", generator)) / lambd)


@random_op("fill")
def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    if not self.dtype.is_floating_point:
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {_CPP_NAMES.get(self.dtype.short, self.dtype.short)}")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    return _write(self, F.tan((_draw(self, "uniform", generator) - 0.5) * math.pi) * sigma + median)


@random_op("fill")
def geometric_(self, p, *, generator=None):
    if self.dtype is D.bool_:
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    trials = F.ceil(F.log1p(-_draw(self, "uniform", generator)) / math.log1p(-p))
    return _write(self, F.clamp_min(trials, 1.0))       # the number of trials up to the first success


@random_op("fill")
def bernoulli_(self, p=0.5, *, generator=None):
    if isinstance(p, Tensor):
        if not bool(F.all(F.logical_and(p >= 0, p <= 1))):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        p = p.to(self.device).to(D.float64).expand(self._shape)
    elif not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
    return _write(self, _draw(self, "uniform", generator) < p)


def _random_bounds(dtype, from_, to):
    """[low, high] (inclusive) of random_(from, to) for dtype, with PyTorch's defaults and range checks."""
    if dtype.is_floating_point:
        top = 2 ** _MANTISSA[dtype.short]
    else:
        top = 1 if dtype is D.bool_ else int(np.iinfo(dtype.np).max)
    if to is None:
        return from_, top
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    if not dtype.is_floating_point and to - 1 > top:
        raise RuntimeError(f"to - 1 is out of bounds for {_CPP_NAMES.get(dtype.short, dtype.short)}")
    return from_, to - 1


@random_op("fill")
def random_(self, from_=0, to=None, *, generator=None, **kw):
    """random_(from, to): integers in [from, to), or from `from` to the dtype's top (2**mantissa for floats)."""
    from_ = _from_keyword("random_", from_, kw)
    low, high = _random_bounds(self.dtype, from_, to)
    if self.device.type == "cuda" and generator is None:
        return _write(self, _cuda_random.integers(low, high + 1, self._shape, D.int64, self.device))
    vals = _rng(generator).integers(low, high, self._shape, dtype=np.int64, endpoint=True)
    return _write(self, _finish(vals, D.int64, self.device))


def random_method(self, *args, generator=None, **kw):
    """Tensor.random_(), random_(to), random_(from, to), as PyTorch reads its positional arguments."""
    if len(args) == 1 and "to" not in kw:
        return random_(self, 0, args[0], generator=generator)
    return random_(self, *args, generator=generator, **kw)


@random_op("sample")
def bernoulli(input, p=None, *, generator=None, out=None):
    """Draws 0/1 with probabilities input (or p, a number), in input's dtype."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for '{input.dtype.short}'")
    if out is None and input.device.type == "cpu":
        return _zero_gradient(_bernoulli_sample(input, input.detach() if p is None else p, generator), input)
    out = F.empty_like(input) if out is None else out
    with grad_mode.no_grad():
        bernoulli_(out, input.detach() if p is None else p, generator=generator)
    return _zero_gradient(out, input)   # as PyTorch's: the sample requires grad, with a zero gradient


def _bernoulli_sample(input, p, generator):
    """bernoulli_'s draws (float64 uniforms below p, the same counters) as out-of-place ops over rand: a fresh
    tensor, so reftorch.compile records the draw (and the comparison and cast) instead of breaking on a write.
    The check of a tensor p reads its values only to validate it (not a graph break; a replay does not repeat it)."""
    if isinstance(p, Tensor):
        probs = values_for_check(p)
        if not ((probs >= 0) & (probs <= 1)).all():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        p = p.to(D.float64)
    elif not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
    with grad_mode.no_grad():
        return (_crand.rand(input.shape, dtype=D.float64, generator=generator) < p).to(input.dtype)


@random_op("sample")
def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """num_samples category indices per row of input (non-negative weights), with or without replacement."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype.short}")
    if out is not None and out.dtype is not D.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: {out.dtype.short}")
    p = input.detach().cpu()._array().astype(np.float64)
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > p.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if p.shape[-1] > 2 ** 24:          # PyTorch's indices pass through float32
        raise RuntimeError("number of categories cannot exceed 2^24")
    if replacement and num_samples > 1:    # PyTorch's sampling kernel checks each entry; NaN fails `>= 0` first
        if not (p >= 0).all():
            raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
        if not np.isfinite(p).all():
            raise RuntimeError("invalid multinomial distribution (encountering probability entry = infinity or NaN)")
    elif not np.isfinite(p).all() or (p < 0).any():     # its exponential-race path checks them all at once
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    rows = p.reshape(-1, p.shape[-1])
    if (rows.sum(-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = _rng(generator)
    if replacement:     # inverse CDF per row
        cdf = np.cumsum(rows, -1)
        u = rng.random((rows.shape[0], num_samples)) * cdf[:, -1:]
        picks = np.stack([np.searchsorted(c, x, side="right") for c, x in zip(cdf, u)])
        picks = np.minimum(picks, rows.shape[-1] - 1)
    else:               # PyTorch's race: the num_samples largest p / Exp(1); zero weights come last
        keys = rows / rng.exponential(size=rows.shape)
        picks = np.argsort(-keys, axis=-1, kind="stable")[:, :num_samples]
    res = _finish(picks.reshape(p.shape[:-1] + (num_samples,)).astype(np.int64), D.int64, input.device)
    return res if out is None else out.resize_(res.shape).copy_(res)


@random_op("sample")
def poisson(input, generator=None):
    """Poisson counts with rates input, in input's (floating) dtype."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{input.dtype.short}'")
    rates = input.detach().cpu()._array().astype(np.float64)
    if (rates < 0).any() or np.isnan(rates).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return _finish(_rng(generator).poisson(rates).astype(input.dtype.np), input.dtype, input.device)


@random_op("sample")
def binomial(count, prob, generator=None):
    """Binomial counts of count trials with success probability prob, in count's (floating) dtype."""
    if not count.dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {count.dtype.short}")
    n = count.detach().cpu()._array().astype(np.float64)
    q = prob.detach().cpu()._array().astype(np.float64)
    n, q = np.broadcast_arrays(n, q)
    draws = _rng(generator).binomial(n.astype(np.int64), np.clip(q, 0.0, 1.0))
    return _finish(draws.astype(count.dtype.np), count.dtype, count.device)


METHODS = {"uniform_": uniform_, "normal_": normal_, "log_normal_": log_normal_, "exponential_": exponential_,
           "cauchy_": cauchy_, "geometric_": geometric_, "bernoulli_": bernoulli_, "random_": random_method,
           "bernoulli": bernoulli, "multinomial": multinomial}


def bind():
    for name, fn in METHODS.items():
        setattr(Tensor, name, fn)
