"""float16 and bfloat16 cuda tensors in numba's simulator: the kernels of reftorch/kernels/cuda_half.py (uint16
storage, float32 compute, round to nearest even on store), their dispatch, casts and autocast on cuda.

- every op of ops.yaml that has a 16-bit CUDA kernel (elementwise, reduction, argreduction, scan, matmul), in
  both dtypes, on one tiny sample (tests/registry_samples.py, seeded by the op's name), against its NumPy
  reference computed in float32 and rounded once (tests/test_half.py's rule and tolerances: no cpu kernel is
  compiled here); differentiable elementwise ops also compare their gradients (the fused backward kernels in
  16 bits) with the float32 ones on cuda;
- the conversions on the device, bit-exact against NumPy float16 / ml_dtypes bfloat16: all 65,536 patterns to
  float32, and float32 values around every pattern (ties, NaN payloads, subnormals, overflow) back to 16 bits;
- storage views and copies, promotion, add/sub's alpha rounded as PyTorch does;
- PyTorch's CUDA autocast lists, and a training step under autocast(device_type="cuda") with GradScaler against
  the same step on the cpu.

Runs only with NUMBA_ENABLE_CUDASIM=1 (tests/test_cuda_simulator.py starts it). Shapes are a few elements:
every simulated thread is Python.
"""
import os
import sys
import zlib

import ml_dtypes
import numpy as np
import pytest

if not os.environ.get("NUMBA_ENABLE_CUDASIM"):
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run by tests/test_cuda_simulator.py)", allow_module_level=True)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import reftorch as torch  # noqa: E402
from reftorch._tensor import Tensor  # noqa: E402
from reftorch.kernels import cuda_half  # noqa: E402
from registry_samples import BY_NAME, RandomDraw, Sample, SampleError, make_sample  # noqa: E402

np.seterr(all="ignore")

HALVES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
# as tests/test_half.py: the NumPy reference computed in float32 and rounded once, two units in the last place
TOL = {"float16": 2 * 2.0 ** -10, "bfloat16": 2 * 2.0 ** -7}


def _ops():
    """The ops.yaml entries with 16-bit CUDA kernels (not the fused backward kernels and conversions)."""
    names = sorted({info["op"] for name, info in cuda_half.KERNELS.items()
                    if info["kind"] != "conversion" and not name.startswith("_bw_")})
    return [BY_NAME[n] for n in names if BY_NAME[n].test.fuzz and BY_NAME[n].test.ref]


def _half_sample(op, name):
    """A tiny contiguous sample of op on cuda: floating tensors in the 16-bit dtype (the reference's arrays
    hold the same values in float32), the others as drawn."""
    npdt = HALVES[name]
    grad = op.differentiable and op.kind in ("unary", "binary", "ternary") and op.test.gradcheck
    s = make_sample(op, RandomDraw(zlib.crc32(op.name.encode())), "float32", grad=grad, max_side=2, max_numel=4,
                    contiguous=True)
    kwargs, arrays = {}, dict(s.arrays)
    for k, v in s.kwargs.items():
        if isinstance(v, Tensor) and v.dtype is torch.float32:
            a16 = np.ascontiguousarray(v.detach()._array()).astype(npdt)
            arrays[k] = a16.astype(np.float32)
            # not an input whose formula is not_implemented(...): its gradient raises, as PyTorch's
            v = torch.from_numpy(a16).to("cuda").requires_grad_(
                grad and not (op.formula(k) or "").startswith("not_implemented("))
        elif isinstance(v, Tensor):
            v = v.to("cuda")
        kwargs[k] = v
    return Sample(op, s.dtype, kwargs, arrays, s.named), grad


def _as_float32(kwargs):
    return {k: (v.detach().float().requires_grad_(v.requires_grad) if isinstance(v, Tensor) and v.dtype.itemsize == 2
                and v.dtype.is_floating_point else v) for k, v in kwargs.items()}


def _grads(op, sample, kwargs):
    outs = sample.__class__(op, sample.dtype, kwargs, sample.arrays, sample.named).call()
    out = outs[0] if isinstance(outs, (tuple, list)) else outs
    ins = [t for t in kwargs.values() if isinstance(t, Tensor) and t.requires_grad]
    if not out.requires_grad:
        return []
    return torch.autograd.grad((out.float() * 1.5).sum(), ins, allow_unused=True)


