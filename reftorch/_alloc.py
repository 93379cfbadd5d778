"""PyTorch's errors for sizes no memory can hold, shared by every place that allocates a tensor's data.

NumPy refuses such sizes with ValueError ("array is too big") or MemoryError; PyTorch raises RuntimeError,
from the storage size check (sizes whose byte count overflows int64, multiplied in order as c10's
safe_multiply_u64 does: an overflow counts even when a later size is 0) or from its CPU allocator. The
factories check before they allocate (check, or `with sized(...)` to turn NumPy's MemoryError into the
allocator's message); the dispatcher, whose outputs come from existing shapes, turns a failed allocation into
the same error (error) at no cost to allocations that succeed.
"""
from __future__ import annotations

import contextlib
import math

INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1


def _overflows(shape, itemsize):
    n = 1
    for s in shape:
        n *= s
        if n > UINT64_MAX:
            return True
    return n * itemsize > INT64_MAX


def _stride_overflows(shape):
    stride = 1
    for s in reversed(shape[1:]):
        stride *= max(s, 1)
        if stride > INT64_MAX:
            return True
    return False


def error(shape, itemsize):
    """The RuntimeError PyTorch raises for data of this shape that cannot be allocated."""
    shape = [int(s) for s in shape]
    if _overflows(shape, itemsize):
        return RuntimeError(f"Storage size calculation overflowed with sizes={shape}")
    if _stride_overflows(shape):
        return RuntimeError("Stride calculation overflowed")
    return RuntimeError(f"[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
                        f"memory: you tried to allocate {math.prod(shape) * itemsize} bytes. Error code 12 "
                        "(Cannot allocate memory)")


def check(shape, itemsize):
    """Raise PyTorch's error for a shape whose bytes overflow int64 (before anything is allocated)."""
    n = math.prod(shape) * itemsize
    if 0 < n <= INT64_MAX:      # the common case, one product (no size is 0, so no stride exceeds n)
        return
    if _overflows(shape, itemsize) or _stride_overflows(shape):
        raise error(shape, itemsize)


@contextlib.contextmanager
def sized(shape, itemsize):
    """Around the NumPy call that allocates data of `shape`: PyTorch's errors for sizes it cannot hold."""
    check(shape, itemsize)
    try:
        yield
    except MemoryError:
        raise error(shape, itemsize) from None
