"""Row kernels: layer_norm's forward and its input gradient, one row at a time, and the max and sum over the
last dim that softmax, log_softmax and attention take of short rows.

The NumPy bodies these replace spent ~50 µs (forward) and ~100 µs (backward) on a GPT block's (256, 64) float32
activations in a dozen temporaries and keepdims reductions; these passes over each row cost ~10 µs (torch's own:
~15 µs forward). Each row's mean and variance are summed in float64 whatever the dtype (torch sums float32 rows in
float), so a float32 result is within an ulp or two of its exactly rounded value. 16-bit floats arrive here as
float32 (the array-op bodies run them through float32, reftorch/_array.py).

NumPy's keepdims max/sum over a short last dim runs one short inner loop per row: ~3 ns per element for rows of
16 float32 (an attention score matrix), where a loop over the rows costs ~0.7 (max, in order, NaN propagating as
np.maximum's: for rows of up to 32) and ~0.3 (sum, reassociated as the layer_norm sums: 4x NumPy's at any length).

Copied verbatim into reftorch/kernels/rows.py by `python -m codegen`; ops.yaml's array-op bodies call it as
`rows.<name>`.
"""
import math

import numpy as np

from .scatter import loop

_NATIVE = frozenset((np.dtype(np.float32), np.dtype(np.float64)))
# the row sums may be reassociated: LLVM then sums in vector lanes (~4x faster than one running sum, which waits
# on every add), an order fixed by the machine's vector width, as torch's own vectorised row sums are
_SUMS = {"reassoc"}


def _moments_rows(x, eps, mean, rstd):
    # each row's mean and 1 / sqrt(var + eps), in float64, two passes (no cancellation in the variance)
    n = x.shape[1]
    for r in range(x.shape[0]):
        s = 0.0
        for j in range(n):
            s += x[r, j]
        m = s / n
        q = 0.0
        for j in range(n):
            d = x[r, j] - m
            q += d * d
        mean[r] = m
        rstd[r] = 1.0 / math.sqrt(q / n + eps)


def _forward_rows(x, mean, rstd, w, b, out):
    # x, out (rows, n); w, b (n,), or (0,) when absent
    for r in range(x.shape[0]):
        m, s = mean[r], rstd[r]
        for j in range(x.shape[1]):
            v = (x[r, j] - m) * s
            if w.shape[0]:
                v = v * w[j]
            if b.shape[0]:
                v = v + b[j]
            out[r, j] = v


def _backward_rows(go, x, mean, rstd, w, out):
    # d input: rstd * (g - mean(g) - xhat * mean(g * xhat)) per row, g = grad * weight
    n = x.shape[1]
    for r in range(x.shape[0]):
        m, s = mean[r], rstd[r]
        sg = 0.0
        sgx = 0.0
        for j in range(n):
            g = go[r, j] * w[j] if w.shape[0] else go[r, j] * 1.0
            sg += g
            sgx += g * ((x[r, j] - m) * s)
        sg /= n
        sgx /= n
        for j in range(n):
            g = go[r, j] * w[j] if w.shape[0] else go[r, j] * 1.0
            out[r, j] = s * (g - sg - (x[r, j] - m) * s * sgx)


def _max_rows(x, out):
    for r in range(x.shape[0]):
        m = x[r, 0]
        for j in range(1, x.shape[1]):
            v = x[r, j]
            if v > m or v != v:     # (a NaN, once met, stays: nothing compares greater)
                m = v
        out[r] = m


def _sum_rows(x, out):
    zero = np.zeros(1, x.dtype)[0]     # (summed in x's dtype, as NumPy's)
    for r in range(x.shape[0]):
        s = zero
        for j in range(x.shape[1]):
            s += x[r, j]
        out[r] = s


def amax(x, dim):
    """np.maximum.reduce(x, axis=dim, keepdims=True). The loop (in order, not vectorised: a NaN must win) is
    faster than NumPy's reduce for rows of up to 32 elements only (rows of 16: 4x, of 64: 0.8x, of 1000: 0.09x)."""
    if _rowwise(x, dim) and x.shape[-1] <= 32:
        return _last_dim(x, dim, _max_rows, None)
    return np.maximum.reduce(x, axis=dim, keepdims=True)


def total(x, dim):
    """np.add.reduce(x, axis=dim, keepdims=True), the rows' sums reassociated (within rounding of NumPy's)."""
    return _last_dim(x, dim, _sum_rows, _SUMS) if _rowwise(x, dim) else np.add.reduce(x, axis=dim, keepdims=True)


def _rowwise(x, dim):
    # a reduction over the last dim of x, rows of a dtype of the loops: theirs (else NumPy's own reduce)
    return x.dtype in _NATIVE and x.ndim and x.size and dim % x.ndim == x.ndim - 1


def _last_dim(x, dim, fn, fastmath):
    x2 = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty(x2.shape[0], x.dtype)
    loop(fn, fastmath or False)(x2, out)
    return out.reshape(x.shape[:-1] + (1,))


def fits(x, ndim):
    """Whether the row kernels take x normalised over its last ndim dims (a dtype of theirs, rows to normalise)."""
    return x.dtype in _NATIVE and x.size > 0 and ndim > 0


def layer_norm(x, weight, bias, ndim, eps):
    """(x - mean) / sqrt(var + eps) * weight + bias over x's last ndim dims (weight, bias: those dims or None)."""
    n = math.prod(x.shape[x.ndim - ndim:])
    x2 = np.ascontiguousarray(x).reshape(-1, n)
    w = _vector(weight, n, x.dtype)
    b = _vector(bias, n, x.dtype)
    out = np.empty_like(x2)
    loop(_forward_rows)(x2, *_moments(x2, eps), w, b, out)
    return out.reshape(x.shape)


def layer_norm_backward(grad, x, weight, ndim, eps):
    """The gradient of layer_norm for x, given the output's gradient grad (x's shape)."""
    n = math.prod(x.shape[x.ndim - ndim:])
    x2 = np.ascontiguousarray(x).reshape(-1, n)
    g2 = np.ascontiguousarray(np.broadcast_to(grad, x.shape), x.dtype).reshape(-1, n)
    out = np.empty_like(x2)
    loop(_backward_rows, _SUMS)(g2, x2, *_moments(x2, eps), _vector(weight, n, x.dtype), out)
    return out.reshape(x.shape)


def _moments(x2, eps):
    mean, rstd = np.empty(x2.shape[0]), np.empty(x2.shape[0])
    loop(_moments_rows, _SUMS)(x2, float(eps), mean, rstd)
    return mean, rstd


def _vector(a, n, dtype):
    # a weight or bias (the normalised shape) as a flat contiguous (n,) array of x's dtype; absent: (0,)
    return np.empty(0, dtype) if a is None else np.ascontiguousarray(a, dtype).reshape(n)
