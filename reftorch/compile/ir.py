"""The graph a trace becomes, and its partition into steps.

A Graph is the traced call: input values, the recorded ops in program order (each a Node with the
dtypes and shape it ran with), and the output structure. `partition` cuts the node list into steps:

  OpStep   one op, replayed through the dispatcher's handler for its kind (matmul, reductions,
           views, array ops, and elementwise ops that must record autograd history)
  Region   a maximal run of consecutive elementwise ops (unary/binary/ternary of the registry, dtype
           conversions, counter-based draws of the region's shape) over one iteration shape: one
           generated kernel reads the region's inputs once (broadcasting them) and writes only the
           values used after it
"""
from __future__ import annotations

import numpy as np

import reftorch._args as _args
import reftorch._dispatch as _dispatch
from .._device import CPU
from .._tensor import Tensor

ELEMENTWISE = ("unary", "binary", "ternary")
SIDE_EFFECTS = ("setgrad", "optstep")       # tracer.SETGRAD / OPTSTEP: always replayed, in program order


class Node:
    __slots__ = ("spec", "args", "scalars", "outs", "multi", "fusable", "compute", "out_dtype", "shape",
                 "operand_dtypes", "kernel_scalars", "consts", "device")

    def __init__(self, rec):
        self.spec = rec.spec
        self.args = rec.args
        self.scalars = rec.scalars
        self.outs = rec.outs
        self.multi = rec.multi
        self.fusable = False
        self.device = CPU

    def __repr__(self):
        return f"{self.spec.name}({', '.join(_fmt(a) for a in self.args)}) -> {self.outs}"


def _fmt(a):
    if a[0] == "v":
        return f"%{a[1]}"
    if a[0] == "l":
        return "[" + ", ".join(_fmt(e) for e in a[2]) + "]"
    x = a[1]
    return "<tensor>" if isinstance(x, Tensor) else repr(x)


class Graph:
    def __init__(self, tracer, input_vids, out_spec, step=False):
        self.values = tracer.values          # value id -> tensor seen while tracing (metadata only)
        self.input_vids = input_vids
        self.out_spec = out_spec
        # step=True: the trace holds its own backward (and optimizer step); it is replayed without autograd
        # (compile/step.py), so regions need no backward kernels and every elementwise op may fuse
        self.step = step
        self.draws = tracer.draws           # counter-based random draws: each replay starts them (tracer.Draws)
        self.nodes = [Node(r) for r in tracer.ops]
        for n in self.nodes:
            if n.spec.kind == "random":
                _annotate_random(n, self.values)
            elif n.spec.kind == "method" and n.spec.name == "to":
                _annotate_cast(n, self.values, step)
            else:
                _annotate(n, self.values, step)

    def __str__(self):
        lines = [f"graph(inputs={['%' + str(v) for v in self.input_vids]})"]
        lines += [f"  {'*' if n.fusable else ' '} {n!r}" for n in self.nodes]
        return "\n".join(lines)


