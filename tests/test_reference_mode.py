"""Reference mode (issue 2): every kernel call also runs its ops.yaml NumPy reference and is compared.

A deliberately wrong kernel (monkeypatched into the dispatcher's kernel cache, or a wrong array-op
body) must be caught, with an error naming the op, the inputs' shapes, dtypes and strides and the
worst difference; correct kernels must pass untouched.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import reftorch as torch
from reftorch import _array, _dispatch
from reftorch import _reference
from reftorch._reference import ReferenceMismatchError, ReferenceWarning, reference_mode
from reftorch.kernels import array_ops

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def wrong_kernel(monkeypatch):
    """Replace one compiled kernel of an op by a function that computes something else."""
    def install(op, suffix, fn):
        spec = _dispatch.SPECS[op]
        spec.kernel(suffix)                      # make sure the cache has the slot, then overwrite it
        monkeypatch.setitem(spec._kernel_cache, suffix, fn)
    return install


@pytest.fixture
def wrong_body(monkeypatch):
    """Replace the NumPy body of an array op (kernels/array_ops.py and the dispatcher's lookup cache)."""
    def install(op, fn):
        monkeypatch.setattr(array_ops, f"{op}_forward", fn)
        monkeypatch.setitem(_array._array_fns, op, fn)
    return install


def test_correct_kernels_pass_in_reference_mode():
    x = torch.tensor([[0.5, -1.0, 2.0], [3.0, 0.25, -0.5]])
    xt = torch.tensor([[0.5, 3.0], [-1.0, 0.25], [2.0, -0.5]], dtype=torch.float64).t()   # strided
    with reference_mode():
        assert torch.is_reference_mode_enabled()
        torch.testing.assert_close(torch.exp(x), torch.tensor(np.exp(x.numpy())))
        torch.testing.assert_close(torch.add(xt, 2, alpha=3), torch.tensor(xt.numpy() + 6))
        torch.testing.assert_close(torch.sum(x, 1, keepdim=True), torch.tensor(x.numpy().sum(1, keepdims=True)))
        assert torch.argmax(x).item() == 3
        torch.testing.assert_close(torch.cumsum(x, 0), torch.tensor(np.cumsum(x.numpy(), 0)))
        torch.testing.assert_close(torch.matmul(x, x.t()), torch.tensor(x.numpy() @ x.numpy().T))
        y = x.clone()
        y.mul_(2)
        torch.testing.assert_close(y, x * 2)
        assert torch.eq(torch.arange(3), 1).tolist() == [False, True, False]
        torch.exp(torch.tensor([1, 2], dtype=torch.uint8))        # int inputs of a float op
    assert not torch.is_reference_mode_enabled()


def test_wrong_elementwise_kernel_is_caught(wrong_kernel):
    def bad_exp(out, a):
        for i in range(out.shape[0]):
            out[i] = np.exp(a[i]) + (1.0 if i == 2 else 0.0)
    wrong_kernel("exp", "contig", bad_exp)
    x = torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.float64)
    assert torch.exp(x)[2].item() != pytest.approx(np.exp(2.0))      # off: the wrong kernel goes unnoticed
    with reference_mode(), pytest.raises(ReferenceMismatchError) as info:
        torch.exp(x)
    msg = str(info.value)
    assert "op 'exp'" in msg and "np.exp" in msg
    assert "self: float64 shape (4,) strides (1,) offset 0" in msg
    assert "worst difference 1 at index (2,)" in msg


def test_wrong_strided_binary_kernel_is_caught(wrong_kernel):
    def bad_strided(shape, out, o_off, o_st, a0, a0_off, a0_st, a1, a1_off, a1_st):
        out[:] = 0
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]]).t()
    b = torch.tensor([10.0, 20.0])
    wrong_kernel("mul", "strided", bad_strided)
    with reference_mode(), pytest.raises(ReferenceMismatchError) as info:
        torch.mul(a, b)
    msg = str(info.value)
    assert "op 'mul'" in msg and "self: float32 shape (2, 2) strides (1, 2)" in msg
    assert "other: float32 shape (2,)" in msg
    assert "worst difference" in msg


def test_wrong_reduction_and_inplace_are_caught(wrong_kernel):
    def bad_reduce(x, off, M, sm, K, sk, acc, start):
        acc[:] = 42
    wrong_kernel("sum", "reduce", bad_reduce)
    with reference_mode(), pytest.raises(ReferenceMismatchError, match="op 'sum'"):
        torch.sum(torch.ones(3, 2), 0)

    def bad_add_(out, b, alpha):        # the in-place kernel (out is self): leaves self as it was
        pass
    wrong_kernel("add", "inplace", bad_add_)
    y = torch.ones(3)
    with reference_mode(), pytest.raises(ReferenceMismatchError, match="op 'add'"):
        y.add_(torch.ones(3))


def test_wrong_array_body_is_caught(wrong_body):
    wrong_body("flip", lambda self, dims: self.copy())
    x = torch.arange(6).reshape(2, 3)
    with reference_mode(), pytest.raises(ReferenceMismatchError) as info:
        torch.flip(x, (1,))
    assert "op 'flip'" in str(info.value) and "int64 shape (2, 3)" in str(info.value)


def test_shape_mismatch_is_reported(wrong_body):
    wrong_body("matmul", lambda self, other: np.matmul(self, other)[..., :1])
    with reference_mode(), pytest.raises(ReferenceMismatchError, match=r"shape \(2, 1\) but the reference gives "
                                                                       r"shape \(2, 2\)"):
        torch.matmul(torch.ones(2, 3), torch.ones(3, 2))


def test_a_reference_that_cannot_evaluate_warns(monkeypatch):
    monkeypatch.setitem(torch.kernels.api.SPECS["neg"], "ref", "lambda x: 1 / 0")
    monkeypatch.setattr(_reference, "_refs", {})
    with reference_mode(), pytest.warns(ReferenceWarning, match="op 'neg'"):
        assert torch.neg(torch.tensor([1.0])).tolist() == [-1.0]


def test_set_reference_mode_and_environment_variable():
    torch.set_reference_mode(True)
    try:
        assert torch.is_reference_mode_enabled()
    finally:
        torch.set_reference_mode(False)
    assert not torch.is_reference_mode_enabled()
    env = dict(os.environ, REFTORCH_REFERENCE="1", PYTHONPATH=ROOT, REFTORCH_EAGER_INIT="0")   # (Numba reads YAML)
    # the references come from the generated SPECS: importing reftorch reads no YAML
    code = "import sys, reftorch; print(reftorch.is_reference_mode_enabled(), 'yaml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "True False", out.stdout + out.stderr


def test_specs_carry_the_reference_and_tolerances():
    spec = torch.kernels.api.SPECS["exp"]
    assert spec["ref"] == "np.exp" and spec["atol"] > 0 and spec["rtol"] > 0
