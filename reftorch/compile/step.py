"""Replaying a captured training step: forward, backward and optimizer as one flat list of kernel calls.

When the traced function runs a backward pass (`loss.backward()`), the tracer records the derivative
formulas the engine evaluates as ordinary ops, the engine's writes of each leaf's `.grad` (SETGRAD) and
`optimizer.step()` (OPTSTEP). The graph then holds the whole step, and replaying it needs none of the
Python-level autograd bookkeeping (no nodes, no engine, no saved tensors): a StepPlan runs it without
grad mode, as a list of calls bound once per guard set to buffers planned once:

  - every value of the graph gets its own preallocated buffer (the shapes are fixed by the guards); the
    function's tensor arguments are copied into theirs at the start of a call
  - a fused region is its generated kernel, bound to its input and output arrays
  - views, detach() and factories are made once, over those buffers (a view of a buffer stays valid)
  - matmul is numpy.matmul into its buffer; a single elementwise op is the eager kernel into its buffer
  - any other op runs its dispatcher handler and is copied into its buffer
  - SETGRAD sets leaf.grad to a fresh copy of the gradient's buffer (or None)
  - OPTSTEP of torch.optim.Adam / AdamW is one generated pass per parameter (codegen.adam_source, from the
    three ops.yaml kernels optim.Adam runs); any other optimizer runs its own step()

Values the function returns are fresh copies, so a later call never writes into a tensor the user holds.
The buffers read captured tensors (parameters, optimizer state) through their storage: a call whose
captured tensor got another storage (`p.data = ...`) builds the plan again.
"""
from __future__ import annotations

import numpy as np

import reftorch._blas as _blas
import reftorch._dispatch as _dispatch
import reftorch._args as _args
import reftorch._array as _array
import reftorch._cpu as _cpu
import reftorch._layout as L
from .._tensor import Tensor, Storage
from ..autograd import grad_mode
import reftorch.compile.ir as ir

_ELEMENTWISE_KINDS = ("unary", "binary", "ternary", "fused")


def handler(spec):
    """The dispatcher's handler of a recorded op (fused backward kernels are elementwise ops)."""
    if spec.kind == "fused":
        return _dispatch.elementwise
    return _dispatch.run


def _buffer(like):
    """A fresh contiguous tensor of `like`'s shape and dtype (a planned buffer)."""
    shape = like._shape
    arr = np.empty(L.numel(shape), like.dtype.np)
    return Tensor._make(Storage(arr), 0, shape, L.contiguous_strides(shape), like.dtype, like.device)


def _copy_out(t):
    """A fresh tensor holding a copy of the buffer t (what the caller gets to keep)."""
    arr = np.array(t._array(), copy=True, order="C").reshape(-1)
    return Tensor._make(Storage(arr), 0, t._shape, L.contiguous_strides(t._shape), t.dtype, t.device)


def flat_view(t):
    """The n elements of a contiguous tensor's storage from its offset (the storage itself when it is exactly that)."""
    n = L.numel(t._shape)
    d = t._storage.data
    return d if t._offset == 0 and d.shape[0] == n else d[t._offset:t._offset + n]


class StepPlan:
    """The replay of one traced step (one guard set); its bound calls are built at the first replay."""

    def __init__(self, graph, steps):
        self.graph, self.steps = graph, steps
        self.built = None

    def run(self, inputs):
        b = self.built
        if b is None or not b.valid():
            b = self.built = _Bound(self, inputs)
        return b.run(inputs)


