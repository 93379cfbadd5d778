"""Optional: nn layers, functionals and losses against PyTorch itself (same weights, float64).

Skipped unless `import torch` works (PyTorch is not a dependency; install it in a separate environment
and put reftorch on its path to run these)."""
import numpy as np
import pytest

torch_ref = pytest.importorskip("torch")

import reftorch as rt  # noqa: E402

RNG = np.random.default_rng(7)


def R(*shape):
    return RNG.standard_normal(shape)


def _run(lib, fn, arrays, grad_mask):
    ts = [lib.tensor(a, requires_grad=g) for a, g in zip(arrays, grad_mask)]
    out = fn(lib, *ts)
    out = out[0] if isinstance(out, tuple) else out
    weights = np.cos(np.arange(out.numel())).reshape(tuple(out.shape))
    out.backward(lib.tensor(weights))
    return out.detach().numpy().copy(), [t.grad.numpy().copy() for t, g in zip(ts, grad_mask) if g]


def check(fn, arrays, ints=(), tol=1e-9):
    mask = [i not in ints and np.issubdtype(np.asarray(a).dtype, np.floating) for i, a in enumerate(arrays)]
    out_t, grads_t = _run(torch_ref, fn, arrays, mask)
    out_r, grads_r = _run(rt, fn, arrays, mask)
    np.testing.assert_allclose(out_r, out_t, rtol=tol, atol=tol)
    for a, b in zip(grads_r, grads_t):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def F(lib):
    return lib.nn.functional


CASES = {
    "conv2d": (lambda L, x, w, b: F(L).conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2)),
               [R(2, 4, 7, 6), R(3, 4, 3, 2), R(3)]),
    "conv2d_same_groups": (lambda L, x, w: F(L).conv2d(x, w, padding="same", groups=2), [R(2, 4, 7, 6), R(6, 2, 4, 3)]),
    "conv_transpose2d": (lambda L, x, w: F(L).conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
                         [R(2, 3, 4, 5), R(3, 2, 3, 3)]),
    "max_pool2d": (lambda L, x: F(L).max_pool2d(x, 3, 2, 1, ceil_mode=True), [R(2, 3, 7, 6)]),
    "avg_pool2d": (lambda L, x: F(L).avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                   [R(2, 3, 7, 6)]),
    "adaptive_avg_pool2d": (lambda L, x: F(L).adaptive_avg_pool2d(x, (3, 4)), [R(2, 3, 7, 6)]),
    "interpolate_bilinear": (lambda L, x: F(L).interpolate(x, scale_factor=1.7, mode="bilinear"), [R(1, 2, 5, 4)]),
    "layer_norm": (lambda L, x, w, b: F(L).layer_norm(x, (4,), w, b), [R(3, 5, 4), R(4), R(4)]),
    "group_norm": (lambda L, x: F(L).group_norm(x, 2), [R(2, 4, 3)]),
    "batch_norm": (lambda L, x: F(L).batch_norm(x, None, None, training=True), [R(5, 3, 2)]),
    "gelu": (lambda L, x: F(L).gelu(x), [R(20)]),
    "hardswish": (lambda L, x: F(L).hardswish(x), [R(20) * 4]),
    "sdpa_causal": (lambda L, q, k, v: F(L).scaled_dot_product_attention(q, k, v, is_causal=True),
                    [R(2, 4, 8), R(2, 6, 8), R(2, 6, 3)]),
    "cross_entropy": (lambda L, x, t, w: F(L).cross_entropy(x, t, w, label_smoothing=0.2, ignore_index=1),
                      [R(6, 4), RNG.integers(0, 4, 6), RNG.random(4) + 0.5]),
    "bce_with_logits": (lambda L, x, y, pw: F(L).binary_cross_entropy_with_logits(x, y, pos_weight=pw),
                        [R(3, 4), RNG.random((3, 4)), RNG.random(4)]),
    "kl_div": (lambda L, x, y: F(L).kl_div(x, y, reduction="batchmean", log_target=True), [R(3, 4), R(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_functional_matches_pytorch(name):
    fn, arrays = CASES[name]
    ints = tuple(i for i, a in enumerate(arrays) if name in ("cross_entropy", "bce_with_logits") and i == 2)
    check(fn, arrays, ints=ints)


@pytest.mark.parametrize("ctor,shape", [
    (lambda nn: nn.LSTM(3, 4, 2, batch_first=True, bidirectional=True), (2, 5, 3)),
    (lambda nn: nn.GRU(3, 4), (5, 2, 3)),
    (lambda nn: nn.MultiheadAttention(8, 2, batch_first=True), (2, 5, 8)),
    (lambda nn: nn.BatchNorm2d(3), (4, 3, 2, 2)),
    (lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=True), (2, 5, 8)),
])
def test_modules_match_pytorch(ctor, shape):
    torch_ref.set_default_dtype(torch_ref.float64)
    try:
        tm = ctor(torch_ref.nn)
        rm = ctor(rt.nn).double()
        rm.load_state_dict({k: rt.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
        x = R(*shape)
        args = (x, x, x) if isinstance(tm, torch_ref.nn.MultiheadAttention) else (x,)
        for _ in range(2):
            out_t = tm(*[torch_ref.tensor(a) for a in args])
            out_r = rm(*[rt.tensor(a) for a in args])
        out_t = out_t[0] if isinstance(out_t, tuple) else out_t
        out_r = out_r[0] if isinstance(out_r, tuple) else out_r
        np.testing.assert_allclose(out_r.detach().numpy(), out_t.detach().numpy(), rtol=1e-9, atol=1e-9)
        for k, v in tm.state_dict().items():
            np.testing.assert_allclose(rm.state_dict()[k].numpy(), v.numpy(), rtol=1e-9, atol=1e-9)
    finally:
        torch_ref.set_default_dtype(torch_ref.float32)
