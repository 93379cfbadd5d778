"""Recording the ops a call runs.

While a Tracer is active, `_dispatch.call` hands every op to `Tracer.call`, which runs it as usual
(the traced call IS an eager call, so its results are returned to the user) and notes the op, its
kind, its inputs (graph values, captured tensors or Python constants), its scalars and its outputs.

Reading a tensor's value from Python (`bool(t)`, `t.item()`, `t.tolist()`, `t.numpy()` ...), an in-place op
on a tensor the trace did not make, or a draw from the PCG64 stream (randint, randperm ...) cannot be replayed
from the recorded ops: each one is a graph break. rand / randn on cpu are counter-based draws, recorded as
RandomSpec steps (see Draws); an elementwise in-place op on a value the trace made is recorded out of place
(`inplace_call`).

A backward pass inside the function (`loss.backward()`, `autograd.grad`) is traced through: the engine
runs the derivative formulas of ops.yaml, whose ops are recorded like the forward's (compiled autograd),
and every write of a leaf's `.grad` (the engine's accumulation, `p.grad = None` of zero_grad) is
recorded as a SETGRAD step. `Optimizer.step()` is recorded as one OPTSTEP step (replayed as a fused
update, compile/step.py), and so is an lr scheduler's `step()` (replayed as a call of it). Accumulating into a `.grad` that already holds a tensor, create_graph=True
and an optimizer step with a closure are graph breaks. The tracer notes where it happened (the user's line) and,
under fullgraph=True, raises at once.

Conversions (`.to(...)`, `.cuda()`, `.cpu()`, `.double()` ...), `detach()` and `.data` make tensors without the
dispatcher: the tracer records each as a MethodSpec step, so a replay derives them from its own input instead of
reusing the traced tensor. Factories (`zeros`, `ones`, `full`, `arange`, `zeros_like` ...) are recorded as
FactorySpec steps too, with their arguments: a replay makes a fresh tensor, and with dynamic=True a size
computed from an input's shape (`zeros(x.shape[0])`) makes the trace shape-specific (traced again per shape).
"""
from __future__ import annotations

import os
import sys

import reftorch._creation as _creation
import reftorch._creation_random as _crand
import reftorch._dispatch as _dispatch
import reftorch._intercept as _intercept
import reftorch._layout as _L
import reftorch._args as _args
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


class FactorySpec:
    """A pseudo op for a tensor factory called from the traced function (`zeros(n)`, `ones_like(x)` ...):
    replayed by calling it again with the recorded arguments (tensor arguments from the replay's values)."""
    kind = "factory"
    kernel_idx = None
    tensor_types = ()

    def __init__(self, name, fn, kwargs):
        self.name, self._fn, self.kwargs = name, fn, kwargs
        self.scalar_names = tuple(kwargs)

    def run(self, args, scalars):
        return self._fn(*args, **self.kwargs)


class Draws:
    """The counter-based draws of one trace (rand / randn, dropout's mask), per generator: each RandomSpec
    knows where its counters start inside its generator's block. A replay takes the whole block from each
    generator at its start (`start`), so every draw gets the counters the eager call would have given it, in
    program order, whatever order the steps run in (and dead draws still advance the generator)."""

    def __init__(self):
        self.totals = {}        # id(generator) -> [generator, counters per call]
        self.now = {}           # id(generator) -> (key, first counter) of the current replay

    def add(self, gen, n):
        ent = self.totals.setdefault(id(gen), [gen, 0])
        first = ent[1]
        ent[1] += n
        return first

    def start(self):
        for k, (gen, total) in self.totals.items():
            self.now[k] = gen._counters(total)


class RandomSpec:
    """A pseudo op for rand / randn on cpu (and rand_like ... , dropout's mask): kind "random", no operands.
    Its values are the counter-based draws of _philox.py at the counters its Draws gives it in each replay;
    a fused region computes them inside its loop (compile/codegen.py), any other step calls `run`."""
    kind = "random"
    kernel_idx = None
    tensor_types = ()
    scalar_names = ()

    def __init__(self, name, gen, shape, dtype, requires_grad, draws):
        self.name, self.gen, self.shape, self.dtype, self.requires_grad = name, gen, shape, dtype, requires_grad
        self.draws = draws
        self.n = _L.numel(shape)
        self.first = draws.add(gen, self.n)

    def counters(self):
        """(key, first counter) of this draw in the current replay."""
        key, base = self.draws.now[id(self.gen)]
        return key, base + self.first

    def run(self, args=(), scalars=()):
        from .. import _philox      # imports numba (`import reftorch` stays numba-free); loaded by the trace's draw
        draw = _philox.uniform if self.name == "rand" else _philox.normal
        arr = draw(self.n, *self.counters(), self.dtype.np).reshape(self.shape)
        return _creation._finish(arr, self.dtype, None, self.requires_grad)


