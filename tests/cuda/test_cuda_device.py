"""Tensors on `cuda` in numba's simulator: creation and transfers, one op of each kind against the cpu,
the cross-device errors, autograd, a training step of a module moved with .to('cuda'), the counter-based
random numbers and a reduced demo run.

Runs only with NUMBA_ENABLE_CUDASIM=1 (tests/test_cuda_simulator.py starts it). The simulator runs
each thread as Python, so the tensors are tiny (a matmul costs ~0.3 s per 16x16 tile block).
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

if not os.environ.get("NUMBA_ENABLE_CUDASIM"):
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run by tests/test_cuda_simulator.py)", allow_module_level=True)

import reftorch as torch  # noqa: E402
from reftorch import _cuda_launch as launch  # noqa: E402
from reftorch import _cuda_random  # noqa: E402
from reftorch import nn  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
np.seterr(all="ignore")


def same(got, want, atol=1e-5):
    assert got.device.type == "cuda", got.device
    assert got.dtype is want.dtype and tuple(got.shape) == tuple(want.shape), (got.dtype, got.shape, want.dtype,
                                                                               want.shape)
    np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), rtol=1e-5, atol=atol)


def test_creation_transfers_and_metadata():
    assert torch.cuda.is_available() and torch.cuda.device_count() == 1
    torch.cuda.synchronize()
    d = torch.device("cuda:0")
    assert repr(d) == "device(type='cuda', index=0)" and d == "cuda"
    for t in (torch.zeros(2, 3, device="cuda"), torch.ones(2, device=d), torch.full((2,), 7, device="cuda"),
              torch.arange(5, device="cuda"), torch.eye(3, device="cuda"), torch.empty(4, device="cuda:0"),
              torch.tensor([[1.5, 2]], device="cuda"), torch.zeros_like(torch.ones(2, device="cuda"))):
        assert t.is_cuda and t.device == d and repr(t.device) == "device(type='cuda', index=0)"
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    c = x.to("cuda")
    assert repr(c) == "tensor([[1., 2.],\n        [3., 4.]], device='cuda:0')"
    assert c.cuda() is c and x.cpu() is x
    back = c.cpu()
    assert back.device == torch.device("cpu") and not back.is_cuda
    np.testing.assert_array_equal(back.numpy(), x.numpy())
    assert x.cuda().device == d and x.to(c).device == d and c.to(x).device.type == "cpu"
    assert c.to(torch.float64).dtype is torch.float64 and c.to(torch.float64).is_cuda
    assert c[1, 0].item() == 3.0 and c.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(TypeError, match=r"can't convert cuda:0 device type tensor to numpy\. Use Tensor\.cpu\(\) "
                                        r"to copy the tensor to host memory first\."):
        c.numpy()
    c2 = c.clone()
    c2.copy_(torch.tensor([9.0, 8.0]))          # copy_ across devices
    c2[0, 1] = -1.0
    assert c2.tolist() == [[9.0, -1.0], [9.0, 8.0]] and c.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_one_op_of_each_kind_matches_the_cpu():
    rng = np.random.default_rng(0)
    a = torch.tensor(rng.standard_normal((3, 4)).astype(np.float32))
    b = torch.tensor(rng.standard_normal((4,)).astype(np.float32))
    ca, cb = a.cuda(), b.cuda()
    same(ca.t().exp(), a.t().exp())                                      # unary, strided
    same(ca * cb + 2, a * b + 2)                                          # binary, broadcast, Python scalar
    same(ca - torch.tensor(1.5), a - torch.tensor(1.5))                   # a 0-d cpu tensor mixes
    same(torch.where(ca > 0, ca, cb), torch.where(a > 0, a, b))          # ternary
    same(ca.sum(1), a.sum(1))                                             # reduction
    same(ca.t().amax(), a.t().amax())
    same(ca.argmax(0), a.argmax(0))                                       # argreduction
    same(ca.cumsum(0), a.cumsum(0))                                       # scan
    same(torch.cat([ca, ca[:1]]), torch.cat([a, a[:1]]))                  # array ops (host round trip)
    same(ca.sort(1).values, a.sort(1).values)
    idx = torch.tensor([[0, 3], [1, 1], [2, 0]])
    same(ca.gather(1, idx.cuda()), a.gather(1, idx))
    same(ca[torch.tensor([2, 0]).cuda()], a[torch.tensor([2, 0])])
    same(ca.reshape(2, 6)[:, ::2], a.reshape(2, 6)[:, ::2])               # views
    same(ca @ ca.t(), a @ a.t())                                          # the tiled matmul
    same(ca @ cb, a @ b)
    same(torch.bmm(ca.reshape(1, 3, 4), ca.t().reshape(1, 4, 3)), torch.bmm(a.reshape(1, 3, 4), a.t().reshape(1, 4, 3)))
    same(ca.to(torch.int64) // 1, a.to(torch.int64) // 1)
    v, w = ca.clone(), a.clone()
    v[:, 1].mul_(3)
    w[:, 1].mul_(3)
    same(v, w)                                                            # in place through a view


def test_indexing_gathers_and_scatters_on_the_device():
    """Advanced indexing gathers by flat positions; its backward (index_put, accumulate) adds duplicates
    with atomics (reftorch/_cuda_index.py)."""
    rng = np.random.default_rng(2)
    a = torch.tensor(rng.standard_normal((4, 5, 3)).astype(np.float32))
    ca = a.cuda()
    for f in (lambda t, i: t[:, i([1, 4])], lambda t, i: t[i([0, 2]), :, i([1, 2])],
              lambda t, i: t[1:, ::2][i([[0, 1], [2, 0]])], lambda t, i: t[t > 0.5]):
        same(f(ca, lambda v: torch.tensor(v, device="cuda")), f(a, torch.tensor))
    grads = []
    for dev in ("cpu", "cuda"):
        x = a.detach().to(dev).requires_grad_()
        (x[torch.tensor([1, 1, 3, 1], device=dev)] * torch.arange(60.0, device=dev).reshape(4, 5, 3)).sum().backward()
        grads.append(x.grad)
    same(grads[1], grads[0])
    b = torch.zeros(5, device="cuda")
    b.index_put_((torch.tensor([0, 0, 4], device="cuda"),), torch.tensor([1.0, 2.0, 3.0], device="cuda"), True)
    assert b.tolist() == [3.0, 0.0, 0.0, 0.0, 3.0]
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0 with size 4"):
        ca[torch.tensor([9], device="cuda")]


def test_ops_between_devices_raise_before_writing():
    msg = r"^Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!$"
    c = torch.ones(2, device="cuda")
    for fn in (lambda: c + torch.ones(2), lambda: torch.ones(2) * c, lambda: c.add_(torch.ones(2)),
               lambda: torch.cat([c, torch.ones(2)]), lambda: torch.ones(2, 2) @ torch.ones(2, 2, device="cuda")):
        with pytest.raises(RuntimeError, match=msg):
            fn()
    assert c.tolist() == [1.0, 1.0]


def test_autograd_on_cuda_matches_cpu():
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    w = torch.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    cx = x.detach().cuda().requires_grad_()
    cw = w.detach().cuda().requires_grad_()
    for (p, q) in ((x, w), (cx, cw)):
        ((p @ q).tanh() * p.sum(1, keepdim=True)).logsumexp(1).mean().backward()
    same(cx.grad, x.grad)
    same(cw.grad, w.grad)
    h = torch.ones(2, device="cuda", requires_grad=True)        # differentiable device copies
    (h.cpu() * 3).sum().backward()
    assert h.grad.is_cuda and h.grad.tolist() == [3.0, 3.0]


def test_module_to_cuda_trains_like_cpu():
    torch.manual_seed(0)
    cpu_model = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Dropout(0.0), nn.Linear(4, 3))
    gpu_model = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Dropout(0.0), nn.Linear(4, 3))
    gpu_model.load_state_dict(cpu_model.state_dict())
    assert gpu_model.cuda() is gpu_model and all(p.is_cuda for p in gpu_model.parameters())
    x, y = torch.randn(5, 6), torch.tensor([0, 2, 1, 1, 0])
    losses = []
    for model, dev in ((cpu_model, "cpu"), (gpu_model, "cuda")):
        opt = torch.optim.Adam(model.parameters(), lr=0.1)
        loss = nn.functional.cross_entropy(model(x.to(dev)), y.to(dev))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(losses[1], rel=1e-6)
    for p, q in zip(cpu_model.parameters(), gpu_model.parameters()):
        same(q.detach(), p.detach())
    assert all(not p.is_cuda for p in gpu_model.to("cpu").parameters())


def test_small_cnn_step_on_cuda_matches_cpu():
    """The demo CNN's layers (conv, max-pool, flatten, linear) on a tiny input, one SGD step."""
    torch.manual_seed(1)
    models = [nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                            nn.Linear(8, 3)) for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    models[1].to("cuda")
    x, y = torch.randn(2, 1, 4, 4), torch.tensor([0, 2])
    for model, dev in zip(models, ("cpu", "cuda")):
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        loss = nn.functional.cross_entropy(model(x.to(dev)), y.to(dev))
        opt.zero_grad()
        loss.backward()
        opt.step()
    for p, q in zip(*(m.parameters() for m in models)):
        same(q.detach(), p.detach())


