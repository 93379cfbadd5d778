"""Errors of complex inputs worded as PyTorch 2.13's (checked side by side with torch): a refused dtype is named as
the common dtype of the inputs, as TensorIterator's dispatch names it, and polar checks its own inputs."""
import pytest

import reftorch as torch


@pytest.mark.parametrize("fn, words", [
    (lambda a, b, f: a < b, "\"lt_cpu\" not implemented for 'ComplexDouble'"),
    (lambda a, b, f: torch.atan2(a, b), "\"atan2_cpu\" not implemented for 'ComplexDouble'"),
    (lambda a, b, f: torch.fmod(a, b), "\"fmod_cpu\" not implemented for 'ComplexDouble'"),
    (lambda a, b, f: torch.hypot(b, a), "\"hypot_cpu\" not implemented for 'ComplexDouble'"),
    (lambda a, b, f: torch.xlogy(f, 2j), "\"xlogy_cpu\" not implemented for 'ComplexFloat'"),   # float32 + 2j
    (lambda a, b, f: torch.lt(f, a), "\"lt_cpu\" not implemented for 'ComplexFloat'"),
])
def test_refusals_name_the_common_dtype(fn, words):
    a, b, f = torch.tensor([1 + 1j]), torch.tensor([1 + 1j], dtype=torch.complex128), torch.tensor([1.0])
    with pytest.raises(NotImplementedError) as e:
        fn(a, b, f)
    assert str(e.value) == words


def test_polar_checks_both_inputs():
    with pytest.raises(RuntimeError, match="^Expected both inputs to be Half, Float or Double tensors but got "
                                           "ComplexFloat and Float$"):
        torch.polar(torch.tensor([1 + 1j]), torch.tensor([1.0]))
    with pytest.raises(RuntimeError, match="but got Float and Long$"):
        torch.polar(torch.tensor([1.0]), torch.tensor([1]))
    r = torch.polar(torch.tensor([2.0], requires_grad=True), torch.tensor([0.5]))
    assert r.dtype is torch.complex64 and r.requires_grad
