"""Tensor methods PyTorch has for strided tensors that are not ops: Python protocol methods, storage and
geometry queries, resize_/set_, the per-element Python callbacks, and the real-tensor forms of the complex
and sparse queries (identity / False / 0, or PyTorch's error)."""
from __future__ import annotations

import enum
import functools
import mmap
import operator
import warnings

import numpy as np

from ._args import check_inference_write, check_inplace
import reftorch._conj as _conj
import reftorch._dtype as D
import reftorch._layout as L
import reftorch._functional as F
from ._tensor import Storage, Tensor
import reftorch.autograd.grad_mode as grad_mode
import reftorch._legacy as _legacy
import reftorch.cuda as cuda
from ._cuda_dispatch import numpy_error
from ._device import CPU, no_kernel
from ._creation import _copy_tensor, _rebuild
import reftorch._meta as _meta
from ._repr import tensor_repr


# ------------------------------------------------------------------------------ Python protocols

def _contains(self, element):
    if isinstance(element, (Tensor, int, float, bool, np.number, np.bool_)):
        return bool((element == self).any().item())
    raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}.")


def _reversed(self):
    return self if self.dim() == 0 else F.flip(self, (0,))


def _long(self):
    return int(self.item())


def _array_wrap(self, array, context=None, return_scalar=False):
    """NumPy hands back a ufunc's result on a tensor as a tensor (bool results as uint8, as PyTorch does)."""
    if array.dtype == bool:
        array = array.astype("uint8")
    return Tensor._from_array(array)


def _setstate(self, state):
    """Legacy pickles: (storage-like source, offset, size, stride) or (requires_grad, _, backward_hooks)."""
    if not self.is_leaf:
        raise RuntimeError("__setstate__ can be only called on leaf Tensors")
    if len(state) == 4:
        _set_(self, *state)
        return
    if len(state) == 5:
        self.data = state[0]
        state = (state[3], state[4], state[2])
    self.requires_grad = state[0]


class DLDeviceType(enum.IntEnum):
    kDLCPU = 1
    kDLCUDA = 2


def _dlpack_device(self):
    if self.device.type == "cuda":
        return (DLDeviceType.kDLCUDA, self.device.index or 0)
    return (DLDeviceType.kDLCPU, 0)


def _dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule of this cpu tensor (NumPy's exporter over the same memory)."""
    if self.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    if self._conj:      # (its memory holds the conjugates)
        raise BufferError("Can't export tensors with the conjugate bit set")
    if self.device.type != "cpu":
        return self._storage.data.__dlpack__(stream=stream) if self.is_contiguous() else \
            self.contiguous()._storage.data.__dlpack__(stream=stream)
    kw = {} if max_version is None else {"max_version": max_version}
    if copy is not None:
        kw["copy"] = copy
    return self._array().__dlpack__(**kw)


# ------------------------------------------------------------------------------ queries

def _is_nonzero(self):
    if self._vmap is not None:      # inside vmap: control flow on one sample's view (PyTorch's error)
        self._refuse_in_vmap("bool")
    n = self.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item())


def _is_set_to(self, other):
    return (self._storage is other._storage and self._offset == other._offset and self._shape == other._shape
            and tuple(self._strides) == tuple(other._strides))


def _get_device(self):
    return self.device.index or 0 if self.device.type == "cuda" else -1


def _dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (PyTorch's rule: a contiguous tensor is 0..n-1)."""
    if ambiguity_check is not False and not isinstance(ambiguity_check, (bool, list)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    shape, strides = self._shape, self._strides
    if ambiguity_check is True and len(shape) > 1 and (1 in shape or len(set(strides)) < len(strides)):
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                           "memory formats.")
    if L.is_contiguous(shape, strides):
        return tuple(range(len(shape)))
    perm = list(reversed(range(len(shape))))
    for i in range(1, len(shape)):          # insertion sort, back to front (torch._prims_common)
        d1 = i
        for d0 in reversed(range(i)):
            a, b = perm[d0], perm[d1]
            sa, sb = strides[a], strides[b]
            cmp = 0
            if sa != 0 and sb != 0:
                cmp = -1 if sa < sb else 1 if sa > sb else (1 if shape[a] > shape[b] else 0)
            if cmp > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif cmp < 0:
                break
    return tuple(reversed(perm))


def _sparse_only(name):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"{name} expected sparse coordinate tensor layout but got Strided")
    method.__name__ = name
    return method