class SideEffect:
    """A step that changes state outside the graph's values: SETGRAD (leaf.grad = value or None; args: the
    leaf, then the value or nothing) and OPTSTEP (scalars: the optimizer; its step() runs there)."""
    kernel_idx = None
    tensor_types = ()
    scalar_names = ()

    def __init__(self, kind):
        self.kind = self.name = kind


SETGRAD = SideEffect("setgrad")
OPTSTEP = SideEffect("optstep")
GRADREAD = MethodSpec("grad", (), lambda t: t._grad)       # a leaf's .grad read by the function (an input)
GRADREAD.kind = "gradread"
FACTORIES = ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "arange",
             "linspace", "logspace", "eye", "tensor", "scalar_tensor", "as_tensor")
RANDOM = ("rand", "randn")      # counter-based draws: recorded as RandomSpec steps (rand_like ... call these)


class OpRecord:
    __slots__ = ("spec", "args", "scalars", "outs", "multi")

    def __init__(self, spec, args, scalars, outs, multi):
        self.spec = spec          # the dispatcher's OpSpec
        self.args = args          # per entry of `tensors`: ("v", value id) | ("c", object)
        self.scalars = scalars    # the scalar arguments as called
        self.outs = outs          # value ids of the outputs
        self.multi = multi        # the op returned a tuple


def _view_key(t):
    return (id(t._storage), t._offset, t._shape, t._strides, t.dtype, t.device)


