"""reftorch.save / reftorch.load: checkpoints in PyTorch's own format, safe to load by default.

`save` writes what torch.save writes: a zip archive with `data.pkl` (the object, pickled with protocol 2,
its tensors as `torch._utils._rebuild_tensor_v2` of storages given as persistent ids), one record
`data/<key>` per storage (raw little-endian bytes, 64-byte aligned), `byteorder`, `version` and the
rest of torch's records (reftorch/_zip_format.py, reftorch/_pickle_format.py). Real torch loads it
with `weights_only=True`. `_use_new_zipfile_serialization=False` writes the legacy (pre-1.6) stream.
A save to a path is atomic: a temporary file in the same directory, renamed over the target.

`load` reads torch's zip format, the legacy format and safetensors files (told apart by their first
bytes). `weights_only=True` (the default) unpickles with reftorch/_weights_only.py: tensors, plain
data and what `add_safe_globals` allows, nothing else runs. `weights_only=False` is full pickle, for
trusted files (a whole saved Module, NumPy arrays). Every malformed file raises CheckpointError naming
the file and what is wrong, after reading at most what the file holds.

Safetensors: `save_safetensors(obj, f)` writes one (reftorch/_safetensors.py), `load` and
`load_safetensors` read them.
"""
from __future__ import annotations

import importlib
import io
import os
import pickle
import pickletools
import struct
import sys
import tempfile
import warnings

import numpy as np

import reftorch as torch
from reftorch import _legacy_format as LF
from reftorch import _pickle_format as PF
from reftorch import _safetensors as ST
from reftorch import _weights_only as WO
from reftorch._checkpoint import CheckpointError, MalformedData, Source
from reftorch._tensor import Storage
from reftorch._zip_format import ZipReader, ZipWriter, archive_name, is_zip

__all__ = ["save", "load", "save_safetensors", "load_safetensors", "add_safe_globals", "safe_globals",
           "get_safe_globals", "clear_safe_globals", "get_unsafe_globals_in_checkpoint", "CheckpointError"]

DEFAULT_PROTOCOL = 2
add_safe_globals = WO.add_safe_globals
get_safe_globals = WO.get_safe_globals
clear_safe_globals = WO.clear_safe_globals
safe_globals = WO.safe_globals
_TRUE = ("1", "y", "yes", "true")


# ============================================================================ save

def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save `obj` to `f` (a path, pathlib.Path or binary file object) in torch's checkpoint format."""
    is_path = isinstance(f, (str, os.PathLike))
    if not is_path and not hasattr(f, "write"):
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a 'write' attribute")
    path = os.fspath(f) if is_path else None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if _use_new_zipfile_serialization:
        name = archive_name(path)       # checked before anything is written
        writer = _zip_writer(obj, pickle_module, pickle_protocol, name, _disable_byteorder_record)
    else:
        writer = LF.writer(obj, pickle_module, pickle_protocol)
    if path is None:
        writer(f)
        if hasattr(f, "flush"):
            f.flush()
    else:
        _atomic_write(path, writer)


def _zip_writer(obj, pickle_module, protocol, name, no_byteorder):
    """Pickles obj now (so that an unpicklable object fails before any output) and returns a function
    that writes the archive to a binary stream."""
    storages = PF.StorageTable()
    buf = io.BytesIO()
    PF.dump(obj, buf, pickle_module, protocol, storages)

    def write(out):
        z = ZipWriter(out, name)
        z.write_record("data.pkl", buf.getbuffer())
        z.write_record(".format_version", b"1")
        z.write_record(".storage_alignment", b"64")
        if not no_byteorder:
            z.write_record("byteorder", sys.byteorder.encode())
        for key, data in storages.items():
            z.write_record(f"data/{key}", data)
        z.write_record("version", b"3\n")
        z.write_record(".data/serialization_id", z.serialization_id())
        z.close()
    return write


def _atomic_write(path, writer):
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as err:      # name the checkpoint, not the temporary file
        raise type(err)(err.errno, f"{err.strerror} (cannot create a file in {directory})", path) from None
    try:
        with os.fdopen(fd, "wb") as out:
            writer(out)
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


