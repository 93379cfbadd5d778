"""nn.Parameter (a Tensor subclass that modules register as learnable) and nn.Buffer (a marker)."""
from __future__ import annotations

import reftorch as torch
import reftorch.multiprocessing._shared as _mp_shared


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


_mp_shared.init_reductions(Parameter)    # parameters sent to worker processes through shared memory, as tensors


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


class UninitializedTensorMixin:
    """A parameter/buffer whose shape is not known yet (lazy modules): it holds no data, refuses to
    tell its shape, and becomes a plain Parameter/Tensor when `materialize(shape)` is called."""

    def materialize(self, shape, device=None, dtype=None):
        """Gives it storage of `shape` (uninitialised values) and turns it into cls_to_become."""
        if device is None:
            device = self.data.device
        if dtype is None:
            dtype = self.data.dtype
        self.data = torch.empty(shape, device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize "
                           "the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


def is_lazy(param):
    """Whether param is an UninitializedParameter / UninitializedBuffer."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        t = torch.empty(0, device=device, dtype=dtype)
        t.__class__ = cls
        t.requires_grad_(requires_grad)
        return t

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.data.device, self.data.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, torch.Tensor):
    cls_to_become = torch.Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        t = torch.empty(0, device=device, dtype=dtype)
        t.__class__ = cls
        t.requires_grad_(requires_grad)
        t._is_buffer = True
        t._buffer_persistent = bool(persistent)
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass
