"""Anomaly detection: remember where each node was recorded, and check backward results for NaN.

Global (not per thread), as in PyTorch. While enabled, every recorded node keeps the traceback of
the forward call that made it; a backward error is preceded by a warning showing that traceback,
and a node whose backward returns NaN raises naming the node.
"""
from __future__ import annotations

import os
import traceback
import warnings

_enabled = False
_check_nan = True
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def is_anomaly_enabled():
    return _enabled


def is_anomaly_check_nan_enabled():
    return _check_nan


def _set(mode, check_nan):
    global _enabled, _check_nan
    _enabled, _check_nan = bool(mode), bool(check_nan)


class detect_anomaly:
    """Context manager (and decorator) that turns anomaly detection on."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self.prev = (_enabled, _check_nan)
        _set(True, self.check_nan)

    def __exit__(self, *exc):
        _set(*self.prev)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turns anomaly detection on or off: takes effect at once, and restores on exit when used with `with`."""

    def __init__(self, mode, check_nan=True):
        self.prev = (_enabled, _check_nan)
        _set(mode, check_nan)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _set(*self.prev)
        return False


def forward_trace():
    """The user's stack at the current op (frames inside reftorch itself left off the end)."""
    frames = traceback.extract_stack()[:-1]
    while frames and os.path.abspath(frames[-1].filename).startswith(_PACKAGE_DIR + os.sep):
        frames.pop()
    return "".join(traceback.format_list(frames))


def record_trace(node):
    if _enabled:
        node.trace = forward_trace()


def warn_error_in(node):
    """PyTorch's warning before a backward error in anomaly mode."""
    if node.trace is not None:
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                      f"{node.trace}", stacklevel=2)


def check_nan(node, grads):
    import numpy as np
    for i, g in enumerate(grads):
        if g is not None and g.dtype.is_floating_point and np.isnan(g._array()).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