def save_safetensors(obj, f):
    """Write `obj` as a safetensors file: a {name: tensor} dict exactly as `safetensors.torch.save_file`
    writes it, or a tree of dicts/lists/tuples of tensors and plain values (its shape kept in the
    file's metadata). f is a path (written atomically) or a binary file object."""
    data = ST.encode(obj)
    if hasattr(f, "write"):
        f.write(data)
    else:
        _atomic_write(os.fspath(f), lambda out: out.write(data))


# ============================================================================ load

def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load what `save` (or torch.save, or a safetensors writer) wrote to `f`.

    weights_only defaults to True (as in torch since 2.6; False when a pickle_module is given):
    only tensors, plain data and the globals `add_safe_globals` allows are unpickled. map_location is
    a device (or its name) for every storage, a {saved location: new location} dict, or a callable
    (storage, location) -> storage or None. mmap=True maps the storages from the file (a path) instead
    of reading them."""
    weights_only = _resolve_weights_only(weights_only, pickle_module)
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
        if pickle_load_args:
            warnings.warn("pickle_load_args only works if `weights_only=False`.")
    elif pickle_module is None:
        pickle_module = pickle
    pickle_load_args.setdefault("encoding", "utf-8")
    if isinstance(map_location, (str, bytes)):
        torch.device(map_location.decode() if isinstance(map_location, bytes) else map_location)   # checked now
    is_path = isinstance(f, (str, os.PathLike))
    if mmap and not is_path:
        raise ValueError("f must be a file path in order to use the mmap argument")
    with Source(f) as src:
        head = src.read_at(0, min(src.size, 9), "the first bytes")
        if is_zip(head):
            return _load_zip(src, _Loader(src, map_location, weights_only, pickle_module, pickle_load_args),
                             bool(mmap))
        if ST.is_safetensors(head):
            return _load_safetensors(src, map_location, bool(mmap))
        if mmap:
            raise RuntimeError(f"mmap can only be used with files saved with `torch.save({src.name}, "
                               f"_use_new_zipfile_serialization=True), please torch.save your checkpoint with "
                               f"this option in order to use mmap.")
        if head[:1] == pickle.PROTO:
            result = LF.load(src, _Loader(src, map_location, weights_only, pickle_module, pickle_load_args))
            src.seek(src.end)       # as torch leaves a file object: after this checkpoint, at the next
            return result
        raise _unknown_format(src, head)


def load_safetensors(f, map_location=None, mmap=False):
    """Read a safetensors file: the saved tree, or a {name: tensor} dict."""
    with Source(f) as src:
        return _load_safetensors(src, map_location, mmap)


def get_unsafe_globals_in_checkpoint(f):
    """The globals of a torch zip checkpoint that a weights-only load would refuse (nothing is unpickled)."""
    with Source(f) as src:
        if not is_zip(src.read_at(0, min(src.size, 9), "the first bytes")):
            raise ValueError("Expected input to be a checkpoint returned by torch.save")
        z = ZipReader(src)
        if z.has("constants.pkl"):
            raise ValueError("Expected input to be a checkpoint returned by torch.save but got a torchscript "
                             "checkpoint")
        allowed = set(WO.ALLOWED) | set(WO._user_globals())
        found = set()
        try:
            for op, arg, _ in pickletools.genops(io.BytesIO(z.read("data.pkl"))):
                if op.name == "GLOBAL":
                    found.add(WO.global_name(*arg.split(" ", 1)))
        except ValueError as err:
            raise src.error(f"record '{z.prefix}data.pkl' is not a valid pickle ({err})") from None
        return sorted(found - allowed)


def _resolve_weights_only(weights_only, pickle_module):
    forced = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    forced_off = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    if forced and forced_off:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` "
                           "should be set, but both were set.")
    if forced:
        return True
    if weights_only is None:
        if forced_off:
            warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the`weights_only` "
                          "argument was not explicitly passed to `torch.load`, forcing weights_only=False.")
            return False
        return pickle_module is None
    return bool(weights_only)


def _unknown_format(src, head):
    if src.size == 0:
        return src.error("the file is empty (0 bytes): not a valid checkpoint (truncated?)")
    if src.size > 262 and src.read_at(257, 5, "the tar header") == b"ustar":
        return src.error("a checkpoint in the tar format of torch before 0.4, which reftorch does not read "
                         "(torch itself refuses it with weights_only=True)")
    return src.error(f"not a valid checkpoint: neither a torch zip archive, a legacy torch pickle nor a safetensors "
                     f"file (it starts with bytes {head.hex(' ')})")


# ---------------------------------------------------------------------------- storages and devices

class _Loader:
    """What a load needs while unpickling: the file, where storages go, and the unpickler to use."""

    def __init__(self, src, map_location, weights_only, pickle_module, pickle_load_args):
        self.src = src
        self.map_location = map_location
        self.weights_only = weights_only
        self.pickle_module = pickle_module
        self.args = pickle_load_args
        self.loaded = {}

    def restore(self, storage, location):
        """torch's restore_location: the storage (on cpu) moved where map_location says."""
        where = self.map_location
        if callable(where) and not isinstance(where, (torch.device, str, bytes, dict)):
            try:
                result = where(storage, location)
            except Exception as err:        # the caller's own error: not the file's
                raise _CallerError(err) from err
            if result is not None:
                if type(result) is not PF.LoadedStorage:
                    raise _CallerError(TypeError(f"map_location returned a {type(result).__name__}; it must return "
                                                 f"the storage it was given (moved with .cpu(), .cuda() or .to()) or "
                                                 f"None"))
                return result
        elif isinstance(where, dict):
            location = where.get(location, location)
        elif where is not None:
            location = where.decode() if isinstance(where, bytes) else str(where)
        return _default_restore(storage, location, self.src)

    def unpickle(self, stream, persistent_load, what):
        """The object pickled in `stream`; malformed data becomes a CheckpointError naming the file."""
        try:
            if self.weights_only:
                u = WO.Unpickler(stream, persistent_load=persistent_load, encoding=self.args["encoding"])
                return u.load()
            return _full_unpickler(self.pickle_module, stream, persistent_load, self.args).load()
        except CheckpointError:
            raise
        except _CallerError as err:
            raise err.args[0] from None
        except MalformedData as err:
            raise self.src.error(f"{what} holds a value no valid checkpoint has: {err}") from None
        except pickle.UnpicklingError as err:
            if self.weights_only:
                raise CheckpointError(f"{WO.weights_only_message(str(err))}\n\nFile: {self.src.name}") from None
            raise self.src.error(f"{what} is not a valid pickle ({err})") from None
        except EOFError as err:
            raise self.src.error(f"{what} ends early: {err or 'truncated'}") from None
        except (IndexError, KeyError, TypeError, ValueError, AttributeError, LookupError, struct.error,
                UnicodeDecodeError, OverflowError, RecursionError, MemoryError) as err:
            if not self.weights_only and not isinstance(err, (IndexError, struct.error, UnicodeDecodeError)):
                raise       # full pickle runs the file's own code: its errors are its own
            raise self.src.error(f"{what} is corrupt or holds values reftorch cannot rebuild "
                                 f"({type(err).__name__}: {err})") from None


