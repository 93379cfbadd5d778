"""torch's legacy (pre-1.6) checkpoint stream, as `torch.save(..., _use_new_zipfile_serialization=False)` writes it.

Pickles, one after another: the magic number, the protocol version (1001), a dict of system info, the
object (its storages as persistent ids ('storage', storage type, key, location, numel, view)), and
the sorted list of storage keys; then each storage as an int64 element count and its raw bytes.
Reading walks the object pickle's opcodes first (pickletools: nothing is called) to learn each
storage's dtype and size, reads the storages, and only then unpickles the object with them.
"""
from __future__ import annotations

import io
import pickletools
import struct
import sys

import numpy as np

import reftorch as torch
from reftorch import _pickle_format as PF
from reftorch import _weights_only as WO
from reftorch._tensor import Storage


def writer(obj, pickle_module, protocol):
    """Pickles obj now and returns a function that writes the legacy stream to a binary file."""
    storages = PF.StorageTable(legacy=True)
    buf = io.BytesIO()
    sys_info = {"protocol_version": PF.PROTOCOL_VERSION, "little_endian": sys.byteorder == "little",
                "type_sizes": {"short": 2, "int": 4, "long": 4}}
    for header in (PF.MAGIC_NUMBER, PF.PROTOCOL_VERSION, sys_info):
        pickle_module.dump(header, buf, protocol=protocol)
    PF.dump(obj, buf, pickle_module, protocol, storages)
    keys = sorted(key for key, _ in storages.entries.values())
    pickle_module.dump(keys, buf, protocol=protocol)

    def write(out):
        out.write(buf.getbuffer())
        data = dict(storages.items())
        by_key = {key: ref for key, ref in storages.entries.values()}
        for key in keys:
            out.write(struct.pack("<q", len(by_key[key].storage.data)))
            out.write(memoryview(data[key]))
    return write


def load(src, loader):
    """torch's pre-1.6 stream: pickles of the magic number, protocol version and system info, the object,
    the sorted storage keys; then each storage as an int64 element count and its bytes."""
    stream = src.bounded()
    if loader.unpickle(stream, None, "the legacy header") != PF.MAGIC_NUMBER:
        raise src.error("Invalid magic number; corrupt file?")
    version = loader.unpickle(stream, None, "the legacy header")
    if version != PF.PROTOCOL_VERSION:
        raise src.error(f"Invalid protocol version: {version!r:.40}")
    info = loader.unpickle(stream, None, "the legacy header")
    little = not (isinstance(info, dict) and info.get("little_endian") is False)
    start = stream.tell()
    ids = _scan_storage_ids(stream, src)
    keys = loader.unpickle(stream, None, "the legacy storage key list")
    if type(keys) is not list or not all(type(k) is str for k in keys):
        raise src.error("the legacy storage key list is corrupt")
    roots = _read_legacy_storages(src, stream, ids, keys, little, loader)

    def persistent_load(pid):
        if type(pid) is tuple and pid and pid[0] in ("module", b"module") and not loader.weights_only:
            return pid[1]       # torch's note of a Module class (its source is not checked)
        dtype, key, location, numel, view = PF.storage_id(pid, src, legacy=True)
        if key not in roots:
            raise src.error(f"storage {key!r:.40} is missing from the file's storage list")
        if view is None:
            return roots[key]
        return _legacy_view(roots[key], view, src)

    stream.seek(start)
    return loader.unpickle(stream, persistent_load, "the legacy pickle")


def _scan_storage_ids(stream, src):
    """{key: (dtype, numel, location)} of the storages the object pickle refers to, found by walking its opcodes
    with pickletools (nothing is called) so that the storages can be read before the object is built."""
    stack, marks, memo, found = [], [], {}, {}
    try:
        for op, arg, _pos in pickletools.genops(stream):
            name = op.name
            if name == "STOP":
                return found
            if name == "MARK":
                marks.append(len(stack))
            elif name == "GLOBAL":
                stack.append(WO.ALLOWED.get(arg.replace(" ", "."), None))
            elif name in ("BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE"):
                memo[arg if name != "MEMOIZE" else len(memo)] = stack[-1]
            elif name in ("BINGET", "LONG_BINGET", "GET"):
                stack.append(memo.get(arg))
            elif name == "TUPLE":
                at = marks.pop()
                stack[at:] = [tuple(stack[at:])]
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                n = int(name[-1])
                stack[len(stack) - n:] = [tuple(stack[len(stack) - n:])]
            elif name == "BINPERSID":
                pid = stack.pop()
                if type(pid) is tuple and len(pid) == 6 and pid[0] == "storage" and type(pid[1]) is PF.StorageType:
                    found.setdefault(pid[2], (pid[1].dtype, pid[4], pid[3]))
                stack.append(None)
            else:
                _generic_stack_effect(op, arg, stack, marks)
    except (ValueError, IndexError, KeyError, TypeError) as err:
        raise src.error(f"the legacy pickle is corrupt ({type(err).__name__}: {err})") from None
    raise src.error("the legacy pickle ends before its STOP opcode (truncated)")


def _generic_stack_effect(op, arg, stack, marks):
    """An opcode's effect as pickletools describes it: values are kept for constants, else None."""
    before = op.stack_before
    if pickletools.markobject in before:
        del stack[marks.pop():]
        before = before[before.index(pickletools.stackslice) + 1:] if pickletools.stackslice in before else []
    if len(before) > len(stack):
        raise IndexError(f"{op.name} on a stack of {len(stack)}")
    del stack[len(stack) - len(before):]
    if op.stack_after:
        stack.append(arg if op.arg is not None and not op.stack_before else None)
        stack.extend([None] * (len(op.stack_after) - 1))


def _read_legacy_storages(src, stream, ids, keys, little, loader):
    roots = {}
    pos = stream.tell()
    for key in keys:
        if key not in ids:
            raise src.error(f"storage {key!r:.40} is listed but no tensor refers to it (corrupt)")
        dtype, numel, location = ids[key]
        if dtype is None:
            raise src.error(f"storage {key!r:.40} has a dtype reftorch does not have")
        (count,) = struct.unpack("<q", src.read_at(pos, 8, f"the size of storage {key!r:.40}"))
        if count != numel:
            raise src.error(f"storage {key!r:.40} holds {count} elements; the pickle expects {numel}")
        raw = np.frombuffer(bytearray(src.read_at(pos + 8, numel * dtype.itemsize, f"storage {key!r:.40}")),
                            np.uint8)
        pos += 8 + numel * dtype.itemsize
        flat = raw.view(dtype.np) if little == (sys.byteorder == "little") else PF.byteswap(raw, dtype)
        roots[key] = loader.restore(PF.LoadedStorage(Storage(flat), dtype, torch.device("cpu")), location)
    src.end = pos       # where the next object of a stream of legacy saves starts
    return roots


def _legacy_view(root, view, src):
    if not (type(view) is tuple and len(view) == 3 and all(type(v) is int for v in view[1:])):
        raise src.error("a legacy storage view must be (key, offset, size)")
    _, offset, size = view
    if offset < 0 or size < 0 or offset + size > len(root):
        raise src.error(f"a legacy storage view [{offset}, {offset + size}) lies outside its storage of {len(root)}")
    return PF.LoadedStorage(Storage(root.storage.data[offset:offset + size]), root.dtype, root.device)
