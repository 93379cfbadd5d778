"""Reductions, scans, the matmul family and data movement (issue 2) against NumPy, and their gradients.

The registry-driven fuzz suite (tests/test_registry_fuzz.py) draws random samples for every entry;
this file pins the semantics a PyTorch user relies on: dims (negative, tuples, keepdim, empty),
0-d and size-0 inputs, non-contiguous views, dtype rules, PyTorch's errors, tie and NaN conventions,
the (values, indices) return types, and gradients by central differences in float64 (first and,
where the backward is itself a formula, second order) on the cases random samples rarely hit:
zeros in prod/cumprod, ties, repeated indices, every pad mode, einsum patterns.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import reftorch as torch
from reftorch import autograd

RNG = np.random.default_rng(20240611)


# ------------------------------------------------------------------------------------------ helpers

def rand(*shape, lo=-2.0, hi=2.0, dtype=np.float64):
    return RNG.uniform(lo, hi, shape).astype(dtype)


def T(arr, layout="contiguous", grad=False):
    """A tensor holding arr's values: contiguous, a transposed view, or a view with step 2 in every dim."""
    arr = np.asarray(arr)
    if layout == "transposed" and arr.ndim >= 2:
        t = torch.from_numpy(np.ascontiguousarray(arr.T)).permute(tuple(reversed(range(arr.ndim))))
        assert not t.is_contiguous() or arr.size <= 1 or 1 in arr.shape
    elif layout == "sliced" and arr.ndim >= 1 and arr.size:
        big = np.zeros(tuple(2 * s for s in arr.shape), arr.dtype)
        big[tuple(slice(None, None, 2) for _ in arr.shape)] = arr
        t = _stepped(big)
    else:
        t = torch.from_numpy(np.array(arr))
    if grad:
        t.requires_grad_(True)
    return t


def _stepped(big):
    """Every second element of big along each dim, as a strided view (no copy)."""
    from reftorch._tensor import Tensor
    base = Tensor._from_array(big)
    return Tensor._make(base._storage, 0, tuple(s // 2 for s in big.shape), tuple(2 * st for st in base._strides),
                        base.dtype)


LAYOUTS = ("contiguous", "transposed", "sliced")


def check(actual, expected, atol=1e-6, rtol=1e-6, dtype=None):
    a = actual.detach().numpy() if isinstance(actual, torch.Tensor) else np.asarray(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape, (a.shape, e.shape)
    if dtype is not None:
        assert actual.dtype == dtype, (actual.dtype, dtype)
    if a.dtype.kind in "fc" or e.dtype.kind in "fc":
        np.testing.assert_allclose(a, e, atol=atol, rtol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(a, e)


def _float_outputs(out):
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o for o in outs if isinstance(o, torch.Tensor) and o.dtype.is_floating_point]


def fd_check(f, *inputs, eps=1e-6, atol=1e-6, rtol=1e-4, second=False):
    """Gradients of sum(w * f(inputs)) (fixed random w) by backward against central differences.

    Floating inputs are differentiated (their layout is kept for the analytic pass). With second=True
    the same check runs on the gradient function itself: double backward."""
    weights = {}

    def loss_of(xs):
        outs = _float_outputs(f(*xs))
        total = None
        for i, o in enumerate(outs):
            if i not in weights:
                weights[i] = RNG.normal(size=tuple(o.shape))
            term = (o * torch.tensor(weights[i])).sum()
            total = term if total is None else total + term
        return total

    def grads_of(*xs):
        diff = [x for x in xs if isinstance(x, torch.Tensor) and x.requires_grad]
        return [g for g in autograd.grad(loss_of(xs), diff, create_graph=second, allow_unused=True)]

    _compare(loss_of, grads_of, inputs, eps, atol, rtol)
    if second:
        second_w = {}

        def loss2(xs):
            total = None
            for i, g in enumerate(grads_of(*xs)):
                if g is None:
                    continue
                if i not in second_w:
                    second_w[i] = RNG.normal(size=tuple(g.shape))
                term = (g * torch.tensor(second_w[i])).sum()
                total = term if total is None else total + term
            return total

        def grads2(*xs):
            diff = [x for x in xs if isinstance(x, torch.Tensor) and x.requires_grad]
            loss = loss2(xs)
            if loss is None or not loss.requires_grad:      # a gradient that no longer depends on the inputs
                return [None] * len(diff)
            return autograd.grad(loss, diff, allow_unused=True)

        _compare(loss2, grads2, inputs, eps, atol * 10, rtol * 10)


def _compare(loss_of, grads_of, inputs, eps, atol, rtol):
    inputs = list(inputs)
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.dtype.is_floating_point:
            x.requires_grad_(True)
    analytic = grads_of(*inputs)
    diff_pos = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.requires_grad]
    for k, pos in enumerate(diff_pos):
        base = inputs[pos].detach().numpy().astype(np.float64)
        numeric = np.zeros(base.shape)
        for idx in np.ndindex(*base.shape):
            vals = []
            for sign in (1, -1):
                moved = base.copy()
                moved[idx] += sign * eps
                xs = list(inputs)
                xs[pos] = torch.tensor(moved, requires_grad=True)
                with_loss = loss_of(xs)
                vals.append(0.0 if with_loss is None else float(with_loss.detach()))
            numeric[idx] = (vals[0] - vals[1]) / (2 * eps)
        g = analytic[k]
        got = np.zeros(base.shape) if g is None else g.detach().numpy()
        assert got.shape == base.shape, (got.shape, base.shape)
        np.testing.assert_allclose(got, numeric, atol=atol, rtol=rtol)


def dims_for(ndim):
    """dim arguments worth testing on an ndim tensor: None, first, last (negative), a tuple, all."""
    if ndim == 0:
        return [None, 0, -1]
    out = [None, 0, -1]
    if ndim >= 2:
        out += [(0, -1)]
    if ndim >= 3:
        out += [(-1, 1), (0, 1, 2)]
    return out


SHAPES = [(), (5,), (3, 4), (2, 3, 4)]


# ------------------------------------------------------------------------------------------ reductions

# name: (ours, NumPy's, input transform); inputs are prepared in NumPy so that only the reduction compiles
REDUCTIONS = {
    "sum": (lambda x, d, k: torch.sum(x, d, k), lambda a, d, k: np.sum(a, d, keepdims=k)),
    "prod": (lambda x, d, k: torch.prod(x, d, k), lambda a, d, k: np.prod(a, d, keepdims=k)),
    "amax": (lambda x, d, k: torch.amax(x, d, k), lambda a, d, k: np.amax(a, d, keepdims=k)),
    "amin": (lambda x, d, k: x.amin(d, keepdim=k), lambda a, d, k: np.amin(a, d, keepdims=k)),
    "mean": (lambda x, d, k: x.mean(d, k), lambda a, d, k: np.mean(a, d, keepdims=k)),
    "all": (lambda x, d, k: torch.all(x, d, k), lambda a, d, k: np.all(a, d, keepdims=k), lambda a: a > -1),
    "any": (lambda x, d, k: x.any(d, keepdim=k), lambda a, d, k: np.any(a, d, keepdims=k), lambda a: a > 1),
    "var": (lambda x, d, k: x.var(d, keepdim=k), lambda a, d, k: np.var(a, d, keepdims=k, ddof=1)),
    "std": (lambda x, d, k: torch.std(x, dim=d, keepdim=k, correction=0),
            lambda a, d, k: np.std(a, d, keepdims=k)),
    "norm": (lambda x, d, k: x.norm(2, dim=d, keepdim=k), lambda a, d, k: np.sqrt(np.sum(a * a, d, keepdims=k))),
    "logsumexp": (lambda x, d, k: torch.logsumexp(x, d, k),
                  lambda a, d, k: np.log(np.sum(np.exp(a), d, keepdims=k))),
    "count_nonzero": (lambda x, d, k: torch.count_nonzero(x, d), lambda a, d, k: np.count_nonzero(a, d), np.round),
}


def _np_dim(d, ndim):
    if ndim == 0 and d is not None:
        return None
    return d


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_matches_numpy(name):
    ours, ref, prep = (REDUCTIONS[name] + (lambda a: a,))[:3]
    for shape, layout in itertools.product(SHAPES, LAYOUTS):
        a = np.asarray(prep(rand(*shape)))
        x = T(a, layout)
        for d, k in itertools.product(dims_for(len(shape)), (False, True)):
            if name == "var" and np.size(a) // max(1, np.size(np.sum(a, _np_dim(d, a.ndim)))) < 2:
                continue        # one element per reduction gives NaN (test_var_std_argument_forms)
            if name == "count_nonzero" and k:
                continue        # count_nonzero has no keepdim
            check(ours(x, d, k), ref(a, _np_dim(d, a.ndim), k), atol=1e-9, rtol=1e-9)


def test_reduction_float32_accumulates_in_float64():
    a = np.full(1_000_001, 0.1, np.float32)
    s = torch.from_numpy(a).sum()
    assert s.dtype == torch.float32
    assert abs(float(s) - 100000.1) < 0.02          # a naive float32 loop is ~1% off here


def test_reduction_dtype_rules():
    b = torch.tensor([[True, False], [True, True]])
    i32 = torch.tensor([[1, 2], [3, 4]], dtype=torch.int32)
    assert b.sum().dtype == torch.int64 and int(b.sum()) == 3
    assert i32.sum(0).dtype == torch.int64
    assert i32.prod().dtype == torch.int64 and int(i32.prod()) == 24
    assert i32.amax().dtype == torch.int32 and i32.amin(1).dtype == torch.int32
    assert i32.sum(dtype=torch.float64).dtype == torch.float64
    assert torch.ones(3).sum().dtype == torch.float32
    assert i32.argmax().dtype == torch.int64 and i32.argmin(0).dtype == torch.int64
    assert i32.all().dtype == torch.bool and torch.any(torch.zeros(2)).dtype == torch.bool
    assert torch.count_nonzero(i32).dtype == torch.int64
    assert b.cumsum(0).dtype == torch.int64
    assert torch.tensor([1, 2], dtype=torch.int8).cumprod(0).dtype == torch.int64
    assert i32.mean(dtype=torch.float64).dtype == torch.float64
    check(i32.mean(dtype=torch.float64), 2.5)
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype. Input dtype must be either a "
                                           r"floating point or complex dtype. Got: Int"):
        i32.mean()
    with pytest.raises(RuntimeError, match="Optional dtype must be either a floating point"):
        torch.ones(2).mean(dtype=torch.int64)
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        i32.var()
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.tensor([1, 2]).logcumsumexp(0)
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        torch.tensor([1, 2]).norm()
    check(torch.logsumexp(torch.tensor([1, 2]), 0), np.log(np.e + np.e ** 2), atol=1e-6)


