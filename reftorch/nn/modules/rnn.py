"""Recurrent layers: RNNCell, LSTMCell, GRUCell and the sequence modules RNN, LSTM, GRU
(any number of layers, bidirectional, batch_first, LSTM projections), with PyTorch's parameter
names, gate order (LSTM: i, f, g, o; GRU: r, z, n) and initialisation U(-1/sqrt(H), 1/sqrt(H))."""
from __future__ import annotations

import math
import numbers
import warnings

import reftorch as torch

import reftorch.nn.functional as F
import reftorch.nn.init as init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


# ------------------------------------------------------------------ one step of each cell

def _rnn_step(x_proj, h, w_hh, b_hh, nonlinearity):
    hg = F.linear(h, w_hh, b_hh)
    if nonlinearity == "tanh" and _fusable(x_proj, hg):
        return torch._functional._rnn_tanh_cell(x_proj, hg)       # one node for tanh(x_proj + hg)
    pre = x_proj + hg
    return torch.tanh(pre) if nonlinearity == "tanh" else torch.relu(pre)


def _fusable(*ts):
    """Whether the fused cell ops (ops.yaml: _rnn_tanh_cell, _lstm_cell, _gru_cell) take these: cpu float32/float64 tensors of
    one dtype and shape (under autocast the gates may be 16-bit while the state is not: the op-by-op path)."""
    t0 = ts[0]
    return t0.device.type == "cpu" and t0.dtype in (torch.float32, torch.float64) and \
        all(t.dtype is t0.dtype and t.device == t0.device and t.shape == t0.shape for t in ts[1:])


