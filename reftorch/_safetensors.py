"""Checkpoints in the safetensors format (reftorch.serialization.save_safetensors / load_safetensors).

A file is: 8 bytes (little-endian u64) giving the header's length N, N bytes of JSON header, then the
tensors' raw little-endian bytes. The header maps each tensor's name to {"dtype", "shape",
"data_offsets": [begin, end]} (offsets into the byte buffer after the header) and may hold a
"__metadata__" map of strings. Nothing in a file is executed on load: this is data, not pickle.

Flat {str: Tensor} dicts (a model's state_dict) are written exactly as `safetensors.torch.save_file`
writes them, so either library reads the other's files. Anything else made of dicts, lists and
tuples of tensors, numbers, strings, bools and None (an optimizer's state_dict, a training
checkpoint) is stored with its tensors under dotted keys ("optim.state.0.exp_avg") and the shape of
the tree as JSON in `__metadata__["reftorch.tree"]`; loading rebuilds the same tree. A safetensors
reader sees the tensors under their dotted names.

Tensors not on the cpu have their device recorded in `__metadata__["reftorch.devices"]` (JSON: name ->
"cuda:0"). Reading checks every entry's dtype, shape and offsets against the file before a byte of
data is read, and reads no more than the file holds.
"""
from __future__ import annotations

import collections
import io
import json
import math
import struct
import warnings

import numpy as np

import reftorch as torch
from reftorch import _dtype as D
from reftorch import _layout as L
from reftorch._checkpoint import CheckpointError
from reftorch._tensor import Storage, Tensor

# safetensors dtype names <-> reftorch dtypes (little-endian NumPy types)
_TO_ST = {torch.float64: "F64", torch.float32: "F32", torch.int64: "I64", torch.int32: "I32",
          torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL", torch.float16: "F16",
          torch.bfloat16: "BF16"}
_FROM_ST = {"F64": (torch.float64, "<f8"), "F32": (torch.float32, "<f4"), "I64": (torch.int64, "<i8"),
            "I32": (torch.int32, "<i4"), "I16": (torch.int16, "<i2"), "I8": (torch.int8, "i1"),
            "U8": (torch.uint8, "u1"), "BOOL": (torch.bool, "?"), "F16": (torch.float16, "<f2"),
            "BF16": (torch.bfloat16, torch.bfloat16.np)}
_NATIVE = {torch.float64: np.float64, torch.float32: np.float32, torch.int64: np.int64, torch.int32: np.int32,
           torch.int16: np.int16, torch.int8: np.int8, torch.uint8: np.uint8, torch.bool: np.bool_,
           torch.float16: np.float16, torch.bfloat16: torch.bfloat16.np}
# stored types reftorch has no dtype for: read them into the nearest one (with a warning)
_WIDENED = {"U16": ("<u2", torch.int32),
            "U32": ("<u4", torch.int64)}
_ITEMSIZE = {"F64": 8, "F32": 4, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1, "F16": 2, "BF16": 2,
             "U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1}

_TREE_KEY = "reftorch.tree"
_DEVICES_KEY = "reftorch.devices"
_MAX_HEADER = 100_000_000       # safetensors' own limit


# ============================================================================ save

def encode(obj):
    """The bytes of a safetensors file holding `obj` (a {name: tensor} dict, or a tree of them)."""
    tensors, metadata = _flatten(obj)
    devices = {name: str(t.device) for name, t in tensors.items() if t.device.type != "cpu"}
    if devices:
        metadata[_DEVICES_KEY] = json.dumps(devices)
    return _encode(tensors, metadata)


def _flatten(obj):
    """(name -> tensor, metadata): flat str->Tensor dicts as they are, anything else as a tree."""
    if isinstance(obj, dict) and obj and all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                             for k, v in obj.items()):
        if "__metadata__" in obj:
            raise ValueError("save_safetensors: '__metadata__' is reserved by the safetensors format; rename that key")
        return dict(obj), {"format": "pt"}
    tensors = {}
    tree = _to_tree(obj, [], tensors)
    return tensors, {"format": "pt", _TREE_KEY: json.dumps(tree, allow_nan=True)}


