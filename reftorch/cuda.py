"""reftorch.cuda: what PyTorch's torch.cuda tells about the GPU, answered by numba.cuda.

numba.cuda is imported on the first question, not with reftorch (it costs ~0.5 s). Under numba's
simulator (NUMBA_ENABLE_CUDASIM=1) the simulated device counts as available, as numba says.
"""
from __future__ import annotations

import importlib

# reftorch.cuda.amp (torch's deprecated spellings) is a module object of reftorch/amp/legacy.py; an empty
# __path__ lets `import reftorch.cuda.amp` reach reftorch/__init__.py's finder for it (there is no file to find)
__path__ = []

_initial_seed = 0
_seed_set = False


def _numba_cuda():
    try:
        from numba import cuda
    except Exception:  # noqa: BLE001 -- a broken CUDA install must read as "no GPU", not fail the import
        return None
    return cuda


def is_available() -> bool:
    """True when numba.cuda finds a usable GPU (or runs its simulator)."""
    cuda = _numba_cuda()
    if cuda is None:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def _require():
    if not is_available():
        raise RuntimeError("No CUDA GPUs are available")
    return _numba_cuda()


def device_count() -> int:
    """The number of GPUs numba.cuda sees (0 without one)."""
    if not is_available():
        return 0
    try:
        return len(_numba_cuda().gpus)
    except Exception:  # noqa: BLE001
        return 0


def is_initialized() -> bool:
    return is_available()


def current_device() -> int:
    cuda = _require()
    try:
        return int(cuda.get_current_device().id)
    except Exception:  # noqa: BLE001 -- the simulator's device has no id
        return 0


def _index(device):
    if device is None:
        return None
    if isinstance(device, int):
        return device
    s = str(device)
    if s.startswith("cuda"):
        return int(s.split(":", 1)[1]) if ":" in s else None
    index = getattr(device, "index", None)
    return index


def _device(device=None):
    cuda = _require()
    index = _index(device)
    if index is None:
        return cuda.get_current_device()
    if index < 0 or index >= device_count():
        raise RuntimeError(f"Invalid device id {index}: {device_count()} CUDA device(s) available")
    return cuda.gpus[index]


def get_device_name(device=None) -> str:
    name = getattr(_device(device), "name", "numba CUDA simulator")
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device=None):
    cc = getattr(_device(device), "compute_capability", None)
    return tuple(cc) if cc is not None else (0, 0)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """True when the current GPU computes in bfloat16: compute capability 8.0 or more, or, with
    including_emulation, any device a bfloat16 tensor can be made on; False without a GPU (as PyTorch)."""
    if not is_available():
        return False
    if get_device_capability(current_device())[0] >= 8:
        return True
    if not including_emulation:
        return False
    from ._creation import empty
    from ._dtype import bfloat16
    try:
        empty(1, dtype=bfloat16, device=f"cuda:{current_device()}")
    except Exception:  # noqa: BLE001 -- what PyTorch's _check_bf16_tensor_supported asks: can one be made
        return False
    return True


def synchronize(device=None) -> None:
    """Wait for every kernel launched so far to finish."""
    cuda = _require()
    cuda.synchronize()


def manual_seed(seed) -> None:
    """Seed the cuda generator. Like PyTorch, silently remembered when there is no GPU."""
    global _initial_seed, _seed_set, _offset
    _initial_seed = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
    _seed_set = True
    _offset = 0


_offset = 0     # counters used so far by the cuda generator (reftorch/_cuda_random.py)


def _counter_state(n):
    """(seed, first counter) for a draw of n counters; the next draw starts after them."""
    global _offset
    start = _offset
    _offset = (_offset + int(n)) & 0xFFFF_FFFF_FFFF_FFFF
    return _initial_seed, start


manual_seed_all = manual_seed


def initial_seed() -> int:
    return _initial_seed


def empty_cache() -> None:
    """Nothing to release: numba.cuda frees device memory when arrays are collected."""


def __getattr__(name):
    """reftorch.cuda.amp: reftorch.amp.legacy binds it here when it loads (on this first use)."""
    if name == "amp":
        importlib.import_module("reftorch.amp.legacy")
        return globals()["amp"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