def _hashable(k):
    try:
        hash(tuple(k.items()))
        return True
    except TypeError:
        return False


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
        self.aliases = {}        # (storage, offset, shape, strides, dtype) -> the first value id with them
        self.depth = 0           # > 0 while a handler runs (its internal reads are not graph breaks)
        self.breaks = []         # reasons, each naming the user's line
        self._saved = {}
        self.grad_guard = []     # (leaf, whether its .grad must be None when the function is called)
        self._grad_touched = set()   # id of leaves whose .grad this trace has written or guarded
        self.captures_step = False   # a backward or an optimizer step was recorded
        self.draws = Draws()         # the counter-based random draws recorded (RandomSpec)
        self.grad_of = {}            # id(value) -> the leaf whose .grad it is (the trace set it)
        self.n_inputs = 0            # values before this count are the function's arguments
        self.stale = set()           # value ids over memory an in-place op wrote after they were made
        self.fresh = set()           # id of the storages the trace's ops allocated (not views of others)

    # ------------------------------------------------------------------ values
    def add_value(self, t):
        vid = len(self.values)
        self.values.append(t)
        self.ids[id(t)] = vid
        self.aliases.setdefault(_view_key(t), vid)
        return vid

    def _leaf_arg(self, t):
        """The tensor itself (a leaf whose .grad a step reads or writes), never another view of its memory."""
        vid = self.ids.get(id(t))
        return ("v", vid) if vid is not None and self.values[vid] is t else ("c", t)

    def _arg(self, x):
        if isinstance(x, Tensor):
            vid = self.ids.get(id(x))
            if vid is None or self.values[vid] is not x:
                # another Tensor object over a value's memory (a saved output, unpacked for a derivative formula)
                vid = self.aliases.get(_view_key(x))
            if vid in self.stale:
                self.graph_break("a tensor is read after an in-place op wrote into its memory through another one")
            return ("v", vid) if vid is not None else ("c", x)
        if isinstance(x, (list, tuple)) and any(isinstance(e, Tensor) for e in x):
            return ("l", type(x), [self._arg(e) for e in x])
        return ("c", x)

    # ------------------------------------------------------------------ the dispatcher hook
    def call(self, spec, tensors, scalars):
        run = _dispatch.elementwise if spec.kind == "fused" else _dispatch.run
        if self.depth:
            return run(spec, tensors, scalars)
        args = [self._arg(x) for x in tensors]
        self.depth += 1
        try:
            res = run(spec, tensors, scalars)
        finally:
            self.depth -= 1
        multi = isinstance(res, tuple)
        outs = [self.add_value(o) for o in (res if multi else (res,))]
        self._note_fresh(res if multi else (res,), tensors)
        self.ops.append(OpRecord(spec, args, tuple(scalars), outs, multi))
        return res

    def _note_fresh(self, outs, tensors):
        """Outputs whose memory is none of the operands' (not a view, not an operand itself) are the trace's own."""
        mem = [x._storage for x in tensors if isinstance(x, Tensor)]
        for o in outs:
            if isinstance(o, Tensor) and not any(o._storage is m for m in mem):
                self.fresh.add(id(o._storage))

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

        def factory(name, orig):
            def make(*a, **k):
                if tracer.depth:
                    return orig(*a, **k)
                tracer.depth += 1
                try:
                    res = orig(*a, **k)
                finally:
                    tracer.depth -= 1
                if isinstance(res, Tensor):
                    args = [tracer._arg(x) for x in a]
                    if all(x[0] != "c" or not isinstance(x[1], Tensor) for x in args) and _hashable(k):
                        tracer.ops.append(OpRecord(FactorySpec(name, orig, k), args, (), [tracer.add_value(res)],
                                                   False))
                        tracer._note_fresh((res,), a)
                return res
            return make

        def random(name, orig):
            def draw(*a, generator=None, out=None, **k):
                if tracer.depth:
                    return orig(*a, generator=generator, out=out, **k)
                tracer.depth += 1
                try:
                    res = orig(*a, generator=generator, out=out, **k)
                finally:
                    tracer.depth -= 1
                if out is not None or res.device.type != "cpu":
                    tracer.graph_break(f"{name}() {'with out=' if out is not None else 'on ' + str(res.device)} "
                                       f"(random values cannot be baked into a graph)")
                    return res
                spec = RandomSpec(name, generator or _crand.default_generator, res._shape, res.dtype,
                                  res.requires_grad, tracer.draws)
                tracer.ops.append(OpRecord(spec, [], (), [tracer.add_value(res)], False))
                tracer.fresh.add(id(res._storage))
                return res
            return draw

        self.n_inputs = len(self.values)
        orig_ci = _dispatch.call_inplace
        self._saved[(_dispatch, "call_inplace")] = orig_ci
        _dispatch.call_inplace = lambda name, tensors, scalars: tracer.inplace_call(name, tensors, scalars, orig_ci)
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
        orig_rng = _crand._rng
        self._saved[(_crand, "_rng")] = orig_rng

        def rng(generator, __orig=orig_rng):
            tracer.graph_break("a random number generator is used (random values cannot be baked into a graph)")
            return __orig(generator)
        _crand._rng = rng
        from ..autograd import _grad as engine      # backward() / grad() call the engine through this name
        from ..autograd import engine as engine_mod
        orig_bw = engine._run_backward
        self._saved[(engine, "_run_backward")] = orig_bw

        def run_backward(roots, root_grads, retain_graph=False, create_graph=False, *a, __orig=orig_bw, **k):
            if tracer.depth or not create_graph:
                tracer.captures_step = tracer.captures_step or not tracer.depth
                return __orig(roots, root_grads, retain_graph, create_graph, *a, **k)
            tracer.graph_break("a backward pass with create_graph=True runs inside the compiled function")
            tracer.depth += 1
            try:
                return __orig(roots, root_grads, retain_graph, create_graph, *a, **k)
            finally:
                tracer.depth -= 1
        engine._run_backward = run_backward
        orig_acc = engine_mod._accumulate_into
        self._saved[(engine_mod, "_accumulate_into")] = orig_acc

        def accumulate_into(t, g, create_graph, steal=False, *, __orig=orig_acc):
            if tracer.depth:
                return __orig(t, g, create_graph, steal)
            if t._grad is not None or create_graph:
                tracer.graph_break("a backward pass accumulates into a .grad that already holds a tensor "
                                   "(call zero_grad() first)")
                tracer.depth += 1
                try:
                    return __orig(t, g, create_graph)
                finally:
                    tracer.depth -= 1
            tracer.guard_grad(t)
            new = g.detach().clone()            # recorded: the engine's first accumulation is a fresh copy
            t._grad = new
            tracer.grad_of[id(new)] = t
            tracer.ops.append(OpRecord(SETGRAD, [tracer._leaf_arg(t), tracer._arg(new)], (), [], False))
        engine_mod._accumulate_into = accumulate_into
        grad_prop = Tensor.__dict__["grad"]
        self._saved[(Tensor, "grad")] = grad_prop

        def get_grad(self_):
            g = grad_prop.fget(self_)
            if tracer.depth or g is None or tracer.ids.get(id(g)) is not None:
                return g
            tracer.guard_grad(self_)
            vid = tracer.add_value(g)           # an input of the graph: the leaf's .grad when replayed
            tracer.ops.append(OpRecord(GRADREAD, [tracer._leaf_arg(self_)], (), [vid], False))
            return g

        def set_grad(self_, value):
            grad_prop.fset(self_, value)
            if tracer.depth:
                return
            tracer._grad_touched.add(id(self_))
            if value is not None:
                tracer.grad_of[id(value)] = self_
            args = [tracer._leaf_arg(self_)] + ([tracer._arg(value)] if value is not None else [])
            tracer.ops.append(OpRecord(SETGRAD, args, (), [], False))
        Tensor.grad = property(get_grad, set_grad)
        from ..optim.lr_scheduler import LRScheduler
        from ..optim.optimizer import Optimizer
        classes, stack = [], [Optimizer, LRScheduler]
        while stack:
            c = stack.pop()
            classes.append(c)
            stack.extend(c.__subclasses__())
        for cls in classes:
            orig_step = cls.__dict__.get("step")
            if orig_step is None:
                continue
            self._saved[(cls, "step")] = orig_step

            def opt_step(opt, *a, __orig=orig_step, **k):
                # optimizer.step() / lr_scheduler.step(): replayed as a call of the object's step()
                if tracer.depth:
                    return __orig(opt, *a, **k)
                if any(x is not None for x in a) or any(x is not None for x in k.values()):
                    tracer.graph_break(f"{type(opt).__name__}.step() with arguments (a closure, an epoch, a metric) "
                                       f"runs inside the compiled function")
                else:
                    tracer.captures_step = True
                    tracer.ops.append(OpRecord(OPTSTEP, [], (opt,), [], False))
                tracer.depth += 1
                try:
                    return __orig(opt, *a, **k)
                finally:
                    tracer.depth -= 1
            cls.step = opt_step
        # factories: recorded with their arguments (a replay makes a fresh tensor of the size it is given)
        import reftorch
        from .. import _functional
        for name in FACTORIES + RANDOM:
            orig_f = getattr(_crand if name in RANDOM else _creation, name, None)
            if orig_f is None:
                continue
            wrapped = (random if name in RANDOM else factory)(name, orig_f)
            for mod in (reftorch, _creation, _crand, _functional):
                if getattr(mod, name, None) is orig_f:
                    self._saved[(mod, name)] = orig_f
                    setattr(mod, name, wrapped)
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
                    tracer._note_fresh((res,), (self_,))
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
        self._prev = _intercept.tracer
        _intercept.tracer = self
        return self

    def guard_grad(self, leaf):
        """The trace reads leaf.grad as it was when the function was called: guard on whether it was None."""
        if id(leaf) not in self._grad_touched:
            self._grad_touched.add(id(leaf))
            self.grad_guard.append((leaf, leaf._grad is None))

    def functional_target(self, t, tensors):
        """The value id of t when an elementwise in-place op on it can be recorded as a new value (t is a value
        the trace made, with no autograd history to continue, and the op's out-of-place result has t's dtype
        and shape); None otherwise (a graph break). Other values over t's memory (views) go stale."""
        vid = self.ids.get(id(t)) if isinstance(t, Tensor) else None
        if vid is None or self.values[vid] is not t or vid < self.n_inputs or t.requires_grad or \
                id(t._storage) not in self.fresh:       # (a view of a parameter: the write must reach it)
            return None
        ts = [_args.as_tensor_arg(x) for x in tensors]
        if any(x.requires_grad or x.device != t.device for x in ts if isinstance(x, Tensor) and x.ndim):
            return None
        return vid

    def inplace_call(self, name, tensors, scalars, orig):
        """`_dispatch.call_inplace` while tracing: an elementwise in-place op on a value the trace made
        (clip_grad_norm_'s `g.mul_(coef)` on a fresh gradient) is recorded as its out-of-place op, whose result
        becomes the value of t from then on (and the leaf's .grad when t is one); others are graph breaks."""
        if self.depth:
            return orig(name, tensors, scalars)
        spec = _dispatch.SPECS[name]
        t = tensors[0]
        ok = self.functional_target(t, tensors) is not None
        if ok:
            try:
                ts = [_args.as_tensor_arg(x) for x in tensors]
                _, out_dtype = _args._result_dtypes(spec, ts)
                ok = out_dtype is t.dtype and _L.broadcast_shapes(*[x._shape for x in ts]) == t._shape
            except Exception:
                ok = False
        if not ok:
            self.inplace(name)
        args = [self._arg(x) for x in tensors]
        self.depth += 1
        try:
            res = orig(name, tensors, scalars)
        finally:
            self.depth -= 1
        if ok:
            # the values over t's memory now hold other numbers than the graph gives them: using one later is a
            # graph break (_arg), returning one too (compile/__init__.py)
            self.stale.update(i for i, v in enumerate(self.values) if v._storage is t._storage)
            vid = self.add_value(t)
            self.aliases[_view_key(t)] = vid
            self.ops.append(OpRecord(spec, args, tuple(scalars), [vid], False))
            leaf = self.grad_of.get(id(t))
            if leaf is not None and leaf._grad is t:
                self.ops.append(OpRecord(SETGRAD, [self._leaf_arg(leaf), ("v", vid)], (), [], False))
        return res

    def inplace(self, name):
        self.graph_break(f"in-place op '{name}_' writes into a tensor")

    def __exit__(self, *exc):
        _intercept.tracer = self._prev
        for (owner, name), orig in self._saved.items():
            setattr(owner, name, orig)
        self._saved.clear()
        return False