def _annotate(node, values, step=False):
    """Decide whether the node can join a fused region; if so note its dtypes, shape and constants."""
    spec = node.spec
    if spec.kind not in ELEMENTWISE or node.multi or spec.kernel_idx is None:
        return
    if any(ty not in ("Tensor", "Mask") for ty in spec.tensor_types) or len(node.args) != len(spec.tensor_types):
        return
    ts = []
    for a in node.args:
        if a[0] == "v":
            ts.append(values[a[1]])
        elif a[0] == "c" and isinstance(a[1], Tensor):
            ts.append(a[1])
        elif a[0] == "c" and isinstance(a[1], (bool, int, float, np.number, np.bool_)):
            ts.append(_args.as_tensor_arg(a[1]))
        else:
            return
    out = values[node.outs[0]]
    if out.numel() == 0:
        return
    # one device per region: every tensor operand on the output's device (Python numbers are literals;
    # a cpu tensor meeting cuda ones is left to the dispatcher, which moves or rejects it)
    consts = [a[0] == "c" and not isinstance(a[1], Tensor) for a in node.args]
    if any(t.device != out.device for t, c in zip(ts, consts) if not c):
        return
    if out.device.type == "cuda":
        from .. import _cuda_dispatch
        if _cuda_dispatch._kernel_info(spec.name) is None:
            return
    elif out.device != CPU:
        return
    if any(np.dtype(t.dtype.np).kind not in "biuf" or np.dtype(t.dtype.np).itemsize < 4 and
           np.dtype(t.dtype.np).kind == "f" for t in ts + [out]):
        return                  # half and complex dtypes: left to the dispatcher
    if out.requires_grad and not step:
        # it records autograd history: fusable when every formula it needs is elementwise (the region's
        # backward is then one generated kernel); otherwise replayed through the dispatcher, as eager
        from . import codegen
        tnames = [a.name for a in codegen._registry()[spec.name].signature.tensor_args]
        for i, t in enumerate(ts):
            if t.requires_grad and codegen.derivative(spec.name, tnames[i]) is None:
                return
    if any(isinstance(s, Tensor) for s in node.scalars):
        return
    try:
        compute, out_dtype = _args._result_dtypes(spec, ts)
    except Exception:
        return
    node.compute, node.out_dtype, node.shape, node.device = compute, out_dtype, out._shape, out.device
    node.operand_dtypes = [_args.D.bool_ if ty == "Mask" else compute for ty in spec.tensor_types]
    node.kernel_scalars = tuple(_args._kernel_scalars(spec, node.scalars, compute))
    # Python numbers: cast to the operand dtype as the dispatcher casts a wrapped scalar
    node.consts = {i: np.dtype(dt.np).type(a[1]) for i, (a, dt) in enumerate(zip(node.args, node.operand_dtypes))
                   if a[0] == "c" and not isinstance(a[1], Tensor)}
    node.fusable = True


def _annotate_random(node, values):
    """A counter-based draw (rand / randn on cpu) joins a region of its shape: the kernel computes element i
    from the draw's (key, counter + i) (compile/codegen.py), so the values are never stored unless used later."""
    out = values[node.outs[0]]
    spec = node.spec
    if out.numel() == 0 or spec.requires_grad or np.dtype(out.dtype.np).name not in ("float32", "float64"):
        return
    node.compute = node.out_dtype = out.dtype
    node.shape, node.device = out._shape, out.device
    node.operand_dtypes, node.kernel_scalars, node.consts = [], (), {}
    node.fusable = True


def _annotate_cast(node, values, step):
    """A dtype conversion on cpu (`.to(dtype)`, `.float()` ..., dropout's `(rand >= p).to(x.dtype)`) joins a region
    as a cast of its operand (no history to record: its output needs no gradient, or the trace is a whole step)."""
    if node.args[0][0] != "v":
        return
    src, out = values[node.args[0][1]], values[node.outs[0]]
    if out.numel() == 0 or src._shape != out._shape or src.device != CPU or out.device != CPU or \
            (out.requires_grad and not step):
        return
    if any(np.dtype(t.dtype.np).kind not in "biuf" or np.dtype(t.dtype.np).itemsize < 4 and
           np.dtype(t.dtype.np).kind == "f" for t in (src, out)):
        return
    node.compute = node.out_dtype = out.dtype
    node.shape, node.device = out._shape, out.device
    node.operand_dtypes, node.kernel_scalars, node.consts = [src.dtype], (), {}
    node.fusable = True


class OpStep:
    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node


class Region:
    """Fused elementwise ops. inputs: external refs ("v", vid) | ("t", captured tensor), with dtypes;
    outputs: value ids written (used after the region)."""

    def __init__(self, nodes, shape):
        self.nodes = nodes
        self.shape = shape
        self.device = nodes[0].device    # cpu: the Numba module of codegen.region_source; cuda: cuda_source
        self.inputs = []          # [(ref, dtype)]
        self.outputs = []         # [vid]
        self.out_dtypes = []
        self.kernel = None        # the loaded module (set by codegen)
        self.source = None
        self.grad_inputs = []     # indices of inputs that receive a gradient from the region's backward
        self.grad_outputs = []    # value ids of outputs whose gradients flow back (they require grad)
        self.requires = {}        # value id / id(tensor) -> requires_grad when traced
        self.reduce = None        # a ReduceTail: the full reduction folded into the loop
        # the counter-based draws computed in the loop (RandomSpec nodes), and their [key, counter] pairs for
        # the current call (a uint64 array the kernels read; filled before each launch)
        self.random = [n for n in nodes if n.spec.kind == "random"]
        self.rstate = np.zeros(2 * len(self.random), np.uint64)

    def fill_rstate(self):
        """The current replay's counters of the region's draws, into rstate (returned)."""
        for k, n in enumerate(self.random):
            self.rstate[2 * k], self.rstate[2 * k + 1] = n.spec.counters()
        return self.rstate

    def wants_grad(self, a):
        key = a[1] if a[0] == "v" else id(a[1])
        return self.requires.get(key, False)

    @property
    def ops(self):
        return [n.spec.name for n in self.nodes] + ([self.reduce.node.spec.name] if self.reduce else [])


