"""DistributedDataParallel: one model replica per process, gradients averaged across processes.

As PyTorch's does it:
- at construction, rank 0's parameters and buffers are broadcast so every replica starts equal;
- parameters are grouped into buckets (reverse registration order, about the order in which their
  gradients become ready; the first bucket capped at 1 MiB or less, the others at bucket_cap_mb); a
  post-accumulate-grad hook on each parameter copies its gradient into its bucket's flat buffer
  and, once a bucket is complete (and every bucket before it has been launched, so all ranks issue
  the same collectives in the same order), starts a non-blocking all-reduce of it while backward
  goes on;
- when backward ends (autograd's queue_callback), buckets that are not complete (unused
  parameters contribute zeros) are launched, all are waited for, divided by the world size and
  copied back into the parameters' .grad;
- no_sync(): backward passes of forwards run inside it only accumulate locally; the first
  backward outside it all-reduces the accumulated gradients.
"""
from __future__ import annotations

import contextlib

import numpy as np

import reftorch.distributed as dist
from ...autograd import engine as _engine
from ...autograd.grad_mode import is_grad_enabled
from ..modules.module import Module

_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024


class _Bucket:
    __slots__ = ("params", "offsets", "buffer", "pending", "ready", "request")

    def __init__(self, params, dtype):
        self.params = params
        self.offsets, n = [], 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        self.buffer = np.zeros(n, dtype=dtype.np)
        self.reset()

    def reset(self):
        self.pending = len(self.params)
        self.ready = [False] * len(self.params)
        self.request = None


class DistributedDataParallel(Module):
    """Data parallelism across processes: wrap the model, train as usual (see the module docstring)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None):
        super().__init__()
        self._group = process_group or dist._default_group()
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self._params = [p for p in module.parameters() if p.requires_grad]
        if not self._params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self._sync_module_states()
        self._buckets, self._where = self._make_buckets()
        self._sync_this_pass = False
        self._pass_active = False
        self._next_launch = 0
        self._hook_handles = [p.register_post_accumulate_grad_hook(self._make_hook(i))
                              for i, p in enumerate(self._params)]

    # ------------------------------------------------------------------ construction
    def _sync_module_states(self):
        if self._group.size == 1:
            return
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            dist.broadcast(t, 0, group=self._group)

    def _make_buckets(self):
        """Buckets of parameters in reverse order, per dtype, each up to its byte cap."""
        buckets, where = [], {}
        open_, caps_used = {}, 0                    # dtype -> (params, bytes)
        for i in reversed(range(len(self._params))):
            p = self._params[i]
            params, nbytes = open_.get(p.dtype, ([], 0))
            params.append(i)
            nbytes += p.numel() * p.dtype.itemsize
            cap = min(_DEFAULT_FIRST_BUCKET_BYTES, self.bucket_bytes_cap) if caps_used == 0 else self.bucket_bytes_cap
            if nbytes >= cap:
                buckets.append((params, p.dtype))
                caps_used += 1
                open_.pop(p.dtype, None)
            else:
                open_[p.dtype] = (params, nbytes)
        for dtype, (params, _) in open_.items():
            buckets.append((params, dtype))
        result = []
        for b, (indices, dtype) in enumerate(buckets):
            result.append(_Bucket([self._params[i] for i in indices], dtype))
            for slot, i in enumerate(indices):
                where[i] = (b, slot)
        return result, where

    # ------------------------------------------------------------------ forward
    def forward(self, *inputs, **kwargs):
        if is_grad_enabled():
            self._sync_this_pass = self.require_backward_grad_sync
        if self.broadcast_buffers and self.require_forward_param_sync and self._group.size > 1:
            for b in self.module.buffers():
                dist.broadcast(b, 0, group=self._group)
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes of the forwards run in here accumulate gradients locally, with no all-reduce."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # ------------------------------------------------------------------ backward
    def _make_hook(self, index):
        def hook(param):
            if not self._sync_this_pass:
                return
            if not self._pass_active:
                self._pass_active = True
                _engine.queue_callback(self._finish_pass)
            b, slot = self._where[index]
            bucket = self._buckets[b]
            if bucket.ready[slot]:                  # a second gradient in the same backward: take the newest
                self._copy_in(bucket, slot)
                return
            self._copy_in(bucket, slot)
            bucket.ready[slot] = True
            bucket.pending -= 1
            self._launch_ready()
        return hook

    @staticmethod
    def _copy_in(bucket, slot):
        p, off = bucket.params[slot], bucket.offsets[slot]
        dst = bucket.buffer[off:off + p.numel()]
        if p.grad is None:
            dst[...] = 0
        else:
            dst[...] = p.grad._array().reshape(-1)

    def _launch(self, bucket):
        g = self._group
        if g.size == 1:
            bucket.request = dist._Done()
        else:
            bucket.request = g.comm.Iallreduce(g.in_place, bucket.buffer, op=g.mpi.SUM)

    def _launch_ready(self):
        while self._next_launch < len(self._buckets) and self._buckets[self._next_launch].pending == 0:
            self._launch(self._buckets[self._next_launch])
            self._next_launch += 1

    def _finish_pass(self):
        """End of backward: launch what is left (unused parameters give zeros), wait, average, write back."""
        try:
            for bucket in self._buckets[self._next_launch:]:
                for slot, ready in enumerate(bucket.ready):
                    if not ready:
                        self._copy_in(bucket, slot)
                self._launch(bucket)
            size = self._group.size
            for bucket in self._buckets:
                bucket.request.Wait()
                if size > 1:
                    bucket.buffer /= size
                for p, off in zip(bucket.params, bucket.offsets):
                    reduced = bucket.buffer[off:off + p.numel()]
                    if p.grad is None:
                        if not reduced.any():
                            continue                # unused on every rank: stays None
                        from ..._creation import zeros_like
                        p.grad = zeros_like(p, requires_grad=False)
                    p.grad._array()[...] = reduced.reshape(p.grad._array().shape)
                    p.grad._storage.version += 1
        finally:
            for bucket in self._buckets:
                bucket.reset()
            self._next_launch = 0
            self._pass_active = False

    # ------------------------------------------------------------------ conveniences
    def __getstate__(self):
        raise TypeError("DistributedDataParallel cannot be pickled; save .module (or its state_dict) instead")

    def extra_repr(self):
        return f"world_size={self._group.size}, buckets={len(self._buckets)}"