def test_reduction_empty_and_scalar_inputs():
    e = torch.zeros(0, 3)
    check(e.sum(), 0.0)
    check(e.sum(0), np.zeros(3))
    check(e.prod(0), np.ones(3))
    check(e.amax(1), np.zeros(0))
    assert bool(e.all()) and not bool(e.any())
    assert np.isnan(float(e.mean()))
    check(torch.logsumexp(e, 0), np.full(3, -np.inf))
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 0 to have non-zero size."):
        e.amax(0)
    with pytest.raises(RuntimeError, match=r"amin\(\): Expected reduction dim to be specified for "
                                         r"input.numel\(\) == 0."):
        e.amin()
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified"):
        e.max()
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim 1 to have non-zero size."):
        torch.zeros(2, 0).argmax(1)
    check(torch.zeros(2, 0).argmax(0), np.zeros(0, np.int64))
    s = torch.tensor(3.0)
    for d in (0, -1):
        check(s.sum(d), 3.0)
        check(s.sum(d, keepdim=True), 3.0)
        check(s.amax(d), 3.0)
        check(s.cumsum(d), 3.0)
        check(s.cumprod(d), 3.0)
        check(s.logcumsumexp(d), 3.0)
        assert int(s.argmax(d)) == 0 and int(s.argmin(d, keepdim=True)) == 0
        v, i = s.max(d)
        check(v, 3.0)
        check(i, 0)
        check(s.sort(d).values, 3.0)
        check(s.softmax(d), 1.0)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], "
                                         r"but got 1\)"):
        s.sum(1)


def test_reduction_dim_forms():
    a = rand(2, 3, 4)
    x = T(a)
    check(x.sum(()), a.sum())                       # an empty dim list reduces every dim (PyTorch)
    check(x.sum([]), a.sum())
    check(x.amax(()), a.max())
    check(x.mean(()), a.mean())
    check(x.sum([0, 2]), a.sum((0, 2)))
    check(x.sum(dim=(-1, -3), keepdim=True), a.sum((0, 2), keepdims=True))
    check(x.argmax(keepdim=True), np.reshape(a.argmax(), (1, 1, 1)))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], "
                                         r"but got 3\)"):
        x.sum(3)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.sum((0, -3))


# Reductions over a leading dim: the kept innermost dim is contiguous, so rows accumulate into a contiguous acc
# (<op>_reduce's sm == 1 loop: blocks of OUTER_BLOCK = 2048 outputs, 4 rows a pass); kept or reduced dims that do
# not collapse to one axis each take <op>_reduce_nd (no copy) when one of the two inner walks is contiguous.
# The path depends on the layout only, so these small shapes take it; 2050 columns leave a partial block.
OUTER = [((5, 2050), 0), ((7, 2050), -2), ((3, 4, 5), (0, 2)), ((3, 4, 5), (-3, -1)), ((3, 6, 2050), 1),
         ((2, 3, 4, 5), (0, 2)), ((2, 3, 4, 5), (1, 3)), ((4, 3, 5), (2, 0)), ((2, 3, 4, 5), (0, 1, 3))]


@pytest.mark.parametrize("shape,dim", OUTER)
def test_reduction_outer_dims_match_numpy(shape, dim):
    a64 = rand(*shape)
    a32 = a64.astype(np.float32)
    ai = RNG.integers(-4, 5, shape)
    for keepdim in (False, True):
        kw = dict(axis=dim, keepdims=keepdim)
        # float32 sums accumulate in float64 (then round once), as on the contiguous paths
        check(torch.from_numpy(a32).sum(dim, keepdim), np.sum(a32.astype(np.float64), **kw).astype(np.float32),
              dtype=torch.float32, atol=0, rtol=0)
        check(torch.from_numpy(a32).mean(dim, keepdim), np.mean(a32.astype(np.float64), **kw).astype(np.float32),
              atol=0, rtol=3e-7)     # the float32 sum, then the division: two roundings
        check(torch.from_numpy(a64).prod(dim, keepdim), np.prod(a64, **kw), atol=0, rtol=1e-12)
        check(torch.from_numpy(a32).amax(dim, keepdim), np.amax(a32, **kw), atol=0, rtol=0)
        check(torch.from_numpy(a64).amin(dim, keepdim), np.amin(a64, **kw), atol=0, rtol=0)
        check(torch.from_numpy(ai).sum(dim, keepdim), np.sum(ai, **kw), dtype=torch.int64)
        check(torch.from_numpy(ai.astype(np.int32)).amax(dim, keepdim), np.amax(ai, **kw), dtype=torch.int32)
        check(torch.from_numpy(ai > 0).sum(dim, keepdim), np.sum(ai > 0, **kw), dtype=torch.int64)
        check(torch.from_numpy(ai > -4).all(dim, keepdim), np.all(ai > -4, **kw))
        check(torch.from_numpy(ai > 3).any(dim, keepdim), np.any(ai > 3, **kw))
        check(torch.from_numpy(ai.astype(np.int32)).sum(dim, keepdim, dtype=torch.float64), np.sum(ai, **kw),
              dtype=torch.float64, atol=0, rtol=0)
    check(torch.count_nonzero(torch.from_numpy(ai), dim), np.count_nonzero(ai, dim))
    # transposed and stepped views of the same values
    for layout in ("transposed", "sliced"):
        check(T(a64, layout).sum(dim), np.sum(a64, axis=dim), atol=1e-12, rtol=1e-12)
        check(T(a32, layout).amax(dim, True), np.amax(a32, axis=dim, keepdims=True), atol=0, rtol=0)


