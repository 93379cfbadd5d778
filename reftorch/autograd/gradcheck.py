"""gradcheck and gradgradcheck: analytical gradients against central differences, as PyTorch's.

gradcheck compares, for every differentiable output and every input that requires grad, the
Jacobian that backward computes (one vector-Jacobian product per output element, through
reftorch.autograd.grad) with the one central differences give: (f(x + eps) - f(x - eps)) / 2 eps,
perturbing one input element at a time. Outputs with more than PROJECTION_THRESHOLD elements are
compared through random projections instead (a random v: v^T J by one backward against the central
differences of v . f), and fast_mode=True compares the scalar v^T J u for random u and v.

gradgradcheck runs gradcheck on the function that maps (inputs, grad_outputs) to the gradients
autograd.grad computes with create_graph=True: the backward of the backward.
"""
from __future__ import annotations

import warnings

import numpy as np
from .._tensor import Tensor
from .._creation import from_numpy
from .._creation import tensor
from ._grad import grad as autograd_grad
import reftorch._functional as F
import reftorch.autograd.forward_ad as fwAD

PROJECTION_THRESHOLD = 256   # output elements above which the Jacobian is checked through projections
PROJECTIONS = 2              # random vectors per output in that case


class GradcheckError(RuntimeError):
    """Error raised by gradcheck and gradgradcheck."""


def _tensor_cls():
    return Tensor


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_float_tensor(x):
    return isinstance(x, _tensor_cls()) and x.dtype.differentiable


def _to_tensor(arr):
    return from_numpy(np.array(arr, order="C"))      # (ascontiguousarray would make 0-d arrays 1-d)


def _values(outputs):
    """Float64 copies of the floating outputs' values (None for the others)."""
    return [np.array(o.detach()._array(), dtype=np.float64) if _is_float_tensor(o) else None for o in outputs]


def _check_inputs(tupled):
    Tensor = _tensor_cls()
    diff = [(i, t) for i, t in enumerate(tupled) if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i, t in diff:
        if t.dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating point "
                          "or complex. ")
        for size, stride in zip(t._shape, t._strides):
            if stride == 0 and size > 1:
                raise RuntimeError(f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs "
                                   "that are non-overlapping to be able to compute the numerical gradients "
                                   "correctly. You should call .contiguous on the input before passing it to "
                                   "gradcheck.")
    return [t for _, t in diff]


def _realified(func, tupled):
    """func and its inputs with complex tensors as pairs of reals, as PyTorch's gradcheck treats them: each complex
    input that requires grad enters as a (..., 2) real leaf (view_as_complex inside the function) and each complex
    output leaves as view_as_real, so both parts are perturbed and both parts of every gradient compared (the
    conjugate Wirtinger convention makes d/d re + i d/d im the gradient of a real function)."""
    Tensor = _tensor_cls()
    marked = [isinstance(t, Tensor) and t.dtype.is_complex and t.requires_grad for t in tupled]
    args = tuple(F.view_as_real(F.resolved(t.detach())).clone().requires_grad_(True) if m else t
                 for t, m in zip(tupled, marked))

    def real_func(*xs):
        outs = func(*(F.view_as_complex(x) if m else x for x, m in zip(xs, marked)))
        many = isinstance(outs, (tuple, list))
        outs = tuple(F.view_as_real(F.resolved(o)) if isinstance(o, Tensor) and o.dtype.is_complex else o
                     for o in _as_tuple(outs))
        return outs if many else outs[0]
    return real_func, args


def _numerical(func, tupled, inputs, eps, weights=None):
    """Central-difference Jacobians. Returns jac[o][i]: (inputs[i].numel(), outputs[o].numel()) arrays,
    or with `weights` (one vector per output) jac[o][i]: (inputs[i].numel(),) arrays of w_o . d out_o/d x."""
    jac = None
    for i, t in enumerate(inputs):
        view = t._array()                       # a strided view of the input's storage: perturb in place
        for flat in range(t.numel()):
            idx = np.unravel_index(flat, t._shape) if t._shape else ()
            orig = view[idx].item()
            view[idx] = orig - eps
            lo = _values(_as_tuple(func(*tupled)))
            view[idx] = orig + eps
            hi = _values(_as_tuple(func(*tupled)))
            view[idx] = orig
            if jac is None:
                jac = [[None] * len(inputs) for _ in lo]
            for o, (a, b) in enumerate(zip(lo, hi)):
                if a is None:
                    continue
                d = (b - a).reshape(-1) / (2 * eps)
                if weights is not None:
                    d = np.array([d @ weights[o]]) if weights[o] is not None else np.zeros(1)
                if jac[o][i] is None:
                    width = d.shape[0]
                    jac[o][i] = np.zeros((t.numel(), width)) if weights is None else np.zeros(t.numel())
                if weights is None:
                    jac[o][i][flat] = d
                else:
                    jac[o][i][flat] = d[0]
    return jac