class _CallerError(Exception):
    """An exception of the caller's map_location, carried through the unpickler's error handling untouched."""


def _default_restore(storage, location, src):
    if type(location) is not str:
        raise src.error(f"a storage's location must be a string, got {type(location).__name__}")
    if location == "cpu" or location.startswith("cpu:"):
        return storage.cpu()
    if location == "cuda" or location.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                               "False. If you are running on a CPU-only machine, please use torch.load with "
                               "map_location=torch.device('cpu') to map your storages to the CPU.")
        return storage.to(location)
    raise src.error(f"don't know how to restore data location of a storage (tagged with {location!r:.40})")


def _reftorch_counterpart(module, name):
    """reftorch's class or function for torch's `module.name` (a whole pickled torch Module): the same
    path under reftorch, or the nearest package above it that exports the name (torch.nn.modules.batchnorm
    .BatchNorm1d is reftorch.nn.BatchNorm1d)."""
    parts = ["reftorch"] + module.split(".")[1:]
    for i in range(len(parts), 0, -1):
        try:
            found = getattr(importlib.import_module(".".join(parts[:i])), name, None)
        except ImportError:
            continue
        if found is not None:
            return found
    raise pickle.UnpicklingError(f"the checkpoint names {module}.{name}, which reftorch does not have")


