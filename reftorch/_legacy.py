"""PyTorch's legacy constructors and tensor types: torch.Tensor(...), torch.FloatTensor & co, Tensor.new(...),
Tensor.type(...) and the new_* family.

The typed classes are not subclasses of Tensor (as in PyTorch, where `type(torch.FloatTensor([1]))` is
torch.Tensor): calling one builds a Tensor of its dtype on the cpu, and `isinstance(t, torch.FloatTensor)`
asks whether t is a cpu float32 tensor."""
from __future__ import annotations

import numbers
import warnings

import reftorch._creation as C
import reftorch._dtype as D
from ._device import as_device
from ._tensor import Size, Tensor
import reftorch.autograd.grad_mode as grad_mode

_OVERLOADS = (" * (*, torch.device device = None)\n{why} * (torch.Storage storage)\n * (Tensor other)\n"
              " * (tuple of ints size, *, torch.device device = None)\n"
              " * (object data, *, torch.device device = None)\n")


def _options(dt):
    return (f"TensorOptions(dtype={D.CPP_NAMES[dt.name]}, device=cpu, layout=Strided, requires_grad=false (default), "
            f"pinned_memory=false (default), memory_format=(nullopt))")


def _describe(x, deep=False):
    """An argument's type as PyTorch's argument parser names it (torch.dtype, list of [int] ...)."""
    if isinstance(x, D.dtype):
        return "torch.dtype"
    if deep and isinstance(x, (list, tuple)) and x:
        return f"{type(x).__name__} of [{', '.join(sorted({_describe(y) for y in x}))}]"
    return type(x).__name__


def _invalid(args, kwargs):
    got = [_describe(a) for a in args] + [f"{k}={_describe(v)}" for k, v in kwargs.items()]
    if kwargs:
        why = f"      didn't match because some of the keywords were incorrect: {', '.join(kwargs)}\n"
    else:
        why = ("      didn't match because some of the arguments have invalid types: ("
               + ", ".join(f"!{_describe(a, True)}!" for a in args) + ")\n")
    return TypeError(f"new() received an invalid combination of arguments - got ({', '.join(got)}), but expected "
                     f"one of:\n" + _OVERLOADS.format(why=why))


def _is_int(x):
    return (isinstance(x, numbers.Integral) and not isinstance(x, bool)) or \
        (isinstance(x, Tensor) and x.dim() == 0 and x.dtype.category == 1)


def legacy_new(dt, device, typed, args, kwargs):
    """The legacy constructor of dtype dt: (), (Tensor other), (*sizes), (Size), (data), with device= only."""
    kwargs = dict(kwargs)
    dev = kwargs.pop("device", None)
    if "size" in kwargs and not args:
        size = kwargs.pop("size")
        args = tuple(size) if isinstance(size, (tuple, list)) else (size,)
        if not args:
            return C.empty(0, dtype=dt, device=device)
    for name in ("data", "other"):
        if name in kwargs and not args:
            args = (kwargs.pop(name),)
    if kwargs:
        raise _invalid(args, kwargs)
    if dev is not None:
        dev = as_device(dev)
        if dev.type != device.type:
            raise RuntimeError(f"legacy constructor expects device type: {device.type} but device type: {dev.type} "
                               f"was passed")
    dev = dev or device
    if not args:
        return C.empty(0, dtype=dt, device=dev)
    first = args[0]
    if isinstance(first, Tensor):
        if len(args) > 1:
            raise _invalid(args, {})
        if typed and first.dtype is not dt:
            raise TypeError(f"expected {_options(dt)} (got {_options(first.dtype)})")
        return first.view_as(first) if first.requires_grad else first.detach()   # an alias of other's data
    if all(_is_int(a) for a in args) and not isinstance(first, Size) and len(args) >= 1:
        return C.empty(*[int(a) for a in args], dtype=dt, device=dev)
    if len(args) == 1 and isinstance(first, Size):
        return C.empty(tuple(first), dtype=dt, device=dev)
    if len(args) > 1:
        if _is_int(first):
            bad = next(a for a in args if not _is_int(a))
            pos = args.index(bad) + 1
            raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {pos} with error \"type must "
                            f"be tuple of ints,but got {type(bad).__name__}\"")
        raise _invalid(args, {})
    if isinstance(first, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(first).__name__}'")
    if not C._is_sequence(first):
        mod = type(first).__module__
        name = type(first).__name__ if mod == "builtins" else f"{mod}.{type(first).__name__}"
        raise TypeError(f"new(): data must be a sequence (got {name})")
    return C._from_data(first, dt, dev, False)


class tensortype(type):
    """The metaclass of torch.FloatTensor & co: calling one constructs, isinstance checks the dtype."""

    def __call__(cls, *args, **kwargs):
        return legacy_new(cls.dtype, as_device("cpu"), True, args, kwargs)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    def __subclasscheck__(cls, sub):
        return type.__subclasscheck__(cls, sub)


tensortype.__module__ = "reftorch"


def _typed(name, dt):
    return tensortype(name, (), {"dtype": dt, "is_cuda": False, "is_sparse": False, "layout": "torch.strided",
                                 "__module__": "reftorch", "__doc__": f"The legacy constructor of {dt} cpu tensors."})


