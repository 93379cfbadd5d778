"""Issue surface16: inference tensors (torch.is_inference and what torch forbids on them), torch.sym_* on plain
numbers, Tensor.qscheme / record_stream on tensors that are neither quantized nor on a stream's device. Expected
behaviour and messages are torch 2.13's (run side by side while writing); values are hand-derived."""
import math

import numpy as np
import pytest

import reftorch as torch

_SAVED = "Inference tensors cannot be saved for backward"
_INPLACE = "Inplace update to inference tensor outside InferenceMode is not allowed"


def _inference(*shape):
    with torch.inference_mode():
        return torch.ones(*shape)


# ------------------------------------------------------------------ inference tensors

def test_allocated_in_inference_mode_is_inference_and_views_follow_the_storage():
    normal = torch.ones(3)
    x = _inference(3)
    assert x.is_inference() and torch.is_inference(x) and not normal.is_inference()
    assert x.view(3).is_inference() and x.T.is_inference() and x.detach().is_inference() and x.data.is_inference()
    assert not (x + 1).is_inference() and not x.clone().is_inference()     # new allocations outside the mode
    with torch.inference_mode():
        assert not normal.view(3).is_inference()        # a view of a normal tensor stays normal
        assert (normal * 2).is_inference()
        assert torch.from_numpy(np.ones(2)).is_inference()
    with pytest.raises(TypeError, match=r"is_inference\(\): argument 'input' \(position 1\) must be Tensor, not int"):
        torch.is_inference(3)


def test_inference_tensor_version_counter_is_refused():
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter."):
        _inference(2)._version
    assert torch.ones(2)._version == 0


def test_inference_tensor_cannot_be_saved_for_backward():
    w = torch.ones(3, requires_grad=True)
    x = _inference(3)
    with pytest.raises(RuntimeError, match=_SAVED):
        x * w                                   # mul saves both operands
    with pytest.raises(RuntimeError, match=_SAVED):
        w.sin() * x
    y = x + w                                   # add saves neither: allowed, as in torch
    y.sum().backward()
    assert w.grad.tolist() == [1.0, 1.0, 1.0]
    with torch.no_grad():
        assert (x * w).tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("write", [
    lambda t: t.add_(1), lambda t: t.view(6).mul_(2), lambda t: t.fill_(2), lambda t: t.zero_(),
    lambda t: t.copy_(torch.zeros(2, 3)), lambda t: t.__setitem__(0, 5.0), lambda t: t.uniform_(),
    lambda t: t.resize_(6), lambda t: t.index_fill_(0, torch.tensor([0]), 3.0),
    lambda t: torch._foreach_add_([t], 1.0)])
def test_inplace_on_inference_tensor_outside_the_mode_is_refused_before_writing(write):
    # torch 2.13 raises the same error after its kernel has written; reftorch raises before anything is written
    x = _inference(2, 3)
    with pytest.raises(RuntimeError, match=_INPLACE):
        write(x)
    assert x.tolist() == [[1.0] * 3] * 2 and x.shape == (2, 3)
    with torch.no_grad(), pytest.raises(RuntimeError, match=_INPLACE):
        write(x)                                # no_grad is not inference mode
    with torch.inference_mode():
        write(x)                                # inside the mode: allowed


def test_requires_grad_on_inference_tensor_only_inside_the_mode():
    x = _inference(2)
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor outside InferenceMode"):
        x.requires_grad_()
    assert x.requires_grad_(False).requires_grad is False
    with torch.inference_mode():
        assert x.requires_grad_().requires_grad


def test_normal_tensor_written_inside_the_mode_stays_normal():
    n = torch.ones(3)
    with torch.inference_mode():
        n.add_(1)
        v = n.view(3)
    assert not n.is_inference() and n.tolist() == [2.0, 2.0, 2.0]
    v.add_(1)                                   # a view of a normal tensor made in the mode: writable outside
    assert n.tolist() == [3.0, 3.0, 3.0]


def test_inference_mode_false_turns_recording_back_on():
    with torch.inference_mode():
        with torch.inference_mode(False):
            assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
            assert not torch.ones(1).is_inference()
        assert not torch.is_grad_enabled() and torch.is_inference_mode_enabled()
    with torch.no_grad(), torch.inference_mode(False):
        assert torch.is_grad_enabled()


def test_module_forward_in_inference_mode_and_its_output_outside():
    lin = torch.nn.Linear(3, 2)
    with torch.inference_mode():
        out = lin(torch.ones(1, 3))
    assert out.is_inference() and not out.requires_grad
    with pytest.raises(RuntimeError, match=_SAVED):
        lin(_inference(1, 3))                   # linear saves its input for the weight's gradient


# ------------------------------------------------------------------ torch.sym_*

def test_sym_float_int():
    assert torch.sym_float(3) == 3.0 and type(torch.sym_float(True)) is float
    assert torch.sym_float(torch.tensor(2.5)) == 2.5
    assert torch.sym_int(3.7) == 3 and torch.sym_int(-3.7) == -3 and type(torch.sym_int(True)) is int
    with pytest.raises(ValueError):
        torch.sym_float("a")
    with pytest.raises(OverflowError):
        torch.sym_int(float("inf"))


