"""nn.utils.rnn (PackedSequence and the pack/pad helpers) and packed input through RNN/LSTM/GRU,
against values checked with torch 2.13."""
import numpy as np
import pytest

import reftorch as torch
from reftorch.nn.utils.rnn import (PackedSequence, pack_padded_sequence, pack_sequence, pad_packed_sequence,
                                   pad_sequence, unpack_sequence, unpad_sequence)


def _x():
    return torch.arange(12.).reshape(4, 3, 1)


def test_pack_padded_unsorted_matches_torch():
    p = pack_padded_sequence(_x(), [2, 3, 1], enforce_sorted=False)
    assert isinstance(p, PackedSequence) and isinstance(p, tuple)
    assert p.data.reshape(-1).tolist() == [1.0, 0.0, 2.0, 4.0, 3.0, 7.0]
    assert p.batch_sizes.tolist() == [3, 2, 1] and p.batch_sizes.dtype == torch.int64
    assert p.sorted_indices.tolist() == [1, 0, 2] and p.unsorted_indices.tolist() == [1, 0, 2]
    assert not p.is_cuda and not p.is_pinned()


def test_pack_padded_errors():
    with pytest.raises(RuntimeError, match=r"^`lengths` array must be sorted in decreasing order when "
                                           r"`enforce_sorted` is True"):
        pack_padded_sequence(_x(), [2, 3, 1])
    with pytest.raises(RuntimeError, match="^Length of all samples has to be greater than 0, but found an element "
                                           "in 'lengths' that is <= 0$"):
        pack_padded_sequence(_x(), [3, 0, 0])
    with pytest.raises(RuntimeError, match=r"^Expected `len\(lengths\)` to be equal to batch_size, but got 2 "
                                           r"\(batch_size=3\)$"):
        pack_padded_sequence(_x(), [3, 1])


def test_pad_packed_total_length_and_padding_value():
    p = pack_padded_sequence(_x(), [2, 3, 1], enforce_sorted=False)
    padded, lengths = pad_packed_sequence(p, total_length=5, padding_value=-1)
    assert lengths.tolist() == [2, 3, 1] and lengths.dtype == torch.int64
    assert padded.shape == (5, 3, 1)
    assert padded[:, :, 0].tolist() == [[0, 1, 2], [3, 4, -1], [-1, 7, -1], [-1, -1, -1], [-1, -1, -1]]
    bf, _ = pad_packed_sequence(p, batch_first=True)
    assert bf[:, :, 0].tolist() == [[0, 3, 0], [1, 4, 7], [2, 0, 0]]
    with pytest.raises(ValueError, match="^Expected total_length to be at least the length of the longest sequence "
                                         "in input, but got total_length=2 and max sequence length being 3$"):
        pad_packed_sequence(p, total_length=2)


def test_pack_unpack_sequence_roundtrip():
    p = pack_sequence([torch.ones(2), torch.ones(3)], enforce_sorted=False)
    assert p.batch_sizes.tolist() == [2, 2, 1] and p.sorted_indices.tolist() == [1, 0]
    seqs = unpack_sequence(pack_padded_sequence(_x(), [2, 3, 1], enforce_sorted=False))
    assert [s.reshape(-1).tolist() for s in seqs] == [[0, 3], [1, 4, 7], [2]]
    seqs = unpad_sequence(_x(), torch.tensor([2, 3, 1]))
    assert [s.reshape(-1).tolist() for s in seqs] == [[0, 3], [1, 4, 7], [2]]


def test_pad_sequence_sides_and_errors():
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([3.0])
    assert pad_sequence([a, b], batch_first=True, padding_side="left", padding_value=9).tolist() == [[1, 2], [9, 3]]
    assert pad_sequence([a, b]).tolist() == [[1, 3], [2, 0]]
    with pytest.raises(RuntimeError, match="^received an empty list of sequences$"):
        pad_sequence([])


def test_pack_gradient_flows_to_padded_input():
    x = torch.arange(6.).reshape(3, 2).requires_grad_(True)
    p = pack_padded_sequence(x, [3, 1])
    (p.data * torch.arange(4.)).sum().backward()
    assert x.grad.tolist() == [[0, 1], [2, 0], [3, 0]]


# torch 2.13: [pad.sum(), [h.sum() for each hidden], h_n[-1].sum(-1), x.grad.sum(), weight_hh_l0.grad.sum()]
_EXPECTED = [
    [6.48255, [4.17059], [0.58522, 1.42777, 1.77806, 0.37955], -15.81083, 17.96987],
    [-1.26211, [2.29142, 6.42312], [-0.10168, 0.01661, 0.30341, 0.17381], 2.29119, 2.95839],
    [-1.223, [-0.47375], [0.46061, 0.44479, 0.21077, 0.11825], -3.40491, -9.82945],
    [-0.18314, [0.18885, 1.35657], [0.01701, 0.10562, 0.19028, -0.12405], -0.58146, 0.45326],
]
_CASES = [("RNN", {}), ("LSTM", dict(num_layers=2, bidirectional=True)), ("GRU", dict(bidirectional=True)),
          ("LSTM", dict(proj_size=2, batch_first=True))]