def _full_unpickler(pickle_module, stream, persistent_load, args):
    class Unpickler(pickle_module.Unpickler):
        def find_class(self, module, name):
            full = f"{module}.{name}"
            if full in WO.ALLOWED:
                obj = WO.ALLOWED[full]
                if isinstance(obj, PF.Absent):
                    raise MalformedData(f"the checkpoint holds {obj.what}, which reftorch does not have")
                return obj
            if module == "torch" or module.startswith("torch."):       # a torch-pickled object: reftorch's own
                return _reftorch_counterpart(module, name)
            return super().find_class(module, name)

    u = Unpickler(stream, **args)
    if persistent_load is not None:
        u.persistent_load = persistent_load
    return u


# ---------------------------------------------------------------------------- the zip format

def _load_zip(src, loader, mmap):
    z = ZipReader(src)
    if z.has("constants.pkl"):
        raise src.error("a TorchScript archive (torch.jit.save), which reftorch cannot load")
    order = z.read("byteorder") if z.has("byteorder") else b"little"
    if order not in (b"little", b"big"):
        raise src.error(f"Unknown endianness type: {order[:20]!r}")
    data_pkl = z.read("data.pkl")
    mapped = np.memmap(src.path, dtype=np.uint8, mode="c") if mmap else None

    def persistent_load(pid):
        dtype, key, location, numel, _ = PF.storage_id(pid, src, legacy=False)
        if key in loader.loaded:
            return loader.loaded[key]
        nbytes = numel * dtype.itemsize
        record = f"data/{key}"
        info = z.info(record)
        if info.file_size != nbytes:        # checked before anything is allocated
            raise src.error(f"record '{info.filename}' has {info.file_size} bytes; the pickle expects {nbytes} "
                            f"({numel} elements of {dtype})")
        if mapped is not None and info.compress_type == 0 and order.decode() == sys.byteorder:
            start = z.data_offset(record)
            raw = mapped[start:start + nbytes].view(np.ndarray)
            if start % dtype.itemsize:
                raw = raw.copy()
        else:
            raw = np.empty(nbytes, np.uint8)
            z.read(record, expected=nbytes, into=raw)
        flat = raw.view(dtype.np) if order.decode() == sys.byteorder else PF.byteswap(raw, dtype)
        storage = loader.restore(PF.LoadedStorage(Storage(flat), dtype, torch.device("cpu")), location)
        loader.loaded[key] = storage
        return storage

    return loader.unpickle(io.BytesIO(data_pkl), persistent_load, f"record '{z.prefix}data.pkl'")


# ---------------------------------------------------------------------------- safetensors

def _load_safetensors(src, map_location, mmap):
    if map_location is not None and not callable(map_location) and not isinstance(map_location, dict):
        map_location = torch.device(map_location)
    metadata, tensors = ST.decode(src, mmap)
    places = ST.devices(metadata, src.name)
    tensors = {key: _place(t, places.get(key, "cpu"), map_location) for key, t in tensors.items()}
    return ST.rebuild(metadata, tensors, src.name)


def _place(t, location, map_location):
    """A loaded (cpu) tensor saved at `location`, moved where map_location says (the callable gets the
    tensor: a safetensors file has no storages)."""
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
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                           "False. If you are running on a CPU-only machine, please use torch.load with "
                           "map_location=torch.device('cpu') to map your storages to the CPU.")
    return t.to(device)
