"""Launching the generated CUDA kernels (reftorch/kernels/cuda.py).

Each function takes the arguments of the matching CPU kernel (the dispatcher computes the geometry
once for both devices) and picks a launch shape. Every kernel loops grid-stride, so any grid gives
the same result: a real GPU gets enough blocks to fill it, the simulator (NUMBA_ENABLE_CUDASIM=1,
~0.1 ms per simulated thread) a tiny grid -- see `configure`.

Arrays may be numba.cuda device arrays or NumPy arrays (the simulator takes those as they are; on a
GPU numba copies them over and back, which is fine for tests and wrong for speed).
"""
from __future__ import annotations

import os

import numpy as np

_kernels = None
_half_kernels = None

# threads: per block (elementwise and serial kernels); tree_threads: per block of the reduction and scan
# trees (at most kernels.BLOCK); max_blocks: the grid's cap (grid-stride loops cover the rest).
_config = {"threads": 256, "tree_threads": 256, "max_blocks": 2048}


def configure(threads=None, tree_threads=None, max_blocks=None):
    """Set the launch shape; returns the previous settings. REFTORCH_CUDA_GRID="BLOCKSxTHREADS" sets it too."""
    old = dict(_config)
    for key, value in (("threads", threads), ("tree_threads", tree_threads), ("max_blocks", max_blocks)):
        if value is not None:
            _config[key] = int(value)
    return old


def _from_env():
    spec = os.environ.get("REFTORCH_CUDA_GRID")
    if not spec and os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        spec = "2x32"   # the simulator runs every thread as Python: tiny grids (the kernels loop grid-stride)
    if spec:
        blocks, threads = (int(v) for v in spec.lower().split("x"))
        configure(threads=threads, tree_threads=threads, max_blocks=blocks)


_from_env()


def kernels():
    """reftorch.kernels.cuda, imported on first use (importing numba.cuda costs ~0.5 s)."""
    global _kernels
    if _kernels is None:
        from .kernels import cuda
        _kernels = cuda
    return _kernels


def half_kernels():
    """reftorch.kernels.cuda_half (16-bit float kernels), imported on the first 16-bit cuda tensor's op."""
    global _half_kernels
    if _half_kernels is None:
        from .kernels import cuda_half
        _half_kernels = cuda_half
    return _half_kernels


def kernel(name, suffix, fmt=None):
    """The kernel <name>_<suffix> of kernels/cuda.py, or (fmt: "f16"/"bf16") <name>_<fmt>_<suffix> of
    kernels/cuda_half.py, whose 16-bit operands are uint16 bit patterns."""
    if fmt is not None:
        return getattr(half_kernels(), f"{name}_{fmt}_{suffix}")
    return getattr(kernels(), f"{name}_{suffix}")