def test_sym_max_min_promote_to_float():
    assert torch.sym_max(2, 3) == 3 and type(torch.sym_max(2, 3)) is int
    assert torch.sym_max(2, 3.0) == 3.0 and type(torch.sym_max(3, 2.0)) is float
    assert type(torch.sym_max(2, 2.0)) is float and type(torch.sym_max(2.0, 2)) is float
    assert torch.sym_max(True, 0) is True
    assert torch.sym_min(3.0, 2) == 2.0 and type(torch.sym_min(3.0, 2)) is float
    assert torch.sym_min(np.int64(4), 1) == 1
    with pytest.raises(AssertionError, match="expected .*got <class 'str'>"):
        torch.sym_max(1, "a")
    with pytest.raises(AssertionError, match="Tensor"):
        torch.sym_min(torch.tensor(1), 2)


def test_sym_not_sqrt_sum_ite():
    assert torch.sym_not(True) is False and torch.sym_not(0) is True
    assert torch.sym_not(torch.tensor(True)) is False
    assert torch.sym_sqrt(4) == 2.0 and torch.sym_sqrt(2.0) == math.sqrt(2.0)
    with pytest.raises(ValueError, match="math domain error"):
        torch.sym_sqrt(-1)
    assert torch.sym_sum([1, 2, 3]) == 6 and torch.sym_sum(1, 2.5) == 3.5 and torch.sym_sum([]) == 0
    assert torch.sym_sum((torch.tensor(1), 2)).item() == 3
    assert torch.sym_ite(True, 1, 2) == 1 and torch.sym_ite(False, 1, 2) == 2
    with pytest.raises(AssertionError, match="expected SymBool or bool, got <class 'int'>"):
        torch.sym_ite(1, 1, 2)
    with pytest.raises(AssertionError, match="type mismatch: <class 'int'> vs <class 'float'>"):
        torch.sym_ite(True, 1, 2.0)


# ------------------------------------------------------------------ qscheme, record_stream

def test_qscheme_of_a_non_quantized_tensor_is_refused():
    with pytest.raises(NotImplementedError, match="Could not run 'aten::qscheme' with arguments from the 'CPU'"):
        torch.ones(2).qscheme()
    with pytest.raises(TypeError):
        torch.ones(2).qscheme(1)


def test_record_stream_refuses_non_streams_and_cpu_tensors():
    class Stream:       # what PyTorch's check reads of a stream object: its type
        pass
    with pytest.raises(RuntimeError, match="unknown parameter type"):
        torch.ones(2).record_stream(None)
    with pytest.raises(NotImplementedError, match="Could not run 'aten::record_stream' with arguments from the 'CPU'"):
        torch.ones(2).record_stream(Stream())
    with pytest.raises(TypeError):
        torch.ones(2).record_stream()


# ------------------------------------------------------------------ torch.hash_tensor (and its uint64 result)

def _bits(a, kind):
    return np.asarray(a, kind).view(np.uint64)


def test_hash_tensor_xors_the_64_bit_patterns():
    a = np.array([[1.5, -2.0, 0.25], [3.0, 0.0, -0.0]], np.float32)
    bits = _bits(a.astype(np.float64), np.float64)
    t = torch.tensor(a)
    h = torch.hash_tensor(t)
    assert h.dtype == torch.uint64 and h.shape == () and h.item() == int(np.bitwise_xor.reduce(bits, axis=None))
    assert torch.hash_tensor(t, 1).tolist() == np.bitwise_xor.reduce(bits, axis=1).tolist()
    assert t.hash_tensor(0).tolist() == np.bitwise_xor.reduce(bits, axis=0).tolist()
    assert torch.hash_tensor(t, [0, 1], keepdim=True).shape == (1, 1)
    assert torch.hash_tensor(t, ()).item() == h.item() and torch.hash_tensor(t.half()).item() == h.item()
    assert torch.hash_tensor(torch.tensor([1, -2, 3])).item() == 1 ^ (2 ** 64 - 2) ^ 3     # int64 two's complement
    assert torch.hash_tensor(torch.tensor([1, 2, 250], dtype=torch.uint8)).item() == 249
    assert torch.hash_tensor(torch.tensor([True, False, True])).item() == 0
    assert torch.hash_tensor(torch.zeros(2, 0), 0).shape == (0,)


def test_hash_tensor_errors():
    with pytest.raises(RuntimeError, match="Unknown hash_tensor mode: 1"):
        torch.hash_tensor(torch.ones(2), mode=1)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified for input.numel\\(\\) == 0"):
        torch.hash_tensor(torch.zeros(0))
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        torch.hash_tensor(torch.zeros(2, 0), 1)
    with pytest.raises(NotImplementedError, match="\"xor_sum_cpu\" not implemented for 'ComplexFloat'"):
        torch.hash_tensor(torch.ones(2, dtype=torch.complex64))


def test_uint64_tensors_hold_the_full_range_and_refuse_integer_promotion():
    t = torch.from_numpy(np.array([1, 2 ** 63 + 5, 2 ** 64 - 1], np.uint64))
    assert t.dtype == torch.uint64 and t.tolist() == [1, 2 ** 63 + 5, 2 ** 64 - 1] and not t.is_signed()
    assert "dtype=torch.uint64" in repr(t)
    assert torch.promote_types(torch.uint64, torch.float32) == torch.float32
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not supported, attempted to "
                                           "promote UInt64 and Long"):
        torch.promote_types(torch.uint64, torch.int64)