def test_random_numbers_are_counter_based():
    torch.cuda.manual_seed(123)
    u = torch.rand(100, device="cuda")
    np.testing.assert_array_equal(u.cpu().numpy(), _cuda_random.uniform_reference(123, 0, 100))
    old = launch.configure(threads=8, max_blocks=3)               # another launch shape: the same numbers
    try:
        torch.manual_seed(123)                                    # torch.manual_seed seeds cuda too
        np.testing.assert_array_equal(torch.rand(100, device="cuda").cpu().numpy(), u.cpu().numpy())
    finally:
        launch.configure(**old)
    assert 0.0 <= u.cpu().numpy().min() and u.cpu().numpy().max() < 1.0
    n = torch.randn(400, device="cuda", dtype=torch.float64).cpu().numpy()
    assert abs(n.mean()) < 0.2 and 0.8 < n.std() < 1.2
    r = torch.randint(3, 7, (50,), device="cuda")
    assert r.dtype is torch.int64 and set(r.tolist()) <= {3, 4, 5, 6}
    d = nn.functional.dropout(torch.ones(200, device="cuda"), 0.5).cpu().numpy()
    assert set(np.unique(d)) <= {0.0, 2.0} and 50 < (d == 0).sum() < 150


def test_demo_trains_on_cuda_in_a_reduced_run(tmp_path):
    pytest.importorskip("sklearn")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, "-m", "reftorch.demo", "--device", "cuda", "--models", "mlp", "--epochs",
                           "1", "--max-batches", "1", "--batch-size", "4", "--no-progress", "--checkpoint-dir",
                           str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "device cuda" in proc.stdout and "MLP test accuracy" in proc.stdout, proc.stdout
    assert "(same as before saving)" in proc.stdout, proc.stdout


