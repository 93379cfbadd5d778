"""optim.Adam's multi-tensor step (ops.yaml: _adam_step, one kernel call over all parameters) gives the same bits
as its per-parameter loop (foreach=False), and the foreach kernel's own rules."""
import numpy as np
import pytest

import reftorch as torch


def _run(opt_cls, foreach, dtype, steps=3, **kw):
    rng = np.random.default_rng(0)
    shapes = [(3, 4), (4,), (5, 2), (1,), (2, 3, 2), (7,), (3,), (2, 2), (6,), (4, 1)]   # more than one chunk
    ps = [torch.tensor(rng.standard_normal(s), dtype=dtype, requires_grad=True) for s in shapes]
    opt = opt_cls(ps, lr=0.1, foreach=foreach, **kw)
    for step in range(steps):
        opt.zero_grad()
        for i, p in enumerate(ps):
            if step == 1 and i == 2:
                continue        # a parameter that misses a step: its step count differs from the others'
            g = rng.standard_normal(p.shape[::-1]) if p.dim() == 2 else rng.standard_normal(p.shape)
            g = torch.tensor(g, dtype=dtype)
            p.grad = g.t() if p.dim() == 2 else g          # transposed (non-contiguous) gradients too
        opt.step()
    return [p.detach().numpy().copy() for p in ps], opt


@pytest.mark.parametrize("kw", [{}, {"weight_decay": 0.1}, {"maximize": True}, {"weight_decay": 0.05, "maximize": True}])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_adam_foreach_bits_equal_loop(kw, dtype):
    a, _ = _run(torch.optim.Adam, None, dtype, **kw)
    b, _ = _run(torch.optim.Adam, False, dtype, **kw)
    for x, y in zip(a, b):
        assert x.tobytes() == y.tobytes()


def test_adamw_foreach_bits_equal_loop():
    a, oa = _run(torch.optim.AdamW, None, torch.float32, weight_decay=0.1)
    b, ob = _run(torch.optim.AdamW, False, torch.float32, weight_decay=0.1)
    for x, y in zip(a, b):
        assert x.tobytes() == y.tobytes()
    for pa, pb in zip(oa.state.values(), ob.state.values()):
        assert pa["exp_avg"].numpy().tobytes() == pb["exp_avg"].numpy().tobytes()
        assert pa["exp_avg_sq"].numpy().tobytes() == pb["exp_avg_sq"].numpy().tobytes()
        assert pa["step"].item() == pb["step"].item()


def test_foreach_op_rules():
    p = torch.zeros(3)
    m, v = torch.zeros(3), torch.zeros(3)
    version = p._version
    torch._adam_step([p], [torch.ones(3)], [m], [v], 0.9, 0.999, 0.1, 0.0, False, False, 0.1, (1 - 0.999) ** 0.5, 1e-8)
    assert p._version > version and np.allclose(p.numpy(), -0.1) and np.allclose(m.numpy(), 0.1)
    with pytest.raises(RuntimeError, match="same number of tensors"):
        torch._adam_step([p], [], [m], [v], 0.9, 0.999, 0.1, 0.0, False, False, 0.1, 0.1, 1e-8)
    with pytest.raises(RuntimeError, match="same dtype"):
        torch._adam_step([p], [torch.ones(3, dtype=torch.float64)], [m], [v], 0.9, 0.999, 0.1, 0.0, False, False,
                         0.1, 0.1, 1e-8)
    with pytest.raises(RuntimeError, match="same shape"):
        torch._adam_step([p], [torch.ones(4)], [m], [v], 0.9, 0.999, 0.1, 0.0, False, False, 0.1, 0.1, 1e-8)
    leaf = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place operation"):
        torch._adam_step([leaf], [torch.ones(3)], [m], [v], 0.9, 0.999, 0.1, 0.0, False, False, 0.1, 0.1, 1e-8)


def test_foreach_add_and_read_only_inputs():
    a, b = torch.zeros(3), torch.tensor(2.0)
    torch._foreach_add_([a, b], 1.0)
    assert a.tolist() == [1.0, 1.0, 1.0] and b.item() == 3.0
    g = np.ones(3, np.float32)
    g.flags.writeable = False
    p, m, v = torch.zeros(3), torch.zeros(3), torch.zeros(3)
    gt = torch.from_numpy(g)
    torch._adam_step([p], [gt], [m], [v], 0.9, 0.999, 0.1, 0.0, False, False, 0.1, (1 - 0.999) ** 0.5, 1e-8)
    assert np.allclose(p.numpy(), -0.1)
    with pytest.raises(ValueError, match="read-only"):
        torch._adam_step([gt], [p], [m], [v], 0.9, 0.999, 0.1, 0.0, False, False, 0.1, 0.1, 1e-8)
