"""torch.nn.functional: layers and losses as functions of tensors.

Everything here is built from public reftorch ops. Elementwise activations with kernels and
derivative formulas (gelu, silu, elu, hardtanh ...) and the sliding-window primitives of convolution
and pooling (im2col, col2im) are declared in ops.yaml; the rest are compositions of ops, so autograd
(and double backward) comes from the parts."""
from __future__ import annotations

import math
import numbers
import warnings

import ml_dtypes
import numpy as np

import reftorch as torch
from reftorch._autocast import policy as _autocast  # PyTorch's autocast op lists, per function
from reftorch._dtype import CPP_NAMES
from reftorch._tensor import Tensor as _Tensor

__all__ = [
    # activations
    "relu", "relu_", "relu6", "elu", "elu_", "selu", "celu", "leaky_relu", "leaky_relu_", "prelu", "rrelu", "glu",
    "gelu", "logsigmoid", "hardshrink", "tanhshrink", "softsign", "softplus", "softmin", "softmax", "softshrink",
    "gumbel_softmax", "log_softmax", "tanh", "sigmoid", "hardsigmoid", "silu", "mish", "hardswish", "hardtanh",
    "hardtanh_", "threshold", "threshold_",
    # layers
    "linear", "bilinear", "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold",
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "lp_pool1d", "lp_pool2d", "batch_norm", "instance_norm",
    "layer_norm", "group_norm", "rms_norm", "local_response_norm", "embedding", "dropout", "dropout1d", "dropout2d",
    "dropout3d", "alpha_dropout", "feature_alpha_dropout", "pad", "interpolate", "upsample", "upsample_nearest",
    "upsample_bilinear", "one_hot", "normalize", "cosine_similarity", "pairwise_distance", "pdist",
    "scaled_dot_product_attention", "multi_head_attention_forward", "pixel_shuffle", "pixel_unshuffle",
    "channel_shuffle",
    # losses
    "l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss", "gaussian_nll_loss", "margin_ranking_loss",
    "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
    # issue 16: the rest of torch.nn.functional
    "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "lp_pool3d",
    "max_unpool1d", "max_unpool2d", "max_unpool3d", "fractional_max_pool2d", "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d", "fractional_max_pool3d_with_indices", "affine_grid", "grid_sample", "embedding_bag",
    "conv_tbc", "conv3d", "conv_transpose3d", "avg_pool3d", "adaptive_avg_pool3d", "ctc_loss",
    "triplet_margin_with_distance_loss", "linear_cross_entropy",
]


# ============================================================================== helpers

def _ntuple(x, n, name="argument"):
    if isinstance(x, (tuple, list)):
        if len(x) == 1 and n > 1:
            return tuple(int(x[0]) for _ in range(n))
        if len(x) != n:
            raise ValueError(f"{name} must be an int or a tuple of {n} ints, got {tuple(x)}")
        return tuple(int(v) for v in x)
    return (int(x),) * n


def _reduction_string(size_average, reduce, reduction):
    """The legacy size_average/reduce flags mapped onto `reduction`, as PyTorch does."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='sum' instead.",
                  stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_same_size(input, target, stacklevel=3):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have "
                      "the same size.", stacklevel=stacklevel)


def _inplace(input, result):
    """Writes result into input (the in-place flavour of an activation) and returns input."""
    return input.copy_(result)


def _channel_shape(input, c):
    """The shape that broadcasts a per-channel (dim 1) vector of size c over input."""
    return (1, c) + (1,) * (input.dim() - 2) if input.dim() >= 2 else (c,)


# ============================================================================== activations

def relu(input, inplace=False):
    return torch.relu_(input) if inplace else torch.relu(input)


def relu_(input):
    return torch.relu_(input)


def _activation(op):
    def fn(input, *args, inplace=False, **kwargs):
        if inplace:
            src = input.clone() if input.requires_grad else input
            return _inplace(input, op(src, *args, **kwargs))
        return op(input, *args, **kwargs)
    return fn


def relu6(input, inplace=False):
    return _activation(torch.relu6)(input, inplace=inplace)


def elu(input, alpha=1.0, inplace=False):
    return _activation(torch.elu)(input, alpha, inplace=inplace)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    return _activation(torch.selu)(input, inplace=inplace)


def celu(input, alpha=1.0, inplace=False):
    return _activation(torch.celu)(input, alpha, inplace=inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _activation(torch.leaky_relu)(input, negative_slope, inplace=inplace)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


@_autocast("lower")
def prelu(input, weight):
    return torch.prelu(input, weight)       # its checks and per-channel slopes are torch.prelu's, as in PyTorch


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slopes = torch.rand(input.shape, dtype=input.dtype, device=input.device) * (upper - lower) + lower
    out = torch.where(input >= 0, input, input * slopes)
    return _inplace(input, out) if inplace else out


def glu(input, dim=-1):
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} is size "
                           f"{input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * torch.sigmoid(b)


def gelu(input, approximate="none"):
    return torch.gelu(input, approximate=approximate)


def logsigmoid(input):
    return torch.logsigmoid(input)


def hardshrink(input, lambd=0.5):
    return torch.hardshrink(input, lambd)


def tanhshrink(input):
    return torch.tanhshrink(input)


def softsign(input):
    return torch.softsign(input)


def softplus(input, beta=1.0, threshold=20.0):
    return torch.softplus(input, beta, threshold)


def softshrink(input, lambd=0.5):
    if lambd < 0 and input.dtype.is_floating_point:
        raise RuntimeError(f"lambda must be in range [0, {torch.finfo(input.dtype).max:g}] for input dtype "
                           f"{input.dtype.short}, but found {lambd:g}")
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return torch.softshrink(input, lambd)


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include "
                      "dim=X as an argument.", stacklevel=_stacklevel)
        dim = _softmax_dim(input.dim())
    return torch.softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        warnings.warn("Implicit dimension choice for softmin has been deprecated. Change the call to include "
                      "dim=X as an argument.", stacklevel=_stacklevel)
        dim = _softmax_dim(input.dim())
    return torch.softmax(-input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        warnings.warn("Implicit dimension choice for log_softmax has been deprecated. Change the call to include "
                      "dim=X as an argument.", stacklevel=_stacklevel)
        dim = _softmax_dim(input.dim())
    return torch.log_softmax(input, dim, dtype=dtype)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    u = torch.rand(logits.shape, dtype=logits.dtype, device=logits.device)
    gumbels = -torch.log(-torch.log(u + eps) + eps)     # Gumbel(0, 1) samples
    y_soft = torch.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = _one_hot_along(index, y_soft.shape[dim], dim, y_soft.dtype, y_soft.dim())
    return y_hard - y_soft.detach() + y_soft


def tanh(input):
    return torch.tanh(input)


def sigmoid(input):
    return torch.sigmoid(input)


def hardsigmoid(input, inplace=False):
    return _activation(torch.hardsigmoid)(input, inplace=inplace)


def silu(input, inplace=False):
    return _activation(torch.silu)(input, inplace=inplace)


def mish(input, inplace=False):
    return _activation(torch.mish)(input, inplace=inplace)


def hardswish(input, inplace=False):
    return _activation(torch.hardswish)(input, inplace=inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _activation(torch.hardtanh)(input, min_val, max_val, inplace=inplace)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold(input, threshold, value, inplace=False):
    return _activation(torch.threshold)(input, threshold, value, inplace=inplace)


def threshold_(input, threshold, value):
    return _activation(torch.threshold)(input, threshold, value, inplace=True)


# ============================================================================== linear layers

@_autocast("lower")
def linear(input, weight, bias=None):
    """input @ weight.T + bias."""
    if isinstance(input, _Tensor) and isinstance(weight, _Tensor):
        shape, wshape, dt = input._shape, weight._shape, input.dtype
        # the common case, checked at once: cpu floating tensors of one dtype, a 2-D weight that fits (16-bit
        # floats too: one float32 product and bias add rounded once, as torch's addmm, not three rounded ops)
        if len(wshape) == 2 and shape and shape[-1] == wshape[1] and dt is weight.dtype and \
                dt.is_floating_point and input.device.type == "cpu" and \
                (bias is None or bias.dtype is dt):
            return torch._linear(input, weight, bias)      # one op, one node (ops.yaml: _linear)
    if input.dim() == 0 or weight.dim() == 0:
        raise RuntimeError(f"both arguments to linear need to be at least 1D, but they are {input.dim()}D and "
                           f"{weight.dim()}D")
    if input.shape[-1] != weight.shape[-1]:
        rows = int(np.prod(input.shape[:-1])) if input.dim() > 1 else 1
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} and "
                           f"{weight.shape[-1]}x{weight.shape[0] if weight.dim() > 1 else 1})")
    if weight.dim() == 2 and input.device.type == "cpu" and input.dtype == weight.dtype and \
            input.dtype.is_floating_point and (bias is None or bias.dtype == input.dtype):
        return torch._linear(input, weight, bias)      # one op, one node (ops.yaml: _linear)
    if isinstance(bias, _Tensor) and bias.dtype != weight.dtype:     # PyTorch's addmm(bias, input, weight.T)
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {bias.dtype.short} and "
                           f"{weight.dtype.short}")
    out = torch.matmul(input, weight.t())
    return out + bias if bias is not None else out


@_autocast(None, cuda="promote")    # PyTorch's CPU list leaves it as is
def bilinear(input1, input2, weight, bias=None):
    """y_k = x1^T W_k x2 + b_k over the last dims of input1 and input2."""
    lead = tuple(input1.shape[:-1])
    x1 = input1.reshape(-1, 1, 1, input1.shape[-1])      # (B, 1, 1, I)
    x2 = input2.reshape(-1, 1, 1, input2.shape[-1])      # (B, 1, 1, J)
    t = torch.matmul(x1, weight)                          # (B, O, 1, J)
    out = (t * x2).sum(-1).reshape(lead + (weight.shape[0],))
    return out + bias if bias is not None else out


# ============================================================================== convolution

def _conv_padding(padding, nd, kernel, dilation, stride):
    """(before, after) pairs per spatial dim, flattened, for an int/tuple/'same'/'valid' padding."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * (2 * nd)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]
            return tuple(pads)
        raise ValueError(f"Invalid padding string '{padding}', should be one of {{'valid', 'same'}}")
    return tuple(p for p in _ntuple(padding, nd, "padding") for _ in range(2))


def _im2col(input, kernel, dilation, pads, stride):
    """torch.im2col; on meta, of an unpadded input, as views instead (unfold per spatial dim, strided slices
    for the dilation, one reshape): a meta tensor runs an array op's NumPy body over placeholders, which would
    allocate the (N, C*K, L) columns whose shape is all it needs -- the shape-only pass a model is built with
    (recipes: reasoning_about_shapes) must not cost memory of the input's size."""
    if input.device.type != "meta" or any(pads):
        return torch.im2col(input, kernel, dilation, pads, stride)
    nd = len(kernel)
    x = input
    for i in range(nd):
        x = x.unfold(2 + i, dilation[i] * (kernel[i] - 1) + 1, stride[i])     # (N, C, *blocks, *spans)
    x = x[(Ellipsis,) + tuple(slice(None, None, d) for d in dilation)]      # (N, C, *blocks, *kernel)
    x = x.permute((0, 1) + tuple(range(2 + nd, 2 + 2 * nd)) + tuple(range(2, 2 + nd)))
    return x.reshape(x.shape[0], -1, int(np.prod(x.shape[2 + nd:])))      # (N, C*K, L), as torch.im2col