class _Bound:
    def __init__(self, plan, inputs):
        g = plan.graph
        self.graph = g
        self.static = {}            # value id -> its buffer (or a view / factory result made once)
        self.real = {}              # value id of an argument -> its position in the call's arguments
        self.in_copies = []         # (position, buffer array)
        self.checks = {}            # id -> (captured tensor, its storage array, offset, strides)
        self.calls = []             # (fn, args), in program order
        for i, vid in enumerate(g.input_vids):
            if vid in self.static:
                continue
            buf = _buffer(g.values[vid])
            self.static[vid] = buf
            self.real[vid] = i
            self.in_copies.append((i, buf._array()))
        # who reads each value: a copy (clone) read only by SETGRAD steps, which copy out anyway, is elided
        self.readers = {}
        for st in plan.steps:
            for n in (st.nodes if isinstance(st, ir.Region) else [st.node]):
                for vid in ir._arg_vids(n.args):
                    self.readers.setdefault(vid, set()).add(n.spec.kind)
        for vid in ir._spec_vids(g.out_spec):
            self.readers.setdefault(vid, set()).add("return")
        # a SETGRAD whose leaf is set again before anything reads .grad (GRADREAD, an optimizer step) is dead:
        # zero_grad's `p.grad = None` right before the backward sets it
        self.dead_sets, pending = set(), {}
        for st in plan.steps:
            n = None if isinstance(st, ir.Region) else st.node
            if n is None:
                continue
            if n.spec.kind in ("optstep", "gradread"):
                pending.clear()
            elif n.spec.kind == "setgrad":
                a = n.args[0]
                key = ("v", a[1]) if a[0] == "v" else ("c", id(a[1]))
                if key in pending:
                    self.dead_sets.add(pending[key])
                pending[key] = n
        prev = grad_mode.state.enabled
        grad_mode.state.enabled = False
        try:
            for st in plan.steps:
                if isinstance(st, ir.Region):
                    self._region(st)
                else:
                    self._op(st.node, inputs)
        finally:
            grad_mode.state.enabled = prev
        self.outs = [(vid, self.real.get(vid)) for vid in ir._spec_vids(g.out_spec)]

    # ------------------------------------------------------------------ binding
    def arg(self, a):
        kind = a[0]
        if kind == "v":
            return self.static[a[1]]
        if kind == "l":
            return a[1](self.arg(e) for e in a[2])
        x = a[1]
        if isinstance(x, Tensor) and id(x) not in self.checks:
            self.checks[id(x)] = (x, x._storage.data, x._offset, x._strides)
        return x

    def leaf(self, a, inputs):
        """The tensor whose .grad a SETGRAD / GRADREAD step names: an argument of the call or a captured one."""
        if a[0] == "v":
            i = self.real.get(a[1])
            return ("arg", i) if i is not None else ("t", self.static[a[1]])
        return ("t", a[1])

    def _region(self, r):
        from . import _threaded, _par_min, _identity
        ins = [self.arg(ref) if ref[0] == "v" else self.arg(("c", ref[1])) for ref, _ in r.inputs]
        shape = r.shape
        n = L.numel(shape)
        cs = L.contiguous_strides(shape)
        outs = [np.empty(n, dt.np) for dt in r.out_dtypes]
        for vid, arr, dt in zip(r.outputs, outs, r.out_dtypes):
            self.static[vid] = Tensor._make(Storage(arr), 0, shape, cs, dt, r.device)
        rt = r.reduce
        acc = red = None
        if rt is not None:
            acc = np.empty(1, rt.acc)
            red = _buffer(Tensor._make(Storage(acc), 0, rt.out_shape, L.contiguous_strides(rt.out_shape),
                                       rt.out_dtype))
            self.static[rt.node.outs[0]] = red
        if n == 0:
            if rt is not None:
                self.calls.append((_fill, (red._storage.data, _identity(rt.identity, rt.acc))))
            return
        mod = r.kernel
        pre = [acc] if acc is not None else []
        rs = [r.rstate] if r.random else []         # the draws' counters: filled before each call
        if all(t._shape == shape and L.is_contiguous(t._shape, t._strides) for t in ins):
            arrays = [flat_view(t) for t in ins]
            if acc is None and not rs and n >= _par_min():
                call = (_threaded, (mod.fused_contig, outs, arrays, (), n))
            else:
                call = (mod.fused_contig, tuple(pre + outs + arrays + rs))
        else:
            cshape, operands = L.collapse_operands(shape, ins)
            args = [x for data, off, st in operands for x in (data, off, np.array(st, np.int64))]
            call = (mod.fused_strided, (np.array(cshape, np.int64), *pre, *outs, *args, *rs))
        if rs:
            call = (_drawing, (r, call))
        if rt is None:
            self.calls.append(call)
        else:
            self.calls.append((_reduce_call, (call, acc, _identity(rt.identity, rt.acc), red._storage.data)))

    def _op(self, n, inputs):
        kind = n.spec.kind
        if kind == "setgrad":
            if n in self.dead_sets:
                return
            leaf = self.leaf(n.args[0], inputs)
            value = self.static[n.args[1][1]] if len(n.args) > 1 and n.args[1][0] == "v" else \
                (n.args[1][1] if len(n.args) > 1 else None)
            self.calls.append((_set_grad, (self, leaf, value)))
            return
        if kind == "optstep":
            self.calls.append((_opt_step, (n.scalars[0], {})))
            return
        if kind == "random":        # a draw outside a region: its values, into its buffer, at every call
            buf = self.static[n.outs[0]] = _buffer(self.graph.values[n.outs[0]])
            self.calls.append((_random_into, (n.spec, buf._array())))
            return
        if kind == "gradread":
            buf = self.static[n.outs[0]] = _buffer(self.graph.values[n.outs[0]])
            self.calls.append((_read_grad, (self, self.leaf(n.args[0], inputs), buf._array())))
            return
        args = [self.arg(a) for a in n.args]
        if kind in ("view", "method", "factory"):
            # made once: a view (or detach) of a buffer stays a view of it; a factory's value never changes
            res = n.spec.run(args, n.scalars) if kind != "view" else handler(n.spec)(n.spec, args, n.scalars)
            storages = [t._storage for t in args if isinstance(t, Tensor)]
            if kind == "factory" or any(res._storage is s for s in storages):
                self.static[n.outs[0]] = res
                return
        outs = [self.graph.values[v] for v in n.outs]
        if kind in ("unary", "fused") and len(args) == 1 and _is_copy(n.spec) and isinstance(args[0], Tensor) and \
                args[0].dtype is outs[0].dtype and args[0]._shape == outs[0]._shape and \
                L.is_contiguous(args[0]._shape, args[0]._strides) and \
                (n.args[0][0] == "v" or self.readers.get(n.outs[0]) == {"setgrad"}):
            # a copy of a value (clone, a gradient passed through unchanged): values are written once per
            # replay, so the copy can share the buffer (a captured tensor's copy only when SETGRAD copies it out)
            self.static[n.outs[0]] = args[0]
            return
        if kind == "reduction" and _is_sum(n.spec.name) and isinstance(args[0], Tensor) and \
                np.dtype(args[0].dtype.np).kind == "f" and args[0].dtype is outs[0].dtype:
            kw = dict(zip(n.spec.scalar_names, n.scalars))
            if kw.get("dtype") is None and set(kw) <= {"dim", "keepdim", "dtype"}:
                dims = kw.get("dim")
                nd = args[0].ndim
                axis = None if dims is None or dims == () or dims == [] else \
                    tuple(sorted(d % max(nd, 1) for d in ((dims,) if isinstance(dims, int) else dims)))
                buf = self.static[n.outs[0]] = _buffer(outs[0])
                self.calls.append((_sum_into, (args[0]._array(), axis, bool(kw.get("keepdim", False)),
                                               buf._array())))
                return
        if kind == "array" and n.spec.matmul_body and len(args) == 2 and \
                all(isinstance(t, Tensor) and t.ndim >= 2 and t.dtype is outs[0].dtype for t in args) and \
                np.dtype(outs[0].dtype.np).kind == "f":
            buf = self.static[n.outs[0]] = _buffer(outs[0])
            self.calls.append((_blas.matmul_into, (args[0]._array(), args[1]._array(), buf._array())))
            return
        if kind in _ELEMENTWISE_KINDS and not n.multi and self._elementwise(n, args, outs[0]):
            return
        if kind == "array" and self._array(n, args, outs):
            return
        bufs = [_buffer(o) for o in outs]
        for vid, b in zip(n.outs, bufs):
            self.static[vid] = b
        run = n.spec.run if kind in ("method", "factory", "view") and kind != "view" else None
        self.calls.append((_generic, (run, n.spec, args, n.scalars, [b._array() for b in bufs], n.multi)))

    def _array(self, n, args, outs):
        """An array op whose tensors all have the result's dtype (no promotion, no 16-bit floats): its NumPy
        body (kernels/array_ops.py) over the buffers' arrays, copied into the output buffers."""
        spec = n.spec
        if spec.list_arg is not None or len(args) != len(spec.tensor_args) or \
                not all(isinstance(t, Tensor) and t.device.type == "cpu" for t in args):
            return False
        dt = outs[0].dtype
        if dt.half or any(t.dtype is not dt and spec.arg_types[name] in _args.PROMOTED
                          for t, name in zip(args, spec.tensor_args)) or any(o.dtype.half for o in outs):
            return False
        kw = dict(zip(spec.scalar_names, n.scalars))
        if kw:
            _args._wrap_dim_args(spec, kw, args[0].ndim)
        body = getattr(_array._array_ops, f"{spec.name}_forward")
        named = dict(zip(spec.tensor_args, [t._array() for t in args]))
        named.update(kw)
        bufs = [_buffer(o) for o in outs]
        for vid, b in zip(n.outs, bufs):
            self.static[vid] = b
        blas = [a for a in named.values() if isinstance(a, np.ndarray)] if spec.blas else None
        self.calls.append((_array_body, (body, named, [b._array() for b in bufs], n.multi, blas)))
        return True

    def _elementwise(self, n, args, out):
        """A single elementwise op: the eager kernel writing into the output's buffer (when no operand needs
        a cast, which would be a copy made now and stale later)."""
        spec = n.spec
        ts = [_args.as_tensor_arg(t) for t in args]
        try:
            compute, out_dtype = _args._result_dtypes(spec, ts)
            ins = _args._operands(spec, ts, compute)
        except Exception:
            return False
        if out_dtype is not out.dtype or out_dtype.half or any(t.dtype.half for t in ts):
            return False
        # an operand cast now stays right for a Python number; a tensor (a bool mask ...) is cast at every
        # replay, into a buffer of its own, as the dispatcher casts it at every call
        ins = list(ins)
        for i, (a, b, ref) in enumerate(zip(ins, ts, n.args)):
            if a is not b and (ref[0] != "c" or isinstance(ref[1], Tensor)):
                cb = _buffer(a)
                self.calls.append((np.copyto, (cb._array(), b._array(), "unsafe")))
                ins[i] = cb
        buf = self.static[n.outs[0]] = _buffer(out)
        self.calls.append(_bind_elementwise(spec, ins, _args._kernel_scalars(spec, n.scalars, compute), buf))
        return True

    # ------------------------------------------------------------------ running
    def valid(self):
        for t, data, off, strides in self.checks.values():
            if t._storage.data is not data or t._offset != off or t._strides != strides:
                return False
        return True

    def run(self, inputs):
        self.inputs = inputs
        self.graph.draws.start()        # this call's counters for every draw of the step (tracer.Draws)
        for i, dst in self.in_copies:
            np.copyto(dst, inputs[i]._array())
        prev = grad_mode.state.enabled
        grad_mode.state.enabled = False
        try:
            for fn, args in self.calls:
                fn(*args)
        finally:
            grad_mode.state.enabled = prev
            self.inputs = None
        env = {}
        for vid, i in self.outs:
            env[vid] = inputs[i] if i is not None else _copy_out(self.static[vid])
        from . import _build
        return _build(self.graph.out_spec, env)


