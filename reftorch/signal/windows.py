"""Window functions: torch.signal.windows (SciPy's definitions, symmetric by default) and the torch.*_window
creation functions (periodic by default) that stft/istft take.

A periodic window of length N is the symmetric one of length N + 1 without its last point. Values are computed
in float64 and rounded once to the requested dtype (PyTorch computes in that dtype: they agree to an ulp)."""
from __future__ import annotations

import math

import numpy as np

import reftorch._creation as _creation
import reftorch._dtype as D

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _make(name, values, dtype, layout, device, requires_grad):
    dt = dtype if dtype is not None else D.defaults.float
    if dt is not D.float32 and dt is not D.float64:
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dt}")
    return _creation.tensor(np.asarray(values, np.float64).astype(dt.np), dtype=dt, device=device,
                            requires_grad=requires_grad)


def _window(name, M, sym, formula, dtype, layout, device, requires_grad):
    """formula(n, N) over n = 0..N-1 of the symmetric window of length N; periodic: N = M + 1, last dropped."""
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if M <= 1:
        return _make(name, np.ones(M), dtype, layout, device, requires_grad)
    N = M if sym else M + 1
    return _make(name, formula(np.arange(N, dtype=np.float64), N)[:M], dtype, layout, device, requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """sum_k (-1)^k a_k cos(2 pi k n / (N - 1))."""
    if not isinstance(a, (list, tuple)) or not a:
        raise TypeError("Coefficients must be a list/tuple")
    def formula(n, N):
        return sum((-1) ** k * c * np.cos(2 * math.pi * k * n / (N - 1)) for k, c in enumerate(a))
    return _window("general_cosine", M, sym, formula, dtype, layout, device, requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("bartlett", M, sym, lambda n, N: 1 - np.abs(2 * n / (N - 1) - 1), dtype, layout, device,
                   requires_grad)


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("cosine", M, sym, lambda n, N: np.sin(math.pi * (n + 0.5) / N), dtype, layout, device,
                   requires_grad)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _window("gaussian", M, sym, lambda n, N: np.exp(-((n - (N - 1) / 2) / std) ** 2 / 2), dtype, layout,
                   device, requires_grad)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    def formula(n, N):
        c = (N - 1) / 2 if center is None else center
        return np.exp(-np.abs(n - c) / tau)
    return _window("exponential", M, sym, formula, dtype, layout, device, requires_grad)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    def formula(n, N):
        a = (N - 1) / 2
        return np.i0(beta * np.sqrt(np.clip(1 - ((n - a) / a) ** 2, 0, None))) / np.i0(beta)
    return _window("kaiser", M, sym, formula, dtype, layout, device, requires_grad)


# ---------------------------------------------------------------- torch.*_window (periodic by default)

def _legacy_dtype(name, window_length, dtype):
    """torch.*_window's checks: a non-negative length and a floating dtype, 16-bit ones too (torch.signal.windows
    takes float32 and float64 only); integers are refused by the window, complex numbers by its arange, as PyTorch
    words them. The dtype the window is made in."""
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    dt = dtype if dtype is not None else D.defaults.float
    if dt.category == 3:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dt.short}'")
    if dt.category < 2:
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype={dt.cpp}, "
                           "device=cpu, layout=Strided (default), requires_grad=false (default), pinned_memory=false, "
                           "memory_format=(nullopt))")
    return dt


def _in_dtype(name, window_length, periodic, dtype, device, requires_grad, body):
    """A torch.*_window as PyTorch's TensorFactories computes it: body(arange(N), N) with tensor ops in the dtype
    itself (N = window_length + 1 when periodic, the last point then dropped), so 16-bit windows round after each
    step, value for value as PyTorch's."""
    dt = _legacy_dtype(name, window_length, dtype)
    if window_length <= 1:
        w = _creation.ones(window_length, dtype=dt, device=device)
    else:
        n = window_length + 1 if periodic else window_length
        w = body(_creation.arange(n, dtype=dt, device=device), n)
        if periodic:
            w = w.narrow(0, 0, window_length)
    return w.requires_grad_() if requires_grad else w


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """torch.hamming_window: alpha - beta cos(2 pi n / (N - 1)), periodic unless periodic=False."""
    return _in_dtype("hamming_window", window_length, periodic, dtype, device, requires_grad,
                     lambda w, n: w.mul_(math.pi * 2.0 / (n - 1)).cos_().mul_(-beta).add_(alpha))


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                pin_memory=False):
    """torch.hann_window: the Hamming window with alpha = beta = 1/2."""
    return _in_dtype("hann_window", window_length, periodic, dtype, device, requires_grad,
                     lambda w, n: w.mul_(math.pi * 2.0 / (n - 1)).cos_().mul_(-0.5).add_(0.5))


def _blackman(w, n):
    w = w.mul_(math.pi / (n - 1))
    return w.mul(4).cos_().mul_(0.08) - w.mul(2).cos_().mul_(0.5) + 0.42


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    """torch.blackman_window: 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _in_dtype("blackman_window", window_length, periodic, dtype, device, requires_grad, _blackman)


def _bartlett(w, n):
    w.mul_(2.0 / (n - 1))
    first = ((n - 1) >> 1) + 1
    w.narrow(0, first, n - first).mul_(-1).add_(2)
    return w


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
                    pin_memory=False):
    """torch.bartlett_window: 1 - |2n / (N - 1) - 1|, the falling half computed as 2 - 2n / (N - 1)."""
    return _in_dtype("bartlett_window", window_length, periodic, dtype, device, requires_grad, _bartlett)


def _kaiser(beta):
    def body(w, n):
        # PyTorch's kaiser kernel: each point of arange(N) as the dtype holds it (bfloat16 rounds integers above
        # 256), the formula in its opmath type -- float64 here, rounded once to the dtype
        a = (n - 1) / 2.0
        x = w.double().numpy()
        values = np.i0(beta * np.sqrt(np.abs(1 - ((x - a) / a) ** 2))) / np.i0(beta)
        return _creation.tensor(values, dtype=w.dtype, device=w.device)
    return body


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False, pin_memory=False):
    """torch.kaiser_window: I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), periodic unless periodic=False."""
    return _in_dtype("kaiser_window", window_length, periodic, dtype, device, requires_grad, _kaiser(beta))
