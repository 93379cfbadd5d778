"""Recording the ops a call runs.

While a Tracer is active, `_dispatch.call` hands every op to `Tracer.call`, which runs it as usual
(the traced call IS an eager call, so its results are returned to the user) and notes the op, its
kind, its inputs (graph values, captured tensors or Python constants), its scalars and its outputs.

Reading a tensor's value from Python (`bool(t)`, `t.item()`, `t.tolist()`, `t.numpy()` ...), an
in-place op, a random number or a backward pass inside the function cannot be replayed from the
recorded ops: each one is a graph break. The tracer notes where it happened (the user's line) and,
under fullgraph=True, raises at once.

Conversions (`.to(...)`, `.cuda()`, `.cpu()`, `.double()` ...), `detach()` and `.data` make tensors without the
dispatcher: the tracer records each as a MethodSpec step, so a replay derives them from its own input instead of
reusing the traced tensor.
"""
from __future__ import annotations

import os
import sys

from .. import _dispatch
from .._tensor import Tensor

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_VALUE_READS = ("item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__index__", "__array__",
                "__complex__")
_MUTATIONS = ("__setitem__", "copy_", "zero_", "fill_", "index_put_")


class GraphBreak(RuntimeError):
    """Raised under fullgraph=True when the function cannot be captured as one graph."""


class MethodSpec:
    """A pseudo op for the Tensor methods that make a new tensor without the dispatcher: conversions (.to() /
    .cuda() / .cpu() / .double() ... , replayed as a copy to the traced result's dtype and device) and
    detach() / .data. Recorded as a step, so that a replay derives the tensor from its own input rather than
    reusing the traced one. kind "method": never fused, replayed by `run(tensors, scalars)`."""
    kind = "method"
    kernel_idx = None
    tensor_types = ("Tensor",)

    def __init__(self, name, scalar_names, fn):
        self.name, self.scalar_names, self._fn = name, scalar_names, fn

    def run(self, tensors, scalars):
        return self._fn(tensors[0], *scalars)


def _methods():
    from .. import _methods as m
    return m


CONVERT = MethodSpec("to", ("dtype", "device"), lambda t, dt, dev: _methods()._to(t, dtype=dt, device=dev, copy=True))
DETACH = MethodSpec("detach", (), lambda t: _methods()._detach(t))
DATA = MethodSpec("data", (), lambda t: _methods()._data_get(t))


class OpRecord:
    __slots__ = ("spec", "args", "scalars", "outs", "multi")

    def __init__(self, spec, args, scalars, outs, multi):
        self.spec = spec          # the dispatcher's OpSpec
        self.args = args          # per entry of `tensors`: ("v", value id) | ("c", object)
        self.scalars = scalars    # the scalar arguments as called
        self.outs = outs          # value ids of the outputs
        self.multi = multi        # the op returned a tuple


def _user_line():
    """'file:line (function)' of the innermost frame outside the reftorch package."""
    f = sys._getframe(2)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(_PKG + os.sep):
            return f"{f.f_code.co_filename}:{f.f_lineno} (in {f.f_code.co_name})"
        f = f.f_back
    return "<unknown>"


