"""The side-by-side check behind the optim2 tests' hard-coded numbers: run each case in real torch 2.13 too.

Skipped where torch is not installed (CI); run it in the bench venv to re-check the written-out values:
    PYTHONPATH=$PWD /work/benchvenv/bin/python -m pytest -q tests/test_optim2_vs_torch.py
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_optim2_optimizers import B0, TORCH_RUNS, W0, X, Y, _options  # noqa: E402
from test_optim2_schedulers import TORCH_TRACES  # noqa: E402


def _torch_run(cls, kw, steps):
    w = torch.tensor(W0.copy(), requires_grad=True)
    b = torch.tensor(B0.copy(), requires_grad=True)
    x, y = torch.tensor(X), torch.tensor(Y)
    opt = getattr(torch.optim, cls)([w, b], **_options(kw))

    def closure():
        opt.zero_grad()
        loss = (((x @ w.t() + b) - y) ** 2).mean() + 0.1 * (w ** 4).sum()
        loss.backward()
        return loss

    losses = [float(opt.step(closure).detach()) for _ in range(steps)]
    return np.concatenate([w.detach().numpy().ravel(), b.detach().numpy().ravel()]), losses


@pytest.mark.parametrize("cls,kw,steps,expected,losses", TORCH_RUNS, ids=[c for c, *_ in TORCH_RUNS])
def test_written_out_iterates_are_torchs(cls, kw, steps, expected, losses):
    params, got_losses = _torch_run(cls, kw, steps)
    np.testing.assert_allclose(params, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_losses, losses, rtol=1e-5, atol=1e-6)


_SCHEDULERS = {
    "StepLR": lambda S, opt: S.StepLR(opt, 3, gamma=0.5),
    "PolynomialLR": lambda S, opt: S.PolynomialLR(opt, total_iters=7, power=2.0),
    "SequentialLR": lambda S, opt: S.SequentialLR(opt, [S.LinearLR(opt, 0.1, total_iters=3), S.ExponentialLR(opt, 0.8),
                                                        S.StepLR(opt, 2, 0.5)], milestones=[3, 7]),
    "CyclicLR_tri2": lambda S, opt: S.CyclicLR(opt, [0.1, 0.05], [1.0, 0.4], step_size_up=2, mode="triangular2"),
    "CAWR": lambda S, opt: S.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2, eta_min=0.05),
}


@pytest.mark.parametrize("name", list(_SCHEDULERS))
def test_written_out_schedules_are_torchs(name):
    expected = next(t for n, o, e, t in TORCH_TRACES if n == name and o == "SGD" and e is None)
    w, v = torch.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
    opt = torch.optim.SGD([{"params": [w]}, {"params": [v], "lr": 0.5}], lr=1.0, momentum=0.9)
    sched = _SCHEDULERS[name](torch.optim.lr_scheduler, opt)
    for row in expected:
        opt.step()
        sched.step()
        got = list(sched.get_last_lr()) + [opt.param_groups[0]["momentum"]]
        assert got == pytest.approx(row, rel=1e-11, abs=1e-12)
