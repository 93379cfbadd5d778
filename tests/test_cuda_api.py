"""The CUDA side that runs in the ordinary test process (no GPU, no simulator): reftorch.cuda's
answers, the generated module's import and coverage, and how the generator merges partial results."""
import ast
import os

import numpy as np
import pytest

import reftorch
from codegen.emit_cuda import merge_expr
from codegen.model import load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIMULATED = bool(os.environ.get("NUMBA_ENABLE_CUDASIM"))


def test_cuda_module_answers_honestly():
    cuda = reftorch.cuda
    reftorch.cuda.manual_seed(1234)              # accepted without a GPU, as in PyTorch
    reftorch.cuda.manual_seed_all(1234)
    assert reftorch.cuda.initial_seed() == 1234
    if cuda.is_available():
        assert cuda.device_count() >= 1
        assert isinstance(cuda.get_device_name(), str)
        cuda.synchronize()
        return
    assert cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="No CUDA GPUs are available"):
        cuda.synchronize()
    with pytest.raises(RuntimeError, match="No CUDA GPUs are available"):
        cuda.current_device()


@pytest.mark.skipif(SIMULATED, reason="checks the import without the simulator")
def test_generated_cuda_module_imports_without_a_gpu_and_covers_every_kernel_kind():
    from reftorch.kernels import cuda as gk
    ops = load(os.path.join(ROOT, "reftorch", "ops.yaml"))
    want = {op.name for op in ops if op.kind in ("unary", "binary", "ternary", "reduction", "argreduction", "scan")}
    assert want <= set(gk.KERNELS)
    for name, info in gk.KERNELS.items():
        for suffix in info["kernels"]:
            assert callable(getattr(gk, f"{name}_{suffix}")), f"{name}_{suffix}"


def test_every_cpu_helper_has_a_cuda_version():
    """Helpers of the CPU prelude are defined by the CUDA prelude or copied over by the generator."""
    from codegen.emit_cuda import _bound_names, prelude
    cpu = open(os.path.join(ROOT, "codegen", "templates", "prelude.py")).read()
    cpu_names = {n.name for n in ast.parse(cpu).body if isinstance(n, ast.FunctionDef)}
    assert cpu_names <= _bound_names(ast.parse(prelude()))


@pytest.mark.parametrize("combine, merge", [
    ("acc + x", "acc + x"),
    ("acc + x * x", "acc + x"),                       # partial sums of squares add
    ("acc + (x != 0)", "acc + x"),                    # partial counts add
    ("acc * x", "acc * x"),
    ("acc and x != 0", "acc and x"),
    ("acc or x", "acc or x"),
    ("x if (x > acc or x != x) else acc", "x if (x > acc or x != x) else acc"),   # selections merge by themselves
    ("logaddexp(acc, x)", "logaddexp(acc, x)"),
    ("acc - x", None),                                # not associative: one thread folds each row
    ("acc * 0.5 + x", None),
    ("logaddexp(acc, 2 * x)", None),
])
def test_merge_of_partial_results(combine, merge):
    assert merge_expr(combine) == merge


def test_cuda_tensors_without_a_gpu_raise_pytorchs_error():
    """Neither a GPU nor the simulator: every way onto cuda says so, as PyTorch without CUDA does."""
    if reftorch.cuda.is_available():
        pytest.skip("a CUDA device (or the simulator) is present")
    t = reftorch.ones(2)
    for fn in (lambda: reftorch.zeros(2, device="cuda"), lambda: t.cuda(), lambda: t.to("cuda:0"),
               lambda: reftorch.rand(2, device="cuda"), lambda: reftorch.nn.Linear(2, 2).to("cuda"),
               lambda: reftorch.zeros(2, device=reftorch.device("cuda")),
               lambda: reftorch.nn.Linear(2, 2, device="cuda"), lambda: reftorch.nn.Conv2d(1, 1, 3, device="cuda")):
        with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):   # torch's class
            fn()
    assert repr(reftorch.device("cuda:0")) == "device(type='cuda', index=0)"
    assert t.cpu() is t and not t.is_cuda and t.device == reftorch.device("cpu")


def test_device_implementations_named_in_the_registry_exist():
    """`cuda: <name>` of ops.yaml array ops (codegen/model.py CUDA_IMPLS) <-> reftorch/_cuda_dispatch.py IMPLS;
    the runtime picks them by the spec's field, never by op name."""
    from codegen.model import CUDA_IMPLS
    from reftorch import _cuda_dispatch
    from reftorch.kernels.api import SPECS
    assert set(_cuda_dispatch.IMPLS) == set(CUDA_IMPLS)
    named = {name: s["cuda"] for name, s in SPECS.items() if "cuda" in s}
    assert named and set(named.values()) <= set(CUDA_IMPLS) and all(SPECS[n]["kind"] == "array" for n in named)
    src = open(os.path.join(ROOT, "reftorch", "_cuda_dispatch.py")).read()
    for name in named:
        assert f'"{name}"' not in src, f"_cuda_dispatch.py names the op {name!r}"


def test_layers_take_the_device_factory_argument():
    """nn layers accept PyTorch's `device=`: device="cpu" builds exactly the layer built without it."""
    for make in (lambda **kw: reftorch.nn.Linear(3, 2, **kw), lambda **kw: reftorch.nn.Conv2d(1, 2, 3, **kw),
                 lambda **kw: reftorch.nn.LayerNorm(4, **kw), lambda **kw: reftorch.nn.LSTM(3, 4, **kw)):
        reftorch.manual_seed(3)
        plain = make()
        reftorch.manual_seed(3)
        placed = make(device=reftorch.device("cpu"))
        for (n, a), (_, b) in zip(plain.named_parameters(), placed.named_parameters()):
            assert b.device == reftorch.device("cpu") and b.is_leaf, n
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
