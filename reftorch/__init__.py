"""reftorch: a PyTorch-compatible autograd library whose every op is declared once in ops.yaml.

    import reftorch as torch
"""
from __future__ import annotations

from . import _dispatch
from .kernels import api as _api

_api._rt = _dispatch            # generated wrappers call into the dispatcher

from ._dtype import (dtype, bool_ as bool, uint8, int8, int16, int32, int64, float32, float64,  # noqa: E402
                     get_default_dtype, set_default_dtype, promote_types)
from ._dtype import float16, bfloat16  # noqa: E402
from ._dtype import result_type as _result_type  # noqa: E402
from ._device import device  # noqa: E402
from ._tensor import Tensor, Size  # noqa: E402
from ._creation import (tensor, as_tensor, from_numpy, scalar_tensor, zeros, ones, full, empty, zeros_like,  # noqa
                        ones_like, full_like, empty_like, arange, linspace, logspace, eye)
from ._creation_random import (rand, randn, randint, randperm, normal, rand_like, randn_like, randint_like,  # noqa
                               manual_seed, seed, initial_seed, get_rng_state, set_rng_state, Generator,
                               default_generator)
from ._repr import set_printoptions  # noqa: E402
from . import _methods  # noqa: E402
from . import _methods_misc  # noqa: E402
from . import _functional  # noqa: E402
from .autograd.grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,  # noqa: E402
                                 is_grad_enabled, is_inference_mode_enabled)
from . import autograd  # noqa: E402
from . import cuda  # noqa: E402  (numba.cuda is imported on the first question, not here)
from . import testing  # noqa: E402
from ._reference import set_reference_mode, is_reference_mode_enabled, reference_mode  # noqa: E402,F401

_methods.bind()
from . import _random  # noqa: E402
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

float = float32  # noqa: A001
double = float64
long = int64
int = int32  # noqa: A001
short = int16
half = float16
cfloat = None
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
from . import special  # noqa: E402  (torch.special: binds names of the functions above)


def result_type(a, b):
    from ._args import as_tensor_arg, promoted
    return promoted(None, [as_tensor_arg(a), as_tensor_arg(b)])


# the library layer (written against the public API above; imported last)
from . import nn, optim, utils  # noqa: E402
from . import linalg  # noqa: E402
from . import distributions  # noqa: E402  (torch.distributions, on the public API above)
from ._nn_names import *  # noqa: E402,F401,F403  (torch.conv2d, torch.batch_norm, torch.lstm_cell ...: ATen signatures)
from .serialization import save, load  # noqa: E402
from .compile import compile  # noqa: E402,A001  (reftorch.compile: trace, fuse, generated kernels)
from . import amp  # noqa: E402
from .amp import (autocast, is_autocast_available, is_autocast_enabled, get_autocast_dtype,  # noqa: E402
                  set_autocast_enabled, set_autocast_dtype, clear_autocast_cache,
                  is_autocast_cache_enabled, set_autocast_cache_enabled, is_autocast_cpu_enabled,
                  get_autocast_cpu_dtype, get_autocast_gpu_dtype, set_autocast_cpu_enabled, set_autocast_cpu_dtype,
                  set_autocast_gpu_dtype)
amp.legacy.install(__import__("sys").modules[__name__])   # reftorch.cuda.amp, reftorch.cpu(.amp)

from . import _startup  # noqa: E402
_startup.start()        # REFTORCH_EAGER_INIT=1: Numba's start-up on a background thread (reftorch/_startup.py)

# devices, back-end flags and threads (issue 16 point 3): the default device, torch.backends, torch.accelerator
from ._device import set_default_device, get_default_device  # noqa: E402
from ._cpu import set_num_threads, get_num_threads  # noqa: E402
from ._config import (set_num_interop_threads, get_num_interop_threads, set_float32_matmul_precision,  # noqa: E402
                      get_float32_matmul_precision, use_deterministic_algorithms, are_deterministic_algorithms_enabled,
                      is_deterministic_algorithms_warn_only_enabled, set_deterministic_debug_mode,
                      get_deterministic_debug_mode)
from . import backends, accelerator  # noqa: E402

# ---- surface-a (issue 16): legacy types and constructors, creation forms, modules programs import
from ._legacy import TYPES as _LEGACY_TYPES  # noqa: E402
globals().update(_LEGACY_TYPES)              # FloatTensor, LongTensor, ... (reftorch/_legacy.py)
from ._creation import asarray, empty_strided  # noqa: E402
from ._finfo import finfo, iinfo  # noqa: E402
from ._methods_misc import FUNCTIONS as _MISC_FUNCTIONS, STORAGE_TYPES as _STORAGE_TYPES  # noqa: E402
from ._methods_misc import TypedStorage, UntypedStorage  # noqa: E402,F401
globals().update(_MISC_FUNCTIONS)            # get_device, is_nonzero, conj, resolve_neg ... of real tensors
globals().update(_STORAGE_TYPES)             # FloatStorage, LongStorage, ...
from . import functional, jit, onnx  # noqa: E402  (torch.functional, TorchScript's entry points, ONNX's)

# ---------------- toolbox (issue 22, branch toolbox): torch.random, utils.checkpoint, hub, multiprocessing
from . import random  # noqa: E402,F401  (after the library layer: reftorch.random shares _creation's generator)
from .utils import checkpoint as _checkpoint  # noqa: E402,F401  (torch imports utils.checkpoint with torch)
from . import hub  # noqa: E402,F401
from . import multiprocessing  # noqa: E402,F401  (registers the shared-memory pickling of tensors, as torch's)
from .multiprocessing import _shared as _mp_shared  # noqa: E402
Tensor.share_memory_, Tensor.is_shared = _mp_shared.share_memory_, _mp_shared.is_shared