def test_save_and_load_keep_the_device(tmp_path):
    import io
    w = torch.tensor([[1.0, -2.0], [3.5, 4.0]], device="cuda")
    path = tmp_path / "ckpt.safetensors"
    torch.save({"w": w, "n": torch.tensor(3)}, path)                  # a flat state dict
    got = torch.load(path)
    assert got["w"].device == torch.device("cuda:0") and got["n"].device.type == "cpu"
    assert got["w"].tolist() == w.tolist() and got["n"].item() == 3
    for where in ("cpu", torch.device("cpu"), {"cuda:0": "cpu"}, lambda storage, loc: storage):
        back = torch.load(path, map_location=where)
        assert back["w"].device.type == "cpu" and back["w"].tolist() == w.tolist()
    assert torch.load(path, map_location=lambda s, loc: s.cuda())["n"].is_cuda
    buf = io.BytesIO()
    torch.save({"step": 2, "state": [w, (torch.ones(1), w.sum())]}, buf)     # a tree
    buf.seek(0)
    tree = torch.load(buf)
    assert tree["step"] == 2 and tree["state"][0].is_cuda and tree["state"][1][1].is_cuda
    assert not tree["state"][1][0].is_cuda
    buf.seek(0)
    assert torch.load(buf, map_location="cuda")["state"][1][0].is_cuda        # cpu tensors moved too
    m = nn.Linear(2, 1).cuda()
    buf = io.BytesIO()
    torch.save(m.state_dict(), buf)
    buf.seek(0)
    m2 = nn.Linear(2, 1).cuda()
    m2.load_state_dict(torch.load(buf))
    assert m2.weight.is_cuda and m2.weight.tolist() == m.weight.tolist()


