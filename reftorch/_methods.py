"""Tensor methods that are not ops of the registry: autograd state, conversion, view conveniences.

`bind()` also installs every generated op wrapper of ops.yaml as a method, its in-place variant and
its Python operators (reflected ones swap their operands)."""
from __future__ import annotations

import warnings

import numpy as np

import reftorch._chalf as _chalf
import reftorch._conj as _conj
import reftorch._dispatch as _dispatch
import reftorch._dtype as D
import reftorch._functional as F
import reftorch._indexing as _indexing
from ._indexing import _assign_with_history
import reftorch._layout as L
import reftorch._legacy as _legacy
import reftorch._methods_misc as _methods_misc
from ._device import as_device
import reftorch._meta as _meta
from ._tensor import Tensor
import reftorch.autograd.grad_mode as grad_mode
from ._args import check_inplace, check_no_internal_overlap
from ._cpu import cast_into, empty, run_elementwise
from ._spec import SPECS
from .autograd.record import record
from ._tensor import Storage
from .autograd._grad import backward
from .autograd.graph import RemovableHandle
from ._cuda_dispatch import move
from ._cuda_dispatch import clone
from ._cuda_dispatch import copy_into
from ._cuda_dispatch import write
import reftorch.kernels.api as api


# ------------------------------------------------------------------------------ autograd state

# `requires_grad` is a slot of Tensor; the property installed by bind() checks what PyTorch checks
# (integer tensors cannot require grad, non-leaves cannot stop) and keeps the value in that slot.
_REQUIRES_GRAD_SLOT = Tensor.__dict__["requires_grad"]
if isinstance(_REQUIRES_GRAD_SLOT, property):       # module re-imported after bind()
    _REQUIRES_GRAD_SLOT = Tensor._requires_grad_slot
Tensor._requires_grad_slot = _REQUIRES_GRAD_SLOT

_NON_LEAF_REQUIRES_GRAD = ("you can only change requires_grad flags of leaf variables. If you want to use a computed "
                           "variable in a subgraph that doesn't require differentiation use var_no_grad = "
                           "var.detach().")
_NON_LEAF_GRAD = ("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                  "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                  "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf "
                  "Tensor by mistake, make sure you access the leaf Tensor instead. See "
                  "github.com/pytorch/pytorch/pull/30531 for more information.")


def _get_requires_grad(self):
    return _REQUIRES_GRAD_SLOT.__get__(self, Tensor)


def _set_requires_grad(self, value):
    value = bool(value)
    if value and not self.dtype.differentiable:
        raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
    if not value and getattr(self, "grad_fn", None) is not None:
        raise RuntimeError(_NON_LEAF_REQUIRES_GRAD)
    if value and self._storage.inference and not grad_mode.state.inference:
        raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
    _REQUIRES_GRAD_SLOT.__set__(self, value)


def _requires_grad_(self, requires_grad=True):
    if requires_grad and not self.dtype.differentiable:
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    _set_requires_grad(self, requires_grad)
    return self


def _get_grad(self):
    if self.grad_fn is not None and not self._retains_grad and self._grad is None:
        import warnings
        warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
    return self._grad


def _set_grad(self, value):
    if value is not None:
        if not isinstance(value, Tensor):
            raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                            f"{type(value).__name__}")
        if tuple(value._shape) != tuple(self._shape):
            raise RuntimeError("assigned grad has data of a different size")
        if value.dtype is not self.dtype:
            raise RuntimeError("assigned grad has data of a different type")
    self._grad = value


def _detach(self):
    """A tensor sharing self's storage (and version counter) with no history."""
    out = Tensor._make(self._storage, self._offset, self._shape, self._strides, self.dtype, self.device)
    if self._conj or self._neg:     # the same values: a conjugate/negative view's bits too (reftorch/_conj.py)
        out._conj, out._neg = self._conj, self._neg
    if self._vmap is not None:      # inside vmap: the whole batch detached, still batched (func/_vmap.py)
        out._vmap = (self._vmap[0], _detach(self._vmap[1]))
    return out


def _detach_(self):
    if self._base is not None:
        raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                           "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, "
                           "gradients are views of DDP buckets, and hence detach_() cannot be called on these "
                           "gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
                           "torch/optim/optimizer.py as the solution.")
    self.grad_fn = None
    self._output_nr = 0
    self.requires_grad = False
    return self


def _data_get(self):
    """Like detach(), but with a version counter of its own: in-place changes through .data are
    invisible to autograd (PyTorch's classic .data semantics)."""
    storage = Storage(self._storage.data)
    storage.inference = self._storage.inference      # a view of an inference tensor is one
    out = Tensor._make(storage, self._offset, self._shape, self._strides, self.dtype, self.device)
    if self._vmap is not None:      # inside vmap: the whole batch, still batched (func/_vmap.py)
        out._vmap = (self._vmap[0], _data_get(self._vmap[1]))
    return out


