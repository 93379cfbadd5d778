"""torch.func, torch.autograd.functional and forward_ad on a battery of functions (MLP, attention, layer
norm, cross_entropy; composed transforms), value for value against PyTorch 2.13 (tests/func_expected.json,
written by tests/gen_func_expected.py from the cases in tests/func_cases.py); and their errors."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import reftorch as torch
import func_cases

HERE = os.path.dirname(__file__)
with open(os.path.join(HERE, "func_expected.json")) as _f:
    EXPECTED = json.load(_f)


def _close(a, b, where):
    if isinstance(a, dict):
        assert sorted(a) == sorted(b), where
        for k in a:
            _close(a[k], b[k], f"{where}.{k}")
    elif isinstance(b, list) and b and isinstance(b[0], (list, dict)) or isinstance(a, list) and \
            any(isinstance(x, (list, dict)) for x in a):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{where}[{i}]")
    else:
        np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=1e-9,
                                   atol=1e-11, err_msg=where)


@pytest.mark.parametrize("name", sorted(func_cases.CASES))
def test_matches_torch(name):
    _close(func_cases.CASES[name](torch), EXPECTED[name], name)


def _raises(cls, text, fn):
    with pytest.raises(cls) as info:
        fn()
    assert str(info.value) == text


def test_errors_as_torch():
    from reftorch.func import grad, jvp, jacrev, vmap
    x = torch.randn(3)
    _raises(RuntimeError, "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with 1 "
            "dims. Maybe you wanted to use the vjp or jacrev APIs instead?", lambda: grad(lambda x: x * 2)(x))
    _raises(RuntimeError, "Got argnum=1, but only 1 positional inputs", lambda: grad(lambda x: x.sum(), argnums=1)(x))
    _raises(RuntimeError, "argnums elements must be unique, got (0, 0)",
            lambda: grad(lambda x: x.sum(), argnums=(0, 0))(x))
    _raises(ValueError, "Thing passed to transform API must be Tensor, got <class 'float'>",
            lambda: grad(lambda x: x.sum())(3.0))
    _raises(RuntimeError, "jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to call "
            "f(*primals).", lambda: jvp(lambda x: x, x, x))
    _raises(RuntimeError, "jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. This "
            "is not allowed with strict=True.", lambda: jvp(lambda a: torch.ones(2), (x,), (x,), strict=True))
    _raises(ValueError, "jacrev: `chunk_size` should be greater than 0.", lambda: jacrev(lambda x: x, chunk_size=0))
    _raises(ValueError, "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes [3, 4] "
            "for the mapped dimension", lambda: vmap(lambda a, b: a + b)(x, torch.randn(4)))
    _raises(ValueError, "vmap(<lambda>, in_dims=2, ...)(<inputs>): Got in_dim=2 for some input, but that input is a "
            "Tensor of dimensionality 1 so expected in_dim to satisfy -1 <= in_dim < 1.",
            lambda: vmap(lambda a: a, in_dims=2)(x))
    _raises(ValueError, "vmap(<lambda>, ...): `<lambda>` can not return a BatchedTensor when out_dim is None",
            lambda: vmap(lambda a: a, out_dims=None)(x))
    _raises(RuntimeError, "Only allowed values for randomness are 'error', 'different', or 'same'. Got foo",
            lambda: vmap(lambda a: a, randomness="foo"))
    _raises(RuntimeError, "vmap: called random operation while in randomness error mode. Please either use the "
            "'same' or 'different' randomness flags on vmap or perform the randomness operation out of vmap",
            lambda: vmap(lambda a: a + torch.rand(3))(torch.ones(2, 3)))
    _raises(RuntimeError, "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
            "calling .item() on a Tensor, please try to rewrite what you're doing with other operations. If error is "
            "occurring somewhere inside PyTorch internals, please file a bug report.", lambda: vmap(float)(x))
    _raises(RuntimeError, "vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
            "flow. We don't support that yet, please file an issue at https://github.com/pytorch/pytorch/issues .",
            lambda: vmap(lambda a: a if a > 0 else -a)(x))
    same = vmap(lambda a: a + torch.rand(3), randomness="same")(torch.zeros(2, 3))
    assert np.array_equal(same[0].numpy(), same[1].numpy())
    fwAD = torch.autograd.forward_ad
    _raises(RuntimeError, "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first.", lambda: fwAD.make_dual(x, x))
    with fwAD.dual_level():
        _raises(RuntimeError, "Nested forward mode AD is not supported at the moment", fwAD.enter_dual_level)
        _raises(ValueError, "Expected primal to be floating point or complex, but got: torch.int64",
                lambda: fwAD.make_dual(torch.arange(3), x))
    AF = torch.autograd.functional
    _raises(RuntimeError, "The vector v can only be None if the user-provided function returns a single Tensor with "
            "a single element.", lambda: AF.vjp(lambda a: a.sin(), x))
    _raises(RuntimeError, "Output 0 of the user-provided function does not require gradients. The outputs must be "
            "computed in a differentiable manner from the input when running in strict mode.",
            lambda: AF.jacobian(lambda a: torch.ones(2), x, strict=True))
    _raises(NotImplementedError, "Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly "
            "implemented for `vectorize=True`.", lambda: AF.jacobian(lambda a: a, x, strategy="forward-mode"))


def test_forward_ad_dual_semantics():
    fwAD = torch.autograd.forward_ad
    x, t = torch.randn(3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        assert fwAD.unpack_dual(d).tangent is t and fwAD.unpack_dual(x).tangent is None
        y = d.clone()
        y.mul_(2.0)                                 # in place: the tangent follows
        assert np.allclose(fwAD.unpack_dual(y).tangent.numpy(), 2 * t.numpy())
        assert fwAD.unpack_dual(d.argmax()).tangent is None
        z = d * 1
    assert fwAD.unpack_dual(z).tangent is None      # dropped with the level


def test_results_detached_outside_transforms():
    from reftorch.func import grad, hessian
    x = torch.randn(3, dtype=torch.float64)
    assert not grad(lambda a: a.sin().sum())(x).requires_grad
    assert not hessian(lambda a: a.sin().sum())(x).requires_grad
    w = torch.randn(3, dtype=torch.float64, requires_grad=True)     # closed over: the result depends on it
    g = grad(lambda a: (a.sin() * w).sum())(x)
    assert g.requires_grad
    (gw,) = torch.autograd.grad(g.sum(), [w])
    assert np.allclose(gw.numpy(), np.cos(x.numpy()))


def test_gradcheck_forward_ad():
    from reftorch.autograd import gradcheck, gradgradcheck
    from reftorch.autograd.gradcheck import GradcheckError
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    f = lambda a: torch.softmax(a, 1) * a.tanh().sum(0)        # noqa: E731
    assert gradcheck(f, (x,), check_forward_ad=True, check_backward_ad=False)
    assert gradgradcheck(f, (x,), check_fwd_over_rev=True, check_rev_over_rev=False)

    class Twice(torch.autograd.Function):       # forward mode takes a Function's jvp, as torch's
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 3                            # wrong on purpose
    assert gradcheck(Twice.apply, (x,))
    with pytest.raises(GradcheckError):
        gradcheck(Twice.apply, (x,), check_forward_ad=True, check_backward_ad=False)

    class NoJvp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2
    _raises(NotImplementedError, "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD.", lambda: gradcheck(NoJvp.apply, (x,), check_forward_ad=True, check_backward_ad=False))


def test_forward_and_vmap_fields_parsed_strictly():
    from codegen.emit_forward import emit, how
    from codegen.model import RegistryError, load
    entry = ("- name: twice\n  kind: unary\n  signature: (Tensor self)\n  scalar: self + self\n  dtypes: [float]\n"
             "  derivatives: {self: grad * 2}\n  test: {ref: \"lambda x: x + x\"}\n")
    (op,) = load("ops.yaml", text=entry)
    assert how(op) == "derived" and "terms.append(self_t * 2)" in emit([op])
    (op,) = load("ops.yaml", text=entry + "  forward: self_t + self_t\n  vmap: self * 2\n")
    assert how(op) == "forward" and "return [self_t + self_t]" in emit([op]) and "'twice': twice_vmap" in emit([op])
    for extra, problem in (("  forward: other_t * 2\n", "field 'forward': names unknown variable(s) ['other_t']"),
                           ("  forward: self * 2\n", "field 'forward': names no tangent (one of ['self_t'])"),
                           ("  vmap: nope(self)\n", "field 'vmap': names unknown variable(s) ['nope']")):
        with pytest.raises(RegistryError) as info:
            load("ops.yaml", text=entry + extra)
        assert problem in str(info.value)
