"""nn.functional.scaled_dot_product_attention as one op (ops.yaml: _sdpa) on cpu float tensors without a mask
or dropout: values and gradients against NumPy, causal masks of every aspect, second derivatives, and the
op-by-op path that masks and dropout still take."""
from __future__ import annotations

import numpy as np
import pytest

import reftorch as torch
from reftorch.autograd.gradcheck import gradcheck, gradgradcheck


def ref(q, k, v, causal):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tri(s.shape[-2], s.shape[-1], dtype=bool), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("causal,L,S", [(True, 5, 5), (False, 4, 6), (True, 3, 6), (True, 6, 3)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_values(causal, L, S, dtype):
    rng = np.random.default_rng(0)
    npdt = np.float32 if dtype == torch.float32 else np.float64
    q, k, v = (rng.standard_normal(s).astype(npdt) for s in ((2, 3, L, 8), (2, 3, S, 8), (2, 3, S, 4)))
    out = torch.nn.functional.scaled_dot_product_attention(*map(torch.from_numpy, (q, k, v)), is_causal=causal)
    assert out.dtype == dtype and tuple(out.shape) == (2, 3, L, 4)
    np.testing.assert_allclose(out.numpy(), ref(*(a.astype(np.float64) for a in (q, k, v)), causal),
                               atol=1e-5 if dtype == torch.float32 else 1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_first_and_second_derivatives(causal):
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 3, 2, dtype=torch.float64, requires_grad=True) for _ in range(3))
    fn = lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)     # noqa
    assert fn(q, k, v).grad_fn is not None
    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))


def test_masked_and_dropout_calls_keep_their_path():
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 4, 3) for _ in range(3))
    keep = torch.tensor([[True, False, True, True]] * 4)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    s = q.numpy() @ np.swapaxes(k.numpy(), -1, -2) / np.sqrt(3)
    s = np.where(keep.numpy(), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), (p / p.sum(-1, keepdims=True)) @ v.numpy(), atol=1e-6)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep, is_causal=True)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert tuple(out.shape) == (2, 4, 3) and np.isfinite(out.numpy()).all()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_16_bit_attention_is_one_op_computed_in_float32(dtype):
    """bfloat16/float16 take the one op too (autocast lowers attention's inputs to them): scores, softmax and the
    product computed in float32 from the 16-bit inputs and rounded once, as torch's CPU flash attention keeps
    float32 accumulators; the op-by-op path rounded each intermediate (about half the outputs then differed from
    torch's in the last bit, against a third)."""
    rng = np.random.default_rng(1)
    q, k, v, g = (torch.from_numpy(rng.standard_normal((2, 2, 6, 8)).astype(np.float32)).to(dtype) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_()
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert out.dtype == dtype and out.grad_fn.name() == "SdpaBackward0"
    f32 = [t.detach().float().requires_grad_() for t in (q, k, v)]
    want = torch.nn.functional.scaled_dot_product_attention(*f32, is_causal=True)
    assert torch.equal(out, want.to(dtype))
    out.backward(g)
    want.backward(g.float())
    for t, w in zip((q, k, v), f32):
        assert t.grad.dtype == dtype and torch.equal(t.grad, w.grad.to(dtype))
