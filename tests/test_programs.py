"""What real PyTorch programs touched (benches/programs.py runs them): the `import torch` shim and the
small API gaps they found, each against what torch 2.13 does."""
import os
import subprocess
import sys

import reftorch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIM = os.path.join(ROOT, "benches", "torchshim")

_SHIM_CHECK = """
import sys
import torch, reftorch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.nn import functional as F2
import torch.optim as optim
assert torch is reftorch and F is reftorch.nn.functional and F2 is F
assert sys.modules["torch.nn"] is reftorch.nn and DataLoader is reftorch.utils.data.DataLoader
assert optim.SGD is reftorch.optim.SGD
assert reftorch.nn.functional.__spec__.name == "reftorch.nn.functional"   # the module keeps its own spec
try:
    import torch.no_such_module
except ModuleNotFoundError as e:
    assert "torch.no_such_module" in str(e)
else:
    raise AssertionError("a missing submodule imported")
print("ok")
"""


def test_torch_shim_aliases_reftorch_and_its_submodules():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([SHIM, ROOT]), NUMBA_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", _SHIM_CHECK], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_cuda_is_bf16_supported_without_a_gpu():
    # nanoGPT asks `torch.cuda.is_available() and torch.cuda.is_bf16_supported()`; torch answers False
    # (both forms) where CUDA is not available
    if reftorch.cuda.is_available():
        assert isinstance(reftorch.cuda.is_bf16_supported(), bool)
        return
    assert reftorch.cuda.is_bf16_supported() is False
    assert reftorch.cuda.is_bf16_supported(including_emulation=False) is False


def test_meta_conv_is_shape_only():
    # recipes/reasoning_about_shapes: a conv over a (1024, 3, 65536, 65536) meta input gives the output shape
    # without allocating (the cpu columns would take 192 TiB)
    conv = reftorch.nn.Conv2d(3, 5, 2, device="meta")
    out = conv(reftorch.rand(2 ** 10, 3, 2 ** 16, 2 ** 16, device="meta"))
    assert out.shape == (1024, 5, 65535, 65535) and out.device.type == "meta"


def test_meta_conv_matches_cpu_geometry_and_backward():
    F = reftorch.nn.functional
    for nd, shape, kw in [(1, (2, 4, 11), dict(stride=2, dilation=2, groups=2)),
                          (2, (2, 3, 9, 8), dict(stride=(2, 1), dilation=(1, 2))),
                          (3, (1, 2, 5, 6, 7), dict(stride=1, dilation=1))]:
        conv = getattr(F, f"conv{nd}d")
        w_shape = (4, shape[1] // kw.get("groups", 1)) + (3,) * nd
        cpu = conv(reftorch.rand(shape), reftorch.rand(w_shape), reftorch.rand(4), **kw)
        x = reftorch.rand(shape, device="meta", requires_grad=True)
        w = reftorch.rand(w_shape, device="meta", requires_grad=True)
        meta = conv(x, w, reftorch.rand(4, device="meta"), **kw)
        assert meta.shape == cpu.shape and meta.stride() == cpu.stride() and meta.dtype == cpu.dtype
        meta.sum().backward()
        assert x.grad.shape == x.shape and x.grad.device.type == "meta" and w.grad.shape == w.shape


def _modify_after(kind):
    torch = reftorch
    a = torch.ones(3, requires_grad=True)
    b = torch.ones(3, requires_grad=True)
    x, w = a * 1, b * 1
    y = {"scalar": lambda: x * 2.0, "const": lambda: x * torch.ones(3), "both": lambda: x * w}[kind]()
    x.add_(1)                   # x changes after the product saved (or did not save) it
    y.sum().backward()
    return a.grad.tolist()


def test_saved_tensor_only_checked_when_its_formula_runs():
    # examples/differentiable_physics: `positions + velocities * dt`, then `velocities[0] = ...`. torch saves
    # a product's operand only for the other operand's gradient, so changing it in place afterwards is fine
    # when that other operand needs none (checked side by side with torch 2.13)
    assert _modify_after("scalar") == [2.0, 2.0, 2.0]
    assert _modify_after("const") == [1.0, 1.0, 1.0]
    try:
        _modify_after("both")
    except RuntimeError as err:
        assert "modified by an inplace operation" in str(err)
    else:
        raise AssertionError("x was needed for w's gradient: torch raises")
