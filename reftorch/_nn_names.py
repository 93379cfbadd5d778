"""The torch.* names that are nn functions in PyTorch (torch.conv2d, torch.batch_norm, torch.lstm_cell ...).

They take ATen's signatures, which differ from nn.functional's: reductions are integers (0 none, 1 mean,
2 sum), dropout's flag is `train` and positional, batch_norm and instance_norm take weight and bias before
the running statistics, torch.embedding takes the weight first, and the recurrent functions take the flat
parameter list of nn.RNN/LSTM/GRU. Each one is nn.functional's implementation under that signature.
"""
from __future__ import annotations

import reftorch as torch
from reftorch.nn import functional as F
from reftorch.nn.modules import rnn as _rnn

_REDUCTIONS = ("none", "mean", "sum")

__all__ = [
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "alpha_dropout", "alpha_dropout_", "avg_pool1d", "batch_norm",
    "bilinear", "binary_cross_entropy_with_logits", "channel_shuffle", "conv1d", "conv2d",
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution", "conv_tbc",
    "cosine_embedding_loss", "cosine_similarity", "cdist", "pdist", "pairwise_distance", "ctc_loss", "dropout",
    "dropout_", "feature_dropout", "feature_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
    "embedding", "embedding_bag", "group_norm", "hinge_embedding_loss", "instance_norm", "kl_div", "layer_norm",
    "rms_norm", "margin_ranking_loss", "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
    "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss", "rrelu", "rrelu_", "selu_", "celu_", "threshold_",
    "triplet_margin_loss", "grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "lstm", "gru", "rnn_tanh", "rnn_relu",
]

adaptive_avg_pool1d = F.adaptive_avg_pool1d
avg_pool1d = F.avg_pool1d
bilinear = F.bilinear
channel_shuffle = F.channel_shuffle
conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d
conv_tbc = F.conv_tbc
cosine_similarity, pairwise_distance, pdist, cdist = F.cosine_similarity, F.pairwise_distance, F.pdist, F.cdist
pixel_shuffle, pixel_unshuffle = F.pixel_shuffle, F.pixel_unshuffle
rms_norm = F.rms_norm
grid_sampler, grid_sampler_2d, grid_sampler_3d = F.grid_sampler, F.grid_sampler_2d, F.grid_sampler_3d
affine_grid_generator = F.affine_grid_generator
embedding_bag = F._embedding_bag


def _reduction(r):
    return _REDUCTIONS[r] if isinstance(r, int) else r


def adaptive_max_pool1d(input, output_size):
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def dropout(input, p, train):
    return F.dropout(input, p, train)


def dropout_(input, p, train):
    return F.dropout(input, p, train, inplace=True)


def feature_dropout(input, p, train):
    F._check_p(p)
    return F._feature_noise(input, p, train, False)


def feature_dropout_(input, p, train):
    F._check_p(p)
    return F._feature_noise(input, p, train, True)


def alpha_dropout(input, p, train):
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    nd = weight.dim() - 2
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return (F.conv1d, F.conv2d, F.conv3d)[nd - 1](input, weight, bias, stride, padding, dilation, groups)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx, None, 2.0, scale_grad_by_freq,
                       sparse)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def kl_div(input, target, reduction=1, *, log_target=False):
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction=1):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction), zero_infinity)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d_with_indices(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return F.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return F.rrelu(input, lower, upper, training, inplace=True)


def selu_(input):
    return F.selu(input, inplace=True)


def celu_(input, alpha=1.0):
    return F.celu(input, alpha, inplace=True)


def threshold_(input, threshold, value):
    return F.threshold(input, threshold, value, inplace=True)


# ------------------------------------------------------------------ recurrent cells and layers

def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _rnn._rnn_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, "tanh")


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _rnn._rnn_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, "relu")


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step; hx is (h, c). Returns (h', c')."""
    return _rnn._lstm_step(F.linear(input, w_ih, b_ih), hx[0], hx[1], w_hh, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _rnn._gru_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def _run_layers(mode, input, states, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """The recurrent layers of nn.RNN/LSTM/GRU over params (w_ih, w_hh[, b_ih, b_hh][, w_hr] per layer and
    direction). states: one initial state per layer and direction. Returns (output, final states)."""
    d = 2 if bidirectional else 1
    per = len(params) // (num_layers * d)
    x = input.transpose(0, 1) if batch_first else input
    finals = []
    for layer in range(num_layers):
        outs = []
        for direction in range(d):
            k = layer * d + direction
            p = list(params[k * per:(k + 1) * per])
            w_ih, w_hh = p[0], p[1]
            b_ih, b_hh = (p[2], p[3]) if has_biases else (None, None)
            w_hr = p[-1] if per in (3, 5) else None
            x_proj = F.linear(x, w_ih, b_ih)
            order = range(x.shape[0]) if direction == 0 else range(x.shape[0] - 1, -1, -1)
            state, seq = states[k], [None] * x.shape[0]
            for t in order:
                xt = x_proj.select(0, t)
                if mode == "LSTM":
                    state = _rnn._lstm_step(xt, state[0], state[1], w_hh, b_hh, w_hr)
                    seq[t] = state[0]
                elif mode == "GRU":
                    state = seq[t] = _rnn._gru_step(xt, state, w_hh, b_hh)
                else:
                    state = seq[t] = _rnn._rnn_step(xt, state, w_hh, b_hh, mode)
            finals.append(state)
            outs.append(torch.stack(seq, 0))
        x = outs[0] if d == 1 else torch.cat(outs, -1)
        if dropout and train and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    return (x.transpose(0, 1) if batch_first else x), finals


def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """torch.lstm: (output, h_n, c_n) from hx = (h_0, c_0) of shape (layers * directions, N, H)."""
    h0, c0 = hx
    states = [(h0[k], c0[k]) for k in range(h0.shape[0])]
    out, finals = _run_layers("LSTM", input, states, params, has_biases, num_layers, dropout, train, bidirectional,
                              batch_first)
    return out, torch.stack([s[0] for s in finals]), torch.stack([s[1] for s in finals])


def _simple(mode):
    def run(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        states = [hx[k] for k in range(hx.shape[0])]
        out, finals = _run_layers(mode, input, states, params, has_biases, num_layers, dropout, train, bidirectional,
                                  batch_first)
        return out, torch.stack(finals)
    run.__doc__ = f"torch.{mode.lower()}: (output, h_n) from h_0 of shape (layers * directions, N, H)."
    return run


gru = _simple("GRU")
rnn_tanh = _simple("tanh")
rnn_relu = _simple("relu")
gru.__name__, rnn_tanh.__name__, rnn_relu.__name__ = "gru", "rnn_tanh", "rnn_relu"
