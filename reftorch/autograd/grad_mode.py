"""Grad mode: thread-local, as in PyTorch (a no_grad block in one thread leaves others recording)."""
from __future__ import annotations

import functools
import threading


class _State(threading.local):
    enabled = True
    inference = False
    anomaly = False


state = _State()


def is_grad_enabled():
    return state.enabled


def is_inference_mode_enabled():
    return state.inference


class _Mode:
    """Base of the grad-mode context managers; each is also a decorator."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args):
                return fn(*args, **kwargs)
        return wrapper

    _args = ()

    def __enter__(self):
        self._prev = (state.enabled, state.inference)
        self._set()
        return self

    def __exit__(self, *exc):
        state.enabled, state.inference = self._prev
        return False


class no_grad(_Mode):
    def __new__(cls, fn=None):
        self = super().__new__(cls)
        if callable(fn):        # used as @no_grad without parentheses
            return self(fn)
        return self

    def __init__(self, fn=None):
        pass

    def _set(self):
        state.enabled = False


class enable_grad(_Mode):
    def __new__(cls, fn=None):
        self = super().__new__(cls)
        if callable(fn):
            return self(fn)
        return self

    def __init__(self, fn=None):
        pass

    def _set(self):
        state.enabled = True


class set_grad_enabled(_Mode):
    def __init__(self, mode):
        self._args = (mode,)
        self._mode = bool(mode)
        self._prev = (state.enabled, state.inference)
        state.enabled = self._mode      # also works as a plain function call

    def __enter__(self):
        return self

    def _set(self):
        state.enabled = self._mode


class inference_mode(_Mode):
    def __init__(self, mode=True):
        self._args = (mode,)
        self._mode = bool(mode)

    def _set(self):
        if self._mode:
            state.enabled = False
            state.inference = True
