"""Every op of ops.yaml against its NumPy reference (`test.ref`), generated from the registry.

One test per (op, concrete dtype of the entry's `test.dtypes`): hypothesis draws samples (see
tests/registry_samples.py: shapes with 0-d and size-0 tensors, broadcasting, transposed, stepped,
offset and expanded views, values inside `test.domain`, random dim/keepdim for reductions) and checks

  * the op's result against the reference within `test.atol`/`test.rtol` (at least 1e-4 with float32),
    exactly for integer and bool results; the op must accept what the reference accepts;
  * the result dtype against the entry's `result`/`accumulate` rule;
  * that no input was written, and that kernel ops return fresh storage;
  * the in-place variant (`op_`), when the entry has one: same values, written into self, or
    PyTorch's error when the result cannot be cast to self's dtype or shape.

Compile budget: the strided kernel of an elementwise op is a separate Numba compile (about a
second) per dtype, so elementwise and composite ops get the whole variety of layouts and
broadcasting in one dtype per op (float64 where listed) and contiguous same-shape samples in the
other dtypes (their contiguous kernels compile in a tenth of that); reductions, scans and array ops
get everything in every dtype. REFTORCH_FUZZ_FULL=1 gives every dtype every layout.
REFTORCH_EXAMPLES scales the number of samples (tests/conftest.py).

Entries with `test: {fuzz: false}` (internal helpers) are skipped; entries without a reference
(views) are checked for layout invariance: the op on strided inputs equals the op on contiguous copies.
"""
from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reftorch
from reftorch._reference import check_outputs, compare
from reftorch._tensor import Tensor
from registry_samples import (OPS, HypothesisDraw, SampleError, Sample, concrete_dtypes, expected_dtype,
                              make_sample, tensor_args)

FULL = os.environ.get("REFTORCH_FUZZ_FULL", "") not in ("", "0")
LAYOUT_SENSITIVE = ("unary", "binary", "ternary", "composite")
KERNEL_KINDS = ("unary", "binary", "ternary", "reduction", "argreduction", "scan", "array")
EXAMPLES = settings.default.max_examples


def layout_dtype(op):
    """The dtype in which an elementwise op gets every layout (see the module docstring)."""
    dts = concrete_dtypes(op)
    for d in ("float64", "int64", "bool"):
        if d in dts:
            return d
    return dts[0]


def _cases():
    for op in OPS:
        dts = concrete_dtypes(op) if op.test.fuzz else ["-"]
        for dt in dts:
            yield pytest.param(op, dt, id=f"{op.name}-{dt}")


def _arrays(out):
    if isinstance(out, (tuple, list)):
        return tuple(o._array() for o in out)
    return out._array()


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _contiguous_copy(sample):
    """The same sample with every tensor a fresh contiguous copy."""
    kwargs = dict(sample.kwargs)
    for a in tensor_args(sample.op):
        v = kwargs.get(a.name)
        if isinstance(v, Tensor):
            kwargs[a.name] = Tensor._from_array(np.array(v._array()))
        elif isinstance(v, list):
            kwargs[a.name] = [Tensor._from_array(np.array(t._array())) for t in v]
    return Sample(sample.op, sample.dtype, kwargs, sample.arrays, sample.named)


def _scalar_arg_overflows(sample, err):
    """The op refused a Python number argument that its integer dtype cannot hold, as PyTorch does
    (threshold's value=-1 on uint8): right exactly when some such argument really does not fit."""
    if not str(err).startswith("value cannot be converted to type"):
        return False
    from reftorch import _dtype
    dt = _dtype.as_dtype(sample.dtype) if not isinstance(sample.dtype, _dtype.dtype) else sample.dtype
    for v in sample.kwargs.values():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                _dtype.check_scalar_fits(v, dt)
            except RuntimeError:
                return True
    return False


