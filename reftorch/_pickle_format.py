"""How tensors are pickled in torch's checkpoint format, both ways.

Writing: a Pickler whose tensors become `torch._utils._rebuild_tensor_v2(storage, offset, size,
stride, requires_grad, OrderedDict())` with the storage as a persistent id
`('storage', torch.FloatStorage, key, location, numel)`, Parameters `_rebuild_parameter`, dtypes
`torch.float32`, Size `torch.Size`, device `torch.device` — the globals torch writes, so that torch's
own weights-only loader accepts the file. The globals are written by name (GLOBAL 'torch._utils
_rebuild_tensor_v2'): torch need not be installed to write them.

Reading: `TORCH_GLOBALS` maps each of those names to reftorch's implementation, and the rebuild
functions check every size, stride and offset against the storage before making a view of it.
"""
from __future__ import annotations

import collections
import pickle

import numpy as np

import reftorch as torch
import reftorch._conj as _conj
from reftorch import _dtype as D
from reftorch._checkpoint import MalformedData
from reftorch._tensor import Storage, Tensor
from reftorch.nn.parameter import Parameter

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C        # the legacy (pre-1.6) format's first pickle
PROTOCOL_VERSION = 1001

STORAGE_NAMES = {D.float64: "DoubleStorage", D.float32: "FloatStorage", D.float16: "HalfStorage",
                 D.bfloat16: "BFloat16Storage", D.int64: "LongStorage", D.int32: "IntStorage",
                 D.int16: "ShortStorage", D.int8: "CharStorage", D.uint8: "ByteStorage", D.bool_: "BoolStorage",
                 D.complex64: "ComplexFloatStorage", D.complex128: "ComplexDoubleStorage"}
# torch's storage and dtype names that reftorch has no dtype for (they load as a clear error)
_ABSENT_STORAGES = ("QInt8Storage", "QInt32Storage",
                    "QUInt8Storage", "QUInt4x2Storage", "QUInt2x4Storage")
_ABSENT_DTYPES = ("qint8", "qint32", "quint8", "quint4x2", "quint2x4",
                  "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16", "float8_e4m3fn", "float8_e4m3fnuz",
                  "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "uint16", "uint32",
                  "uint64") + tuple(f"uint{i}" for i in range(1, 8)) + tuple(f"int{i}" for i in range(1, 8))
_TENSOR_TYPE_NAMES = {D.float64: "DoubleTensor", D.float32: "FloatTensor", D.float16: "HalfTensor",
                      D.bfloat16: "BFloat16Tensor", D.int64: "LongTensor", D.int32: "IntTensor",
                      D.int16: "ShortTensor", D.int8: "CharTensor", D.uint8: "ByteTensor", D.bool_: "BoolTensor"}


# ============================================================================ writing

class TorchName:
    """A global written by name (module, qualified name): torch's functions and classes."""
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args, **kwargs):     # pickle's save_reduce wants a callable; this one is only a name
        raise TypeError(f"{self.module}.{self.name} is a name written into a checkpoint, not a function")


_NAMES = {}


def torch_name(module, name):
    """One TorchName per global, so the pickle memo writes each GLOBAL once and refers back to it."""
    key = (module, name)
    if key not in _NAMES:
        _NAMES[key] = TorchName(module, name)
    return _NAMES[key]


class _LayoutName:
    """A layout as torch writes it: torch.serialization._get_layout(name)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


_CLASS_NAMES = {Tensor: ("torch", "Tensor"), Parameter: ("torch.nn.parameter", "Parameter")}
_LOCATIONS = {}     # one str object per location, so the memo shares it as torch's pickles do


class StorageRef:
    """What a tensor's storage pickles as: a persistent id naming a record of the archive."""
    __slots__ = ("storage", "dtype", "device")

    def __init__(self, storage, dtype, device):
        self.storage, self.dtype, self.device = storage, dtype, device


