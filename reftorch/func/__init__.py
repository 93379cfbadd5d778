"""reftorch.func: function transforms (torch.func) over reverse- and forward-mode autograd.

grad / grad_and_value / vjp / jacrev run the function on fresh tracked handles of its inputs and take
autograd.grad, with create_graph whenever the result can itself be differentiated (an input or a tensor
the function reads requires grad, a transform is nested, or a dual level is open) -- so transforms compose:
grad(grad(f)), jacfwd(jacrev(f)), vmap(grad(f)). jvp / jacfwd / linearize use forward-mode AD
(reftorch.autograd.forward_ad); nested inside an open dual level (jacfwd(jacfwd(f))) they take the JVP as
the transpose of a VJP instead, which needs no second level. vmap is in _vmap.py.
"""
from __future__ import annotations

import functools

import reftorch._functional as F
from .._tensor import Tensor
from ..autograd import forward_ad as fwAD
from ..autograd import grad as _autograd_grad
from ..autograd import grad_mode
from ._common import add_ours as _add_ours, depth as _depth, finish as _finish_all, reaches_other_leaves as \
    _reaches_other_leaves
from ._pytree import tree_flatten, tree_unflatten
import reftorch.func._vmap as _vm
from ._vmap import vmap
from ._module import functional_call, stack_module_state

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize", "vmap",
           "functional_call", "stack_module_state"]




def _track(x):
    """(handle for func, tensor to differentiate with respect to): a fresh tensor requiring grad, connected to
    x's own history (and tangent) when x has one. Inside vmap it is the bottom tensor, holding every level's
    batch (autograd records there), and the handle its logical tensor."""
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
    base = _bottom(x)
    with grad_mode.enable_grad():
        y = F.expand(base, base._shape)
    if not y.requires_grad:
        y.requires_grad_(True)
        _add_ours(y)
    return _top(y), y


def _bottom(x):
    return _vm.to_bottom(x) if _vm.active() else x


def _top(x):
    return _vm.rewrap(x) if _vm.active() else x


def _keep_graph(originals, tracked, outputs):
    if not grad_mode.is_grad_enabled():
        return False
    if _depth.n > 1 or fwAD._state.level is not None:
        return True
    if any(isinstance(x, Tensor) and x.requires_grad for x in originals):
        return True
    return _reaches_other_leaves(outputs, tracked)


def _grads(outputs, tracked, cotangents, originals):
    """d outputs / d tracked against cotangents (zeros where unused), keeping the graph when it is needed."""
    keep = _keep_graph(originals, tracked, outputs)
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not pairs:
        return [F.zeros_like(t).detach() for t in tracked]
    gs = _autograd_grad([o for o, _ in pairs], tracked, [c for _, c in pairs], create_graph=keep,
                        retain_graph=True, allow_unused=True)
    return [F.zeros_like(t).detach() if g is None else g for g, t in zip(gs, tracked)]


def _finish(tree):
    """A transform's results as its caller sees them: outside every transform, tensors whose graph reaches only
    the transforms' own leaves are detached (the graph kept for nested transforms is of no use there)."""
    if _depth.n or _vm.active() or fwAD._state.level is not None:
        return tree
    return _finish_all(tree)


def _check_argnums(argnums, n):
    if isinstance(argnums, int) and not isinstance(argnums, bool):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and argnums and all(isinstance(a, int) for a in argnums):
        nums = argnums
        if len(set(nums)) != len(nums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    else:
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    for a in nums:
        if not -n <= a < n:
            raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs")
    return [a % n for a in nums]


def _split_aux(out, has_aux, api):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}(f)(*args): output of function f should be a tuple: (output, aux) if has_aux is True")
    return out


class _entered:
    """One transform running (its graphs are kept for an outer one when nested)."""

    def __enter__(self):
        _depth.n += 1

    def __exit__(self, *exc):
        _depth.n -= 1