def _conv_param_checks(input, weight, bias, stride, padding, dilation, groups):
    """ATen's convolution argument checks, in its order, before any shape is worked out (input batched)."""
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if not isinstance(padding, str) and any(p < 0 for p in (padding if isinstance(padding, (tuple, list)) else [padding])):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if isinstance(padding, str) and weight.dim() != input.dim():
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-dimensional weight"
                           f"{list(weight.shape)}, but got {input.dim()}-dimensional input of size {list(input.shape)} "
                           "instead")
    if weight.dim() > 0 and weight.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {list(weight.shape)} instead")
    if bias is not None and bias.dtype != input.dtype:
        raise RuntimeError(f"Input type ({CPP_NAMES.get(input.dtype.name, input.dtype)}) and bias type "
                           f"({CPP_NAMES.get(bias.dtype.name, bias.dtype)}) should be the same")


def _convnd(input, weight, bias, stride, padding, dilation, groups, nd):
    name = f"conv{nd}d"
    unbatched = input.dim() == nd + 1
    if unbatched:
        input = input.unsqueeze(0)
    if input.dim() != nd + 2:
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
                           f"of size: {list(input.shape)}")
    stride = _ntuple(stride, nd, "stride")
    dilation = _ntuple(dilation, nd, "dilation")
    _conv_param_checks(input, weight, bias, stride, padding, dilation, groups)
    if weight.dim() != nd + 2:
        raise RuntimeError(f"weight should have at least three dimensions to {name}: got weight of size "
                           f"{list(weight.shape)}")
    kernel = tuple(weight.shape[2:])
    pads = _conv_padding(padding, nd, kernel, dilation, stride)
    n, c = input.shape[0], input.shape[1]
    out_c = weight.shape[0]
    if c != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {weight.shape[1] * groups} channels, but got {c} channels "
                           "instead")
    if out_c % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    spatial = [(input.shape[2 + i] + pads[2 * i] + pads[2 * i + 1] - dilation[i] * (kernel[i] - 1) - 1) // stride[i]
               + 1 for i in range(nd)]
    if any(s <= 0 for s in spatial):
        padded = [input.shape[2 + i] + pads[2 * i] + pads[2 * i + 1] for i in range(nd)]
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel "
                           f"size: ({' x '.join(map(str, kernel))}). Kernel size can't be greater than actual "
                           "input size")
    cols = _im2col(input, kernel, dilation, pads, stride)                 # (N, C*K, L)
    k = int(np.prod(kernel))
    blocks = cols.shape[-1]
    cols = cols.reshape(n, groups, (c // groups) * k, blocks)              # (N, G, C/G*K, L)
    w = weight.reshape(groups, out_c // groups, (c // groups) * k)        # (G, O/G, C/G*K)
    out = torch.matmul(w, cols).reshape((n, out_c) + tuple(spatial))
    if bias is not None:
        out = out + bias.reshape((1, out_c) + (1,) * nd)
    return out.squeeze(0) if unbatched else out


@_autocast("lower")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 1)


@_autocast("lower")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 2)


@_autocast("lower")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _convnd(input, weight, bias, stride, padding, dilation, groups, 3)


def _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, nd):
    name = f"conv_transpose{nd}d"
    unbatched = input.dim() == nd + 1
    if unbatched:
        input = input.unsqueeze(0)
    if input.dim() != nd + 2:
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
                           f"of size: {list(input.shape)}")
    stride = _ntuple(stride, nd, "stride")
    padding = _ntuple(padding, nd, "padding")
    output_padding = _ntuple(output_padding, nd, "output_padding")
    dilation = _ntuple(dilation, nd, "dilation")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"output_padding: {output_padding}, stride: {stride}, dilation: {dilation}")
    n, c_in = input.shape[0], input.shape[1]
    if c_in != weight.shape[0]:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {weight.shape[0]} channels, but got {c_in} channels instead")
    kernel = tuple(weight.shape[2:])
    k = int(np.prod(kernel))
    c_out = weight.shape[1] * groups
    spatial = tuple((input.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1)
                    + output_padding[i] + 1 for i in range(nd))
    blocks = int(np.prod(input.shape[2:]))
    x = input.reshape(n, groups, c_in // groups, blocks)                        # (N, G, Cin/G, L)
    w = weight.reshape(groups, c_in // groups, (c_out // groups) * k).transpose(1, 2)   # (G, Cout/G*K, Cin/G)
    cols = torch.matmul(w, x).reshape(n, c_out * k, blocks)
    # col2im crops `padding` on the left and padding - output_padding on the right (negative: zeros added)
    pads = tuple(v for i in range(nd) for v in (padding[i], padding[i] - output_padding[i]))
    out = torch.col2im(cols, spatial, kernel, dilation, pads, stride)
    if bias is not None:
        out = out + bias.reshape((1, c_out) + (1,) * nd)
    return out.squeeze(0) if unbatched else out


@_autocast("lower")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


@_autocast("lower")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


@_autocast("lower")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transposend(input, weight, bias, stride, padding, output_padding, groups, dilation, 3)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks of a (N, C, H, W) input as columns (N, C * kh * kw, L) (im2col)."""
    unbatched = input.dim() == 3
    if input.dim() not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)")
    x = input.unsqueeze(0) if unbatched else input
    out = torch.im2col(x, _ntuple(kernel_size, 2), _ntuple(dilation, 2), _ntuple(padding, 2), _ntuple(stride, 2))
    return out.squeeze(0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sums columns (N, C * kh * kw, L) back into a (N, C, *output_size) tensor (col2im)."""
    unbatched = input.dim() == 2
    if input.dim() not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                                  f"(got {input.dim()}D)")
    x = input.unsqueeze(0) if unbatched else input
    out = torch.col2im(x, _ntuple(output_size, 2), _ntuple(kernel_size, 2), _ntuple(dilation, 2),
                       _ntuple(padding, 2), _ntuple(stride, 2))
    return out.squeeze(0) if unbatched else out


# ============================================================================== pooling

def _pool_geometry(in_sizes, kernel, stride, padding, dilation, ceil_mode):
    """Output sizes and the (before, after) paddings that make every window fit, ceil_mode included."""
    out, pads = [], []
    for size, k, s, p, d in zip(in_sizes, kernel, stride, padding, dilation):
        span = d * (k - 1) + 1
        num = size + 2 * p - span
        o = (-(-num // s) if ceil_mode else num // s) + 1
        if ceil_mode and (o - 1) * s >= size + p:      # the last window must start inside input or left pad
            o -= 1
        if o < 1:
            raise RuntimeError(f"Given input size: ({'x'.join(map(str, in_sizes))}). Calculated output size: "
                               f"({'x'.join(map(str, [o]))}). Output size is too small")
        extra = max(0, (o - 1) * s + span - (size + 2 * p))
        out.append(o)
        pads += [p, p + extra]
    return out, pads


def _pool_args(nd, kernel_size, stride, padding, dilation):
    kernel = _ntuple(kernel_size, nd, "kernel_size")
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) \
        else _ntuple(stride, nd, "stride")
    padding = _ntuple(padding, nd, "padding")
    dilation = _ntuple(dilation, nd, "dilation")
    for p, k, d in zip(padding, kernel, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    return kernel, stride, padding, dilation


def _pool_input(input, nd, name):
    if input.dim() not in (nd + 1, nd + 2):
        if nd == 3:     # the 3-d kernels' own words (max_pool3d's and avg_pool3d's shape check)
            raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
        raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor for input, but got: "
                           f"{list(input.shape)}")
    lead = tuple(input.shape[:-nd])
    planes = input.reshape((-1, 1) + tuple(input.shape[-nd:]))   # every (batch, channel) plane as one image
    return lead, planes


def _max_pool_checks(input, nd, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's refusals of max_pool{1,2,3}d's input and arguments, each in its own kernel's words."""
    shape = list(input.shape)
    batch = input.dim() == nd + 2
    if input.dim() in (nd + 1, nd + 2) and 0 in shape[1 if batch else 0:]:
        if nd == 3:
            raise RuntimeError("max_pool3d_with_indices_out_cpu_template(): Expected input's non-batch dimensions to "
                               f"have positive length, but input has a shape of {shape} and non-batch dimension 0 "
                               "has length zero!")
        raise RuntimeError(f"{'max_pool1d: ' if nd == 1 else ''}Expected {nd + 1}D or {nd + 2}D (batch mode) tensor "
                           f"with optional 0 dim batch size for input, but got:{shape}")
    if nd == 1 and input.dim() not in (2, 3):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{shape}")
    if nd == 1:
        for what, v in (("kernel_size", kernel[0]), ("stride", stride[0]), ("dilation", dilation[0])):
            if v <= 0:
                raise RuntimeError(f"max_pool1d() {what} must be greater than zero, but got {v}")
        span = dilation[0] * (kernel[0] - 1) + 1
        out = ((shape[-1] + 2 * padding[0] - span + (stride[0] - 1 if ceil_mode else 0)) // stride[0]) + 1
        if out < 0:
            raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    elif min(stride) <= 0:
        raise RuntimeError("stride should not be zero")
    elif min(dilation) <= 0:
        raise RuntimeError("dilation should be greater than zero, but got " +
                           " ".join(f"dilation{a}: {d}" for a, d in zip("THW"[3 - nd:], dilation)))


def _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd):
    if min(_ntuple(padding, nd, "padding")) < 0:        # torch looks at the padding first
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(_ntuple(padding, nd, 'padding'))}")
    kernel, stride, padding, dilation = _pool_args(nd, kernel_size, stride, padding, dilation)
    _max_pool_checks(input, nd, kernel, stride, padding, dilation, ceil_mode)
    lead, planes = _pool_input(input, nd, f"max_pool{nd}d")
    in_sizes = tuple(input.shape[-nd:])
    out_sizes, pads = _pool_geometry(in_sizes, kernel, stride, padding, dilation, ceil_mode)
    floating = input.dtype.is_floating_point
    if input.dtype == torch.bool:
        raise NotImplementedError(f"\"max_pool{nd}d\" not implemented for 'Bool'")
    if nd == 1 and not floating and not return_indices:     # ATen's 1-D kernel takes floats only
        raise NotImplementedError(f"\"max_pool1d_impl\" not implemented for '{input.dtype.short}'")
    # the padding never wins: -inf for floats, the dtype's least value for integers
    low = -math.inf if floating else float(np.iinfo(input.dtype.np).min)
    cols = torch.im2col(planes, kernel, dilation, pads, stride, low)             # (P, K, L)
    k = cols.shape[1]
    idx = cols.argmax(1, keepdim=True)                                              # first maximum, NaN wins
    if floating:
        chosen = torch.arange(k, device=idx.device).reshape(1, k, 1) == idx
        out = torch.where(chosen, cols, 0.0).sum(1)          # the gradient goes to the chosen element only
    else:
        out = cols.gather(1, idx).squeeze(1)                 # exact: integers never pass through a float
    out = out.to(input.dtype).reshape(lead + tuple(out_sizes))
    if not return_indices:
        return out
    return out, _pool_indices(idx.reshape(idx.shape[0], -1), kernel, stride, padding, dilation, in_sizes, out_sizes,
                              lead)


def _pool_indices(idx, kernel, stride, padding, dilation, in_sizes, out_sizes, lead):
    """Flat indices into each input plane of the chosen window elements, as max_pool's return_indices."""
    w = idx.cpu().numpy()                                     # (P, L) position inside each window
    nd = len(kernel)
    kpos = np.unravel_index(w, kernel)                  # per spatial dim: offset inside the window
    opos = np.unravel_index(np.arange(w.shape[1]), out_sizes)
    flat = np.zeros_like(w)
    for i in range(nd):
        coord = opos[i][None, :] * stride[i] - padding[i] + kpos[i] * dilation[i]
        flat = flat * in_sizes[i] + coord
    return torch.from_numpy(flat.astype(np.int64).reshape(lead + tuple(out_sizes))).to(idx.device)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3)


def _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd):
    kernel, stride, padding, dilation = _pool_args(nd, kernel_size, stride, padding, 1)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if any(p < 0 for p in padding):             # ATen's pooling_output_shape
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(padding)}")
    lead, planes = _pool_input(input, nd, f"avg_pool{nd}d")
    in_sizes = tuple(input.shape[-nd:])
    out_sizes, pads = _pool_geometry(in_sizes, kernel, stride, padding, dilation, ceil_mode)
    sums = torch.im2col(planes, kernel, dilation, pads, stride).sum(1)              # (P, L)
    if divisor_override:
        divisor = float(divisor_override)
    else:
        # how many elements each window averages: the padded input counts (count_include_pad) or only
        # the real input does; the extra right padding of ceil_mode never counts
        if count_include_pad:
            ones = torch.ones((1, 1) + tuple(s + 2 * p for s, p in zip(in_sizes, padding)), dtype=input.dtype,
                              device=input.device)
            cpads = [v for p, i in zip(padding, range(nd)) for v in (0, pads[2 * i + 1] - p)]
        else:
            ones = torch.ones((1, 1) + in_sizes, dtype=input.dtype, device=input.device)
            cpads = pads
        divisor = torch.im2col(ones, kernel, dilation, cpads, stride).sum(1)        # (1, L)
    out = sums / divisor
    return out.to(input.dtype).reshape(lead + tuple(out_sizes))


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_poolnd(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_poolnd(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_poolnd(input, norm_type, kernel_size, stride, ceil_mode, 2)


def _adaptive_bounds(in_size, out_size):
    """PyTorch's adaptive windows: [floor(i * in / out), ceil((i + 1) * in / out))."""
    return [((i * in_size) // out_size, -(-((i + 1) * in_size) // out_size)) for i in range(out_size)]


def _adaptive_sizes(input, output_size, nd, kind="avg"):
    """The output sizes (None keeps the input's), with PyTorch's refusals of the input's dims and the sizes."""
    name = f"adaptive_{kind}_pool{nd}d"
    if input.dim() < nd + 1:
        if nd == 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument "
                               f"#1 'self' (while checking arguments for {name})")
        raise ValueError(f"Input dimension should be at least {nd + 1}")
    if input.dim() > nd + 2:
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    sizes = _ntuple(output_size, nd, "output_size") if not isinstance(output_size, (tuple, list)) \
        else tuple(output_size)
    if len(sizes) != nd:
        raise RuntimeError(f"{name}() argument 'output_size' should contain one int (got {len(sizes)})" if nd == 1
                           else f"{name}(): internal error: output_size.size() must be {nd}" if kind == "max"
                           else f"{name}: output_size must be {nd}")
    sizes = tuple(input.shape[-nd + i] if s is None else int(s) for i, s in enumerate(sizes))
    if kind == "max" and min(sizes) < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: "
                           f"{list(input.shape[:-nd]) + list(sizes)}")
    if min(sizes) < 0:          # the 1-D average pools as a 2-D one of height 1
        shown = (1,) * (nd == 1) + sizes
        raise RuntimeError(f"adaptive_avg_pool{len(shown)}d: elements of output_size must be greater than or equal "
                           f"to 0 but received {{{', '.join(map(str, shown))}}}")
    return sizes


def _along(x, dim, matrix):
    """x with its dim mapped through matrix (out, in): the separable step of pooling and resizing."""
    moved = x.transpose(dim, -1)
    return torch.matmul(moved, matrix.t()).transpose(dim, -1)


def _adaptive_avg_poolnd(input, output_size, nd):
    out_sizes = _adaptive_sizes(input, output_size, nd)
    out = input
    for i, o in enumerate(out_sizes):           # a mean over a box is a mean along each dim in turn
        size = input.shape[input.dim() - nd + i]
        m = np.zeros((o, size))
        for j, (a, b) in enumerate(_adaptive_bounds(size, o)):
            m[j, a:b] = 1.0 / (b - a)
        out = _along(out, input.dim() - nd + i, torch.tensor(m, dtype=input.dtype, device=input.device))
    return out


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg_poolnd(input, output_size, 1)


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg_poolnd(input, output_size, 2)


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg_poolnd(input, output_size, 3)


def _adaptive_max_poolnd(input, output_size, return_indices, nd):
    out_sizes = _adaptive_sizes(input, output_size, nd, "max")
    in_sizes = tuple(input.shape[-nd:])
    bounds = [_adaptive_bounds(s, o) for s, o in zip(in_sizes, out_sizes)]
    lead = tuple(input.shape[:-nd])
    planes = input.reshape((-1,) + in_sizes)
    # gather every window, padded to the largest window size with -inf, into (P, cells, Kmax)
    kmax = [max(b - a for a, b in bd) for bd in bounds]
    sel = np.zeros((int(np.prod(out_sizes)), int(np.prod(kmax))), dtype=np.int64)
    valid = np.zeros(sel.shape, dtype=bool)
    n_in = int(np.prod(in_sizes))
    for cell, pos in enumerate(np.ndindex(*out_sizes)):
        for kk, off in enumerate(np.ndindex(*kmax)):
            coord = [bounds[i][pos[i]][0] + off[i] for i in range(nd)]
            if all(coord[i] < bounds[i][pos[i]][1] for i in range(nd)):
                sel[cell, kk] = np.ravel_multi_index(coord, in_sizes)
                valid[cell, kk] = True
            else:
                sel[cell, kk] = n_in            # points at the -inf sentinel
    flat = torch.cat([planes.reshape(planes.shape[0], n_in),
                      torch.full((planes.shape[0], 1), -math.inf, dtype=input.dtype, device=input.device)], 1)
    windows = flat[:, torch.from_numpy(sel)]                                        # (P, cells, Kmax)
    idx = windows.argmax(-1, keepdim=True)
    chosen = torch.arange(sel.shape[1], device=idx.device).reshape(1, 1, -1) == idx
    out = torch.where(chosen, windows, 0.0).sum(-1).to(input.dtype).reshape(lead + out_sizes)
    if not return_indices:
        return out
    picked = np.take_along_axis(np.broadcast_to(sel, (idx.shape[0],) + sel.shape), idx.cpu().numpy(), -1)[..., 0]
    return out, torch.from_numpy(picked.reshape(lead + out_sizes).astype(np.int64)).to(input.device)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max_poolnd(input, output_size, return_indices, 1)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max_poolnd(input, output_size, return_indices, 2)


# ============================================================================== normalization

def _verify_batch_size(shape):
    n = 1
    for i, s in enumerate(shape):
        if i != 1:
            n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {shape}")


def _update_running(running, value, momentum):
    with torch.no_grad():
        running.copy_(running * (1 - momentum) + value.detach().to(running.dtype) * momentum)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalises over every dim but the channel dim (1); in training mode with running stats given,
    updates them in place (the running variance uses the unbiased estimate)."""
    if input.dim() < 2:     # ATen counts no channels in a 1-D input: only an empty one goes through
        if input.numel() == 0:
            return input.clone()
        if running_mean is not None:
            raise RuntimeError(f"running_mean should contain 0 elements not {running_mean.numel()}")
        raise ValueError(f"expected 2D or higher input (got {input.dim()}D input)")
    c = input.shape[1]
    shape = _channel_shape(input, c)
    dims = [0] + list(range(2, input.dim()))
    if training:
        _verify_batch_size(list(input.shape))
        n = input.numel() // c
        mean = input.mean(dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dims, keepdim=True)
        if running_mean is not None:
            _update_running(running_mean, mean.reshape(c), momentum)
        if running_var is not None:
            _update_running(running_var, var.reshape(c) * (n / max(n - 1, 1)), momentum)
        out = centered / torch.sqrt(var + eps)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        out = (input - running_mean.reshape(shape)) / torch.sqrt(running_var.reshape(shape) + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    n, c = input.shape[0], input.shape[1]
    shape = _channel_shape(input, c)
    if use_input_stats:
        dims = list(range(2, input.dim()))
        if input.numel() // (n * c) == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                             f"{list(input.shape)}")
        mean = input.mean(dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dims, keepdim=True)
        if running_mean is not None:
            _update_running(running_mean, mean.reshape(n, c).mean(0), momentum)
        if running_var is not None:
            k = input.numel() // (n * c)
            _update_running(running_var, (var.reshape(n, c) * (k / max(k - 1, 1))).mean(0), momentum)
        out = centered / torch.sqrt(var + eps)
    else:
        out = (input - running_mean.reshape(shape)) / torch.sqrt(running_var.reshape(shape) + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


@_autocast(None, cuda="fp32")       # PyTorch's CPU list leaves it as is
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalises over the last len(normalized_shape) dims."""
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) \
        else tuple(normalized_shape)
    k = len(normalized_shape)
    if tuple(input.shape[input.dim() - k:]) != normalized_shape or input.dim() < k:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, normalized_shape))}], but got input of size{list(input.shape)}")
    dt = input.dtype
    if input.device.type == "cpu" and dt in (torch.float32, torch.float64) and \
            all(t is None or (t.dtype is dt and t.device.type == "cpu" and tuple(t.shape) == normalized_shape)
                for t in (weight, bias)):
        return torch._functional._layer_norm(input, weight, bias, k, eps)      # one op (ops.yaml: _layer_norm)
    dims = list(range(input.dim() - k, input.dim()))
    mean = input.mean(dims, keepdim=True)
    centered = input - mean
    var = (centered * centered).mean(dims, keepdim=True)
    out = centered / torch.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def _rms_norm_checks(input, normalized_shape, weight):
    """ATen's rms_norm checks of normalized_shape, weight and input, in its order and words."""
    if not normalized_shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           f"element, but got normalized_shape = {list(normalized_shape)}")
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(normalized_shape)}")
    k = len(normalized_shape)
    if input.dim() < k or tuple(input.shape[input.dim() - k:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*{', '.join(map(str, normalized_shape))}], but got input of size{list(input.shape)}")


def rms_norm(input, normalized_shape, weight=None, eps=None):
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, numbers.Integral) \
        else tuple(normalized_shape)
    _rms_norm_checks(input, normalized_shape, weight)
    dims = list(range(input.dim() - len(normalized_shape), input.dim()))
    if eps is None:
        eps = float(ml_dtypes.finfo(input.dtype.np if hasattr(input.dtype, "np") else np.float32).eps)
    out = input / torch.sqrt((input * input).mean(dims, keepdim=True) + eps)
    return out * weight if weight is not None else out


