"""SyncBatchNorm: batch normalisation whose training statistics are those of the whole distributed
batch (sums all-reduced over reftorch.distributed), and a plain BatchNorm when no process group of
more than one process is initialised."""
from __future__ import annotations

import reftorch as torch
import reftorch.distributed as dist

import reftorch.nn.functional as F
from ...autograd import Function
from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


def _reduce_dims(input):
    return [d for d in range(input.dim()) if d != 1]


def _channel_shape(input):
    return (1, -1) + (1,) * (input.dim() - 2)


class _SyncBatchNormFunction(Function):
    """Forward: global mean/var from all-reduced per-channel (sum, sum of squares, count); running
    statistics updated with the global unbiased variance. Backward: the input gradient needs the global
    sums of dy and dy * (x - mean) (all-reduced); weight/bias gradients stay local, as torch's, for
    DistributedDataParallel to average."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, process_group):
        dims, shape = _reduce_dims(input), _channel_shape(input)
        x = input.detach()
        c = x.size(1)
        count = torch.full((c,), x.numel() // c, dtype=x.dtype)
        stats = torch.cat([x.sum(dims), (x * x).sum(dims), count])
        dist.all_reduce(stats, group=process_group)
        total, sq, n = stats[:c], stats[c:2 * c], stats[2 * c:]
        mean = total / n
        var = (sq / n - mean * mean).clamp(min=0)
        invstd = 1.0 / torch.sqrt(var + eps)
        if running_mean is not None:
            with torch.no_grad():
                running_mean.mul_(1 - momentum).add_(mean * momentum)
                running_var.mul_(1 - momentum).add_(var * (n / (n - 1)) * momentum)
        xhat = (x - mean.reshape(shape)) * invstd.reshape(shape)
        ctx.save_for_backward(xhat, invstd, weight)
        ctx.process_group = process_group
        ctx.has_bias = bias is not None
        out = xhat
        if weight is not None:
            out = out * weight.detach().reshape(shape)
        if bias is not None:
            out = out + bias.detach().reshape(shape)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        xhat, invstd, weight = ctx.saved_tensors
        dims, shape = _reduce_dims(xhat), _channel_shape(xhat)
        c = xhat.size(1)
        sum_dy = grad_output.sum(dims)
        sum_dy_xhat = (grad_output * xhat).sum(dims)
        grad_weight = sum_dy_xhat if weight is not None else None
        grad_bias = sum_dy if ctx.has_bias else None
        count = torch.full((c,), xhat.numel() // c, dtype=xhat.dtype)
        stats = torch.cat([sum_dy, sum_dy_xhat, count])
        dist.all_reduce(stats, group=ctx.process_group)
        n = stats[2 * c:]
        mean_dy, mean_dy_xhat = (stats[:c] / n).reshape(shape), (stats[c:2 * c] / n).reshape(shape)
        scale = invstd if weight is None else invstd * weight.detach()
        grad_input = (grad_output - mean_dy - xhat * mean_dy_xhat) * scale.reshape(shape)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over N-D input (N, C, ...) with statistics synchronised across the process group."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def _check_non_zero_input_channels(self, input):
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    def forward(self, input):
        self._check_input_dim(input)
        self._check_non_zero_input_channels(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with torch.no_grad():
                self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        bn_training = True if self.training else (self.running_mean is None and self.running_var is None)
        use_buffers = not self.training or self.track_running_stats
        running_mean = self.running_mean if use_buffers else None
        running_var = self.running_var if use_buffers else None
        need_sync = bn_training and self.training and dist.is_available() and dist.is_initialized() and \
            dist.get_world_size(self.process_group) > 1
        if not need_sync:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training, factor,
                                self.eps)
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean, running_var, self.eps,
                                            factor, self.process_group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """A copy of module's tree with every BatchNorm*d replaced by a SyncBatchNorm sharing its
        parameters and buffers."""
        module_output = module
        if isinstance(module, _BatchNorm):
            module_output = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                          module.track_running_stats, process_group)
            if module.affine:
                with torch.no_grad():
                    module_output.weight = module.weight
                    module_output.bias = module.bias
            module_output.running_mean = module.running_mean
            module_output.running_var = module.running_var
            module_output.num_batches_tracked = module.num_batches_tracked
            module_output.training = module.training
            if hasattr(module, "qconfig"):
                module_output.qconfig = module.qconfig
        for name, child in module.named_children():
            module_output.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return module_output