def _lstm_step(x_proj, h, c, w_hh, b_hh, w_hr=None):
    hg = F.linear(h, w_hh, b_hh)
    if _fusable(x_proj, hg) and _fusable(c) and hg.dtype is c.dtype and hg.shape[:-1] == c.shape[:-1] and \
            hg.shape[-1] == 4 * c.shape[-1]:
        h, c = torch._functional._lstm_cell(x_proj, hg, c)      # one node for x_proj + hg and the gate arithmetic
    else:
        i, f, g, o = (x_proj + hg).chunk(4, -1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _gru_step(x_proj, h, w_hh, b_hh):
    hg = F.linear(h, w_hh, b_hh)
    if _fusable(x_proj, hg) and _fusable(h) and h.dtype is hg.dtype and x_proj.shape[-1] == 3 * h.shape[-1] and \
            x_proj.shape[:-1] == h.shape[:-1]:
        return torch._functional._gru_cell(x_proj, hg, h)     # one node for the gate arithmetic
    xr, xz, xn = x_proj.chunk(3, -1)
    hr, hz, hn = hg.chunk(3, -1)
    r = torch.sigmoid(xr + hr)
    z = torch.sigmoid(xz + hz)
    n = torch.tanh(xn + r * hn)
    return (1 - z) * n + z * h


class _TimeSteps(torch.autograd.Function):
    """The steps of an (L, ...) sequence as L tensors, with one backward node that stacks their gradients.
    L select views would each send back a full-size zero tensor with its one slice filled, and the engine would
    add the L of them up: O(L^2) work for a sequence (more than the cells themselves at L = 35)."""

    @staticmethod
    def forward(ctx, x):
        return tuple(x.unbind(0))

    @staticmethod
    def backward(ctx, *grads):
        return _stacked(grads)


def _stacked(steps):
    """torch.stack(steps, 0) of equal-shaped (N, ...) steps as one cat and a view: stack is an unsqueeze per
    step and a cat (L + 1 ops)."""
    return torch.cat(steps, 0).view((len(steps),) + tuple(steps[0].shape))


def _time_steps(x):
    return _TimeSteps.apply(x) if x.requires_grad and torch.is_grad_enabled() else x.unbind(0)


class _StackSteps(torch.autograd.Function):
    """The L step outputs as one (L, ...) tensor, with one backward node that hands each step its slice of the
    gradient: torch.stack records an unsqueeze per step and a cat (L + 1 nodes forward and backward)."""

    @staticmethod
    def forward(ctx, *steps):
        return _stacked(steps)

    @staticmethod
    def backward(ctx, grad):
        return grad.unbind(0)


def _stack_steps(seq):
    if torch.is_grad_enabled() and any(t.requires_grad for t in seq):
        return _StackSteps.apply(*seq)
    return _stacked(seq)


# ------------------------------------------------------------------ cells

class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(torch.empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(torch.empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(torch.empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(torch.empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += f", bias={self.bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _batched(self, input, hx, name):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        return input.dim() == 2


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        batched = self._batched(input, hx, "RNNCell")
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = torch.zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)
        elif not batched:
            hx = hx.unsqueeze(0)
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        h = _rnn_step(F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh, self.bias_hh,
                      self.nonlinearity)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """Returns (h', c') with gates i, f, g, o stacked in weight_ih (4H, I)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        batched = self._batched(input, hx[0] if hx is not None else None, "LSTMCell")
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = torch.zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)
            hx = (zeros, zeros)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = _lstm_step(F.linear(input, self.weight_ih, self.bias_ih), hx[0], hx[1], self.weight_hh,
                          self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """h' = (1 - z) n + z h with gates r, z, n stacked in weight_ih (3H, I)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        batched = self._batched(input, hx, "GRUCell")
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = torch.zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)
        elif not batched:
            hx = hx.unsqueeze(0)
        h = _gru_step(F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)


# ------------------------------------------------------------------ sequence modules

class RNNBase(Module):
    """Stacked (optionally bidirectional) recurrent layers over a sequence."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        gate_size = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}.get(mode)
        if gate_size is None:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size *= hidden_size
        self._flat_weights_names = []
        real_hidden = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                params = [("weight_ih_l{}{}", (gate_size, layer_input)), ("weight_hh_l{}{}", (gate_size, real_hidden))]
                if bias:
                    params += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    params += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                for name, shape in params:
                    name = name.format(layer, suffix)
                    setattr(self, name, Parameter(torch.empty(shape, dtype=dtype)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in self._flat_weights_names if n.endswith(f"l{layer}{suffix}")]
                for layer in range(self.num_layers)
                for suffix in (["", "_reverse"] if self.bidirectional else [""])]

    def flatten_parameters(self):
        pass

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def _check_input(self, input, dims=3):
        if input.dtype != self._flat_weights[0].dtype:
            w = self._flat_weights[0].dtype
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({w}). Convert input: "
                             f"input.to({w}), or convert model: model.to({input.dtype})")
        if input.dim() != dims:
            raise RuntimeError(f"input must have {dims} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.size(-1)}")

    def _expected_hidden(self, batch, size=None):
        d = 2 if self.bidirectional else 1
        return (self.num_layers * d, batch, size if size is not None else
                (self.proj_size if self.proj_size > 0 else self.hidden_size))

    @staticmethod
    def _check_hidden(hx, expected, msg="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(msg.format(tuple(expected), list(hx.shape)))

    def _prepare(self, input, hx, name):
        """(sequence-first batched input, hx, batched flag)."""
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not batched:
            input = input.unsqueeze(batch_dim)
        if self.batch_first:
            input = input.transpose(0, 1)
        return input, batched

    def _step(self, xt, state, w_hh, b_hh, w_hr):
        """One time step of this module's cell; returns (new state, its output h)."""
        if self.mode == "LSTM":
            state = _lstm_step(xt, state[0], state[1], w_hh, b_hh, w_hr)
            return state, state[0]
        if self.mode == "GRU":
            state = _gru_step(xt, state, w_hh, b_hh)
        else:
            state = _rnn_step(xt, state, w_hh, b_hh, "tanh" if self.mode == "RNN_TANH" else "relu")
        return state, state

    def _direction(self, x_proj, state, weights, reverse):
        """Runs one direction over the (L, N, 4H) projected input; returns (output (L, N, H), final state)."""
        steps = x_proj.shape[0]
        seq = [None] * steps
        xs = _time_steps(x_proj) if steps else ()
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            state, seq[t] = self._step(xs[t], state, *weights)
        out = _stack_steps(seq) if steps else x_proj.new_zeros((0,) + tuple(state_of(state).shape))
        return out, state

    def _direction_packed(self, x_proj, state, weights, reverse, batch_sizes):
        """As _direction over packed data (sum(batch_sizes), 4H), the way torch runs a PackedSequence:
        step t sees only its batch_sizes[t] running sequences. Going forward, the state of a sequence
        that ends is set aside (they are joined back at the end); going backward, the initial state of
        a sequence joins when it starts."""
        offsets = [0]
        for bs in batch_sizes:
            offsets.append(offsets[-1] + bs)
        seq = [None] * len(batch_sizes)
        if not reverse:
            done = []
            for t, bs in enumerate(batch_sizes):
                rows = state_of(state).shape[0]
                if bs < rows:
                    done.append(_narrow_state(state, bs, rows - bs))
                    state = _narrow_state(state, 0, bs)
                state, seq[t] = self._step(x_proj.narrow(0, offsets[t], bs), state, *weights)
            done.append(state)
            final = _cat_states(done[::-1])
        else:
            initial = state
            state = _narrow_state(initial, 0, batch_sizes[-1])
            for t in range(len(batch_sizes) - 1, -1, -1):
                bs, rows = batch_sizes[t], state_of(state).shape[0]
                if bs > rows:
                    state = _cat_states([state, _narrow_state(initial, rows, bs - rows)])
                state, seq[t] = self._step(x_proj.narrow(0, offsets[t], bs), state, *weights)
            final = state
        return torch.cat(seq, 0), final

    def _run(self, input, states, batch_sizes=None):
        """Runs every layer and direction over the (L, N, F) input (or packed (sum(batch_sizes), F) data).
        `states[k]` is the initial state of layer/direction k (a tensor, or an (h, c) pair for LSTM).
        Returns (output, final states)."""
        d = 2 if self.bidirectional else 1
        names = self._flat_weights_names
        per = len(names) // (self.num_layers * d)
        finals = []
        layer_input = input
        for layer in range(self.num_layers):
            outs = []
            for direction in range(d):
                k = layer * d + direction
                params = [getattr(self, n) for n in names[k * per:(k + 1) * per]]
                b_ih, b_hh = (params[2], params[3]) if self.bias else (None, None)
                weights = (params[1], b_hh, params[-1] if self.proj_size > 0 else None)
                x_proj = F.linear(layer_input, params[0], b_ih)              # all time steps at once
                if batch_sizes is None:
                    out, state = self._direction(x_proj, states[k], weights, direction == 1)
                else:
                    out, state = self._direction_packed(x_proj, states[k], weights, direction == 1, batch_sizes)
                finals.append(state)
                outs.append(out)
            layer_input = outs[0] if d == 1 else torch.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, finals

    def _forward_packed(self, packed, hx):
        """Runs a PackedSequence: returns (PackedSequence output, final hidden state(s)), the hidden states
        in the caller's batch order (torch permutes them by sorted_indices in and unsorted_indices out)."""
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        sizes = [int(b) for b in batch_sizes.tolist()]
        self._check_input(data, 2)
        lstm = self.mode == "LSTM"
        expected = [self._expected_hidden(sizes[0])] + ([self._expected_hidden(sizes[0], self.hidden_size)]
                                                        if lstm else [])
        if hx is None:
            hx = [torch.zeros(e, dtype=data.dtype, device=data.device) for e in expected]
        else:
            hx = list(hx) if lstm else [hx]
            if sorted_indices is not None:
                hx = [h.index_select(1, sorted_indices) for h in hx]
            for i, (h, e) in enumerate(zip(hx, expected)):
                self._check_hidden(h, e, f"Expected hidden[{i}] size {{}}, got {{}}" if lstm else
                                   "Expected hidden size {}, got {}")
        states = list(zip(*(h.unbind(0) for h in hx))) if lstm else list(hx[0].unbind(0))
        output, finals = self._run(data, states, sizes)
        hidden = [torch.stack([s[i] for s in finals], 0) for i in range(2)] if lstm else [torch.stack(finals, 0)]
        if unsorted_indices is not None:
            hidden = [h.index_select(1, unsorted_indices) for h in hidden]
        return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), \
            (tuple(hidden) if lstm else hidden[0])

    def _finish(self, output, batched):
        if self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
        return output


def state_of(state):
    return state[0] if isinstance(state, tuple) else state


def _narrow_state(state, start, length):
    if isinstance(state, tuple):
        return tuple(s.narrow(0, start, length) for s in state)
    return state.narrow(0, start, length)


def _cat_states(states):
    if isinstance(states[0], tuple):
        return tuple(torch.cat(parts, 0) for parts in zip(*states))
    return torch.cat(states, 0)


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        input, batched = self._prepare(input, hx, "RNN")
        self._check_input(input)
        batch = input.shape[1]
        expected = self._expected_hidden(batch)
        if hx is None:
            hx = torch.zeros(expected, dtype=input.dtype, device=input.device)
        else:
            if batched and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
            if not batched:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
            self._check_hidden(hx, expected)
        output, finals = self._run(input, list(hx.unbind(0)))
        h_n = torch.stack(finals, 0)
        return self._finish(output, batched), (h_n if batched else h_n.squeeze(1))


class LSTM(RNNBase):
    """Long short-term memory; returns (output, (h_n, c_n))."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        input, batched = self._prepare(input, hx, "LSTM")
        self._check_input(input)
        batch = input.shape[1]
        expected_h = self._expected_hidden(batch)
        expected_c = self._expected_hidden(batch, self.hidden_size)
        if hx is None:
            h0 = torch.zeros(expected_h, dtype=input.dtype, device=input.device)
            c0 = torch.zeros(expected_c, dtype=input.dtype, device=input.device)
        else:
            h0, c0 = hx
            if batched and (h0.dim() != 3 or c0.dim() != 3):
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({h0.dim()}-D, {c0.dim()}-D) tensors")
            if not batched:
                if h0.dim() != 2 or c0.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D but got "
                                       f"({h0.dim()}-D, {c0.dim()}-D) tensors")
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
            self._check_hidden(h0, expected_h, "Expected hidden[0] size {}, got {}")
            self._check_hidden(c0, expected_c, "Expected hidden[1] size {}, got {}")
        states = list(zip(h0.unbind(0), c0.unbind(0)))
        output, finals = self._run(input, states)
        h_n = torch.stack([s[0] for s in finals], 0)
        c_n = torch.stack([s[1] for s in finals], 0)
        if not batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return self._finish(output, batched), (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit; returns (output, h_n)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        input, batched = self._prepare(input, hx, "GRU")
        self._check_input(input)
        batch = input.shape[1]
        expected = self._expected_hidden(batch)
        if hx is None:
            hx = torch.zeros(expected, dtype=input.dtype, device=input.device)
        else:
            if batched and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
            if not batched:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
            self._check_hidden(hx, expected)
        output, finals = self._run(input, list(hx.unbind(0)))
        h_n = torch.stack(finals, 0)
        return self._finish(output, batched), (h_n if batched else h_n.squeeze(1))