class StorageTable:
    """The storages met while pickling, keyed "0", "1", ... in the order first seen (torch's keys).

    A view of another dtype (x.real, view_as_real, x.view(torch.int32)) holds a Storage object of its own over the
    same memory, where torch has one storage: storages are told apart by where their memory starts, as torch's
    data_ptr, so views of one dtype are saved as one record (sharing memory again when loaded), and views of two
    dtypes are refused with torch's error."""

    def __init__(self, legacy=False):
        self.legacy = legacy
        self.entries = {}       # id(Storage) -> (key, StorageRef)
        self.records = {}       # key -> StorageRef, in the order first seen
        self.at = {}            # where a cpu storage's memory starts -> its (key, StorageRef)
        self.containers = set()     # Module classes noted in a legacy file

    def persistent_id(self, ref):
        entry = self.entries.get(id(ref.storage))
        if entry is None:
            entry = self.entries[id(ref.storage)] = self._entry(ref)
        key = entry[0]
        ref = entry[1]
        loc = str(ref.device)
        location = _LOCATIONS.setdefault(loc, loc)
        if ref.dtype in STORAGE_NAMES:
            stype, numel = torch_name("torch", STORAGE_NAMES[ref.dtype]), len(ref.storage.data)
        else:       # complex32, which has no typed storage: torch's untyped one, its size in bytes
            stype, numel = torch_name("torch.storage", "UntypedStorage"), ref.storage.data.nbytes
        if self.legacy:
            return ("storage", stype, key, location, numel, None)
        return ("storage", stype, key, location, numel)

    def _entry(self, ref):
        data = ref.storage.data
        start = data.__array_interface__["data"][0] if ref.device.type == "cpu" and data.nbytes else None
        seen = self.at.get(start) if start is not None else None
        if seen is not None:
            if seen[1].dtype is not ref.dtype:
                raise RuntimeError("Cannot save multiple tensors or storages that view the same data as different "
                                   "types")
            if seen[1].storage.data.nbytes == data.nbytes:
                return seen
        key = str(id(ref.storage)) if self.legacy else str(len(self.records))
        self.records[key] = ref
        if start is not None:
            self.at.setdefault(start, (key, ref))
        return key, ref

    def items(self):
        """(key, little- or native-endian bytes as a uint8 array) for each storage, in key order."""
        for key, ref in self.records.items():
            yield key, storage_bytes(ref)


def storage_bytes(ref):
    data = ref.storage.data
    if ref.device.type != "cpu":
        data = data.copy_to_host()
    return np.ascontiguousarray(data).view(np.uint8)


def _obj_state(t):
    """A tensor's Python attributes worth saving (torch's `_get_obj_state`); reftorch's own markers
    (underscored names such as nn.Buffer's) are not the user's state."""
    d = t.__dict__
    return {k: v for k, v in d.items() if not k.startswith("_")} if d else None


def _plain(t):
    return Tensor._make(t._storage, t._offset, t._shape, t._strides, t.dtype, t.device)