def test_reduction_outer_dims_order_nan_and_empty():
    # each output combines its rows in order (the 4-row unrolled loop included): bit-identical to row by row
    a = RNG.standard_normal((11, 2050)).astype(np.float32) * 1e4
    acc = np.zeros(2050)
    for row in a:
        acc += row
    check(torch.from_numpy(a).sum(0), acc.astype(np.float32), atol=0, rtol=0)
    acc = np.zeros(2050, np.float32)
    for row in a[:, :]:
        acc += row
    check(torch.from_numpy(a).sum(0, dtype=torch.float32), np.sum(a.astype(np.float64), 0).astype(np.float32),
          atol=0, rtol=0)
    # NaN propagates through amax/amin wherever it sits (first row, a middle row, the last of a partial block)
    b = RNG.standard_normal((6, 2050))
    b[0, 3] = b[4, 2049] = b[5, 100] = np.nan
    b3 = RNG.standard_normal((3, 4, 5))
    b3[1, 2, 4] = b3[0, 0, 0] = np.nan
    for x, dim in ((b, 0), (b3, (0, 2)), (b3, 0), (b3.transpose(2, 1, 0), 1)):
        for op in ("amax", "amin"):
            check(getattr(torch.from_numpy(np.ascontiguousarray(x)), op)(dim), getattr(np, op)(x, axis=dim),
                  atol=0, rtol=0)
        check(torch.from_numpy(np.ascontiguousarray(x)).sum(dim), np.sum(x, axis=dim), atol=1e-12, rtol=1e-12)
    # broadcast (stride-0) dims, reduced or kept
    base = rand(1, 4, 5)
    for dim in ((0, 2), (0, 1), 0, 1, (1, 2)):
        check(torch.from_numpy(base).expand(3, 4, 5).sum(dim), np.broadcast_to(base, (3, 4, 5)).sum(dim),
              atol=1e-12, rtol=1e-12)
        check(torch.from_numpy(base).expand(3, 4, 5).permute(2, 0, 1).amin(dim),
              np.broadcast_to(base, (3, 4, 5)).transpose(2, 0, 1).min(dim), atol=0, rtol=0)
    # empty reduced or kept dims
    for shape, dim in (((0, 4, 3), (0, 2)), ((3, 0, 5), 1), ((2, 3, 0), 0), ((3, 4, 0), (0, 1)), ((2, 0, 5), (0, 2))):
        e = np.zeros(shape)
        check(torch.from_numpy(e).sum(dim), np.sum(e, axis=dim))
        check(torch.from_numpy(e).prod(dim, True), np.prod(e, axis=dim, keepdims=True))
        check(torch.from_numpy(e).any(dim), np.any(e, axis=dim))
    with pytest.raises(IndexError, match=r"amax\(\): Expected reduction dim 0 to have non-zero size."):
        torch.zeros(0, 4, 3).amax((0, 2))


@pytest.mark.parametrize("shape,dim", [((4, 40), 0), ((3, 4, 5), (0, 2)), ((8, 3, 40), 1), ((2, 3, 4, 5), (1, 3))])
def test_reduction_outer_dims_in_threads(monkeypatch, shape, dim):
    import reftorch._cpu as cpu
    monkeypatch.setattr(cpu, "THREADS", 2)
    monkeypatch.setattr(cpu, "_parallel", lambda n: True)
    a = rand(*shape)
    check(torch.from_numpy(a).sum(dim), np.sum(a, axis=dim), atol=1e-12, rtol=1e-12)
    check(torch.from_numpy(a).amax(dim, True), np.amax(a, axis=dim, keepdims=True), atol=0, rtol=0)
    for _ in range(2):      # the cached plan's call takes the same threads
        check(torch.from_numpy(a).sum(dim), np.sum(a, axis=dim), atol=1e-12, rtol=1e-12)


def test_argmax_argmin_over_a_leading_dim():
    # rows at a time against a row of the best values (blocks of 2048 outputs): ties keep the first index, the
    # first NaN wins, as on the per-output loop
    a = RNG.integers(-3, 4, (9, 2050)).astype(np.float64)       # many ties
    a[2, 5] = a[7, 5] = a[4, 2049] = a[0, 100] = np.nan
    for x, dim in ((a, 0), (a.T, 1), (a.reshape(9, 2, 1025), 0)):
        for op in ("argmax", "argmin"):
            nan_first = np.where(np.isnan(x).any(dim), np.isnan(x).argmax(dim), getattr(np, op)(x, dim))
            check(getattr(torch.from_numpy(np.ascontiguousarray(x)), op)(dim), nan_first)
            check(getattr(torch.from_numpy(np.ascontiguousarray(x)).to(torch.int32), op)(dim, True) if op == "argmax"
                  else torch.from_numpy(np.ascontiguousarray(x)).isnan().to(torch.uint8).argmin(dim),
                  np.expand_dims(getattr(np, op)(np.nan_to_num(x).astype(np.int32), dim), dim) if op == "argmax"
                  else np.isnan(x).astype(np.uint8).argmin(dim))
    t = torch.from_numpy(np.ascontiguousarray(a.T)).T      # a's values, the kept dim 1 of stride 1 when reducing 1
    check(t.argmax(1), np.where(np.isnan(a).any(1), np.isnan(a).argmax(1), a.argmax(1)))
    h = torch.from_numpy(a[:, :40].astype(np.float32)).to(torch.float16)
    check(h.argmax(0), np.where(np.isnan(a[:, :40]).any(0), np.isnan(a[:, :40]).argmax(0), a[:, :40].argmax(0)))
    v, i = torch.from_numpy(a).max(0)
    check(i, np.where(np.isnan(a).any(0), np.isnan(a).argmax(0), a.argmax(0)))


def test_reduction_outer_dims_16bit():
    a = RNG.standard_normal((3, 4, 2050)).astype(np.float32)
    for dt, npdt in ((torch.float16, np.float16), (torch.bfloat16, None)):
        x = torch.from_numpy(a).to(dt)
        vals = x.float().numpy().astype(np.float64)
        for dim in (0, (0, 2), 1, (0, 1)):
            check(x.sum(dim).float(), np.sum(vals, axis=dim), atol=0.05, rtol=1e-2)
            check(x.amax(dim).float(), np.amax(vals, axis=dim), atol=0, rtol=0)


