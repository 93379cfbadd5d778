"""Every differentiable op of ops.yaml passes gradcheck and gradgradcheck, generated from the registry.

For each op with float inputs whose entry is differentiable (derivative formulas, or a composite
differentiated through its parts) and not marked `test: {gradcheck: false}`, float64 samples from
`test.grad_domain` (else `test.domain`) are checked in two cases: contiguous inputs of one shape, and
"strided": a non-contiguous input (transposed or sliced with steps), broadcasting against the other
inputs when the op has two or more (one case for both keeps the number of strided Numba kernels to
compile down). Inputs are small (at most 8 elements each): gradgradcheck differentiates the
backward numerically, element by element.

For elementwise ops the fused backward kernel (create_graph=False) and the formula run as Tensor ops
(create_graph=True) must agree (float64, on the strided case).
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from reftorch.autograd import grad as autograd_grad
from reftorch.autograd.gradcheck import gradcheck, gradgradcheck
from reftorch._reference import compare
from reftorch._tensor import Tensor
from registry_samples import OPS, RandomDraw, make_sample, tensor_args

ELEMENTWISE = ("unary", "binary", "ternary")
MAX_NUMEL = 8           # elements per input: gradgradcheck's cost grows with the square of it


def differentiable(op):
    if not op.differentiable or op.result in ("bool", "int64") or op.kind == "argreduction":
        return False
    if "float" not in op.test.dtypes:
        return False
    return bool(op.derivatives) or op.kind == "composite"


def grad_args(op):
    """Names of the tensor arguments gradients flow to."""
    names = [a.name for a in tensor_args(op) if a.type in ("Tensor", "Tensor?", "Tensor[]")]
    if op.kind == "composite" and not op.derivatives:
        return names
    # an input whose formula is not_implemented(...) gets an edge whose gradient raises, as PyTorch's
    return [n for n in names if op.formula(n) is not None and not op.formula(n).startswith("not_implemented(")]


def n_data_tensors(op):
    return sum(1 for a in op.signature.args if a.type in ("Tensor", "Tensor?"))


def _seed(*parts):
    return zlib.crc32("/".join(map(str, parts)).encode())


def prepared(op, case, dtype="float64"):
    """(sample, func, inputs): func(*inputs) calls the op with the sample's other arguments fixed.

    Samples the op rejects (drawn dims that coincide...) or where it is not finite are redrawn: the fuzz
    tests check errors and special values."""
    strided = case == "strided"
    for attempt in range(12):
        broadcast = strided and n_data_tensors(op) >= 2 and op.test.shapes is None
        s = make_sample(op, RandomDraw(_seed(op.name, case, dtype, attempt)), dtype, grad=True, contiguous=not strided,
                        broadcast=broadcast, noncontig=strided, max_side=3, max_numel=MAX_NUMEL)
        try:
            out = s.call()
        except Exception as err:
            error = err
            continue
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if all(np.isfinite(o._array()).all() for o in outs if isinstance(o, Tensor) and o.dtype.is_floating_point):
            break
        error = ValueError("non-finite output (a degenerate point: std of one element...)")
    else:
        raise AssertionError(f"op '{op.name}' rejected 12 samples for its {case} gradient check, the last with "
                             f"{type(error).__name__}: {error}\n  on {s.describe()}")
    wanted = set(grad_args(op))
    slots = []                                   # (arg name, position in its list or None)
    inputs = []
    for a in tensor_args(op):
        v = s.kwargs.get(a.name)
        if a.name not in wanted:
            continue
        if isinstance(v, list):
            for i, t in enumerate(v):
                if t.dtype.is_floating_point:
                    slots.append((a.name, i))
                    inputs.append(t.requires_grad_(True))
        elif isinstance(v, Tensor) and v.dtype.is_floating_point:
            slots.append((a.name, None))
            inputs.append(v.requires_grad_(True))

    def func(*ts):
        kwargs = dict(s.kwargs)
        for (name, i), t in zip(slots, ts):
            if name in op.test.hermitian:       # the op reads one triangle: differentiate A -> (A + A^T) / 2
                t = (t + t.mT) / 2
            if name in op.test.triangular:      # a factor: the unread triangle's full-formula gradient drops out
                t = t.triu() if kwargs.get("upper") else t.tril()
            if i is None:
                kwargs[name] = t
            else:
                kwargs[name] = list(kwargs[name])
                kwargs[name][i] = t
        s.kwargs, saved = kwargs, s.kwargs
        try:
            return s.call()
        finally:
            s.kwargs = saved

    return s, func, inputs


def _cases():
    for op in OPS:
        if not differentiable(op):
            continue
        for case in ("contiguous", "strided"):
            yield pytest.param(op, case, id=f"{op.name}-{case}")


def _skip_reason(op):
    if not op.test.gradcheck:
        return "test: {gradcheck: false} in ops.yaml"
    if not op.test.fuzz:
        return "test: {fuzz: false}: an internal helper, checked through the ops whose derivatives use it"
    return None


@pytest.mark.parametrize("op, case", list(_cases()))
def test_gradcheck_and_gradgradcheck(op, case):
    reason = _skip_reason(op)
    if reason:
        pytest.skip(reason)
    s, func, inputs = prepared(op, case)
    if not inputs:
        pytest.skip("no floating input requires grad in this sample")
    where = f"op '{op.name}' ({case}) on {s.describe()}"
    outs = func(*inputs)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    if not any(isinstance(o, Tensor) and o.dtype.is_floating_point for o in outs):
        assert op.kind == "composite", (f"op '{op.name}' returns no floating tensor: mark its entry "
                                        "`differentiable: false` in ops.yaml")
        pytest.skip("a composite with integer outputs (argsort-like): nothing to differentiate")
    try:
        gradcheck(func, inputs)
    except Exception as err:
        raise AssertionError(f"gradcheck failed for {where}\n{type(err).__name__}: {err}") from err
    try:
        gradgradcheck(func, inputs)
    except Exception as err:
        raise AssertionError(f"gradgradcheck failed for {where}\n{type(err).__name__}: {err}") from err


def _fused_cases():
    for op in OPS:
        if op.kind in ELEMENTWISE and differentiable(op) and op.derivatives:
            yield pytest.param(op, id=op.name)


@pytest.mark.parametrize("op", list(_fused_cases()))
def test_fused_backward_matches_formula(op):
    reason = _skip_reason(op)
    if reason:
        pytest.skip(reason)
    dtype = "float64"
    s, func, inputs = prepared(op, "strided", dtype)
    if not inputs:
        pytest.skip("no floating input requires grad in this sample")
    out = func(*inputs)
    rng = np.random.default_rng(_seed(op.name, dtype))
    g = Tensor._from_array(rng.uniform(-1, 1, out._shape).astype(out.dtype.np))
    fused = autograd_grad([out], inputs, [g], retain_graph=True, allow_unused=True)
    formula = autograd_grad([out], inputs, [g], create_graph=True, allow_unused=True)
    tol = (1e-5, 1e-5) if dtype == "float32" else (1e-12, 1e-10)
    for i, (a, b) in enumerate(zip(fused, formula)):
        assert (a is None) == (b is None), f"op '{op.name}': input {i} has a gradient on one path only"
        if a is None:
            continue
        assert a.dtype is b.dtype and tuple(a.shape) == tuple(b.shape)
        problem = compare(a.detach()._array(), b.detach()._array(), *tol)
        assert problem is None, (f"op '{op.name}': the fused backward kernel and the formula disagree for input {i}: "
                                 f"{problem}\n  on {s.describe()}")