# ------------------------------------------------------------------------------------ reverse mode

def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient of func's scalar output with respect to args[argnums], value)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        with _entered(), grad_mode.enable_grad():
            args = list(args)
            specs, tracked, originals = [], [], []
            for a in nums:
                leaves, spec = tree_flatten(args[a])
                handles, ts = zip(*[_track(x) for x in leaves]) if leaves else ((), ())
                originals += leaves
                tracked += ts
                specs.append((a, spec, len(ts)))
                args[a] = tree_unflatten(list(handles), spec)
            out = func(*args, **kwargs)
            value, aux = _split_aux(out, has_aux, "grad_and_value")
            if not isinstance(value, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(value)}")
            if value.ndim != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                                   f"with {value.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            bottom = _bottom(value)
            gs = [_top(g) for g in _grads([bottom], tracked, [F.ones_like(bottom)], originals)]
        grads, i = [], 0
        for a, spec, n in specs:
            grads.append(tree_unflatten(gs[i:i + n], spec))
            i += n
        g = grads[0] if isinstance(argnums, int) else tuple(grads)
        return _finish((g, (value, aux)) if has_aux else (g, value))
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of func's scalar output with respect to args[argnums]."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) gives one gradient per primal (a tuple)."""
    with _entered(), grad_mode.enable_grad():
        leaves, spec = tree_flatten(primals)
        handles, tracked = zip(*[_track(x) for x in leaves]) if leaves else ((), ())
        out = func(*tree_unflatten(list(handles), spec))
        out, aux = _split_aux(out, has_aux, "vjp")
        outs, out_spec = tree_flatten(out)
        for o in outs:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"vjp(f, *primals): expected f(*primals) to return only tensors, got unsupported "
                                   f"type {type(o)}")
        bottoms = [_bottom(o) for o in outs]
        keep = _keep_graph(leaves, tracked, bottoms)

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        cts, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {ct_spec!r}, primal output: {out_spec!r}")
        for o, c in zip(outs, cts):
            if tuple(c._shape) != tuple(o._shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of torch.Size({list(c._shape)}) "
                                   f"and output[0] has a shape of torch.Size({list(o._shape)}).")
        with _entered(), grad_mode.enable_grad():
            gs = _grads(bottoms, tracked, [_bottom(c) for c in cts], leaves)
        if not (keep or create_graph or _depth.n or grad_mode.is_grad_enabled() and
                any(isinstance(c, Tensor) and c.requires_grad for c in cts)):
            gs = [g.detach() for g in gs]
        return _finish(tree_unflatten([_top(g) for g in gs], spec))

    out = _finish(tree_unflatten(outs, out_spec))
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _jac_rows(outs, tracked, leaves, chunk_size):
    """d outs / d tracked, one VJP per output element (chunk_size of them at a time: values do not depend on
    it). Inside vmap on bottom tensors: their first nb dims are the levels' batches."""
    nb = len(_vm._state.levels)
    per_out = []
    for o in outs:
        ob = _bottom(o)
        n = o.numel()
        rows = [[] for _ in tracked]
        eye = F.eye(n, dtype=o.dtype, device=o.device) if n else None
        step = chunk_size or max(n, 1)
        for start in range(0, n, step):
            for k in range(start, min(n, start + step)):
                ct = F.expand(eye[k].reshape(o._shape), ob._shape)
                gs = _grads([ob], tracked, [ct], leaves)
                for r, g in zip(rows, gs):
                    r.append(g)
        per_out.append([_top(F.stack(r, dim=nb).reshape(tuple(t._shape[:nb]) + tuple(o._shape)
                                                          + tuple(t._shape[nb:]))) if r else
                        F.zeros(tuple(o._shape) + tuple(t._shape[nb:]), dtype=o.dtype) for r, t in zip(rows, tracked)])
    return per_out


