"""The batch-norm pieces SyncBatchNorm is built from (torch.batch_norm_stats, batch_norm_elemt,
batch_norm_gather_stats(_with_counts), batch_norm_backward_reduce, batch_norm_backward_elemt,
batch_norm_update_stats), with the formulas and dtypes of PyTorch's CUDA kernels (aten/src/ATen/native/cuda/
Normalization.cuh): statistics per channel (dim 1) over every other dim, kept in the accumulate dtype (float32 for
16-bit inputs). PyTorch 2.13's CPU build has a kernel for batch_norm_update_stats only (its CPU statistics keep the
input's dtype); reftorch computes the others on every device. None of them has a derivative in PyTorch: outputs of
inputs that require grad require grad, and a backward through them raises PyTorch's error.
"""
from __future__ import annotations

import math

import reftorch as torch
from reftorch.autograd.function import without_derivative


def _acc(dtype):
    return torch.float64 if dtype is torch.float64 else torch.float32


def _check_floating(t, kernel):
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{t.dtype.short}'")


def _check_dtype(t, want):
    """What PyTorch's typed accessors demand of a tensor read as dtype want."""
    if t is not None and t.dtype is not want:
        raise RuntimeError(f"expected scalar type {want.short} but found {t.dtype.short}")


def _channels(x):
    """The number of channels (dim 1), with PyTorch's errors for a tensor without one."""
    if x.dim() == 0:
        raise IndexError("Dimension specified as 1 but tensor has no dimensions")
    return x.size(1)


def _planes(x, dtype=None):
    """x as (N, C, L): channel dim 1, the dims after it merged."""
    x = x.reshape(x.shape[0], x.shape[1], math.prod(x.shape[2:]))
    return x if dtype is None else x.to(dtype)


def _per_channel(t):
    return t.reshape(1, -1, 1)


def _inv_std(var, eps):
    """1 / sqrt(var + eps); 0 where var and eps are both 0 (PyTorch's InvStd)."""
    inv = (var + eps).rsqrt()
    return torch.where(var == 0, torch.zeros_like(inv), inv) if eps == 0 else inv


def _mean_var(input, dtype):
    x = _planes(input, dtype)
    return x.mean((0, 2)), x.var((0, 2), correction=0)


def batch_norm_stats(input, eps):
    """(mean, invstd) per channel of input, in the accumulate dtype; invstd = 1 / sqrt(biased var + eps)."""
    _check_floating(input, "batch_norm_stats_cuda")
    _channels(input)

    def compute(x):
        mean, var = _mean_var(x, _acc(x.dtype))
        return mean, _inv_std(var, eps)
    return without_derivative("batch_norm_stats", compute, input)


