"""PyTorch's checkpoint container: a zip archive laid out byte for byte as torch's writer (miniz) does.

Every record is stored uncompressed under "<archive>/<name>", its data aligned to 64 bytes by an
"FB" extra field of 'Z' padding (so that storages can be memory-mapped); a data descriptor follows
each non-empty record; the archive ends with a zip64 end-of-central-directory record, its locator and
the classic end record. Reading goes through Python's zipfile for the central directory, with every
size and offset checked against the file before a byte of it is read.
"""
from __future__ import annotations

import collections
import struct
import zipfile
import zlib

ALIGNMENT = 64
_ZIP64_AT = 0xFFFFFFFF  # sizes and offsets at or past this go to zip64 extra fields
_MARK = 0xFFFFFFFF      # what the 32-bit field then holds
_FLAGS = 0x0808         # bit 3: sizes in a data descriptor; bit 11: UTF-8 names
_FLAGS_EMPTY = 0x0800


def archive_name(path):
    """torch's folder name inside the archive: the file's base name without its last extension, or
    "archive" for file objects and names that are not ASCII."""
    if path is None:
        return "archive"
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    if not base.isascii():
        return "archive"
    stem = base[:base.rfind(".")] if "." in base else base
    if not stem:
        raise RuntimeError(f"invalid file name: {path}")      # torch's check (inline_container.cc)
    return stem


class ZipWriter:
    """Writes records one after another to a binary stream, then the central directory on close()."""

    def __init__(self, out, name):
        self._out = out
        self._prefix = name + "/"
        self._pos = 0
        self._entries = []      # (name bytes, crc, size, local header offset)
        self._names = []        # record names (without the folder) in the order written, for the serialization id
        self._crcs = 0          # the CRC-32s of the non-empty records, combined as torch's writer does

    def _write(self, data):
        self._out.write(data)
        self._pos += len(data)

    def write_record(self, name, data):
        """One stored record; `data` is bytes or any object with the buffer protocol (a NumPy array)."""
        view = memoryview(data).cast("B")
        size = view.nbytes
        raw_name = (self._prefix + name).encode("utf-8")
        offset = self._pos
        z64 = _zip64_extra(size, offset)
        start = offset + 30 + len(raw_name) + len(z64) + 4
        pad = -start % ALIGNMENT
        extra = z64 + b"FB" + struct.pack("<H", pad) + b"Z" * pad
        crc = zlib.crc32(view)
        flags = _FLAGS if size else _FLAGS_EMPTY
        self._write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 0, flags, 0, 0, 0, 0, 0, 0,
                                len(raw_name), len(extra)))
        self._write(raw_name)
        self._write(extra)
        self._write(view)
        if size:
            fmt = "<IIQQ" if z64 else "<IIII"
            self._write(struct.pack(fmt, 0x08074B50, crc, size, size))
            self._crcs = _hash_combine(self._crcs, crc)
        self._entries.append((raw_name, crc, size, offset))
        self._names.append(name.encode("utf-8"))

    def serialization_id(self):
        """torch's `.data/serialization_id`: a 20-digit combined hash of the names of the records written so
        far, in the order torch's std::unordered_set holds them, then their combined CRC-32s (20 digits).
        The same records give the same id, so the same checkpoint gives the same bytes."""
        names = 0
        for name in _unordered_set_order(self._names):
            names = _hash_combine(names, _std_hash(name))
        return f"{names:020d}{self._crcs:020d}".encode()

    def close(self):
        cd_offset = self._pos
        for raw_name, crc, size, offset in self._entries:
            extra = _zip64_extra(size, offset)
            small = size if size < _ZIP64_AT else _MARK
            self._write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0, 0, _FLAGS if size else _FLAGS_EMPTY, 0, 0,
                                    0, crc, small, small, len(raw_name), len(extra), 0, 0, 0, 0,
                                    offset if offset < _ZIP64_AT else _MARK))
            self._write(raw_name)
            self._write(extra)
        cd_size = self._pos - cd_offset
        n = len(self._entries)
        eocd64 = self._pos
        self._write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x031E, 0x002D, 0, 0, n, n, cd_size, cd_offset))
        self._write(struct.pack("<IIQI", 0x07064B50, 0, eocd64, 1))
        self._write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(n, 0xFFFF), min(n, 0xFFFF),
                                cd_size if cd_size < _ZIP64_AT else _MARK,
                                cd_offset if cd_offset < _ZIP64_AT else _MARK, 0))


_M64 = (1 << 64) - 1


def _hash_combine(seed, value):
    """c10::hash_combine on 64-bit size_t."""
    return (seed ^ (value + 0x9E3779B9 + (seed << 6) + (seed >> 2))) & _M64


def _std_hash(data, seed=0xC70F6907):
    """std::hash<std::string> of libstdc++ on 64-bit machines (_Hash_bytes)."""
    mul = (0xC6A4A793 << 32) + 0x5BD1E995

    def shift_mix(v):
        return v ^ (v >> 47)
    aligned = len(data) & ~7
    h = (seed ^ (len(data) * mul)) & _M64
    for i in range(0, aligned, 8):
        h = ((h ^ (shift_mix(int.from_bytes(data[i:i + 8], "little") * mul & _M64) * mul & _M64)) * mul) & _M64
    if len(data) & 7:
        h = ((h ^ int.from_bytes(data[aligned:], "little")) * mul) & _M64
    h = shift_mix(h) * mul & _M64
    return shift_mix(h)