def _bind_elementwise(spec, ins, scalars, out):
    """(kernel, args) of the eager kernel computing `out` from `ins` (run_elementwise's choice of loop, made
    once): the contiguous loop over flat arrays, else the strided loop with its geometry arrays."""
    shape = out._shape
    n = L.numel(shape)
    if n == 0 or any(t.dtype.half for t in ins):
        return (_cpu.run_elementwise, (spec, ins, scalars, out))
    strides = [out._strides] + [L.broadcast_strides(t._shape, t._strides, shape) for t in ins]
    cshape, cstrides = L.collapse(shape, strides)
    if not cshape or (len(cshape) == 1 and all(st[0] == 1 for st in cstrides)):
        args = [flat_view(out)] + [flat_view(t) for t in ins]
        if _cpu._parallel(n):
            return (_cpu._run_contig, (spec.kernel("contig"), args, scalars, n))
        return (spec.kernel("contig"), (*args, *scalars))
    if len(cshape) >= 2 and n >= _cpu.BLOCK_MIN:
        return (_cpu.run_elementwise, (spec, ins, scalars, out))     # the blocked loop's choice: per call
    args = [np.array(cshape, np.int64), out._storage.data, out._offset, np.array(cstrides[0], np.int64)]
    for t, st in zip(ins, cstrides[1:]):
        args += [t._storage.data, t._offset, np.array(st, np.int64)]
    return (spec.kernel("strided"), (*args, *scalars))