@pytest.mark.parametrize("op", _ops(), ids=lambda op: op.name)
def test_op_in_16_bits_on_cuda(op):
    """Forward against the NumPy reference in float32, rounded once; gradients (the fused backward kernels in
    16 bits) against the same values computed in float32 on cuda."""
    from reftorch._reference import compare
    checked = 0
    for name, npdt in HALVES.items():
        try:
            sample, grad = _half_sample(op, name)
        except SampleError as err:
            pytest.skip(str(err))
        try:
            with np.errstate(all="ignore"):
                expected = sample.ref()
        except Exception:  # noqa: BLE001 -- NumPy rejects this input: nothing to compare
            continue
        out = sample.call()
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        exps = list(expected) if isinstance(out, (tuple, list)) else [expected]
        for o, e in zip(outs, exps):
            e = np.asarray(e)
            assert o.device.type == "cuda", (op.name, o.device)
            got = o.detach().cpu().numpy()
            if e.dtype.kind == "f":
                assert o.dtype is getattr(torch, name), f"{op.name} in {name} returned {o.dtype}"
                e = e.astype(npdt).astype(np.float64)
                got, atol = got.astype(np.float64), max(op.test.atol, TOL[name])
            else:
                atol = 0
            problem = compare(got, e, atol, TOL[name])
            assert problem is None, f"{op.name} in {name}: {problem}\n  on {sample.describe()}"
        if grad:
            g16 = _grads(op, sample, sample.kwargs)
            g32 = _grads(op, sample, _as_float32(sample.kwargs))
            for a, b in zip(g16, g32):
                assert (a is None) == (b is None)
                if a is not None:
                    assert a.dtype is getattr(torch, name) and a.device.type == "cuda"
                    want = b.detach().cpu().numpy().astype(npdt).astype(np.float64)
                    np.testing.assert_allclose(a.detach().cpu().numpy().astype(np.float64), want, rtol=4 * TOL[name],
                                               atol=4 * TOL[name] * max(1.0, float(np.nanmax(np.abs(want), initial=0))),
                                               equal_nan=True, err_msg=f"gradient of {op.name} in {name}")
        checked += 1
    assert checked, f"no sample of {op.name} could be checked"


# ---------------------------------------------------------------------------- conversions, bit for bit

ALL = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def _f32_probes(npdt):
    """float32 inputs for the rounding to npdt: every pattern's value (inf and NaN payloads included), the
    midpoints between every 8th pair of neighbours (ties to even) and a hair either side of them, random bit
    patterns (NaN payloads, huge, tiny) and the edges of overflow and of the subnormals."""
    v = ALL.view(npdt).astype(np.float32)
    fin = np.unique(v[np.isfinite(v)])
    mid = ((fin[:-1].astype(np.float64) + fin[1:]) / 2)[::8].astype(np.float32)
    rng = np.random.default_rng(0)
    out = [v, mid, np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(-np.inf)),
           rng.integers(0, 1 << 32, 2048, dtype=np.uint64).astype(np.uint32).view(np.float32),
           np.array([0x7F800001, 0xFFC00001, 0x7FBFFFFF, 0x7F802000, 0x477FF000, 0x477FEFFF, 0x33000000,
                     0x33000001, 0x80000001, 0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF], np.uint32).view(np.float32),
           np.array([np.inf, -np.inf, 0.0, -0.0, 65520.0, -65519.99], np.float32)]
    return np.concatenate(out)