def _sum_to_size(self, *size):
    """Tensor.sum_to_size(*size) or (size): the registry's op (ops.yaml sum_to_size)."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    return F.sum_to_size(self, shape)


def _backend_name(t):
    return ("Sparse" if t.is_sparse else "") + ("CUDA" if t.device.type == "cuda" else "CPU")


def qscheme(self):
    """The quantization scheme of a quantized tensor: reftorch has none, and PyTorch refuses any other tensor."""
    if self.device.type == "meta":
        raise NotImplementedError("aten::qscheme: attempted to run this operator with Meta tensors, but there was no "
                                  "fake impl or Meta kernel registered.")
    raise no_kernel("qscheme", _backend_name(self))


def record_stream(self, s):
    """Tell the caching allocator that stream s uses this tensor's memory. reftorch has no stream objects of its
    own and launches every kernel on the default stream: a stream (numba.cuda's) given for a cuda tensor has
    nothing to record. PyTorch refuses a cpu tensor, and any argument that is not a stream."""
    if type(s).__name__ != "Stream":
        raise RuntimeError("unknown parameter type")
    if self.device.type == "cpu":
        raise no_kernel("record_stream", _backend_name(self))


# ------------------------------------------------------------------------------ storage geometry

def _resize_(self, *sizes, memory_format=None):
    """Reshape in place to sizes, contiguous (strides kept when the shape is unchanged); the storage grows,
    keeping its values, when it is too small."""
    shape = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    shape = tuple(int(s) for s in shape)
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    check_inference_write(self)
    if any(s < 0 for s in shape):
        raise RuntimeError("numel: integer multiplication overflow" if len(shape) == 1 else
                           f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    if shape == self._shape:
        return self
    strides = L.contiguous_strides(shape)
    need = self._offset + L.numel(shape)
    storage = self._storage
    if self.device.type != "cpu" and need > storage.data.shape[0]:
        raise RuntimeError("resize_ beyond the storage's size is supported on cpu tensors only")
    if need > storage.data.shape[0]:
        grown = np.empty(need, storage.data.dtype)
        grown[:storage.data.shape[0]] = storage.data
        storage.data = grown            # every view of this storage sees the grown buffer, as in PyTorch
    self._shape, self._strides = shape, strides
    return self


def _resize(self, *sizes):
    """The deprecated out-of-place resize: a differentiable reshape that keeps the number of elements."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _autograd_resize(self, sizes)


def _resize_as(self, tensor):
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _autograd_resize(self, tuple(tensor.size()))


def _autograd_resize(self, sizes):
    total = functools.reduce(operator.mul, sizes, 1)
    if self.numel() != total:
        raise RuntimeError(f"requested resize to {'x'.join(map(str, sizes))} ({total} elements in total), but the "
                           f"given tensor has a size of {'x'.join(map(str, self._shape))} ({self.numel()} elements). "
                           "autograd's resize can only change the shape of a given tensor, while preserving the "
                           "number of elements. ")
    return F.reshape(self.contiguous(), tuple(sizes))


def _resize_as_(self, other, memory_format=None):
    return _resize_(self, other._shape)


def _set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make self a view of source's storage (a tensor, or a storage of this module), or of an empty one."""
    check_inplace(self)
    if source is None:
        self._storage = type(self._storage)(np.empty(0, self._storage.data.dtype))
        self._offset, self._shape, self._strides = 0, (0,), (1,)
        return self
    if isinstance(source, (TypedStorage, UntypedStorage)):
        storage, dtype = source._storage, source._tensor_dtype
    elif isinstance(source, Tensor):
        storage, dtype = source._storage, source.dtype
    else:
        raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not {type(source).__name__}")
    if dtype is not self.dtype:
        raise RuntimeError(f"Could not set tensor of type {D.CPP_NAMES[dtype.name]} to a tensor of type "
                           f"{D.CPP_NAMES[self.dtype.name]}")
    if isinstance(source, Tensor) and size is None:
        self._storage, self._offset, self._shape, self._strides = (source._storage, source._offset, source._shape,
                                                                   source._strides)
        return self
    shape = tuple(size) if size is not None else (storage.data.shape[0] - storage_offset,)
    strides = tuple(stride) if stride is not None else L.contiguous_strides(shape)
    self._storage, self._offset, self._shape, self._strides = storage, int(storage_offset), shape, strides
    return self


def _share_memory_(self):
    """Move the storage into shared memory (an anonymous shared mapping, which forked workers share)."""
    storage = self._storage
    if self.device.type == "cpu" and not _is_shared(self):
        data = storage.data
        buf = mmap.mmap(-1, max(data.nbytes, 1))
        shared = np.frombuffer(buf, dtype=data.dtype, count=data.shape[0])
        shared[...] = data
        storage.data = shared
    return self


def _is_shared(self):
    base = self._storage.data
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return isinstance(base, mmap.mmap) or self.device.type == "cuda"


def _pin_memory(self, device=None):
    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return self.clone()             # page-locked host memory is not modelled: a plain host copy


# ------------------------------------------------------------------------------ Python callbacks

def _check_callback(self, name):
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    if self.device.type != "cpu":
        raise TypeError(f"{name}_ is only implemented on CPU tensors")


def _write_back(self, values):
    arr = self._array()
    with np.errstate(invalid="ignore", over="ignore"):
        arr[...] = np.asarray(values, dtype=np.float64 if self.dtype.is_floating_point else object).reshape(
            arr.shape).astype(arr.dtype) if arr.size else arr
    self._storage.version += 1
    return self


def _apply_(self, callable):
    _check_callback(self, "apply_")
    vals = [callable(v) for v in self._array().reshape(-1).tolist()]
    return _write_back(self, [_cast(v, self) for v in vals])


def _map_(self, tensor, callable):
    _check_callback(self, "map_")
    other = F.expand(tensor, self._shape)
    vals = [callable(a, b) for a, b in zip(self._array().reshape(-1).tolist(), other._array().reshape(-1).tolist())]
    return _write_back(self, [_cast(v, self) for v in vals])


def _map2_(self, x, y, callable):
    _check_callback(self, "map2_")
    xs, ys = F.expand(x, self._shape), F.expand(y, self._shape)
    flat = zip(self._array().reshape(-1).tolist(), xs._array().reshape(-1).tolist(), ys._array().reshape(-1).tolist())
    return _write_back(self, [_cast(callable(a, b, c), self) for a, b, c in flat])


def _cast(v, t):
    """A callback's Python result converted as PyTorch converts it into t's dtype (integers truncate)."""
    if t.dtype.category == 2:
        return float(v)
    if t.dtype.category == 0:
        return bool(v)
    return int(v)


def _module_load(self, other, assign=False):
    """What Module.load_state_dict stores for this parameter or buffer: other (assign) or self filled from it."""
    if assign:
        return other.detach()
    with grad_mode.no_grad():
        return self.copy_(other).detach()


# ------------------------------------------------------------------------------ storages

class UntypedStorage:
    """The bytes under a tensor (torch.UntypedStorage): shares memory with every tensor viewing it."""

    def __init__(self, storage, dtype):
        self._storage, self._tensor_dtype = storage, dtype

    def nbytes(self):
        return self._storage.data.nbytes

    def __len__(self):
        return self.nbytes()

    def size(self):
        return self.nbytes()

    def data_ptr(self):
        return self._storage.data.__array_interface__["data"][0]

    @property
    def device(self):
        return CPU

    def tolist(self):
        return self._storage.data.view(np.uint8).tolist()

    def __getitem__(self, i):
        return self._storage.data.view(np.uint8)[i].tolist()


class TypedStorage(UntypedStorage):
    """The elements under a tensor (torch.TypedStorage, what tensor.storage() returns)."""

    @property
    def dtype(self):
        return self._tensor_dtype

    def size(self):
        return self._storage.data.shape[0]

    __len__ = size

    def element_size(self):
        return self._tensor_dtype.itemsize

    def tolist(self):
        return self._storage.data.tolist()

    def __getitem__(self, i):
        return self._storage.data[i].tolist()

    def __setitem__(self, i, value):
        self._storage.data[i] = value
        self._storage.version += 1

    def untyped(self):
        return UntypedStorage(self._storage, self._tensor_dtype)

    def _untyped_storage(self):
        return self.untyped()


STORAGE_TYPES = {name.replace("Tensor", "Storage"): type(name.replace("Tensor", "Storage"), (TypedStorage,),
                                                           {"__module__": "reftorch"})
                 for name in _legacy.TYPES}


def _storage_type(self):
    return STORAGE_TYPES[_legacy._BY_DTYPE[self.dtype].replace("Tensor", "Storage")]


# ------------------------------------------------------------------ printing, pickling, copy.deepcopy

def _reduce_ex(self, proto):
    if self.device.type == "meta":      # its geometry is all there is
        return (_meta.rebuild, (self._shape, self._strides, self.dtype.name, self.requires_grad))
    if self.device.type != "cpu":       # unpickled onto the same device
        return (_rebuild, (L.contiguous_array(self._array()), self.dtype.name, self.requires_grad, str(self.device)))
    return (_rebuild, (L.contiguous_array(self._array()), self.dtype.name, self.requires_grad))


def _deepcopy(self, memo):
    if id(self) in memo:
        return memo[id(self)]
    t = _copy_tensor(self)
    memo[id(self)] = t
    return t


METHODS = {
    "__repr__": tensor_repr, "__str__": tensor_repr, "__reduce_ex__": _reduce_ex, "__deepcopy__": _deepcopy,
    "__contains__": _contains, "__reversed__": _reversed, "__long__": _long, "__nonzero__": Tensor.__bool__,
    "__array_wrap__": _array_wrap, "__setstate__": _setstate, "__dlpack__": _dlpack,
    "__dlpack_device__": _dlpack_device,
    "is_pinned": lambda self, device=None: False, "pin_memory": _pin_memory,
    "share_memory_": _share_memory_, "is_shared": _is_shared, "get_device": _get_device,
    "is_signed": lambda self: self.dtype.is_signed, "is_nonzero": _is_nonzero,
    "is_same_size": lambda self, other: self._shape == other._shape, "is_set_to": _is_set_to,
    "is_neg": lambda self: self._neg,       # the negative bit (reftorch/_conj.py); _neg_view/resolve_neg: ops.yaml
    "is_conj": lambda self: self._conj,     # the lazy conjugate bit (reftorch/_conj.py); conj/resolve_conj: ops.yaml
    "is_distributed": lambda self: False,
    "dim_order": _dim_order, "const_data_ptr": lambda self: self.data_ptr(),
    "mutable_data_ptr": lambda self: self.data_ptr(),
    "dense_dim": lambda self: self.dim(), "sparse_dim": lambda self: 0,
    "is_coalesced": _sparse_only("is_coalesced"), "coalesce": _sparse_only("coalesce"),
    "indices": _sparse_only("indices"), "values": _sparse_only("values"),
    "to_dense": lambda self, dtype=None, *, masked_grad=None: self if dtype is None else self.to(dtype),
    "sum_to_size": _sum_to_size, "qscheme": qscheme, "record_stream": record_stream,
    "resize_": _resize_, "resize_as_": _resize_as_, "set_": _set_, "resize": _resize, "resize_as": _resize_as,
    "apply_": _apply_, "map_": _map_, "map2_": _map2_, "module_load": _module_load,
    "untyped_storage": lambda self: self._vmap is not None and self._refuse_in_vmap("storage") or
    UntypedStorage(self._storage, self.dtype),
    "storage": lambda self: TypedStorage(self._storage, self.dtype), "storage_type": _storage_type,
}

FUNCTIONS = {   # their torch.* forms
    "get_device": _get_device, "is_nonzero": _is_nonzero, "is_same_size": METHODS["is_same_size"],
    "is_signed": METHODS["is_signed"], "is_neg": METHODS["is_neg"],
    "is_conj": METHODS["is_conj"], "is_distributed": METHODS["is_distributed"],
    "is_complex": lambda input: input.is_complex(),
}


# ------------------------------------------------------------------------------ operators (issue 16, point 5)

def positive(input):
    """+t: t itself (PyTorch refuses bool tensors)."""
    if input.dtype.category == 0:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def check_condition(condition):
    """where's condition must be bool (uint8 still works, with PyTorch's deprecation warning)."""
    if isinstance(condition, Tensor) and condition.dtype is D.uint8:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a "
                      "future version of PyTorch. Use a boolean condition instead.", UserWarning, stacklevel=3)
    elif isinstance(condition, Tensor) and condition.dtype.category != 0:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{condition.dtype.short}")