def _is_copy(spec):
    """The op's scalar expression is its input itself (clone), or a fused backward kernel's formula is the
    incoming gradient itself (add's, sub's `self: grad`): a copy."""
    from . import codegen
    reg = codegen._registry()
    if spec.kind == "fused":
        name = spec.name[len("_bw_"):] if spec.name.startswith("_bw_") else ""
        for k in range(1, len(name)):       # "_bw_<op>_<arg>": op and arg names may hold underscores
            op, arg = name[:k], name[k + 1:]
            if name[k] == "_" and op in reg and any(a.name == arg for a in reg[op].signature.tensor_args):
                return (reg[op].formula(arg) or "").strip() == "grad"
        return False
    op = reg[spec.name]
    return op.scalar is not None and op.scalar.strip() == op.signature.tensor_args[0].name


def _is_sum(name):
    """A registry reduction that adds from 0 (sum): replayed as numpy's add.reduce in float64."""
    from . import codegen
    r = codegen._registry()[name].reduce
    return r is not None and str(r.identity) in ("0", "0.0") and r.combine.replace(" ", "") == "acc+x"


def _sum_into(x, axis, keepdim, out):
    # float64 accumulation, rounded once to the output dtype, as the eager reduction kernels do
    np.copyto(out, np.add.reduce(x, axis=axis, dtype=np.float64, keepdims=keepdim), casting="unsafe")


