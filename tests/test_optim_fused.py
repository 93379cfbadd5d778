"""Adam's generated update kernels (ops.yaml: _adam_exp_avg, _adam_exp_avg_sq, _adam_param) against
the per-op Adam they replace, step by step, for every option."""
from __future__ import annotations

import numpy as np
import pytest

import reftorch as torch
from reftorch import optim


def per_op_adam_step(params, states, lr, betas, eps, weight_decay, amsgrad, maximize, decoupled):
    """Adam written op by op with the public Tensor API (optim.Adam before it used the fused kernels)."""
    beta1, beta2 = betas
    with torch.no_grad():
        for p, st in zip(params, states):
            grad = p.grad
            if maximize:
                grad = -grad
            st["step"] += 1
            step = st["step"]
            if weight_decay != 0:
                if decoupled:
                    p.mul_(1 - lr * weight_decay)
                else:
                    grad = grad.add(p, alpha=weight_decay)
            st["m"].lerp_(grad, 1 - beta1)
            st["v"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            bc1 = 1 - beta1 ** step
            bc2_sqrt = (1 - beta2 ** step) ** 0.5
            if amsgrad:
                st["vmax"].copy_(torch.maximum(st["vmax"], st["v"]))
                denom = (st["vmax"].sqrt() / bc2_sqrt).add_(eps)
            else:
                denom = (st["v"].sqrt() / bc2_sqrt).add_(eps)
            p.addcdiv_(st["m"], denom, value=-lr / bc1)


CASES = [
    dict(),
    dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
    dict(lr=0.01, amsgrad=True),
    dict(lr=0.01, maximize=True, amsgrad=True, weight_decay=0.05),
    dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
    dict(lr=0.02, weight_decay=0.3, decoupled_weight_decay=True, amsgrad=True, maximize=True),
    dict(lr=0.05, betas=(0.3, 0.9)),        # 1 - beta1 >= 0.5: lerp's other branch
    dict(lr=0.05, betas=(0.0, 0.0)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", CASES, ids=[str(i) for i in range(len(CASES))])
def test_fused_adam_matches_per_op_adam(kw, dtype):
    dt = getattr(torch, dtype)
    rng = np.random.default_rng(0)
    shapes = [(7, 5), (5,), (), (3, 4, 2)]
    inits = [rng.standard_normal(s) for s in shapes]
    ours = [torch.tensor(a, dtype=dt, requires_grad=True) for a in inits]
    ref = [torch.tensor(a, dtype=dt, requires_grad=True) for a in inits]
    opt = optim.Adam(ours, **kw)
    full = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False,
                decoupled_weight_decay=False)
    full.update(kw)
    states = [dict(step=0, m=torch.zeros_like(p), v=torch.zeros_like(p), vmax=torch.zeros_like(p)) for p in ref]
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    for _ in range(4):
        grads = [rng.standard_normal(s) for s in shapes]
        for p, q, g in zip(ours, ref, grads):
            p.grad = torch.tensor(g, dtype=dt)
            q.grad = torch.tensor(g, dtype=dt)
        opt.step()
        per_op_adam_step(ref, states, full["lr"], full["betas"], full["eps"], full["weight_decay"], full["amsgrad"],
                         full["maximize"], full["decoupled_weight_decay"])
        for p, q, st in zip(ours, ref, states):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), **tol)
            s = opt.state[p]
            np.testing.assert_allclose(s["exp_avg"].numpy(), st["m"].numpy(), **tol)
            np.testing.assert_allclose(s["exp_avg_sq"].numpy(), st["v"].numpy(), **tol)
            if full["amsgrad"]:
                np.testing.assert_allclose(s["max_exp_avg_sq"].numpy(), st["vmax"].numpy(), **tol)


def test_fused_adam_strided_grad_and_param():
    """A transposed gradient and a parameter that is a non-contiguous view still update correctly."""
    rng = np.random.default_rng(1)
    base = torch.tensor(rng.standard_normal((6, 4)), dtype=torch.float64)
    p = base.detach().t().requires_grad_()           # a non-contiguous leaf
    q = torch.tensor(base.numpy().T.copy(), requires_grad=True)
    opt = optim.AdamW([p], lr=0.1, weight_decay=0.2, amsgrad=True)
    states = [dict(step=0, m=torch.zeros_like(q), v=torch.zeros_like(q), vmax=torch.zeros_like(q))]
    for _ in range(3):
        g = rng.standard_normal((6, 4))
        p.grad = torch.tensor(g).t()                  # transposed gradient
        q.grad = torch.tensor(g.T.copy())
        opt.step()
        per_op_adam_step([q], states, 0.1, (0.9, 0.999), 1e-8, 0.2, True, False, True)
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-12, atol=1e-13)


def test_fused_adam_kernels_skip_params_without_grad():
    a = torch.ones(3, requires_grad=True)
    b = torch.ones(3, requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = torch.ones(3)
    opt.step()
    assert np.all(a.detach().numpy() < 1) and np.all(b.detach().numpy() == 1)
    assert len(opt.state[b]) == 0
