"""nn.Parameter (a Tensor subclass that modules register as learnable) and nn.Buffer (a marker)."""
from __future__ import annotations

import reftorch as torch


class Parameter(torch.Tensor):
    """A Tensor that a Module registers as a parameter when assigned as an attribute.

    It shares storage with `data` (no copy) and requires grad unless told otherwise."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = torch.empty(0)
        if not isinstance(data, torch.Tensor):
            raise TypeError(f"Parameter(): expected a Tensor as data, got {type(data).__name__}")
        t = data.detach()               # shares data's storage, carries no history
        t.__class__ = cls
        t.requires_grad_(requires_grad)
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.data, self.requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class _BufferMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, torch.Tensor) and getattr(obj, "_is_buffer", False)


class Buffer(metaclass=_BufferMeta):
    """Marks a tensor to be registered as a buffer when assigned to a Module attribute:
    `self.running = nn.Buffer(torch.zeros(3), persistent=False)`. Returns the tensor itself."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = torch.empty(0)
        if not isinstance(data, torch.Tensor):
            raise TypeError(f"Buffer(): expected a Tensor as data, got {type(data).__name__}")
        t = data.detach()
        t._is_buffer = True
        t._buffer_persistent = bool(persistent)
        return t


def is_lazy(param):
    return False
