"""reftorch: a PyTorch-compatible autograd library whose every op is declared once in ops.yaml.

    import reftorch as torch
"""
from __future__ import annotations

import importlib as _importlib
import importlib.abc as _importlib_abc
import importlib.util as _importlib_util
import sys as _sys
import types as _types

import reftorch._dispatch as _dispatch
from .kernels import api as _api

_api._rt = _dispatch            # generated wrappers call into the dispatcher

from ._dtype import (dtype, bool_ as bool, uint8, int8, int16, int32, int64, float32, float64,  # noqa: E402
                     get_default_dtype, set_default_dtype, promote_types, can_cast)
from ._dtype import float16, bfloat16, complex64, complex128, uint64  # noqa: E402
from ._dtype import complex32 as _complex32, note_chalf as _note_chalf  # noqa: E402  (bound when named: __getattr__)
from ._dtype import result_type as _result_type  # noqa: E402
from ._device import device  # noqa: E402
from ._tensor import Tensor, Size  # noqa: E402
from ._creation import (tensor, as_tensor, from_numpy, from_dlpack, scalar_tensor, zeros, ones, full, empty,  # noqa
                        zeros_like, ones_like, full_like, empty_like, arange, linspace, logspace, eye)
from ._creation_random import (rand, randn, randint, randperm, normal, rand_like, randn_like, randint_like,  # noqa
                               manual_seed, seed, initial_seed, get_rng_state, set_rng_state, Generator,
                               default_generator)
from ._repr import set_printoptions  # noqa: E402
import reftorch._methods as _methods  # noqa: E402
import reftorch._methods_misc as _methods_misc  # noqa: E402
import reftorch._functional as _functional  # noqa: E402
from .autograd.grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,  # noqa: E402
                                 is_grad_enabled, is_inference_mode_enabled)
import reftorch.autograd as autograd  # noqa: E402
import reftorch.cuda as cuda  # noqa: E402  (numba.cuda is imported on the first question, not here)
import reftorch.testing as testing  # noqa: E402
from ._reference import set_reference_mode, is_reference_mode_enabled, reference_mode  # noqa: E402,F401

_methods.bind()
import reftorch._random as _random  # noqa: E402
from ._random import bernoulli, multinomial, poisson, binomial  # noqa: E402
_random.bind()      # the in-place random fillers and Tensor.bernoulli / multinomial

# every op of ops.yaml with `function: true`, and its aliases, at the top level (torch.exp, torch.add ...)
for _name, _spec in _api.SPECS.items():
    if _spec["function"]:
        globals()[_name] = getattr(_api, _name)
        for _alias in _spec["aliases"]:
            globals()[_alias] = getattr(_api, _alias)
    if _spec["inplace"] and _spec["function"]:
        globals()[_name + "_"] = getattr(_api, _name + "_")
del _name, _spec, _alias

# Tensor.real / .imag are attributes in PyTorch (views; assigning one copies into it)
Tensor.real = property(_api.real, lambda self, v: _api.real(self).copy_(v))
Tensor.imag = property(_api.imag, lambda self, v: _api.imag(self).copy_(v))
Tensor.cfloat = lambda self, memory_format=None: self.to(complex64)      # as Tensor.float() / .double()
Tensor.cdouble = lambda self, memory_format=None: self.to(complex128)
Tensor.chalf = lambda self, memory_format=None: self.to(_complex32)     # (.to() notes complex32's first use)

float = float32  # noqa: A001
double = float64
long = int64
int = int32  # noqa: A001
short = int16
half = float16
cfloat = complex64
cdouble = complex128
strided = "torch.strided"
__version__ = "0.1.0"


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(t):
    return t.numel()


def is_floating_point(t):
    return t.dtype.is_floating_point


_where3 = where  # the ternary op of ops.yaml


