"""reftorch.optim: update rules against a NumPy transcription of PyTorch's formulas, several steps
deep; parameter groups, state_dict round trips, errors; learning-rate schedules against PyTorch's
numbers (recorded from torch 2.13)."""

import numpy as np
import pytest

import reftorch as torch
from reftorch import optim
from reftorch.optim import lr_scheduler

STEPS = 6


# --------------------------------------------------------------------------- NumPy references

def lerp(a, b, w):
    """PyTorch's lerp kernel: two formulas, chosen by the weight, for accuracy at both ends."""
    return a + w * (b - a) if abs(w) < 0.5 else b - (b - a) * (1 - w)


def ref_sgd(p, g, st, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False):
    g = -g if maximize else g
    if weight_decay:
        g = g + weight_decay * p
    if momentum:
        if "buf" not in st:
            st["buf"] = g.copy()
        else:
            st["buf"] = st["buf"] * momentum + (1 - dampening) * g
        g = g + momentum * st["buf"] if nesterov else st["buf"]
    return p - lr * g


def ref_adam(p, g, st, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, maximize=False,
             decoupled=False):
    b1, b2 = betas
    g = -g if maximize else g
    st.setdefault("m", np.zeros_like(p))
    st.setdefault("v", np.zeros_like(p))
    st.setdefault("vmax", np.zeros_like(p))
    st["t"] = t = st.get("t", 0) + 1
    if weight_decay:
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
    st["m"] = lerp(st["m"], g, 1 - b1)
    st["v"] = st["v"] * b2 + (1 - b2) * g * g
    bc1 = 1 - b1 ** t
    bc2_sqrt = (1 - b2 ** t) ** 0.5
    if amsgrad:
        st["vmax"] = np.maximum(st["vmax"], st["v"])
        denom = np.sqrt(st["vmax"]) / bc2_sqrt + eps
    else:
        denom = np.sqrt(st["v"]) / bc2_sqrt + eps
    return p - (lr / bc1) * (st["m"] / denom)


def ref_adamw(p, g, st, weight_decay=1e-2, **kw):
    return ref_adam(p, g, st, weight_decay=weight_decay, decoupled=True, **kw)


def ref_rmsprop(p, g, st, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                maximize=False):
    g = -g if maximize else g
    if weight_decay:
        g = g + weight_decay * p
    st.setdefault("sq", np.zeros_like(p))
    st.setdefault("gavg", np.zeros_like(p))
    st.setdefault("buf", np.zeros_like(p))
    st["sq"] = st["sq"] * alpha + (1 - alpha) * g * g
    if centered:
        st["gavg"] = lerp(st["gavg"], g, 1 - alpha)
        avg = np.sqrt(st["sq"] - st["gavg"] * st["gavg"])
    else:
        avg = np.sqrt(st["sq"])
    avg = avg + eps
    if momentum > 0:
        st["buf"] = st["buf"] * momentum + g / avg
        return p - lr * st["buf"]
    return p - lr * (g / avg)


def ref_adagrad(p, g, st, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                maximize=False):
    g = -g if maximize else g
    st.setdefault("sum", np.full_like(p, initial_accumulator_value))
    st["t"] = t = st.get("t", 0) + 1
    if weight_decay:
        g = g + weight_decay * p
    clr = lr / (1 + (t - 1) * lr_decay)
    st["sum"] = st["sum"] + g * g
    return p - clr * (g / (np.sqrt(st["sum"]) + eps))


REFS = {optim.SGD: ref_sgd, optim.Adam: ref_adam, optim.AdamW: ref_adamw, optim.RMSprop: ref_rmsprop,
        optim.Adagrad: ref_adagrad}