def check_example(op, draw, dtype, stats):
    full = FULL or op.kind not in LAYOUT_SENSITIVE or dtype == layout_dtype(op)
    try:
        s = make_sample(op, draw, dtype, contiguous=not full)
    except SampleError as err:
        if "lies in the domain" in str(err):
            stats["no values in domain"] += 1
            return
        raise
    if op.test.ref is None:
        return check_layout_invariance(op, s, stats)
    try:
        expected, ref_error = s.ref(), None
    except Exception as err:            # NumPy rejects this input: the op may accept or reject it
        expected, ref_error = None, err
    before = [np.array(t._array()) for t in s.tensors()]
    try:
        out = s.call()
    except Exception as err:
        if ref_error is not None:
            stats["rejected by both"] += 1
            return
        if _scalar_arg_overflows(s, err):
            stats["a Scalar argument does not fit the integer dtype (PyTorch's overflow error)"] += 1
            return
        raise AssertionError(f"op '{op.name}' raised {type(err).__name__}: {err}\n  on {s.describe()}\n"
                             f"  but its reference `{op.test.ref}` returned {expected!r}") from err
    if ref_error is not None:
        stats["rejected by NumPy only"] += 1
        return
    _check_inputs_unchanged(op, s, before)
    problem = check_outputs(_arrays(out), expected, op.test.atol, op.test.rtol, s.input_dtypes(),
                            op.test.signs)
    assert problem is None, (f"op '{op.name}' disagrees with its reference `{op.test.ref}`: {problem}\n"
                             f"  on {s.describe()}")
    want = expected_dtype(op, s)
    if want is not None:
        got = _outputs(out)[0]._array().dtype
        assert got == want, (f"op '{op.name}' returned dtype {got}, but its entry (result: {op.result}) promises "
                             f"{want} for {dtype} inputs\n  on {s.describe()}")
    if op.kind in KERNEL_KINDS:
        for o in _outputs(out):
            for t in s.tensors():
                assert o._storage is not t._storage, f"op '{op.name}' returned a view of its input (a {op.kind} " \
                                                     f"op must return fresh storage)\n  on {s.describe()}"
    if op.variants.inplace and isinstance(out, Tensor):
        check_inplace(op, s, out)
    stats["compared"] += 1


def _check_inputs_unchanged(op, s, before):
    for t, b in zip(s.tensors(), before):
        now = t._array()
        same = np.array_equal(now, b, equal_nan=True) if b.dtype.kind == "f" else np.array_equal(now, b)
        assert same, f"op '{op.name}' wrote into its input\n  on {s.describe()}"


def check_inplace(op, s, out):
    """op_(self, ...) writes op(self, ...) into self, or raises PyTorch's error when it cannot."""
    self_arg = tensor_args(op)[0].name
    src = s.kwargs[self_arg]
    if any(st == 0 and n > 1 for n, st in zip(src._shape, src._strides)):
        return                                          # in-place into an expanded tensor: not allowed
    target = Tensor._from_array(np.array(src._array()))
    kwargs = dict(s.kwargs)
    kwargs[self_arg] = target
    fn = getattr(reftorch.kernels.api, op.name + "_")
    if op.kind == "view":       # a view op in place: self itself takes the view's geometry (unsqueeze_, t_)
        out = getattr(reftorch.kernels.api, op.name)(**kwargs)
        r = fn(**kwargs)
        assert r is target, f"{op.name}_ must return self"
        assert (r.shape, r.stride(), r.storage_offset()) == (out.shape, out.stride(), out.storage_offset()), \
            f"{op.name}_ (in place) gives another geometry than {op.name}\n  on {s.describe()}"
        assert np.array_equal(r._array(), out._array(), equal_nan=True), f"{op.name}_ changed values"
        return
    castable = out.dtype.category <= target.dtype.category
    # a real result written in place into complex self (abs_): PyTorch refuses "In-place abs is not supported ..."
    real_into_complex = op.result == "real" and target.dtype.is_complex
    if tuple(out._shape) != tuple(target._shape) or not castable or real_into_complex:
        with pytest.raises(RuntimeError):
            fn(**kwargs)
        return
    r = fn(**kwargs)
    assert r is target, f"{op.name}_ must return self"
    want = out._array().astype(target.dtype.np)
    tight = 1e-6 if target.dtype.np == np.float32 else 1e-12
    problem = compare(target._array(), want, 0.0, tight)
    assert problem is None, f"{op.name}_ (in place) differs from {op.name}: {problem}\n  on {s.describe()}"


def check_layout_invariance(op, s, stats):
    """Without a reference: the op on strided/expanded inputs equals the op on contiguous copies."""
    try:
        out = s.call()
    except Exception:
        stats["rejected"] += 1
        return
    try:
        plain = _contiguous_copy(s).call()
    except Exception as err:
        raise AssertionError(f"op '{op.name}' accepts strided inputs but raises {type(err).__name__} on their "
                             f"contiguous copies: {err}\n  on {s.describe()}") from err
    problem = check_outputs(_arrays(out), _arrays(plain), 0.0, 0.0)
    assert problem is None, f"op '{op.name}' depends on its inputs' memory layout: {problem}\n  on {s.describe()}"
    stats["compared"] += 1


@pytest.mark.parametrize("op, dtype", list(_cases()))
def test_op_matches_numpy_reference(op, dtype):
    if not op.test.fuzz:
        pytest.skip("test: {fuzz: false} in ops.yaml (an internal helper)")
    stats = Counter()
    n_dtypes = len(concrete_dtypes(op))
    examples = max(4, (2 * EXAMPLES) // n_dtypes)

    @settings(max_examples=examples)
    @given(st.data())
    def run(data):
        check_example(op, HypothesisDraw(data), dtype, stats)

    run()
    assert stats["compared"], (f"no sample of op '{op.name}' in {dtype} could be checked ({dict(stats)}): give "
                               "the entry test.args / test.shapes / test.domain that make valid inputs")