def _check_chunk(chunk_size, api):
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"{api}: `chunk_size` should be greater than 0.")


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of func with respect to args[argnums] by reverse mode: shape output.shape + input.shape."""
    _check_chunk(chunk_size, "jacrev")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        with _entered(), grad_mode.enable_grad():
            args = list(args)
            specs, tracked, leaves = [], [], []
            for a in nums:
                ls, spec = tree_flatten(args[a])
                handles, ts = zip(*[_track(x) for x in ls]) if ls else ((), ())
                leaves += ls
                tracked += ts
                specs.append((spec, len(ts)))
                args[a] = tree_unflatten(list(handles), spec)
            out = func(*args, **kwargs)
            out, aux = _split_aux(out, has_aux, "jacrev")
            outs, out_spec = tree_flatten(out)
            for o in outs:
                if not isinstance(o, Tensor):
                    raise RuntimeError(f"jacrev(f, ...)(*args): expected f(*args) to return only tensors, got "
                                       f"unsupported type {type(o)}")
            jac = _jac_rows(outs, tracked, leaves, chunk_size)
        result = tree_unflatten([_by_argnums(row, specs, argnums) for row in jac], out_spec)
        return _finish((result, aux) if has_aux else result)
    return wrapper


def _by_argnums(row, specs, argnums):
    """One output's Jacobian blocks regrouped like the inputs: one tree per argnum (a tuple for tuple argnums)."""
    trees, i = [], 0
    for spec, n in specs:
        trees.append(tree_unflatten(row[i:i + n], spec))
        i += n
    return trees[0] if isinstance(argnums, int) else tuple(trees)


def hessian(func, argnums=0):
    """The Hessian of func with respect to args[argnums]: jacfwd(jacrev(func)), as in torch.func."""
    return jacfwd(jacrev(func, argnums), argnums)


# ------------------------------------------------------------------------------------ forward mode

def _jvp_flat(func, primals, tangents, strict=False):
    """(outputs, their tangents, aux-carrying raw output): forward mode when no level is open, else the
    transpose of the VJP (nested forward transforms)."""
    if fwAD._state.level is None:
        with fwAD.dual_level():
            duals = [_top(fwAD.make_dual(_bottom(p), _bottom(t))) for p, t in zip(primals, tangents)]
            raw = func(duals)
            outs, spec = tree_flatten(raw[0] if isinstance(raw, _Aux) else raw)
            _only_tensors(outs)
            bottoms = [_bottom(o) for o in outs]
            touts = [fwAD.unpack_dual(b).tangent for b in bottoms]
            if strict and any(t is None for t in touts):
                raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                                   "inputs. This is not allowed with strict=True.")
            touts = [F.zeros_like(o) if t is None else _top(t) for o, t in zip(outs, touts)]
            outs = [_top(fwAD.unpack_dual(b).primal) for b in bottoms]
        return outs, touts, spec, raw
    with _entered(), grad_mode.enable_grad():
        handles, tracked = zip(*[_track(p) for p in primals]) if primals else ((), ())
        raw = func(list(handles))
        outs, spec = tree_flatten(raw[0] if isinstance(raw, _Aux) else raw)
        _only_tensors(outs)
        bottoms = [_bottom(o) for o in outs]
        us = [F.zeros_like(b).requires_grad_(True) for b in bottoms]
        gs = _autograd_grad(bottoms, list(tracked), us, create_graph=True, allow_unused=True)
        total = None
        for g, t in zip(gs, tangents):
            if g is not None:
                term = (g * _bottom(t)).sum()
                total = term if total is None else total + term
        touts = [F.zeros_like(o) for o in outs] if total is None or not total.requires_grad else \
            [F.zeros_like(o) if j is None else _top(j) for j, o in
             zip(_autograd_grad([total], us, create_graph=True, allow_unused=True), outs)]
    return outs, touts, spec, raw


def _only_tensors(outs):
    for o in outs:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"jvp(f, primals, tangents): expected f(*args) to return only tensors, got "
                               f"unsupported type {type(o)}")