def _array_body(body, named, bufs, multi, blas):
    with np.errstate(all="ignore"):     # blas: its input arrays (small products on one BLAS thread, as eager)
        res = body(**named) if blas is None else _blas.serial_small(body, named, {}, blas)
    for b, r in zip(bufs, res if multi else (res,)):
        np.copyto(b, r, casting="unsafe")


def _drawing(region, call):
    region.fill_rstate()
    call[0](*call[1])


def _random_into(spec, out):
    np.copyto(out, spec.run()._array())


def _fill(arr, v):
    arr[...] = v


def _reduce_call(call, acc, identity, out):
    acc[0] = identity
    call[0](*call[1])
    if out is not acc:
        out[0] = acc[0]


def _generic(run, spec, args, scalars, bufs, multi):
    res = run(args, scalars) if run is not None else handler(spec)(spec, args, scalars)
    for b, r in zip(bufs, res if multi else (res,)):
        np.copyto(b, r._array())


def _leaf_tensor(bound, leaf):
    return bound.inputs[leaf[1]] if leaf[0] == "arg" else leaf[1]


def _set_grad(bound, leaf, value):
    t = _leaf_tensor(bound, leaf)
    if value is None or not isinstance(value, Tensor):
        t._grad = value
    elif value._offset == 0 and value._storage.data.shape[0] == L.numel(value._shape) and \
            L.is_contiguous(value._shape, value._strides):
        t._grad = Tensor._make(Storage(value._storage.data.copy()), 0, value._shape, value._strides, value.dtype,
                               value.device)
    else:
        t._grad = _copy_out(value)


