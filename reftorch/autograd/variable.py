"""torch.autograd.Variable: the pre-0.4 wrapper, today a constructor of plain Tensors.

`Variable(t)` is a tensor sharing t's data with no history, `requires_grad=` sets its flag, and
`isinstance(x, Variable)` holds for every tensor (as in PyTorch)."""
from __future__ import annotations

import warnings

from .._tensor import Tensor
import reftorch._creation as _creation


class VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


_ARGS = ("data", "requires_grad", "volatile", "_grad_fn", "name")


class Variable(metaclass=VariableMeta):
    """Variable(data=None, requires_grad=False, volatile=False): data detached (same memory) as a Tensor."""

    def __new__(cls, *args, **kwargs):
        if len(args) > len(_ARGS):
            raise TypeError(f"Variable() takes at most {len(_ARGS)} arguments ({len(args)} given)")
        given = dict(zip(_ARGS, args))
        for k, v in kwargs.items():
            if k not in _ARGS or k in given:
                raise TypeError(f"'{k}' is an invalid keyword argument for this function")
            given[k] = v
        data, requires_grad = given.get("data"), bool(given.get("requires_grad", False))
        volatile = bool(given.get("volatile", False))
        if volatile and requires_grad:
            raise ValueError("Variable can't be volatile and require_grad at the same time!")
        if given.get("_grad_fn") is not None:
            raise TypeError("_grad_fn has to be a Function object or None, but got "
                            f"{type(given['_grad_fn']).__name__}")
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            data = _creation.empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        t = data.detach()
        if requires_grad:
            if not t.dtype.differentiable:
                raise RuntimeError(_creation._GRAD_DTYPE_ERROR)
            t.requires_grad_(True)
        if given.get("name") is not None:
            t._name = str(given["name"])
        return t


Variable.__module__ = "reftorch.autograd.variable"


def variable(*args, **kwargs):
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")
