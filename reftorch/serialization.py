"""reftorch.save / reftorch.load: checkpoints in the safetensors format.

A file is: 8 bytes (little-endian u64) giving the header's length N, N bytes of JSON header, then the
tensors' raw little-endian bytes. The header maps each tensor's name to {"dtype", "shape",
"data_offsets": [begin, end]} (offsets into the byte buffer after the header) and may hold a
"__metadata__" map of strings. Nothing in a file is executed on load: this is data, not pickle.

Flat {str: Tensor} dicts (a model's state_dict) are written exactly as `safetensors.torch.save_file`
writes them, so either library reads the other's files. Anything else made of dicts, lists and
tuples of tensors, numbers, strings, bools and None (an optimizer's state_dict, a training
checkpoint) is stored with its tensors under dotted keys ("optim.state.0.exp_avg") and the shape of
the tree as JSON in `__metadata__["reftorch.tree"]`; `load` rebuilds the same tree. A safetensors
reader sees the tensors under their dotted names.

Tensors not on the cpu have their device recorded in `__metadata__["reftorch.devices"]` (JSON: name ->
"cuda:0"); `load` puts them back there, or where `map_location` says (PyTorch's rules: a device or its
name for every tensor, a {saved location: new location} dict, or a callable (tensor, location) -> tensor,
or None for the saved place).
"""
from __future__ import annotations

import collections
import io
import json
import math
import os
import struct
import tempfile
import warnings

import numpy as np

import reftorch as torch

__all__ = ["save", "load"]

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


class CheckpointError(RuntimeError):
    """A file that is not a readable safetensors checkpoint (truncated, corrupt, another format)."""


# ============================================================================ save

def save(obj, f, **kwargs):
    """Write `obj` (a state_dict, or a tree of dicts/lists/tuples of tensors and plain values) to `f`.

    f is a path (written atomically: a temporary file in the same directory, then renamed over the
    target, so a failed save leaves any previous file intact) or a binary file object.
    """
    tensors, metadata = _flatten(obj)
    devices = {name: str(t.device) for name, t in tensors.items() if t.device.type != "cpu"}
    if devices:
        metadata[_DEVICES_KEY] = json.dumps(devices)
    data = _encode(tensors, metadata)
    if hasattr(f, "write"):
        f.write(data)
        return
    path = os.fspath(f)
    _atomic_write(path, data)


def _atomic_write(path, data):
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as err:      # name the checkpoint, not the temporary file
        raise type(err)(err.errno, f"{err.strerror} (cannot create a file in {directory})", path) from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _flatten(obj):
    """(name -> tensor, metadata): flat str->Tensor dicts as they are, anything else as a tree."""
    if isinstance(obj, dict) and obj and all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                             for k, v in obj.items()):
        if "__metadata__" in obj:
            raise ValueError("reftorch.save: '__metadata__' is reserved by the safetensors format; rename that key")
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
            raise ValueError(f"reftorch.save: two entries flatten to the same key {name!r}; rename one of them")
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
                raise TypeError(f"reftorch.save: dict keys must be str, int, float, bool or None; got "
                                f"{type(k).__name__} at {where}")
            items.append([k, _to_tree(v, path + [k], tensors)])
        kind = "odict" if isinstance(obj, collections.OrderedDict) else "dict"
        return {kind: items}
    if isinstance(obj, (list, tuple)):
        kind = "tuple" if isinstance(obj, tuple) else "list"
        return {kind: [_to_tree(v, path + [i], tensors) for i, v in enumerate(obj)]}
    raise TypeError(f"reftorch.save stores tensors, numbers, strings, bools, None, dtypes and dicts/lists/tuples "
                    f"of them (no code is pickled); got {type(obj).__name__} at {where}")


def _encode(tensors, metadata):
    """The bytes of a safetensors file. The header lists the tensors in the caller's order; their data
    is laid out by decreasing item size, so that every tensor is aligned to its item size."""
    header = {"__metadata__": metadata}
    arrays = []
    for name, t in tensors.items():
        if t.dtype not in _TO_ST:
            raise TypeError(f"reftorch.save: dtype {t.dtype} of {name!r} has no safetensors equivalent")
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