def _data_set(self, value):
    self._storage, self._offset, self._shape, self._strides = value._storage, value._offset, value._shape, \
        value._strides
    self.dtype = value.dtype
    self.device = value.device


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def _retain_grad(self):
    """Keep this non-leaf's gradient in .grad during backward (after its hooks have run)."""
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is None or self._retains_grad:
        return
    import weakref
    self._retains_grad = True
    node = self.grad_fn
    if node._retains_grad is None:
        node._retains_grad = {}
    node._retains_grad[self._output_nr] = weakref.ref(self)


def _register_hook(self, hook):
    """hook(grad) runs when this tensor's gradient is computed; a returned tensor replaces the grad."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is None:
        if self._hooks is None:
            self._hooks = []
        return RemovableHandle.add(self._hooks, hook)
    return self.grad_fn._add_tensor_pre_hook(self._output_nr, hook)


def _register_post_accumulate_grad_hook(self, hook):
    """hook(tensor) runs after a leaf's .grad was accumulated."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    return RemovableHandle.add(self.__dict__.setdefault("_post_accumulate_hooks", []), hook)


# ------------------------------------------------------------------------------ conversion

def _to(self, *args, **kwargs):
    dtype, device = None, None
    # to(device, dtype, non_blocking, copy), to(dtype, non_blocking, copy), to(other, non_blocking, copy):
    # the positional bools after the target are non_blocking and copy
    flags = [a for a in args if isinstance(a, bool)]
    args = [a for a in args if not isinstance(a, bool)]
    if len(flags) > 2:
        raise TypeError(f"to() takes at most 2 positional bools (non_blocking, copy), got {len(flags)}")
    copy = kwargs.pop("copy", flags[1] if len(flags) == 2 else False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    for a in list(args) + [kwargs.pop("dtype", None), kwargs.pop("device", None)]:
        if a is None:
            continue
        if isinstance(a, D.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        else:
            device = as_device(a)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if device is not None and device != self.device:
        if "meta" in (device.type, self.device.type):
            return _meta.move(self, device, dtype)      # geometry only; off meta: PyTorch's error
        return move(_conj.resolved(self), device, dtype)     # a conjugate/negative view: its values cross
    if dtype is None or dtype is self.dtype:
        return F.clone(self) if copy else self
    return _convert(self, dtype)


def _convert(self, dtype):
    """A copy in another dtype; differentiable (the engine casts the gradient back)."""
    spec = SPECS["clone"]
    if self.dtype.is_complex and dtype is D.bool_:      # either part nonzero, as PyTorch's (no warning)
        return F.ne(self, 0)
    if self.dtype.is_complex and not dtype.is_complex:     # PyTorch keeps the real part, and says so
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=3)
        self = F.real(self)
        if self.dtype is dtype:
            return F.clone(self)
    if self.device.type != "cpu":
        out = _meta.like(self, dtype) if self.device.type == "meta" else clone(self, dtype)
        if grad_mode.state.enabled and self.requires_grad and dtype.differentiable:
            record(spec, (self,), (), (out,))
        return out
    out = empty(self._shape, dtype)
    if dtype is D.complex32 or self.dtype is D.complex32:      # (reftorch/_chalf.py)
        D.note_chalf()
        out._raw_array()[...] = _chalf.host_values(self, dtype)
    elif dtype.half or self.dtype.half:   # to or from a 16-bit float: NumPy's cast rounds to nearest even
        if not cast_into(self, out):      # (float32 <-> 16 bits: the same rounding in a kernel)
            with np.errstate(over="ignore", invalid="ignore"):
                out._array()[...] = self._array()
    else:
        run_elementwise(spec, [self], [], out)
    if grad_mode.state.enabled and self.requires_grad and dtype.differentiable:
        record(spec, (self,), (), (out,))
    if _dispatch._forward is not None:      # a transform is on: forward AD's tangent follows, vmap converts
        return _dispatch._forward.converted(self, out)     # the whole batch (autograd/forward_ad.py, func/_vmap.py)
    return out


def _contiguous(self, memory_format=None):
    if self.is_contiguous():
        return self
    return F.clone(self)


def _cpu(self):
    return _to(self, "cpu") if self.device.type != "cpu" else self


def _cuda(self, device=None, non_blocking=False):
    dev = as_device("cuda" if device is None else (device if not isinstance(device, int) else f"cuda:{device}"))
    return _to(self, dev)


def _copy_(self, src, non_blocking=False):
    src = F.as_tensor(src)
    shape = L.broadcast_shapes(self._shape, src._shape)
    if shape != self._shape:
        raise RuntimeError(f"output with shape [{', '.join(map(str, self._shape))}] doesn't match the broadcast "
                           f"shape [{', '.join(map(str, shape))}]")
    check_inplace(self)
    check_no_internal_overlap(self)
    if src.device != self.device:
        src = src.to(self.device)       # copy_ moves between devices, as in PyTorch (off meta: its error)
    if self.device.type == "meta" and not (grad_mode.state.enabled and (src.requires_grad or self.requires_grad)):
        self._storage.version += 1      # nothing to write
        return self
    if self._conj or self._neg:     # a conjugate/negative view: its storage takes the conjugates (reftorch/_conj.py)
        return _conj.write_through(self, lambda: F.expand(src.to(self.dtype), self._shape), (src,))
    if grad_mode.state.enabled and (src.requires_grad or self.requires_grad) or _dispatch._forward is not None:
        new = F.expand(src.to(self.dtype), self._shape)     # (also while a transform is on: tangents follow)
        _assign_with_history(self, new)
        return self
    if self.device.type == "cuda":
        copy_into(self, clone(src) if src._storage is self._storage else src)
        self._storage.version += 1
        return self
    val = src._array() if D.complex32 not in (self.dtype, src.dtype) else _chalf.host_values(src, self.dtype)
    if np.may_share_memory(val, self._storage.data):
        val = val.copy()
    self._raw_array()[...] = val        # (complex32's pairs; self has no conjugate/negative bit here)
    self._storage.version += 1
    return self


def _fill_(self, value):
    check_inplace(self)
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        value = value.item()        # (copied as a tensor: a complex one into a real tensor keeps its real part)
        if isinstance(value, complex) and not self.dtype.is_complex:
            value = value != 0 if self.dtype is D.bool_ else value.real
    value = D.fill_value(value, self.dtype)
    if grad_mode.state.enabled and self.requires_grad:
        _assign_with_history(self, F.full(self._shape, value, dtype=self.dtype, device=self.device) * 1.0 + 0 * self)
        return self
    if self.device.type == "meta":
        self._storage.version += 1
        return self
    if self.device.type == "cuda":
        write(self, np.full(self._shape, value, self.dtype.np))
        self._storage.version += 1
        return self
    if self._conj or self._neg:     # reftorch/_conj.py: the storage takes the value's conjugate/negation
        return _conj.write_through(self, lambda: F.full(self._shape, value, dtype=self.dtype))
    self._raw_array()[...] = value if self.dtype is not D.complex32 else D.to_chalf(value)
    self._storage.version += 1
    return self


def _zero_(self):
    return _fill_(self, 0)


# ------------------------------------------------------------------------------ views

def _sizes(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(int(s) for s in size)


def _view(self, *size, dtype=None):
    if dtype is not None and not size:
        size = (dtype,)
    if len(size) == 1 and isinstance(size[0], D.dtype):
        return _methods_misc._view_dtype(self, size[0])      # bit reinterpretation
    for i, s in enumerate(size):
        if isinstance(s, D.dtype):
            raise TypeError(f"view(): argument 'size' failed to unpack the object at pos {i + 1} with error "
                            f"\"type must be tuple of ints,but got torch.dtype\"")
    return F.view(self, _sizes(size))


def _reshape(self, *shape):
    return F.reshape(self, _sizes(shape))


def _expand(self, *size):
    return F.expand(self, _sizes(size))


def _permute(self, *dims):
    return F.permute(self, _sizes(dims))


def _repeat(self, *sizes):
    return F.repeat(self, _sizes(sizes))


def _tile(self, *dims):
    return F.tile(self, _sizes(dims))


def _flip(self, *dims, **kw):
    if "dims" in kw:        # Tensor.flip(dims=...) as well as flip(0, 1) and flip((0, 1))
        if dims:
            raise TypeError("flip() got multiple values for argument 'dims'")
        dims = (kw.pop("dims"),)
    if kw:
        raise TypeError(f"flip() got an unexpected keyword argument '{next(iter(kw))}'")
    return F.flip(self, _sizes(dims))


def _sum_to_size(self, *size):
    return F.sum_to_size(self, _sizes(size))


def _T(self):
    return F.permute(self, tuple(reversed(range(self.ndim))))


def _mT(self):
    if self.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return F.transpose(self, -2, -1)


def _H(self):
    """x.H / x.mH: the conjugate transpose; of a complex tensor a view with the conjugate bit (reftorch/_conj.py)."""
    return _T(self).conj() if self.dtype.is_complex else _T(self)


def _mH(self):
    return _mT(self).conj() if self.dtype.is_complex else _mT(self)


def _expand_as(self, other):
    return F.expand(self, other.shape)


def _view_as(self, other):
    return F.view(self, other.shape)


def _reshape_as(self, other):
    return F.reshape(self, other.shape)


def _type_as(self, other):
    return _to(self, other.dtype)


METHODS = {
    "grad": property(_get_grad, _set_grad),
    "data": property(_data_get, _data_set),
    "requires_grad": property(_get_requires_grad, _set_requires_grad), "requires_grad_": _requires_grad_,
    "detach": _detach, "detach_": _detach_, "backward": _backward, "retain_grad": _retain_grad,
    "retains_grad": property(lambda self: self._retains_grad),
    "register_hook": _register_hook, "register_post_accumulate_grad_hook": _register_post_accumulate_grad_hook,
    "to": _to, "type": _legacy.tensor_type, "new": _legacy.tensor_new_method, "contiguous": _contiguous,
    "cpu": _cpu, "cuda": _cuda,
    "float": lambda self, memory_format=None: _to(self, D.float32),
    "double": lambda self, memory_format=None: _to(self, D.float64),
    "long": lambda self, memory_format=None: _to(self, D.int64),
    "int": lambda self, memory_format=None: _to(self, D.int32),
    "short": lambda self, memory_format=None: _to(self, D.int16),
    "char": lambda self, memory_format=None: _to(self, D.int8),
    "byte": lambda self, memory_format=None: _to(self, D.uint8),
    "bool": lambda self, memory_format=None: _to(self, D.bool_),
    "half": lambda self, memory_format=None: _to(self, D.float16),
    "bfloat16": lambda self, memory_format=None: _to(self, D.bfloat16),
    "type_as": _type_as,
    "copy_": _copy_, "fill_": _fill_, "zero_": _zero_,
    "new_zeros": _legacy.new_zeros, "new_ones": _legacy.new_ones, "new_empty": _legacy.new_empty,
    "new_full": _legacy.new_full, "new_tensor": _legacy.new_tensor, "new_empty_strided": _legacy.new_empty_strided,
    "view": _view, "reshape": _reshape, "expand": _expand, "permute": _permute,
    "__getitem__": _indexing.getitem, "__setitem__": _indexing.setitem, "index_put_": _indexing.index_put_,
    "T": property(_T), "mT": property(_mT), "H": property(_H), "mH": property(_mH),
    "expand_as": _expand_as, "view_as": _view_as, "reshape_as": _reshape_as,
}


def bind():
    """Install op wrappers of ops.yaml as Tensor methods, in-place variants and operators."""
    for name, spec in api.SPECS.items():
        fn = getattr(api, name)
        if spec["method"]:
            if name not in METHODS:
                setattr(Tensor, name, fn)
            for alias in spec["aliases"]:
                setattr(Tensor, alias, fn)
        if spec["inplace"]:
            setattr(Tensor, name + "_", getattr(api, name + "_"))
            for alias in spec["aliases"]:
                setattr(Tensor, alias + "_", getattr(api, name + "_"))
        for op in spec["operators"]:
            setattr(Tensor, op, _operator(op, name, api, spec.get("commutative", False), spec.get("numpy_left", False)))
    for name, value in METHODS.items():
        setattr(Tensor, name, value)
    extra = {"repeat": _repeat, "tile": _tile, "flip": _flip, "sum_to_size": _sum_to_size}
    for name, fn in extra.items():
        if hasattr(api, name):
            setattr(Tensor, name, fn)
    Tensor.requires_grad_ = _requires_grad_
    Tensor.__new__ = staticmethod(_legacy.tensor_new)     # torch.Tensor(data) / Tensor(*sizes) / Tensor()
    for name, value in _methods_misc.METHODS.items():
        setattr(Tensor, name, value)
    for old, new in (("__div__", "__truediv__"), ("__rdiv__", "__rtruediv__"), ("__idiv__", "__itruediv__")):
        setattr(Tensor, old, getattr(Tensor, new))     # Python 2's names, which PyTorch keeps


def _operator(dunder, name, api, commutative=False, numpy_left=False):
    fn = getattr(api, name)
    if dunder.startswith("__i") and dunder not in ("__invert__", "__index__"):
        inplace = getattr(api, name + "_")
        return lambda self, other: inplace(self, other)
    reflects = dunder.startswith("__r") and dunder not in ("__rshift__",) or dunder == "__rrshift__"
    if reflects and numpy_left:
        return fn if commutative else (lambda self, other: fn(other, self))
    if reflects:
        # PyTorch's reflected operators take a Tensor or a Python number: for a NumPy array on the left they return
        # NotImplemented, so np.ones(3) + t raises NumPy's TypeError (ops.yaml numpy_left: the exceptions)
        def reflected(self, other):
            if isinstance(other, np.ndarray):
                return NotImplemented
            return fn(self, other) if commutative else fn(other, self)     # commutative: the tensor's edge first
        return reflected
    if dunder in ("__eq__", "__ne__"):
        def compare(self, other):
            if other is None or not isinstance(other, (Tensor, int, float, bool, complex, np.number, np.ndarray, list)):
                return NotImplemented if dunder == "__eq__" else True
            return fn(self, other)
        return compare
    return fn