@pytest.mark.parametrize("name", list(HALVES))
def test_every_pattern_to_float32_bit_exact(name):
    npdt = HALVES[name]
    x = torch.from_numpy(ALL.view(npdt)).to("cuda")
    got = x.float().cpu().numpy()
    want = ALL.view(npdt).astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    other = "bfloat16" if name == "float16" else "float16"
    some = ALL[::97]
    got = torch.from_numpy(some.view(npdt)).to("cuda").to(getattr(torch, other)).cpu().numpy()
    want = some.view(npdt).astype(np.float32).astype(HALVES[other])
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("name", list(HALVES))
def test_float32_to_16_bits_bit_exact(name):
    npdt = HALVES[name]
    f = _f32_probes(npdt)
    got = torch.from_numpy(f).to("cuda").to(getattr(torch, name)).cpu().numpy()
    want = f.astype(npdt)
    bad = np.flatnonzero(got.view(np.uint16) != want.view(np.uint16))
    assert bad.size == 0, [(hex(f[i:i + 1].view(np.uint32)[0]), hex(got.view(np.uint16)[i]),
                            hex(want.view(np.uint16)[i])) for i in bad[:8]]
    # and the other dtypes through the same kernels: float64 and integers in, float64 / int / bool out
    for src in (np.array([0.1, -2.5, 1e6, 3.0000001], np.float64), np.array([1, -7, 65519, 1 << 20], np.int64),
                np.array([True, False, True, True])):
        g = torch.from_numpy(src).to("cuda").to(getattr(torch, name)).cpu().numpy()
        np.testing.assert_array_equal(g.view(np.uint16), src.astype(npdt).view(np.uint16))
    h = torch.tensor([0.0, -1.5, 2.75, 1000.0], dtype=getattr(torch, name), device="cuda")
    for dt in (torch.float64, torch.int64, torch.int32, torch.bool):
        np.testing.assert_array_equal(h.to(dt).cpu().numpy(), h.cpu().to(dt).numpy())


def test_storage_views_and_copies():
    """16-bit cuda storage is uint16 bit patterns; views, slices, copy_ and cpu round trips keep them."""
    for name, npdt in HALVES.items():
        dt = getattr(torch, name)
        a = np.array([[1.0, -2.0, 3.5], [0.25, np.nan, -np.inf]], np.float32).astype(npdt)
        x = torch.from_numpy(a).cuda()
        assert x.dtype is dt and x.device.type == "cuda" and x._storage.data.dtype == np.uint16
        np.testing.assert_array_equal(x.t()[1:].cpu().numpy().view(np.uint16), a.T[1:].view(np.uint16))
        y = torch.zeros(3, 2, dtype=dt, device="cuda")
        y.copy_(x.t())
        np.testing.assert_array_equal(y.cpu().numpy().view(np.uint16), a.T.view(np.uint16))
        z = torch.zeros(3, 2, device="cuda")
        z.copy_(x.t())              # into float32
        np.testing.assert_array_equal(z.cpu().numpy(), a.T.astype(np.float32))
        assert repr(x).endswith(f"dtype=torch.{name}, device='cuda:0')")
        assert (x.cpu() == torch.from_numpy(a)).tolist() == (torch.from_numpy(a) == torch.from_numpy(a)).tolist()


def test_promotion_and_mixed_devices():
    h = torch.tensor([1.0, 2.0], dtype=torch.float16, device="cuda")
    b = torch.tensor([1.0, 2.0], dtype=torch.bfloat16, device="cuda")
    assert (h + b).dtype is torch.float32 and (h + b).device.type == "cuda"
    assert (h + 1.5).dtype is torch.float16 and (h * torch.tensor(2.0)).dtype is torch.float16
    assert (h + torch.ones(2, device="cuda")).dtype is torch.float32
    assert (b + torch.ones(2, dtype=torch.int64, device="cuda")).dtype is torch.bfloat16
    x = torch.ones(2, dtype=torch.float16, device="cuda")
    x.add_(torch.tensor([0.1, 0.2], device="cuda"))     # float32 computed, stored rounded to float16
    np.testing.assert_array_equal(x.cpu().numpy(), (np.float32(1) + np.array([0.1, 0.2], np.float32)).astype(np.float16))


# ---------------------------------------------------------------------------- training under autocast

def _train(dev, steps=2, fp16=True):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler(dev, init_scale=2.0 ** 8)
    x = torch.randn(3, 4).to(dev)
    y = torch.tensor([0, 1, 1]).to(dev)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast(device_type=dev, dtype=torch.float16 if fp16 else torch.bfloat16):
            out = model(x)
            assert out.dtype is (torch.float16 if fp16 else torch.bfloat16)
            loss = torch.nn.functional.cross_entropy(out, y)
            assert loss.dtype is torch.float32
        scaler.scale(loss).backward()
        assert all(p.grad.dtype is torch.float32 and p.grad.device.type == dev for p in model.parameters())
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    return model, losses, scaler


