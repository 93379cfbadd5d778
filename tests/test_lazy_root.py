"""`import reftorch` imports the core only; the library layer (nn, optim, utils, amp, serialization ...) loads on
first use (reftorch/__init__.py's module __getattr__), with what its import did before still in place."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_FRESH = r"""
import sys
import reftorch as torch
library = ("nn", "optim", "utils", "linalg", "distributions", "special", "amp", "functional", "jit", "onnx",
           "random", "hub", "serialization", "compile", "_nn_names")
loaded = [m for m in library if "reftorch." + m in sys.modules]
assert not loaded, loaded
assert torch.Tensor.share_memory_ and torch.Tensor.is_shared                # registered by reftorch.multiprocessing
t = torch.ones(3).share_memory_()
assert t.is_shared()
assert {"nn", "optim", "conv2d", "save", "autocast", "cpu"} <= set(dir(torch))
assert hasattr(torch, "conv2d") and not hasattr(torch, "no_such_name") and not hasattr(torch, "_no_such_name")
exec(sys.argv[1])
"""


def _fresh(code):
    r = subprocess.run([sys.executable, "-c", _FRESH, code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, REFTORCH_EAGER_INIT="0"))
    assert r.returncode == 0, r.stderr[-3000:]


def test_library_names_load_on_first_use():
    _fresh("""
import types
assert isinstance(torch.nn, types.ModuleType) and torch.nn.Linear(2, 3).weight.shape == (3, 2)
from reftorch import optim
import reftorch.nn.functional as F
assert F is torch.nn.functional and optim is torch.optim
assert torch.save is torch.serialization.save and torch.load is torch.serialization.load
assert torch.autocast is torch.amp.autocast and torch.conv2d is torch._nn_names.conv2d
assert torch.utils.checkpoint.checkpoint and torch.special.erf is torch.erf
assert torch.constant_pad_nd(torch.ones(1, 2), [1, 0]).tolist() == [[0.0, 1.0, 1.0]]
""")


def test_compile_stays_the_function_once_its_package_is_imported():
    _fresh("""
from reftorch.compile import GraphBreak
import reftorch.compile.ir
assert callable(torch.compile) and torch.compile.__module__ == "reftorch.compile"
assert torch.compile(lambda x: x * 2)(torch.ones(2)).tolist() == [2.0, 2.0]
""")


def test_legacy_amp_modules_import_first():
    _fresh("""
import reftorch.cuda.amp as cuda_amp
from reftorch.cpu.amp import GradScaler, autocast
assert torch.cuda.amp is cuda_amp and torch.cpu.amp.autocast is autocast and torch.cpu.is_available()
assert cuda_amp.GradScaler.__name__ == GradScaler.__name__ == "GradScaler"
""")
    _fresh("assert torch.cpu.device_count() == 1 and torch.cuda.amp.custom_fwd.__name__ == 'custom_fwd'")


def test_parameters_pickle_through_shared_memory():
    _fresh("""
from multiprocessing.reduction import ForkingPickler
from reftorch.multiprocessing._shared import reduce_tensor
assert ForkingPickler._extra_reducers[torch.Tensor] is reduce_tensor
p = torch.nn.Parameter(torch.ones(2))
assert ForkingPickler._extra_reducers[type(p)] is reduce_tensor
""")