def test_argmax_argmin_ties_and_nan():
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [np.nan, 1.0, np.nan, 5.0], [2.0, 2.0, -1.0, -1.0]])
    check(x.argmax(1), [1, 0, 0])
    check(x.argmin(1), [3, 0, 2])
    check(x.argmax(), 4)                             # the first NaN of the flattened tensor
    check(x.argmax(0, keepdim=True), [[1, 0, 1, 1]])
    check(torch.tensor([True, False, True]).argmin(), 1)


def test_max_min_forms_and_return_types():
    a = rand(3, 4)
    x = T(a, "transposed")
    check(x.max(), a.max())
    check(torch.min(x), a.min())
    r = torch.max(x, 1)
    assert type(r).__name__ == "max" and r._fields == ("values", "indices")
    check(r.values, a.max(1))
    check(r.indices, a.argmax(1))
    values, indices = x.min(dim=0, keepdim=True)
    check(values, a.min(0, keepdims=True))
    check(indices, a.argmin(0)[None])
    check(torch.max(x, T(np.zeros((3, 4)))), np.maximum(a, 0))
    check(torch.min(x, other=T(np.zeros(4))), np.minimum(a, 0))
    assert repr(r).startswith("torch.return_types.max(\nvalues=tensor(")
    b = torch.tensor([[True, False], [False, False]])
    check(b.max(1).values, [True, False])
    check(torch.tensor([[1, 5], [7, 2]]).min(0).indices, [0, 1])
    check(torch.tensor([[1.0, np.nan, 3.0]]).max(1).values, [np.nan])
    check(torch.tensor([[1.0, np.nan, 3.0]]).max(1).indices, [1])


def test_tie_gradients():
    x = T([1.0, 3.0, 3.0, 2.0], grad=True)
    x.amax().backward()
    check(x.grad, [0, 0.5, 0.5, 0])                  # ties split evenly (amax, full max)
    x.grad = None
    x.max().backward()
    check(x.grad, [0, 0.5, 0.5, 0])
    x.grad = None
    x.max(0).values.backward()                       # with dim: the gradient goes to the index
    check(x.grad, [0, 1, 0, 0])
    y = T([[2.0, 1.0, 1.0], [0.0, 0.0, 0.0]], grad=True)
    y.amin(1).sum().backward()
    check(y.grad, [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    y.grad = None
    y.min(1).values.sum().backward()
    check(y.grad, [[0, 1, 0], [1, 0, 0]])
    z = T([[3.0, -3.0, 1.0]], grad=True)
    z.norm(float("inf")).backward()
    check(z.grad, [[0.5, -0.5, 0]])


def test_var_std_argument_forms():
    a = rand(3, 5)
    x = T(a)
    check(x.var(), a.var(ddof=1))
    check(x.var(1), a.var(1, ddof=1))
    check(torch.var(x, 1, False), a.var(1))          # var(input, dim, unbiased)
    check(torch.var(x, False), a.var())              # var(input, unbiased)
    check(x.var(0, unbiased=True, keepdim=True), a.var(0, ddof=1, keepdims=True))
    check(x.var(1, correction=2), a.var(1, ddof=2))
    check(x.std(dim=(0, 1), correction=0), a.std())
    assert np.isnan(float(torch.tensor([1.0]).var()))
    with pytest.raises(RuntimeError, match="Cannot specify both unbiased and correction"):
        x.var(0, unbiased=True, correction=1)


def test_norm_orders():
    a = rand(3, 4)
    x = T(a, "transposed")
    check(x.norm(), np.linalg.norm(a))
    check(torch.norm(x, "fro"), np.linalg.norm(a))
    for p in (1, 2, 3, 0.5, float("inf"), -float("inf"), 0):
        for d in (None, 0, -1, (0, 1)):
            flat = np.abs(a)
            if p == float("inf"):
                expected = flat.max(axis=d)
            elif p == -float("inf"):
                expected = flat.min(axis=d)
            elif p == 0:
                expected = (flat != 0).sum(axis=d).astype(np.float64)
            else:
                expected = (flat ** p).sum(axis=d) ** (1 / p)
            check(x.norm(p, dim=d), expected, atol=1e-9)
    check(x.norm(dim=1, keepdim=True), np.linalg.norm(a, axis=1, keepdims=True))
    check(torch.norm(T(a.astype(np.float32)), dtype=torch.float64), np.linalg.norm(a), atol=1e-6)
    check(x.norm("nuc"), np.linalg.norm(a, "nuc"), atol=1e-6)     # the sum of singular values (issue 26)


def test_logsumexp_is_stable():
    x = torch.tensor([[1000.0, 1000.0], [-1000.0, -1000.0], [-np.inf, -np.inf], [np.inf, 1.0]])
    check(torch.logsumexp(x, 1), [1000 + np.log(2), -1000 + np.log(2), -np.inf, np.inf])
    g = torch.tensor([[1000.0, 1000.0, 0.0]], requires_grad=True)
    torch.logsumexp(g, 1).backward()
    check(g.grad, [[0.5, 0.5, 0.0]])


# ------------------------------------------------------------------------------------------ scans

def _np_cummax(a, dim, op):
    x = np.moveaxis(a, dim, -1)
    values, indices = np.empty_like(x), np.zeros(x.shape, np.int64)
    for pos in np.ndindex(*x.shape[:-1]):
        best, bi = x[pos + (0,)], 0
        for k in range(x.shape[-1]):
            v = x[pos + (k,)]
            if v != v or (best == best and op(v, best)):
                best, bi = v, k
            values[pos + (k,)], indices[pos + (k,)] = best, bi
    return np.moveaxis(values, -1, dim), np.moveaxis(indices, -1, dim)


def test_scans_match_numpy():
    for shape, layout in itertools.product([(6,), (3, 4), (2, 3, 4)], LAYOUTS):
        a = rand(*shape)
        x = T(a, layout)
        for d in range(-len(shape), len(shape)):
            check(x.cumsum(d), np.cumsum(a, d))
            check(torch.cumprod(x, d), np.cumprod(a, d))
            check(x.logcumsumexp(d), np.logaddexp.accumulate(a, d), atol=1e-12)
            for fn, op in ((torch.cummax, np.greater_equal), (torch.cummin, np.less_equal)):
                values, indices = fn(x, d)
                ev, ei = _np_cummax(a, d, op)
                check(values, ev)
                check(indices, ei)
    i = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.int32)
    check(i.cumsum(1, dtype=torch.float64), np.cumsum([[1, 2, 3], [4, 5, 6]], 1), dtype=torch.float64)
    check(torch.cumsum(torch.tensor([True, True, False]), 0), [1, 2, 2], dtype=torch.int64)


def test_scans_over_a_leading_dim():
    # the kept axis contiguous (<op>_scan_rows: a whole row at a time, each combining the row before): the same
    # per-column order as the strided walk, so float32 cumsums (float64 running sums) match bit for bit
    a = RNG.standard_normal((7, 3, 50)).astype(np.float32)
    for x, d in ((a, 0), (a, -3), (a, 1), (a.transpose(2, 1, 0), 2), (a[:, 0], 0)):
        t = torch.from_numpy(np.ascontiguousarray(x))
        check(t.cumsum(d), np.cumsum(x.astype(np.float64), d).astype(np.float32), dtype=torch.float32, atol=0, rtol=0)
        check(t.double().cumprod(d), np.cumprod(x.astype(np.float64), d), atol=0, rtol=1e-13)
        check(t.logcumsumexp(d), np.logaddexp.accumulate(x.astype(np.float64), d), atol=1e-5, rtol=1e-5)
    ai = RNG.integers(-3, 4, (5, 6))
    check(torch.from_numpy(ai).cumsum(0), np.cumsum(ai, 0), dtype=torch.int64)
    check(torch.from_numpy(ai.astype(np.int32)).cumprod(0), np.cumprod(ai, 0), dtype=torch.int64)
    check(torch.from_numpy(ai > 0).cumsum(0), np.cumsum(ai > 0, 0), dtype=torch.int64)
    check(torch.from_numpy(np.ascontiguousarray(a.transpose(1, 0, 2))).permute(1, 0, 2).cumsum(0),   # a view
          np.cumsum(a.astype(np.float64), 0).astype(np.float32), atol=0, rtol=0)
    h = torch.from_numpy(a[:, 0]).to(torch.float16)
    check(h.cumsum(0).float(), np.cumsum(a[:, 0].astype(np.float16).astype(np.float32), 0).astype(np.float16),
          atol=1e-2, rtol=1e-2)


def test_cummax_ties_and_nan():
    r = torch.cummax(torch.tensor([1.0, 3.0, 2.0, 3.0, np.nan, 5.0, np.nan]), 0)
    assert type(r).__name__ == "cummax"
    check(r.values, [1, 3, 3, 3, np.nan, np.nan, np.nan])
    check(r.indices, [0, 1, 1, 3, 4, 4, 6])          # ties move to the later index; NaN sticks
    r = torch.tensor([[2, 1, 1, 3]]).cummin(1)
    check(r.values, [[2, 1, 1, 1]])
    check(r.indices, [[0, 1, 2, 2]])
    check(torch.logcumsumexp(torch.tensor([-np.inf, -np.inf, 0.0, 1000.0]), 0),
          [-np.inf, -np.inf, 0.0, 1000.0])


def test_softmax_and_log_softmax():
    for shape, layout in itertools.product([(5,), (3, 4), (2, 3, 4)], LAYOUTS):
        a = rand(*shape, lo=-30, hi=30)
        x = T(a, layout)
        for d in range(-len(shape), len(shape)):
            e = np.exp(a - a.max(d, keepdims=True))
            check(x.softmax(d), e / e.sum(d, keepdims=True), atol=1e-12)
            check(torch.log_softmax(x, d), np.log(e / e.sum(d, keepdims=True)), atol=1e-9)
    big = torch.tensor([[1000.0, 0.0, -np.inf]])
    check(big.softmax(1), [[1, 0, 0]])
    check(big.log_softmax(-1), [[0, -1000, -np.inf]])
    f = torch.softmax(torch.tensor([[1.0, 2.0]]), 1, dtype=torch.float64)
    assert f.dtype == torch.float64
    check(torch.softmax(torch.zeros(0, 3), 1), np.zeros((0, 3)))
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.tensor([1, 2]).softmax(0)


# ------------------------------------------------------------------------------------------ matmul family

@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)),
                                   ((5, 2, 3), (3, 4)), ((3,), (5, 3, 2)), ((5, 2, 3), (3,)),
                                   ((2, 1, 2, 3), (4, 3, 2)), ((0, 3), (3, 2)), ((2, 0), (0, 3))])
