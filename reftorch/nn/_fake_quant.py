"""torch.fused_moving_avg_obs_fake_quant: a moving-average min/max observer and fake quantization in one call, as
PyTorch's CPU kernel (aten/src/ATen/native/quantized/FusedObsFakeQuant.cpp): running_min / running_max move toward
the input's range (per tensor, or per row of dim 0), scale / zero_point are chosen from them (quant_utils'
ChooseQuantizationParams: float32 bounds, double arithmetic, a nudged integer zero point) and written in place, and
the input is fake-quantized with them. The gradient passes where the quantized value was in range (the cached mask).
"""
from __future__ import annotations

import numpy as np

import reftorch as torch
from reftorch.autograd.function import Function

_SMALL_SCALE = np.float32(6.1e-5)


def _qparams(lo, hi, qmin, qmax, symmetric):
    """(scale, zero_point) for the range [lo, hi] (PyTorch's ChooseQuantizationParams, without range reduction)."""
    lo, hi = np.float32(lo), np.float32(hi)
    with np.errstate(all="ignore"):
        if lo < 0 and hi > 0 and symmetric:
            sq_min, sq_max = -((qmax - qmin) // 2 + 1), (qmax - qmin) // 2
            max_scale = float(max(abs(lo / np.float32(sq_min)), abs(hi / np.float32(sq_max))))
            lo, hi = np.float32(max_scale * sq_min), np.float32(max_scale * sq_max)
        lo, hi = min(lo, np.float32(0)), max(hi, np.float32(0))
        # the difference in double, the scale itself in single precision (the number quantization will use)
        scale = np.float32((float(hi) - float(lo)) / (qmax - qmin) if qmax != qmin else
                           float("inf") * (float(hi) - float(lo)))
        if scale == 0 or np.isinf(np.float32(1) / scale):
            scale = np.float32(0.1)
        if scale < _SMALL_SCALE:
            original = scale
            scale = _SMALL_SCALE
            if lo == 0:
                hi = np.float32(_SMALL_SCALE * (qmax - qmin))
            elif hi == 0:
                lo = np.float32(-_SMALL_SCALE * (qmax - qmin))
            else:
                amplifier = np.float32(_SMALL_SCALE / original)
                lo, hi = lo * amplifier, hi * amplifier
        d = float(scale)
        from_min, from_max = qmin - float(lo) / d, qmax - float(hi) / d
        err_min, err_max = abs(qmin) - abs(float(lo) / d), abs(qmax) - abs(float(hi) / d)
    zero = from_min if err_min < err_max else from_max
    if lo < 0 and hi > 0 and symmetric:
        zero = (qmin + qmax) / 2
    zero = qmin if zero < qmin else qmax if zero > qmax else int(np.rint(zero))
    return float(scale), zero


def _observe(x, running_min, running_max, c):
    """running = running + c * (current - running), or current where running is still infinite."""
    lo, hi = x
    for run, cur in ((running_min, lo), (running_max, hi)):
        moved = run + np.float32(c) * (cur - run)
        run.copy_(torch.where(torch.isinf(run), cur, moved))


def _fake_quantize(x, scale, zero_point, qmin, qmax):
    """(output, mask): x quantized with scale / zero_point (broadcast against x), clamped, dequantized."""
    inv = torch.tensor(np.float32(1) / scale.numpy().astype(np.float32), dtype=torch.float32)
    q = (x * inv.to(x.dtype)).round() + zero_point.to(x.dtype)
    mask = (q >= qmin) & (q <= qmax)
    return ((q.clamp(qmin, qmax) - zero_point.to(x.dtype)) * scale.to(x.dtype)).to(x.dtype), mask


class FusedMovingAvgObsFqHelper(Function):
    @staticmethod
    def forward(ctx, x, scale, zero_point, qmin, qmax, shape):
        out, mask = _fake_quantize(x, scale.reshape(shape), zero_point.reshape(shape), qmin, qmax)
        ctx.mask = mask
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.mask, None, None, None, None, None


def _check_float32(t):
    if t.dtype is not torch.float32:
        raise RuntimeError(f"expected scalar type Float but found {t.dtype.short}")


def fused_moving_avg_obs_fake_quant(input, observer_on, fake_quant_on, running_min, running_max, scale, zero_point,
                                    averaging_const, quant_min, quant_max, ch_axis, per_row_fake_quant=False,
                                    symmetric_quant=False):
    """The fake-quantized input; running_min / running_max (observer_on) and scale / zero_point (fake_quant_on)
    updated in place. Per row: statistics and parameters per index of dim 0 (ch_axis must be 0)."""
    if input.numel() == 0:
        return input.clone()
    if ch_axis >= input.dim():
        raise RuntimeError("Error in fused_moving_avg_obs_fake_quant_cpu: ch_axis must be < self.dim()")
    observe, fake = bool(observer_on.item()), bool(fake_quant_on.item())
    rows = input.detach()
    if per_row_fake_quant:
        if input.dim() != 2:
            order = list(range(input.dim()))
            order[0], order[ch_axis] = ch_axis, 0
            rows = rows.permute(order).flatten(1)
        size = input.shape[ch_axis]
        if running_min.numel() == 0:
            running_min.resize_(size).fill_(float("inf"))
            running_max.resize_(size).fill_(float("-inf"))
            scale.resize_(size)
            zero_point.resize_(size)
    with torch.no_grad():
        if observe:
            if per_row_fake_quant and ch_axis != 0:
                raise RuntimeError("Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on "
                                   "axis == 0")
            _check_float32(rows)
            _check_float32(running_min)
            _observe(torch.aminmax(rows, dim=1) if per_row_fake_quant else torch.aminmax(rows), running_min,
                     running_max, averaging_const)
        if not fake:
            return input.clone()
        lows, highs = running_min.reshape(-1).tolist(), running_max.reshape(-1).tolist()
        params = [_qparams(lo, hi, quant_min, quant_max, symmetric_quant) for lo, hi in zip(lows, highs)]
        scale.copy_(torch.tensor([p[0] for p in params], dtype=torch.float32).reshape(scale.shape))
        zero_point.copy_(torch.tensor([p[1] for p in params]).reshape(zero_point.shape))
    shape = [1] * input.dim()
    if per_row_fake_quant:
        shape[ch_axis] = -1
    sc = torch.tensor([p[0] for p in params], dtype=torch.float32)
    zp = torch.tensor([float(p[1]) for p in params], dtype=torch.float32)
    return FusedMovingAvgObsFqHelper.apply(input, sc, zp, quant_min, quant_max, tuple(shape))


__all__ = ["fused_moving_avg_obs_fake_quant"]