def _to_tree(obj, path, tensors):
    """A JSON-able description of obj; tensors go to `tensors` under their dotted path."""
    where = ".".join(map(str, path)) or "<root>"
    if isinstance(obj, torch.Tensor):
        name = ".".join(map(str, path)) or "tensor"
        if name in tensors:
            raise ValueError(f"save_safetensors: two entries flatten to the same key {name!r}; rename one of them")
        tensors[name] = obj
        return {"t": name}
    if obj is None or isinstance(obj, (bool, str)):
        return {"v": obj}
    if isinstance(obj, (int, np.integer)):
        return {"v": int(obj)}
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        return {"f": repr(x)} if not math.isfinite(x) else {"v": x}
    if isinstance(obj, torch.dtype):
        return {"dtype": str(obj)}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int, float, bool)) and k is not None:
                raise TypeError(f"save_safetensors: dict keys must be str, int, float, bool or None; got "
                                f"{type(k).__name__} at {where}")
            items.append([k, _to_tree(v, path + [k], tensors)])
        kind = "odict" if isinstance(obj, collections.OrderedDict) else "dict"
        return {kind: items}
    if isinstance(obj, (list, tuple)):
        kind = "tuple" if isinstance(obj, tuple) else "list"
        return {kind: [_to_tree(v, path + [i], tensors) for i, v in enumerate(obj)]}
    raise TypeError(f"save_safetensors stores tensors, numbers, strings, bools, None, dtypes and dicts/lists/tuples "
                    f"of them (no code is pickled); got {type(obj).__name__} at {where}")


def _encode(tensors, metadata):
    """The bytes of a safetensors file. The header lists the tensors in the caller's order; their data
    is laid out by decreasing item size, so that every tensor is aligned to its item size."""
    header = {"__metadata__": metadata}
    arrays = []
    for name, t in tensors.items():
        if t.dtype not in _TO_ST:
            raise TypeError(f"save_safetensors: dtype {t.dtype} of {name!r} has no safetensors equivalent")
        header[name] = {"dtype": _TO_ST[t.dtype], "shape": list(t.shape)}      # keeps the caller's key order
        arrays.append((name, t, _le_bytes(t)))
    arrays.sort(key=lambda item: -item[1].element_size())
    offset = 0
    for name, t, raw in arrays:
        header[name]["data_offsets"] = [offset, offset + len(raw)]
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)     # pad with spaces so the buffer starts 8-aligned
    out = io.BytesIO()
    out.write(struct.pack("<Q", len(text)))
    out.write(text)
    for _, _, raw in arrays:
        out.write(raw)
    return out.getvalue()


def _le_bytes(t):
    arr = np.ascontiguousarray(t.detach().cpu().numpy())
    if arr.dtype == torch.bfloat16.np:     # no byte-order variants of ml_dtypes' type: its bits as uint16
        arr = arr.view(np.uint16)
    return arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()




# ============================================================================ load

def is_safetensors(head):
    """The first 9 bytes look like a safetensors file: a plausible header length, then '{'."""
    return len(head) >= 9 and head[8:9] == b"{" and struct.unpack("<Q", head[:8])[0] <= _MAX_HEADER


