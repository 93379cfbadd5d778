"""Process-wide switches that PyTorch keeps in its global context: deterministic algorithms, float32 matmul
precision, the inter-op thread count. `reftorch.use_deterministic_algorithms`, `set_float32_matmul_precision`
and `reftorch.backends` read and write them here; the tensor core reads them.

What they govern in reftorch: with deterministic algorithms on, the cuda scatters that accumulate with atomics
(index_put with accumulate=True, scatter_add, index_add) take the host path, whose sums run in a fixed order.
Every other op is deterministic already (threaded cpu kernels split their work in fixed chunks). reftorch never
computes a float32 matmul in reduced precision (no TF32, no bfloat16 passes): the precision setting is a
permission, as in PyTorch, that reftorch's kernels do not need to use.
"""
from __future__ import annotations

import os
import warnings

deterministic = False
deterministic_warn_only = False
matmul_precision = "highest"        # "highest" | "high" | "medium"
cudnn_allow_tf32 = True             # PyTorch's default for convolutions
interop_threads = None              # None until set: the usable cores
_interop_set = False

PRECISIONS = ("highest", "high", "medium")


def _check_bool(fn, arg, value, pos=1):
    if not isinstance(value, bool):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be bool, not {type(value).__name__}")


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Ops without a deterministic implementation use one that is (reftorch: the host path of cuda scatters)."""
    global deterministic, deterministic_warn_only
    _check_bool("_set_deterministic_algorithms", "mode", mode)
    _check_bool("_set_deterministic_algorithms", "warn_only", warn_only, 2)
    deterministic, deterministic_warn_only = mode, warn_only and mode


def are_deterministic_algorithms_enabled():
    return deterministic


def is_deterministic_algorithms_warn_only_enabled():
    return deterministic_warn_only


def set_deterministic_debug_mode(debug_mode):
    """0 / "default": off; 1 / "warn": deterministic, warn only; 2 / "error": deterministic."""
    names = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in names:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = names[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    return 0 if not deterministic else (1 if deterministic_warn_only else 2)


def set_float32_matmul_precision(precision):
    """"highest" (float32 throughout), "high" (TF32 allowed) or "medium" (bfloat16 allowed); anything else warns
    and changes nothing, as in PyTorch."""
    global matmul_precision
    if precision not in PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    matmul_precision = precision


def get_float32_matmul_precision():
    return matmul_precision


def set_num_interop_threads(n):
    """The inter-op pool's size: settable once, before parallel work, as in PyTorch. reftorch runs ops one at a
    time (no inter-op pool), so the value is kept for get_num_interop_threads only."""
    global interop_threads, _interop_set
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _interop_set:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    interop_threads, _interop_set = n, True


def get_num_interop_threads():
    if interop_threads is not None:
        return interop_threads
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