def partition(graph):
    """Regions grow over program order; an op that does not read the current run's values (traced ops are
    pure: in-place writes are graph breaks or recorded out of place, and a draw's values depend on its counters
    only) moves before the run instead of ending it,
    so `f(x) * g(b)` with a smaller b stays one region for f(...) * ...; the moved ops are cut the same way."""
    return _finish(_cut(_live(graph)), graph)


def _live(graph):
    """The nodes whose results are returned or read by another live node: traced ops are pure (in-place
    writes are graph breaks), so the others are dead code and are not replayed."""
    live = set(_spec_vids(graph.out_spec))
    keep = []
    for n in reversed(graph.nodes):
        if n.spec.kind in SIDE_EFFECTS or any(v in live for v in n.outs):
            keep.append(n)
            live.update(_arg_vids(n.args))
    return keep[::-1]


def _cut(nodes):
    steps, run, hoisted = [], [], []
    run_vids = set()

    def flush(keep_single=False):
        steps.extend(_cut(hoisted) if hoisted else ())
        hoisted.clear()
        if len(run) == 1 and not keep_single:       # one op alone: its eager kernel is the same loop
            steps.append(OpStep(run[0]))
        elif run:
            steps.append(Region(list(run), run[0].shape))
        run.clear()
        run_vids.clear()

    for n in nodes:
        if n.fusable and (not run or (run[0].shape, run[0].device) == (n.shape, n.device)):
            run.append(n)
            run_vids.update(n.outs)
            continue
        if run and n.spec.kind not in SIDE_EFFECTS and not any(v in run_vids for v in _arg_vids(n.args)):
            hoisted.append(n)
            continue
        # x.abs().sum(): one fused pass (cpu; on cuda the reduction stays a kernel of its own)
        flush(keep_single=n.spec.kind == "reduction" and bool(run) and run[0].device == CPU)
        if n.fusable:
            run.append(n)
            run_vids.update(n.outs)
        else:
            steps.append(OpStep(n))
    flush()
    return steps


def _finish(steps, graph):
    # which values each region must write: those read by a later step or returned
    used_later = {}
    for i, st in enumerate(steps):
        nodes = st.nodes if isinstance(st, Region) else [st.node]
        for n in nodes:
            for vid in _arg_vids(n.args):
                used_later.setdefault(vid, set()).add(i)
    returned = set(_spec_vids(graph.out_spec))
    for i, st in enumerate(steps):
        if not isinstance(st, Region):
            continue
        produced = {}
        for n in st.nodes:
            produced[n.outs[0]] = n.out_dtype
        seen = {}
        for n in st.nodes:
            for a in n.args:
                if a[0] == "v" and a[1] not in produced and a[1] not in seen:
                    seen[a[1]] = True
                    st.inputs.append((("v", a[1]), graph.values[a[1]].dtype))
                elif a[0] == "c" and isinstance(a[1], Tensor) and id(a[1]) not in seen:
                    seen[id(a[1])] = True
                    st.inputs.append((("t", a[1]), a[1].dtype))
        for vid, dt in produced.items():
            if vid in returned or any(j != i for j in used_later.get(vid, ())):
                st.outputs.append(vid)
                st.out_dtypes.append(dt)
        if not graph.step:
            _grad_plan(st, graph)
    return _fuse_trailing_reductions(steps, graph, used_later, returned)