def _vjp(output, inputs, v):
    """v^T d output / d inputs for each input (zeros for inputs the output does not depend on)."""
    g = _to_tensor(v.reshape(output._shape).astype(output.dtype.np))
    grads = autograd_grad([output], inputs, [g], retain_graph=True, allow_unused=True)
    out = []
    for t, gi in zip(inputs, grads):
        if gi is None:
            out.append(np.zeros(t.numel()))
        else:
            if tuple(gi._shape) != tuple(t._shape):
                raise GradcheckError(f"Gradient has incorrect size: got {list(gi._shape)} for an input of shape "
                                     f"{list(t._shape)}")
            if gi.dtype is not t.dtype:
                raise GradcheckError(f"Gradient has dtype mismatch: {gi.dtype} for an input of dtype {t.dtype}")
            out.append(np.array(gi.detach()._array(), dtype=np.float64).reshape(-1))
    return out


def _fmt(a):
    return repr(tensor(np.asarray(a), dtype=None))


def _mismatch(o, i, numerical, analytical, extra=""):
    return (f"Jacobian mismatch for output {o} with respect to input {i},\n"
            f"numerical:{_fmt(numerical)}\nanalytical:{_fmt(analytical)}\n{extra}")


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
              fast_mode=False, masked=None):
    """Check the gradients of func at inputs against finite differences (use float64 inputs).

    Returns True when every (output, input) Jacobian agrees within atol + rtol * |numerical|; else
    raises GradcheckError (or returns False with raise_exception=False)."""
    func, tupled = _realified(func, _as_tuple(inputs))
    diff_inputs = _check_inputs(tupled)
    outputs = _as_tuple(func(*tupled))
    if check_forward_ad and not _forward_check(func, tupled, diff_inputs, outputs, eps, atol, rtol, raise_exception):
        return False
    if not check_backward_ad:
        return True
    rng = np.random.default_rng(0)
    for o in outputs:
        if o is not None and not isinstance(o, _tensor_cls()):
            raise GradcheckError(f"gradcheck expects func to return Tensors, got {type(o).__name__}")
    float_out = [o for o in outputs if _is_float_tensor(o)]
    if not float_out:
        return _fail("gradcheck expects at least one floating point output of func", raise_exception)

    big = sum(o.numel() for o in float_out) > PROJECTION_THRESHOLD
    if fast_mode:
        return _fast(func, tupled, diff_inputs, outputs, eps, atol, rtol, raise_exception, rng)
    if big:
        return _projected(func, tupled, diff_inputs, outputs, eps, atol, rtol, raise_exception, rng)

    numerical = _numerical(func, tupled, diff_inputs, eps)
    for oi, out in enumerate(outputs):
        if not _is_float_tensor(out):
            continue
        m = out.numel()
        if not out.requires_grad:
            for ii, t in enumerate(diff_inputs):
                n = numerical[oi][ii] if numerical else None
                if n is not None and n.size and not np.allclose(n, 0.0, rtol=rtol, atol=atol):
                    return _fail("Numerical gradient for function expected to be zero", raise_exception)
            continue
        analytical = [np.zeros((t.numel(), m)) for t in diff_inputs]
        for j in range(m):
            v = np.zeros(m)
            v[j] = 1.0
            for ii, g in enumerate(_vjp(out, diff_inputs, v)):
                analytical[ii][:, j] = g
        if m and nondet_tol >= 0:                      # backward must be reentrant: the same answer twice
            v = np.zeros(m)
            v[m - 1] = 1.0
            again = _vjp(out, diff_inputs, v)
            for ii, g in enumerate(again):
                if np.max(np.abs(g - analytical[ii][:, m - 1]), initial=0.0) > nondet_tol:
                    return _fail("Backward is not reentrant, i.e., running backward with same input and "
                                 "grad_output multiple times gives different values, although analytical gradient "
                                 "matches numerical gradient.The tolerance for nondeterminism was "
                                 f"{nondet_tol}.", raise_exception)
        for ii, t in enumerate(diff_inputs):
            n = numerical[oi][ii] if numerical else np.zeros((t.numel(), m))
            if n is None:
                n = np.zeros((t.numel(), m))
            a = analytical[ii]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                return _fail(_mismatch(oi, ii, n, a), raise_exception)
    return True


def _jvp_columns(func, tupled, diff_inputs, ii):
    """The forward-AD Jacobian of every output with respect to diff_inputs[ii]: one JVP per element, the
    input made dual with a unit tangent. jac[o]: (input numel, output numel), None for non-float outputs."""
    t = diff_inputs[ii]
    cols = None
    for flat in range(t.numel()):
        e = np.zeros(t.numel())
        e[flat] = 1.0
        with fwAD.dual_level():
            args = [fwAD.make_dual(x, _to_tensor(e.reshape(t._shape).astype(t.dtype.np))) if x is t else x
                    for x in tupled]
            outs = _as_tuple(func(*args))
            tans = [fwAD.unpack_dual(o).tangent if _is_float_tensor(o) else None for o in outs]
            vals = [None if not _is_float_tensor(o) else np.zeros(o.numel()) if tg is None else
                    np.array(tg.detach()._array(), dtype=np.float64).reshape(-1) for o, tg in zip(outs, tans)]
        if cols is None:
            cols = [None if v is None else np.zeros((t.numel(), v.size)) for v in vals]
        for o, v in enumerate(vals):
            if v is not None:
                cols[o][flat] = v
    return cols or []