def batch_norm_elemt(input, weight, bias, mean, invstd, eps, *, out=None):
    """((input - mean) * invstd) * weight + bias per channel, in the statistics' dtype, rounded to input's (eps
    is unused: invstd is already inverted)."""
    _check_floating(input, "batch_norm_elementwise_cuda")
    _channels(input)
    acc = _acc(input.dtype)

    def compute(x, w, b, m, s):
        y = (_planes(x, acc) - _per_channel(m.to(acc))) * _per_channel(s.to(acc))
        if w is not None:
            y = y * _per_channel(w.to(acc))
        if b is not None:
            y = y + _per_channel(b.to(acc))
        return y.reshape(x.shape).to(x.dtype)
    result = without_derivative("batch_norm_elemt", compute, input, weight, bias, mean, invstd)
    if out is None:
        return result
    return out.copy_(result)


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts):
    """The global (mean, invstd) of per-replica rows mean / invstd (world x C) holding counts[j] samples each,
    merged replica by replica with PyTorch's integer running count; running_mean / running_var (when given) move
    toward the mean and the unbiased variance by momentum, in place."""
    scalar = running_mean.dtype if running_mean is not None else input.dtype
    _check_floating(input if running_mean is None else running_mean, "batch_norm_update_stats_cuda")
    acc = _acc(scalar)
    _check_dtype(mean, acc)
    _check_dtype(invstd, acc)
    _check_dtype(counts, scalar)
    if running_mean is not None:
        _check_dtype(running_var, scalar)

    def compute(m, s, c, rm, rv):
        avg = torch.zeros(m.shape[1], dtype=acc, device=m.device)
        var_n, n = torch.zeros_like(avg), 0
        for j in range(m.shape[0]):
            count = float(c[j].item())
            v = (1.0 / s[j]) ** 2
            v = (v - eps) * count
            factor = 1.0 / (n + count) if n + count else math.inf
            var_n = var_n + v + (avg - m[j]) * (avg - m[j]) * (n * count * factor)
            avg = (n * factor) * avg + (count * factor) * m[j]
            n += int(count)         # PyTorch's index_t n: the counts accumulate as integers
        new_invstd = 1.0 / (var_n / n + eps).sqrt()
        if rm is not None:
            rm.copy_((1 - momentum) * rm.to(acc) + momentum * avg)
        if rv is not None:
            rv.copy_((1 - momentum) * rv.to(acc) + momentum * (var_n / (n - 1)))
        return avg.to(acc), new_invstd.to(acc)
    return without_derivative("batch_norm_gather_stats_with_counts", compute, mean, invstd, counts, running_mean,
                              running_var)


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps, count):
    """batch_norm_gather_stats_with_counts with count samples on every replica."""
    scalar = running_mean.dtype if running_mean is not None else input.dtype
    counts = torch.full((mean.shape[0],), float(count), dtype=scalar, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts)


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g):
    """(sum_dy, sum_dy_xmu, grad_weight, grad_bias) per channel: sum of grad_out, sum of grad_out * (input -
    mean), the latter times invstd, and sum_dy again; each None unless its flag (input_g for the first two) asks."""
    _check_floating(grad_out, "batch_norm_backward_reduce")
    if mean.dtype is not invstd.dtype:
        raise RuntimeError("mean and invstd need to have the same data types")
    acc = _acc(input.dtype)
    w_dtype = weight.dtype if weight is not None else torch.get_default_dtype()

    def compute(g, x, m, s):
        g3 = _planes(g, acc)
        sum_dy = g3.sum((0, 2))
        sum_dy_xmu = (g3 * (_planes(x, acc) - _per_channel(m.to(acc)))).sum((0, 2))
        return (sum_dy.to(mean.dtype) if input_g else None, sum_dy_xmu.to(mean.dtype) if input_g else None,
                (sum_dy_xmu * s.to(acc)).to(w_dtype) if weight_g else None, sum_dy.to(w_dtype) if bias_g else None)
    return without_derivative("batch_norm_backward_reduce", compute, grad_out, input, mean, invstd)


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
    """The input gradient of a synchronized batch norm: (grad_out - sum_dy / N - (input - mean) * invstd^2 *
    sum_dy_xmu / N) * weight * invstd, N = count.sum() (int32 counts per replica)."""
    _check_floating(grad_out, "batch_norm_backward_elemt")
    if mean.dtype is not invstd.dtype:
        raise RuntimeError("mean and invstd need to have the same data types")
    _check_dtype(count, torch.int32)
    acc = _acc(input.dtype)

    def compute(g, x, m, s, w, dy, dy_xmu):
        div = float(count.sum().item())
        s = s.to(acc)
        factor_2 = s if w is None else w.to(acc) * s
        factor_1 = s * s * dy_xmu.to(acc) / div
        gi = (_planes(g, acc) - _per_channel(dy.to(acc) / div) - (_planes(x, acc) - _per_channel(m.to(acc))) *
              _per_channel(factor_1)) * _per_channel(factor_2)
        return gi.reshape(x.shape).to(g.dtype)
    return without_derivative("batch_norm_backward_elemt", compute, grad_out, input, mean, invstd, weight, sum_dy,
                              sum_dy_xmu)


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """(mean, biased var) per channel of input (input's dtype on cpu, as PyTorch's CPU kernel; the accumulate
    dtype on cuda); running_mean / running_var move toward the mean and the unbiased variance, in place."""
    _check_floating(input, "batch_norm_update_stats_cpu" if input.device.type == "cpu" else
                    "batch_norm_update_stats_cuda")
    _channels(input)
    if input.numel() == 0:
        raise RuntimeError(f"input tensor must have at least one element, but got input_sizes = {list(input.shape)}")
    if input.device.type == "cpu" and running_mean is not None and running_mean.dtype is not input.dtype and \
            not (input.dtype.half and running_mean.dtype is torch.float32):
        raise RuntimeError(f"mixed dtype (CPU): expect parameter to have scalar type of {input.dtype.short}")
    if input.device.type != "cpu":
        return without_derivative("batch_norm_update_stats", lambda x, rm, rv: _update_stats(
            x, rm, rv, momentum, _acc(x.dtype), _acc(x.dtype)), input, running_mean, running_var)
    # PyTorch's CPU kernel: mean and the sum of squares kept in the parameters' dtype (float32 for a 16-bit input
    # with float32 running stats, else input's), the rest in double
    param = running_mean.dtype if running_mean is not None and input.dtype.half else input.dtype
    return without_derivative("batch_norm_update_stats", lambda x, rm, rv: _update_stats(
        x, rm, rv, momentum, torch.float64, param), input, running_mean, running_var)


def _update_stats(x, rm, rv, momentum, acc, param):
    x = _planes(x, acc)
    n = x.numel() // x.shape[1]
    mean = x.mean((0, 2))
    var_sum = ((x - _per_channel(mean)) ** 2).sum((0, 2)).to(param).to(acc)
    mean = mean.to(param).to(acc)
    if rm is not None:
        rm.copy_(momentum * mean + (1 - momentum) * rm.to(acc))
    if rv is not None:
        rv.copy_(momentum * (var_sum / (n - 1) if n > 1 else var_sum * math.nan) + (1 - momentum) * rv.to(acc))
    return mean.to(param), (var_sum / n).to(param)


__all__ = ["batch_norm_stats", "batch_norm_elemt", "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts",
           "batch_norm_backward_reduce", "batch_norm_backward_elemt", "batch_norm_update_stats"]
