"""Devices: `cpu` now; `cuda` storage arrives with the CUDA issue, but the field is real."""
from __future__ import annotations


class device:
    __slots__ = ("type", "index")

    def __init__(self, type_or_str, index=None):
        if isinstance(type_or_str, device):
            self.type, self.index = type_or_str.type, type_or_str.index
            return
        s = str(type_or_str)
        if ":" in s:
            s, idx = s.split(":", 1)
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type_or_str}'")
            index = int(idx)
        if s not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type_or_str}")
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


CPU = device("cpu")


def as_device(d):
    if d is None:
        return CPU
    if isinstance(d, device):
        if d.type != "cuda":
            return d
        dev = d
    else:
        dev = device(f"cuda:{d}" if isinstance(d, int) else d)
    if dev.type == "cuda":
        from . import cuda
        if cuda.is_available():     # a GPU, or numba's simulator (NUMBA_ENABLE_CUDASIM=1)
            from ._cuda_dispatch import canonical, check_available
            check_available(dev)
            return canonical(dev)
        raise RuntimeError("Torch not compiled with CUDA enabled: reftorch's cuda device is not available on this "
                           "machine (reftorch.cuda.is_available() is False)")
    return dev
