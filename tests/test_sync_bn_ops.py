"""SyncBatchNorm's statistics ops (issue surface16): torch.batch_norm_stats / elemt / gather_stats(_with_counts) /
backward_reduce / backward_elemt / update_stats, checked against the NumPy formulas of PyTorch's kernels (statistics
per channel, dim 1, over every other dim), and the identities SyncBatchNorm relies on: gathering the replicas' stats
gives the whole batch's, and reduce + elemt give batch norm's input gradient."""
import numpy as np
import pytest

import reftorch as torch

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3, 5))
G = RNG.standard_normal((4, 3, 5))
W = np.array([1.0, 2.0, 3.0])
B = np.array([0.5, -0.5, 0.0])
EPS = 1e-5


def _t(a, dtype=torch.float64):
    return torch.tensor(a, dtype=dtype)


def _np_stats(x):
    axes = (0,) + tuple(range(2, x.ndim))
    return x.mean(axes), x.var(axes)


def test_stats_mean_and_invstd_in_the_accumulate_dtype():
    mean, var = _np_stats(X)
    m, s = torch.batch_norm_stats(_t(X), EPS)
    np.testing.assert_allclose(m.numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(s.numpy(), 1 / np.sqrt(var + EPS), rtol=1e-12)
    assert m.dtype == torch.float64
    for dt in (torch.float16, torch.bfloat16, torch.float32):
        m, s = torch.batch_norm_stats(_t(X, dt), EPS)
        assert m.dtype == s.dtype == torch.float32 and m.shape == (3,)
    m, s = torch.batch_norm_stats(torch.ones(2, 3), 0.0)       # var 0 and eps 0: invstd 0, not inf
    assert s.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(NotImplementedError, match="\"batch_norm_stats_cuda\" not implemented for 'Long'"):
        torch.batch_norm_stats(torch.ones(2, 3, dtype=torch.long), EPS)
    with pytest.raises(IndexError, match="Dimension specified as 1 but tensor has no dimensions"):
        torch.batch_norm_stats(torch.tensor(1.0), EPS)


def test_elemt_normalizes_with_given_stats():
    mean, var = _np_stats(X)
    inv = 1 / np.sqrt(var + EPS)
    want = (X - mean[:, None]) * inv[:, None] * W[:, None] + B[:, None]
    got = torch.batch_norm_elemt(_t(X), _t(W), _t(B), _t(mean), _t(inv), EPS)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    out = torch.empty(4, 3, 5, dtype=torch.float64)
    assert torch.batch_norm_elemt(_t(X), None, None, _t(mean), _t(inv), EPS, out=out) is out
    np.testing.assert_allclose(out.numpy(), (X - mean[:, None]) * inv[:, None], rtol=1e-12)
    half = torch.batch_norm_elemt(_t(X, torch.float16), None, None, _t(mean, torch.float32), _t(inv, torch.float32),
                                  EPS)
    assert half.dtype == torch.float16


def test_gather_of_replica_stats_is_the_whole_batch():
    parts = [X[:1], X[1:4]]                         # replicas of 1 and 3 samples
    counts = [p.shape[0] * p.shape[2] for p in parts]
    stats = [torch.batch_norm_stats(_t(p), EPS) for p in parts]
    means = torch.stack([m for m, _ in stats])
    invstds = torch.stack([s for _, s in stats])
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    m, s = torch.batch_norm_gather_stats_with_counts(_t(X), means, invstds, rm, rv, 0.1, EPS,
                                                     _t(np.array(counts, float)))
    mean, var = _np_stats(X)
    n = X.size // 3
    np.testing.assert_allclose(m.numpy(), mean, rtol=1e-10)
    np.testing.assert_allclose(s.numpy(), 1 / np.sqrt(var + EPS), rtol=1e-8)
    np.testing.assert_allclose(rm.numpy(), 0.1 * mean, rtol=1e-10)
    np.testing.assert_allclose(rv.numpy(), 0.9 + 0.1 * var * n / (n - 1), rtol=1e-8)
    # the int count form: every replica the same size
    even = [torch.batch_norm_stats(_t(p), EPS) for p in (X[:2], X[2:])]
    m2, s2 = torch.batch_norm_gather_stats(_t(X), torch.stack([a for a, _ in even]), torch.stack([b for _, b in even]),
                                           None, None, 0.1, EPS, 10)
    np.testing.assert_allclose(m2.numpy(), mean, rtol=1e-10)
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Long"):
        torch.batch_norm_gather_stats_with_counts(_t(X), means, invstds, None, None, 0.1, EPS, torch.tensor([5, 15]))


def test_backward_reduce_and_elemt_give_batch_norm_gradients():
    mean, var = _np_stats(X)
    inv = 1 / np.sqrt(var + EPS)
    sum_dy, sum_dy_xmu, gw, gb = torch.batch_norm_backward_reduce(_t(G), _t(X), _t(mean), _t(inv), _t(W),
                                                                  True, True, True)
    np.testing.assert_allclose(sum_dy.numpy(), G.sum((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(sum_dy_xmu.numpy(), (G * (X - mean[:, None])).sum((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), (G * (X - mean[:, None])).sum((0, 2)) * inv, rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), G.sum((0, 2)), rtol=1e-12)
    only_w = torch.batch_norm_backward_reduce(_t(G), _t(X), _t(mean), _t(inv), _t(W), False, True, False)
    assert only_w[0] is None and only_w[1] is None and only_w[3] is None and only_w[2].shape == (3,)
    gi = torch.batch_norm_backward_elemt(_t(G), _t(X), _t(mean), _t(inv), _t(W), sum_dy, sum_dy_xmu,
                                         torch.tensor([20], dtype=torch.int32))
    x = _t(X).requires_grad_()          # the same gradient through the differentiable batch_norm
    y = torch.nn.functional.batch_norm(x, None, None, _t(W), _t(B), training=True, eps=EPS)
    y.backward(_t(G))
    np.testing.assert_allclose(gi.numpy(), x.grad.numpy(), rtol=1e-9, atol=1e-12)
    with pytest.raises(RuntimeError, match="expected scalar type Int but found Long"):
        torch.batch_norm_backward_elemt(_t(G), _t(X), _t(mean), _t(inv), _t(W), sum_dy, sum_dy_xmu, torch.tensor([20]))


def test_update_stats_on_cpu():
    x = _t(X, torch.float32)
    rm, rv = torch.zeros(3), torch.ones(3)
    m, v = torch.batch_norm_update_stats(x, rm, rv, 0.3)
    mean, var = _np_stats(X.astype(np.float32).astype(np.float64))
    n = X.size // 3
    np.testing.assert_allclose(m.numpy(), mean, rtol=1e-6)
    np.testing.assert_allclose(v.numpy(), var, rtol=1e-6)          # the biased variance
    np.testing.assert_allclose(rm.numpy(), 0.3 * mean, rtol=1e-6)
    np.testing.assert_allclose(rv.numpy(), 0.7 + 0.3 * var * n / (n - 1), rtol=1e-6)
    assert torch.batch_norm_update_stats(x.half(), None, None, 0.1)[0].dtype == torch.float16     # cpu: input's
    assert torch.batch_norm_update_stats(x.half(), torch.zeros(3), torch.ones(3), 0.1)[0].dtype == torch.float32
    with pytest.raises(RuntimeError, match="mixed dtype \\(CPU\\): expect parameter to have scalar type of Float"):
        torch.batch_norm_update_stats(x, torch.zeros(3).double(), torch.ones(3).double(), 0.1)
    with pytest.raises(RuntimeError, match="input tensor must have at least one element"):
        torch.batch_norm_update_stats(torch.ones(0, 3), None, None, 0.1)


def test_outputs_have_no_derivative():
    x = _t(X).requires_grad_()
    m, s = torch.batch_norm_stats(x, EPS)
    assert m.requires_grad
    with pytest.raises(RuntimeError, match="derivative for aten::batch_norm_stats is not implemented"):
        m.sum().backward()