def _read_grad(bound, leaf, dst):
    np.copyto(dst, _leaf_tensor(bound, leaf)._grad._array())


# ---------------------------------------------------------------------------------------- the optimizer

_ADAM = None


def _adam_kernel():
    global _ADAM
    if _ADAM is None:
        from . import codegen
        _ADAM = codegen.load(codegen.adam_source()).adam_update
    return _ADAM


def _opt_step(opt, cache):
    if not _fused_adam(opt, cache):
        opt.step()


def _adam_entry(opt, p, cache):
    """(state dict, step, exp_avg, exp_avg_sq and the flat arrays of p, exp_avg, exp_avg_sq) of a parameter the
    fused pass can update, checked once and kept while the state holds the same tensors; None otherwise."""
    state = opt.state.get(p)
    ent = cache.get(id(p))
    if ent is not None and ent[0] is state and ent[1] is p and len(state) == 3 and \
            state["step"] is ent[2] and state["exp_avg"] is ent[3] and state["exp_avg_sq"] is ent[4] and \
            p._storage.data is ent[8]:
        return ent
    if not state or set(state) != {"step", "exp_avg", "exp_avg_sq"}:
        return None
    step_t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
    if any(t.device.type != "cpu" or t.dtype is not p.dtype or t._shape != p._shape or
           not L.is_contiguous(t._shape, t._strides) for t in (p, m, v)) or \
            np.dtype(p.dtype.np).kind != "f" or np.dtype(p.dtype.np).itemsize < 4 or step_t.numel() != 1:
        return None
    ent = cache[id(p)] = (state, p, step_t, m, v, flat_view(p), flat_view(m), flat_view(v), p._storage.data)
    return ent


def _fused_adam(opt, cache):
    """optim.Adam / AdamW's step as one generated pass per parameter (False: not this optimizer or an option
    the pass does not cover -- the optimizer's own step() runs then)."""
    from ..optim.adam import Adam
    if not isinstance(opt, Adam) or type(opt).step is not Adam.step:
        return False
    kernel = _adam_kernel()
    work = []
    for group in opt.param_groups:
        lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        if group["amsgrad"] or not all(type(x) in (int, float) for x in (lr, eps, wd, beta1, beta2)):
            return False
        scalars = (float(beta1), float(beta2), float(lr), float(wd), float(eps))
        flags = (float(bool(group["maximize"])), float(bool(group["decoupled_weight_decay"])))
        for p in group["params"]:
            g = p._grad
            if g is None:
                continue
            ent = _adam_entry(opt, p, cache)
            if ent is None or g.dtype is not p.dtype or g._shape != p._shape or \
                    not L.is_contiguous(g._shape, g._strides) or g.device.type != "cpu":
                return False
            work.append((ent, flat_view(g), scalars, flags))
    for ent, gf, (beta1, beta2, lr, wd, eps), (maximize, decoupled) in work:
        _, p, step_t, m, v, pf, mf, vf, _ = ent
        data = step_t._storage.data
        data[step_t._offset] += 1                  # state["step"] += 1, as optim.Adam's _bump
        step = float(data[step_t._offset])
        bc1 = 1 - beta1 ** step
        bc2s = (1 - beta2 ** step) ** 0.5
        kernel(pf, gf, mf, vf, beta1, beta2, lr, wd, eps, bc1, bc2s, maximize, decoupled)
        for t in (step_t, p, m, v):
            t._storage.version += 1
    return True