CASES = [
    (optim.SGD, dict(lr=0.1)),
    (optim.SGD, dict(lr=0.1, momentum=0.9)),
    (optim.SGD, dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.1)),
    (optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (optim.SGD, dict(lr=0.1, momentum=0.5, maximize=True)),
    (optim.Adam, dict()),
    (optim.Adam, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    (optim.Adam, dict(lr=0.01, amsgrad=True)),
    (optim.Adam, dict(lr=0.01, maximize=True, amsgrad=True, weight_decay=0.05)),
    (optim.Adam, dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    (optim.AdamW, dict(lr=0.01)),
    (optim.AdamW, dict(lr=0.01, weight_decay=0.3, amsgrad=True)),
    (optim.RMSprop, dict()),
    (optim.RMSprop, dict(lr=0.01, alpha=0.9, centered=True)),
    (optim.RMSprop, dict(lr=0.01, momentum=0.9, weight_decay=0.1)),
    (optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True, maximize=True)),
    (optim.Adagrad, dict()),
    (optim.Adagrad, dict(lr=0.1, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.5)),
    (optim.Adagrad, dict(lr=0.1, eps=1e-3, maximize=True)),
]


def _grad_of(p, k):
    """A gradient that depends on the current parameters and the step (a quadratic plus a drift)."""
    return 2.0 * p * np.linspace(0.5, 1.5, p.size).reshape(p.shape) + np.cos(k + np.arange(p.size)).reshape(p.shape)


def _run(cls, kw, dtype, steps=STEPS):
    rng = np.random.default_rng(0)
    inits = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    params = [torch.tensor(a, dtype=dtype, requires_grad=True) for a in inits]
    opt = cls(params, **kw)
    ref_kw = {k: v for k, v in kw.items() if k != "decoupled_weight_decay"}
    ref = REFS[cls]
    if kw.get("decoupled_weight_decay"):
        ref = lambda p, g, st, **k: ref_adam(p, g, st, decoupled=True, **k)  # noqa: E731
    np_dtype = np.float64 if dtype is torch.float64 else np.float32
    ref_params = [a.astype(np_dtype) for a in inits]
    ref_states = [{} for _ in inits]
    for k in range(steps):
        for p, r in zip(params, ref_params):
            p.grad = torch.tensor(_grad_of(p.detach().numpy().astype(np.float64), k), dtype=dtype)
        opt.step()
        new = []
        for r, st in zip(ref_params, ref_states):
            g = _grad_of(r.astype(np.float64), k).astype(np_dtype)
            new.append(np.asarray(ref(r, g, st, **ref_kw), dtype=np_dtype))
        ref_params = new
    return params, ref_params, opt


@pytest.mark.parametrize("cls,kw", CASES, ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(CASES)])
def test_update_rule_float64(cls, kw):
    params, ref_params, _ = _run(cls, kw, torch.float64)
    for p, r in zip(params, ref_params):
        np.testing.assert_allclose(p.detach().numpy(), r, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("cls,kw", CASES[::3], ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(CASES[::3])])
def test_update_rule_float32(cls, kw):
    params, ref_params, _ = _run(cls, kw, torch.float32)
    for p, r in zip(params, ref_params):
        assert p.dtype is torch.float32
        np.testing.assert_allclose(p.detach().numpy(), r, rtol=2e-5, atol=2e-6)


def test_adam_matches_recorded_pytorch_numbers():
    """Adam(lr=0.1, amsgrad=True, weight_decay=0.1) on f(p) = sum(p**2), 3 steps, recorded from torch 2.13."""
    p = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    opt = optim.Adam([p], lr=0.1, amsgrad=True, weight_decay=0.1)
    for _ in range(3):
        opt.zero_grad()
        p.grad = (2 * p).detach()
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), ADAM_RECORDED, rtol=1e-6)
    assert opt.state[p]["step"].item() == 3.0
    assert opt.state[p]["step"].dtype is torch.float32


ADAM_RECORDED = [0.7015863060951233, -1.700623393058777, 0.204871267080307]


def test_step_is_in_place_and_keeps_leaf():
    p = torch.tensor([1.0, 2.0], requires_grad=True)
    storage_ptr = p.data_ptr()
    opt = optim.SGD([p], lr=0.5)
    p.grad = torch.tensor([1.0, 1.0])
    opt.step()
    assert p.data_ptr() == storage_ptr and p.is_leaf and p.requires_grad and p.grad_fn is None
    np.testing.assert_allclose(p.detach().numpy(), [0.5, 1.5])