def decode(src, mmap=False):
    """(metadata, {name: cpu tensor}) of the safetensors file `src` (a reftorch._checkpoint.Source)."""
    def bad(why):
        return src.error(f"not a valid safetensors checkpoint: {why}")

    if src.size < 8:
        raise bad(f"the file has {src.size} bytes, fewer than the 8-byte header length (truncated or empty)")
    (n,) = struct.unpack("<Q", src.read_at(0, 8, "the header length"))
    if n > _MAX_HEADER:
        raise bad(f"the header length field says {n} bytes (this is not a safetensors file, or it is corrupt)")
    if 8 + n > src.size:
        raise bad(f"the header says {n} bytes but only {src.size - 8} follow (truncated)")
    try:
        header = json.loads(src.read_at(8, n, "the header").decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise bad(f"the header is not valid JSON ({type(err).__name__}: {err})") from None
    if not isinstance(header, dict):
        raise bad("the header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        raise bad("__metadata__ must map strings to strings")
    entries = {key: _entry(key, info, bad) for key, info in header.items()}
    end = 0
    for begin, stop, _key in sorted((e[2], e[3], k) for k, e in entries.items()):
        if begin != end:
            raise bad("the tensors' data offsets overlap or leave holes")
        end = stop
    if end != src.size - 8 - n:
        raise bad(f"the tensors cover {end} bytes of data but the file holds {src.size - 8 - n} (truncated or "
                  f"corrupt)")
    if mmap and src.path is not None and end:
        buf = np.memmap(src.path, dtype=np.uint8, mode="c", offset=8 + n, shape=(end,))
    else:
        buf = np.frombuffer(bytearray(src.read_at(8 + n, end, "the tensor data")), np.uint8)
    return metadata, {key: _tensor(key, e, buf) for key, e in entries.items()}


def _entry(key, info, bad):
    """(reftorch dtype, shape, begin, end, stored type) of a header entry, checked; nothing is read."""
    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= set(info):
        raise bad(f"entry {key!r} must have dtype, shape and data_offsets")
    st_dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if type(st_dtype) is not str or st_dtype not in _ITEMSIZE:
        raise bad(f"entry {key!r} has unknown dtype {st_dtype!r:.80}")
    if not (type(shape) is list and all(type(s) is int and s >= 0 for s in shape)):
        raise bad(f"entry {key!r} has an invalid shape {shape!r:.80}")
    if not (type(offsets) is list and len(offsets) == 2 and all(type(o) is int for o in offsets)
            and 0 <= offsets[0] <= offsets[1]):
        raise bad(f"entry {key!r} has invalid data_offsets {offsets!r:.80}")
    count = math.prod(shape)
    if offsets[1] - offsets[0] != count * _ITEMSIZE[st_dtype]:
        raise bad(f"entry {key!r}: shape {shape} of {st_dtype} needs {count * _ITEMSIZE[st_dtype]} bytes, "
                  f"data_offsets give {offsets[1] - offsets[0]}")
    if st_dtype in _FROM_ST:
        dtype = _FROM_ST[st_dtype][0]
    elif st_dtype in _WIDENED:
        dtype = _WIDENED[st_dtype][1]
    else:
        raise bad(f"entry {key!r} has dtype {st_dtype}, which reftorch cannot represent")
    return dtype, shape, offsets[0], offsets[1], st_dtype


def _tensor(key, entry, buf):
    """A view of the data buffer (or a copy where the bytes need converting or are not aligned)."""
    dtype, shape, begin, end, st_dtype = entry
    raw = buf[begin:end]
    if st_dtype in _WIDENED:
        flat = raw.view(_WIDENED[st_dtype][0]).astype(dtype.np)
        warnings.warn(f"reftorch.load: {key!r} is stored as {st_dtype}, which reftorch has no dtype for; loaded "
                      f"as {dtype}")
    else:
        if raw.ctypes.data % dtype.itemsize:      # an unaligned tensor (another writer's layout): copy it
            raw = raw.copy()
        flat = raw.view(_FROM_ST[st_dtype][1]).astype(_NATIVE[dtype], copy=False)
    return Tensor._make(Storage(flat), 0, tuple(shape), L.contiguous_strides(shape), dtype)


def rebuild(metadata, tensors, name):
    """The saved tree, or the flat {name: tensor} dict for files without reftorch's tree metadata."""
    tree = metadata.get(_TREE_KEY)
    if tree is None:
        return tensors
    try:
        return _from_tree(json.loads(tree), tensors)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as err:
        raise CheckpointError(f"{name}: the checkpoint's '{_TREE_KEY}' metadata is corrupt "
                                                  f"({type(err).__name__}: {err})") from None


def devices(metadata, name):
    try:
        found = json.loads(metadata.get(_DEVICES_KEY, "{}"))
        if not (isinstance(found, dict) and all(isinstance(v, str) for v in found.values())):
            raise ValueError("not a map of tensor names to device names")
    except (ValueError, RecursionError) as err:
        raise CheckpointError(f"{name}: the checkpoint's '{_DEVICES_KEY}' metadata is corrupt "
                                                  f"({err})") from None
    return found


_LEAVES = ("t", "v", "f", "dtype")


def _from_tree(node, tensors):
    if not (isinstance(node, dict) and len(node) == 1):
        raise ValueError(f"a tree node must be a one-key object, got {type(node).__name__}")
    (kind, value), = node.items()
    if kind == "t":
        if type(value) is not str:
            raise ValueError("a tensor reference must be a name")
        return tensors[value]
    if kind == "v":
        if value is not None and type(value) not in (bool, int, float, str):
            raise ValueError(f"a plain value must be a JSON scalar, got {type(value).__name__}")
        return value
    if kind == "f":
        return float(str(value))
    if kind == "dtype":
        name = value.split(".")[-1] if type(value) is str else None
        if name not in D._BY_NAME:        # only dtypes: never an arbitrary attribute of reftorch
            raise ValueError(f"unknown dtype {value!r:.40}")
        return D._BY_NAME[name]
    if kind in ("dict", "odict"):
        pairs = []
        for pair in value:
            k, v = pair
            if k is not None and type(k) not in (str, int, float, bool):
                raise ValueError(f"a dict key must be a JSON scalar, got {type(k).__name__}")
            pairs.append((k, _from_tree(v, tensors)))
        return collections.OrderedDict(pairs) if kind == "odict" else dict(pairs)
    if kind in ("list", "tuple"):
        if type(value) is not list:
            raise ValueError(f"a {kind} node must hold a list")
        items = [_from_tree(v, tensors) for v in value]
        return tuple(items) if kind == "tuple" else items
    raise ValueError(f"unknown node kind {kind!r:.40}")