def test_index_select_index_add_gather_scatter_add_run_on_the_device(monkeypatch):
    """The embedding / cross-entropy paths: the ops name their device implementation in ops.yaml (cuda:
    select_positions...), so no host copy of the data is made; results and errors match the cpu."""
    from reftorch import _array, _cuda_dispatch
    trips = []
    host = _array.array
    monkeypatch.setattr(_array, "array", lambda spec, *a: trips.append(spec.name) or host(spec, *a))
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 3, generator=g, dtype=torch.float64)
    src = torch.randn(4, 3, generator=g, dtype=torch.float64)
    rep = torch.tensor([2, 0, 2])                        # repeated: index_add/scatter_add accumulate
    gidx = torch.tensor([[1, 0], [3, 3]])

    def both(fn, *args):
        want = fn(*args)
        got = fn(*[a if k == 1 else a.cuda() for k, a in enumerate(args)])          # the index on the cpu
        same(got, want)
        got = fn(*[a.cuda() if isinstance(a, torch.Tensor) else a for a in args])     # index on cuda too
        same(got, want)

    both(lambda t, i: t.index_select(0, i), x, rep)
    both(lambda t, i: t.index_select(-1, i[:2]), x.t(), rep)                 # strided self, last dim
    both(lambda t, i, s: t.index_add(0, i, s, alpha=0.5), x, rep, src[:3])
    both(lambda t, i, s: t.index_add(1, i, s), x, rep, src[:, [0, 1, 2]].t().t())
    both(lambda t, i: t.gather(1, i), x, gidx[:, :2] % 3)
    both(lambda t, i: t.gather(0, i), x, gidx)
    both(lambda t, i, s: t.scatter_add(0, i, s), x, gidx, src)
    both(lambda t, i: t.index_select(0, i), torch.arange(5), rep)           # int64
    both(lambda t, i, s: t.index_add(0, i, s), torch.arange(5), rep, torch.ones(3, dtype=torch.int64))
    assert trips == [] and _cuda_dispatch.IMPLS
    w = nn.Embedding(5, 2).cuda()
    out = w(torch.tensor([[1, 4], [1, 0]], device="cuda"))
    out.sum().backward()
    assert trips == [] and w.weight.grad.tolist() == [[1, 1], [2, 2], [0, 0], [0, 0], [1, 1]]
    for fn in (lambda t: t.index_select(0, torch.tensor([4])), lambda t: t.index_select(0, torch.tensor([-1])),
               lambda t: t.gather(0, torch.tensor([[5, 0, 0]])), lambda t: t.index_add(0, torch.tensor([0]), t)):
        with pytest.raises((IndexError, RuntimeError)) as want:
            fn(x)
        with pytest.raises(want.type, match=re.escape(str(want.value))):
            fn(x.cuda())


