"""Grad mode: thread-local, as in PyTorch (a no_grad block in one thread leaves others recording).

Each mode is a context manager and also a decorator (with or without parentheses for no_grad,
enable_grad and inference_mode); a decorated generator function runs every step in the mode.
"""
from __future__ import annotations

import functools
import inspect

from .._grad_state import state


def is_grad_enabled():
    return state.enabled


def is_inference_mode_enabled():
    return state.inference


class _Mode:
    """A context manager that sets the thread's grad mode on entry and restores it on exit."""

    def _set(self):
        raise NotImplementedError

    def clone(self):
        return self.__class__()

    def __enter__(self):
        self._prev = (state.enabled, state.inference)
        self._set()
        return None

    def __exit__(self, *exc):
        state.enabled, state.inference = self._prev
        return False

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            try:
                with self.clone():
                    value = next(gen)
                while True:
                    try:
                        sent = yield value
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as err:
                        with self.clone():
                            value = gen.throw(err)
                    else:
                        with self.clone():
                            value = gen.send(sent)
            except StopIteration as stop:
                return stop.value
        return wrapper


class _NoParamMode(_Mode):
    """A mode that also decorates without parentheses: `@no_grad` as well as `@no_grad()`."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamMode):
    """Ops inside do not record a graph; their results do not require grad."""

    def _set(self):
        state.enabled = False


class enable_grad(_NoParamMode):
    """Turns recording back on inside a no_grad block."""

    def _set(self):
        state.enabled = True


class set_grad_enabled(_Mode):
    """Sets grad mode on or off: as a plain call (takes effect at once), a context manager or a decorator."""

    def __init__(self, mode):
        self.prev = state.enabled
        self.mode = bool(mode)
        state.enabled = self.mode           # a plain call takes effect immediately, as in PyTorch

    def __call__(self, fn):
        state.enabled = self.prev           # used as a decorator: undo the immediate effect
        return super().__call__(fn)

    def __enter__(self):
        self._prev = (self.prev, state.inference)
        state.enabled = self.mode
        return None

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_Mode):
    """no_grad that also marks the block as inference (is_inference_mode_enabled())."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):                  # bare @inference_mode
            self.mode = True
            return self(mode)
        return self

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def _set(self):        # inference_mode(False) turns recording back on, as PyTorch's InferenceMode(false)
        state.enabled = not self.mode
        state.inference = self.mode

    def clone(self):
        return self.__class__(self.mode)
