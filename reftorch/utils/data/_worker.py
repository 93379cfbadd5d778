"""What runs inside a DataLoader worker process, and what it sends back.

The worker loop is a module-level function so that it can start under both the `fork` and the
`spawn` start methods; everything it receives (dataset, collate_fn, worker_init_fn) is pickled for
`spawn`. Tensors travel through the result queue by pickling (Tensor.__reduce_ex__).
"""
from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from multiprocessing.reduction import ForkingPickler

import numpy as np

# how often (seconds) a blocked worker or the main process looks up whether the other side is alive
STATUS_CHECK_INTERVAL = 5.0

_worker_info = None


class WorkerInfo:
    """Describes the current worker: id, num_workers, seed, dataset (this worker's copy)."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{type(self).__name__}({items})"


def get_worker_info():
    """Inside a DataLoader worker: its WorkerInfo. In the main process: None."""
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process with its traceback text."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            exception = None    # no frame <-> exception cycle: the iterator is freed (and its workers stopped) promptly


class _KeyErrorMessage(str):
    """KeyError quotes its message; this keeps the traceback readable."""

    def __repr__(self):
        return self


class IterableDatasetStop:
    """Sent by a worker whose copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to persistent workers at the start of a new epoch (they restart their iterators)."""


class MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, index):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        """index is a list of batch_size placeholders (or None without batching)."""
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    cls = IterableFetcher if iterable else MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


def seed_worker(base_seed, worker_id):
    """Seed reftorch, `random` and NumPy's global generator of a worker from the loader's base seed."""
    import reftorch as torch
    seed = base_seed + worker_id
    random.seed(seed)
    torch.manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(1)[0])
    return seed


def one_thread():
    """A worker's kernels and BLAS run on one thread, as PyTorch's workers do (torch.set_num_threads(1)):
    num_workers processes already share the cores, and a pool per worker would oversubscribe them."""
    from ... import _blas, _cpu    # here, as in seed_worker: reftorch is fully imported by now
    _cpu.THREADS = 1
    if _blas.set_threads is not None:
        _blas.set_threads(1)


def _pickled(data, worker_id):
    """Pickle here rather than in the queue's feeder thread, so that a batch that cannot be pickled
    is reported to the main process instead of being dropped."""
    try:
        return bytes(ForkingPickler.dumps(data))
    except Exception:
        return bytes(ForkingPickler.dumps(ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")))


def worker_loop(iterable, dataset, index_queue, data_queue, auto_collation, collate_fn, drop_last, base_seed,
                init_fn, worker_id, num_workers, parent_pid):
    """Fetch the batches the main process asks for until it sends None."""
    global _worker_info
    try:
        one_thread()
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_error = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        exhausted = False
        while True:
            try:
                task = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                if os.getppid() != parent_pid:      # the main process is gone: stop quietly
                    return
                continue
            if task is None:
                return
            if isinstance(task, ResumeIteration):
                data_queue.put((task, _pickled(None, worker_id)))
                exhausted = False
                try:
                    fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                except Exception:
                    init_error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
                continue
            idx, index = task
            if init_error is not None:
                data, init_error = init_error, None
            elif exhausted:
                data = IterableDatasetStop(worker_id)
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if not iterable:
                        raise
                    data = IterableDatasetStop(worker_id)
                    exhausted = True
                except Exception:
                    data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, _pickled(data, worker_id)))
    except KeyboardInterrupt:
        pass
