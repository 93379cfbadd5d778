"""The checkpoint file itself: the error every malformed file raises, and reads bounded by its size.

A checkpoint is read through a `Source`: a path or a seekable binary file object whose size is known
before anything is read, so that no count taken from the file (a header length, a record size, a
pickled string length) can make a read allocate more than the file holds.
"""
from __future__ import annotations

import io
import os
import pickle
import stat


class CheckpointError(RuntimeError, pickle.UnpicklingError):
    """A file that is not a readable checkpoint: truncated, corrupt, another format, or unsafe to load.

    A RuntimeError (as torch's loader raises for corrupt files) and a pickle.UnpicklingError (what torch's
    weights-only loader raises for globals it refuses), so code written for either catches it."""


class MalformedData(ValueError):
    """Raised by the rebuild functions for a value no valid checkpoint holds; the loader turns it into a
    CheckpointError naming the file (the rebuild functions do not know it)."""


class Source:
    """A checkpoint opened for reading: `name` for messages, `size` in bytes, and reads that never go
    past the end. `file` is positioned by the caller; `read` never returns more than remains."""

    def __init__(self, f):
        self._owned = None
        self.end = None         # set by a reader that knows where its checkpoint ends inside a longer stream
        if hasattr(f, "read"):
            self.name = _file_name(f)
            self.path = None
            self.file = f
            self.start = _seekable_tell(f)
            self.size = f.seek(0, io.SEEK_END) - self.start
            f.seek(self.start)
        else:
            self.path = self.name = os.fspath(f)
            if isinstance(self.name, bytes):
                self.name = os.fsdecode(self.name)
            self.file = self._owned = open(self.path, "rb")     # FileNotFoundError / IsADirectoryError name it
            info = os.fstat(self.file.fileno())
            if not stat.S_ISREG(info.st_mode):
                self.close()
                raise CheckpointError(f"{self.name}: not a regular file (a device, pipe or socket has no size to "
                                      f"check a checkpoint against); copy it to a file or read it into io.BytesIO")
            self.start = 0
            self.size = info.st_size

    def close(self):
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def error(self, why):
        return CheckpointError(f"{self.name}: {why}")

    def seek(self, offset):
        """Move to `offset` bytes from the start of the checkpoint."""
        self.file.seek(self.start + offset)

    def read_at(self, offset, n, what):
        """Exactly n bytes at offset, or a CheckpointError saying `what` is cut short."""
        if offset < 0 or n < 0 or offset + n > self.size:
            raise self.error(f"{what} spans bytes {offset}..{offset + n} but the file has {self.size} (truncated "
                             f"or corrupt)")
        self.seek(offset)
        data = self.file.read(n)
        if len(data) != n:
            raise self.error(f"{what}: the file ended after {len(data)} of {n} bytes (it changed while reading?)")
        return data

    def readinto_at(self, offset, buf, what):
        """Fill the writable uint8 buffer `buf` with the bytes at offset (no intermediate copy)."""
        n = len(buf)
        if offset < 0 or offset + n > self.size:
            raise self.error(f"{what} spans bytes {offset}..{offset + n} but the file has {self.size} (truncated "
                             f"or corrupt)")
        self.seek(offset)
        readinto = getattr(self.file, "readinto", None)
        got = readinto(buf) if readinto is not None else None
        if got is None:
            data = self.file.read(n)
            got = len(data)
            buf[:got] = data
        if got != n:
            raise self.error(f"{what}: the file ended after {got} of {n} bytes (it changed while reading?)")
        return buf

    def bounded(self):
        """A read-only file object over the checkpoint whose reads are capped at the bytes remaining."""
        return _Bounded(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Bounded(io.RawIOBase):
    """What zipfile and the pickle readers see: seek/tell/read over [0, size), never past it."""

    def __init__(self, source):
        self._src = source
        self._pos = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._src.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, n=-1):
        left = max(0, self._src.size - self._pos)
        n = left if n is None or n < 0 else min(n, left)
        if n == 0:
            return b""
        self._src.seek(self._pos)
        data = self._src.file.read(n)
        self._pos += len(data)
        return data

    def readinto(self, buf):
        data = self.read(len(buf))
        buf[:len(data)] = data
        return len(data)

    def readline(self, limit=-1):
        # pickle's GLOBAL reads a line: scan in small steps so a file without newlines costs no more than its size
        out = bytearray()
        while limit < 0 or len(out) < limit:
            chunk = self.read(256 if limit < 0 else min(256, limit - len(out)))
            if not chunk:
                break
            cut = chunk.find(b"\n")
            if cut >= 0:
                out += chunk[:cut + 1]
                self._pos -= len(chunk) - cut - 1
                break
            out += chunk
        return bytes(out)


def _file_name(f):
    name = getattr(f, "name", None)
    return name if isinstance(name, str) else f"<{type(f).__name__}>"


def _seekable_tell(f):
    """f.tell(), or torch's error for file objects that cannot seek (a socket, a pipe)."""
    try:
        pos = f.tell()
        f.seek(pos)
        return pos
    except (io.UnsupportedOperation, AttributeError, OSError) as e:
        raise type(e)(f"{e}. You can only torch.load from a file that is seekable. Please pre-load the data into "
                      f"a buffer like io.BytesIO and try to load from it instead.") from None