def _fuse_trailing_reductions(steps, graph, used_later, returned):
    """A full reduction (every dim, a registry reduction with an identity and no extra arguments) right after
    a region, over a value of that region used nowhere else, joins the region: the value is folded into an
    accumulator inside the loop and never written. Only without autograd (the region records no node)."""
    from . import codegen
    out, skip = [], set()
    for i, st in enumerate(steps):
        if i in skip:
            continue
        out.append(st)
        if not isinstance(st, Region) or i + 1 >= len(steps) or not isinstance(steps[i + 1], OpStep):
            continue
        if st.device.type == "cuda":    # on cuda the reduction runs its tree kernel after the region
            continue
        n = steps[i + 1].node
        if n.spec.kind != "reduction" or n.multi or len(n.args) != 1 or n.args[0][0] != "v":
            continue
        vid = n.args[0][1]
        if vid not in st.outputs or vid in returned or used_later.get(vid, set()) - {i, i + 1}:
            continue
        op = codegen._registry()[n.spec.name]
        if op.reduce is None or op.reduce.identity is None:
            continue
        kw = dict(zip(n.spec.scalar_names, n.scalars))
        if set(kw) - {"dim", "keepdim", "dtype"} or kw.get("dtype") is not None:
            continue
        src, res = graph.values[vid], graph.values[n.outs[0]]
        dims = kw.get("dim")
        if isinstance(dims, int):
            dims = (dims,)
        if dims not in (None, ()) and sorted(d % max(src.ndim, 1) for d in dims) != list(range(src.ndim)):
            continue
        if res.numel() != 1:
            continue
        # with autograd: only a reduction whose gradient is grad broadcast back over the input (a sum), read
        # from its ops.yaml formula; the region's backward kernel then takes that gradient as a scalar
        grad = res.requires_grad and not graph.step
        if grad and (op.formula("self") or "").replace(" ", "") != \
                "expand_reduced(grad,self.shape,dim,keepdim)":
            continue
        if not graph.step and src.requires_grad != res.requires_grad:
            continue
        if str(op.reduce.identity) in ("inf", "-inf") and not src.dtype.is_floating_point:
            continue
        rule = op.reduce.accumulate
        vdt = src.dtype
        if rule == "wide":
            acc = np.float64 if vdt.category == 2 else np.int64
        else:
            acc = {"float64": np.float64, "int64": np.int64, "bool": np.bool_}.get(rule, vdt.np)
        k = st.outputs.index(vid)
        del st.outputs[k]
        del st.out_dtypes[k]
        st.reduce = ReduceTail(n, vid, np.dtype(acc), op.reduce.identity, op.reduce.combine, res.dtype, res._shape)
        st.reduce.grad = bool(grad)
        st.reduce.vdtype = src.dtype
        if vid in st.grad_outputs:
            st.grad_outputs.remove(vid)
        skip.add(i + 1)
    return out


class ReduceTail:
    """The full reduction a region ends with (see _fuse_trailing_reductions)."""
    __slots__ = ("node", "vid", "acc", "identity", "combine", "out_dtype", "out_shape", "grad", "vdtype")

    def __init__(self, node, vid, acc, identity, combine, out_dtype, out_shape):
        self.node, self.vid, self.acc, self.identity, self.combine = node, vid, acc, identity, combine
        self.out_dtype, self.out_shape = out_dtype, out_shape


def _grad_plan(region, graph):
    """Which inputs get gradients from the region's fused backward, and which outputs send them."""
    from . import codegen
    req = region.requires
    for ref, _ in region.inputs:
        t = graph.values[ref[1]] if ref[0] == "v" else ref[1]
        req[ref[1] if ref[0] == "v" else id(ref[1])] = bool(t.requires_grad)
    for n in region.nodes:
        req[n.outs[0]] = bool(graph.values[n.outs[0]].requires_grad)
    if not any(req[n.outs[0]] for n in region.nodes):
        return
    region.grad_outputs = [vid for vid in region.outputs if req[vid]]
    fed = set()
    for n in region.nodes:
        if not req[n.outs[0]]:
            continue
        tnames = [a.name for a in codegen._registry()[n.spec.name].signature.tensor_args]
        for i, a in enumerate(n.args):
            if i in n.consts or a[0] not in ("v", "c") or not region.wants_grad(a):
                continue
            if codegen.derivative(n.spec.name, tnames[i]) != "none":
                fed.add(a[1] if a[0] == "v" else id(a[1]))
    region.grad_inputs = [j for j, (ref, dt) in enumerate(region.inputs)
                          if (ref[1] if ref[0] == "v" else id(ref[1])) in fed]


def _arg_vids(args):
    for a in args:
        if a[0] == "v":
            yield a[1]
        elif a[0] == "l":
            yield from _arg_vids(a[2])


def _spec_vids(spec):
    kind = spec[0]
    if kind == "v":
        yield spec[1]
    elif kind in ("seq", "dict"):
        for s in spec[2]:
            yield from _spec_vids(s)