# the bucket counts of a libstdc++ std::unordered_set<std::string> growing one insert at a time (it grows when
# an insert would pass one element per bucket)
_BUCKETS = (13, 29, 59, 127, 257, 541, 1109, 2357, 5087, 10273, 20753, 42043, 85229, 172933, 351061, 712697,
            1447153, 2938679, 5967347, 12117689)


def _unordered_set_order(names):
    """The order libstdc++'s unordered_set iterates `names` (inserted in this order): its single list is a
    run per bucket, a bucket that gains its first element goes to the front, and an element goes to the
    front of its bucket's run; a rehash re-inserts the list's elements in list order by the same rule."""
    order, runs, n_buckets = collections.deque(), {}, 0
    for count, name in enumerate(names, 1):
        if count > n_buckets:
            if count > _BUCKETS[-1]:
                return sorted(names)       # beyond any checkpoint: an order of our own
            n_buckets = next(n for n in _BUCKETS if n >= count)
            items = [item for b in order for item in runs[b]]
            order, runs = collections.deque(), {}
            for item in items:
                _insert(order, runs, item, n_buckets)
        _insert(order, runs, (name, _std_hash(name)), n_buckets)
    return [name for b in order for name, _ in runs[b]]


def _insert(order, runs, item, n_buckets):
    b = item[1] % n_buckets
    if b not in runs:
        runs[b] = collections.deque()
        order.appendleft(b)
    runs[b].appendleft(item)


def _zip64_extra(size, offset):
    """The zip64 extra field of a record this large or this far into the file (sizes, then offset), or b""."""
    body = (struct.pack("<QQ", size, size) if size >= _ZIP64_AT else b"") + \
           (struct.pack("<Q", offset) if offset >= _ZIP64_AT else b"")
    return struct.pack("<HH", 1, len(body)) + body if body else b""


class ZipReader:
    """The records of a torch zip checkpoint, each located and checked before it is read."""

    def __init__(self, source):
        self.src = source
        try:
            self._zip = zipfile.ZipFile(source.bounded())
            infos = self._zip.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, struct.error,
                IndexError, OverflowError, NotImplementedError) as err:
            raise source.error(f"not a valid zip checkpoint: {err}") from None
        if not infos:
            raise source.error("the zip archive is empty (no data.pkl record)")
        first = infos[0].filename
        self.prefix = first[:first.index("/") + 1] if "/" in first else ""
        self._records = {i.filename[len(self.prefix):]: i for i in infos if i.filename.startswith(self.prefix)}

    def has(self, name):
        return name in self._records

    def names(self):
        return list(self._records)

    def info(self, name):
        info = self._records.get(name)
        if info is None:
            raise self.src.error(f"the archive has no record '{self.prefix}{name}' (truncated or corrupt)")
        if info.flag_bits & 0x1:
            raise self.src.error(f"record '{info.filename}' is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise self.src.error(f"record '{info.filename}' uses compression method {info.compress_type}; torch "
                                 f"checkpoints store records uncompressed")
        return info

    def data_offset(self, name):
        """Where a record's bytes start in the file: after its local header, name and extra field."""
        info = self.info(name)
        head = self.src.read_at(info.header_offset, 30, f"the local header of record '{info.filename}'")
        sig, method, name_len, extra_len = struct.unpack("<I4xH16xHH", head)
        raw_name = self.src.read_at(info.header_offset + 30, name_len, f"the name of record '{info.filename}'")
        stored_name = info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437", "replace")
        if sig != 0x04034B50 or method != info.compress_type or raw_name != stored_name:
            raise self.src.error(f"record '{info.filename}': its local header at byte {info.header_offset} does not "
                                 f"match the central directory (corrupt)")
        start = info.header_offset + 30 + name_len + extra_len
        if start + info.compress_size > self.src.size:
            raise self.src.error(f"record '{info.filename}' claims {info.compress_size} bytes at byte {start} but "
                                 f"the file has {self.src.size} (truncated or corrupt)")
        return start

    def read(self, name, expected=None, into=None):
        """A record's bytes (checked against `expected` size and the stored CRC), or read into `into`
        (a writable uint8 buffer of exactly the expected size)."""
        info = self.info(name)
        if expected is not None and info.file_size != expected:
            raise self.src.error(f"record '{info.filename}' has {info.file_size} bytes; the pickle expects "
                                 f"{expected}")
        start = self.data_offset(name)
        what = f"record '{info.filename}'"
        if info.compress_type == zipfile.ZIP_STORED:
            if info.compress_size != info.file_size:
                raise self.src.error(f"{what} is stored with two different sizes (corrupt)")
            if into is not None:
                data = self.src.readinto_at(start, memoryview(into).cast("B"), what)
            else:
                data = self.src.read_at(start, info.file_size, what)
        else:
            data = self._inflate(info)
            if into is not None:
                into[:] = memoryview(data).cast("B")
        if zlib.crc32(data) != info.CRC:
            raise self.src.error(f"{what} fails its CRC-32 check (corrupt)")
        return into if into is not None else data

    def _inflate(self, info):
        try:
            with self._zip.open(info) as member:
                data = member.read(info.file_size)      # bounded by the size the directory claims
                extra = member.read(1)
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as err:
            raise self.src.error(f"record '{info.filename}' cannot be decompressed: {err}") from None
        if len(data) != info.file_size or extra:
            raise self.src.error(f"record '{info.filename}' decompresses to a size other than the "
                                 f"{info.file_size} bytes claimed (corrupt)")
        return data


def is_zip(head):
    return head[:4] in (b"PK\x03\x04", b"PK\x05\x06")


__all__ = ["ZipWriter", "ZipReader", "archive_name", "is_zip"]