def where(condition, input=None, other=None):
    """where(condition, input, other) picks elementwise; where(condition) is nonzero(condition, as_tuple=True)."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)  # noqa: F821 -- an op of ops.yaml, bound above
    _methods_misc.check_condition(condition)
    return _where3(condition, input, other)


from ._formula_helpers import return_types, broadcast_shapes  # noqa: E402


def result_type(a, b):
    from ._args import as_tensor_arg, promoted
    return promoted(None, [as_tensor_arg(a), as_tensor_arg(b)])


import reftorch._startup as _startup  # noqa: E402
_startup.start()        # REFTORCH_EAGER_INIT=1: Numba's start-up on a background thread (reftorch/_startup.py)

# devices, back-end flags and threads (issue 16 point 3): the default device, torch.backends, torch.accelerator
from ._device import set_default_device, get_default_device  # noqa: E402
from ._cpu import set_num_threads, get_num_threads  # noqa: E402
from ._config import (set_num_interop_threads, get_num_interop_threads, set_float32_matmul_precision,  # noqa: E402
                      get_float32_matmul_precision, use_deterministic_algorithms, are_deterministic_algorithms_enabled,
                      is_deterministic_algorithms_warn_only_enabled, set_deterministic_debug_mode,
                      get_deterministic_debug_mode)
import reftorch.backends as backends  # noqa: E402
import reftorch.accelerator as accelerator

# ---- surface-a (issue 16): legacy types and constructors, creation forms, modules programs import
from ._legacy import TYPES as _LEGACY_TYPES  # noqa: E402
globals().update(_LEGACY_TYPES)              # FloatTensor, LongTensor, ... (reftorch/_legacy.py)
from ._creation import asarray, empty_strided  # noqa: E402
from ._finfo import finfo, iinfo  # noqa: E402
from ._methods_misc import FUNCTIONS as _MISC_FUNCTIONS, STORAGE_TYPES as _STORAGE_TYPES  # noqa: E402
from ._methods_misc import TypedStorage, UntypedStorage  # noqa: E402,F401
globals().update(_MISC_FUNCTIONS)            # get_device, is_nonzero, conj, resolve_neg ... of real tensors
globals().update(_STORAGE_TYPES)             # FloatStorage, LongStorage, ...
from ._sym import FUNCTIONS as _SYM_FUNCTIONS  # noqa: E402
globals().update(_SYM_FUNCTIONS)             # sym_int, sym_max, ... on plain numbers (reftorch/_sym.py)

# ---------------- toolbox (issue 22, branch toolbox): multiprocessing registers the shared-memory pickling of
# tensors and Tensor.share_memory_ / is_shared when imported (as torch's); it imports no library module
import reftorch.multiprocessing as multiprocessing  # noqa: E402,F401

# torch.sparse (COO tensors): torch.sparse_coo_tensor, spmm, Tensor.to_sparse / is_sparse, and mm / matmul / add /
# mul / sum taking sparse operands, bound here at import (eager: dense programs call these names too)
import reftorch.sparse as sparse  # noqa: E402
sparse.bind(globals())

# ---------------- the library layer, loaded on first use (PEP 562): nn, optim, utils ... are written against the
# public API above (`import reftorch as torch`), so importing them here would be an import cycle through this
# module; they load when a program first names them (reftorch.nn, `from reftorch import nn`, import reftorch.nn)
_LIBRARY = ("nn", "optim", "utils", "linalg", "distributions", "special", "amp", "functional", "jit", "onnx",
            "random", "hub", "serialization", "distributed", "profiler", "func", "fft", "signal")
# names of the top level that library modules define: name -> module
_EXPORTS = {"save": "serialization", "load": "serialization", "compile": "compile", "vmap": "func"}
_EXPORTS.update(dict.fromkeys((
    "autocast", "is_autocast_available", "is_autocast_enabled", "get_autocast_dtype", "set_autocast_enabled",
    "set_autocast_dtype", "clear_autocast_cache", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
    "is_autocast_cpu_enabled", "get_autocast_cpu_dtype", "get_autocast_gpu_dtype", "set_autocast_cpu_enabled",
    "set_autocast_cpu_dtype", "set_autocast_gpu_dtype"), "amp"))
_EXPORTS["cpu"] = "amp.legacy"      # reftorch.cpu(.amp): module objects that amp.legacy builds
_EXPORTS.update(dict.fromkeys(("hann_window", "hamming_window", "blackman_window", "bartlett_window",
                              "kaiser_window"), "signal.windows"))
_EXPORTS.update(stft="signal._stft", istft="signal._stft")
_EXPORTS.update(dict.fromkeys((         # SyncBatchNorm's statistics ops (reftorch/nn/_sync_stats.py)
    "batch_norm_stats", "batch_norm_elemt", "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts",
    "batch_norm_backward_reduce", "batch_norm_backward_elemt", "batch_norm_update_stats"), "nn._sync_stats"))
_EXPORTS["fused_moving_avg_obs_fake_quant"] = "nn._fake_quant"
_EXPORTS.update(svd_lowrank="linalg._lowrank", pca_lowrank="linalg._lowrank", lobpcg="linalg._lobpcg")


def _library_method(name):
    """A Tensor method that a library module defines (stft, istft): that module loads on the first call."""
    def method(self, *args, **kwargs):
        return __getattr__(name)(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    return method


Tensor.stft, Tensor.istft = _library_method("stft"), _library_method("istft")


def __getattr__(name):
    """A library namespace or a name it exports, imported on first use and then bound here like any other.
    Any other name may be one of _nn_names' (torch.conv2d, torch.lstm_cell ...: nn.functional under ATen's
    signatures), star-exported here when first asked for. complex32 / chalf are bound when first named: until
    then no op call pays for its checks (reftorch/_chalf.py)."""
    if name in ("complex32", "chalf"):
        _note_chalf()
        globals().update(complex32=_complex32, chalf=_complex32)
        return _complex32
    if name in _LIBRARY:
        return _importlib.import_module(f"{__name__}.{name}")
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    if not name.startswith("_") and name in _star_nn_names().__all__:
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _star_nn_names():
    nn_names = _importlib.import_module(f"{__name__}._nn_names")
    for name in nn_names.__all__:
        globals().setdefault(name, getattr(nn_names, name))
    return nn_names


def __dir__():
    return sorted(set(globals()) | set(_LIBRARY) | set(_EXPORTS) | set(_star_nn_names().__all__) |
                  {"complex32", "chalf"})


class _LegacyAmpFinder(_importlib_abc.MetaPathFinder, _importlib_abc.Loader):
    """`import reftorch.cuda.amp`, `import reftorch.cpu(.amp)`: module objects, not files; loading
    reftorch.amp.legacy builds them and registers them in sys.modules."""

    NAMES = (f"{__name__}.cuda.amp", f"{__name__}.cpu", f"{__name__}.cpu.amp")

    def find_spec(self, fullname, path=None, target=None):
        return _importlib_util.spec_from_loader(fullname, self) if fullname in self.NAMES else None

    def create_module(self, spec):
        _importlib.import_module(f"{__name__}.amp.legacy")
        return _sys.modules[spec.name]

    def exec_module(self, module):
        pass


_sys.meta_path.append(_LegacyAmpFinder())


class _Package(_types.ModuleType):
    """reftorch's own module type, for one name: the import system binds a subpackage on its parent when it first
    loads it, and reftorch.compile must stay the function (as torch.compile) once the reftorch.compile package
    is imported (`from reftorch.compile import GraphBreak`, or by the first torch.compile)."""

    def __setattr__(self, name, value):
        if name == "compile" and isinstance(value, _types.ModuleType):
            value = value.compile
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