def test_matmul_shapes(sa, sb):
    a, b = rand(*sa), rand(*sb)
    for la, lb in (("contiguous", "contiguous"), ("transposed", "sliced")):
        check(T(a, la) @ T(b, lb), np.matmul(a, b), atol=1e-12)
    if all(sa) and all(sb):
        fd_check(torch.matmul, T(a), T(b))


def test_matmul_family_and_errors():
    a, b, v, w = rand(2, 3), rand(3, 4), rand(3), rand(4)
    check(torch.mm(T(a), T(b, "transposed")), a @ b)
    check(torch.bmm(T(rand(2, 3, 4)), T(rand(2, 4, 5))).shape, (2, 3, 5))
    check(torch.mv(T(a), T(v)), a @ v)
    check(torch.dot(T(v), T(v, "sliced")), v @ v)
    check(torch.outer(T(v), T(w)), np.outer(v, w))
    c = rand(2, 4)
    check(torch.addmm(T(c), T(a), T(b), beta=0.5, alpha=2), 0.5 * c + 2 * a @ b)
    check(torch.addmm(T(np.full((2, 4), np.nan)), T(a), T(b), beta=0), a @ b)   # beta=0 ignores self
    b1, b2, bc = rand(2, 2, 3), rand(2, 3, 4), rand(4)
    check(torch.baddbmm(T(bc), T(b1), T(b2), alpha=3), bc + 3 * b1 @ b2)
    check(torch.tensor([[1, 2]]) @ torch.tensor([[3], [4]]), [[11]], dtype=torch.int64)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        torch.ones(2, 2) @ torch.ones(2, 2, dtype=torch.float64)      # torch 2.13 refuses mixed dtypes
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        torch.ones(2, 3) @ torch.ones(4, 5)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        torch.mm(torch.ones(2, 3), torch.ones(4, 5))
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D"):
        torch.tensor(1.0) @ torch.ones(2)
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        torch.dot(torch.ones(3), torch.ones(4))
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        torch.dot(torch.ones(1, 3), torch.ones(3))
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        torch.mm(torch.ones(3), torch.ones(3, 3))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        torch.bmm(torch.ones(3, 3), torch.ones(3, 3))


def test_matmul_of_mixed_dtypes_refused_before_recording():
    a = torch.ones(2, 2, requires_grad=True)
    b = torch.ones(2, 2, dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype"):   # as torch 2.13
        a @ b
    (a @ b.float()).sum().backward()
    assert a.grad is not None and a.grad.dtype == torch.float32
    check(a.grad, np.full((2, 2), 2.0))


EINSUM = [("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
          ("ii", [(3, 3)]), ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("i,i->", [(3,), (3,)]),
          ("i,j->ij", [(2,), (3,)]), ("...ij,...jk->...ik", [(2, 2, 3), (3, 2)]), ("ij,ij->i", [(2, 3), (2, 3)]),
          ("b i j, b j -> b i", [(2, 3, 2), (2, 2)]), ("ij,kj", [(2, 3), (4, 3)]), ("ij->j", [(3, 2)])]


@pytest.mark.parametrize("eq,shapes", EINSUM)
def test_einsum(eq, shapes):
    arrays = [rand(*s) for s in shapes]
    out = torch.einsum(eq, *[T(a) for a in arrays])
    check(out, np.einsum(eq.replace(" ", ""), *arrays), atol=1e-12)
    check(torch.einsum(eq, [T(a, "transposed") for a in arrays]), np.einsum(eq.replace(" ", ""), *arrays), atol=1e-12)
    fd_check(lambda *xs: torch.einsum(eq, *xs), *[T(a) for a in arrays], second=eq == "ij,jk->ik")


def test_einsum_errors():
    with pytest.raises(RuntimeError, match="more operands were provided than specified in the equation"):
        torch.einsum("ij->i", torch.ones(2, 2), torch.ones(2))


# ------------------------------------------------------------------------------------------ data movement

def test_cat_and_stack():
    a, b = rand(2, 3), rand(4, 3)
    check(torch.cat([T(a, "transposed"), T(b, "sliced")]), np.concatenate([a, b]))
    check(torch.cat((T(a), T(rand(2, 1))), dim=-1).shape, (2, 4))
    check(torch.concat([T(a)], 1), a)
    check(torch.cat([torch.tensor([]), T(a), torch.tensor([])], 1), a)   # legacy empty 1-D tensors skipped
    check(torch.cat([torch.tensor([1, 2]), torch.tensor([0.5])]), [1, 2, 0.5], dtype=torch.float32)
    check(torch.stack([T(a), T(a, "transposed")]), np.stack([a, a]))
    for d in range(-3, 3):
        check(torch.stack([T(a), T(2 * a)], d), np.stack([a, 2 * a], d))
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0. Expected size 3 "
                                           "but got size 2 for tensor number 1 in the list."):
        torch.cat([torch.ones(2, 3), torch.ones(2, 2)])
    with pytest.raises(RuntimeError, match="zero-dimensional tensor \\(at position 0\\) cannot be concatenated"):
        torch.cat([torch.tensor(1.0)])
    with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):
        torch.cat([])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2, 3\] at "
                                           r"entry 0 and \[3\] at entry 1"):
        torch.stack([torch.ones(2, 3), torch.ones(3)])


