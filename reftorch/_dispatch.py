"""The dispatcher's entry: every op of ops.yaml comes in here (the generated wrappers in kernels/api.py call
call / call_inplace / call_out / composite ...), and goes to the path of its kind -- none per op.

    call(name, tensors, scalars)
      -> interceptors, behind one check (reftorch/_intercept.py: autocast, compile's tracer, reference mode,
         a profiler)
      -> the kind's handler: elementwise (_elementwise.py: the op's plan, built once per argument signature),
         reduction / argreduction / scan (_reduction.py), array ops and views (_array.py)
      -> the back end of the arguments' device (_backend.py: cpu in _cpu.py, cuda in _cuda_dispatch.py, meta)
    and back in run(), the one place an out-of-place op is recorded: autograd's record() (autograd/record.py)
    builds its node when grad mode is on and an input requires grad. Handlers compute and never record.

In-place forms, out= and view_ ops are in _inplace.py, foreach ops in _foreach.py, argument handling shared by
every kind and device in _args.py, the per-op specs (from ops.yaml) in _spec.py.
"""
from __future__ import annotations

import reftorch._autocast as _autocast
import reftorch._backend as _backend
import reftorch._chalf as _chalf
import reftorch._conj as _conj
import reftorch._cuda_dispatch as _cuda_d
import reftorch._functional as _functional
import reftorch._intercept as _intercept
import reftorch._reference as _reference
from ._array import array, view
from ._cpu import BLOCK_MIN, PARALLEL_MIN, get_num_threads, run_elementwise, set_num_threads  # noqa: F401
from ._elementwise import _elementwise, _plan_for, elementwise, fused  # noqa: F401
from ._foreach import foreach
from ._inplace import call_out, composite_inplace, inplace, view_inplace  # noqa: F401
from ._reduction import argreduction, reduction, scan
from ._spec import SPECS, PROMOTED  # noqa: F401
from ._tensor import Tensor
import reftorch.autograd.grad_mode as grad_mode
from .autograd.graph import OpNode
from .autograd.record import complex_grad_refused, record
import reftorch.kernels.api as _api
import reftorch.kernels.composites as _composites

_requires_grad = Tensor.__dict__["requires_grad"].__get__   # the raw slot (bind() adds a property later)
HANDLERS = {"unary": elementwise, "binary": elementwise, "ternary": elementwise, "reduction": reduction,
            "argreduction": argreduction, "scan": scan, "array": array, "view": view}


_forward = None     # reftorch/autograd/forward_ad.py's hook while a dual level is open (tangent propagation)


def call(name, tensors, scalars):
    spec = SPECS[name]
    if spec.plans is not None and _intercept.tracer is None and not _autocast.state.any and \
            not _reference.enabled and _intercept.profiler is None and not _cuda_d.used and _forward is None and \
            not _conj.used:
        # elementwise on cpu, nothing intercepting (_intercept.active(), inlined): the op's plan
        plan = _plan_for(spec, tensors)
        out = plan.run(tensors, scalars) if plan is not None else _elementwise(spec, tensors, scalars)
        if spec.differentiable and grad_mode.state.enabled:
            for t in tensors:       # (_record_result's test inlined: the commonest call of all records nothing)
                if isinstance(t, Tensor) and _requires_grad(t):
                    record(spec, tensors, scalars, (out,))
                    break
        return out
    if _forward is not None:
        return _forward.call(spec, tensors, scalars, _call_spec)
    return _call_spec(spec, tensors, scalars)


def _call_spec(spec, tensors, scalars):
    if _conj.used and spec.kind != "view":      # conjugate/negative views are read resolved (reftorch/_conj.py)
        tensors = _conj.resolve_args(tensors)
        if _chalf.involved(tensors):            # complex32: computed through complex64 (reftorch/_chalf.py)
            return _chalf.call(spec, tensors, scalars, _call_spec)
    if _intercept.active():
        return _intercept.intercept(spec, run, tensors, scalars)
    return run(spec, tensors, scalars)


def run(spec, tensors, scalars):
    """The op computed by its kind's handler, then recorded: autograd sits above the handlers, and this is the
    one place an out-of-place op becomes a graph node (in-place ops: run_inplace)."""
    out = HANDLERS[spec.kind](spec, tensors, scalars)
    if spec.differentiable and grad_mode.state.enabled:
        _record_result(spec, tensors, scalars, out)
    return out


def _record_result(spec, tensors, scalars, out):
    for t in tensors:
        if isinstance(t, Tensor) and _requires_grad(t):
            outs = out if isinstance(out, tuple) else (out,)
            if _cuda_d.used:        # a cpu 0-d input of a cuda op reaches its node through the device move
                tensors = _cuda_d.moved_inputs(tensors, outs)
            record(spec, tensors, scalars, outs)
            return


def call_inplace(name, tensors, scalars):
    spec = SPECS[name]
    if _forward is not None:
        return _forward.call_inplace(spec, tensors, scalars, _call_inplace_spec, _call_spec)
    return _call_inplace_spec(spec, tensors, scalars)


