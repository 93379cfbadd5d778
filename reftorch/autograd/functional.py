"""torch.autograd.functional: Jacobians, Hessians and their products with vectors, for functions of tensors.

Each function runs `func` on fresh handles of the inputs (connected to them with create_graph=True, detached
otherwise, as PyTorch's _grad_preprocess) and differentiates with autograd.grad; JVPs use the double-backward
trick (PyTorch's), or forward-mode AD for jacobian(strategy="forward-mode"). Results are detached unless
create_graph. vectorize=True gives the same values (PyTorch batches the VJPs; here they run one by one) and
is what strategy="forward-mode" requires, as in PyTorch.
"""
from __future__ import annotations

from .._tensor import Tensor
import reftorch.autograd.forward_ad as fwAD
import reftorch.autograd.grad_mode as grad_mode
from .engine import run_backward
import reftorch._functional as F


def _grad(outputs, inputs, grad_outputs, create_graph=False, retain_graph=None):
    """autograd.grad with allow_unused (the package's function, without its argument handling)."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return run_backward([o for o, _ in pairs], [g for _, g in pairs],
                        create_graph if retain_graph is None else retain_graph, create_graph, inputs=tuple(inputs),
                        allow_unused=True, accumulate=False)


def _as_tuple(x, what, fn):
    if isinstance(x, Tensor):
        return False, (x,)
    if isinstance(x, (tuple, list)) and all(isinstance(t, Tensor) for t in x):
        return True, tuple(x)
    if what == "inputs":
        msg = f"The inputs given to {fn} must be either a Tensor or a tuple of Tensors but the given inputs has type"
    elif what == "outputs":
        msg = (f"The outputs of the user-provided function given to {fn} must be either a Tensor or a tuple of "
               "Tensors but the given outputs of the user-provided function has type")
    else:
        msg = f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but the given {what} has type"
    bad = x if not isinstance(x, (tuple, list)) else next(t for t in x if not isinstance(t, Tensor))
    raise TypeError(f"{msg} {type(bad)}.")


def _untuple(res, is_tuple):
    return res if is_tuple else res[0]


def _preprocess(inputs, create_graph):
    """Handles of the inputs that require grad (views keeping history under create_graph, else detached)."""
    out = []
    for t in inputs:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t))
        else:
            out.append(t.detach().requires_grad_(True))
    return tuple(out)


def _postprocess(res, create_graph):
    if create_graph:
        return res
    return tuple(None if r is None else (tuple(x.detach() for x in r) if isinstance(r, tuple) else r.detach())
                 for r in res)


def _check_requires_grad(outputs, strict):
    if not strict:
        return
    for i, o in enumerate(outputs):
        if not o.requires_grad:
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                               "must be computed in a differentiable manner from the input when running in strict "
                               "mode.")


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}." if
                           is_other_tuple else f"The given v should contain a single Tensor.")
    for a, b in zip(v, other):
        if tuple(a._shape) != tuple(b._shape):
            raise RuntimeError(f"v has invalid size: should be torch.Size({list(b._shape)}) but got "
                               f"torch.Size({list(a._shape)}).")


def _fill_zeros(grads, refs, strict, create_graph, stage):
    out = []
    for i, (g, r) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                if stage == "back":
                    raise RuntimeError(f"The gradient with respect to input {i} is independent of the inputs of the "
                                       "user-provided function. This is not allowed in strict mode.")
                if stage == "back_trick":
                    raise RuntimeError(f"The gradient with respect to the input is independent of entry {i} in the "
                                       "grad_outputs when using the double backward trick to compute forward mode "
                                       "gradients. This is not allowed in strict mode.")
                if stage == "double_back":
                    raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                       "This is not allowed in strict mode.")
                raise RuntimeError(f"The hessian of the user-provided function is independent of entry {i} in the grad "
                                   "_jacobian. This is not allowed in strict mode as it prevents from using the "
                                   "double backward trick to replace forward mode AD.")
            g = r.new_zeros(r._shape)
        out.append(g)
    return tuple(out)


def _ones_if_none(v, refs, what, fn):
    if v is not None:
        return _as_tuple(v, "v", fn)[1]
    if len(refs) != 1 or refs[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if the {what} a single Tensor with a single element.")
    return (refs[0].new_ones(refs[0]._shape),)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T J)."""
    with grad_mode.enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _preprocess(inputs, create_graph)
        is_out_tuple, outputs = _as_tuple(func(*inputs), "outputs", "vjp")
        _check_requires_grad(outputs, strict)
        v = _ones_if_none(v, outputs, "user-provided function returns", "vjp")
        _validate_v(v, outputs, is_out_tuple)
        grads = _grad(outputs, inputs, v, create_graph=create_graph)
        vjp_ = _fill_zeros(grads, inputs, strict, create_graph, "back")
    outputs = _postprocess(outputs, create_graph)
    return _untuple(outputs, is_out_tuple), _untuple(_postprocess(vjp_, create_graph), is_in_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), J v), by the double-backward trick."""
    with grad_mode.enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _preprocess(inputs, create_graph)
        v = _ones_if_none(v, inputs, "input to the user-provided function is", "jvp")
        _validate_v(v, inputs, is_in_tuple)
        is_out_tuple, outputs = _as_tuple(func(*inputs), "outputs", "jvp")
        _check_requires_grad(outputs, strict)
        us = tuple(o.new_zeros(o._shape).requires_grad_(True) for o in outputs)
        grads = _grad(outputs, inputs, us, create_graph=True)
        _fill_zeros(grads, inputs, strict, create_graph, "back_trick")
        pairs = [(g, x) for g, x in zip(grads, v) if g is not None]
        res = _grad([g for g, _ in pairs], us, [x for _, x in pairs], create_graph=create_graph) if pairs else \
            (None,) * len(us)
        jvp_ = _fill_zeros(res, outputs, strict, create_graph, "back_trick")
    return _untuple(_postprocess(outputs, create_graph), is_out_tuple), \
        _untuple(_postprocess(jvp_, create_graph), is_out_tuple)


def _check_strategy(strategy, create_graph, strict, vectorize, fn="jacobian"):
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strict and vectorize:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not supported "
                           "together. Please either set `strict=False` or `vectorize=False`.")
    if strategy == "forward-mode":
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                      "only implemented for `vectorize=True`.")
        if create_graph:
            raise NotImplementedError(f"torch.autograd.functional.{fn}: `create_graph=True` and "
                                      '`strategy="forward-mode"` are not supported together (yet). Please either set '
                                      '`create_graph=False` or `strategy="reverse-mode"`.')


def _jacobian_reverse(outputs, inputs, create_graph, strict):
    jac = []
    for i, out in enumerate(outputs):
        rows = [[] for _ in inputs]
        flat = out.reshape(-1)
        for j in range(flat.numel()):
            gs = _grad([flat[j]], inputs, [flat[j].new_ones(())], create_graph=create_graph, retain_graph=True) \
                if out.requires_grad else (None,) * len(inputs)
            for k, (g, x) in enumerate(zip(gs, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {k}. "
                                           "This is not allowed in strict mode.")
                    g = x.new_zeros(x._shape)
                rows[k].append(g)
        jac.append(tuple(_stack_rows(r, out, x) for r, x in zip(rows, inputs)))
    return tuple(jac)


def _stack_rows(rows, out, x):
    if not rows:
        return x.new_zeros(tuple(out._shape) + tuple(x._shape))
    return F.stack(rows).reshape(tuple(out._shape) + tuple(x._shape))


def _jacobian_forward(func, inputs):
    """Columns by forward-mode AD: one JVP per input element (a unit tangent)."""
    cols = None
    for k, x in enumerate(inputs):
        n = x.numel()
        per = []
        for j in range(n):
            e = F.zeros(n, dtype=x.dtype, device=x.device)
            e[j] = 1.0
            with fwAD.dual_level():
                args = [fwAD.make_dual(y, e.reshape(x._shape)) if i == k else y for i, y in enumerate(inputs)]
                _, outs = _as_tuple(func(*args), "outputs", "jacobian")
                per.append([_tangent(o) for o in outs])
        if cols is None:
            with grad_mode.no_grad():
                _, outs = _as_tuple(func(*inputs), "outputs", "jacobian")
            cols = [[None] * len(inputs) for _ in outs]
            shapes = [tuple(o._shape) for o in outs]
        for i, shape in enumerate(shapes):
            cols[i][k] = F.stack([p[i] for p in per], dim=-1).reshape(shape + tuple(x._shape)) if per else \
                F.zeros(shape + tuple(x._shape), dtype=x.dtype)
    return tuple(tuple(c) for c in cols), outs


def _tangent(o):
    t = fwAD.unpack_dual(o).tangent
    return o.new_zeros(o._shape) if t is None else t


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: shape output.shape + input.shape per (output, input)."""
    _check_strategy(strategy, create_graph, strict, vectorize)
    is_in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if strategy == "forward-mode":
        jac, outputs = _jacobian_forward(func, tuple(t.detach() for t in inputs))
        is_out_tuple = not isinstance(func(*inputs), Tensor)
    else:
        with grad_mode.enable_grad():
            inputs = _preprocess(inputs, create_graph)
            is_out_tuple, outputs = _as_tuple(func(*inputs), "outputs", "jacobian")
            _check_requires_grad(outputs, strict)
            jac = _jacobian_reverse(outputs, inputs, create_graph, strict)
        if not create_graph:
            jac = tuple(tuple(b.detach() for b in row) for row in jac)
    if not is_out_tuple:
        return _untuple(jac[0], is_in_tuple)
    return tuple(_untuple(row, is_in_tuple) for row in jac)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar func at inputs: shape input_i.shape + input_j.shape per pair."""
    is_in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) if not t.requires_grad else t for t in inp)
        with grad_mode.enable_grad():
            _, out = _as_tuple(func(*inp), "outputs", "hessian")
            if len(out) != 1 or out[0].numel() != 1:
                raise RuntimeError("The Tensor returned by the function given to hessian should contain a single "
                                   "element")
            _check_requires_grad(out, strict)
            gs = _grad([out[0].reshape(())], inp, [out[0].new_ones(())], create_graph=True)
        for i, g in enumerate(gs):
            if g is None and strict:
                raise RuntimeError(f"While computing the hessian, found that the jacobian of the user-provided "
                                   f"function with respect to input {i} is independent of the input. This is not "
                                   "allowed in strict mode. You should ensure that your function is twice "
                                   "differentiable and that the jacobian depends on the inputs (this would be violated "
                                   "by a linear function for example).")
        return tuple(x.new_zeros(x._shape) if g is None else g for g, x in zip(gs, inp))

    res = jacobian(jac_func, inputs, create_graph, strict, vectorize, outer_jacobian_strategy)
    res = res if isinstance(res, tuple) else (res,)
    if not is_in_tuple:
        return res[0] if isinstance(res[0], Tensor) else res[0][0]
    return res


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T H) for a scalar func."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), H v) for a scalar func (H v = (v^T H)^T: the Hessian is symmetric)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(func, inputs, v, create_graph, strict, fn):
    with grad_mode.enable_grad():
        is_in_tuple, inputs = _as_tuple(inputs, "inputs", fn)
        inputs = _preprocess(inputs, create_graph)
        v = _ones_if_none(v, inputs, "input to the user-provided function is", fn)
        _validate_v(v, inputs, is_in_tuple)
        is_out_tuple, outputs = _as_tuple(func(*inputs), "outputs", fn)
        if is_out_tuple or outputs[0].numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain a single element"
                               if not is_out_tuple else f"The function given to {fn} should return a single Tensor")
        _check_requires_grad(outputs, strict)
        out = outputs[0]
        jac = _grad([out], inputs, [out.new_ones(out._shape)], create_graph=True)
        jac = _fill_zeros(jac, inputs, strict, create_graph, "double_back")
        pairs = [(j, x) for j, x in zip(jac, v) if j.requires_grad]
        res = _grad([j for j, _ in pairs], inputs, [x for _, x in pairs], create_graph=create_graph) if pairs else \
            (None,) * len(inputs)
        prod = _fill_zeros(res, inputs, strict, create_graph, "double_back_trick")
    return _postprocess(outputs, create_graph)[0], _untuple(_postprocess(prod, create_graph), is_in_tuple)