def _tensor_where(self, condition=None, other=None):
    """t.where(condition, y): t where condition holds, y elsewhere (torch.where(condition, t, y))."""
    if condition is None or other is None:
        got = ", ".join(["Tensor"] + [type(x).__name__ for x in (condition, other) if x is not None])
        raise TypeError(f"where() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        " * (Tensor condition, Tensor other)\n * (Tensor condition, Number other)\n")
    check_condition(condition)
    return F.where(condition, self, other)


def _check_tensor(fname, name, pos, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")


def equal(input, other):
    """True when both have the same shape and the same values (NaN is unequal to itself)."""
    _check_tensor("equal", "input", 1, input)
    _check_tensor("equal", "other", 2, other)
    if input._shape != other._shape:
        return False
    return bool(F.all(input == other).item())


def _tol(x):
    return f"{x:g}" if isinstance(x, float) else str(x)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| elementwise, broadcasting; inf equals inf of its sign."""
    _check_tensor("isclose", "input", 1, input)
    _check_tensor("isclose", "other", 2, other)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype.short} did not match {other.dtype.short}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {_tol(rtol)}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {_tol(atol)}")
    with grad_mode.no_grad():
        close = input == other
        inexact = input.dtype.is_floating_point or input.dtype.is_complex
        if equal_nan and inexact:
            close = close | (F.isnan(input) & F.isnan(other))
        if rtol == 0 and atol == 0:
            return close
        if not inexact:      # errors computed in the default float dtype (no wrap-around)
            input, other = input.to(D.get_default_dtype()), other.to(D.get_default_dtype())
        allowed = atol + F.abs(rtol * other)
        actual = F.abs(input - other)
        return close | (F.isfinite(actual) & (actual <= allowed))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """isclose everywhere, as a Python bool."""
    return bool(F.all(isclose(input, other, rtol, atol, equal_nan)).item())


def _view_dtype(self, dtype):
    """Reinterpret the bits as dtype (PyTorch's rules when the element sizes differ: the last dim scales)."""
    old, new = self.dtype, dtype
    if (self._conj or self._neg) and new is not old:    # (reftorch/_conj.py: PyTorch's refusal)
        raise _conj.dtype_view_error(self)
    if old.itemsize == new.itemsize:
        return _alias_as(self, new, self._offset, self._shape, self._strides)
    what = f"to view {old.short} as {new.short} (different element sizes)"
    if self.dim() == 0:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    if self._strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {self._strides[-1]}")
    shape, strides = list(self._shape), list(self._strides)
    if new.itemsize > old.itemsize:
        r = new.itemsize // old.itemsize
        if shape[-1] % r:
            raise RuntimeError(f"self.size(-1) must be divisible by {r} {what}, but got {shape[-1]}")
        if self._offset % r:
            raise RuntimeError(f"self.storage_offset() must be divisible by {r} {what}, but got {self._offset}")
        for i, s in enumerate(strides[:-1]):
            if s % r:
                raise RuntimeError(f"self.stride({i}) must be divisible by {r} {what}, but got {s}")
        shape[-1] //= r
        strides = [s // r for s in strides[:-1]] + [1]
        offset = self._offset // r
    else:
        r = old.itemsize // new.itemsize
        shape[-1] *= r
        strides = [s * r for s in strides[:-1]] + [1]
        offset = self._offset * r
    return _alias_as(self, new, offset, tuple(shape), tuple(strides))


def _alias_as(self, dtype, offset, shape, strides):
    """A tensor of dtype over self's bytes (no history: PyTorch's view(dtype) is not differentiable)."""
    data = self._storage.data
    if self.device.type != "cpu":
        raise RuntimeError("view(dtype) with a different dtype is supported on cpu tensors only")
    nbytes = data.nbytes - data.nbytes % dtype.itemsize
    view = data.view(np.uint8)[:nbytes].view(dtype.np) if dtype is not self.dtype else data
    storage = self._storage if dtype is self.dtype else Storage(view, allocated=False)
    return Tensor._make(storage, offset, shape, strides, dtype, self.device)


def _numpy(self, *, force=False):
    """The cpu tensor's memory as a NumPy array; refused for a tensor that requires grad while grad mode is on,
    unless force=True (detach().cpu().numpy())."""
    if self._vmap is not None:      # inside vmap: one sample's view of a batch (PyTorch's error)
        self._refuse_in_vmap("data")
    if force:
        return self.detach().cpu()._array()
    if self.device.type != "cpu":       # cuda and meta: PyTorch's TypeError
        raise numpy_error(self)
    if self.requires_grad and grad_mode.state.enabled:
        raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
    if self._conj:      # no NumPy array reads a conjugate view's storage conjugated (reftorch/_conj.py)
        raise RuntimeError("Can't call numpy() on Tensor that has conjugate bit set. Use tensor.resolve_conj().numpy() "
                           "instead.")
    if self._neg:
        raise RuntimeError("Can't call numpy() on Tensor that has negative bit set. Use tensor.resolve_neg().numpy() "
                           "instead.")
    if self.dtype is D.complex32:       # NumPy has no complex32 (reftorch/_chalf.py)
        raise TypeError("Got unsupported ScalarType ComplexHalf")
    return self._array()


def _array_protocol(self, dtype=None, copy=None):
    a = _numpy(self)
    return a if dtype is None else a.astype(dtype, copy=False)


METHODS.update({
    "__pos__": positive, "positive": positive, "where": _tensor_where, "equal": equal, "isclose": isclose,
    "allclose": allclose, "numpy": _numpy, "__array__": _array_protocol,
})
def is_inference(input):
    """torch.is_inference: input was allocated inside inference_mode, or is a view of such a tensor."""
    _check_tensor("is_inference", "input", 1, input)
    return input.is_inference()


FUNCTIONS.update({"positive": positive, "equal": equal, "isclose": isclose, "allclose": allclose,
                  "is_inference": is_inference})
