"""reftorch.distributed: collectives between processes on MPI (mpi4py), with torch.distributed's names.

    python -m reftorch.distributed.run -n 2 train.py        # mpiexec -n 2 python -m mpi4py train.py

    import reftorch.distributed as dist
    dist.init_process_group("mpi")          # world size 1 when not launched by mpiexec
    dist.all_reduce(t, op=dist.ReduceOp.SUM)

mpi4py (`pip install 'reftorch[distributed]'`, which brings MPICH's wheel) is imported by
init_process_group only, never by `import reftorch`. Without mpi4py a process that was not started
by an MPI launcher still gets a group of world size 1, so single-process scripts run unchanged.

Collectives work in place on the tensors' storage (a flat NumPy array): contiguous tensors are
handed to MPI as they are, other tensors go through a contiguous copy that is written back.
Only CPU tensors are supported; collectives are not recorded by autograd (as in PyTorch).
"""
from __future__ import annotations

import os

import numpy as np

__all__ = ["ReduceOp", "Work", "is_available", "is_mpi_available", "is_initialized", "init_process_group",
           "destroy_process_group", "get_rank", "get_world_size", "get_backend", "barrier", "all_reduce",
           "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
           "reduce", "new_group"]


class ReduceOp:
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"


_OPS = (ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MAX, ReduceOp.MIN)

# environment variables by which MPI launchers tell a process the size of its job
_LAUNCHER_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS")


def is_available():
    return True


def is_mpi_available():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


# ------------------------------------------------------------------------------------------ backends

class _Done:
    """A finished request (what the single-process backend and blocking calls hand back)."""

    def Wait(self):
        return None

    def Test(self):
        return True


class _LocalComm:
    """World size 1 without MPI: every collective is the identity on the one process's data."""

    rank, size = 0, 1

    def Allreduce(self, send, recv, op=None):
        if send is not _IN_PLACE:
            recv[...] = send

    def Iallreduce(self, send, recv, op=None):
        self.Allreduce(send, recv, op)
        return _Done()

    def Bcast(self, buf, root=0):
        pass

    def Allgather(self, send, recv):
        recv.reshape(-1)[...] = send.reshape(-1)

    def Reduce_scatter_block(self, send, recv, op=None):
        recv.reshape(-1)[...] = send.reshape(-1)

    def Reduce(self, send, recv, op=None, root=0):
        if send is not _IN_PLACE:
            recv[...] = send

    def Barrier(self):
        pass


_IN_PLACE = object()            # replaced by MPI.IN_PLACE when mpi4py is used


class _Group:
    def __init__(self, comm, mpi):
        self.comm, self.mpi = comm, mpi
        self.rank, self.size = comm.rank, comm.size
        self.in_place = mpi.IN_PLACE if mpi is not None else _IN_PLACE
        if mpi is not None:
            self.ops = {ReduceOp.SUM: mpi.SUM, ReduceOp.AVG: mpi.SUM, ReduceOp.PRODUCT: mpi.PROD,
                        ReduceOp.MAX: mpi.MAX, ReduceOp.MIN: mpi.MIN}
        else:
            self.ops = {op: None for op in _OPS}

    def op(self, op):
        if op not in self.ops:
            raise ValueError(f"Invalid reduce op: {op!r} (use reftorch.distributed.ReduceOp)")
        return self.ops[op]


_group = None


def _default_group():
    if _group is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return _group


