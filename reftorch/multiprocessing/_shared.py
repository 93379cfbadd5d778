"""Shared-memory storage for cpu tensors, and the pickling that sends it between processes.

share_memory_() moves a storage's bytes into a shared mapping: a memfd (strategy
'file_descriptor', sent to other processes as a duplicated descriptor) or a file under /dev/shm
(strategy 'file_system': the file is unlinked when the creating process drops the storage, and each
send is a fresh hard link to it that the receiver unlinks once opened, so nothing is left behind
in /dev/shm by a message that was received).
A tensor pickled by multiprocessing's ForkingPickler (every Queue, Pipe and Pool of
reftorch.multiprocessing or the standard module) is moved into shared memory first and arrives as a
view of the same pages, so an in-place update in one process is seen by the other (Hogwild). The
receiver keeps one Storage per shared mapping, so views sent separately still share it.
"""
from __future__ import annotations

import mmap
import os
import uuid
import weakref
from multiprocessing import reduction

import numpy as np

from .._tensor import Storage, Tensor

_all_sharing_strategies = {"file_descriptor", "file_system"}
_sharing_strategy = "file_descriptor"

_handles = weakref.WeakKeyDictionary()      # Storage -> (token, fd or None, file name or None, nbytes)
_received = weakref.WeakValueDictionary()   # token -> Storage, in a receiving process


def get_sharing_strategy():
    return _sharing_strategy


def set_sharing_strategy(new_strategy):
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of {_all_sharing_strategies}")
    _sharing_strategy = new_strategy


def get_all_sharing_strategies():
    return _all_sharing_strategies


def _map(fd, data_dtype, count, nbytes):
    buf = mmap.mmap(fd, max(nbytes, 1))
    return np.frombuffer(buf, dtype=data_dtype, count=count)


def _new_shared(nbytes):
    """(fd, file name) of a fresh shared file of nbytes (file name None for a memfd)."""
    if _sharing_strategy == "file_descriptor" and hasattr(os, "memfd_create"):
        fd, name = os.memfd_create("reftorch_shared"), None
    else:
        name = f"/dev/shm/reftorch_{os.getpid()}_{uuid.uuid4().hex}"
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.ftruncate(fd, max(nbytes, 1))
    return fd, name


def _unlink(name):
    try:
        os.unlink(name)
    except FileNotFoundError:
        pass


def share_storage(storage):
    """Move storage.data into shared memory in place (every view of it follows)."""
    if storage in _handles:
        return
    data = storage.data
    fd, name = _new_shared(data.nbytes)
    shared = _map(fd, data.dtype, data.shape[0], data.nbytes)
    shared[...] = data
    storage.data = shared
    if name is not None:            # the name is the handle: the descriptor is not needed any more
        os.close(fd)
        fd = None
        weakref.finalize(storage, _unlink, name)
    else:
        weakref.finalize(storage, os.close, fd)
    _handles[storage] = (f"{os.getpid()}:{uuid.uuid4().hex}", fd, name, data.nbytes)


def share_memory_(self):
    """Tensor.share_memory_: a no-op on cuda and for storages already shared."""
    if self.device.type == "cpu":
        share_storage(self._storage)
    return self


def is_shared(self):
    if self.device.type == "cuda" or self._storage in _handles:
        return True
    base = self._storage.data
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return isinstance(base, mmap.mmap)


def _rebuild_storage(token, handle, name, dtype, count, nbytes):
    """The receiver's Storage of a shared mapping: a descriptor to take over, or a one-use link to open
    and unlink (so the sender may drop its storage before the receiver gets here)."""
    fd = handle.detach() if handle is not None else os.open(name, os.O_RDWR)
    if name is not None:
        _unlink(name)
    storage = _received.get(token)
    if storage is not None:
        os.close(fd)
        return storage
    try:
        storage = Storage(_map(fd, dtype, count, nbytes))
    finally:
        os.close(fd)
    _received[token] = storage
    return storage


def _rebuild_tensor(cls, storage_args, offset, shape, strides, dtype, requires_grad):
    storage = _rebuild_storage(*storage_args)
    t = Tensor._make(storage, offset, shape, strides, dtype)
    if cls is not Tensor:
        t.__class__ = cls
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_tensor(t):
    """ForkingPickler's reduction of a tensor: its storage, shared, and its view geometry."""
    if t.requires_grad and t.grad_fn is not None:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, "
                           "since autograd does not support crossing process boundaries.  "
                           "If you just want to transfer the data, call detach() on the tensor "
                           "before serializing (e.g., putting it on the queue).")
    if t.device.type != "cpu":
        return t.__reduce_ex__(2)           # device tensors travel by value
    storage = t._storage
    if storage not in _handles:
        share_storage(storage)
    token, fd, name, nbytes = _handles[storage]
    handle = link = None
    if fd is not None:
        handle = reduction.DupFd(fd)       # duplicated now: valid even after this process closes fd
    else:
        link = f"{name}.{uuid.uuid4().hex[:8]}"
        os.link(name, link)                 # the receiver opens and unlinks it
    storage_args = (token, handle, link, storage.data.dtype, storage.data.shape[0], nbytes)
    return (_rebuild_tensor, (type(t), storage_args, t._offset, t._shape, t._strides, t.dtype, t.requires_grad))


def init_reductions(cls=Tensor):
    """Tensors of cls (exactly: pickling looks reducers up by type) travel through shared memory; nn.Parameter
    registers itself when reftorch.nn.parameter loads."""
    reduction.ForkingPickler.register(cls, reduce_tensor)
