"""The Tensor: a strided view (offset, shape, strides in elements) of a flat storage, plus autograd state.

Storage is a 1-D NumPy array on cpu, shared by every view of it together with a version counter
that in-place ops bump (autograd checks saved tensors against it). Ops are not defined here: the
generated wrappers of ops.yaml are bound as methods by reftorch/__init__.py.
"""
from __future__ import annotations

import numpy as np

from ._layout import contiguous_array as _contig

import reftorch._dtype as D
import reftorch._layout as L
from ._device import CPU
from ._grad_state import state as _grad_state


_CHALF = D.complex32
_byte_strides = {}      # (strides in elements, itemsize) -> strides in bytes (Tensor._array)

# device type -> a NumPy copy of a tensor's view on it: filled in by the device's back end
# (reftorch/_cuda_dispatch.py), which imports this module
HOST_COPIES = {}


def numpy_error(t):
    return TypeError(f"can't convert {t.device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
                     "host memory first.")


class Storage:
    __slots__ = ("data", "version", "inference", "__weakref__")

    def __init__(self, data, allocated=True):
        self.data = data        # 1-D numpy array
        self.version = 0
        self.inference = _grad_state.inference      # allocated inside inference_mode: its tensors are inference tensors
        if D.chalf_warning_due and allocated and data.dtype == D.CHALF_NP:      # (not over another's bytes)
            D.chalf_allocated()