def test_roll_repeat_tile_flip():
    a = rand(3, 4)
    x = T(a, "transposed")
    check(x.roll(1, 0), np.roll(a, 1, 0))
    check(torch.roll(x, -5), np.roll(a, -5))
    check(x.roll((1, 2), (1, 0)), np.roll(a, (1, 2), (1, 0)))
    check(x.repeat(2, 1, 3), np.tile(a, (2, 1, 3)))
    check(x.repeat((1, 0)), np.zeros((3, 0)))
    check(x.tile(2), np.tile(a, 2))
    check(torch.tile(x, (2, 1, 1)), np.tile(a, (2, 1, 1)))
    check(x.flip(0, 1), a[::-1, ::-1])
    check(torch.tensor(2.0).flip(0), 2.0)
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be smaller"):
        x.repeat(2)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        x.roll((1, 2), 0)


def _np_scatter(a, dim, index, src, add=False):
    out = a.copy()
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[dim] = index[pos]
        v = src[pos] if np.ndim(src) else src
        if add:
            out[tuple(target)] += v
        else:
            out[tuple(target)] = v
    return out


def test_gather_scatter():
    a = rand(3, 4)
    index = np.array([[0, 3], [2, 2], [1, 0]])
    x = T(a, "transposed")
    check(torch.gather(x, 1, torch.tensor(index)), np.take_along_axis(a, index, 1))
    idx0 = np.array([[2, 0, 1]])                    # smaller than self apart from dim: allowed
    check(x.gather(0, torch.tensor(idx0)), np.array([[a[2, 0], a[0, 1], a[1, 2]]]))
    check(x.gather(-1, torch.tensor(index)), np.take_along_axis(a, index, 1))
    src = rand(3, 3)
    perm = np.array([[0, 1], [3, 2], [2, 0]])
    check(torch.scatter(x, 1, torch.tensor(perm), T(src)), _np_scatter(a, 1, perm, src))
    check(x.scatter(1, torch.tensor(perm), 7.0), _np_scatter(a, 1, perm, 7.0))
    check(x.scatter(1, torch.tensor(perm), value=-1), _np_scatter(a, 1, perm, -1.0))
    check(x.scatter(1, torch.tensor(perm), T(src), reduce="add"), _np_scatter(a, 1, perm, src, add=True))
    check(torch.scatter_add(x, 1, torch.tensor(index), T(src)), _np_scatter(a, 1, index, src, add=True))
    one_hot = torch.zeros(2, 3, dtype=torch.int64).scatter(1, torch.tensor([[1], [0]]), 1)
    check(one_hot, [[0, 1, 0], [1, 0, 0]], dtype=torch.int64)
    with pytest.raises(RuntimeError, match="index 4 is out of bounds for dimension 1 with size 4"):
        x.gather(1, torch.tensor([[4]]))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with size 3"):
        x.gather(0, torch.tensor([[-1]]))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions"):
        x.gather(0, torch.tensor([1]))
    with pytest.raises(IndexError, match="Expected dtype int64 for index"):
        x.gather(0, torch.tensor([[1.0]]))


def test_index_select_index_add_take_put():
    a = rand(3, 4)
    x = T(a, "sliced")
    check(x.index_select(1, torch.tensor([3, 0, 3])), a[:, [3, 0, 3]])
    check(torch.index_select(x, -2, torch.tensor([2])), a[[2]])
    check(x.index_select(0, torch.tensor(1)), a[[1]])
    src = rand(2, 4)
    expected = a.copy()
    np.add.at(expected, [2, 2], 3 * src)
    check(x.index_add(0, torch.tensor([2, 2]), T(src), alpha=3), expected)
    check(torch.take(x, torch.tensor([[0, -1], [5, 11]])), a.reshape(-1)[[[0, -1], [5, 11]]])
    put = a.copy().reshape(-1)
    np.add.at(put, [1, 1, -1], [1.0, 2.0, 3.0])
    check(x.put(torch.tensor([1, 1, -1]), torch.tensor([1.0, 2.0, 3.0]), accumulate=True), put.reshape(3, 4))
    check(torch.put(x, torch.tensor([0]), torch.tensor([9.0])).numpy().reshape(-1)[0], 9.0)
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(0, torch.tensor([3]))
    with pytest.raises(IndexError, match="out of range: tried to access index 12 on a tensor of 12 elements."):
        torch.take(x, torch.tensor([12]))
    with pytest.raises(RuntimeError, match="source tensor shape must match self tensor shape, excluding the specified dim"):
        x.index_add(0, torch.tensor([0]), torch.ones(1, 3))


def test_masked_ops():
    a = rand(3, 4)
    m = a > 0
    x = T(a, "transposed")
    check(x.masked_fill(T(m), -1.0), np.where(m, -1.0, a))
    check(x.masked_fill(T(m[0]), torch.tensor(2.0)), np.where(m[0], 2.0, a))   # mask broadcasts
    check(torch.tensor([1, 2]).masked_fill(torch.tensor([True, False]), 7.9), [7, 2], dtype=torch.int64)
    check(x.masked_select(T(m)), a[m])
    check(torch.masked_select(x, T(m[:, :1])), a[np.broadcast_to(m[:, :1], a.shape)])
    src = rand(12)
    expected = a.copy()
    expected[m] = src[:m.sum()]
    check(x.masked_scatter(T(m), T(src)), expected)
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        x.masked_fill(torch.ones(3, 4), 0.0)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        x.masked_fill(T(m), torch.ones(2))


def test_sort_argsort_topk():
    a = np.array([[3.0, 1.0, np.nan, 1.0, 2.0], [0.0, -1.0, 0.0, 5.0, np.inf]])
    x = T(a, "transposed")
    r = torch.sort(x)
    assert type(r).__name__ == "sort"
    check(r.values, np.sort(a, 1))
    check(r.indices, np.argsort(a, 1, kind="stable"))
    r = x.sort(dim=1, descending=True, stable=True)
    check(r.values, [[np.nan, 3, 2, 1, 1], [np.inf, 5, 0, 0, -1]])
    check(r.indices, [[2, 0, 4, 1, 3], [4, 3, 0, 2, 1]])       # NaN largest; equal values keep their order
    check(torch.argsort(x, 0), np.argsort(a, 0, kind="stable"))
    check(torch.argsort(x, descending=True), [[2, 0, 4, 1, 3], [4, 3, 0, 2, 1]])
    b = rand(4, 6)
    for d in (0, 1, -1):
        for k in (0, 1, 3):
            values, indices = T(b).topk(k, d)
            check(values, -np.sort(-b, d).take(np.arange(k), d))
            check(np.take_along_axis(b, indices.numpy(), d), values.numpy())
            small = torch.topk(T(b, "sliced"), k, dim=d, largest=False)
            check(small.values, np.sort(b, d).take(np.arange(k), d))
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        T(b).topk(7)
    check(torch.sort(torch.tensor([True, False, True])).values, [False, True, True])


