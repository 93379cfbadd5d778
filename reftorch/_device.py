"""Devices: `cpu`, `cuda` (numba.cuda storage, reftorch/_cuda_dispatch.py) and `meta` (geometry without data,
reftorch/_meta.py), and the default device that factories use when given none.

A device is also a context manager, as in PyTorch: `with reftorch.device("meta"): nn.Linear(4, 3)` makes
every factory called inside (and every module's parameters) default to that device. The default lives in
a stack so that nested blocks restore what was there; `set_default_device` replaces its bottom. Both are
per thread, as in PyTorch (its default device is a torch-function mode, and mode stacks are thread-local): a
thread starts on cpu whatever another thread set.
"""
from __future__ import annotations

import threading

import reftorch.cuda as cuda   # (light: reftorch.cuda imports numba.cuda only when asked)

# every device type PyTorch's parser knows; reftorch has storage for cpu, cuda and meta only
TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
         "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
BACKENDS = ("cpu", "cuda", "meta")


class device:
    __slots__ = ("type", "index")

    def __init__(self, type_or_str, index=None):
        if isinstance(type_or_str, device):
            self.type, self.index = type_or_str.type, type_or_str.index
            return
        if isinstance(type_or_str, int) and not isinstance(type_or_str, bool):
            # a bare index names the current accelerator's device (PyTorch: cuda, when there is one)
            if not _accelerator_available():
                raise RuntimeError("Cannot access accelerator device when none is available.")
            type_or_str, index = "cuda", type_or_str
        s = str(type_or_str)
        if ":" in s:
            s, idx = s.split(":", 1)
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type_or_str}'")
            index = int(idx)
        if s not in TYPES:
            raise RuntimeError(f"Expected one of {', '.join(TYPES)} device type at start of device string: "
                               f"{type_or_str}")
        self.type, self.index = s, index

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self.type == other.type and (self.index or 0) == (other.index or 0)

    def __hash__(self):
        return hash((self.type, self.index or 0))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else f"device(type='{self.type}', index={self.index})"

    def __enter__(self):
        _state.stack.append(self)
        return self

    def __exit__(self, *exc):
        _state.stack.pop()
        return False

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")


def check_available(dev):
    """Raise PyTorch's errors for a cuda device that this machine cannot give."""
    if not cuda.is_available():
        raise RuntimeError("Torch not compiled with CUDA enabled: reftorch's cuda device is not available on this "
                           "machine (reftorch.cuda.is_available() is False)")
    if dev.index is not None and dev.index >= cuda.device_count():
        raise RuntimeError("CUDA error: invalid device ordinal")


def canonical(dev):
    """cuda -> cuda:0 (the current device), as tensors report it."""
    return device("cuda", dev.index or 0)


class _DefaultDevice(threading.local):
    def __init__(self):
        self.stack = [CPU]      # the default device: the last entry (set_default_device replaces the first)


_state = _DefaultDevice()


def _accelerator_available():
    return cuda.is_available()


def set_default_device(d):
    """The device factories use when given none (None: cpu again). A `with device(...)` block still wins."""
    _state.stack[0] = CPU if d is None else as_device(d)


def get_default_device():
    """The device a factory called here without device= would use."""
    return _state.stack[-1]


def as_device(d):
    if d is None:
        d = _state.stack[-1]
        if d is CPU:
            return d
    if isinstance(d, device):
        if d.type != "cuda":
            return _check_backend(d)
        dev = d
    else:
        dev = device(f"cuda:{d}" if isinstance(d, int) and not isinstance(d, bool) else d)
    if dev.type == "cuda":
        if cuda.is_available():     # a GPU, or numba's simulator (NUMBA_ENABLE_CUDASIM=1)
            check_available(dev)
            return canonical(dev)
        # torch without CUDA raises this from its lazy init, on every way onto the device (an AssertionError)
        raise AssertionError("Torch not compiled with CUDA enabled")
    return _check_backend(dev)


def _check_backend(dev):
    """dev, when reftorch can keep tensors there; PyTorch's error for a device type it was built without."""
    if dev.type in BACKENDS:
        return dev
    name = {"mps": "MPS", "xla": "XLA", "xpu": "XPU", "hip": "HIP", "lazy": "Lazy", "hpu": "HPU", "ipu": "IPU",
            "mtia": "MTIA", "maia": "MAIA", "privateuseone": "PrivateUse1", "vulkan": "Vulkan", "ve": "VE"}
    raise NotImplementedError(f"Could not run 'aten::empty.memory_format' with arguments from the "
                              f"'{name.get(dev.type, dev.type.upper())}' backend. reftorch keeps tensors on cpu, cuda "
                              "and meta only.")


def no_kernel(op, backend):
    """PyTorch's error for an operator with no kernel for a tensor's back end ('CPU', 'SparseCPU' ...)."""
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the '{backend}' backend. This could be because the operator "
        "doesn't exist for this backend, or was omitted during the selective/custom build process (if using custom "
        "build). If you are a Facebook employee using PyTorch on mobile, please visit https://fburl.com/ptmfixes for "
        "possible resolutions.")
