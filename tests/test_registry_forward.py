"""Every differentiable op of ops.yaml propagates the right tangent in forward mode, generated from the registry.

For each op that tests/test_registry_grad.py gradchecks (same samples: float64, at most 8 elements per
input, contiguous), every floating input is made dual with a random tangent t; each floating output's
tangent J t, projected on a random u, must equal <J^T u, t> from the op's backward (the VJP, itself
gradchecked). The JVP under test is whatever the op has: an explicit `forward:` formula, one derived from
its elementwise `derivatives:`, a view's own, the generic fallback, or a composite's parts'.
Also: the generated JVP (where there is one) agrees with the fallback it replaces.
"""
from __future__ import annotations

import numpy as np
import pytest

import reftorch.autograd.forward_ad as fwAD
from reftorch.autograd import grad as autograd_grad
from reftorch.autograd.forward_ad import _fallback, _jvp
from reftorch._dispatch import SPECS, _call_spec
from reftorch._tensor import Tensor
from reftorch.kernels.transforms import JVPS
from registry_samples import OPS
from test_registry_grad import _seed, _skip_reason, differentiable, prepared


def _cases():
    for op in OPS:
        if differentiable(op):
            yield pytest.param(op, id=op.name)


def _floats(outs):
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    return [o if isinstance(o, Tensor) and o.dtype.is_floating_point else None for o in outs]


def _tensor(a):
    return Tensor._from_array(np.array(a, order="C"))      # (ascontiguousarray makes 0-d arrays 1-d)


@pytest.mark.parametrize("op", list(_cases()))
def test_jvp_matches_vjp(op):
    reason = _skip_reason(op)
    if reason:
        pytest.skip(reason)
    s, func, inputs = prepared(op, "contiguous")
    if not inputs:
        pytest.skip("no floating input requires grad in this sample")
    rng = np.random.default_rng(_seed(op.name, "forward"))
    tangents = [_tensor(rng.uniform(-1, 1, x._shape)) for x in inputs]
    outs = _floats(func(*inputs))
    if not any(o is not None for o in outs):
        pytest.skip("a composite with integer outputs (argsort-like): nothing to differentiate")
    with fwAD.dual_level():
        dual_outs = _floats(func(*[fwAD.make_dual(x, t) for x, t in zip(inputs, tangents)]))
        jvps = [None if o is None else fwAD.unpack_dual(o).tangent for o in dual_outs]
    where = f"op '{op.name}' on {s.describe()}"
    for k, (o, jv) in enumerate(zip(outs, jvps)):
        if o is None:
            continue
        u = rng.uniform(-1, 1, o._shape)
        jv = np.zeros(o._shape) if jv is None else jv.detach()._array()
        assert tuple(jv.shape) == tuple(o._shape), f"{where}: output {k}'s tangent has shape {jv.shape}"
        forward = float(np.sum(jv * u))
        backward = 0.0
        if o.requires_grad:
            gs = autograd_grad([o], inputs, [_tensor(u)], retain_graph=True, allow_unused=True)
            backward = sum(float(np.sum(g.detach()._array() * t._array())) for g, t in zip(gs, tangents)
                           if g is not None)
        assert abs(forward - backward) <= 1e-7 + 1e-7 * abs(backward), \
            f"{where}: output {k}: <u, J t> = {forward} by forward mode but {backward} by the VJP"


def _generated():
    for name, (fn, how) in JVPS.items():
        yield pytest.param(name, how, id=name)


@pytest.mark.parametrize("name, how", list(_generated()))
def test_generated_jvp_matches_fallback(name, how):
    """The JVP generated for an op equals the generic one (so the derivation rules are sound)."""
    op = next(o for o in OPS if o.name == name)
    reason = _skip_reason(op)
    if reason or not differentiable(op):
        pytest.skip(reason or "not differentiable")
    s, func, inputs = prepared(op, "contiguous")
    spec = SPECS[name]
    calls = []

    def spy(spec_, tensors, scalars):        # the op's own call inside the sample (composites call others first)
        if spec_ is spec:
            calls.append((list(tensors), scalars))
        return _call_spec(spec_, tensors, scalars)

    with fwAD.dual_level():
        hook = fwAD._Hook.call
        fwAD._Hook.call = staticmethod(lambda sp, ts, sc, run: hook(sp, ts, sc, spy))
        try:
            func(*[fwAD.make_dual(x, x * 0 + 1) for x in inputs])
        finally:
            fwAD._Hook.call = staticmethod(hook)
        if not calls:
            pytest.skip("the sample reaches the op through another entry")
        tensors, scalars = calls[0]
        rng = np.random.default_rng(_seed(name, "generated"))
        tangents = [_tensor(rng.uniform(-1, 1, x._shape)) if isinstance(x, Tensor) and x.dtype.is_floating_point
                    else None for x in tensors]
        with fwAD._suspended():
            outs = _call_spec(spec, tensors, scalars)
            outs = outs if isinstance(outs, (tuple, list)) else (outs,)
            try:
                a = _jvp(spec, tensors, scalars, tangents, outs, _call_spec)
            except NotImplementedError as err:      # a derivative torch does not implement (zeta's, igamma's self)
                with pytest.raises(NotImplementedError, match="is not implemented"):
                    _fallback(spec, tensors, scalars, tangents, outs, _call_spec)
                assert "is not implemented" in str(err)
                return
            b = _fallback(spec, tensors, scalars, tangents, outs, _call_spec)
    for x, y in zip(a, b):
        if x is None or y is None:
            assert x is None and y is None or (x if y is None else y).abs().max().item() == 0
            continue
        np.testing.assert_allclose(x.detach()._array(), y.detach()._array(), rtol=1e-9, atol=1e-12,
                                   err_msg=f"op '{name}' ({how}): generated JVP and fallback disagree")