class _TorchPicklerMixin:
    storages: StorageTable

    def persistent_id(self, obj):
        if type(obj) is StorageRef:
            return self.storages.persistent_id(obj)
        if self.storages.legacy and isinstance(obj, type) and issubclass(obj, torch.nn.Module) \
                and obj not in self.storages.containers:
            self.storages.containers.add(obj)       # once: the id itself then pickles the class by name
            return ("module", obj, None, None)      # torch's legacy writer notes container classes
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if type(obj) is torch.Size:
            return (torch_name("torch", "Size"), (tuple(obj),))
        if type(obj) is _LayoutName:
            return (torch_name("torch.serialization", "_get_layout"), (obj.name,))
        if type(obj) is torch.device:
            args = (obj.type,) if obj.index is None else (obj.type, obj.index)
            return (torch_name("torch", "device"), args)
        return NotImplemented

    def _reduce_tensor(self, t):
        if t.layout == "torch.sparse_coo":     # torch's form: the layout, then indices, values, size, coalesced
            return (torch_name("torch._utils", "_rebuild_sparse_tensor"),
                    (_LayoutName(t.layout), (t._indices(), t._values(), torch.Size(t.shape), t.is_coalesced())))
        hooks = collections.OrderedDict()
        state = _obj_state(t)
        if isinstance(t, Parameter):
            if state:
                return (torch_name("torch._utils", "_rebuild_parameter_with_state"),
                        (_plain(t), t.requires_grad, hooks, state))
            return (torch_name("torch._utils", "_rebuild_parameter"), (_plain(t), t.requires_grad, hooks))
        args = (StorageRef(t._storage, t.dtype, t.device), t._offset, tuple(t._shape), tuple(t._strides),
                t.requires_grad, hooks)
        rebuild = torch_name("torch._utils", "_rebuild_tensor_v2")
        if t.dtype not in STORAGE_NAMES:
            if t.dtype is not D.complex32 or self.storages.legacy:
                raise pickle.PicklingError(f"cannot save a tensor of dtype {t.dtype}")
            # as torch saves it: _rebuild_tensor_v3 over an untyped storage, the dtype after the hooks
            args, rebuild = args + (t.dtype,), torch_name("torch._utils", "_rebuild_tensor_v3")
        bits = {k: True for k, on in (("conj", t._conj), ("neg", t._neg)) if on}
        if bits:        # a conjugate or negative view: the stored values and torch's metadata naming the bits
            args += (bits,)
        if type(t) is Tensor and not state:
            return (rebuild, args)
        return (torch_name("torch._tensor", "_rebuild_from_type_v2"), (rebuild, type(t), args, state))

    def save_global(self, obj, name=None):
        if obj in _CLASS_NAMES:
            return self._save_torch_name(torch_name(*_CLASS_NAMES[obj]))
        return super().save_global(obj, name)

    def _save_torch_name(self, obj):
        if self.proto >= 4:
            self.save(obj.module)
            self.save(obj.name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
        self.memoize(obj)

    def _save_dtype(self, obj):
        self.save(torch_name("torch", obj.name))


_PICKLERS = {}


def pickler_class(pickle_module):
    """A torch-format Pickler built on pickle_module's pure-Python Pickler (the one whose globals can be
    written by name); dill's and pickle's own qualify."""
    base = pickle._Pickler if pickle_module is pickle else getattr(pickle_module, "Pickler", None)
    if not (isinstance(base, type) and issubclass(base, pickle._Pickler)):
        raise TypeError(f"reftorch.save: pickle_module {getattr(pickle_module, '__name__', pickle_module)!r} "
                        f"needs a Pickler derived from pickle._Pickler (as pickle's and dill's are)")
    if base not in _PICKLERS:
        dispatch = dict(base.dispatch)
        dispatch[TorchName] = _TorchPicklerMixin._save_torch_name
        dispatch[D.dtype] = _TorchPicklerMixin._save_dtype
        _PICKLERS[base] = type("TorchPickler", (_TorchPicklerMixin, base), {"dispatch": dispatch})
    return _PICKLERS[base]


def dump(obj, file, pickle_module, protocol, storages):
    pickler = pickler_class(pickle_module)(file, protocol=protocol)
    pickler.storages = storages
    pickler.dump(obj)


# ============================================================================ reading

class StorageType:
    """torch.FloatStorage and friends as they appear in a checkpoint: a dtype, nothing callable."""
    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype

    def __repr__(self):
        return f"StorageType(dtype={self.dtype})"


class LoadedStorage:
    """One storage of a checkpoint being loaded: its flat elements, dtype and device. What a callable
    map_location receives (storage, location) and may move with .cpu(), .cuda(), .to(device)."""
    __slots__ = ("storage", "dtype", "device")

    def __init__(self, storage, dtype, device):
        self.storage, self.dtype, self.device = storage, dtype, device

    def __len__(self):
        return len(self.storage.data)

    size = __len__

    def nbytes(self):
        return len(self.storage.data) * self.dtype.itemsize

    def to(self, device=None, non_blocking=False):
        device = torch.device(device)
        if device == self.device:
            return self
        flat = Tensor._make(self.storage, 0, (len(self),), (1,), self.dtype, self.device)
        flat = flat.to(device, non_blocking=non_blocking)
        return LoadedStorage(flat._storage, self.dtype, flat.device)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        where = "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device)
        return self.to(where, non_blocking=non_blocking)

    def __repr__(self):
        return f"<storage of {len(self)} {self.dtype} on {self.device}>"


def storage_id(pid, src, legacy):
    """(dtype, key, location, numel, view) of a storage persistent id, every field checked."""
    n = 6 if legacy else 5
    if type(pid) is not tuple or len(pid) != n:
        raise src.error(f"a storage id must be a tuple of {n} items, got {type(pid).__name__}")
    typename, stype, key, location, numel = (x.decode("ascii") if type(x) is bytes else x for x in pid[:5])
    view = pid[5] if legacy else None
    if typename != "storage" or type(stype) is not StorageType or type(key) is not str \
            or type(location) is not str or type(numel) is not int or numel < 0:
        raise src.error("a storage id must be ('storage', storage type, key, location, element count)")
    if stype.dtype is None:
        raise src.error(f"the checkpoint holds a torch.{stype.name}, which reftorch has no dtype for")
    return stype.dtype, key, location, numel, view


def _ints(value, what):
    if type(value) not in (tuple, list, torch.Size) or not all(type(v) is int for v in value):
        raise MalformedData(f"a tensor's {what} must be a tuple of ints, got {type(value).__name__}")
    return tuple(value)


def _rebuild_tensor(storage, storage_offset, size, stride):
    if type(storage) is not LoadedStorage:
        raise MalformedData(f"_rebuild_tensor expects a storage, got {type(storage).__name__}")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if len(size) != len(stride) or type(storage_offset) is not int:
        raise MalformedData(f"a tensor's size {size} and stride {stride} must have the same length and its offset "
                         f"must be an int")
    if storage_offset < 0 or any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise MalformedData(f"negative size, stride or offset in a tensor (size {size}, stride {stride}, offset "
                         f"{storage_offset})")
    if 0 not in size:
        needed = storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
        if needed > len(storage):
            raise MalformedData(f"a tensor of size {list(size)}, stride {list(stride)} and offset {storage_offset} "
                             f"needs {needed} elements but its storage has {len(storage)}")
    elif max(size) >= 2 ** 63:
        raise MalformedData(f"a tensor of size {list(size)} has a dimension beyond int64")
    return Tensor._make(storage.storage, storage_offset, size, stride, storage.dtype, storage.device)


def _empty_hooks(hooks):
    if hooks is not None and (not isinstance(hooks, dict) or hooks):
        raise MalformedData("a tensor with backward hooks (they are never restored from a checkpoint)")


def _requires_grad(t, requires_grad):
    if type(requires_grad) is not bool:
        raise MalformedData(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    _empty_hooks(backward_hooks)
    return _requires_grad(_with_bits(_rebuild_tensor(storage, storage_offset, size, stride), metadata), requires_grad)


def _with_bits(t, metadata):
    """The tensor as the view torch's metadata names: {"conj": True} a conjugate view, {"neg": True} a negative
    one (the storage holds the values before the bits)."""
    if not metadata:
        return t
    if not isinstance(metadata, dict) or not set(metadata) <= {"conj", "neg"} or \
            any(v is not True for v in metadata.values()) or (metadata.get("conj") and not t.dtype.is_complex):
        raise MalformedData(f"tensor metadata {metadata!r} other than a complex tensor's conjugate or negative bit")
    if metadata.get("conj"):
        t = _conj.conj_view(t)
    return _conj.neg_view(t) if metadata.get("neg") else t


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    if type(dtype) is not D.dtype or type(storage) is not LoadedStorage:
        raise MalformedData("_rebuild_tensor_v3 expects a storage and a dtype")
    if storage.dtype is not dtype:        # an untyped storage read as `dtype`
        data = storage.storage.data
        if storage.device.type != "cpu" or len(data) * storage.dtype.itemsize % dtype.itemsize:
            raise MalformedData(f"a storage of {storage.nbytes()} bytes cannot hold {dtype} elements")
        storage = LoadedStorage(Storage(data.view(np.uint8).view(dtype.np)), dtype, storage.device)
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    if not isinstance(data, Tensor) or type(requires_grad) is not bool:
        raise MalformedData("_rebuild_parameter expects a tensor and a bool")
    _empty_hooks(backward_hooks)
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return set_obj_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor of a Tensor subclass (or with Python attributes): rebuilt by func, given its class and state."""
    if type(args) is not tuple:
        raise MalformedData("_rebuild_from_type_v2 expects a tuple of arguments")
    if not (isinstance(new_type, type) and issubclass(new_type, Tensor)):
        raise MalformedData(f"_rebuild_from_type_v2: {getattr(new_type, '__name__', type(new_type).__name__)} is not "
                            f"a Tensor type")
    ret = func(*args)
    if not isinstance(ret, Tensor):
        raise MalformedData(f"_rebuild_from_type_v2: the rebuild gave a {type(ret).__name__}, not a tensor")
    if type(ret) is not new_type:
        ret.__class__ = new_type     # torch's as_subclass: same data, the saved class
    own = getattr(new_type, "__setstate__", None)
    if own is not None and own is not getattr(Tensor, "__setstate__", None):   # a subclass's own, as torch's
        ret.__setstate__(state)
        return ret
    return set_obj_state(ret, state)


_PRIVATE = frozenset(dir(Tensor)) | frozenset(Tensor.__slots__)


def set_obj_state(obj, state):
    """torch's `_set_obj_state`: the attributes a tensor subclass pickled. reftorch's own fields and
    methods are not among them (a checkpoint cannot replace a tensor's storage or its methods)."""
    if isinstance(state, tuple):
        if len(state) != 2:
            raise MalformedData(f"Invalid serialized state of length {len(state)}")
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    for part in (dict_state, slots_state):
        if not part:
            continue
        if not isinstance(part, dict):
            raise MalformedData(f"a tensor's state must be a dict, got {type(part).__name__}")
        for k, v in part.items():
            if type(k) is not str or k in _PRIVATE or k.startswith("__"):
                raise MalformedData(f"a tensor's state sets {k!r}, which is not a user attribute")
            setattr(obj, k, v)
    return obj


def _device(*args):
    """torch.device as a checkpoint may call it: a bad name is malformed data, not a RuntimeError."""
    try:
        return torch.device(*args)
    except (RuntimeError, TypeError, ValueError) as err:
        raise MalformedData(f"a device {args!r:.60} in the checkpoint: {err}") from None


def _rebuild_device_tensor_from_numpy(data, dtype, device, requires_grad):
    if not isinstance(data, np.ndarray) or type(dtype) is not D.dtype:
        raise MalformedData("_rebuild_device_tensor_from_numpy expects an array and a dtype")
    t = torch.from_numpy(np.array(data)).to(dtype=dtype, device=_device(device))
    return _requires_grad(t, requires_grad)


def _rebuild_device_tensor_from_cpu_tensor(data, dtype, device, requires_grad):
    if not isinstance(data, Tensor) or type(dtype) is not D.dtype:
        raise MalformedData("_rebuild_device_tensor_from_cpu_tensor expects a tensor and a dtype")
    return _requires_grad(data.to(dtype=dtype, device=_device(device)), requires_grad)


def _absent(what):
    def rebuild(*args, **kwargs):
        raise MalformedData(f"the checkpoint holds {what}, which reftorch does not have")
    rebuild.__name__ = f"_rebuild_{what.replace(' ', '_')}"
    return rebuild


def _get_layout(name):
    if name not in ("torch.strided", "torch.sparse_coo"):
        raise MalformedData(f"the checkpoint holds layout {name!r}; reftorch has torch.strided and torch.sparse_coo")
    return name


def _rebuild_sparse_tensor(layout, data):
    """A sparse COO tensor from (indices, values, size[, is_coalesced]), its invariants checked as torch's load
    checks them."""
    if layout != "torch.sparse_coo" or not isinstance(data, tuple) or len(data) not in (3, 4):
        raise MalformedData(f"the checkpoint holds a sparse tensor of layout {layout!r}; reftorch has sparse COO only")
    indices, values, size = data[:3]
    coalesced = data[3] if len(data) == 4 else None
    if not (isinstance(indices, Tensor) and isinstance(values, Tensor)):
        raise MalformedData("_rebuild_sparse_tensor expects index and value tensors")
    return torch.sparse_coo_tensor(indices, values, size, check_invariants=True, is_coalesced=coalesced)


class Absent:
    """A global torch allows that reftorch has no counterpart for (complex dtypes, quantization schemes):
    its use in a checkpoint is refused when the unpickler meets it."""
    __slots__ = ("what",)

    def __init__(self, what):
        self.what = what


def _torch_globals():
    rc = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.serialization._get_layout": _get_layout,
        "torch.Size": torch.Size,
        "torch.Tensor": Tensor,
        "torch.device": _device,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    }
    for d in D.ALL:
        rc[f"torch.{d.name}"] = d
    for name in _ABSENT_DTYPES:
        rc[f"torch.{name}"] = Absent(f"dtype torch.{name}")
    for d, sname in STORAGE_NAMES.items():
        rc[f"torch.{sname}"] = rc[f"torch.cuda.{sname}"] = StorageType(sname, d)
    for sname in _ABSENT_STORAGES:
        rc[f"torch.{sname}"] = rc[f"torch.cuda.{sname}"] = StorageType(sname, None)
    rc["torch.storage.UntypedStorage"] = rc["torch.UntypedStorage"] = StorageType("UntypedStorage", D.uint8)
    rc["torch.storage.TypedStorage"] = StorageType("TypedStorage", None)
    for d, tname in _TENSOR_TYPE_NAMES.items():
        rc[f"torch.{tname}"] = rc[f"torch.cuda.{tname}"] = Absent(f"legacy tensor type torch.{tname}")
        rc[f"torch.sparse.{tname}"] = rc[f"torch.cuda.sparse.{tname}"] = Absent("sparse tensors")
    for scheme in ("per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric",
                   "per_channel_affine_float_qparams"):
        rc[f"torch.{scheme}"] = Absent(f"quantization scheme torch.{scheme}")
    for f in (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter,
              _rebuild_parameter_with_state, _rebuild_device_tensor_from_numpy,
              _rebuild_device_tensor_from_cpu_tensor):
        rc[f"torch._utils.{f.__name__}"] = f
    rc["torch._utils._rebuild_sparse_tensor"] = _rebuild_sparse_tensor
    for fname, what in (("_rebuild_qtensor", "quantized tensors"),
                        ("_rebuild_meta_tensor_no_storage", "meta tensors"),
                        ("_rebuild_nested_tensor", "nested tensors"),
                        ("_rebuild_wrapper_subclass", "wrapper-subclass tensors")):
        rc[f"torch._utils.{fname}"] = _absent(what)
    return rc


TORCH_GLOBALS = _torch_globals()


def byteswap(arr, dtype):
    """A big-endian storage's elements in this machine's order."""
    return arr.view(np.uint8).reshape(-1, dtype.itemsize)[:, ::-1].copy().reshape(-1).view(dtype.np)

