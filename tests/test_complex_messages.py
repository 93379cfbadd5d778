"""Errors of complex inputs worded as PyTorch 2.13's (checked side by side with torch): a refused dtype is named as
the common dtype of the inputs, as TensorIterator's dispatch names it, and polar checks its own inputs."""
import zipfile

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


def test_save_keeps_views_of_one_dtype_as_one_storage_and_refuses_two_dtypes(tmp_path):
    c = torch.tensor([1 + 2j, 3j])
    for views in ([c, c.real], [c, torch.view_as_real(c)], [c.imag, c]):
        with pytest.raises(RuntimeError, match="^Cannot save multiple tensors or storages that view the same data as "
                                               "different types$"):
            torch.save(views, tmp_path / "x.pt")
    a = torch.ones(2)
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        torch.save([a, a.view(torch.int32)], tmp_path / "x.pt")
    torch.save([c.real, c.imag, c.real[1:]], tmp_path / "y.pt")     # one float32 storage, as torch writes it
    assert [n for n in zipfile.ZipFile(tmp_path / "y.pt").namelist() if "/data/" in n] == ["y/data/0"]
    r = torch.load(tmp_path / "y.pt")
    r[0][1] = 9.0
    assert r[2].tolist() == [9.0] and r[1].tolist() == [2.0, 3.0]


def test_geqrf_is_recorded_without_a_derivative_as_torch():
    a = torch.eye(3, requires_grad=True) + 0.1
    h, tau = torch.geqrf(a)
    with pytest.raises(NotImplementedError, match="^the derivative for 'geqrf' is not implemented.$"):
        h.sum().backward()
    c = torch.eye(3, dtype=torch.cfloat).requires_grad_()
    with pytest.raises(RuntimeError, match="^geqrf does not support automatic differentiation for outputs with complex "
                                           "dtype.$"):
        torch.geqrf(c)
    with torch.no_grad():
        assert torch.geqrf(c)[0].dtype is torch.cfloat
