"""The counter-based generator of cpu rand / randn: Philox 4x32-10 (Salmon et al., 2011; torch's and JAX's).

Element i of a draw is a pure function of (seed, offset + i): one Philox block of the 64-bit counter
offset + i under the 64-bit key seed. A draw of n elements takes n counters from its Generator (the offset
moves on by n), so `manual_seed(s)` replays the same values, and a kernel that knows (seed, offset) can
compute any element of the draw by itself: reftorch.compile fuses rand / randn (and so dropout's mask) into
its generated kernels, which copy the scalar functions below into their own modules (`SCALAR_FUNCTIONS`,
read with inspect.getsource; each is self-contained, constants written in).

  uniform: the top `bits` bits of the block's first word (53 bits: of its first two words) times 2**-bits,
           so the value is exact in the dtype (bits = its mantissa: 24 float32, 53 float64, 11 float16, 8
           bfloat16) and lies in [0, 1)
  normal:  Box-Muller over two 53-bit uniforms of the block (words 0-1 and 2-3), in float64

The streams are not PyTorch's bit for bit (nor were the PCG64 ones before); the distributions are.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from .kernels._cache import CACHE


@njit(inline="always")
def philox_round(c0, c1, c2, c3, k0, k1):
    # one Philox round: two 32x32 -> 64-bit products (the words are held in uint64, below 2**32)
    p0 = np.uint64(0xD2511F53) * c0
    p1 = np.uint64(0xCD9E8D57) * c2
    return (((p1 >> np.uint64(32)) ^ c1 ^ k0), p1 & np.uint64(0xFFFFFFFF),
            ((p0 >> np.uint64(32)) ^ c3 ^ k1), p0 & np.uint64(0xFFFFFFFF))


@njit(inline="always")
def philox_block(seed, counter):
    # Philox 4x32-10 of the counter (counter, 0) under the key seed: four 32-bit words. The ten rounds are
    # written out, each with its bumped key: a loop over them does not vectorise (measured 35 vs 0.9 ns/element)
    m = np.uint64(0xFFFFFFFF)
    k0 = seed & m
    k1 = (seed >> np.uint64(32)) & m
    w0 = np.uint64(0x9E3779B9)
    w1 = np.uint64(0xBB67AE85)
    c0, c1, c2, c3 = philox_round(counter & m, (counter >> np.uint64(32)) & m, np.uint64(0), np.uint64(0), k0, k1)
    c0, c1, c2, c3 = philox_round(c0, c1, c2, c3, (k0 + w0) & m, (k1 + w1) & m)
    c0, c1, c2, c3 = philox_round(c0, c1, c2, c3, (k0 + np.uint64(2) * w0) & m, (k1 + np.uint64(2) * w1) & m)
    c0, c1, c2, c3 = philox_round(c0, c1, c2, c3, (k0 + np.uint64(3) * w0) & m, (k1 + np.uint64(3) * w1) & m)
    c0, c1, c2, c3 = philox_round(c0, c1, c2, c3, (k0 + np.uint64(4) * w0) & m, (k1 + np.uint64(4) * w1) & m)
    c0, c1, c2, c3 = philox_round(c0, c1, c2, c3, (k0 + np.uint64(5) * w0) & m, (k1 + np.uint64(5) * w1) & m)
    c0, c1, c2, c3 = philox_round(c0, c1, c2, c3, (k0 + np.uint64(6) * w0) & m, (k1 + np.uint64(6) * w1) & m)
    c0, c1, c2, c3 = philox_round(c0, c1, c2, c3, (k0 + np.uint64(7) * w0) & m, (k1 + np.uint64(7) * w1) & m)
    c0, c1, c2, c3 = philox_round(c0, c1, c2, c3, (k0 + np.uint64(8) * w0) & m, (k1 + np.uint64(8) * w1) & m)
    return philox_round(c0, c1, c2, c3, (k0 + np.uint64(9) * w0) & m, (k1 + np.uint64(9) * w1) & m)


@njit(inline="always")
def philox_uniform(seed, counter, bits):
    # [0, 1) with `bits` random bits: exact in a dtype with that many mantissa bits
    # (bits <= 24: through int32, so that the conversion vectorises; 53: float64 from two words)
    w0, w1, _, _ = philox_block(seed, counter)
    if bits > 24:
        return np.float64(np.int64(((w0 << np.uint64(32)) | w1) >> np.uint64(64 - bits))) * 2.0 ** -bits
    return np.float32(np.int32(w0 >> np.uint64(32 - bits))) * np.float32(2.0 ** -bits)


@njit(inline="always")
def philox_normal(seed, counter):
    # a standard normal draw (Box-Muller) from the block's two 53-bit uniforms; 1 - u1 is in (0, 1]
    w0, w1, w2, w3 = philox_block(seed, counter)
    u1 = np.float64(((w0 << np.uint64(32)) | w1) >> np.uint64(11)) * 1.1102230246251565e-16
    u2 = np.float64(((w2 << np.uint64(32)) | w3) >> np.uint64(11)) * 1.1102230246251565e-16
    return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(6.283185307179586 * u2)


SCALAR_FUNCTIONS = (philox_round, philox_block, philox_uniform, philox_normal)


@njit(cache=CACHE, nogil=True)
def _fill_uniform(out, seed, offset, bits):
    if bits == 24:      # a literal width: its loop vectorises
        for i in range(out.shape[0]):
            out[i] = philox_uniform(seed, offset + np.uint64(i), 24)
    else:
        for i in range(out.shape[0]):
            out[i] = philox_uniform(seed, offset + np.uint64(i), bits)


@njit(cache=CACHE, nogil=True)
def _fill_normal(out, seed, offset):
    for i in range(out.shape[0]):
        out[i] = philox_normal(seed, offset + np.uint64(i))


MANTISSA = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}


def bits_of(np_dtype):
    return MANTISSA[np.dtype(np_dtype).name]


def uniform(n, seed, offset, np_dtype):
    """n uniform [0, 1) draws of the counters offset .. offset + n - 1, as a flat array of np_dtype (a float)."""
    bits = bits_of(np_dtype)
    out = np.empty(n, np.float64 if bits == 53 else np.float32)
    if n:
        _fill_uniform(out, np.uint64(seed), np.uint64(offset), bits)
    return out if out.dtype == np_dtype else out.astype(np_dtype)


def normal(n, seed, offset, np_dtype):
    """n standard normal draws of the counters offset .. offset + n - 1 (float64, rounded once into np_dtype)."""
    out = np.empty(n, np.float64)
    if n:
        _fill_normal(out, np.uint64(seed), np.uint64(offset))
    return out if out.dtype == np_dtype else out.astype(np_dtype)