def _call_inplace_spec(spec, tensors, scalars):
    if _conj.used:      # reftorch/_conj.py: a conjugate/negative view written through, such arguments read resolved
        dest = tensors[0]
        if isinstance(dest, Tensor) and (dest._conj or dest._neg):
            return _conj.write_through(dest, lambda: _call_spec(spec, tensors, scalars), tensors[1:])
        tensors = _conj.resolve_args(tensors)
        if _chalf.involved(tensors):        # complex32 (reftorch/_chalf.py)
            if _chalf.is_chalf(dest):
                return _chalf.call_inplace(spec, tensors, scalars, _call_spec)
            tensors = [_chalf.up(t) for t in tensors]
    return _intercept.inplace(spec.name, spec, run_inplace, tensors, scalars)


def run_inplace(spec, tensors, scalars):
    """The in-place op computed by its handler, then recorded as self's new history (the one place an
    elementwise in-place op is recorded). The node reads self as it was: a copy, taken before the write, when a
    formula saves self."""
    self = tensors[0]
    if not (spec.differentiable and grad_mode.state.enabled and isinstance(self, Tensor)) or \
            not any(isinstance(t, Tensor) and _requires_grad(t) for t in tensors):
        return inplace(spec, tensors, scalars)
    saved = list(tensors)
    if "self" in spec.saves:
        saved[0] = c = _backend.clone(self)
        c.requires_grad = _requires_grad(self)
        c.grad_fn, c._output_nr, c._accum = self.grad_fn, self._output_nr, self._accum
    inplace(spec, tensors, scalars)
    if _cuda_d.used:        # a cpu 0-d input reaches the node through its device move, as out of place
        saved = _cuda_d.moved_inputs(saved, (self,))
    record(spec, saved, scalars, (self,), inplace=True)
    return self


def call_foreach(name, lists, scalars):
    _intercept.note_inplace(name)
    return foreach(SPECS[name], lists, scalars)


def composite(name, *args, **kwargs):
    """An op defined by other ops (ops.yaml `composite: true`): its generated body over reftorch._functional."""
    spec = SPECS[name]
    if spec.rejects:        # PyTorch's refusals by input dtype (ops.yaml `rejects`), before the body runs
        spec.check_inputs([a for a in args if isinstance(a, Tensor)])
    if not spec.complex_grad and grad_mode.state.enabled and \
            any(isinstance(a, Tensor) and a.dtype.is_complex and a.requires_grad for a in args):
        raise complex_grad_refused(name)
    policy = spec.autocast
    if _autocast.state.any and policy is not None:
        keep = _autocast.kept(policy, args, kwargs)
        if keep is not None:        # `autocast: keep`: the body's own ops see no autocast (a native kernel)
            with _autocast.suspended(keep):
                return getattr(_composites, name)(_functional, *args, **kwargs)
        args, kwargs = _autocast.cast_kwargs(policy, args, kwargs)
    return getattr(_composites, name)(_functional, *args, **kwargs)


def named_composite(node_key, name, *args, **kwargs):
    """A composite whose results PyTorch gives a node name of their own (ops.yaml `grad_fn`): the nodes its body
    recorded last, for its results, are named by node_key ("op#Name", which reftorch/autograd/graph.py reads)."""
    out = composite(name, *args, **kwargs)
    if not grad_mode.state.enabled:
        return out
    given = [a for v in (*args, *kwargs.values()) for a in (v if isinstance(v, (list, tuple)) else (v,))]
    inputs = {id(a.grad_fn) for a in given if isinstance(a, Tensor)}
    for o in (out if isinstance(out, (list, tuple)) else (out,)):
        node = o.grad_fn if isinstance(o, Tensor) else None
        if node.__class__ is OpNode and id(node) not in inputs:
            node.op = node_key
    return out


def dim_alias(name, dim, unset, axis):
    """`axis=`, PyTorch's alias of `dim`: the dim to use (dim itself must not be given as well)."""
    if not (dim is unset or (dim.__class__ is int and dim == unset)):
        raise TypeError(f"{name}() got an unexpected keyword argument 'axis'")
    return axis


def missing_arguments(name, *given):
    """Python's error for the required arguments a wrapper with axis= left unset (_REQUIRED)."""
    missing = [n for n, v in given if v is _api._REQUIRED]
    raise TypeError(f"{name}() missing {len(missing)} required positional arguments: "   # (PyTorch's plural)
                    + ", ".join(f'"{n}"' for n in missing))


autocast_promotes = _autocast.promotes     # (the generated wrappers' checks: codegen/emit_api.py _checks)


def check_tensor_list(name, arg, position, value):
    """PyTorch's argument parser on a Tensor[] argument: a list or tuple of tensors, nothing else."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name}(): argument '{arg}' (position {position + 1}) must be tuple of Tensors, not "
                        f"{type(value).__name__}")
    for i, t in enumerate(value):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {position}, but got {type(t).__name__}")


def values_for_check(t):
    """t's values as a NumPy array, read by library code only to validate arguments (nll_loss's target
    bounds): not a graph break while reftorch.compile traces, and its replay does not repeat the check."""
    tracer = _intercept.tracer
    if tracer is None:
        return t.cpu().numpy()
    tracer.depth += 1
    try:
        return t.cpu().numpy()
    finally:
        tracer.depth -= 1
