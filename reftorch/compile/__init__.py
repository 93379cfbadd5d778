"""reftorch.compile: trace a call, fuse its elementwise ops, run generated kernels.

    f = reftorch.compile(fn)            # or @reftorch.compile / @reftorch.compile(fullgraph=True)
    m = reftorch.compile(module)        # the module's forward is compiled; parameters stay shared

The first call with new guard values runs the function once under the tracer (reftorch/compile/
tracer.py: every op of ops.yaml passes through `_dispatch.call`), which returns the eager results
and a recorded graph (ir.py). The graph is partitioned into op calls and fused elementwise regions;
each region gets one generated Numba kernel (codegen.py). Later calls that pass the guards replay
the steps.

Guards: the shapes (ranks only with dynamic=True) dtypes, devices and requires_grad of the tensor
arguments, their aliasing, the values of non-tensor arguments, grad mode, a module's training flag,
and the metadata of captured tensors (parameters). A miss traces again and caches another version.

Random ops: rand / randn on cpu (and what calls them: rand_like, dropout's mask, sdpa's dropout) draw from the
counter-based Philox generator (reftorch/_philox.py): element i of a draw is a function of (seed, counter + i).
The tracer records each draw (tracer.RandomSpec) with its place in the trace's block of counters; every replay
takes the whole block from the generator first (tracer.Draws), so a compiled call gives the values the eager call
would give under the same seed and leaves the generator where eager leaves it. A draw of a region's shape is
computed inside the region's generated loop (never stored unless used later), and a region's backward kernel
recomputes it from the same counters.

In-place ops: an elementwise in-place op on a value the function made (clip_grad_norm_'s `g.mul_(coef)` on a
fresh gradient) is recorded as its out-of-place op; the result is that tensor's value (and its leaf's .grad)
from then on. Reading another view of that memory afterwards is a graph break.

Graph breaks: reading a tensor's value from Python (`if x.sum() > 0`, `.item()`), other in-place writes (into
arguments, captured tensors, tensors with autograd history), the PCG64 samplers (randint, randperm, normal,
multinomial ...) and random ops on cuda, a backward pass with create_graph=True or one that accumulates into
an existing .grad. That guard entry then runs eagerly (the function unchanged); under fullgraph=True the trace
raises GraphBreak naming the line.

Training steps: a function that calls `loss.backward()` (and `optimizer.step()`, `zero_grad()`) is captured
whole: the tracer records the backward's derivative formulas as ops, the writes of each leaf's .grad and the
optimizer step (tracer.py), and the replay runs that flat graph without autograd, as kernel calls bound to
buffers planned once per guard set, with Adam/AdamW as one generated pass per parameter (step.py). Whether
each leaf's .grad was None at the call is part of the guards. Python side effects other than these (an
lr scheduler's step, counters) happen only while tracing, as with any traced function.

Autograd: a fused region whose outputs require grad records ONE node (RegionBackward, shown as
CompiledFunctionBackward as in PyTorch); its backward is one generated kernel built from the derivative
formulas of ops.yaml (codegen.py), which reads the region's saved inputs and the output gradients and
writes every input gradient. An op whose formula is not elementwise is replayed through the dispatcher
(it records its node as eager does). Double backward through a fused region raises, as torch.compile does.

dynamic=True: guards on ranks; Python numbers computed from shapes are baked into the graph, so a
graph that takes integer arguments from its trace (views, reductions, factories like zeros(x.shape[0]) ...)
is traced again per shape.

Kernels: each region's module is written under the hash of its source to $REFTORCH_COMPILE_DIR (default
~/.cache/reftorch/compiled) and Numba caches its machine code, so another process that traces the same
region loads it (~0.1 s) instead of compiling it (seconds). Inputs of REFTORCH_COMPILE_PAR_MIN elements
or more (default 1M; 0 disables) take the threaded loop while the load average leaves a core free (the
eager kernels' test, _cpu._parallel). `compiled.kernels()` returns the sources
(REFTORCH_COMPILE_DUMP=1 prints them); `compiled.kernels(device="cuda")` the same regions as numba.cuda
kernels.

CUDA: a call with cuda tensors (the device is part of the guards) fuses the same regions, over tensors of one
cuda device, into numba.cuda kernels (codegen.cuda_source: grid-stride loops, contiguous and strided, forward
and fused backward) launched on the tensors' device arrays with the launch shape of reftorch/_cuda_launch.py;
the other ops (matmul, reductions, views...) replay through the dispatcher, which runs them on cuda. Each
region's kernels are loaded once and numba compiles them at the first launch per argument types. A trailing
reduction stays a tree kernel of its own on cuda.
"""
from __future__ import annotations