def test_unique_nonzero_argwhere():
    a = np.array([[3, 1, 3], [2, 1, 0]])
    x = T(a, "transposed")
    check(torch.unique(x), [0, 1, 2, 3])
    values, inverse, counts = x.unique(return_inverse=True, return_counts=True)
    check(values, [0, 1, 2, 3])
    check(inverse, [[3, 1, 3], [2, 1, 0]])
    check(counts, [1, 2, 1, 2])
    values, counts = torch.unique(x, return_counts=True)
    check(counts, [1, 2, 1, 2])
    rows = torch.unique(torch.tensor([[1, 2], [0, 0], [1, 2]]), dim=0, return_inverse=True)
    check(rows[0], [[0, 0], [1, 2]])
    check(rows[1], [1, 0, 1])
    check(torch.nonzero(x), np.argwhere(a))
    check(torch.argwhere(x), np.argwhere(a))
    parts = x.nonzero(as_tuple=True)
    assert isinstance(parts, tuple) and len(parts) == 2
    for got, want in zip(parts, np.nonzero(a)):
        check(got, want)
    assert torch.nonzero(torch.tensor(5)).shape == (1, 0)
    assert torch.nonzero(torch.tensor(0)).shape == (0, 0)
    check(torch.tensor(5).nonzero(as_tuple=True)[0], [0])
    assert torch.nonzero(torch.zeros(2, 3)).dtype == torch.int64


def test_tril_triu_pad():
    a = rand(2, 3, 4)
    x = T(a, "transposed")
    for k in (-1, 0, 2):
        check(x.tril(k), np.tril(a, k))
        check(torch.triu(x, diagonal=k), np.triu(a, k))
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        torch.ones(3).tril()
    b = rand(2, 3)
    check(torch.pad(T(b), (1, 2)), np.pad(b, ((0, 0), (1, 2))))
    check(torch.pad(T(b), (1, 0, 0, 2), value=5.0), np.pad(b, ((0, 2), (1, 0)), constant_values=5.0))
    check(torch.pad(T(b, "transposed"), (-1, 1, 1, -1)), np.pad(b[:1, 1:], ((1, 0), (0, 1))))
    check(torch.pad(T(b), (2, 1), mode="reflect"), np.pad(b, ((0, 0), (2, 1)), mode="reflect"))
    check(torch.pad(T(b), (2, 1, 1, 1), mode="replicate"), np.pad(b, ((1, 1), (2, 1)), mode="edge"))
    check(torch.pad(T(b), (2, 1), mode="circular"), np.pad(b, ((0, 0), (2, 1)), mode="wrap"))
    check(torch.pad(torch.tensor([1, 2]), (1, 1), value=3), [3, 1, 2, 3], dtype=torch.int64)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        torch.pad(T(b), (1,))
    with pytest.raises(RuntimeError, match="resulted in a negative output size"):
        torch.pad(T(b), (-2, -2))


def test_one_hot_bincount():
    check(torch.one_hot(torch.tensor([0, 2, 1])), np.eye(3, dtype=np.int64)[[0, 2, 1]], dtype=torch.int64)
    check(torch.one_hot(torch.tensor([[1], [0]]), 4), np.eye(4, dtype=np.int64)[[[1], [0]]])
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        torch.one_hot(torch.tensor([3]), 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        torch.one_hot(torch.tensor([-1]))
    check(torch.bincount(torch.tensor([0, 2, 2, 5])), [1, 0, 2, 0, 0, 1], dtype=torch.int64)
    check(torch.tensor([1, 1]).bincount(torch.tensor([0.5, 0.25]), minlength=3), [0, 0.75, 0],
          dtype=torch.float32)
    check(torch.bincount(torch.tensor([], dtype=torch.int64), minlength=2), [0, 0])
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs."):
        torch.bincount(torch.tensor([-1]))
    # complex weights: torch 2.13 sums their real parts into float64
    for dt in (torch.complex64, torch.complex128):
        w = torch.tensor([1 + 2j, 3 - 1j, 0.5 + 1j, 2j], dtype=dt)
        check(torch.bincount(torch.tensor([0, 1, 1, 3]), w), [1.0, 3.5, 0.0, 0.0], dtype=torch.float64)


# ------------------------------------------------------------------------------------------ gradients

Z = np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 0.5], [2.0, -3.0, 0.5, 1.0]])
IDX = np.array([[0, 3], [2, 2], [1, 0]])
PERM = np.array([[0, 1], [3, 2], [2, 0]])
MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])

