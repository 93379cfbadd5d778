"""reftorch.autocast and reftorch.amp.GradScaler (issue 8): PyTorch's behaviour, checked op by op."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import reftorch as torch
import reftorch.nn as nn
import reftorch.nn.functional as F
from codegen.model import RegistryError, load


def _inputs():
    torch.manual_seed(0)
    return torch.randn(4, 3), torch.randn(5, 3, requires_grad=True), torch.randn(5, requires_grad=True)


# ----------------------------------------------------------------------------------------- autocast

def test_lower_precision_ops_run_in_the_autocast_dtype():
    x, w, b = _inputs()
    img, k = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    for dt in (torch.bfloat16, torch.float16):
        with torch.autocast("cpu", dtype=dt):
            assert F.linear(x, w, b).dtype is dt
            assert torch.mm(x, w.t()).dtype is dt and (x @ w.t()).dtype is dt and torch.matmul(x, w.t()).dtype is dt
            assert torch.bmm(x[None], w.t()[None]).dtype is dt
            assert torch.addmm(b, x, w.t()).dtype is dt
            assert F.conv2d(img, k).dtype is dt and nn.Linear(3, 2)(x).dtype is dt
            assert torch.mm(x.double(), w.t().double()).dtype is torch.float64      # float64 is never cast
            assert torch.mm(torch.ones(2, 2, dtype=torch.int64), torch.ones(2, 2, dtype=torch.int64)).dtype \
                is torch.int64


def test_fp32_and_promote_ops():
    """PyTorch's CPU lists (checked against PyTorch 2.13): losses and prod run in float32; sum, mean, exp, log,
    pow, softmax, layer_norm, norm... keep a lower-precision input's dtype on the cpu (CUDA's list casts them
    to float32: tests/cuda/test_cuda_half.py); cat, stack and index_copy promote."""
    x, w, _ = _inputs()
    for dt in (torch.bfloat16, torch.float16):
        with torch.autocast("cpu", dtype=dt):
            y = x @ w.t()                                            # the autocast dtype
            assert y.dtype is dt
            for r in (F.cross_entropy(y, torch.tensor([0, 1, 2, 3])), F.mse_loss(y, y), F.l1_loss(y, y), y.prod(),
                      F.nll_loss(y, torch.tensor([0, 1, 2, 3])), F.binary_cross_entropy_with_logits(y, y)):
                assert r.dtype is torch.float32
            for r in (y.sum(), y.mean(), y.exp(), y.log(), y.pow(2), torch.softmax(y, 1), torch.log_softmax(y, 1),
                      F.layer_norm(y, (5,)), y.norm(), torch.cumsum(y, 0), torch.logsumexp(y, 1), y.rsqrt(),
                      torch.mv(y, y[0]), F.cosine_similarity(y, y)):
                assert r.dtype is dt
            assert x.sum().dtype is torch.float32 and torch.mv(x, x[0]).dtype is torch.float32     # as is
            assert y.relu().dtype is dt and (y * 2).dtype is dt   # no policy: as is
            assert (y + x[:, :1]).dtype is torch.float32           # mixed inputs promote to the widest
            assert torch.cat([y, torch.zeros(1, 5)]).dtype is torch.float32
            assert torch.stack([y[0], torch.zeros(5)]).dtype is torch.float32
            assert torch.addcmul(y, y, y).dtype is dt
            assert torch.addcmul(y, y, torch.ones(4, 5)).dtype is torch.float32
            assert torch.atan2(y, y.float()).dtype is torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = torch.zeros(3, 2, dtype=torch.bfloat16).index_copy(0, torch.tensor([0, 2]), torch.ones(2, 2))
        assert z.dtype is torch.float32


def test_nesting_disabling_and_state():
    x, w, _ = _inputs()
    assert not torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") is torch.bfloat16
    with torch.autocast("cpu"):
        assert torch.is_autocast_enabled("cpu") and torch.mm(x, w.t()).dtype is torch.bfloat16
        with torch.autocast("cpu", enabled=False):
            assert not torch.is_autocast_enabled("cpu") and torch.mm(x, w.t()).dtype is torch.float32
        with torch.autocast("cpu", dtype=torch.float16):
            assert torch.mm(x, w.t()).dtype is torch.float16 and torch.get_autocast_dtype("cpu") is torch.float16
        assert torch.mm(x, w.t()).dtype is torch.bfloat16 and torch.get_autocast_dtype("cpu") is torch.bfloat16
    assert not torch.is_autocast_enabled("cpu") and torch.mm(x, w.t()).dtype is torch.float32
    with pytest.raises(ZeroDivisionError):
        with torch.amp.autocast("cpu"):
            1 / 0
    assert not torch.is_autocast_enabled("cpu")
    with pytest.raises(ValueError, match="device_type"):
        torch.autocast(torch.device("cpu"))


def test_decorator_and_thread_locality():
    x, w, _ = _inputs()

    @torch.autocast(device_type="cpu", dtype=torch.float16)
    def f(a, b):
        return a @ b.t()

    assert f(x, w).dtype is torch.float16 and (x @ w.t()).dtype is torch.float32
    seen = []
    with torch.autocast("cpu"):
        t = threading.Thread(target=lambda: seen.append((torch.is_autocast_enabled("cpu"), (x @ w.t()).dtype)))
        t.start()
        t.join()
    assert seen == [(False, torch.float32)]


def test_unsupported_dtype_or_device_disables_with_a_warning():
    x, w, _ = _inputs()
    with pytest.warns(UserWarning, match="CPU Autocast only supports"):
        ctx = torch.autocast("cpu", dtype=torch.float64)
    with ctx:
        assert (x @ w.t()).dtype is torch.float32
    if not torch.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            torch.autocast("cuda")


def test_autograd_through_autocast_gives_float32_grads():
    x, w, b = _inputs()
    target = torch.tensor([0, 1, 2, 3])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = F.linear(x, w, b)
        loss = F.cross_entropy(h @ torch.eye(5), target) + F.linear(x, w).sum() * 0   # w cast twice (cached)
    assert loss.dtype is torch.float32
    loss.backward()
    assert w.grad.dtype is torch.float32 and b.grad.dtype is torch.float32
    w2, b2 = w.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    F.cross_entropy(F.linear(x, w2, b2), target).backward()
    np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy(), rtol=0.05, atol=0.02)
    np.testing.assert_allclose(b.grad.numpy(), b2.grad.numpy(), rtol=0.05, atol=0.02)


def test_parameter_casts_are_cached_inside_the_outermost_region():
    from reftorch import _autocast
    x, w, _ = _inputs()
    with torch.autocast("cpu"):
        F.linear(x, w)
        with torch.autocast("cpu"):
            F.linear(x, w)
            assert len(_autocast.state.cache) == 1           # w cast once, reused
        assert len(_autocast.state.cache) == 1
        with torch.no_grad():
            torch.mm(x, torch.ones(3, 3, requires_grad=True))
        assert len(_autocast.state.cache) == 1           # casts without a graph are not kept
    assert len(_autocast.state.cache) == 0               # cleared when the outermost region exits


def test_registry_autocast_field_is_strict():
    entry = "- name: foo\n  kind: unary\n  signature: (Tensor self)\n  scalar: self\n  dtypes: [float]\n" \
            "  differentiable: false\n  test: {ref: 'lambda x: x'}\n  autocast: {policy}\n"
    assert load("x.yaml", entry.replace("{policy}", "fp32"))[0].autocast == "fp32"
    with pytest.raises(RegistryError, match="unknown autocast policy 'fp16'"):
        load("x.yaml", entry.replace("{policy}", "fp16"))
    from reftorch.kernels.api import SPECS
    assert SPECS["mm"]["autocast"] == "lower" and SPECS["sum"]["autocast"] == {"cuda": "fp32"} and \
        "autocast" not in SPECS["add"]
    # a policy per device: strict keys and values, `none` (or leaving a device out) means no cast there
    per = entry.replace("{policy}", "{cpu: none, cuda: fp32}")
    assert load("x.yaml", per)[0].autocast == (("cuda", "fp32"),)
    assert load("x.yaml", entry.replace("{policy}", "{cuda: promote, cpu: lower}"))[0].autocast == \
        (("cpu", "lower"), ("cuda", "promote"))
    with pytest.raises(RegistryError, match="op 'foo'.*autocast.*unknown autocast device 'xpu'"):
        load("x.yaml", entry.replace("{policy}", "{xpu: fp32}"))
    with pytest.raises(RegistryError, match="op 'foo'.*autocast.*unknown autocast policy 'half' for cuda"):
        load("x.yaml", entry.replace("{policy}", "{cpu: lower, cuda: half}"))
    with pytest.raises(RegistryError, match="autocast.*expected str or dict"):
        load("x.yaml", entry.replace("{policy}", "[fp32]"))


# ----------------------------------------------------------------------------------------- GradScaler

def _model_and_opt():
    torch.manual_seed(1)
    model = nn.Linear(3, 2)
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def _backward(scaler, model, x):
    loss = model(x).sum()
    scaler.scale(loss).backward()
    return loss


def test_scale_step_and_growth():
    model, opt = _model_and_opt()
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)
    assert scaler.get_scale() == 1024.0 and scaler.is_enabled()
    x = torch.randn(4, 3)
    before = model.weight.detach().clone()
    _backward(scaler, model, x)
    assert np.allclose(model.weight.grad.numpy() / 1024, (torch.ones(4, 2).t() @ x).numpy() / 1, atol=1e-3)
    scaler.step(opt)
    assert np.allclose(model.weight.grad.numpy(), (torch.ones(4, 2).t() @ x).numpy(), atol=1e-5)  # unscaled
    assert not np.allclose(model.weight.detach().numpy(), before.numpy())
    scaler.update()
    assert scaler.get_scale() == 1024.0 and scaler._get_growth_tracker() == 1
    opt.zero_grad()
    _backward(scaler, model, x)
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2048.0 and scaler._get_growth_tracker() == 0     # grown after 2 clean steps


def test_inf_skips_step_and_backs_off():
    model, opt = _model_and_opt()
    scaler = torch.amp.GradScaler("cpu", init_scale=4.0, backoff_factor=0.25)
    _backward(scaler, model, torch.randn(4, 3))
    model.weight.grad[0, 0] = float("inf")
    before = model.weight.detach().clone()
    scaler.step(opt)
    assert np.array_equal(model.weight.detach().numpy(), before.numpy())       # skipped
    scaler.update()
    assert scaler.get_scale() == 1.0 and scaler._get_growth_tracker() == 0
    opt.zero_grad()
    _backward(scaler, model, torch.randn(4, 3))
    model.bias.grad[0] = float("nan")
    scaler.unscale_(opt)
    assert scaler._per_optimizer_states[id(opt)]["found_inf_per_device"]["cpu"].item() == 1.0
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 0.25


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_call_order_errors():
    model, opt = _model_and_opt()
    scaler = torch.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="did not use scaler.scale"):
        scaler.step(opt)
    _backward(scaler, model, torch.randn(2, 3))
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step\\(\\)"):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last update\\(\\)"):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: 0)
    scaler.update()
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update"):
        scaler.update()
    half = nn.Linear(3, 2).half()
    hopt = torch.optim.SGD(half.parameters(), lr=0.1)
    scaler.scale(half(torch.randn(2, 3).half()).sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(hopt)


def test_state_dict_and_explicit_scale():
    model, opt = _model_and_opt()
    scaler = torch.amp.GradScaler("cpu", init_scale=8.0, growth_factor=3.0, backoff_factor=0.5, growth_interval=5)
    assert scaler.state_dict() == {"scale": 8.0, "growth_factor": 3.0, "backoff_factor": 0.5, "growth_interval": 5,
                                   "_growth_tracker": 0}
    _backward(scaler, model, torch.randn(2, 3))
    scaler.step(opt)
    scaler.update()
    sd = scaler.state_dict()
    assert sd["_growth_tracker"] == 1 and sd["scale"] == 8.0
    other = torch.amp.GradScaler("cpu")
    other.load_state_dict(sd)
    assert other.state_dict() == sd and other.get_growth_factor() == 3.0 and other.get_growth_interval() == 5
    _backward(scaler, model, torch.randn(2, 3))
    scaler.step(opt)
    scaler.update(new_scale=2.0)
    assert scaler.get_scale() == 2.0
    scaler.scale(torch.ones(1))
    scaler._per_optimizer_states.clear()
    scaler.update(new_scale=torch.tensor([4.0]))
    assert scaler.get_scale() == 4.0
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        other.load_state_dict({})
    off = torch.amp.GradScaler("cpu", enabled=False)
    assert off.state_dict() == {} and off.get_scale() == 1.0 and not off.is_enabled()
    t = torch.ones(2)
    assert off.scale(t) is t
    assert [s.item() for s in scaler.scale([torch.tensor(1.0), (torch.tensor(2.0),)])[1]] == [8.0]


def test_disabled_scaler_steps_plainly_and_cuda_without_gpu_disables():
    model, opt = _model_and_opt()
    off = torch.amp.GradScaler("cpu", enabled=False)
    before = model.weight.detach().clone()
    off.scale(model(torch.randn(2, 3)).sum()).backward()
    off.step(opt)
    off.update()
    assert not np.allclose(model.weight.detach().numpy(), before.numpy())
    if not torch.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            assert not torch.amp.GradScaler().is_enabled()


def test_float16_training_step_with_scaler_matches_float32():
    """autocast(float16) + GradScaler over a few steps tracks plain float32 training."""
    torch.manual_seed(3)
    x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
    ref = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    amp_model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    amp_model.load_state_dict(ref.state_dict())
    opt_r, opt_a = torch.optim.SGD(ref.parameters(), lr=0.1), torch.optim.SGD(amp_model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    for _ in range(5):
        opt_r.zero_grad()
        F.cross_entropy(ref(x), y).backward()
        opt_r.step()
        opt_a.zero_grad()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = F.cross_entropy(amp_model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt_a)
        scaler.update()
    for p, q in zip(ref.parameters(), amp_model.parameters()):
        assert q.dtype is torch.float32
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), atol=0.01)


# ----------------------------------------------------------------------------------------- the demo

@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="the demo's dataset needs scikit-learn")
@pytest.mark.parametrize("amp", ["bf16", "fp16"])
def test_demo_trains_under_mixed_precision(amp, tmp_path):
    """python -m reftorch.demo --amp bf16|fp16 (reduced run, MLP): float32 reaches 99.16% on this run; mixed
    precision must stay within about 1% of it."""
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(root)] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.run([sys.executable, "-m", "reftorch.demo", "--quick", "--models", "mlp", "--no-progress",
                           "--amp", amp, "--checkpoint-dir", str(tmp_path)], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"demo failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    assert "autocast(" in proc.stdout
    acc = float(re.search(r"^MLP test accuracy: ([\d.]+)%", proc.stdout, re.M).group(1))
    assert acc >= 98.0, proc.stdout
    assert "(same as before saving)" in proc.stdout


def test_pytorch_spellings_of_autocast_and_the_scaler():
    """torch.cpu.amp / torch.cuda.amp (deprecated in PyTorch 2.13, with its FutureWarning and defaults),
    torch.amp.autocast(device_type, ...), the deprecated per-device state getters, custom_fwd / custom_bwd."""
    import inspect
    import warnings
    import reftorch.cuda.amp as cuda_amp
    from reftorch.cpu.amp import GradScaler as CpuScaler, autocast as cpu_autocast
    assert str(inspect.signature(cuda_amp.autocast.__init__)) == \
        "(self, enabled=True, dtype=torch.float16, cache_enabled=True)"
    assert str(inspect.signature(cpu_autocast.__init__)) == "(self, enabled=True, dtype=torch.bfloat16, cache_enabled=True)"
    assert list(inspect.signature(cuda_amp.GradScaler.__init__).parameters)[1:] == \
        ["init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled"]
    x = torch.ones(2, 2)
    with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.autocast\(args...\)` is deprecated. Please use "
                                           r"`torch.amp.autocast\('cpu', args...\)` instead."):
        ctx = cpu_autocast()
    with ctx:
        assert torch.is_autocast_enabled("cpu") and (x @ x).dtype is torch.bfloat16
        with pytest.warns(DeprecationWarning, match=r"torch.is_autocast_cpu_enabled\(\) is deprecated"):
            assert torch.is_autocast_cpu_enabled()
        with pytest.warns(DeprecationWarning):
            assert torch.get_autocast_cpu_dtype() is torch.bfloat16
    with torch.amp.autocast("cpu", dtype=torch.float16):
        assert torch.get_autocast_dtype("cpu") is torch.float16 and (x @ x).dtype is torch.float16
    assert not torch.is_autocast_enabled() and not torch.is_autocast_enabled("cuda")   # no argument: cuda
    assert torch.get_autocast_dtype("cuda") is torch.float16
    with pytest.warns(FutureWarning, match=r"torch.amp.GradScaler\('cpu', args...\)"):
        s = CpuScaler(init_scale=8.0)
    assert isinstance(s, torch.amp.GradScaler) and s._device == "cpu" and torch.cpu.is_available()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cuda_amp.GradScaler(enabled=False)._device == "cuda"

    class Twice(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
        def forward(ctx, a):
            seen.append((a.dtype, torch.is_autocast_enabled("cpu")))
            return a * 2

        @staticmethod
        @torch.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen.append(torch.is_autocast_enabled("cpu"))
            return g * 2

    seen = []
    a = torch.ones(2, dtype=torch.bfloat16, requires_grad=True)
    with torch.autocast("cpu"):
        y = Twice.apply(a)
    y.sum().backward()
    assert seen == [(torch.float32, False), False] and y.dtype is torch.float32 and a.grad.tolist() == [2.0, 2.0]
