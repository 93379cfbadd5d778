"""Variable-length sequences: PackedSequence and the pack/pad helpers of torch.nn.utils.rnn.

A PackedSequence stores the time steps one after the other, each holding only the sequences still
running at that step (batch sorted by decreasing length): `data[offset_t : offset_t + batch_sizes[t]]`
is step t. The recurrent modules consume it step by step over the active batch."""
from __future__ import annotations

from collections import namedtuple

import reftorch as torch

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


def invert_permutation(permutation):
    """The permutation that undoes `permutation` (None stays None)."""
    if permutation is None:
        return None
    output = torch.empty_like(permutation)
    output.scatter_(0, permutation, torch.arange(0, permutation.numel(), device=permutation.device))
    return output


_PackedSequenceBase = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_PackedSequenceBase):
    """Holds the data and list of batch_sizes of a packed sequence (made by pack_padded_sequence,
    pack_sequence; not meant to be constructed by hand)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:                  # PackedSequence((data, batch_sizes)) form
            data, batch_sizes = data[0], data[1]
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        """Moves/casts `data` (and the index tensors to data's device); batch_sizes stays on the cpu."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        sorted_i = self.sorted_indices.to(data.device) if self.sorted_indices is not None else None
        unsorted_i = self.unsorted_indices.to(data.device) if self.unsorted_indices is not None else None
        return type(self)(data, self.batch_sizes, sorted_i, unsorted_i)

    def cuda(self, *args, **kwargs):
        return self.to(*args, device="cuda", **kwargs) if not args else self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        return self.to(*args, device="cpu", **kwargs)

    def double(self):
        return self.to(dtype=torch.double)

    def float(self):
        return self.to(dtype=torch.float)

    def half(self):
        return self.to(dtype=torch.half)

    def long(self):
        return self.to(dtype=torch.long)

    def int(self):
        return self.to(dtype=torch.int)

    def short(self):
        return self.to(dtype=torch.short)

    def char(self):
        return self.to(dtype=torch.int8)

    def byte(self):
        return self.to(dtype=torch.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _sizes_from_lengths(lengths):
    """batch_sizes[t] = how many lengths exceed t (lengths sorted in decreasing order)."""
    longest = lengths[0] if lengths else 0
    return [sum(1 for n in lengths if n > t) for t in range(longest)]


def _pack(input, lengths, batch_first):
    if batch_first:
        input = input.transpose(0, 1)
    if len(lengths) != input.shape[1]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={input.shape[1]})")
    if lengths and lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if any(a < b for a, b in zip(lengths, lengths[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                           "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    sizes = _sizes_from_lengths(lengths)
    data = torch.cat([input[t].narrow(0, 0, bs) for t, bs in enumerate(sizes)], 0)
    return data, torch.tensor(sizes, dtype=torch.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded (T, B, *) (or (B, T, *)) batch of sequences of the given lengths."""
    if not isinstance(lengths, torch.Tensor):
        lengths = torch.as_tensor(lengths, dtype=torch.int64, device="cpu")
    else:
        lengths = lengths.to(dtype=torch.int64)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = torch.sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack(input, [int(n) for n in lengths.cpu().tolist()], batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of pack_padded_sequence: (padded batch, int64 lengths) in the original batch order."""
    sizes = [int(b) for b in sequence.batch_sizes.tolist()]
    max_len = len(sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_len}")
        max_len = total_length
    data = sequence.data
    batch = sizes[0] if sizes else 0
    tail = tuple(data.shape[1:])
    steps, offset = [], 0
    for bs in sizes:
        step = data.narrow(0, offset, bs)
        offset += bs
        if bs < batch:
            fill = torch.full((batch - bs,) + tail, padding_value, dtype=data.dtype, device=data.device)
            step = torch.cat([step, fill], 0)
        steps.append(step)
    if max_len > len(sizes):
        fill = torch.full((batch,) + tail, padding_value, dtype=data.dtype, device=data.device)
        steps += [fill] * (max_len - len(sizes))
    padded = torch.stack(steps, 0)
    lengths = torch.tensor([sum(1 for bs in sizes if bs > b) for b in range(batch)], dtype=torch.int64)
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.cpu()]
    return padded, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks variable-length sequences (L_i, *) into (max L, B, *) (or (B, max L, *)) padded with padding_value."""
    if isinstance(sequences, torch.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    longest = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    padded = []
    for s in sequences:
        if tuple(s.shape[1:]) != trailing:        # torch copies each into (L_i, *trailing of the first)
            s = _broadcast_into(s, (s.shape[0],) + trailing)
        extra = longest - s.shape[0]
        if extra:
            fill = torch.full((extra,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = torch.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    out = torch.stack(padded, 0)
    return out if batch_first else out.transpose(0, 1)


def _broadcast_into(src, shape):
    """src broadcast to shape, with the error torch's copy_ gives when it cannot be."""
    ndim = max(len(shape), src.dim())
    for k in range(1, ndim + 1):
        a = shape[-k] if k <= len(shape) else 1
        b = src.shape[-k] if k <= src.dim() else 1
        if a != b and b != 1:
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
                               f"dimension {ndim - k}")
    return src.expand(shape)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Splits a padded batch back into a list of its sequences (each cut to its length)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq.narrow(0, 0, int(n)) for seq, n in zip(padded_sequences.unbind(0), lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of variable-length tensors (L_i, *)."""
    lengths = torch.as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """Inverse of pack_sequence: the list of the packed tensors, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
