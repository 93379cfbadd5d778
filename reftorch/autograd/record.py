"""record(): the one place an op call becomes a graph node.

The dispatcher computes; when grad mode is on and a differentiable input requires grad, the op's path calls
record(spec, inputs, scalars, outputs) once with the call's inputs (Python numbers among them are saved as the
0-d tensors of their own precision that PyTorch's double Scalar is). The node is built with graph.py's
constructors (OpNode, SavedTensor, gradient_edge): a field added there is never stale here. What each
formula reads comes from the spec: save_plan (worked out once per op, reftorch/_spec.py) for the common case,
a lookup by argument name where the op has a Tensor[] argument or is recorded in place.
"""
from __future__ import annotations

import numpy as np

import reftorch._dtype as D
from .._args import _tensor_names
from .._tensor import Storage, Tensor, _set_requires_grad_slot
from .anomaly_mode import record_trace
import reftorch.autograd.anomaly_mode as _anomaly
from .graph import NO_EDGE, OpNode, SavedTensor, gradient_edge
from .inplace import note_view, rebase_history

_PY_SCALAR_NP = {bool: np.bool_, int: np.int64, float: np.float64}  # as the dispatcher wraps Python numbers
_NP_DTYPE = {np.dtype(np.bool_): D.bool_, np.dtype(np.int64): D.int64, np.dtype(np.float64): D.float64}
_make_tensor = Tensor._make
_number_tensors = {}    # (type, value) -> the 0-d tensor a node saves for a Python number argument


def number_tensor(v):
    """Python number v as the 0-d tensor of its own precision that a recorded node saves (PyTorch's double
    Scalar), shared between nodes (saved values are read only)."""
    key = (v.__class__, v)
    t = _number_tensors.get(key)
    if t is None or v == 0 or v != v:       # (0.0 == -0.0 and NaN != NaN: those are never shared)
        a = np.array((v,), _PY_SCALAR_NP[v.__class__])
        t = _make_tensor(Storage(a), 0, (), (), _NP_DTYPE[a.dtype])
        if len(_number_tensors) < 256:
            _number_tensors[key] = t
    return t


def complex_grad_refused(name):
    """PyTorch's error for autograd through complex results of an op outside its complex list (ops.yaml
    `complex_grad: false`): raised when the op is recorded, or for a composite when it is called."""
    return RuntimeError(f"{name} does not support automatic differentiation for outputs with complex dtype.")


def record(spec, inputs, scalars, outputs, inplace=False):
    """Attach a node to the outputs when some differentiable input requires grad. inputs: the op's tensor
    arguments in order (Tensors, Python numbers, or None for an absent optional). With inplace=True outputs[0]
    is the tensor just overwritten: the node becomes its history (autograd/inplace.py)."""
    ins, edges, meta = inputs, [], []
    live = False
    for i, t in enumerate(inputs):
        if t.__class__ in _PY_SCALAR_NP:
            if ins is inputs:
                ins = list(inputs)
            t = ins[i] = number_tensor(t)
        if isinstance(t, Tensor):
            dt = t.dtype
            meta.append((t._shape, dt))
            if dt.category >= 2:
                e = gradient_edge(t)
                if e[0] is not None:
                    live = True
                edges.append(e)
            else:
                edges.append(NO_EDGE)
        else:
            meta.append(((), None))
            edges.append(NO_EDGE)
    if not live:
        return
    if not spec.complex_grad and any(isinstance(o, Tensor) and o.dtype.is_complex for o in outputs):
        raise complex_grad_refused(spec.name)
    list_arity = None
    if spec.save_plan is not None and not inplace and len(scalars) == len(spec.scalar_names) \
            and len(ins) == len(spec.tensor_args):
        saved = _saved_by_plan(spec, ins, scalars, outputs)
    else:
        names = _tensor_names(spec, len(ins))
        saved = _saved_by_name(spec, names, ins, scalars, outputs, inplace)
        if spec.list_arg is not None:
            list_arity = [names.count(n) for n in spec.tensor_args]
    out_meta = [(outputs[0]._shape, outputs[0].dtype)] if len(outputs) == 1 else \
        [(o._shape, o.dtype) for o in outputs]      # (a comprehension is a call of its own before Python 3.12)
    node = OpNode(spec.name, spec.backward, saved, edges, meta, out_meta, list_arity)
    if _anomaly._enabled:
        record_trace(node)
    if inplace:
        rebase_history(outputs[0], node)
        return
    nr = 0
    for o in outputs:
        if o.dtype.category >= 2:
            _set_requires_grad_slot(o, True)
            o.grad_fn = node
            o._output_nr = nr
        nr += 1
    if spec.kind == "view" and outputs[0]._base is not None:
        note_view(outputs[0])


def _saved_input(x):
    """SavedTensor of an input; a wrapped number is saved unwrapped, in its own precision (not float32)."""
    if x._wrapped:
        x = Tensor._make(x._storage, x._offset, x._shape, x._strides, x.dtype, x.device)
    return SavedTensor(x)


def _saved_by_plan(spec, inputs, scalars, outputs):
    """The values the op's formulas read, found by the op's save_plan."""
    saved = {}
    for key, (how, where) in spec.save_plan:
        if how == "input":
            x = inputs[where]
            saved[key] = _saved_input(x) if isinstance(x, Tensor) else x
        elif how == "scalar":
            saved[key] = scalars[where]
        elif how == "result":
            saved[key] = SavedTensor(outputs[0], is_output=True)
        elif how == "results":
            saved[key] = [SavedTensor(o, is_output=True) for o in outputs]
        else:
            i, attr = where
            saved[key] = getattr(outputs[0] if i is None else inputs[i], attr)
    return saved


def _saved_by_name(spec, names, inputs, scalars, outputs, inplace):
    """The values the op's formulas read, looked up by argument name (a Tensor[] argument gives a list)."""
    kw = dict(zip(spec.scalar_names, scalars))

    def save(x):
        # an input sharing storage with the tensor written in place is saved at its version before the write,
        # so that using it in backward raises PyTorch's "modified by an inplace operation" error
        if inplace and x._storage is outputs[0]._storage:
            return SavedTensor(x, version=x._storage.version - 1)
        return _saved_input(x)

    saved = {}
    for key in spec.saves:
        if key == "result":
            saved[key] = SavedTensor(outputs[0], is_output=True)
        elif key == "results":
            saved[key] = [SavedTensor(o, is_output=True) for o in outputs]
        elif "." in key:
            base, attr = key.split(".")
            v = _by_name(base, spec, names, inputs, outputs)
            saved[key] = [getattr(x, attr) for x in v] if isinstance(v, list) else getattr(v, attr)
        elif key in kw:
            saved[key] = kw[key]
        else:
            v = _by_name(key, spec, names, inputs, outputs)
            saved[key] = [save(x) for x in v] if isinstance(v, list) else (save(v) if isinstance(v, Tensor) else v)
    return saved


def _by_name(name, spec, names, inputs, outputs):
    if name == "result":
        return outputs[0]
    if name == spec.list_arg:
        return [inputs[i] for i, n in enumerate(names) if n == name]
    if name in names:
        return inputs[names.index(name)]
    raise KeyError(name)