def _blocks(work, threads):
    return max(1, min(_config["max_blocks"], -(-work // threads)))


def _tree_threads(k):
    """Threads per block of a tree kernel: a power of two, no more than the row needs (32 at least)."""
    cap = min(_config["tree_threads"], kernels().BLOCK)
    nt = 32 if cap >= 32 else cap
    while nt < cap and nt < k:
        nt *= 2
    return nt


def has_kernel(name, suffix, fmt=None):
    return suffix in (half_kernels() if fmt else kernels()).KERNELS[name]["kernels"]


# ---------------------------------------------------------------------------- elementwise

def elementwise_contig(name, out, ins, scalars=(), fmt=None):
    """out[i] = op(ins[0][i], ...) over contiguous 1-D arrays of one length."""
    n = out.shape[0]
    if n == 0:
        return out
    t = _config["threads"]
    kernel(name, "contig", fmt)[_blocks(n, t), t](out, *ins, *scalars)
    return out


def elementwise_strided(name, shape, out, o_off, o_st, ins, scalars=(), fmt=None):
    """The strided kernel: ins is a list of (flat array, offset, strides) in elements."""
    n = 1
    for s in shape:
        n *= s
    if n == 0:
        return out
    args = [tuple(shape), out, o_off, tuple(o_st)]
    for arr, off, st in ins:
        args += [arr, off, tuple(st)]
    t = _config["threads"]
    kernel(name, "strided", fmt)[_blocks(n, t), t](*args, *scalars)
    return out


# ---------------------------------------------------------------------------- reductions and scans

def _use_tree(name, tree_suffix, M, sm, K, sk, fmt=None):
    """The tree kernel for long rows read along the reduced axis; one thread per row otherwise."""
    if not has_kernel(name, tree_suffix, fmt):
        return False
    return K >= 32 and (sk <= sm or M == 1 or M < 64)


SPLIT_MIN = 1 << 16   # a single output row this long is cut over many blocks (two passes) ...
SPLIT_CHUNK = 4096    # ... of at least this many elements each


def reduce(name, x, off, M, sm, K, sk, acc, start, extra=(), fmt=None):
    """acc[m] = combine over the K elements x[off + m*sm + k*sk] (see the CPU kernel); acc is updated in place.
    fmt: x holds 16-bit floats of that format (uint16 bit patterns) and acc is float32."""
    if M == 0 or K == 0:
        return acc
    if M == 1 and K >= SPLIT_MIN and kernels().KERNELS[name].get("split") and _config["max_blocks"] > 1:
        return _reduce_split(name, x, off, K, sk, acc, start, extra, fmt)
    if _use_tree(name, "reduce", M, sm, K, sk, fmt):
        kernel(name, "reduce", fmt)[_blocks(M, 1), _tree_threads(K)](x, off, M, sm, K, sk, acc, start, *extra)
    else:
        t = _config["threads"]
        kernel(name, "reduce_serial", fmt)[_blocks(M, t), t](x, off, M, sm, K, sk, acc, start, *extra)
    return acc


def _reduce_split(name, x, off, K, sk, acc, start, extra, fmt=None):
    """One long row: S blocks reduce S chunks into partials, then the same kernel reduces the partials
    into acc (valid because the op's partials merge by its own combine: sum, prod, amax, all...)."""
    S = max(1, min(_config["max_blocks"], K // SPLIT_CHUNK))
    C = K // S
    tail = K - S * C
    nt = _tree_threads(C)
    part = _empty_like(acc, S + (1 if tail else 0))
    if start == 0:
        _fill_from(part, acc)                      # every partial starts at the identity acc holds
    first = kernel(name, "reduce", fmt)      # 16-bit input: float32 partials, merged by the float32 kernel
    first[_blocks(S, 1), nt](x, off, S, C * sk, C, sk, part, start, *extra)
    if tail:
        first[1, _tree_threads(tail)](x, off + S * C * sk, 1, tail * sk, tail, sk, part[S:], start, *extra)
    n = part.shape[0]
    kernel(name, "reduce")[1, _tree_threads(n)](part, 0, 1, n, n, 1, acc, start, *extra)
    return acc


def _empty_like(a, n):
    if isinstance(a, np.ndarray):
        return np.empty(n, a.dtype)
    return kernels().cuda.device_array(n, a.dtype)


def _fill_from(part, acc):
    """part[:] = acc[0], on whichever side the arrays live (no round trip through the host)."""
    if isinstance(acc, np.ndarray) and isinstance(part, np.ndarray):
        part[:] = acc[0]
    else:
        kernels().fill_from[1, 32](part, acc)


def argreduce(name, x, off, M, sm, K, sk, out, fmt=None):
    """out[m] = index of the best of the K elements of row m (the first on ties)."""
    if M == 0 or K == 0:
        return out
    if _use_tree(name, "reduce", M, sm, K, sk, fmt):
        kernel(name, "reduce", fmt)[_blocks(M, 1), _tree_threads(K)](x, off, M, sm, K, sk, out)
    else:
        t = _config["threads"]
        kernel(name, "reduce_serial", fmt)[_blocks(M, t), t](x, off, M, sm, K, sk, out)
    return out


def scan(name, x, off, M, sm, K, sk, out, acc0, fmt=None):
    """out (M*K, contiguous) = running combine along each row; acc0[0] is the identity."""
    if M == 0 or K == 0:
        return out
    if _use_tree(name, "scan", M, sm, K, sk, fmt):
        kernel(name, "scan", fmt)[_blocks(M, 1), _tree_threads(K)](x, off, M, sm, K, sk, out, acc0)
    else:
        t = _config["threads"]
        kernel(name, "scan_serial", fmt)[_blocks(M, t), t](x, off, M, sm, K, sk, out, acc0)
    return out


# ---------------------------------------------------------------------------- matmul

def _transferable(x):
    """numba copies a NumPy argument to the device as one block of memory: strided views go contiguous first."""
    if isinstance(x, np.ndarray) and not (x.flags.c_contiguous or x.flags.f_contiguous):
        return np.ascontiguousarray(x)
    return x


def matmul(a, b, out, fmt=None):
    """out[z] = a[z] @ b[z] for 3-D arrays (batch, rows, cols) of one dtype; out is written in place.
    fmt: 16-bit floats of that format (uint16 bit patterns), float32 tiles and accumulator."""
    nb, M, K = a.shape
    N = b.shape[2]
    if nb == 0 or M == 0 or N == 0:
        return out
    a, b = _transferable(a), _transferable(b)
    tile = kernels().TILE
    cap = max(1, _config["max_blocks"])
    gx = min(cap, -(-N // tile))
    gy = min(max(1, cap // gx), -(-M // tile))
    gz = min(max(1, cap // (gx * gy)), nb, 65535)
    kernel("matmul", "tiled", fmt)[(gx, gy, gz), (tile, tile)](a, b, out)
    return out