class _Aux(tuple):
    """(output, aux) of a has_aux function, told apart from an output that is a pair."""


def _structure_error(api, p_spec, t_spec):
    return RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For example, if "
                        f"primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                        f"{p_spec!r} and tangents with structure {t_spec!r}")


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J tangents[, aux]) by forward-mode AD."""
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise _structure_error(api, p_spec, t_spec)
    for x in p_leaves + t_leaves:
        if not isinstance(x, Tensor):
            raise RuntimeError(f"{api}: Expected primals to be a tuple of tensors, got {type(x)}")

    def call(duals):
        out = func(*tree_unflatten(duals, p_spec))
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
            return _Aux(out)
        return out

    outs, touts, spec, raw = _jvp_flat(call, p_leaves, t_leaves, strict)
    result = (tree_unflatten(outs, spec), tree_unflatten(touts, spec))
    return _finish(result + (raw[1],) if has_aux else result)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of func with respect to args[argnums] by forward mode: shape output.shape + input.shape."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args))
        specs, leaves = [], []
        for a in nums:
            ls, spec = tree_flatten(args[a])
            for x in ls:
                if not isinstance(x, Tensor):
                    raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
            leaves += ls
            specs.append((spec, len(ls)))

        def call(xs):
            full, i = list(args), 0
            for a, (spec, n) in zip(nums, specs):
                full[a] = tree_unflatten(xs[i:i + n], spec)
                i += n
            out = func(*full, **kwargs)
            return _Aux(_split_aux(out, True, "jacfwd")) if has_aux else out

        cols, out_spec, aux = _jacfwd_columns(call, leaves)
        result = tree_unflatten([_by_argnums(row, specs, argnums) for row in cols], out_spec)
        return _finish((result, aux) if has_aux else result)
    return wrapper


def _jacfwd_columns(call, leaves):
    """One JVP per input element (a unit tangent); blocks[o][i] of shape out.shape + leaves[i].shape."""
    per_input, outs, spec, aux = [], None, None, None
    for i, x in enumerate(leaves):
        cols = []
        n = x.numel()
        eye = F.eye(n, dtype=x.dtype, device=x.device) if n else None
        for k in range(n):
            tangents = [eye[k].reshape(x._shape) if j == i else F.zeros_like(y) for j, y in enumerate(leaves)]
            outs, touts, spec, raw = _jvp_flat(call, leaves, tangents)
            aux = raw[1] if isinstance(raw, _Aux) else None
            cols.append(touts)
        if not cols:
            outs, _, spec, raw = _jvp_flat(call, leaves, [F.zeros_like(y) for y in leaves])
            aux = raw[1] if isinstance(raw, _Aux) else None
        per_input.append(cols)
    blocks = []
    for o_i, o in enumerate(outs):
        row = []
        for x, cols in zip(leaves, per_input):
            shape = tuple(o._shape) + tuple(x._shape)
            if cols:
                row.append(F.stack([c[o_i] for c in cols], dim=-1).reshape(shape))
            else:
                row.append(F.zeros(shape, dtype=o.dtype))
        blocks.append(row)
    return blocks, spec, aux


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) is the JVP of func at primals."""
    out = func(*primals)
    p_leaves, p_spec = tree_flatten(primals)

    def jvp_fn(*tangents):
        t_leaves, t_spec = tree_flatten(tangents)
        if t_spec != p_spec:
            raise RuntimeError(f"Expected the tangents {t_spec!r} to have the same argument structure as the primals "
                               f"{p_spec!r}")
        for p, t in zip(p_leaves, t_leaves):
            if tuple(p._shape) != tuple(t._shape):
                raise RuntimeError(f"Mismatch in shape: expected tangent of shape {list(p._shape)} but got "
                                   f"{list(t._shape)}")
        return jvp(func, tuple(primals), tuple(tangents))[1]

    return out, jvp_fn
