"""reftorch.accelerator: PyTorch's device-generic view of the accelerator, which for reftorch is cuda (numba.cuda,
or its simulator under NUMBA_ENABLE_CUDASIM=1) when reftorch.cuda.is_available(), and none otherwise -- every
answer here is reftorch.cuda's."""
from __future__ import annotations

import reftorch.cuda as cuda
from ._device import device as _device

_NONE = "Cannot access accelerator device when none is available."


def is_available():
    return cuda.is_available()


def current_accelerator(check_available=False):
    """device('cuda') when reftorch has a cuda device, else None (check_available: also when it has none usable)."""
    return _device("cuda") if cuda.is_available() else None


def device_count():
    return cuda.device_count()


def _require():
    if not cuda.is_available():
        raise RuntimeError(_NONE)


def _index(d):
    """The device index of an int, a string or a device of the accelerator's type."""
    if isinstance(d, int) and not isinstance(d, bool):
        return d
    d = _device(d)
    if d.type != "cuda":
        raise ValueError(f"{d} doesn't match the current accelerator cuda.")
    return d.index if d.index is not None else cuda.current_device()


def current_device_index():
    _require()
    return cuda.current_device()


def set_device_index(device, /):
    """Make `device` the current one (a negative index: no-op, as in PyTorch)."""
    _require()
    index = _index(device)
    if index < 0 or index == cuda.current_device():
        return
    if index >= cuda.device_count():
        raise RuntimeError("CUDA error: invalid device ordinal")
    cuda._numba_cuda().select_device(index)


def synchronize(device=None, /):
    """Wait for every kernel launched on the accelerator so far."""
    _require()
    cuda.synchronize(device)


class device_index:
    """A with block in which `device` (an index; None: no change) is the current accelerator device."""

    def __init__(self, device, /):
        self.idx, self.prev = device, None

    def __enter__(self):
        if self.idx is not None:
            self.prev = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc):
        if self.idx is not None:
            set_device_index(self.prev)
        return False


current_device_idx = current_device_index      # PyTorch's deprecated spellings
set_device_idx = set_device_index