TYPES = {name: _typed(name, dt) for name, dt in (
    ("FloatTensor", D.float32), ("DoubleTensor", D.float64), ("HalfTensor", D.float16),
    ("BFloat16Tensor", D.bfloat16), ("LongTensor", D.int64), ("IntTensor", D.int32), ("ShortTensor", D.int16),
    ("CharTensor", D.int8), ("ByteTensor", D.uint8), ("BoolTensor", D.bool_))}
_BY_DTYPE = {cls.dtype: name for name, cls in TYPES.items()}


def tensor_new(cls, *args, **kwargs):
    """torch.Tensor(...): the legacy constructor of the default dtype (a Tensor argument keeps its own)."""
    if cls is not Tensor:           # a subclass without a __new__ of its own: build a Tensor, then re-class it
        t = legacy_new(D.get_default_dtype(), as_device("cpu"), False, args, kwargs)
        t.__class__ = cls
        return t
    return legacy_new(D.get_default_dtype(), as_device("cpu"), False, args, kwargs)


def type_name(t):
    """'torch.FloatTensor', or 'torch.cuda.FloatTensor' on cuda."""
    name = _BY_DTYPE[t.dtype]
    return f"torch.cuda.{name}" if t.device.type == "cuda" else f"torch.{name}"


def _parse_type(dtype):
    """(dtype, device type or None) of a type() argument: a dtype, a legacy type class or its name."""
    if isinstance(dtype, D.dtype):
        return dtype, None
    if isinstance(dtype, tensortype):
        return dtype.dtype, "cpu"
    if dtype is Tensor:
        return D.get_default_dtype(), "cpu"
    if isinstance(dtype, str):
        parts = dtype.split(".")
        if parts == ["torch", "Tensor"]:
            return D.get_default_dtype(), "cpu"
        if len(parts) in (2, 3) and parts[0] == "torch" and parts[-1] in TYPES and \
                (len(parts) == 2 or parts[1] == "cuda"):
            return TYPES[parts[-1]].dtype, "cuda" if len(parts) == 3 else "cpu"
        raise ValueError(f"invalid type: '{dtype}'")
    if isinstance(dtype, type):
        mod = dtype.__module__
        raise ValueError(f"invalid type: '{dtype.__name__ if mod == 'builtins' else mod + '.' + dtype.__name__}'")
    raise TypeError("dtype must be a type, str, or dtype object")


def tensor_type(self, dtype=None, non_blocking=False, **kwargs):
    """t.type(): the type's name; t.type(x): t converted to x (a dtype, a type name or a legacy type class)."""
    dtype = kwargs.pop("dtype", dtype)
    kwargs.pop("async", None)
    if kwargs:
        raise TypeError(f"type() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if dtype is None:
        return type_name(self)
    dt, dev = _parse_type(dtype)
    if dt is self.dtype and (dev is None or dev == self.device.type):
        return self
    return self.to(device=dev, dtype=dt) if dev is not None else self.to(dt)


def tensor_new_method(self, *args, **kwargs):
    """t.new(...): the legacy constructor of t's dtype and device."""
    return legacy_new(self.dtype, self.device, True, args, kwargs)


# ------------------------------------------------------------------------------ new_* (the modern forms)

def _factory_kwargs(self, fname, kwargs):
    allowed = {"dtype", "device", "requires_grad", "layout", "pin_memory"}
    extra = set(kwargs) - allowed
    if extra:
        raise TypeError(f"{fname}() got an unexpected keyword argument '{sorted(extra)[0]}'")
    dt = C._dtype_arg(fname, kwargs.get("dtype"))
    dev = kwargs.get("device")
    return (dt or self.dtype, dev if dev is not None else self.device, bool(kwargs.get("requires_grad", False)))


def _new_sized(fill):
    def method(self, *args, **kwargs):
        fname = f"new_{fill}"
        shape = C._size_args(fname, args, kwargs.pop("size", None))
        dt, dev, rg = _factory_kwargs(self, fname, kwargs)
        return getattr(C, fill)(shape, dtype=dt, device=dev, requires_grad=rg)
    method.__name__ = f"new_{fill}"
    method.__doc__ = f"A tensor of {fill}s of this tensor's dtype and device unless told otherwise."
    return method


new_zeros, new_ones, new_empty = _new_sized("zeros"), _new_sized("ones"), _new_sized("empty")


def new_full(self, size, fill_value, **kwargs):
    dt, dev, rg = _factory_kwargs(self, "new_full", kwargs)
    return C.full(C._sequence_size("new_full", size), fill_value, dtype=dt, device=dev, requires_grad=rg)


def new_empty_strided(self, size, stride, **kwargs):
    dt, dev, rg = _factory_kwargs(self, "new_empty_strided", kwargs)
    return C.empty_strided(size, stride, dtype=dt, device=dev, requires_grad=rg)


def new_tensor(self, data, **kwargs):
    """A copy of data with this tensor's dtype and device unless told otherwise (no history)."""
    dt, dev, rg = _factory_kwargs(self, "new_tensor", kwargs)
    if isinstance(data, Tensor):
        warnings.warn(C._COPY_WARNING.format("tensor.new_tensor"), UserWarning, stacklevel=2)
    with grad_mode.no_grad():
        return C._from_data(data, dt, dev, rg)