class Tracer:
    def __init__(self, fullgraph=False):
        self.fullgraph = fullgraph
        self.ops = []
        self.ids = {}            # id(tensor) -> value id
        self.values = []         # value id -> tensor (kept alive so that ids are never reused)
        self.depth = 0           # > 0 while a handler runs (its internal reads are not graph breaks)
        self.breaks = []         # reasons, each naming the user's line
        self._saved = {}

    # ------------------------------------------------------------------ values
    def add_value(self, t):
        vid = len(self.values)
        self.values.append(t)
        self.ids[id(t)] = vid
        return vid

    def _arg(self, x):
        if isinstance(x, Tensor):
            vid = self.ids.get(id(x))
            if vid is not None and self.values[vid] is x:
                return ("v", vid)
            return ("c", x)
        if isinstance(x, (list, tuple)) and any(isinstance(e, Tensor) for e in x):
            return ("l", type(x), [self._arg(e) for e in x])
        return ("c", x)

    # ------------------------------------------------------------------ the dispatcher hook
    def call(self, spec, tensors, scalars):
        if self.depth:
            return _dispatch._HANDLERS[spec.kind](spec, tensors, scalars)
        args = [self._arg(x) for x in tensors]
        self.depth += 1
        try:
            res = _dispatch._HANDLERS[spec.kind](spec, tensors, scalars)
        finally:
            self.depth -= 1
        multi = isinstance(res, tuple)
        outs = [self.add_value(o) for o in (res if multi else (res,))]
        self.ops.append(OpRecord(spec, args, tuple(scalars), outs, multi))
        return res

    def graph_break(self, what):
        if self.depth:
            return
        where = _user_line()
        msg = f"{what} at {where}"
        self.breaks.append(msg)
        if self.fullgraph:
            raise GraphBreak(f"reftorch.compile(fullgraph=True): graph break: {msg}. The function's control flow "
                             f"depends on a tensor's value (or on state the graph cannot replay); remove it, or "
                             f"compile with fullgraph=False to run the function eagerly there.")

    # ------------------------------------------------------------------ install / remove
    def __enter__(self):
        tracer = self
        for name in _VALUE_READS:
            orig = Tensor.__dict__.get(name)
            if orig is None:
                continue
            self._saved[(Tensor, name)] = orig

            def hooked(self_, *a, __orig=orig, __name=name, **k):
                tracer.graph_break(f"Tensor.{__name}() reads a tensor's value")
                return __orig(self_, *a, **k)
            setattr(Tensor, name, hooked)
        for name in _MUTATIONS:
            orig = getattr(Tensor, name, None)
            if orig is None:
                continue
            self._saved[(Tensor, name)] = Tensor.__dict__.get(name, orig)

            def mutating(self_, *a, __orig=orig, __name=name, **k):
                tracer.graph_break(f"Tensor.{__name}() writes into a tensor in place")
                tracer.depth += 1
                try:
                    return __orig(self_, *a, **k)
                finally:
                    tracer.depth -= 1
            setattr(Tensor, name, mutating)
        from .. import _creation
        orig_rng = _creation._rng
        self._saved[(_creation, "_rng")] = orig_rng

        def rng(generator, __orig=orig_rng):
            tracer.graph_break("a random number generator is used (random values cannot be baked into a graph)")
            return __orig(generator)
        _creation._rng = rng
        from .. import autograd as engine
        orig_bw = engine._run_backward
        self._saved[(engine, "_run_backward")] = orig_bw

        def run_backward(*a, __orig=orig_bw, **k):
            tracer.graph_break("a backward pass runs inside the compiled function")
            tracer.depth += 1
            try:
                return __orig(*a, **k)
            finally:
                tracer.depth -= 1
        engine._run_backward = run_backward
        # conversions (dtype, device), detach() and .data make tensors outside the dispatcher: recorded as
        # MethodSpec steps. Tensor.to is the method; .float() / .cuda() / .cpu() / .type() ... call the module's _to
        from .. import _methods

        def derived(orig, spec, scalars_of):
            def method(self_, *a, **k):
                if tracer.depth:
                    return orig(self_, *a, **k)
                tracer.depth += 1
                try:
                    res = orig(self_, *a, **k)
                finally:
                    tracer.depth -= 1
                if isinstance(res, Tensor) and res is not self_:
                    arg = tracer._arg(self_)
                    tracer.ops.append(OpRecord(spec, [arg], scalars_of(res), [tracer.add_value(res)], False))
                return res
            return method

        orig_to = _methods._to
        self._saved[(_methods, "_to")] = orig_to
        self._saved[(Tensor, "to")] = Tensor.__dict__.get("to", orig_to)
        _methods._to = Tensor.to = derived(orig_to, CONVERT, lambda r: (r.dtype, r.device))
        self._saved[(Tensor, "detach")] = Tensor.__dict__["detach"]
        Tensor.detach = derived(Tensor.__dict__["detach"], DETACH, lambda r: ())
        data = Tensor.__dict__["data"]
        self._saved[(Tensor, "data")] = data
        Tensor.data = property(derived(data.fget, DATA, lambda r: ()), data.fset)
        self._prev = _dispatch._tracer
        _dispatch._tracer = self
        return self

    def inplace(self, name):
        self.graph_break(f"in-place op '{name}_' writes into a tensor")

    def __exit__(self, *exc):
        _dispatch._tracer = self._prev
        for (owner, name), orig in self._saved.items():
            setattr(owner, name, orig)
        self._saved.clear()
        return False
