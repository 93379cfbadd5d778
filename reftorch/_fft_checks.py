"""Argument handling shared by the torch.fft composites of ops.yaml (PyTorch's SpectralOps.cpp, in its order).

The transforms themselves are three array ops over NumPy's pocketfft (_fft_c2c, _fft_r2c, _fft_c2r) plus the
zero-pad/crop _fft_resize; these helpers turn the public arguments (n / s, dim, norm) into theirs and raise
PyTorch's errors. A normalisation is a code, as PyTorch's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n."""
from __future__ import annotations

import reftorch._dtype as D
import reftorch._layout as L

__all__ = ["fft_norm", "fft_promote", "fft_dim", "fft_shape_dims", "fft_c2r_shape_dims", "fft_check_real",
           "fft_check_complex"]


def fft_norm(norm, forward):
    """PyTorch's norm_from_string: 'backward' (None) scales the inverse by 1/n, 'forward' the forward one,
    'ortho' both by 1/sqrt(n)."""
    if norm is None or norm == "backward":
        return 0 if forward else 2
    if norm == "forward":
        return 2 if forward else 0
    if norm == "ortho":
        return 1
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def fft_promote(x, require_complex=False):
    """Integers to the default float dtype; only float32/float64 (and their complex) transform on cpu."""
    dt = x.dtype
    if dt is D.complex32:       # (PyTorch's cpu FFT refuses complex32 by its float16 parts)
        raise RuntimeError("MKL FFT doesn't support tensors of type: Half")
    if dt.is_complex:
        return x
    if not dt.is_floating_point:
        dt = D.defaults.float
    if dt not in (D.float32, D.float64):
        raise RuntimeError(f"Unsupported dtype {dt.short}")
    if require_complex:
        dt = dt.to_complex()
    return x if dt is x.dtype else x.to(dt)


def fft_check_real(x, fname, valued=False):
    if x.dtype.is_complex:
        what = "real-valued input tensor" if valued else "real input tensor"
        raise RuntimeError(f"{fname} expects a {what}, but got {x.dtype.short}")


def fft_check_complex(x, fname):
    if not x.dtype.is_complex:
        raise RuntimeError(f"{fname} expects a complex input tensor, but got {x.dtype.short}")


def _wrap(dim, ndim):
    if ndim == 0:       # PyTorch wraps fft dims with wrap_scalar=false
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return L.wrap_dim(dim, ndim)


def fft_dim(x, n, dim, default_n=None):
    """(n, dim) of a one-dimensional transform; n defaults to the size along dim (or default_n(size))."""
    d = _wrap(dim, x.ndim)
    if n is None:
        n = x.shape[d] if default_n is None else default_n(x.shape[d])
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n, d


def fft_shape_dims(x, s, dim):
    """PyTorch's canonicalize_fft_shape_and_dim_args: (sizes, dims) of an n-dimensional transform."""
    ndim = x.ndim
    dims = None
    if dim is not None:
        dim = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = [_wrap(d, ndim) for d in dim]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = (s,) if isinstance(s, int) else tuple(s)
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        if dims is None:
            dims = list(range(ndim - len(s), ndim))
        sizes = [x.shape[d] if n == -1 else int(n) for n, d in zip(s, dims)]
    elif dims is None:
        dims, sizes = list(range(ndim)), list(x.shape)
    else:
        sizes = [x.shape[d] for d in dims]
    for n in sizes:
        if n <= 0:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return sizes, dims


def fft_c2r_shape_dims(x, s, dim, fname):
    """canonicalize_fft_c2r_shape_and_dim_args: (sizes of the half-spectrum input, dims, last output size)."""
    sizes, dims = fft_shape_dims(x, s, dim)
    if not sizes:
        raise RuntimeError(f"{fname} must transform at least one axis")
    if s is None or tuple(s if not isinstance(s, int) else (s,))[-1] == -1:
        last = 2 * (x.shape[dims[-1]] - 1)
    else:
        last = sizes[-1]
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    sizes[-1] = last // 2 + 1
    return sizes, dims, last
