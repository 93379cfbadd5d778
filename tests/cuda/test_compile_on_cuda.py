"""reftorch.compile on cuda tensors, in numba's simulator: each fused region launches its generated numba.cuda
kernels (forward, and the fused backward for regions that require grad), the other ops go through the cuda
dispatch, and the device is part of the guards.

Runs only with NUMBA_ENABLE_CUDASIM=1 (tests/test_cuda_simulator.py starts it). Tiny tensors: the simulator
runs every thread as Python.
"""
import math
import os

import numpy as np
import pytest

if not os.environ.get("NUMBA_ENABLE_CUDASIM"):
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run by tests/test_cuda_simulator.py)", allow_module_level=True)

import reftorch as torch  # noqa: E402
from reftorch import nn  # noqa: E402
from reftorch.compile import ir  # noqa: E402


def regions(cf):
    return [st for e in cf._cache.values() if e.steps for st in e.steps if isinstance(st, ir.Region)]


def close(got, want, atol=1e-5):
    assert got.device == want.device, (got.device, want.device)
    assert got.dtype is want.dtype and tuple(got.shape) == tuple(want.shape), (got.dtype, got.shape, want.shape)
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().cpu().numpy(), rtol=1e-5, atol=atol)


def chain(x, b):
    # broadcasting (b is a row), constants, a comparison (a mask output) and an alpha scalar
    y = ((x * 2 + b).sigmoid() * x).tanh()
    return y.sub(b, alpha=0.5), (x > b)


def test_elementwise_chain_with_broadcasting_forward_and_grads():
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((3, 4)).astype(np.float32)
    bn = rng.standard_normal(4).astype(np.float32)
    cf = torch.compile(chain)
    cf(torch.tensor(xn, device="cuda", requires_grad=True), torch.tensor(bn, device="cuda", requires_grad=True))
    out = {}        # (the trace above ran eagerly; the compiled call below replays the fused kernels)
    for dev, compiled in (("cpu", False), ("cuda", False), ("cuda", True)):
        x = torch.tensor(xn, device=dev, requires_grad=True)
        b = torch.tensor(bn, device=dev, requires_grad=True)
        y, m = (cf if compiled else chain)(x, b)
        (y * y).sum().backward()        # the gradient reaching the region is not all ones
        out[dev, compiled] = (y, m, x.grad, b.grad)
    regs = regions(cf)
    assert cf.traces == 1 and len(regs) == 1 and regs[0].device.type == "cuda"
    assert set(regs[0].kernels) == {"fused", "fused_backward"}      # both launched
    assert "@cuda.jit" in cf.kernels()[0] and "fused_backward_cuda_strided" in cf.kernels()[0]
    assert out["cuda", True][0].grad_fn.name() == "CompiledFunctionBackward"
    for got, eager, host in zip(out["cuda", True], out["cuda", False], out["cpu", False]):
        close(got, eager)
        assert got.cpu().dtype is host.dtype
        np.testing.assert_allclose(got.detach().cpu().numpy(), host.detach().numpy(), rtol=1e-5, atol=1e-5)
    # a replay (no trace) on non-contiguous inputs: the strided kernels, the same numbers
    xt = torch.tensor(np.ascontiguousarray(xn.T), device="cuda", requires_grad=True)
    y, m = cf(xt.t(), torch.tensor(bn, device="cuda", requires_grad=True))
    assert cf.traces == 1
    close(y, out["cuda", False][0].detach())
    assert m.tolist() == out["cpu", False][1].tolist()


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        h = self.fc(x)          # matmul + bias: the cuda dispatch
        return 0.5 * h * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))


def test_compiled_module_on_cuda_matches_eager():
    torch.manual_seed(0)
    m = Block().to("cuda")
    cm = torch.compile(m)
    x = torch.tensor(np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32), device="cuda")
    cm(x)                   # the trace
    got = cm(x)             # the replay: fused kernels
    assert got.grad_fn.name() == "CompiledFunctionBackward" and cm._compiled_forward.traces == 1
    (got ** 2).sum().backward()
    gw, gb = m.fc.weight.grad.clone(), m.fc.bias.grad.clone()
    m.zero_grad()
    want = m(x)
    (want ** 2).sum().backward()
    close(got, want)
    close(gw, m.fc.weight.grad)
    close(gb, m.fc.bias.grad)
    regs = regions(cm._compiled_forward)
    assert regs and all(r.device.type == "cuda" for r in regs)
    assert any(r.grad_inputs for r in regs)        # the GELU part records one fused backward node


def test_device_guard_miss_retraces():
    f = torch.compile(lambda a, b: (a - b).abs() * a)
    an = np.array([[1.0, -2.0, 3.0]], np.float32)
    bn = np.array([0.5, 0.5, -1.0], np.float32)
    want = np.abs(an - bn) * an
    r_cpu = f(torch.tensor(an), torch.tensor(bn))
    assert f.traces == 1 and r_cpu.device.type == "cpu"
    r_cuda = f(torch.tensor(an, device="cuda"), torch.tensor(bn, device="cuda"))
    assert f.traces == 2 and r_cuda.device.type == "cuda"
    r_cuda2 = f(torch.tensor(an, device="cuda"), torch.tensor(bn, device="cuda"))
    assert f.traces == 2 and r_cuda2.device.type == "cuda"
    np.testing.assert_allclose(r_cuda2.cpu().numpy(), want)
    np.testing.assert_allclose(r_cpu.numpy(), want)
    np.testing.assert_allclose(r_cuda.cpu().numpy(), want)
    assert sorted(r.device.type for r in regions(f)) == ["cpu", "cuda"]


def test_device_moves_inside_the_compiled_function():
    f = torch.compile(lambda x: (x.to("cuda") * 2 + 1).cpu())
    for v in ([1.0, 2.0], [5.0, -6.0]):
        x = torch.tensor(v, requires_grad=True)
        y = f(x)
        assert y.device.type == "cpu" and y.tolist() == [2 * a + 1 for a in v]
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
    assert f.traces == 1 and [r.device.type for r in regions(f)] == ["cuda"]


def test_captured_training_step_on_cuda():
    """A whole step (forward, backward, SGD) compiled on cuda tensors: replayed through the cuda dispatch with
    its backward in the graph; parameters match the eager step's."""
    rng = np.random.default_rng(0)
    ms = []
    for _ in range(2):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2)).to("cuda")
        ms.append((m, torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.5)))

    def make(m, opt):
        def step(x, y):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        return step
    eager, compiled = make(*ms[0]), torch.compile(make(*ms[1]), fullgraph=True)
    for _ in range(3):
        x = torch.tensor(rng.standard_normal((5, 4)).astype(np.float32), device="cuda")
        y = torch.tensor(rng.standard_normal((5, 2)).astype(np.float32), device="cuda")
        close(compiled(x, y), eager(x, y).detach())
        for pe, pc in zip(ms[0][0].parameters(), ms[1][0].parameters()):
            close(pc, pe)
            close(pc.grad, pe.grad)
    assert not compiled.graph_breaks()