def load(f, map_location=None, weights_only=True, mmap=None, **kwargs):
    """Read a checkpoint written by `save` (or any safetensors file) back into tensors.

    Returns the tree that was saved, or a {name: tensor} dict for files without reftorch's tree
    metadata. Raises FileNotFoundError for a missing path and CheckpointError (a RuntimeError)
    naming the file for anything that is not a complete safetensors file.
    """
    if map_location is not None and not callable(map_location) and not isinstance(map_location, dict):
        map_location = torch.device(map_location)       # checks the name before reading anything
    if hasattr(f, "read"):
        name = getattr(f, "name", None) or "<file object>"
        data = f.read()
    else:
        name = os.fspath(f)
        with open(name, "rb") as fh:
            data = fh.read()
    header, tensors = _decode(data, name)
    metadata = header.get("__metadata__") or {}
    try:
        devices = json.loads(metadata.get(_DEVICES_KEY, "{}"))
        if not (isinstance(devices, dict) and all(isinstance(v, str) for v in devices.values())):
            raise ValueError("not a map of tensor names to device names")
    except ValueError as err:
        raise CheckpointError(f"{name}: the checkpoint's '{_DEVICES_KEY}' metadata is corrupt ({err})") from None
    tensors = {key: _place(t, devices.get(key, "cpu"), map_location) for key, t in tensors.items()}
    tree = metadata.get(_TREE_KEY)
    if tree is None:
        return tensors
    try:
        return _from_tree(json.loads(tree), tensors)
    except (ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{name}: the checkpoint's '{_TREE_KEY}' metadata is corrupt ({err})") from None


def _place(t, location, map_location):
    """The loaded (cpu) tensor t, saved at `location` ("cpu", "cuda:0"), moved where map_location says."""
    if callable(map_location) and not isinstance(map_location, torch.device):
        out = map_location(t, location)
        if out is not None:
            return out
    elif isinstance(map_location, dict):
        location = map_location.get(location, location)
    elif map_location is not None:
        location = map_location
    device = torch.device(location)
    if device.type == "cpu":
        return t
    if device.type == "cuda" and map_location is None and not torch.cuda.is_available():
        raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                           "False. If you are running on a CPU-only machine, please use torch.load with "
                           "map_location=torch.device('cpu') to map your storages to the CPU.")
    return t.to(device)


def _decode(data, name):
    def bad(why):
        return CheckpointError(f"{name}: not a valid safetensors checkpoint: {why}")

    if len(data) < 8:
        raise bad(f"the file has {len(data)} bytes, fewer than the 8-byte header length (truncated or empty)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > _MAX_HEADER:
        raise bad(f"the header length field says {n} bytes (this is not a safetensors file, or it is corrupt)")
    if 8 + n > len(data):
        raise bad(f"the header says {n} bytes but only {len(data) - 8} follow (truncated)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise bad(f"the header is not valid JSON ({err})") from None
    if not isinstance(header, dict):
        raise bad("the header is not a JSON object")
    metadata = header.get("__metadata__")
    if metadata is not None and not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        raise bad("__metadata__ must map strings to strings")
    buf = memoryview(data)[8 + n:]
    tensors = {}
    spans = []
    for key, info in header.items():
        if key == "__metadata__":
            continue
        tensors[key] = _read_tensor(key, info, buf, bad)
        spans.append(tuple(info["data_offsets"]))
    spans.sort()
    end = 0
    for begin, stop in spans:
        if begin != end:
            raise bad("the tensors' data offsets overlap or leave holes")
        end = stop
    if end != len(buf):
        raise bad(f"the tensors cover {end} bytes of data but the file holds {len(buf)} (truncated or corrupt)")
    return header, tensors


def _read_tensor(key, info, buf, bad):
    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= set(info):
        raise bad(f"entry {key!r} must have dtype, shape and data_offsets")
    st_dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not (isinstance(shape, list) and all(isinstance(s, int) and s >= 0 for s in shape)):
        raise bad(f"entry {key!r} has an invalid shape {shape!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)
            and 0 <= offsets[0] <= offsets[1]):
        raise bad(f"entry {key!r} has invalid data_offsets {offsets!r}")
    if st_dtype not in _ITEMSIZE:
        raise bad(f"entry {key!r} has unknown dtype {st_dtype!r}")
    begin, end = offsets
    count = math.prod(shape)
    if end - begin != count * _ITEMSIZE[st_dtype]:
        raise bad(f"entry {key!r}: shape {shape} of {st_dtype} needs {count * _ITEMSIZE[st_dtype]} bytes, "
                  f"data_offsets give {end - begin}")
    if end > len(buf):
        raise bad(f"entry {key!r} ends at byte {end} of a {len(buf)}-byte data section (truncated)")
    raw = buf[begin:end]
    if st_dtype in _FROM_ST:
        dtype, np_type = _FROM_ST[st_dtype]
        arr = np.frombuffer(raw, dtype=np_type, count=count)
    elif st_dtype in _WIDENED:
        np_type, dtype = _WIDENED[st_dtype]
        if st_dtype == "BF16":      # bfloat16 is the top half of a float32
            arr = (np.frombuffer(raw, dtype="<u2", count=count).astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=np_type, count=count)
        warnings.warn(f"reftorch.load: {key!r} is stored as {st_dtype}, which reftorch has no dtype for; loaded "
                      f"as {dtype}")
    else:
        raise bad(f"entry {key!r} has dtype {st_dtype}, which reftorch cannot represent")
    arr = arr.astype(_NATIVE[dtype], copy=True)       # native byte order, writable, owns its memory
    return torch.from_numpy(arr.reshape(shape))


def _from_tree(node, tensors):
    (kind, value), = node.items()
    if kind == "t":
        return tensors[value]
    if kind == "v":
        return value
    if kind == "f":
        return float(value)
    if kind == "dtype":
        return getattr(torch, value.split(".")[-1])
    if kind in ("dict", "odict"):
        pairs = [(k, _from_tree(v, tensors)) for k, v in value]
        return collections.OrderedDict(pairs) if kind == "odict" else dict(pairs)
    if kind == "list":
        return [_from_tree(v, tensors) for v in value]
    if kind == "tuple":
        return tuple(_from_tree(v, tensors) for v in value)
    raise ValueError(f"unknown node kind {kind!r}")

from ._safe_globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals  # noqa: E402,F401