def test_packed_sequence_through_recurrent_modules():
    rng = np.random.RandomState(1)
    for (name, kw), expected in zip(_CASES, _EXPECTED):
        m = getattr(torch.nn, name)(3, 4, **kw)
        with torch.no_grad():
            for p in m.parameters():
                p.copy_(torch.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
        bf = kw.get("batch_first", False)
        x = torch.tensor(rng.randn(5, 4, 3).astype(np.float32))
        if bf:
            x = x.transpose(0, 1)
        x.requires_grad_(True)
        nh = m.num_layers * (2 if m.bidirectional else 1)
        h0 = torch.tensor(rng.randn(nh, 4, m.proj_size or 4).astype(np.float32))
        hx = (h0, torch.tensor(rng.randn(nh, 4, 4).astype(np.float32))) if name == "LSTM" else h0
        packed = pack_padded_sequence(x, [3, 5, 1, 2], batch_first=bf, enforce_sorted=False)
        out, h = m(packed, hx)
        assert isinstance(out, PackedSequence) and out.batch_sizes.tolist() == [4, 3, 2, 1, 1]
        pad, lengths = pad_packed_sequence(out, batch_first=bf)
        assert lengths.tolist() == [3, 5, 1, 2]
        hs = h if isinstance(h, tuple) else (h,)
        (pad.sum() + sum((hh * hh).sum() for hh in hs)).backward()
        got = [float(pad.sum()), [float(hh.sum()) for hh in hs], [float(v) for v in hs[0][-1].sum(-1)],
               float(x.grad.sum()), float(m.weight_hh_l0.grad.sum())]
        np.testing.assert_allclose(got[0], expected[0], atol=1e-4)
        np.testing.assert_allclose(got[1], expected[1], atol=1e-4)
        np.testing.assert_allclose(got[2], expected[2], atol=1e-4)
        np.testing.assert_allclose(got[3:], expected[3:], atol=1e-4)


def test_packed_input_dim_error():
    m = torch.nn.GRU(3, 4)
    bad = PackedSequence(torch.zeros(3, 2, 3), torch.tensor([2, 1]))
    with pytest.raises(RuntimeError, match="^input must have 2 dimensions, got 3$"):
        m(bad)


def test_clip_grad_value_and_vector_roundtrip():
    w = torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
    w.grad = torch.tensor([0.5, -4.0, 2.0])
    torch.nn.utils.clip_grad_value_([w], 1.0)
    assert w.grad.tolist() == [0.5, -1.0, 1.0]
    m = torch.nn.Linear(2, 2)
    v = torch.nn.utils.parameters_to_vector(m.parameters())
    assert v.shape == (6,)
    torch.nn.utils.vector_to_parameters(torch.arange(6.), m.parameters())
    assert m.weight.tolist() == [[0, 1], [2, 3]] and m.bias.tolist() == [4, 5]
    with pytest.raises(TypeError, match="^expected torch.Tensor, but got: list$"):
        torch.nn.utils.vector_to_parameters([1.0], m.parameters())


def test_pad_sequence_mismatched_trailing_dims_and_side_error():
    with pytest.raises(RuntimeError, match="^Expected padding_side to be one of left or right, but got mid.$"):
        pad_sequence([torch.ones(2)], padding_side="mid")
    with pytest.raises(RuntimeError, match=r"^The size of tensor a \(2\) must match the size of tensor b \(3\) at "
                                           r"non-singleton dimension 1$"):
        pad_sequence([torch.ones(2), torch.ones(2, 3)])
    out = pad_sequence([torch.zeros(1, 3), torch.ones(2, 1)], batch_first=True)   # (2, 1) broadcasts into (2, 3)
    assert out.tolist() == [[[0, 0, 0], [0, 0, 0]], [[1, 1, 1], [1, 1, 1]]]


def test_packed_hidden_size_error_and_lstm_hidden_shape():
    packed = pack_padded_sequence(torch.ones(3, 2, 4), [3, 2])
    assert tuple(torch.nn.LSTM(4, 5)(packed)[1][0].shape) == (1, 2, 5)
    with pytest.raises(RuntimeError, match=r"^Expected hidden size \(1, 2, 5\), got \[1, 3, 5\]$"):
        torch.nn.GRU(4, 5)(packed, torch.zeros(1, 3, 5))
    with pytest.raises(RuntimeError, match="^input.size\\(-1\\) must be equal to input_size. Expected 4, got 3$"):
        torch.nn.GRU(4, 5)(pack_padded_sequence(torch.ones(3, 2, 3), [3, 2]))