import functools
import os

import numpy as np

import reftorch._cpu as _cpu
import reftorch._dispatch as _dispatch
import reftorch._threads as _threads
import reftorch._layout as L
from .._tensor import Tensor, Storage
from ..autograd import grad_mode
from ..autograd.graph import Node, SavedTensor, gradient_edge
from ..nn import Module
import reftorch.compile.ir as ir
import reftorch.compile.step as step_mod
from .tracer import GraphBreak, Tracer

__all__ = ["compile", "GraphBreak", "CompiledFunction", "OptimizedModule"]

_PAR_MIN = 1 << 20      # elements from which a region runs its threaded loop (memory-bound: ~1M, DESIGN §5)


def compile(model=None, *, fullgraph=False, dynamic=False, backend="numba", mode=None, options=None,
            disable=False):
    """Compile a function or nn.Module; usable as @compile and @compile(...)."""
    if backend not in ("numba", "inductor", "eager"):
        raise ValueError(f"reftorch.compile: unknown backend {backend!r} (available: 'numba')")

    def wrap(obj):
        if disable or backend == "eager":
            return obj
        if isinstance(obj, Module):
            return OptimizedModule(obj, fullgraph=fullgraph, dynamic=dynamic)
        if not callable(obj):
            raise TypeError(f"reftorch.compile: expected a callable or a Module, got {type(obj).__name__}")
        return CompiledFunction(obj, fullgraph=fullgraph, dynamic=dynamic)

    if model is None:
        return wrap
    return wrap(model)


# ------------------------------------------------------------------------------ flattening

def _flatten(obj, leaves):
    """A hashable structure spec of obj; tensors and other leaves appended to `leaves`."""
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return ("T",)
    if isinstance(obj, (list, tuple)):
        return ("seq", type(obj), tuple(_flatten(o, leaves) for o in obj))
    if isinstance(obj, dict):
        return ("dict", tuple(obj.keys()), tuple(_flatten(v, leaves) for v in obj.values()))
    try:
        hash(obj)
    except TypeError:
        raise _Unhashable() from None
    return ("k", type(obj), obj)


class _Unhashable(Exception):
    pass


def _out_spec(obj, tracer):
    if isinstance(obj, Tensor):
        vid = tracer.ids.get(id(obj))
        if vid is not None and tracer.values[vid] is obj:
            return ("v", vid)
        return ("c", obj)
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return ("seq", type(obj), tuple(_out_spec(o, tracer) for o in obj))
    if isinstance(obj, dict):
        return ("dict", tuple(obj.keys()), tuple(_out_spec(v, tracer) for v in obj.values()))
    return ("c", obj)


def _build(spec, env):
    kind = spec[0]
    if kind == "v":
        return env[spec[1]]
    if kind == "c":
        return spec[1]
    if kind == "seq":
        items = [_build(s, env) for s in spec[2]]
        return spec[1](items) if spec[1] in (list, tuple) else spec[1](*items)
    return dict(zip(spec[1], (_build(s, env) for s in spec[2])))


# ------------------------------------------------------------------------------ compiled entries

class _Entry:
    """One traced version: its steps, or None when the trace had a graph break (runs eagerly)."""
    __slots__ = ("graph", "steps", "breaks", "captured", "shape_free", "shapes", "grad_guard", "plan")

    def __init__(self, graph, steps, breaks, captured, shape_free, shapes, grad_guard=(), plan=None):
        self.graph, self.steps, self.breaks, self.captured = graph, steps, breaks, captured
        self.shape_free, self.shapes = shape_free, shapes
        self.grad_guard = grad_guard    # (leaf, .grad is None) when the function was traced
        self.plan = plan                # a step.StepPlan when the trace holds its own backward

    def captured_ok(self):
        for t, meta in self.captured:
            if (t._shape, t.dtype, t.device, t.requires_grad) != meta:
                return False
        for leaf, none in self.grad_guard:
            if (leaf._grad is None) != none:
                return False
        return True


def _resolve(a, env):
    kind = a[0]
    if kind == "v":
        return env[a[1]]
    if kind == "l":
        return a[1](_resolve(e, env) for e in a[2])
    return a[1]