def test_params_without_grad_are_skipped():
    a = torch.tensor([1.0], requires_grad=True)
    b = torch.tensor([1.0], requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = torch.tensor([1.0])
    opt.step()
    assert b.item() == 1.0 and len(opt.state[b]) == 0 and opt.state[a]["step"].item() == 1


def test_closure_runs_with_grad_enabled_and_returns_loss():
    p = torch.tensor([3.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with torch.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0
    assert abs(p.item() - 2.4) < 1e-6


def test_param_groups_have_their_own_options():
    a = torch.tensor([1.0], requires_grad=True)
    b = torch.tensor([1.0], requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[0]["momentum"] == 0
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["momentum"] == 0.9
    assert opt.param_groups[1]["params"][0] is b
    a.grad = torch.tensor([1.0])
    b.grad = torch.tensor([1.0])
    opt.step()
    assert a.item() == pytest.approx(0.9) and b.item() == pytest.approx(0.5)
    c = torch.tensor([0.0], requires_grad=True)
    opt.add_param_group({"params": [c], "lr": 1.0})
    assert opt.param_groups[2]["nesterov"] is False and opt.param_groups[2]["lr"] == 1.0


def test_constructor_errors():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        optim.SGD(torch.zeros(2, requires_grad=True), lr=0.1)
    leaf = torch.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([leaf * 2], lr=0.1)
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        optim.SGD([leaf, 3.0], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        optim.SGD([{"params": [leaf]}, {"params": [leaf]}], lr=0.1)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([leaf, leaf], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {leaf}}], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.Adam([leaf], lr=-1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        optim.Adam([leaf], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        optim.SGD([leaf], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid momentum value: -0.5"):
        optim.SGD([leaf], lr=0.1, momentum=-0.5)


def test_zero_grad():
    p = torch.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    p.grad = torch.tensor([3.0, 4.0])
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g and p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_state_dict_layout_matches_pytorch():
    a = torch.zeros(2, requires_grad=True)
    b = torch.zeros(3, requires_grad=True)
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad = torch.ones(2)
    opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert list(sd["state"]) == [0]
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert set(sd["param_groups"][0]) == {"lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach",
                                          "capturable", "differentiable", "fused", "decoupled_weight_decay",
                                          "params"}
    assert sd["param_groups"][1]["lr"] == 0.5


@pytest.mark.parametrize("cls,kw", [(optim.SGD, dict(lr=0.1, momentum=0.9)), (optim.Adam, dict(lr=0.05)),
                                    (optim.AdamW, dict(lr=0.05, amsgrad=True)),
                                    (optim.RMSprop, dict(momentum=0.5, centered=True)),
                                    (optim.Adagrad, dict(lr=0.1))])
def test_state_dict_round_trip_continues_identically(cls, kw, tmp_path):
    """Train 3 steps, checkpoint (through reftorch.save/load), then 3 more steps in two optimizers."""
    def make():
        return [torch.tensor([1.0, -2.0, 3.0], requires_grad=True), torch.tensor([[0.5, 0.25]], requires_grad=True)]

    def step(params, opt, k):
        for p in params:
            p.grad = torch.tensor(_grad_of(p.detach().numpy().astype(np.float64), k), dtype=torch.float32)
        opt.step()

    params = make()
    opt = cls(params, **kw)
    for k in range(3):
        step(params, opt, k)
    torch.save({"params": [p.detach() for p in params], "opt": opt.state_dict()}, tmp_path / "ck.safetensors")
    for k in range(3, 6):
        step(params, opt, k)

    ck = torch.load(tmp_path / "ck.safetensors")
    params2 = [p.clone().requires_grad_(True) for p in ck["params"]]
    opt2 = cls(params2, **kw)
    opt2.load_state_dict(ck["opt"])
    for k in range(3, 6):
        step(params2, opt2, k)
    for p, q in zip(params, params2):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_load_state_dict_copies_and_checks_sizes():
    a = torch.zeros(2, requires_grad=True)
    opt = optim.SGD([a], lr=0.1, momentum=0.9)
    a.grad = torch.ones(2)
    opt.step()
    sd = opt.state_dict()
    b = torch.zeros(2, requires_grad=True)
    opt2 = optim.SGD([b], lr=0.3, momentum=0.9)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.1 and opt2.param_groups[0]["params"][0] is b
    assert opt2.state[b]["momentum_buffer"].tolist() == [1.0, 1.0]
    sd["param_groups"][0]["lr"] = 99.0
    assert opt2.param_groups[0]["lr"] == 0.1
    opt3 = optim.SGD([torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt3.load_state_dict(sd)
    opt4 = optim.SGD([{"params": [torch.zeros(1, requires_grad=True)]},
                      {"params": [torch.zeros(1, requires_grad=True)]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt4.load_state_dict(sd)


def test_repr():
    opt = optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    r = repr(opt)
    assert r.startswith("SGD (\nParameter Group 0\n") and "    lr: 0.1\n" in r and r.endswith(")")


def test_training_converges_with_autograd():
    """Adam minimises a least-squares problem through the autograd engine."""
    rng = np.random.default_rng(1)
    X = torch.tensor(rng.standard_normal((64, 3)), dtype=torch.float32)
    w_true = torch.tensor([[1.5], [-2.0], [0.5]])
    y = X @ w_true
    w = torch.zeros(3, 1, requires_grad=True)
    opt = optim.Adam([w], lr=0.1)
    for _ in range(100):
        opt.zero_grad()
        loss = ((X @ w - y) ** 2).mean()
        loss.backward()
        opt.step()
    np.testing.assert_allclose(w.detach().numpy(), w_true.numpy(), atol=1e-2)


# --------------------------------------------------------------------------- schedulers

def _opt(lr=0.1, groups=1, **kw):
    params = [{"params": [torch.zeros(1, requires_grad=True)]} for _ in range(groups)]
    return optim.SGD(params, lr=lr, momentum=0.9, **kw)


def _lrs(sched, opt, n):
    out = [sched.get_last_lr()[0]]
    for _ in range(n):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr()[0])
    return out


def test_step_lr():
    opt = _opt()
    s = lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    assert _lrs(s, opt, 7) == pytest.approx([0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025])


def test_multistep_lr_with_repeated_milestone():
    opt = _opt()
    s = lr_scheduler.MultiStepLR(opt, milestones=[2, 4, 4], gamma=0.1)
    assert _lrs(s, opt, 5) == pytest.approx([0.1, 0.1, 0.01, 0.01, 1e-4, 1e-4])


def test_exponential_lr():
    opt = _opt()
    s = lr_scheduler.ExponentialLR(opt, gamma=0.9)
    assert _lrs(s, opt, 4) == pytest.approx([0.1 * 0.9 ** k for k in range(5)])


def test_cosine_annealing_lr_matches_pytorch():
    opt = _opt()
    s = lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.01)
    assert _lrs(s, opt, 10) == pytest.approx(COSINE_RECORDED, rel=1e-12)


# torch 2.13: CosineAnnealingLR(SGD(lr=0.1), T_max=4, eta_min=0.01), 10 steps (goes back up after T_max)
COSINE_RECORDED = [0.1, 0.08681980515339464, 0.05500000000000001, 0.023180194846605363, 0.01, 0.023180194846605363,
                   0.05500000000000002, 0.08681980515339469, 0.10000000000000006, 0.0868198051533947,
                   0.05500000000000005]


def test_lambda_lr_per_group_and_state_dict():
    opt = _opt(groups=2)
    s = lr_scheduler.LambdaLR(opt, [lambda e: 0.5 ** e, lambda e: 1.0 / (e + 1)])
    for _ in range(3):
        opt.step()
        s.step()
    assert s.get_last_lr() == pytest.approx([0.1 * 0.125, 0.1 / 4])
    sd = s.state_dict()
    assert sd["lr_lambdas"] == [None, None] and sd["last_epoch"] == 3 and "optimizer" not in sd
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1.0])


def test_linear_lr():
    opt = _opt()
    s = lr_scheduler.LinearLR(opt, start_factor=0.25, end_factor=1.0, total_iters=3)
    assert _lrs(s, opt, 5) == pytest.approx([0.025, 0.05, 0.075, 0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        lr_scheduler.LinearLR(opt, start_factor=0)


def test_one_cycle_lr_matches_pytorch():
    opt = _opt()
    s = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    moms = [opt.param_groups[0]["momentum"]]
    lrs = [s.get_last_lr()[0]]
    for _ in range(9):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
        moms.append(opt.param_groups[0]["momentum"])
    assert lrs == pytest.approx(ONECYCLE_LRS, rel=1e-9)
    assert moms == pytest.approx(ONECYCLE_MOMS, rel=1e-9)
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 11 times"):
        s.step()
        s.step()


def test_one_cycle_lr_drives_adam_beta1():
    p = torch.zeros(1, requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    lr_scheduler.OneCycleLR(opt, max_lr=0.1, epochs=2, steps_per_epoch=5, three_phase=True)
    assert opt.param_groups[0]["betas"] == (0.95, 0.999)


# torch 2.13: OneCycleLR(SGD(lr=0.1, momentum=0.9), max_lr=1.0, total_steps=10), lr and momentum per step
ONECYCLE_LRS = [0.040000000000000036, 0.52, 1.0, 0.9504846320134737, 0.8117456539497631, 0.6112620219362893,
                0.38874197806371075, 0.18825834605023697, 0.049519367986526286, 4e-06]
ONECYCLE_MOMS = [0.95, 0.8999999999999999, 0.85, 0.854951556604879, 0.8688255099070633, 0.8888739533021842,
                 0.9111260466978157, 0.9311744900929366, 0.945048443395121, 0.95]


def test_reduce_lr_on_plateau():
    opt = _opt(lr=1.0)
    s = lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1, cooldown=1, min_lr=0.2)
    seen = []
    for metric in [5, 4, 4, 4, 4, 4, 4, 4, 4, 3]:
        s.step(metric)
        seen.append(s.get_last_lr()[0])
    assert seen == pytest.approx(PLATEAU_RECORDED)
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["best"] == 3
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)


# torch 2.13, same arguments and metrics
PLATEAU_RECORDED = [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25]


def test_scheduler_state_dict_round_trip_and_resume():
    opt = _opt()
    s = lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(3):
        opt.step()
        s.step()
    sd = s.state_dict()
    opt2 = _opt()
    opt2.load_state_dict(opt.state_dict())
    s2 = lr_scheduler.StepLR(opt2, step_size=2, gamma=0.5)
    s2.load_state_dict(sd)
    opt.step()
    opt2.step()
    s.step()
    s2.step()
    assert s2.get_last_lr() == s.get_last_lr() == pytest.approx([0.025])
    assert s2.last_epoch == 4


def test_scheduler_warnings():
    opt = _opt()
    s = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        s.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        s.get_lr()
    with pytest.warns(UserWarning, match="epoch parameter"):
        s.step(5)
    assert s.get_last_lr() == pytest.approx([0.1 * 0.5 ** 5])


# --------------------------------------------------------------------------- torch as an oracle, when installed

def test_against_torch_when_installed():
    real = pytest.importorskip("torch")
    if getattr(real, "__file__", "").startswith(str(torch.__path__[0])):
        pytest.skip("'torch' resolves to reftorch")
    for cls, kw in CASES:
        ours, _, _ = _run(cls, kw, torch.float64)
        rng = np.random.default_rng(0)
        inits = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
        theirs = [real.tensor(a, dtype=real.float64, requires_grad=True) for a in inits]
        topt = getattr(real.optim, cls.__name__)(theirs, **kw)
        for k in range(STEPS):
            for p in theirs:
                p.grad = real.tensor(_grad_of(p.detach().numpy(), k))
            topt.step()
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