class _AliasStorage(Storage):
    """Another storage's bytes read as a different dtype (real/imag/view_as_real/view_as_complex views): the
    version counter is the owner's, so an in-place write through either side is seen by autograd on both."""
    __slots__ = ("owner",)

    def __init__(self, owner, np_dtype):
        while isinstance(owner, _AliasStorage):
            owner = owner.owner
        data = owner.data
        if np_dtype.itemsize > data.itemsize:       # float pairs as complex: a trailing odd float is unreachable
            data = data[:data.shape[0] // 2 * 2]
        self.data = data.view(np_dtype)
        self.owner = owner

    @property
    def version(self):
        return self.owner.version

    @version.setter
    def version(self, v):
        self.owner.version = v

    @property
    def inference(self):
        return self.owner.inference


def reinterpreted(storage, np_dtype):
    """storage's bytes as np_dtype (the same Storage when it already holds that dtype)."""
    if storage.data.dtype == np_dtype:
        return storage
    if isinstance(storage, _AliasStorage) and storage.owner.data.dtype == np_dtype:
        return storage.owner
    return _AliasStorage(storage, np_dtype)


class Tensor:
    __slots__ = ("_storage", "_offset", "_shape", "_strides", "dtype", "device", "requires_grad", "_grad",
                 "grad_fn", "_output_nr", "_retains_grad", "_hooks", "_accum", "_base", "_wrapped", "_name",
                 "__weakref__", "__dict__")

    _fw = None      # forward-mode AD: (generation, tangent) of a dual tensor (reftorch/autograd/forward_ad.py)
    _vmap = None    # inside vmap: (level, physical tensor) of a batched tensor (reftorch/func/_vmap.py)
    _conj = False   # the lazy conjugate bit: a conjugate view reads its storage conjugated (reftorch/_conj.py)
    _neg = False    # the negative bit: a negative view reads its storage negated (torch._neg_view, the same module)
    # PyTorch's: a NumPy scalar or array on the left of an operator defers to the Tensor's reflected method, so
    # np.float64(3) / t is a Tensor (the number wrapped, float32 kept), not an ndarray
    __array_priority__ = 1000

    def _refuse_in_vmap(self, what):
        """Inside vmap this tensor is one sample's view of a batch: no single value, data or storage (PyTorch's
        errors; under a transform inside the vmap, grad's or jvp's, its message names both item and bool)."""
        level = self._vmap[0] if self._vmap is not None else None
        if level is None or not level.open:
            return
        if what == "data":
            raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")
        if what == "storage":
            raise NotImplementedError("Cannot access storage of BatchedTensorImpl")
        if level.transform_inside():
            raise RuntimeError(
                "vmap: It looks like you're either (1) calling .item() on a Tensor or (2) attempting to use a Tensor "
                "in some data-dependent control flow or (3) encountering this error in PyTorch internals. For (1): we "
                "don't support vmap over calling .item() on a Tensor, please try to rewrite what you're doing with "
                "other operations. For (2): we don't support data-dependent control flow in vmap yet, please file an "
                "issue at https://github.com/pytorch/pytorch/issues . For (3): please file an issue.")
        raise RuntimeError(
            "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() "
            "on a Tensor, please try to rewrite what you're doing with other operations. If error is occurring "
            "somewhere inside PyTorch internals, please file a bug report." if what == "item" else
            "vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. We don't "
            "support that yet, please file an issue at https://github.com/pytorch/pytorch/issues .")

    def __init__(self, *args, **kwargs):
        pass        # Tensor(...) is built by __new__ (reftorch/_legacy.py: PyTorch's legacy constructor)

    # ------------------------------------------------------------------ construction (internal)
    @classmethod
    def _make(cls, storage, offset, shape, strides, dtype, device=CPU, base=None):
        t = _new(cls)
        t._storage = storage
        t._offset = offset
        t._shape = shape
        t._strides = strides
        t.dtype = dtype
        t.device = device
        _set_requires_grad_slot(t, False)   # the raw slot: bind() puts a checking property in front of it
        t._grad = None
        t.grad_fn = None
        t._output_nr = 0
        t._retains_grad = False
        t._hooks = None
        t._accum = None
        t._base = base
        t._wrapped = False
        return t

    @classmethod
    def _from_array(cls, arr, dtype=None):
        """Wrap a NumPy array, sharing its memory whenever its strides can be expressed in elements."""
        if dtype is None:
            dtype = D.from_numpy(arr.dtype)
        isz = arr.itemsize
        if arr.size == 0:       # NumPy may give empty arrays zero strides; PyTorch's are contiguous
            return cls._make(Storage(np.empty(0, arr.dtype)), 0, tuple(arr.shape), L.contiguous_strides(arr.shape),
                             dtype)
        base = arr
        while isinstance(base.base, np.ndarray):
            base = base.base
        shareable = (base.flags.c_contiguous and base.dtype == arr.dtype
                     and all(s >= 0 and s % isz == 0 for s in arr.strides))
        if shareable:
            flat = base.reshape(-1)
            start = arr.__array_interface__["data"][0] - base.__array_interface__["data"][0]
            if start >= 0 and start % isz == 0:
                strides = tuple(s // isz for s in arr.strides)
                return cls._make(Storage(flat), start // isz, tuple(arr.shape), strides, dtype)
        arr = _contig(arr)
        return cls._make(Storage(arr.reshape(-1)), 0, tuple(arr.shape), L.contiguous_strides(arr.shape), dtype)

    def _array(self):
        """This tensor as a NumPy strided view of its storage (no copy; a read-only host copy on cuda)."""
        if self._conj or self._neg:     # a conjugate or negative view (reftorch/_conj.py): its values, in a copy
            a = Tensor._make(self._storage, self._offset, self._shape, self._strides, self.dtype, self.device)._array()
            if self._conj:
                a = np.conjugate(a, out=np.empty_like(a))       # (out=: a 0-d result stays an array)
            if self._neg:
                a = np.negative(a, out=a if self._conj else np.empty_like(a))
            return a
        if self.dtype is _CHALF:        # complex32: its values as complex64, in a copy (reftorch/_chalf.py)
            return D.chalf_values(self._raw_array())
        return self._raw_array()

    def _raw_array(self):
        """The NumPy strided view of the storage itself (complex32's structured pairs; a conjugate view's stored
        values): what a write into the tensor assigns to."""
        if self.device.type != "cpu":
            if self.device.type == "meta":
                raise NotImplementedError("Cannot copy out of meta tensor; no data!")
            return HOST_COPIES[self.device.type](self)
        data = self._storage.data
        isz = data.itemsize
        if self._offset == 0 and self._shape == (data.shape[0],) and self._strides == (1,):
            return data
        if 0 in self._shape:    # an empty view may sit past the end of its storage (x[10:] of 10 elements)
            return np.empty(self._shape, data.dtype)
        strides = self._strides
        if strides.__class__ is not tuple:
            return np.ndarray(self._shape, data.dtype, data, self._offset * isz, tuple(s * isz for s in strides))
        key = (strides, isz)
        byte_strides = _byte_strides.get(key)       # the strides in bytes, cached (a tuple built per call costs µs)
        if byte_strides is None:
            if len(_byte_strides) > 4096:
                _byte_strides.clear()
            byte_strides = _byte_strides[key] = tuple(s * isz for s in strides)
        return np.ndarray(self._shape, data.dtype, data, self._offset * isz, byte_strides)

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self):
        return Size(self._shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._shape)
        return self._shape[L.wrap_dim(dim, len(self._shape))]

    def dim(self):
        return len(self._shape)

    ndimension = dim

    @property
    def ndim(self):
        return len(self._shape)

    def numel(self):
        return L.numel(self._shape)

    nelement = numel

    def stride(self, dim=None):
        if dim is None:
            return tuple(self._strides)
        return self._strides[L.wrap_dim(dim, len(self._shape))]

    def storage_offset(self):
        return self._offset

    def is_contiguous(self, memory_format=None):
        return L.is_contiguous(self._shape, self._strides)

    def element_size(self):
        return self.dtype.itemsize

    @property
    def itemsize(self):
        """Bytes per element (element_size())."""
        return self.dtype.itemsize

    @property
    def nbytes(self):
        """Bytes of the elements as if contiguous: numel() * element_size(), as PyTorch counts a view's."""
        return self.numel() * self.dtype.itemsize

    def data_ptr(self):
        if self._vmap is not None:
            self._refuse_in_vmap("data")
        if self.device.type == "meta":
            return 0
        if self.device.type == "cuda":
            ptr = getattr(self._storage.data, "device_ctypes_pointer", None)
            base = ptr.value if ptr is not None and ptr.value is not None else id(self._storage.data)
            return base + self._offset * self.dtype.itemsize
        return self._storage.data.__array_interface__["data"][0] + self._offset * self.dtype.itemsize

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    @property
    def is_meta(self):
        return self.device.type == "meta"

    @property
    def layout(self):
        return "torch.strided"

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return self.dtype.category == 3

    @property
    def _version(self):
        if self._storage.inference:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._storage.version

    def is_inference(self):
        """A tensor allocated inside inference_mode, or a view of one (its storage was)."""
        return self._storage.inference

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __hash__(self):
        return id(self)

    # ------------------------------------------------------------------ conversion
    def numpy(self, *, force=False):
        if self.device.type != "cpu":
            raise numpy_error(self)
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        return self._array()

    def __array__(self, dtype=None, copy=None):
        if self.device.type != "cpu":
            raise numpy_error(self)
        a = self._array()
        return a if dtype is None else a.astype(dtype)

    def item(self):
        if self._vmap is not None:
            self._refuse_in_vmap("item")
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        if self.device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        return self._array().reshape(-1)[0].item()

    def tolist(self):
        if self._vmap is not None:
            self._refuse_in_vmap("data")
        return self._array().tolist()

    def __bool__(self):
        if self._vmap is not None:
            self._refuse_in_vmap("bool")
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if self.numel() == 0 else
                               "Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self):
        return float(self._real_item("double"))

    def __int__(self):
        return int(self._real_item("int64_t"))

    def _real_item(self, ctype):
        """item() as a real number: a complex one only with no imaginary part, as PyTorch converts it."""
        v = self.item()
        if isinstance(v, complex):
            if v.imag != 0:
                raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")
            return v.real
        return v

    def __index__(self):
        if self.dtype.category > 1 or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __format__(self, spec):
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))


Tensor.__module__ = "reftorch"      # printed as <class 'reftorch.Tensor'>, where programs import it from
_new = object.__new__
_set_requires_grad_slot = Tensor.__dict__["requires_grad"].__set__


class Size(tuple):
    """torch.Size: a tuple that prints like PyTorch's."""

    def __repr__(self):
        return f"torch.Size({list(self)})"

    def numel(self):
        return L.numel(self)

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))