def _launch(r, which, shape, ins, out_dtypes, cs=None, acc=None, scalars=()):
    """Run the region's `which` kernel ("fused" / "fused_backward") over tensors `ins`; fresh contiguous
    outputs of the iteration shape (contiguous strides cs), as flat arrays. acc: the accumulator array of a
    trailing reduction (passed first)."""
    n = L.numel(shape)
    if cs is None:
        cs = L.contiguous_strides(shape)
    outs = [np.empty(n, dt.np) for dt in out_dtypes]
    if n == 0:
        return outs
    if acc is not None:
        outs = [acc] + outs
    k = r.kernels.get(which)
    if k is None:
        mod = r.kernel
        # a trailing reduction's kernel keeps one accumulator: it runs on one thread
        # (a region that draws random numbers indexes them by the loop's own index: one thread, no chunks)
        k = r.kernels[which] = (getattr(mod, which + "_contig"), acc is None and not r.random,
                                getattr(mod, which + "_strided"))
    if all(t._shape == shape and (t._strides == cs or L.is_contiguous(t._shape, t._strides)) for t in ins):
        arrays = [step_mod.flat_view(t) for t in ins]
        if k[1] and n >= _par_min():
            _threaded(k[0], outs, arrays, scalars, n)
        else:
            k[0](*outs, *arrays, *scalars)
        return outs
    cshape, operands = L.collapse_operands(shape, ins)
    args = [x for data, off, st in operands for x in (data, off, np.array(st, np.int64))]
    k[2](np.array(cshape, np.int64), *outs, *args, *scalars)
    return outs


def _launch_cuda(r, which, shape, ins, out_dtypes, device, scalars=()):
    """`_launch` for a region on cuda: its numba.cuda kernels (codegen.cuda_source) over device arrays, with
    the launch shape of the other CUDA kernels (reftorch/_cuda_launch.py); fresh contiguous device outputs."""
    from .. import _cuda_launch as cl
    n = L.numel(shape)
    cu = cl.kernels().cuda
    outs = [cu.device_array(n, dtype=dt.np) for dt in out_dtypes]
    if n == 0:
        return outs
    k = r.kernels.get(which)
    if k is None:
        mod = r.kernel
        k = r.kernels[which] = (getattr(mod, which + "_cuda"), getattr(mod, which + "_cuda_strided"))
    threads = cl._config["threads"]
    grid = cl._blocks(n, threads)
    if all(t._shape == shape and L.is_contiguous(t._shape, t._strides) for t in ins):
        arrays = [step_mod.flat_view(t) for t in ins]
        k[0][grid, threads](*outs, *arrays, *scalars)
        return outs
    cshape, operands = L.collapse_operands(shape, ins)
    args = [x for data, off, st in operands for x in (data, off, tuple(int(v) for v in st))]
    k[1][grid, threads](tuple(int(v) for v in cshape), *outs, *args, *scalars)
    return outs


def _identity(src, acc):
    v = {"inf": np.inf, "-inf": -np.inf}.get(str(src))
    return v if v is not None else float(src)


def _par_min():
    """Elements from which a fused region runs its loop on several threads (REFTORCH_COMPILE_PAR_MIN; 0 disables)."""
    global _PAR_MIN_V
    if _PAR_MIN_V is None:
        v = int(os.environ.get("REFTORCH_COMPILE_PAR_MIN", _PAR_MIN))
        _PAR_MIN_V = (1 << 62) if v <= 0 or _n_threads() < 2 else v
    return _PAR_MIN_V


def _n_threads():
    return _cpu.THREADS        # the eager kernels' count (reftorch.set_num_threads)


_PAR_MIN_V = None


