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
    if not dt.is_floating_point:
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

def _legacy(fn, name):
    def window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False,
               pin_memory=False, **params):
        if window_length < 0:
            raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
        return fn(window_length, sym=not periodic, dtype=dtype, layout=layout, device=device,
                  requires_grad=requires_grad, **params)
    window.__name__ = window.__qualname__ = name
    window.__doc__ = f"torch.{name}: the {name.split('_')[0]} window, periodic unless periodic=False."
    return window


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """torch.hamming_window: alpha - beta cos(2 pi n / (N - 1)), periodic unless periodic=False."""
    if window_length < 0:
        raise RuntimeError(f"hamming_window requires non-negative window_length, got window_length={window_length}")
    def formula(n, N):
        return alpha - beta * np.cos(2 * math.pi * n / (N - 1))
    return _window("hamming_window", window_length, not periodic, formula, dtype, layout, device, requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False, pin_memory=False):
    """torch.kaiser_window: I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), periodic unless periodic=False."""
    if window_length < 0:
        raise RuntimeError(f"kaiser_window requires non-negative window_length, got window_length={window_length}")
    return kaiser(window_length, beta=beta, sym=not periodic, dtype=dtype, layout=layout, device=device,
                  requires_grad=requires_grad)


hann_window = _legacy(hann, "hann_window")
blackman_window = _legacy(blackman, "blackman_window")
bartlett_window = _legacy(bartlett, "bartlett_window")