@_autocast(None, cuda="fp32")       # PyTorch's CPU list leaves it as is
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalises over groups of channels (and all spatial positions) per sample."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    x = input.reshape(n, num_groups, (input.numel() // (n * num_groups)) if n else math.prod(input.shape[2:]) *
                      (c // num_groups))
    mean = x.mean(-1, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(-1, keepdim=True)
    out = (centered / torch.sqrt(var + eps)).reshape(input.shape)
    shape = _channel_shape(input, c)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    n, c = input.shape[0], input.shape[1]
    if input.numel() == 0:          # nothing to normalise: PyTorch returns the empty input's shape
        return input * 1
    sq = (input * input).reshape(n, 1, c, -1)
    # average over a window of `size` channels around each channel (zero padded)
    pads = (size // 2, (size - 1) // 2)
    cols = torch.im2col(sq, (size, 1), (1, 1), (pads[0], pads[1], 0, 0), (1, 1))   # (N, size, C*rest)
    total = cols.sum(1).reshape(input.shape)
    # torch's avg_pool of an integer tensor divides in integers (C's truncation), then scales in floating point
    div = total / size if input.is_floating_point() else torch.div(total, size, rounding_mode="trunc")
    return input / (div * alpha + k).pow(beta)


# ============================================================================== embedding, dropout

def _take_rows(weight, indices):
    flat = indices.reshape(-1)
    if hasattr(torch, "index_select"):
        rows = torch.index_select(weight, 0, flat)
    else:
        rows = weight[flat]
    return rows.reshape(tuple(indices.shape) + tuple(weight.shape[1:]))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of weight picked by the integer indices in input; the padding_idx row gets no gradient."""
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    if input.dtype.is_floating_point:
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    num = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < num, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -num, "Padding_idx must be within num_embeddings"
            padding_idx = num + padding_idx
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    out = _take_rows(weight, input)
    if scale_grad_by_freq:          # each row's gradient divided by how often its index occurs in input
        idx = input.cpu().numpy().reshape(-1).astype(np.int64)
        freq = np.bincount(idx, minlength=num)[idx].reshape(tuple(input.shape) + (1,))
        out = _grad_scaled(out, torch.from_numpy(1.0 / freq).to(out.device, out.dtype))
    if padding_idx is not None:
        keep = (input != padding_idx).unsqueeze(-1)
        out = torch.where(keep, out, out.detach())
    return out


def _embedding_renorm_(weight, input, max_norm, norm_type):
    with torch.no_grad():
        rows = np.unique(input.cpu().numpy().reshape(-1))
        w = weight.detach().cpu().numpy()
        norms = (np.abs(w[rows]) ** norm_type).sum(-1) ** (1.0 / norm_type)
        scale = np.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype)
        new = w.copy()
        new[rows] = w[rows] * scale[:, None]
        weight.copy_(torch.from_numpy(new))


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes elements with probability p and scales the rest by 1 / (1 - p) (identity when not training)."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        out = input * 0.0
    elif input.device.type == "cpu" and input.dtype in (torch.float32, torch.float64):
        out = torch._functional._dropout_apply(input, torch.rand(input.shape), float(p))     # one op, one node
    else:
        keep = (torch.rand(input.shape, device=input.device) >= p).to(input.dtype)
        out = input * keep * (1.0 / (1.0 - p))
    return _inplace(input, out) if inplace else out


def _feature_noise(input, p, training, inplace):
    """ATen's feature_dropout: one keep-or-drop draw per (dim 0, dim 1) entry, scaled by 1 / (1 - p)."""
    if not training or p == 0.0:
        return input
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    keep = (torch.rand(mask_shape, device=input.device) >= p).to(input.dtype)
    out = input * keep * (1.0 / (1.0 - p)) if p < 1 else input * 0.0
    return _inplace(input, out) if inplace else out


def _feature_dropout(input, p, training, inplace, nd):
    """dropout{nd}d as PyTorch has it: nd = 1 refuses other ranks, 2 and 3 warn; 1 and 3 give an unbatched
    input a batch dim, 2 does not (a 3-D input is read as (N, C, L), with PyTorch's warning)."""
    _check_p(p)
    name, dim = f"dropout{nd}d", input.dim()
    if dim not in (nd + 1, nd + 2):
        if nd == 1:
            raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {dim}D input. Note that "
                               "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
                               "a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
        words = {2: "2 spatial dimensions", 3: "3 spatial dimensions"}[nd]
        warnings.warn(f"{name}: Received a {dim}-D input to {name}, which is deprecated and will result in an error "
                      "in a future release. To retain the behavior and silence this warning, please use dropout "
                      f"instead. Note that {name} exists to provide channel-wise dropout on inputs with {words}, a "
                      f"channel dimension, and an optional batch dimension (i.e. {nd + 1}D or {nd + 2}D inputs).",
                      stacklevel=3)
    if nd == 2:
        if dim == 3:
            warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                          "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                          "This behavior will change in a future release to interpret the input as one without a "
                          "batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, "
                          "please switch to using dropout1d instead.", stacklevel=3)
        return _feature_noise(input, p, training, inplace)
    if dim == nd + 2:
        return _feature_noise(input, p, training, inplace)
    out = _feature_noise(input.unsqueeze(0), p, training, False).squeeze(0)
    return _inplace(input, out) if inplace and out is not input else out


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 2)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _feature_dropout(input, p, training, inplace, 3)


_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


def _alpha_dropout(input, p, training, mask_shape):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    alpha_p = -_SELU_ALPHA * _SELU_SCALE
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    keep = (torch.rand(mask_shape, device=input.device) >= p).to(input.dtype)
    return (input * keep + alpha_p * (1 - keep)) * a + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    out = _alpha_dropout(input, p, training, tuple(input.shape))
    return _inplace(input, out) if inplace and out is not input else out


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    out = _alpha_dropout(input, p, training, shape)
    return _inplace(input, out) if inplace and out is not input else out


# ============================================================================== padding, resizing

def pad(input, pad, mode="constant", value=None):
    """Pads the last len(pad) // 2 dims: pad = (left, right, top, bottom, ...) from the last dim backwards."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant" and value:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if mode != "constant" and input.dim() not in (len(pad) // 2 + 1, len(pad) // 2 + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
                                  "Supported combinations for non-constant padding:\n"
                                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode == "reflect":
        for i in range(len(pad) // 2):
            size = input.shape[input.dim() - 1 - i]
            if pad[2 * i] >= size or pad[2 * i + 1] >= size:
                raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({pad[2 * i]}, {pad[2 * i + 1]}) at dimension "
                                   f"{input.dim() - 1 - i} of input {list(input.shape)}")
    if mode == "circular":
        for i in range(len(pad) // 2):
            if max(pad[2 * i], pad[2 * i + 1]) > input.shape[input.dim() - 1 - i]:
                raise RuntimeError("Padding value causes wrapping around more than once.")
    if mode == "constant" or min(pad) >= 0:
        return torch.pad(input, pad, mode, value)
    # negative padding crops: reflect and replicate pad the whole input and crop after (so a reflection
    # reads the cropped elements), circular crops first and wraps what is left, as PyTorch does
    crop = tuple(min(p, 0) for p in pad)
    grow = tuple(max(p, 0) for p in pad)
    if mode == "circular":
        return torch.pad(torch.pad(input, crop), grow, mode)
    return torch.pad(torch.pad(input, grow, mode), crop)


def _index_along(x, dim, positions):
    """x indexed along dim by integer positions (differentiable through index_select)."""
    index = torch.from_numpy(np.ascontiguousarray(positions, dtype=np.int64))
    if hasattr(torch, "index_select"):
        return torch.index_select(x, dim, index)
    key = (slice(None),) * dim + (index,)
    return x[key]


def _resize_matrix(mode, in_size, out_size, scale, align_corners):
    """The (out, in) matrix of one spatial dim of interpolate: selection (nearest) or linear weights."""
    m = np.zeros((out_size, in_size))
    dst = np.arange(out_size)
    if mode in ("nearest", "nearest-exact"):
        s = np.float32(scale) if scale is not None else np.float32(in_size) / np.float32(out_size)
        if mode == "nearest":
            src = np.floor(dst.astype(np.float32) * s).astype(np.int64)
        else:
            src = np.floor((dst.astype(np.float32) + np.float32(0.5)) * s).astype(np.int64)
        src = np.minimum(src, in_size - 1)
        m[dst, src] = 1.0
        return m
    if align_corners:
        s = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        src = dst * s
    else:
        s = scale if scale is not None else in_size / out_size
        src = (dst + 0.5) * s - 0.5
        if mode != "bicubic":           # cubic keeps the negative source positions (ATen's cubic=True)
            src = np.maximum(src, 0.0)
    if mode == "bicubic":
        return _cubic_matrix(m, dst, src, in_size)
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    i1 = np.minimum(i0 + 1, in_size - 1)
    lam1 = src - i0
    np.add.at(m, (dst, i0), 1.0 - lam1)
    np.add.at(m, (dst, i1), lam1)
    return m


def _cubic_matrix(m, dst, src, in_size, a=-0.75):
    """Keys' cubic convolution (A = -0.75) over the 4 taps around src, taps clamped to the edges, as ATen."""
    base = np.floor(src)
    t = src - base
    weights = [((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
               ((a + 2) * t - (a + 3)) * t * t + 1,
               ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
               ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a]
    for k, w in enumerate(weights):
        np.add.at(m, (dst, np.clip(base.astype(np.int64) - 1 + k, 0, in_size - 1)), w)
    return m


def _resize_uint8(input, mats):
    """ATen's uint8 resampling: per resized dim (the last first), int16 fixed-point weights with the most
    precision bits that fit, a rounding bias, and the result clipped to [0, 255] after each pass."""
    x = input.cpu().numpy().astype(np.int64)
    for dim in reversed(range(len(mats))):
        m = mats[dim]
        if m is None:
            continue
        prec = 0
        while prec < 22 and int(0.5 + np.abs(m).max() * (1 << (prec + 1))) < (1 << 15):
            prec += 1
        w = np.where(m < 0, np.trunc(-0.5 + m * (1 << prec)), np.trunc(0.5 + m * (1 << prec))).astype(np.int64)
        moved = np.moveaxis(x, 2 + dim, -1)
        acc = (1 << (prec - 1)) + moved @ w.T
        x = np.moveaxis(np.clip(acc >> prec, 0, 255), -1, 2 + dim)
    return torch.from_numpy(np.ascontiguousarray(x.astype(np.uint8))).to(input.device)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resizes the spatial dims (all but the first two) by nearest, (bi/tri)linear or area sampling."""
    nd = input.dim() - 2
    if nd < 1:
        raise ValueError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for the "
                         f"modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact "
                         f"(got {mode})")
    linear_modes = {"linear": 1, "bilinear": 2, "trilinear": 3}
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif mode in linear_modes:
        if linear_modes[mode] != nd:
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                      f"{linear_modes[mode] + 2}D input")
        align_corners = bool(align_corners)
    elif mode == "bicubic":
        if nd != 2:
            raise NotImplementedError(f"Got {input.dim()}D input, but bicubic mode needs 4D input")
        align_corners = bool(align_corners)
    else:
        raise NotImplementedError(f"Input Error: unsupported mode {mode!r}")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported by reftorch")
    in_sizes = tuple(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out_sizes = _ntuple(size, nd, "size")
        scales = [None] * nd
    elif scale_factor is not None:
        factors = [float(f) for f in scale_factor] if isinstance(scale_factor, (tuple, list)) \
            else [float(scale_factor)] * nd
        if len(factors) != nd:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got "
                             f"input with spatial dimensions of {list(in_sizes)} and scale_factor of shape "
                             f"{list(scale_factor)}.")
        out_sizes = tuple(int(math.floor(s * f)) for s, f in zip(in_sizes, factors))
        scales = [None if recompute_scale_factor else 1.0 / f for f in factors]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if mode == "area":
        return adaptive_avg_pool1d(input, out_sizes) if nd == 1 else _adaptive_avg_poolnd(input, out_sizes, nd)
    mats = [None if out_sizes[i] == in_sizes[i] and scales[i] in (None, 1.0) else
            _resize_matrix(mode, in_sizes[i], out_sizes[i], scales[i], align_corners) for i in range(nd)]
    if input.dtype == torch.uint8 and mode in ("bilinear", "bicubic"):
        return _resize_uint8(input, mats)
    if not input.dtype.is_floating_point and mode not in ("nearest", "nearest-exact"):
        raise NotImplementedError(f"\"compute_indices_weights_{'cubic' if mode == 'bicubic' else 'linear'}\" not "
                                  f"implemented for '{input.dtype.short.replace('Tensor', '')}'")
    out = input
    for i, m in enumerate(mats):
        if m is not None:       # weights in the input's dtype, one matrix product per resized dim
            out = _along(out, 2 + i, torch.tensor(m, dtype=input.dtype, device=input.device))
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    r = upscale_factor
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    n = len(lead)
    x = x.permute(tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2))
    return x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    r = downscale_factor
    *lead, c, h, w = input.shape
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    n = len(lead)
    x = x.permute(tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3))
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


def channel_shuffle(input, groups):
    n, c = input.shape[0], input.shape[1]
    rest = tuple(input.shape[2:])
    return input.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape((n, c) + rest)


def _one_hot_along(index, num_classes, dim, dtype, ndim):
    """index (keepdim-shaped along dim) turned into a one-hot tensor along dim."""
    shape = [1] * ndim
    shape[dim] = num_classes
    return (torch.arange(num_classes, device=index.device).reshape(shape) == index).to(dtype)


def one_hot(tensor, num_classes=-1):
    """(..., num_classes) int64 tensor with a 1 at each index of tensor."""
    return torch.one_hot(tensor, num_classes)


# ============================================================================== distances

def _vector_norm(x, p, dim, keepdim=False):
    if x.is_complex():      # the modulus's norm, real (torch's norm of complex inputs)
        return torch.linalg.vector_norm(x, p, dim, keepdim=keepdim)
    if p == 0:              # the number of non-zero entries: constant almost everywhere, a zero gradient
        return torch.where(x != 0, 1.0, x * 0).sum(dim, keepdim=keepdim)
    if p == 2:
        sq = (x * x).sum(dim, keepdim=keepdim)
        # d sqrt at 0 is inf; PyTorch's norm gives a zero gradient there, as the where does here
        safe = torch.where(sq > 0, sq, 1.0)
        return torch.where(sq > 0, torch.sqrt(safe), 0.0)
    if p == 1:
        return torch.abs(x).sum(dim, keepdim=keepdim)
    if p == math.inf:
        return torch.abs(x).amax(dim, keepdim=keepdim)
    s = (torch.abs(x) ** p).sum(dim, keepdim=keepdim)
    safe = torch.where(s > 0, s, 1.0)
    return torch.where(s > 0, safe ** (1.0 / p), 0.0)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p over dim, eps)."""
    # torch's: the (real) norm clamped below by eps, so complex inputs divide by a real denominator
    norm = torch.linalg.vector_norm(input, p, dim, keepdim=True)
    return input / norm.clamp_min(eps).expand(input.shape)


@_autocast(None, cuda="fp32")       # PyTorch's CPU list leaves it as is
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between x1 and x2 along dim (norms clamped below by eps)."""
    shape = torch.broadcast_shapes(x1.shape, x2.shape) if hasattr(torch, "broadcast_shapes") \
        else np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = torch.maximum(_vector_norm(x1, 2, dim, keepdim=True), torch.tensor(eps, dtype=x1.dtype))
    n2 = torch.maximum(_vector_norm(x2, 2, dim, keepdim=True), torch.tensor(eps, dtype=x2.dtype))
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _vector_norm(x1 - x2 + eps, p, -1, keepdim)


@_autocast(None, cuda="fp32")       # PyTorch's CPU list leaves it as is
def pdist(input, p=2):
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    a = _index_along(input, 0, i)
    b = _index_along(input, 0, j)
    return _vector_norm(a - b, p, -1)


# ============================================================================== attention

def _causal_keep(l, s, device=None):
    return torch.arange(l, device=device).reshape(l, 1) >= torch.arange(s, device=device).reshape(1, s)


@_autocast("lower")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q k^T * scale + mask) v, with a boolean mask meaning 'may attend' and a float mask added."""
    l, s = query.shape[-2], key.shape[-2]
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, -3)
        value = value.repeat_interleave(rep, -3)
    if attn_mask is None and dropout_p == 0.0 and query.device.type == "cpu" and query.dim() >= 2 and \
            query.dtype.is_floating_point and key.dtype is query.dtype and value.dtype is query.dtype \
            and key.device == query.device and value.device == query.device and \
            query.shape[:-2] == key.shape[:-2] == value.shape[:-2] and key.shape[-1] == query.shape[-1] and \
            value.shape[-2] == key.shape[-2]:
        return torch._functional._sdpa(query, key, value, bool(is_causal), float(scale_factor))    # one op
    scores = torch.matmul(query, key.transpose(-2, -1)) * scale_factor
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        scores = torch.where(_causal_keep(l, s, scores.device), scores, -math.inf)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = torch.where(attn_mask, scores, -math.inf)
        else:
            scores = scores + attn_mask
    weights = torch.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return torch.matmul(weights, value)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """PyTorch's multi-head attention on (L, N, E) inputs (sequence first), or (L, E) unbatched."""
    unbatched = query.dim() == 2
    if unbatched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        attn_mask = torch.where(_causal_keep(tgt_len, src_len, query.device), 0.0, -math.inf).to(query.dtype)
    if not use_separate_proj_weight:
        w_q, w_k, w_v = in_proj_weight.chunk(3)
        b_q, b_k, b_v = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
    else:
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
        b_q, b_k, b_v = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
    q, k, v = _in_projection(query, key, value, w_q, w_k, w_v, b_q, b_k, b_v)

    # masks become additive float masks of shape broadcastable to (N, H, L, S)
    mask = None
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_mask = torch.where(attn_mask, -math.inf, 0.0).to(q.dtype)
        if attn_mask.dim() == 2:
            mask = attn_mask.reshape(1, 1, tgt_len, src_len)
        else:
            mask = attn_mask.reshape(bsz, num_heads, tgt_len, src_len)
    if bias_k is not None and bias_v is not None:
        k = torch.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = torch.cat([v, bias_v.expand(1, bsz, embed_dim)])
        if mask is not None:
            mask = pad(mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
        src_len += 1
    if add_zero_attn:
        k = torch.cat([k, torch.zeros((1, bsz, embed_dim), dtype=k.dtype, device=k.device)])
        v = torch.cat([v, torch.zeros((1, bsz, embed_dim), dtype=v.dtype, device=v.device)])
        if mask is not None:
            mask = pad(mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
        src_len += 1
    if key_padding_mask is not None:
        kpm = key_padding_mask
        if kpm.dtype == torch.bool:
            kpm = torch.where(kpm, -math.inf, 0.0).to(q.dtype)
        kpm = kpm.reshape(bsz, 1, 1, src_len)
        mask = kpm if mask is None else mask + kpm

    # (L, N, E) -> (N, H, L, D)
    q = q.reshape(tgt_len, bsz, num_heads, head_dim).permute(1, 2, 0, 3)
    k = k.reshape(src_len, bsz, num_heads, head_dim).permute(1, 2, 0, 3)
    v = v.reshape(src_len, bsz, num_heads, head_dim).permute(1, 2, 0, 3)
    scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
    if mask is not None:
        scores = scores + mask
    weights = torch.softmax(scores, -1)
    if dropout_p > 0.0 and training:
        weights = dropout(weights, dropout_p, True)
    out = torch.matmul(weights, v)                                        # (N, H, L, D)
    out = out.permute(2, 0, 1, 3).reshape(tgt_len, bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    if unbatched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    if average_attn_weights:
        weights = weights.mean(1)
    if unbatched:
        weights = weights.squeeze(0)
    return out, weights


# ============================================================================== losses

@_autocast("fp32")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_same_size(input, target)
    reduction = _reduction_string(size_average, reduce, reduction)
    loss = torch.abs(input - target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@_autocast("fp32")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_same_size(input, target)
    reduction = _reduction_string(size_average, reduce, reduction)
    diff = input - target
    if diff.dtype.is_complex:       # (PyTorch's kernel refuses complex; l1_loss takes it)
        raise NotImplementedError(f"\"mse_cpu\" not implemented for '{diff.dtype.short}'")
    loss = diff * diff
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@_autocast("fp32")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _check_same_size(input, target)
    reduction = _reduction_string(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    diff = input - target
    ad = torch.abs(diff)
    if beta == 0.0:
        return _reduce(ad, reduction)
    loss = torch.where(beta > ad, 0.5 * diff * diff / beta, ad - 0.5 * beta)
    return _reduce(loss, reduction)


@_autocast("fp32")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _check_same_size(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    diff = input - target
    ad = torch.abs(diff)
    loss = torch.where(delta > ad, 0.5 * diff * diff, delta * (ad - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _pick_class(values, target, classes):
    """values[n, target[n], ...] along dim 1 (the class dim) as a tensor of target's shape."""
    shape = [1] * values.dim()
    shape[1] = classes
    chosen = torch.arange(classes, device=target.device).reshape(shape) == target.unsqueeze(1)
    return torch.where(chosen, values, 0.0).sum(1)


@_autocast("fp32")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-input[n, target[n]] (weighted), averaged over the non-ignored targets by their weights."""
    reduction = _reduction_string(size_average, reduce, reduction)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    unbatched = input.dim() == 1
    if unbatched:
        if target.dim() != 0:
            raise ValueError(f"Expected target to be a 0-D tensor for a 1-D input, got {target.dim()}-D")
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    if target.dtype.is_floating_point:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype}")
    if input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if tuple(input.shape[2:]) != tuple(target.shape[1:]):
        raise ValueError(f"Expected target size {[input.shape[0]] + list(input.shape[2:])}, got "
                         f"{list(target.shape)}")
    if reduction not in ("none", "sum", "mean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if input.device.type in ("cpu", "meta"):      # (meta: the array op's geometry, reftorch/_meta.py)
        if weight is not None and weight.dtype != input.dtype:
            weight = weight.to(input.dtype)
        # one op and its gradient (ops.yaml: _nll_loss): -input[n, target[n]] * weight[target[n]], reduced
        loss = torch._nll_loss(input, target, weight, ignore_index, reduction)
        return loss.squeeze(0) if unbatched and reduction == "none" else loss
    classes = input.shape[1]      # on a device: ops that run there (the array op's body would run on the host)
    valid = target != ignore_index
    safe = torch.where(valid, target, 0)
    # (a bounds check only: reftorch.compile does not break its graph here, nor repeat the check)
    t = safe.cpu().numpy() if weight is not None else torch._dispatch.values_for_check(safe)
    if t.size and (t.min() < 0 or t.max() >= classes):
        bad = int(t[(t < 0) | (t >= classes)][0])
        raise IndexError(f"Target {bad} is out of bounds.")
    picked = _pick_class(input, safe, classes)
    w = torch.where(valid, 1.0, 0.0).to(input.dtype) if weight is None else \
        torch.where(valid, _index_along(weight, 0, t.reshape(-1)).reshape(tuple(safe.shape)), 0.0).to(input.dtype)
    loss = -picked * w
    if reduction == "none":
        return loss.squeeze(0) if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


@_autocast("fp32")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over dim 1 and nll_loss for class indices; -sum(target * log_softmax) for probabilities."""
    reduction = _reduction_string(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if weight is None and not label_smoothing and isinstance(input, _Tensor) and isinstance(target, _Tensor) and \
            len(input._shape) == 2 and len(target._shape) == 1 and input._shape[0] == target._shape[0] and \
            input.device.type == "cpu" and target.dtype.category != 2 and reduction in ("none", "sum", "mean"):
        # (N, C) logits and N class indices on the cpu, checked at once: the two ops nll_loss(log_softmax) runs
        return torch._nll_loss(torch._functional._log_softmax(input, 1), target, None, ignore_index, reduction)
    class_dim = 0 if input.dim() == 1 else 1
    classes = input.shape[class_dim]
    logp = torch.log_softmax(input, class_dim)
    wshape = [1] * input.dim()
    wshape[class_dim] = classes
    if target.dtype.is_floating_point:          # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"Expected target size {list(input.shape)}, got {list(target.shape)}")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        prod = logp * target
        if weight is not None:
            prod = prod * weight.reshape(wshape)
        if reduction == "none":
            return -prod.sum(class_dim)
        if reduction == "sum":
            return -prod.sum()
        if reduction == "mean":
            return -prod.sum() / (input.numel() // classes) if input.dim() > 1 else -prod.sum()
        raise ValueError(f"{reduction} is not a valid value for reduction")
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing <= 0:
        return nll
    smooth = -(logp * weight.reshape(wshape)).sum(class_dim) if weight is not None else -logp.sum(class_dim)
    ignored = target == ignore_index
    smooth = torch.where(ignored, 0.0, smooth)
    if reduction == "mean":
        if weight is not None:
            t = torch.where(ignored, 0, target).cpu().numpy().reshape(-1)
            keep = ~ignored.cpu().numpy().reshape(-1)
            denom = weight.detach().cpu().numpy()[t[keep]].sum() if keep.any() else 0.0
            smooth = smooth.sum() / float(denom)
        else:
            smooth = smooth.sum() / float((~ignored.cpu().numpy()).sum())
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / classes)


@_autocast("fp32")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction_string(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    vals = input.detach().cpu().numpy()
    if vals.size and ((vals < 0).any() or (vals > 1).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = torch._functional.bce_loss_elementwise(input, target)     # the op of ops.yaml, not exported at top level
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@_autocast("fp32")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """BCE on logits, stable: (1 - y) x - (1 + (pos_weight - 1) y) logsigmoid(x)."""
    reduction = _reduction_string(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    log_sig = torch.logsigmoid(input)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input - log_weight * log_sig
    else:
        loss = (1 - target) * input - log_sig
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _xlogy(x, y):
    """x * log(y), 0 where x == 0 (and a finite gradient there)."""
    safe = torch.where(x == 0, 1.0, y)
    return torch.where(x == 0, 0.0, x * torch.log(safe))


@_autocast("fp32")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) pointwise, input being log-probabilities."""
    if size_average is not None or reduce is not None:
        reduction = _reduction_string(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if log_target:
        loss = torch.exp(target) * (target - input)
    else:
        loss = _xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


@_autocast("fp32")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    reduction = _reduction_string(size_average, reduce, reduction)
    if log_input:
        loss = torch.exp(input) - target * input
    else:
        loss = input - target * torch.log(input + eps)
    if full:
        t = target
        stirling = t * torch.log(torch.where(t > 1, t, 1.0)) - t + 0.5 * torch.log(2 * math.pi * torch.where(
            t > 1, t, 1.0))
        loss = loss + torch.where(t > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    if isinstance(var, numbers.Number):
        var = torch.full(input.shape, float(var), dtype=input.dtype, device=input.device)
    if var.shape != input.shape:
        if var.shape == input.shape[:-1]:
            var = var.unsqueeze(-1)             # homoscedastic: one variance per row
        elif not (var.shape[:-1] == input.shape[:-1] and var.dim() and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if (var.detach().cpu().numpy() < 0).any():
        raise ValueError("var has negative entry/entries")
    with torch.no_grad():
        clamped = torch.maximum(var, torch.tensor(eps, dtype=var.dtype))
    var = var + (clamped - var).detach()            # clamp in forward, identity gradient (as PyTorch)
    diff = input - target
    loss = 0.5 * (torch.log(var) + diff * diff / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@_autocast("fp32")
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    reduction = _reduction_string(size_average, reduce, reduction)
    return _reduce(torch.relu(-target * (input1 - input2) + margin), reduction)


@_autocast("fp32")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction_string(size_average, reduce, reduction)
    zeros = input * 0.0
    margin_clamp = torch.relu(margin - input)
    # ATen's form: a target other than +-1 takes both terms
    loss = torch.where(target != -1, input, zeros) + torch.where(target != 1, margin_clamp, zeros)
    return _reduce(loss, reduction)


@_autocast("fp32")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction_string(size_average, reduce, reduction)
    return _reduce(-torch.logsigmoid(input * target), reduction)     # input first: torch's broadcasting error


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction_string(size_average, reduce, reduction)
    loss = -(target * torch.logsigmoid(input) + (1 - target) * torch.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)


@_autocast("fp32")
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction_string(size_average, reduce, reduction)
    eps = 1e-12
    prod = (input1 * input2).sum(-1)
    mag1 = (input1 * input1).sum(-1) + eps
    mag2 = (input2 * input2).sum(-1) + eps
    cos = prod / torch.sqrt(mag1 * mag2)
    zeros = cos * 0.0
    loss = torch.where(target == 1, 1 - cos, zeros) + torch.where(target == -1, torch.relu(cos - margin), zeros)
    return _reduce(loss, reduction)


def _check_triplet(anchor, positive, negative, margin):
    """The triplet losses' argument checks, in PyTorch's order and words."""
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.dim() == positive.dim() == negative.dim():
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and negative "
                           f"{negative.dim()}D inputs")


@_autocast("fp32")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    reduction = _reduction_string(size_average, reduce, reduction)
    _check_triplet(anchor, positive, negative, margin)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = torch.minimum(d_neg, pairwise_distance(positive, negative, p, eps)) if hasattr(torch, "minimum") \
            else -torch.maximum(-d_neg, -pairwise_distance(positive, negative, p, eps))
    return _reduce(torch.relu(margin + d_pos - d_neg), reduction)


@_autocast("fp32")
def _multi_margin_checks(input, target, p, weight, reduction):
    """torch.nn.functional's checks, then ATen's multi_margin_loss_shape_check, in their order."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    frames = 1 if nd <= 1 else input.shape[0]
    if target.dim() > 1 or target.numel() != frames:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{frames}], but got {list(target.shape)}. "
                           f"Input has shape {list(input.shape)}.")
    classes = 1 if nd == 0 else input.shape[-1]
    if weight is not None and weight.numel() != classes:
        raise RuntimeError(f"inconsistent weight size, expected {classes} but got {list(weight.shape)}")
    if target.dtype != torch.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.short}")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    reduction = _reduction_string(size_average, reduce, reduction)
    _multi_margin_checks(input, target, p, weight, reduction)
    x = input if input.dim() == 2 else input.reshape(1, -1)         # 0-d: one sample of one class
    t = target.reshape(-1)
    c = x.shape[1]
    tv = t.cpu().numpy()
    if tv.size and (tv.min() < 0 or tv.max() >= c):
        raise RuntimeError("target out of range")
    x_t = _pick_class(x, t, c).unsqueeze(1)
    z = torch.relu(margin - x_t + x)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * _index_along(weight, 0, t.cpu().numpy()).unsqueeze(1)
    not_target = (torch.arange(c, device=t.device).reshape(1, c) != t.unsqueeze(1)) if hasattr(torch, "ne") else \
        torch.eq(torch.arange(c, device=t.device).reshape(1, c) == t.unsqueeze(1), False)
    loss = torch.where(not_target, z, 0.0).sum(1) / c
    if input.dim() < 2:             # one sample: the loss takes the target's shape (0-d or (1,))
        loss = loss.reshape(tuple(target.shape))
    return _reduce(loss, reduction)


@_autocast("fp32")
def _multilabel_margin_checks(input, target, reduction):
    """torch.nn.functional's reduction check, then ATen's multilabel_margin_loss_shape_check, in their order."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    nd = input.dim()
    if not ((nd == 2 and input.shape[1] != 0) or (nd == 1 and input.shape[0] != 0) or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    fits = (target.dim() <= 1 and target.numel() == (1 if nd == 0 else input.shape[0])) if nd <= 1 else \
        tuple(target.shape) == tuple(input.shape)
    if not fits:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    if target.dtype != torch.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.short}")


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction_string(size_average, reduce, reduction)
    _multilabel_margin_checks(input, target, reduction)
    x = input if input.dim() == 2 else input.reshape(1, -1)         # 0-d: one sample of one class
    t = (target if target.dim() == 2 else target.reshape(1, -1)).cpu().numpy()
    n, c = x.shape
    if t.size and (t.min() < -1 or t.max() >= c):
        raise RuntimeError("argument #2 'target' is out of range")
    is_target = np.zeros((n, c), dtype=bool)
    pairs = np.zeros((n, c, c))                   # (sample, target class j, other class i): how often
    for row in range(n):
        js = []
        for v in t[row]:
            if v < 0:
                break
            js.append(int(v))
        is_target[row, js] = True
        for j in js:                              # a repeated target counts again, as in PyTorch
            pairs[row, j] += 1
    pairs *= ~is_target[:, None, :]
    diff = torch.relu(1 - (x.unsqueeze(2) - x.unsqueeze(1)))     # [n, j, i] = 1 - (x_j - x_i)
    loss = (diff * torch.from_numpy(pairs).to(x.device, x.dtype)).sum((1, 2)) / c
    if input.dim() < 2:
        loss = loss.squeeze(0)
    return _reduce(loss, reduction)


# ============================================================================== pooling: indices, unpooling, fractional
# (issue 16: the pooling names torch.nn.functional has beyond the above)

def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, True, 1)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, True, 2)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_poolnd(input, kernel_size, stride, padding, dilation, ceil_mode, True, 3)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max_poolnd(input, output_size, True, 1)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max_poolnd(input, output_size, True, 2)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max_poolnd(input, output_size, True, 3)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max_poolnd(input, output_size, return_indices, 3)


def _lp_poolnd(input, norm_type, kernel_size, stride, ceil_mode, nd):
    if norm_type == math.inf:
        return _max_poolnd(input.abs(), kernel_size, stride, 0, 1, ceil_mode, False, nd)
    if norm_type == -math.inf:
        return -_max_poolnd(-input.abs(), kernel_size, stride, 0, 1, ceil_mode, False, nd)
    out = _avg_poolnd(input.pow(norm_type), kernel_size, stride, 0, ceil_mode, True, None, nd)
    k = math.prod(_ntuple(kernel_size, nd, "kernel_size"))
    return (torch.sign(out) * relu(torch.abs(out))).mul(k).pow(1.0 / norm_type)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_poolnd(input, norm_type, kernel_size, stride, ceil_mode, 3)


def _unpool_output_size(input, kernel, stride, padding, output_size):
    nd = len(kernel)
    default = [(input.shape[input.dim() - nd + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(nd)]
    if output_size is None:
        return default
    given, output_size = output_size, list(output_size)
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for d in range(nd):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{given}" (dim {d} must be between {lo} and {hi})')
    return [int(s) for s in output_size]


def _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, nd):
    kernel = _ntuple(kernel_size, nd, "kernel_size")
    stride = kernel if stride is None else _ntuple(stride, nd, "stride")
    padding = _ntuple(padding, nd, "padding")
    out_sizes = _unpool_output_size(input, kernel, stride, padding, output_size)
    if indices.dtype != torch.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype.short}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor, but got a tensor "
                           f"with {input.dim()} dimensions.")
    lead = tuple(input.shape[:-nd])
    n_out = math.prod(out_sizes)
    flat_idx = indices.reshape(-1, math.prod(input.shape[-nd:]) if input.dim() else 1)
    idx = flat_idx.cpu().numpy()
    if idx.size and (idx.min() < 0 or idx.max() >= n_out):
        bad = int(idx[(idx < 0) | (idx >= n_out)][-1])
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, out_sizes))}{')' if nd < 3 else ''}")
    vals = input.reshape(flat_idx.shape)
    out = torch.zeros((vals.shape[0], n_out), dtype=input.dtype, device=input.device).scatter(1, flat_idx, vals)
    return out.reshape(lead + tuple(out_sizes))


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: each value written at its index, zeros elsewhere."""
    return _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpoolnd(input, indices, kernel_size, stride, padding, output_size, 3)


def _fractional_intervals(sample, in_size, out_size, pool, dtype):
    """ATen's generate_intervals: window starts from one random sample u in [0, 1), alpha in the input's dtype."""
    seq = np.zeros(out_size, dtype=np.int64)
    if out_size > 1:
        alpha = dtype(in_size - pool) / dtype(out_size - 1)
        i = np.arange(out_size - 1)
        seq[:-1] = ((i + dtype(sample)) * alpha).astype(np.int64) - np.int64(dtype(sample) * alpha)
    if out_size > 0:
        seq[-1] = in_size - pool
    return seq


def _fractional_max_poolnd(input, kernel_size, output_size, output_ratio, _random_samples, nd):
    name = f"fractional_max_pool{nd}d"
    kernel = _ntuple(kernel_size, nd, "kernel_size")
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratio = _ntuple_float(output_ratio, nd)
        output_size = [int(input.shape[input.dim() - nd + i] * ratio[i]) for i in range(nd)]
    out_sizes = _ntuple(output_size, nd, "output_size")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    in_sizes = tuple(input.shape[-nd:])
    words = ("height", "width") if nd == 2 else ("time", "height", "width")
    for i in range(nd):
        if out_sizes[i] + kernel[i] - 1 > in_sizes[i]:
            raise RuntimeError(f"{name}{'' if nd == 2 else '_out'}(): pool {words[i]} {kernel[i]} too large "
                               f"relative to input {words[i]} {in_sizes[i]}")
    batch = 1 if input.dim() == nd + 1 else input.shape[0]
    channels = input.shape[-nd - 1]
    if _random_samples is None:
        _random_samples = torch.rand((batch, channels, nd), dtype=input.dtype, device=input.device)
    samples = _random_samples.detach().cpu().numpy().astype(np.float64).reshape(batch * channels, nd)
    # the sample order of ATen: (w, h) for 2-D, (t, h, w) for 3-D
    order = (1, 0) if nd == 2 else (0, 1, 2)
    ftype = np.float32 if input.dtype in (torch.float32, torch.float16, torch.bfloat16) else np.float64
    n_in, cells, kk = math.prod(in_sizes), math.prod(out_sizes), math.prod(kernel)
    sel = np.zeros((batch * channels, cells, kk), dtype=np.int64)
    offs = np.array(list(np.ndindex(*kernel))).T                                   # (nd, K)
    grid = np.array(list(np.ndindex(*out_sizes))).T                                # (nd, cells)
    for p in range(batch * channels):
        starts = [_fractional_intervals(samples[p, order[d]], in_sizes[d], out_sizes[d], kernel[d], ftype)
                  for d in range(nd)]
        coord = [starts[d][grid[d]][:, None] + offs[d][None, :] for d in range(nd)]
        sel[p] = np.ravel_multi_index(coord, in_sizes)
    planes = input.reshape(batch * channels, n_in)
    windows = planes.gather(1, torch.from_numpy(sel.reshape(batch * channels, cells * kk)).to(input.device))
    windows = windows.reshape(batch * channels, cells, kk)
    idx = windows.argmax(-1, keepdim=True)                               # the first maximum, NaN wins
    chosen = torch.arange(kk, device=idx.device).reshape(1, 1, kk) == idx
    out = torch.where(chosen, windows, 0.0).sum(-1).to(input.dtype)
    picked = np.take_along_axis(sel, idx.cpu().numpy(), -1)[..., 0]
    shape = tuple(input.shape[:-nd]) + tuple(out_sizes)
    return out.reshape(shape), torch.from_numpy(picked.reshape(shape)).to(input.device)


def _ntuple_float(x, n):
    if isinstance(x, (tuple, list)):
        return tuple(float(v) for v in x) if len(x) == n else (float(x[0]),) * n
    return (float(x),) * n


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional_max_poolnd(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Max pooling over pseudo-random windows (Graham, 2014): one random sample per plane and dim."""
    out = _fractional_max_poolnd(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return out if return_indices else out[0]


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional_max_poolnd(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    out = _fractional_max_poolnd(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return out if return_indices else out[0]


# ============================================================================== sampling grids

def _base_grid(sizes, align_corners, dtype, device):
    """PyTorch's affine_grid base: (prod(sizes), nd + 1) rows (x, y[, z], 1), x along the last size."""
    axes = []
    for s in sizes:
        if s <= 1:
            axes.append(np.zeros(max(s, 0)))
        elif align_corners:
            axes.append(np.linspace(-1.0, 1.0, s))
        else:
            axes.append(np.linspace(-1.0, 1.0, s) * (s - 1) / s)
    mesh = np.meshgrid(*axes, indexing="ij")
    cols = [m.reshape(-1) for m in reversed(mesh)] + [np.ones(math.prod(sizes))]
    return torch.tensor(np.stack(cols, -1), dtype=dtype, device=device)


def affine_grid_generator(theta, size, align_corners):
    """torch.affine_grid_generator: the (N, *spatial, nd) grid of theta (N, nd, nd + 1) applied to the base grid."""
    n, spatial = size[0], tuple(size[2:])
    base = _base_grid(spatial, align_corners, theta.dtype, theta.device)           # (L, nd + 1)
    grid = torch.matmul(base.unsqueeze(0), theta.transpose(1, 2))                  # (N, L, nd)
    return grid.reshape((n,) + spatial + (len(spatial),))


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (for grid_sample) of a batch of affine matrices theta: (N, 2, 3) or (N, 3, 4)."""
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    given, size = size, [int(s) for s in size]
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {_size_repr(given)}. "
                             f"Got {theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {_size_repr(given)}. "
                             f"Got {theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {_size_repr(given)}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {_size_repr(given)}")
    return affine_grid_generator(theta, size, align_corners)


def _size_repr(size):
    return repr(size) if isinstance(size, torch.Size) else str(size)


def _reflect(coord, low2, high2):
    """ATen's reflect_coordinates: coord folded into [low2 / 2, high2 / 2] (differentiable, flips the slope)."""
    if low2 == high2:
        return coord * 0.0
    low, span = low2 / 2, (high2 - low2) / 2
    d = torch.abs(coord - low)
    extra = torch.fmod(d, span)
    flips = torch.floor(d / span).detach()
    return torch.where(torch.fmod(flips, 2) == 0, extra + low, span - extra + low)


def _source_coord(coord, size, padding_mode, align_corners):
    """ATen's compute_coordinates: a pixel coordinate under border / reflection padding (zeros: as is)."""
    if padding_mode == "border":
        return torch.clamp(coord, 0, size - 1)
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
        return torch.clamp(coord, 0, size - 1)
    return coord


def _unnormalize(coord, size, align_corners):
    return (coord + 1) / 2 * (size - 1) if align_corners else ((coord + 1) * size - 1) / 2


def _gather_taps(flat, sizes, coords):
    """flat (N, C, prod(sizes)) read at integer coords (one (N, L) tensor per dim, x last), 0 off the input."""
    n, c = flat.shape[0], flat.shape[1]
    inside, index = None, None
    for size, k in zip(sizes, coords):
        ok = (k >= 0) & (k <= size - 1)
        inside = ok if inside is None else inside & ok
        k = torch.clamp(k, 0, size - 1).to(torch.int64)
        index = k if index is None else index * size + k
    vals = flat.gather(2, index.unsqueeze(1).expand(n, c, index.shape[1]))
    return torch.where(inside.unsqueeze(1), vals, 0.0)


def _cubic_weights(t, a=-0.75):
    w0 = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a
    w1 = ((a + 2) * t - (a + 3)) * t * t + 1
    w2 = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1
    w3 = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a
    return [w0, w1, w2, w3]


def _grid_sample_taps(flat, sizes, pts, mode, padding_mode, align_corners):
    """The sampled values (N, C, L) at pixel coordinates pts (one (N, L) tensor per dim, in sizes' order)."""
    nd = len(sizes)
    if mode == "bicubic":       # taps around the raw coordinate, each tap padded on its own (ATen)
        base = [torch.floor(p).detach() for p in pts]
        ty, tx = pts[0] - base[0], pts[1] - base[1]
        wy, wx = _cubic_weights(ty), _cubic_weights(tx)
        out = 0.0
        for i in range(4):
            for j in range(4):
                cy = _source_coord(base[0] + (i - 1), sizes[0], padding_mode, align_corners).detach()
                cx = _source_coord(base[1] + (j - 1), sizes[1], padding_mode, align_corners).detach()
                out = out + _gather_taps(flat, sizes, [cy, cx]) * (wy[i] * wx[j]).unsqueeze(1)
        return out
    pts = [_source_coord(p, s, padding_mode, align_corners) for p, s in zip(pts, sizes)]
    if mode == "nearest":       # round half to even, as nearbyint; no gradient to the grid
        return _gather_taps(flat, sizes, [torch.round(p).detach() for p in pts])
    low = [torch.floor(p).detach() for p in pts]
    frac = [p - lo for p, lo in zip(pts, low)]
    out = 0.0
    for corner in np.ndindex(*(2,) * nd):
        w = None
        for d in range(nd):
            wd = frac[d] if corner[d] else 1 - frac[d]
            w = wd if w is None else w * wd
        out = out + _gather_taps(flat, sizes, [low[d] + corner[d] for d in range(nd)]) * w.unsqueeze(1)
    return out


_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDINGS = ("zeros", "border", "reflection")


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """torch.grid_sampler: modes and padding modes given as ATen's integers (0 bilinear, 1 nearest, 2 bicubic;
    0 zeros, 1 border, 2 reflection)."""
    nd = input.dim() - 2
    if input.dim() not in (4, 5) or grid.dim() != input.dim() or grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.short} but found {grid.dtype.short}")
    mode, padding = _GRID_MODES[interpolation_mode], _GRID_PADDINGS[padding_mode]
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    n, c, sizes = input.shape[0], input.shape[1], tuple(input.shape[2:])
    out_sizes = tuple(grid.shape[1:-1])
    g = grid.reshape(n, -1, nd)
    # grid's last dim is (x, y[, z]): x indexes the last input dim
    pts = [_unnormalize(g[:, :, nd - 1 - d], sizes[d], align_corners) for d in range(nd)]
    flat = input.reshape(n, c, -1)
    out = _grid_sample_taps(flat, sizes, pts, mode, padding, align_corners)
    return out.reshape((n, c) + out_sizes)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """input (N, C, H, W) or (N, C, D, H, W) sampled at the normalised [-1, 1] coordinates of grid."""
    if mode not in _GRID_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in _GRID_PADDINGS:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                      "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                      "grid_sample for details.", stacklevel=2)
        align_corners = False
    return grid_sampler(input, grid, _GRID_MODES.index(mode), _GRID_PADDINGS.index(padding_mode), align_corners)


# ============================================================================== embedding bags

def _grad_scaled(x, scale):
    """x in value; its gradient multiplied by scale (scale_grad_by_freq: 1 / the count of each index)."""
    return x.detach() + (x - x.detach()) * scale


def _bag_layout(idx, off, include_last_offset):
    """(bag of each index or -1 when past the last bag, number of bags) from the offsets of embedding_bag."""
    n = idx.size
    if off.size and off[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {int(off[0])}\n[ torch.LongTensor{{}} ]")
    if off.size and off[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of "
                           f"{int(off[-1])}")
    # with include_last_offset the last offset only counts the bags: like ATen on the cpu, the last bag runs on
    # to the end of the input
    starts = off[:-1] if include_last_offset else off
    return np.searchsorted(starts, np.arange(n), side="right") - 1, len(starts)


def _embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                       per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """torch.embedding_bag: (output, offset2bag, bag_size, max_indices), mode 0 sum, 1 mean, 2 max."""
    idx = indices.cpu().numpy().reshape(-1).astype(np.int64)
    num = weight.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        bad = int(idx[(idx < 0) | (idx >= num)][0])
        raise RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be {bad}")
    bag, bags = _bag_layout(idx, offsets.cpu().numpy().reshape(-1).astype(np.int64), include_last_offset)
    if padding_idx is not None and padding_idx < 0:
        padding_idx += num
    keep = (bag >= 0) & (idx != padding_idx if padding_idx is not None else True)
    counts = np.bincount(bag[keep], minlength=bags)
    dev = weight.device
    rows = torch.index_select(weight, 0, indices.reshape(-1))                     # (n, D)
    if scale_grad_by_freq:
        # ATen's cpu backward divides the gradient of the g-th smallest distinct index by the count of the g-th
        # entry of the sorted indices (not of that index itself); followed here so gradients match PyTorch's
        freq, uniq = np.bincount(idx, minlength=num), np.unique(idx)
        row_scale = np.ones(num)
        row_scale[uniq] = 1.0 / freq[np.sort(idx)[:len(uniq)]]
        rows = _grad_scaled(rows, torch.from_numpy(row_scale[idx].reshape(-1, 1)).to(dev, weight.dtype))
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1, 1)
    offset2bag = torch.from_numpy(np.where(bag >= 0, bag, 0)).to(dev)
    bag_size = torch.from_numpy(counts.astype(np.int64)).to(dev)
    if mode == 2:
        out, max_indices = _bag_max(weight, rows, idx, bag, keep, counts, bags)
        return out, offset2bag, bag_size, max_indices
    scale = keep / np.maximum(counts[np.maximum(bag, 0)], 1) if mode == 1 else keep.astype(np.float64)
    rows = rows * torch.from_numpy(scale.reshape(-1, 1)).to(dev, weight.dtype)
    out = torch.zeros((bags, weight.shape[1]), dtype=weight.dtype, device=dev)
    out = out.index_add(0, torch.from_numpy(np.maximum(bag, 0)).to(dev), rows)
    if mode == 0:       # ATen leaves these empty (its float32 fast path) or zero for sums
        zeros = torch.zeros(bags, dtype=torch.int64, device=dev)
        fast = padding_idx is None and weight.dtype == torch.float32
        o2b = torch.zeros(0, dtype=torch.int64, device=dev) if fast else offset2bag
        return out, o2b, zeros, zeros.clone()
    return out, offset2bag, bag_size, bag_size.clone()


def _bag_max(weight, rows, idx, bag, keep, counts, bags):
    """The largest row of each bag (the first of ties gets the gradient); an empty bag gives zeros."""
    width = max(int(counts.max()) if counts.size else 0, 1)
    table = np.full((bags, width), rows.shape[0], dtype=np.int64)       # the -inf sentinel row
    fill = np.zeros(bags, dtype=np.int64)
    for pos in np.nonzero(keep)[0]:
        table[bag[pos], fill[bag[pos]]] = pos
        fill[bag[pos]] += 1
    ext = torch.cat([rows, torch.full((1, rows.shape[1]), -math.inf, dtype=rows.dtype, device=rows.device)])
    vals = torch.index_select(ext, 0, torch.from_numpy(table.reshape(-1)).to(rows.device))
    vals = vals.reshape(bags, width, rows.shape[1])
    arg = vals.argmax(1, keepdim=True)                                          # (B, 1, D)
    chosen = torch.arange(width, device=rows.device).reshape(1, width, 1) == arg
    out = torch.where(chosen, vals, 0.0).sum(1)
    nonempty = torch.from_numpy(counts > 0).to(rows.device).reshape(bags, 1)
    out = torch.where(nonempty, out, 0.0).to(weight.dtype)
    words = np.append(idx, 0)[np.take_along_axis(table, arg.cpu().numpy()[:, 0, :], 1)]
    return out, torch.from_numpy(np.where(counts[:, None] > 0, words, 0)).to(rows.device)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embedding rows, without materialising the rows of each bag."""
    if weight.dtype == torch.int64 and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage `embedding_bag(weight, "
                      "input, ...)` is deprecated, and should now be `embedding_bag(input, weight, ...)`.",
                      stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = torch.arange(0, input.numel(), input.shape[1], dtype=input.dtype, device=input.device)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    modes = {"sum": 0, "mean": 1, "max": 2}
    if mode not in modes:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    return _embedding_bag(weight, input, offsets, scale_grad_by_freq, modes[mode], sparse, per_sample_weights,
                              include_last_offset, padding_idx)[0]


# ============================================================================== conv_tbc, cdist

def conv_tbc(input, weight, bias, pad=0):
    """A 1-D convolution over (time, batch, channels) input with a (kernel, in, out) weight."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between each row of x1 (..., P, M) and each row of x2 (..., R, M): (..., P, R)."""
    if x1.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if not x1.dtype.is_floating_point:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype.short}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in (None, "use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    # every mode computes the differences directly (the exact form the matrix-product shortcut approximates)
    return _vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1)


# ============================================================================== ctc_loss

def _ctc_alpha_beta(lp, target, blank):
    """Log-space forward and backward variables of CTC over one sequence (lp: (T, C) float64 NumPy)."""
    ext = np.full(2 * len(target) + 1, blank, dtype=np.int64)
    ext[1::2] = target
    t_len, s_len = lp.shape[0], len(ext)
    skip = np.zeros(s_len, dtype=bool)            # s may come from s - 2: a label unlike the one two back
    skip[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    alpha = np.full((t_len, s_len), -np.inf)
    beta = np.full((t_len, s_len), -np.inf)
    if t_len == 0:
        return ext, alpha, beta, -np.inf
    alpha[0, :min(2, s_len)] = lp[0, ext[:min(2, s_len)]]
    for t in range(1, t_len):
        a = alpha[t - 1]
        acc = np.logaddexp(a, np.concatenate([[-np.inf], a[:-1]]))
        acc = np.where(skip, np.logaddexp(acc, np.concatenate([[-np.inf, -np.inf], a[:-2]])), acc)
        alpha[t] = acc + lp[t, ext]
    beta[-1, max(s_len - 2, 0):] = lp[-1, ext[max(s_len - 2, 0):]]
    skip_back = np.zeros(s_len, dtype=bool)       # s may go to s + 2
    skip_back[:-2] = skip[2:]
    for t in range(t_len - 2, -1, -1):
        b = beta[t + 1]
        acc = np.logaddexp(b, np.concatenate([b[1:], [-np.inf]]))
        acc = np.where(skip_back, np.logaddexp(acc, np.concatenate([b[2:], [-np.inf, -np.inf]])), acc)
        beta[t] = acc + lp[t, ext]
    ll = np.logaddexp(alpha[-1, -1], alpha[-1, -2]) if s_len > 1 else alpha[-1, -1]
    return ext, alpha, beta, ll


def _ctc_forward(lp, targets, in_lens, tgt_lens, blank, zero_infinity):
    """Per-sequence negative log-likelihoods and ATen's gradient of them with respect to log_probs."""
    t_max, n, c = lp.shape
    nll = np.zeros(n)
    grad = np.zeros((t_max, n, c))
    starts = np.concatenate([[0], np.cumsum(tgt_lens)[:-1]]) if targets.ndim == 1 else None
    for b in range(n):
        tl = int(tgt_lens[b])
        target = targets[starts[b]:starts[b] + tl] if targets.ndim == 1 else targets[b, :tl]
        il = int(in_lens[b])
        seq = lp[:il, b]
        ext, alpha, beta, ll = _ctc_alpha_beta(seq, target, blank)
        nll[b] = -ll
        if zero_infinity and np.isinf(nll[b]):
            nll[b] = 0.0
            continue
        # ATen's formula (the gradient through a log_softmax's logits): exp(lp) - posterior of each label
        ab = alpha + beta
        lcab = np.full((il, c), -np.inf)
        for s, label in enumerate(ext):
            lcab[:, label] = np.logaddexp(lcab[:, label], ab[:, s])
        with np.errstate(invalid="ignore", over="ignore"):
            grad[:il, b] = np.exp(seq) - np.exp(lcab + nll[b] - seq)
    return nll, grad


class CtcLoss(torch.autograd.Function):      # its node: CtcLossBackward, as PyTorch's CtcLossBackward0
    @staticmethod
    def forward(ctx, log_probs, targets, in_lens, tgt_lens, blank, zero_infinity):
        lp = log_probs.detach().cpu().numpy().astype(np.float64)
        nll, grad = _ctc_forward(lp, targets, in_lens, tgt_lens, blank, zero_infinity)
        ctx.grad = torch.from_numpy(grad).to(log_probs.device, log_probs.dtype)
        return torch.from_numpy(nll).to(log_probs.device, log_probs.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        return ctx.grad * grad_out.reshape(1, -1, 1), None, None, None, None, None


def _lengths(x, name):
    return np.asarray(x.cpu().numpy() if isinstance(x, _Tensor) else x, dtype=np.int64).reshape(-1)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist Temporal Classification loss of (T, N, C) log-probabilities (or (T, C) unbatched)."""
    if isinstance(reduction, str):
        if reduction not in ("none", "mean", "sum"):
            raise ValueError(f"{reduction} is not a valid value for reduction")
    else:
        reduction = ("none", "mean", "sum")[reduction]
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 else targets
    in_lens, tgt_lens = _lengths(input_lengths, "input_lengths"), _lengths(target_lengths, "target_lengths")
    t_max, n, c = log_probs.shape
    if blank < 0 or blank >= c:
        raise RuntimeError("blank must be in label range")
    if len(in_lens) != n:
        raise RuntimeError(f"input_lengths must be of size batch_size, but got {len(in_lens)} and {n}")
    if len(tgt_lens) != n:
        raise RuntimeError(f"target_lengths must be of size batch_size, but got {len(tgt_lens)} and {n}")
    for b in range(n):
        if in_lens[b] > t_max:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value {in_lens[b]} "
                               f"(while checking arguments for ctc_loss_allocate_outputs)")
    tg = targets.cpu().numpy().astype(np.int64)
    nll = CtcLoss.apply(log_probs, tg, in_lens, tgt_lens, blank, zero_infinity)
    if reduction == "mean":
        denom = torch.from_numpy(np.maximum(tgt_lens, 1)).to(nll.device, nll.dtype)
        return (nll / denom).mean()
    if reduction == "sum":
        return nll.sum()
    return nll.squeeze(0) if unbatched else nll


# ============================================================================== losses beyond the above

def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) for any distance function d (pairwise_distance by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    _check_triplet(anchor, positive, negative, margin)
    distance_function = pairwise_distance if distance_function is None else distance_function
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = torch.minimum(dist_neg, distance_function(positive, negative))
    loss = torch.clamp_min(margin + dist_pos - dist_neg, 0)
    return _reduce(loss, reduction)


def _linear_ce_checks(input, linear_weight, target, linear_bias, ignore_index):
    """torch's argument checks of linear_cross_entropy; the weight's out_features (d_1..d_K)."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and input.dim() == 1:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires"
                           f" batched input, (N, {input.shape[-1]}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    if tuple(target.shape) == (*input.shape[:-1], classes, *out_features) and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    return out_features


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target); with options, the batch is taken in
    chunks of options.batch_chunk_size rows so that the whole logits tensor never exists at once."""
    out_features = _linear_ce_checks(input, linear_weight, target, linear_bias, ignore_index)
    ignore = -100 if ignore_index is None else ignore_index
    chunk = getattr(options, "batch_chunk_size", None) if options is not None else None
    if chunk is not None and (out_features or reduction not in ("sum", "mean", "none") or label_smoothing
                              or target.dtype is not torch.int64):
        warnings.warn("linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum',"
                      f"'none'}}, label_smoothing == 0, target.dtype == int64, out_features == (). Got reduction="
                      f"{reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, out_features="
                      f"{tuple(out_features)}, tracing=False, linear_bias.shape="
                      f"{tuple(linear_bias.shape) if linear_bias is not None else None}.", stacklevel=2)
        chunk = None
    if chunk is None or input.dim() != 2:
        # a K-dimensional loss (weight (C, d_1..d_K, in)): one linear over C*d_1*..*d_K outputs, logits reshaped
        classes = math.prod(out_features, start=linear_weight.shape[0])
        logits = linear(input, linear_weight.reshape(classes, input.shape[-1]),
                        None if linear_bias is None else linear_bias.reshape(classes))
        logits = logits.reshape(*input.shape[:-1], linear_weight.shape[0], *out_features)
        return cross_entropy(logits, target, weight, ignore_index=ignore, reduction=reduction,
                             label_smoothing=label_smoothing)
    parts = [cross_entropy(linear(input[i:i + chunk], linear_weight, linear_bias), target[i:i + chunk], weight,
                           ignore_index=ignore, reduction="none" if reduction == "none" else "sum")
             for i in range(0, input.shape[0], chunk)]
    if reduction == "none":
        return torch.cat(parts)
    total = torch.stack(parts).sum()
    if reduction == "sum":
        return total
    valid = target != ignore
    if weight is None:
        return total / valid.sum()
    return total / torch.where(valid, weight[torch.where(valid, target, 0)], 0.0).sum()