GRADS = {
    # name: (function, input arrays, check second order)
    "prod": (lambda x: x.prod(1), [rand(3, 4)], True),
    "prod_all": (lambda x: x.prod(), [rand(2, 3)], True),
    "prod_zeros": (lambda x: x.prod(1), [Z], True),
    "prod_zeros_dims": (lambda x: torch.prod(x, (0, 1), keepdim=True), [Z[1:, :2]], True),
    "prod_zeros_all": (lambda x: x.prod(), [Z[:2, :2]], True),
    "cumprod": (lambda x: x.cumprod(-1), [rand(3, 4)], True),
    "cumprod_zeros": (lambda x: x.cumprod(1), [Z[:2]], True),
    "cumprod_zeros_dim0": (lambda x: x.cumprod(0), [Z[:, 1:]], False),
    "cumsum": (lambda x: x.cumsum(0), [rand(3, 2)], True),
    "amax": (lambda x: x.amax((0, -1)), [rand(2, 3, 2)], False),
    "amin": (lambda x: x.amin(1, keepdim=True), [rand(3, 4)], False),
    "max_dim": (lambda x: x.max(1).values, [rand(3, 4)], False),
    "min_dim": (lambda x: x.min(0, keepdim=True)[0], [rand(3, 4)], False),
    "mean": (lambda x: x.mean((0, 1)), [rand(2, 3, 2)], True),
    "var": (lambda x: x.var(1), [rand(3, 4)], True),
    "std": (lambda x: x.std(0, correction=0), [rand(3, 4)], True),
    "norm2": (lambda x: x.norm(), [rand(3, 4)], True),
    "norm1": (lambda x: x.norm(1, dim=1), [rand(3, 4)], False),
    "norm3": (lambda x: x.norm(3, dim=0, keepdim=True), [rand(3, 4)], True),
    "norm_half": (lambda x: x.norm(0.5), [rand(2, 3, lo=0.5)], True),
    "norm_inf": (lambda x: x.norm(float("inf"), dim=1), [rand(3, 4)], False),
    "logsumexp": (lambda x: torch.logsumexp(x, (0, 1)), [rand(3, 4)], True),
    "logcumsumexp": (lambda x: x.logcumsumexp(1), [rand(3, 4)], True),
    "softmax": (lambda x: x.softmax(0), [rand(3, 4)], True),
    "log_softmax": (lambda x: torch.log_softmax(x, -1), [rand(3, 4)], True),
    "cummax": (lambda x: torch.cummax(x, 1).values, [rand(3, 4)], False),
    "cummin": (lambda x: x.cummin(0)[0], [rand(3, 4)], False),
    "mm": (torch.mm, [rand(2, 3), rand(3, 2)], True),
    "bmm": (torch.bmm, [rand(2, 2, 3), rand(2, 3, 2)], False),
    "mv": (torch.mv, [rand(2, 3), rand(3)], True),
    "dot": (torch.dot, [rand(3), rand(3)], True),
    "outer": (torch.outer, [rand(3), rand(2)], True),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2), [rand(2), rand(2, 3), rand(3, 2)], False),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b, alpha=-1), [rand(2, 1, 2), rand(2, 2, 3), rand(2, 3, 2)],
                False),
    "cat": (lambda a, b: torch.cat([a, b], -1), [rand(2, 3), rand(2, 1)], True),
    "cat_legacy_empty": (lambda a, b: torch.cat([a, torch.tensor([], dtype=torch.float64), b]),
                         [rand(2, 3), rand(1, 3)], False),
    "stack": (lambda a, b: torch.stack([a, b], 1), [rand(2, 3), rand(2, 3)], False),
    "roll": (lambda x: x.roll((1, -2), (0, 1)), [rand(3, 4)], False),
    "repeat": (lambda x: x.repeat(2, 1, 2), [rand(2, 3)], True),
    "tile": (lambda x: x.tile(2), [rand(3)], False),
    "gather": (lambda x: torch.gather(x, 1, torch.tensor(IDX)), [rand(3, 4)], True),
    "scatter": (lambda x, s: torch.scatter(x, 1, torch.tensor(PERM), s), [rand(3, 4), rand(3, 3)], True),
    "scatter_value": (lambda x: x.scatter(1, torch.tensor(PERM), 2.0), [rand(3, 4)], False),
    "scatter_add": (lambda x, s: torch.scatter_add(x, 1, torch.tensor(IDX), s), [rand(3, 4), rand(3, 2)], True),
    "index_select": (lambda x: x.index_select(1, torch.tensor([3, 0, 3])), [rand(3, 4)], True),
    "index_add": (lambda x, s: x.index_add(0, torch.tensor([2, 0, 2]), s, alpha=2), [rand(3, 2), rand(3, 2)],
                  True),
    "masked_fill": (lambda x: x.masked_fill(torch.tensor(MASK), 0.5), [rand(3, 4)], False),
    "masked_select": (lambda x: x.masked_select(torch.tensor(MASK[0])), [rand(3, 4)], True),
    "masked_scatter": (lambda x, s: x.masked_scatter(torch.tensor(MASK), s), [rand(3, 4), rand(8)], True),
    "take": (lambda x: torch.take(x, torch.tensor([[0, -1], [5, 5]])), [rand(3, 4)], True),
    "put": (lambda x, s: x.put(torch.tensor([0, 5, 5]), s, accumulate=True), [rand(3, 4), rand(3)], True),
    "put_overwrite": (lambda x, s: x.put(torch.tensor([0, 5, 7]), s), [rand(3, 4), rand(3)], False),
    "sort": (lambda x: x.sort(1, descending=True).values, [rand(3, 4)], True),
    "topk": (lambda x: x.topk(2, 0).values, [rand(3, 4)], False),
    "tril": (lambda x: x.tril(-1), [rand(3, 4)], False),
    "triu": (lambda x: torch.triu(x, 1), [rand(2, 3, 3)], False),
    "pad_constant": (lambda x: torch.pad(x, (1, 2, 0, 1), value=3.0), [rand(2, 3)], True),
    "pad_negative": (lambda x: torch.pad(x, (-1, 2, 1, -1)), [rand(3, 3)], True),
    "pad_reflect": (lambda x: torch.pad(x, (2, 1), mode="reflect"), [rand(2, 4)], True),
    "pad_replicate": (lambda x: torch.pad(x, (2, 1, 1, 1), mode="replicate"), [rand(2, 3)], False),
    "pad_circular": (lambda x: torch.pad(x, (2, 1), mode="circular"), [rand(2, 3)], False),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradient_by_finite_differences(name):
    fn, arrays, second = GRADS[name]
    fd_check(fn, *[T(a) for a in arrays], second=second)
    if any(np.ndim(a) >= 2 for a in arrays):        # the same through non-contiguous views
        fd_check(fn, *[T(a, "transposed" if np.ndim(a) >= 2 else "contiguous") for a in arrays])


def test_prod_and_cumprod_gradients_with_zeros_are_exact():
    x = T([[2.0, 0.0, 3.0], [0.0, 0.0, 4.0], [1.0, 2.0, 3.0]], grad=True)
    x.prod(1).sum().backward()
    check(x.grad, [[0, 6, 0], [0, 0, 0], [6, 3, 2]])
    y = T([2.0, 0.0, 3.0, 4.0], grad=True)
    y.cumprod(0).sum().backward()
    # out = [2, 0, 0, 0]: d/dx0 = 1, d/dx1 = 2 + 2*3 + 2*3*4, later elements only meet the zero
    check(y.grad, [1, 32, 0, 0])
    assert not np.isnan(y.grad.numpy()).any()


# ------------------------------------------------------------------------ in-place data movement

INPLACE_MOVEMENT = {
    "scatter_": (lambda x: x.scatter_(0, torch.tensor([[2, 0, 1, 2]]), torch.ones(1, 4, dtype=x.dtype)),
                 lambda a: (a.__setitem__((np.array([2, 0, 1, 2]), np.arange(4)), 1.0), a)[1]),
    "scatter_add_": (lambda x: x.scatter_add_(1, torch.tensor([[0, 0], [3, 1], [2, 2]]),
                                              torch.ones(3, 2, dtype=x.dtype)),   # torch: src of self's dtype
                     lambda a: a + np.array([[2, 0, 0, 0], [0, 1, 0, 1], [0, 0, 2, 0]])),
    "index_add_": (lambda x: x.index_add_(1, torch.tensor([0, 2, 0]), torch.ones(3, 3), alpha=2),
                   lambda a: a + np.array([[4, 0, 2, 0]] * 3)),
    "masked_fill_": (lambda x: x.masked_fill_(torch.tensor([True, False, False, True]), -7.0),
                     lambda a: np.where([True, False, False, True], -7.0, a)),
    "index_fill_": (lambda x: x.index_fill_(0, torch.tensor([1]), 5.0),
                    lambda a: (a.__setitem__(1, 5.0), a)[1]),
    "index_copy_": (lambda x: x.index_copy_(1, torch.tensor([3, 0]), torch.full((3, 2), 9.0)),
                    lambda a: (a.__setitem__((slice(None), [3, 0]), 9.0), a)[1]),
}


@pytest.mark.parametrize("name", sorted(INPLACE_MOVEMENT))
def test_inplace_movement_writes_self_and_keeps_storage(name):
    op, expect = INPLACE_MOVEMENT[name]
    a = rand(3, 4)
    x = torch.tensor(a)
    storage, version = x.data_ptr(), x._version
    out = op(x)
    assert out is x and x.data_ptr() == storage and x._version > version
    np.testing.assert_allclose(x.numpy(), expect(a.copy()))


@pytest.mark.parametrize("name", sorted(INPLACE_MOVEMENT))
def test_inplace_movement_continues_the_graph(name):
    op, expect = INPLACE_MOVEMENT[name]
    a = rand(3, 4)
    w = torch.tensor(a, requires_grad=True)
    y = w * 3
    op(y)
    (y * y).sum().backward()
    # d/dw sum(f(3w)^2) = 6 * f(3w) * [position still holds w's value]
    kept = expect(np.full((3, 4), 1e9)) == 1e9 if name not in ("scatter_add_", "index_add_") else np.ones((3, 4), bool)
    ref = 6 * expect(3 * a.copy()) * kept
    np.testing.assert_allclose(w.grad.numpy(), ref, rtol=1e-12)


def test_inplace_movement_errors_leave_self_unchanged():
    x = torch.zeros(3, 4)
    with pytest.raises(RuntimeError, match="index_copy_\\(\\): Source/destination tensor must have same slice shapes"):
        x.index_copy_(1, torch.tensor([0, 1]), torch.ones(3, 3))
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 3"):
        x.index_fill_(0, torch.tensor([7]), 1.0)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch.zeros(3, dtype=torch.int64).index_add_(0, torch.tensor([0]), torch.ones(1))
    assert not x.any().item()
    leaf = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        leaf.masked_fill_(torch.tensor([True, False, True]), 1.0)
