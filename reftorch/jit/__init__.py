"""reftorch.jit: TorchScript's entry points, so programs that script or trace their models run.

reftorch has no TorchScript compiler: `script` and `trace` return the eager callable (a scripted
module is the same module under a ScriptModule class, sharing its parameters), the decorators
(`ignore`, `unused`, `export`, `script_method`...) return what they decorate, and `is_scripting()` /
`is_tracing()` are False. Saving or loading TorchScript archives (`jit.save`, `jit.load`,
`ScriptModule.save`) raises: save the state_dict with reftorch.save instead. For compiled speed use
reftorch.compile."""
from __future__ import annotations

import copy
import typing

from ..nn import Module

__all__ = ["script", "trace", "trace_module", "ignore", "unused", "export", "is_scripting", "is_tracing",
           "Final", "ScriptModule", "ScriptFunction", "script_method", "annotate", "isinstance", "save", "load",
           "freeze", "optimize_for_inference", "script_if_tracing", "interface", "Error"]

Final = typing.Final
Error = RuntimeError
_builtin_isinstance = isinstance

_NOT_SUPPORTED = ("reftorch.jit.{} is not supported: reftorch has no TorchScript (jit.script and jit.trace return "
                  "the eager module or function). Save the weights with reftorch.save(module.state_dict(), f) "
                  "and rebuild the module in Python to load them.")


def save(m, f, _extra_files=None):
    raise RuntimeError(_NOT_SUPPORTED.format("save"))


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    raise RuntimeError(_NOT_SUPPORTED.format("load"))


class ScriptModule(Module):
    """The class of what jit.script(module) returns here: the module's own class under this one. Subclass it
    (`class M(jit.ScriptModule)`) as in PyTorch; it is an ordinary Module."""

    def save(self, f, _extra_files=None):
        raise RuntimeError(_NOT_SUPPORTED.format("ScriptModule.save"))

    def save_to_buffer(self, _extra_files=None):
        raise RuntimeError(_NOT_SUPPORTED.format("ScriptModule.save_to_buffer"))


class ScriptFunction:
    """The name PyTorch gives a scripted function's type; jit.script(fn) returns fn itself here."""


_SCRIPTED = {}      # module class -> its ScriptModule subclass


def _scripted_class(cls):
    sub = _SCRIPTED.get(cls)
    if sub is None:
        sub = _SCRIPTED[cls] = type(cls.__name__, (cls, ScriptModule), {"__module__": cls.__module__})
    return sub


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """The eager obj: a module comes back as a ScriptModule sharing obj's parameters, buffers and children
    (obj itself is unchanged); a function or class comes back unchanged."""
    if _builtin_isinstance(obj, ScriptModule) or not _builtin_isinstance(obj, Module):
        return obj
    scripted = copy.copy(obj)           # shares obj's parameter, buffer and module dicts
    scripted.__class__ = _scripted_class(type(obj))
    return scripted


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """The eager func (a module as jit.script returns it); the example inputs are not run."""
    return script(func)


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
                 strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg=False, _store_inputs=True):
    return script(mod)


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    return mod


def optimize_for_inference(mod, other_methods=None):
    return mod


def _decorator(fn=None, **kwargs):
    if fn is None or not callable(fn):      # used as @ignore(drop=True)
        return lambda f: f
    return fn


def ignore(drop=False, **kwargs):
    """@jit.ignore / @jit.ignore(drop=True): the function, unchanged (it runs in Python either way)."""
    return _decorator(drop if callable(drop) else None)


def unused(fn):
    return fn


def export(fn):
    return fn


def script_method(fn):
    return fn


def interface(obj):
    return obj


def script_if_tracing(fn):
    return fn


def is_scripting():
    """False: code always runs eagerly in reftorch."""
    return False


def is_tracing():
    return False


def annotate(the_type, the_value):
    return the_value


def isinstance(obj, target_type):
    """jit.isinstance: isinstance that understands typing's List[int], Dict[str, Tensor], Optional[...]."""
    origin = typing.get_origin(target_type)
    if origin is None:
        return _builtin_isinstance(obj, target_type)
    args = typing.get_args(target_type)
    if origin is typing.Union:
        return any(isinstance(obj, a) for a in args)
    if not _builtin_isinstance(obj, origin):
        return False
    if origin in (list, set, frozenset) and args:
        return all(isinstance(x, args[0]) for x in obj)
    if origin is tuple and args:
        return len(obj) == len(args) and all(isinstance(x, a) for x, a in zip(obj, args))
    if origin is dict and args:
        return all(isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items())
    return True