def _launched_size():
    """The world size an MPI launcher announced in the environment (1 when there is none)."""
    for var in _LAUNCHER_SIZE_VARS:
        value = os.environ.get(var)
        if value and value.isdigit():
            return int(value)
    return 1


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the job's default group: MPI's COMM_WORLD (mpi4py), or a world of 1 process without it."""
    global _group
    if _group is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is not None and str(backend).lower() not in ("mpi", "cpu:mpi"):
        raise RuntimeError(f"reftorch.distributed supports only the 'mpi' backend, not {backend!r} "
                           "(launch with: python -m reftorch.distributed.run -n N script.py)")
    try:
        from mpi4py import MPI
    except ImportError:
        launched = _launched_size()
        if launched > 1 or world_size > 1:
            raise RuntimeError(f"this process is one of {max(launched, world_size)} but mpi4py is not installed: "
                               "pip install 'reftorch[distributed]'") from None
        group = _Group(_LocalComm(), None)
    else:
        comm = MPI.COMM_WORLD
        group = _Group(comm, MPI) if comm.size > 1 else _Group(_LocalComm(), None)
    if world_size not in (-1, None) and world_size != group.size:
        raise ValueError(f"init_process_group: world_size={world_size}, but the MPI job has {group.size} "
                         f"process{'es' if group.size != 1 else ''}")
    if rank not in (-1, None) and rank != group.rank:
        raise ValueError(f"init_process_group: rank={rank}, but this MPI process is rank {group.rank}")
    _group = group


def is_initialized():
    return _group is not None


def destroy_process_group(group=None):
    """Leave the default group (MPI itself is finalized by mpi4py when the process exits)."""
    global _group
    _group = None


def get_rank(group=None):
    return _default_group().rank


def get_world_size(group=None):
    return _default_group().size


def get_backend(group=None):
    _default_group()
    return "mpi"


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False):
    """Only the whole world is supported as a group: returns the default group."""
    g = _default_group()
    if ranks is not None and sorted(ranks) != list(range(g.size)):
        raise NotImplementedError("reftorch.distributed: subgroups are not supported (only the whole world)")
    return g


# ------------------------------------------------------------------------------------------ collectives

class Work:
    """What async_op=True returns: wait() finishes the collective (and writes a non-contiguous result back)."""

    def __init__(self, request=None, finish=None):
        self._request, self._finish = request, finish

    def wait(self, timeout=None):
        if self._request is not None:
            self._request.Wait()
            self._request = None
            if self._finish is not None:
                self._finish()
                self._finish = None
        return True

    def is_completed(self):
        if self._request is None:
            return True
        if self._request.Test():
            self.wait()
            return True
        return False


def _check(tensor, what="tensor"):
    from .._tensor import Tensor
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{what} must be a reftorch.Tensor, not {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise RuntimeError(f"reftorch.distributed supports CPU tensors only ({what} is on {tensor.device})")


def _buffer(tensor):
    """(contiguous 1-D NumPy array sharing the tensor's memory if it can, write-back or None)."""
    arr = tensor._array()
    if arr.dtype == np.bool_:
        arr = arr.view(np.uint8)
    if arr.flags.c_contiguous:
        return arr.reshape(-1), None
    flat = np.ascontiguousarray(arr).reshape(-1)

    def write_back():
        arr[...] = flat.reshape(arr.shape)
    return flat, write_back


def _mutated(tensor):
    tensor._storage.version += 1


def _average(flat, size, op):
    if op == ReduceOp.AVG and size > 1:
        if flat.dtype.kind == "f":
            flat /= size
        else:
            flat //= size


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` across all processes, in place: every process ends with the result."""
    _check(tensor)
    g = group or _default_group()
    mpi_op = g.op(op)
    flat, write_back = _buffer(tensor)

    def finish():
        _average(flat, g.size, op)
        if write_back is not None:
            write_back()
        _mutated(tensor)

    if async_op:
        return Work(g.comm.Iallreduce(g.in_place, flat, op=mpi_op), finish)
    g.comm.Allreduce(g.in_place, flat, op=mpi_op)
    finish()
    return None


def broadcast(tensor, src, group=None, async_op=False, group_src=None):
    """Copy rank src's `tensor` into every process's `tensor` (in place)."""
    _check(tensor)
    g = group or _default_group()
    src = src if group_src is None else group_src
    if not 0 <= src < g.size:
        raise ValueError(f"Invalid src rank {src} for a world of size {g.size}")
    flat, write_back = _buffer(tensor)
    g.comm.Bcast(flat, root=src)
    if write_back is not None:
        write_back()
    _mutated(tensor)
    return Work() if async_op else None


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] <- rank i's `tensor`, on every process."""
    _check(tensor)
    g = group or _default_group()
    if len(tensor_list) != g.size:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors, the world has {g.size} processes")
    for out in tensor_list:
        _check(out, "each tensor of tensor_list")
        if out.numel() != tensor.numel() or out.dtype is not tensor.dtype:
            raise ValueError("all_gather: every output tensor must have the input's number of elements and dtype")
    send = np.ascontiguousarray(tensor._array()).reshape(-1)
    recv = np.empty((g.size, send.size), dtype=send.dtype)
    g.comm.Allgather(send, recv)
    for out, row in zip(tensor_list, recv):
        out._array()[...] = row.reshape(out._array().shape)
        _mutated(out)
    return Work() if async_op else None


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output_tensor (world * input's elements, concatenated along dim 0 or flat) <- every rank's input."""
    _check(input_tensor)
    _check(output_tensor, "output_tensor")
    g = group or _default_group()
    if output_tensor.numel() != g.size * input_tensor.numel():
        raise ValueError("all_gather_into_tensor: output_tensor must hold world_size times input_tensor's elements")
    send = np.ascontiguousarray(input_tensor._array()).reshape(-1)
    flat, write_back = _buffer(output_tensor)
    g.comm.Allgather(send, flat.reshape(g.size, send.size))
    if write_back is not None:
        write_back()
    _mutated(output_tensor)
    return Work() if async_op else None


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """output <- the reduction over all processes of input_list[rank]."""
    _check(output, "output")
    g = group or _default_group()
    mpi_op = g.op(op)
    if len(input_list) != g.size:
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors, the world has {g.size} processes")
    n = output.numel()
    for t in input_list:
        _check(t, "each tensor of input_list")
        if t.numel() != n or t.dtype is not output.dtype:
            raise ValueError("reduce_scatter: every input tensor must have the output's number of elements and dtype")
    flat, write_back = _buffer(output)
    send = np.empty((g.size, n), dtype=flat.dtype)
    for row, t in zip(send, input_list):
        row[...] = _buffer(t)[0]
    g.comm.Reduce_scatter_block(send, flat, op=mpi_op)
    _average(flat, g.size, op)
    if write_back is not None:
        write_back()
    _mutated(output)
    return Work() if async_op else None


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """output <- the reduction over all processes of the rank-th of world_size equal chunks of input."""
    g = group or _default_group()
    _check(input, "input")
    if input.numel() != g.size * output.numel():
        raise ValueError("reduce_scatter_tensor: input must hold world_size times output's elements")
    chunks = input.reshape(-1).chunk(g.size) if g.size > 1 else [input.reshape(-1)]
    return reduce_scatter(output, list(chunks), op=op, group=g, async_op=async_op)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce `tensor` across all processes into rank dst's `tensor` (others' are left as they are)."""
    _check(tensor)
    g = group or _default_group()
    mpi_op = g.op(op)
    dst = dst if group_dst is None else group_dst
    flat, write_back = _buffer(tensor)
    if g.rank == dst:
        g.comm.Reduce(g.in_place, flat, op=mpi_op, root=dst)
        _average(flat, g.size, op)
        if write_back is not None:
            write_back()
        _mutated(tensor)
    else:
        g.comm.Reduce(flat, None, op=mpi_op, root=dst)
    return Work() if async_op else None


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every process has reached its barrier."""
    (group or _default_group()).comm.Barrier()
    return Work() if async_op else None