def test_training_step_under_cuda_autocast_with_grad_scaler():
    m_cuda, l_cuda, s_cuda = _train("cuda")
    m_cpu, l_cpu, s_cpu = _train("cpu")
    np.testing.assert_allclose(l_cuda, l_cpu, rtol=1e-3, atol=1e-3)
    for p, q in zip(m_cuda.parameters(), m_cpu.parameters()):
        assert p.device.type == "cuda" and p.dtype is torch.float32
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-3, atol=1e-3)
    assert s_cuda.get_scale() == s_cpu.get_scale()
    # a step whose gradients overflow is skipped and the scale backs off
    model = torch.nn.Linear(2, 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.warns(FutureWarning):           # PyTorch's deprecated spellings, still common
        scaler = torch.cuda.amp.GradScaler(init_scale=2.0 ** 8)
    before = model.weight.detach().cpu().numpy().copy()
    with pytest.warns(FutureWarning):
        ctx = torch.cuda.amp.autocast()
    with ctx:
        loss = model(torch.full((1, 2), 6e4, device="cuda")).float().sum() * 1e4
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_array_equal(model.weight.detach().cpu().numpy(), before)
    assert scaler.get_scale() == 2.0 ** 7


def test_cuda_autocast_op_lists():
    """PyTorch's CUDA lists, which differ from its CPU ones (tests/test_amp.py): sum, exp, softmax, layer_norm...
    run in float32 on cuda; mv runs in the lower precision; atan2, addcmul, dot promote."""
    F = torch.nn.functional
    x = torch.randn(2, 3, device="cuda")
    for dt in (torch.float16, torch.bfloat16):
        with torch.autocast("cuda", dtype=dt):
            y = x @ x.t()
            assert y.dtype is dt and y.device.type == "cuda"
            for r in (y.sum(), y.exp(), torch.softmax(y, 1), F.layer_norm(y, (2,)), y.pow(2), torch.cumsum(y, 0),
                      F.mse_loss(y, y)):
                assert r.dtype is torch.float32 and r.device.type == "cuda"
            assert y.mean().dtype is dt and y.relu().dtype is dt
            assert torch.mv(x, x[0]).dtype is dt
            assert torch.addcmul(y, y, y).dtype is dt and torch.addcmul(y, y, y.float()).dtype is torch.float32
            assert torch.dot(y[0], x[0, :2]).dtype is torch.float32
        with torch.autocast("cpu", dtype=dt):          # the cpu region leaves cuda tensors alone
            assert (x @ x.t()).dtype is torch.float32


def test_alpha_rounded_to_the_dtype_on_cuda():
    """add/sub round alpha to the 16-bit dtype as PyTorch does (numbers from PyTorch 2.13; tests/test_half.py)."""
    for name, a, b, want in (("float16", [-10.015625, 24.4375, 187.875], [226.25, -182.25, 45.625],
                              [12.6015625, 6.21875, 192.375]),
                             ("bfloat16", [324.0, -4.25, -32.0], [170.0, 134.0, 30.625], [342.0, 9.1875, -28.875])):
        dt = getattr(torch, name)
        got = torch.add(torch.tensor(a, dtype=dt, device="cuda"), torch.tensor(b, dtype=dt, device="cuda"), alpha=0.1)
        assert got.device.type == "cuda" and got.cpu().tolist() == want


def test_long_row_split_over_blocks(monkeypatch):
    """A long 16-bit row is cut over blocks: the half kernel leaves float32 partials, which the float32 kernel
    of kernels/cuda.py merges (thresholds lowered so that a short row takes that path here)."""
    from reftorch import _cuda_launch
    monkeypatch.setattr(_cuda_launch, "SPLIT_MIN", 64)
    monkeypatch.setattr(_cuda_launch, "SPLIT_CHUNK", 16)
    rng = np.random.default_rng(5)
    for name, npdt in HALVES.items():
        a = rng.uniform(-2, 2, 203).astype(npdt)
        x = torch.from_numpy(a).to("cuda")
        want = a.astype(np.float32)
        np.testing.assert_allclose(x.sum().float().item(), np.float32(want.sum(dtype=np.float64)).astype(npdt),
                                   rtol=TOL[name])
        assert x.amax().item() == want.max() and x.prod().dtype is getattr(torch, name)