def _threaded(kernel, outs, arrays, scalars, n):
    """The contiguous kernel (compiled nogil) over equal chunks, one per thread: elementwise, so chunks are
    independent, and no parallel=True variant needs compiling (that costs seconds at the first call).
    Serial when the machine is busy (see below)."""
    t = max(1, min(_n_threads(), n // max(_PAR_MIN_V // 2, 1)))
    # the eager kernels' load test (_cpu._parallel): threads only while the 1-minute load average leaves
    # a core free -- a chunk waiting for a core another process holds stalls the whole call
    if t < 2 or not _cpu._parallel(max(n, _cpu.PARALLEL_MIN)):
        kernel(*outs, *arrays, *scalars)
        return
    pool = _threads.pool("reftorch-compile", _n_threads())     # reftorch/_threads.py: fresh in a forked child
    step = -(-n // t)
    step += -step % 16          # chunk edges on cache-line multiples
    futs = [pool.submit(kernel, *[o[s:s + step] for o in outs], *[a[s:s + step] for a in arrays], *scalars)
            for s in range(step, n, step)]
    kernel(*[o[:step] for o in outs], *[a[:step] for a in arrays], *scalars)   # the first chunk on this thread
    for f in futs:
        f.result()


def _run_region(r, env):
    ins = [env[ref[1]] if ref[0] == "v" else ref[1] for ref, _ in r.inputs]
    shape = r.shape
    if r.dynamic:
        shape = L.broadcast_shapes(*[t._shape for t in ins])
        cs = L.contiguous_strides(shape)
    else:
        cs = r.cstrides
    rt = r.reduce
    red = None
    dev = r.device
    rs = (r.fill_rstate(),) if r.random else ()     # the counters of the region's draws in this call
    if dev.type == "cuda":      # (trailing reductions are not fused on cuda: ir._fuse_trailing_reductions)
        outs = _launch_cuda(r, "fused", shape, ins, r.out_dtypes, dev)
    elif rt is not None:
        acc = np.empty(1, rt.acc)
        acc[0] = _identity(rt.identity, rt.acc)
        outs = _launch(r, "fused", shape, ins, r.out_dtypes, cs, acc, rs)[1:]
        red = env[rt.node.outs[0]] = Tensor._make(Storage(acc.astype(rt.out_dtype.np)), 0, rt.out_shape,
                                                  L.contiguous_strides(rt.out_shape), rt.out_dtype)
    else:
        outs = _launch(r, "fused", shape, ins, r.out_dtypes, cs, scalars=rs)
    res = [Tensor._make(Storage(arr), 0, shape, cs, dt, dev) for arr, dt in zip(outs, r.out_dtypes)]
    for vid, t in zip(r.outputs, res):
        env[vid] = t
    if r.grad_inputs and grad_mode.state.enabled:
        node = RegionBackward(r, ins, shape)
        by_vid = dict(zip(r.outputs, res))
        outs_g = [by_vid[vid] for vid in r.grad_outputs] + ([red] if rt is not None and rt.grad else [])
        for m, t in enumerate(outs_g):
            t.requires_grad = True
            t.grad_fn = node
            t._output_nr = m


class RegionBackward(Node):
    """The backward of one fused region: one generated kernel computes the gradients of all the region's
    inputs that want one, from its saved inputs and the gradients of its outputs."""
    __slots__ = ("region", "saved", "shape", "rstate")

    def __init__(self, region, ins, shape):
        gi = region.grad_inputs
        out_dt = dict(zip(region.outputs, region.out_dtypes))
        rt = region.reduce
        super().__init__([gradient_edge(ins[j]) for j in gi], [(ins[j]._shape, ins[j].dtype) for j in gi],
                         [(shape, out_dt[vid]) for vid in region.grad_outputs] +
                         ([(rt.out_shape, rt.out_dtype)] if rt is not None and rt.grad else []))
        self.region = region
        self.saved = [SavedTensor(t) for t in ins]
        self.shape = shape
        # the forward's counters: the backward kernel recomputes the region's draws, as the forward made them
        self.rstate = region.rstate.copy() if region.random else None

    def name(self):
        return "CompiledFunctionBackward"

    def apply(self, grads, create_graph=False, needs=None):
        if create_graph:
            raise RuntimeError("torch.compile with aot_autograd does not currently support double backward")
        grads = self._materialize(grads)
        ins = [s.unpack(self) for s in self.saved]
        r = self.region
        gouts, scalar = [], ()
        if r.reduce is not None and r.reduce.grad:      # the trailing sum's gradient: one number
            g = grads[-1]
            scalar = (np.dtype(r.reduce.vdtype.np).type(g._storage.data[g._offset]),)
            grads = grads[:-1]
        for g, (_, dt) in zip(grads, self.out_meta):
            if g.dtype is not dt:
                g = g.to(dt)
            if g._shape != self.shape:
                g = g.expand(self.shape)
            gouts.append(g)
        dts = [r.inputs[j][1] for j in r.grad_inputs]
        if self.rstate is not None:
            scalar = scalar + (self.rstate,)
        dev = r.device
        if dev.type == "cuda":
            outs = _launch_cuda(r, "fused_backward", self.shape, ins + gouts, dts, dev, scalar)
        else:
            outs = _launch(r, "fused_backward", self.shape, ins + gouts, dts, scalars=scalar)
        cs = L.contiguous_strides(self.shape)
        return [Tensor._make(Storage(a), 0, self.shape, cs, dt, dev) for a, dt in zip(outs, dts)]

    def release(self):
        for s in self.saved:
            s.release()


def _replay(entry, inputs):
    if entry.plan is not None:          # a captured training step: compile/step.py
        return entry.plan.run(inputs)
    if entry.graph.step:                # a captured step on cuda: its backward is in the graph, no autograd
        with grad_mode.no_grad():
            return _replay_steps(entry, inputs)
    return _replay_steps(entry, inputs)


def _replay_steps(entry, inputs):
    env = dict(zip(entry.graph.input_vids, inputs))
    entry.graph.draws.start()       # this call's counters for every draw of the graph (tracer.Draws)
    for st in entry.steps:
        if isinstance(st, ir.Region):
            _run_region(st, env)
            continue
        n = st.node
        kind = n.spec.kind
        if kind in ("method", "factory", "gradread", "random"):   # .to() ..., zeros(n) ..., .grad, rand(n)
            res = n.spec.run([_resolve(a, env) for a in n.args], n.scalars)
        elif kind == "setgrad":
            leaf = _resolve(n.args[0], env)
            leaf._grad = _resolve(n.args[1], env) if len(n.args) > 1 else None
            continue
        elif kind == "optstep":
            n.scalars[0].step()
            continue
        else:
            res = step_mod.handler(n.spec)(n.spec, [_resolve(a, env) for a in n.args], n.scalars)
        if n.multi:
            for vid, o in zip(n.outs, res):
                env[vid] = o
        else:
            env[n.outs[0]] = res
    return _build(entry.graph.out_spec, env)


class CompiledFunction:
    def __init__(self, fn, *, fullgraph=False, dynamic=False, guard_extra=None):
        self._fn = fn
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self._guard_extra = guard_extra
        self._cache = {}
        self._sources = []
        self.traces = 0                 # how many times the function was traced (tests read it)
        functools.update_wrapper(self, fn)

    # -------------------------------------------------------------- guards
    def _key(self, args, kwargs):
        leaves = []
        if not kwargs and all(type(a) is Tensor for a in args):
            spec = len(args)            # the common call: tensors only (its key cannot equal a general one)
            leaves = args
        else:
            try:
                spec = _flatten((args, kwargs), leaves)
            except _Unhashable:
                return None, None, None
        tensors, metas, first = [], [], {}
        for x in leaves:
            if isinstance(x, Tensor):
                alias = first.setdefault(id(x), len(tensors))
                tensors.append(x)
                shape = len(x._shape) if self.dynamic else x._shape
                metas.append((shape, x.dtype, x.device, x.requires_grad, alias))
        extra = self._guard_extra() if self._guard_extra else None
        return (spec, tuple(metas), grad_mode.state.enabled, extra), tensors, [x._shape for x in tensors]

    def __call__(self, *args, **kwargs):
        key, tensors, shapes = self._key(args, kwargs)
        if key is None:
            return self._fn(*args, **kwargs)
        entry = self._cache.get(key)
        if entry is not None and self.dynamic and not entry.shape_free and \
                entry.graph is not None and entry.shapes != shapes:
            entry = None
        if entry is not None and not entry.captured_ok():
            entry = None
        if entry is None:
            return self._trace(key, tensors, shapes, args, kwargs)
        if entry.steps is None:
            return self._fn(*args, **kwargs)
        return _replay(entry, tensors)

    # -------------------------------------------------------------- tracing
    def _trace(self, key, tensors, shapes, args, kwargs):
        self.traces += 1
        tracer = Tracer(self.fullgraph)
        input_vids = []
        for t in tensors:
            vid = tracer.ids.get(id(t))
            input_vids.append(vid if vid is not None else tracer.add_value(t))
        with tracer:
            result = self._fn(*args, **kwargs)
        out_spec = _out_spec(result, tracer)
        if tracer.stale.intersection(ir._spec_vids(out_spec)):
            tracer.graph_break("the function returns a tensor an in-place op wrote into through another one")
        if tracer.breaks:
            entry = _Entry(None, None, tracer.breaks, (), True, shapes, tracer.grad_guard)
            self._cache[key] = entry
            return result
        graph = ir.Graph(tracer, input_vids, out_spec, step=tracer.captures_step)
        steps = ir.partition(graph)
        for st in steps:
            if isinstance(st, ir.Region):
                self._codegen(st)
        captured, seen = [], set()
        for n in graph.nodes:
            for a in n.args:
                for x in _consts(a):
                    if isinstance(x, Tensor) and id(x) not in seen:
                        seen.add(id(x))
                        captured.append((x, (x._shape, x.dtype, x.device, x.requires_grad)))
        # dynamic=True: one trace serves every shape of the same ranks when the graph is elementwise only and
        # takes no integer Python constants (the usual shape-derived numbers); otherwise one trace per shape
        # (a factory's size is such a number: zeros(x.shape[0]) is traced again for another shape)
        shape_free = not graph.step and all(n.spec.kind in ir.ELEMENTWISE + ("method", "factory")
                                            for n in graph.nodes) and not any(
            _has_int(x) for n in graph.nodes for a in n.args for x in _consts(a)) and not any(
            _has_int(v) for n in graph.nodes if n.spec.kind == "factory" for v in n.spec.kwargs.values())
        # the buffer-planned replay is for cpu values; a step on cuda replays its steps through the dispatcher
        plan = step_mod.StepPlan(graph, steps) if graph.step and all(
            v.device.type == "cpu" for v in graph.values if isinstance(v, Tensor)) else None
        entry = _Entry(graph, steps, (), captured, shape_free, shapes, tracer.grad_guard, plan)
        self._cache[key] = entry
        return result

    def _codegen(self, region):
        from . import codegen
        # a region on cuda becomes numba.cuda kernels (compiled at their first launch, per argument types)
        src = codegen.cuda_source(region) if region.device.type == "cuda" else codegen.region_source(region)
        region.source = src
        region.dynamic = self.dynamic
        region.kernels = {}
        region.cstrides = L.contiguous_strides(region.shape)
        region.kernel = codegen.load(src)
        if src not in self._sources:
            self._sources.append(src)
            if os.environ.get("REFTORCH_COMPILE_DUMP"):
                print(src)

    # -------------------------------------------------------------- introspection
    def kernels(self, device=None):
        """The generated source of every fused region compiled so far (numba.cuda kernels for the regions that
        ran on cuda); device="cuda" / "cpu": every region as numba.cuda kernels / as the CPU module."""
        if device is not None:
            from . import codegen
            gen = codegen.cuda_source if str(device).startswith("cuda") else codegen.region_source
            return [gen(st) for e in self._cache.values() if e.steps
                    for st in e.steps if isinstance(st, ir.Region)]
        return list(self._sources)

    def graph_breaks(self):
        return [b for e in self._cache.values() for b in e.breaks]

    def graphs(self):
        return [e.graph for e in self._cache.values() if e.graph is not None]


def _has_int(x):
    """An integer (a size) in a constant argument: an int, or one inside a tuple / list / Size."""
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (int, np.integer)):
        return True
    return isinstance(x, (tuple, list)) and any(_has_int(e) for e in x)


def _consts(a):
    if a[0] == "c":
        yield a[1]
    elif a[0] == "l":
        for e in a[2]:
            yield from _consts(e)


def _recompiled(module, fullgraph, dynamic):
    return OptimizedModule(module, fullgraph=fullgraph, dynamic=dynamic)


class OptimizedModule(Module):
    """A module whose forward is compiled (torch's OptimizedModule): the original module is its one child,
    `_orig_mod`, so parameters stay shared, state_dict keys read `_orig_mod.<name>` (and load_state_dict
    expects them), train/eval reach the original, and other attributes are looked up on it."""

    def __init__(self, module, *, fullgraph=False, dynamic=False):
        super().__init__()
        self._orig_mod = module
        object.__setattr__(self, "_options", (fullgraph, dynamic))
        object.__setattr__(self, "_compiled_forward", CompiledFunction(
            module.forward, fullgraph=fullgraph, dynamic=dynamic, guard_extra=lambda: module.training))

    def __reduce__(self):
        # pickled (reftorch.save) as the module it wraps and its options: no traces or kernels travel, the
        # loaded copy compiles again on first call
        return (_recompiled, (self._orig_mod, *self._options))

    def forward(self, *args, **kwargs):
        return self._compiled_forward(*args, **kwargs)

    def kernels(self, device=None):
        return self._compiled_forward.kernels(device)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name.startswith("__") or "_modules" not in self.__dict__ or "_orig_mod" not in self._modules:
                raise
            return getattr(self._modules["_orig_mod"], name)


CompiledModule = OptimizedModule        # the name reftorch used before (issue 16: torch's is OptimizedModule)