def _forward_check(func, tupled, diff_inputs, outputs, eps, atol, rtol, raise_exception):
    """check_forward_ad: the Jacobian from forward-mode AD (JVPs of unit tangents) against finite differences."""
    numerical = _numerical(func, tupled, diff_inputs, eps)
    for ii, t in enumerate(diff_inputs):
        for oi, a in enumerate(_jvp_columns(func, tupled, diff_inputs, ii)):
            if a is None:
                continue
            n = numerical[oi][ii] if numerical and numerical[oi][ii] is not None else np.zeros_like(a)
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                return _fail(_mismatch(oi, ii, n, a, "(the analytical Jacobian from forward-mode AD)\n"),
                             raise_exception)
    return True


def _projected(func, tupled, diff_inputs, outputs, eps, atol, rtol, raise_exception, rng):
    """Large outputs: compare v^T J (one backward) with central differences of v . f, for random v."""
    for _ in range(PROJECTIONS):
        weights = [rng.standard_normal(o.numel()) if _is_float_tensor(o) else None for o in outputs]
        numerical = _numerical(func, tupled, diff_inputs, eps, weights)
        for oi, out in enumerate(outputs):
            if weights[oi] is None:
                continue
            analytical = _vjp(out, diff_inputs, weights[oi]) if out.requires_grad else \
                [np.zeros(t.numel()) for t in diff_inputs]
            for ii, t in enumerate(diff_inputs):
                n = numerical[oi][ii] if numerical and numerical[oi][ii] is not None else np.zeros(t.numel())
                if not np.allclose(analytical[ii], n, rtol=rtol, atol=atol):
                    return _fail(_mismatch(oi, ii, n, analytical[ii],
                                           "(output too large for a full Jacobian: both sides are v^T J for a "
                                           "random vector v)\n"), raise_exception)
    return True


def _fast(func, tupled, diff_inputs, outputs, eps, atol, rtol, raise_exception, rng):
    """fast_mode: compare v^T J u (random u, v) from one backward and one pair of forward calls."""
    us = [rng.standard_normal(t.numel()) for t in diff_inputs]
    for ii, t in enumerate(diff_inputs):
        view = t._array()
        orig = np.array(view)
        u = us[ii].reshape(t._shape)
        view[...] = orig - eps * u
        lo = _values(_as_tuple(func(*tupled)))
        view[...] = orig + eps * u
        hi = _values(_as_tuple(func(*tupled)))
        view[...] = orig
        for oi, out in enumerate(outputs):
            if lo[oi] is None:
                continue
            v = rng.standard_normal(out.numel())
            numerical = float(((hi[oi] - lo[oi]).reshape(-1) / (2 * eps)) @ v)
            analytical = float(_vjp(out, diff_inputs, v)[ii] @ us[ii]) if out.requires_grad else 0.0
            if not np.isclose(analytical, numerical, rtol=rtol, atol=atol):
                return _fail(_mismatch(oi, ii, numerical, analytical,
                                       "The above quantities relating the numerical and analytical jacobians are "
                                       "computed in fast mode: v^T J u for random vectors u and v.\n"),
                             raise_exception)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """Check second derivatives: gradcheck of (inputs, grad_outputs) -> autograd.grad(..., create_graph=True).

    Random grad_outputs (float64, requires_grad) are drawn when none are given."""
    tupled = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = [o for o in _as_tuple(func(*tupled)) if _is_float_tensor(o) and o.requires_grad]
        rng = np.random.default_rng(1)
        grad_outputs = []
        for o in outputs:
            values = rng.uniform(-1, 1, o._shape).astype(o.dtype.np)
            if gen_non_contig_grad_outputs and values.ndim:
                g = from_numpy(np.repeat(values[..., None], 2, axis=-1)[..., 0])   # a strided view
            else:
                g = _to_tensor(values)
            grad_outputs.append(g.requires_grad_(True))
    tupled_grads = _as_tuple(grad_outputs)
    n_grads = len(tupled_grads)
    if not (check_rev_over_rev or check_fwd_over_rev):
        return True

    def new_func(*args):
        input_args = args[:-n_grads] if n_grads else args
        gouts = args[-n_grads:] if n_grads else ()
        outs = [o for o in _as_tuple(func(*input_args)) if _is_float_tensor(o) and o.requires_grad]
        diff_in = [x for x in input_args if isinstance(x, _tensor_cls()) and x.requires_grad]
        grads = autograd_grad(outs, diff_in, list(gouts), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    # forward over reverse: the backward's Jacobian by forward-mode AD (check_forward_ad of the backward)
    return gradcheck(new_func, tupled + tupled_grads, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception,
                     nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev,
                     fast_mode=fast_mode, masked=masked)
