"""torch.fft: the discrete Fourier transforms of ops.yaml's fft section under PyTorch's names.

Each transform is the registry's `fft_<name>` composite (argument handling in reftorch/_fft_checks.py, the
transforms NumPy's pocketfft on cpu); the two-dimensional forms are the n-dimensional ones over the last
two dims. On cuda the transforms run on a host copy of the input (the array ops' host round trip) and the
result goes back to the device. fftfreq/rfftfreq/fftshift/ifftshift are built from ordinary ops."""
from __future__ import annotations

import numpy as np

import reftorch._functional as _F
import reftorch._creation as _creation
import reftorch._dtype as D
from .._tensor import Tensor

_NAMES = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn")
globals().update({_n: getattr(_F, "fft_" + _n) for _n in _NAMES})


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """torch.fft.fft2: fftn over the last two dims."""
    return _F.fft_fftn(input, s, dim, norm, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """torch.fft.ifft2: ifftn over the last two dims."""
    return _F.fft_ifftn(input, s, dim, norm, out=out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """torch.fft.rfft2: rfftn over the last two dims."""
    return _F.fft_rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """torch.fft.irfft2: irfftn over the last two dims."""
    return _F.fft_irfftn(input, s, dim, norm, out=out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """torch.fft.hfft2: hfftn over the last two dims."""
    return _F.fft_hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """torch.fft.ihfft2: ihfftn over the last two dims."""
    return _F.fft_ihfftn(input, s, dim, norm, out=out)


def _freq(name, count, n, d, out, dtype, device, requires_grad):
    """k / (n d) as PyTorch computes it: `count` integer bins (fftfreq's upper half wrapped to negative) in the
    result dtype times the scale 1 / (n d) taken in double (d = 0 or n = 0 give inf, nan at k = 0)."""
    if isinstance(n, Tensor) and n.ndim == 0 and not n.dtype.is_floating_point and not n.dtype.is_complex:
        n = int(n.item())       # (a 0-d tensor stands for a number, as PyTorch's parser takes it)
    if isinstance(d, Tensor) and d.ndim == 0:
        d = D.fill_value(d.item(), D.float64)
    for arg, pos, v, kind in (("n", 1, n, int), ("d", 2, d, (int, float))):
        if isinstance(v, bool) or not isinstance(v, kind):
            raise TypeError(f"fft_{name}(): argument '{arg}' (position {pos}) must be "
                            f"{'int' if arg == 'n' else 'float'}, not {type(v).__name__}")
    dt = dtype if dtype is not None else (out.dtype if out is not None else D.defaults.float)
    if dt.is_complex:       # (PyTorch's arange refuses it first)
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dt.short}'")
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if count < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {count}: [{count}]")
    k = np.arange(count, dtype=np.float64)
    if name == "fftfreq":
        k[(n + 1) // 2:] -= n
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.float64(1.0) / np.float64(n * d)
        arr = k.astype(dt.np) * dt.np.type(scale)
    t = _creation.tensor(arr, dtype=dt, device=device, requires_grad=requires_grad)
    if out is not None:
        out.resize_(t.shape).copy_(t)
        return out
    return t


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of fft: [0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (n d)."""
    return _freq("fftfreq", n, n, d, out, dtype, device, requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of rfft: [0, 1, ..., n // 2] / (n d) (n // 2 truncated toward zero, as C++)."""
    count = int(n / 2) + 1 if isinstance(n, int) and not isinstance(n, bool) else 0     # (a 0-d tensor n: in _freq)
    if isinstance(n, Tensor) and n.ndim == 0 and not n.dtype.is_floating_point and not n.dtype.is_complex:
        count = int(int(n.item()) / 2) + 1
    return _freq("rfftfreq", count, n, d, out, dtype, device, requires_grad)


def _shift(input, dim, half):
    dims = tuple(range(input.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return input.clone()
    return _F.roll(input, tuple(half(input.shape[d]) for d in dims), dims)


def fftshift(input, dim=None):
    """The zero frequency moved to the centre (a roll by n // 2 along dims, all by default)."""
    return _shift(input, dim, lambda n: n // 2)


def ifftshift(input, dim=None):
    """The inverse of fftshift (a roll by (n + 1) // 2)."""
    return _shift(input, dim, lambda n: (n + 1) // 2)


__all__ = list(_NAMES) + ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2", "fftfreq", "rfftfreq",
                          "fftshift", "ifftshift"]