def test_log_softmax_and_cross_entropy_stay_on_the_device(monkeypatch):
    from reftorch import _array
    trips = []
    host = _array.array
    monkeypatch.setattr(_array, "array", lambda spec, *a: trips.append(spec.name) or host(spec, *a))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 2, generator=g, dtype=torch.float64)
    x[0, 1, 0] = -float("inf")
    for d in (0, 1, -1):
        same(x.cuda().log_softmax(d), x.log_softmax(d))
    logits = torch.randn(3, 4, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 3, 1])
    want = torch.nn.functional.cross_entropy(logits.requires_grad_(), y)
    want.backward()
    lc = logits.detach().cuda().requires_grad_()
    got = torch.nn.functional.cross_entropy(lc, y.cuda())
    got.backward()
    same(got.detach(), want.detach())
    same(lc.grad, logits.grad)
    assert trips == []
    same(torch.ones(0, 2, device="cuda").log_softmax(0), torch.ones(0, 2).log_softmax(0))   # the body's path


def test_cat_and_stack_copy_on_the_device(monkeypatch):
    from reftorch import _array
    trips = []
    host = _array.array
    monkeypatch.setattr(_array, "array", lambda spec, *a: trips.append(spec.name) or host(spec, *a))
    g = torch.Generator().manual_seed(2)
    a = torch.randn(2, 3, generator=g, dtype=torch.float64)
    b = torch.randn(3, 2, generator=g, dtype=torch.float64).t()          # strided
    c = torch.arange(6).reshape(2, 3)                                    # int64: promoted to float64
    for d in (0, 1, -1):
        same(torch.cat([a.cuda(), b.cuda(), c.cuda()], d), torch.cat([a, b, c], d))
    same(torch.stack([a.cuda(), b.cuda()], 1), torch.stack([a, b], 1))
    same(torch.cat([a.cuda(), a[:0].cuda()]), torch.cat([a, a[:0]]))
    assert trips == []
    la, lb = a.clone().requires_grad_(), b.clone().requires_grad_()
    (torch.cat([la, lb], 1) * torch.arange(6.0, dtype=torch.float64)).sum().backward()
    ca, cb = a.cuda().requires_grad_(), b.cuda().requires_grad_()
    (torch.cat([ca, cb], 1) * torch.arange(6.0, dtype=torch.float64, device="cuda")).sum().backward()
    same(ca.grad, la.grad)
    same(cb.grad, lb.grad)
    same(torch.cat([torch.zeros(0, device="cuda"), a.cuda()]), torch.cat([torch.zeros(0), a]))   # legacy empty: body
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        torch.cat([a.cuda(), torch.ones(1, 2, device="cuda")])


def test_layers_built_with_device_cuda_live_there():
    torch.manual_seed(5)
    lin = nn.Linear(3, 2, device="cuda")
    norm = nn.LayerNorm(2, device=torch.device("cuda:0"))
    assert all(p.is_cuda and p.is_leaf for p in (*lin.parameters(), *norm.parameters()))
    x = torch.ones(4, 3, device="cuda")
    norm(lin(x)).sum().backward()
    assert lin.weight.grad.is_cuda
    torch.manual_seed(5)
    ref = nn.Linear(3, 2)
    same(lin.weight.detach(), ref.weight.detach(), atol=0)      # initialised as on the cpu, then moved


def test_a_conjugate_or_negative_view_crosses_devices_as_its_values():
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    moved = torch._neg_view(x.to("cuda")).cpu()
    assert not moved.is_neg() and moved.tolist() == [-1.0, 2.0]
    moved.sum().backward()
    assert x.grad.tolist() == [-1.0, -1.0]
    c = torch.tensor([1 + 2j]).conj().to("cuda")
    assert c.cpu().tolist() == [1 - 2j] and torch.tensor([1 + 2j]).to("cuda").conj().cpu().tolist() == [1 - 2j]
