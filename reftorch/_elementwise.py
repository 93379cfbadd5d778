"""Elementwise ops (unary, binary, ternary and fused backward kernels) on the cpu: the plan and its runs.

The first call with a given key -- each argument's dtype, 0-d-ness and wrapped-ness, or the type of a Python
number -- runs the general promotion code once (_elementwise) and keeps the result as a plan (_Plan); later calls
with that key skip promotion, and same-shape contiguous operands skip broadcasting and collapsing too. The compiled
kernel is called through its entry point once its exact signature is known (Numba's dispatcher spends ~0.7 µs
typing the arguments of every call). Per-op overhead is what small tensors pay (DESIGN §5).

A plan runs the cheapest case that fits (plan.run): _lean_contig (every operand contiguous, of one shape, from
offset 0) falls back to _fast_elementwise (same shape with offsets, Python numbers, broadcasting), which ends in
the general runner (_cpu.run_elementwise) for layouts it does not cache. Ops with other tensor argument kinds
(masks, indices) and 16-bit dtypes take _elementwise, the general path.
"""
from __future__ import annotations

import numpy as np

import reftorch._backend as _backend
import reftorch._cpu as _cpu
import reftorch._cuda_dispatch as _cuda_d
import reftorch._intercept as _intercept
import reftorch._layout as L
from ._args import _cast, _info, _result_layout, _kernel_scalars, _operands, _result_dtypes, _shape_info, as_tensor_arg
from ._cpu import empty, run_elementwise, _run_contig
from ._spec import fused_spec
from ._tensor import Storage, Tensor
import reftorch.autograd.grad_mode as grad_mode
from .autograd.record import record

_make_tensor = Tensor._make
_requires_grad = Tensor.__dict__["requires_grad"].__get__   # the raw slot (bind() adds a property later)
_PY_SCALAR_NP = {bool: np.bool_, int: np.int64, float: np.float64}  # as as_tensor_arg wraps them


def _plan_for(spec, tensors):
    """The op's cached plan for these arguments' types, or None when the general path must run."""
    key = []
    for t in tensors:
        if isinstance(t, Tensor):
            key.append(t.dtype if t._shape else (t.dtype, t._wrapped))    # (wrapped numbers are 0-d)
        else:
            tp = type(t)
            if tp is float or tp is int or tp is bool:
                key.append(tp)
            else:
                return None
    key = tuple(key)
    plan = spec.plans.get(key)
    if plan is None:
        plan = _new_plan(spec, tensors, key)
    return plan


def elementwise(spec, tensors, scalars):
    if _cuda_d.used:        # an argument on cuda or meta: its back end
        be = _backend.off_cpu(tensors)
        if be is not None:
            return be.elementwise(spec, tensors, scalars)
    if spec.plans is not None:
        plan = _plan_for(spec, tensors)
        if plan is not None:
            return plan.run(spec, plan, tensors, scalars)
    return _elementwise(spec, tensors, scalars)


def _elementwise(spec, tensors, scalars):
    ts = [as_tensor_arg(t) for t in tensors]
    compute, out_dtype = _result_dtypes(spec, ts)
    shape = L.broadcast_shapes(*[t._shape for t in ts])
    ins = _operands(spec, ts, compute)
    out = empty(shape, out_dtype, None if "memory_format" in spec.arg_types else _result_layout(shape, ts))
    run_elementwise(spec, ins, _kernel_scalars(spec, scalars, compute), out)
    if spec.differentiable and grad_mode.state.enabled:
        record(spec, ts, scalars, (out,))
    return out


# ---------------------------------------------------------------------------- the plan (see the module docstring)


_geometry = {}          # (collapsed shape, strides...) -> the int64 arrays a strided kernel takes


class _Plan:
    __slots__ = ("compute", "out", "out_np", "conv", "plain", "entries", "float_key", "consts", "numbers", "geo",
                 "lean", "ks", "run", "tensor_pos", "dense")

    def __init__(self, compute, out, conv, n_kernel_scalars):
        self.float_key = ("contig", (float,) * n_kernel_scalars) \
            if compute.category == 2 and n_kernel_scalars else None
        self.compute, self.out, self.out_np, self.conv = compute, out, out.np, conv
        self.plain = all(c is None for c in conv)     # every argument a Tensor already of the compute dtype
        # Tensors of the compute dtype and at least one Python number (a * 2): the numbers' positions
        self.numbers = tuple(i for i, c in enumerate(conv) if c.__class__ is tuple) \
            if all(c is None or c.__class__ is tuple for c in conv) and not self.plain and \
            any(c is None for c in conv) else None
        self.tensor_pos = tuple(i for i, c in enumerate(conv) if c.__class__ is not tuple)   # (not numbers)
        self.geo = {}                                 # numel -> the strided kernel's arguments (_numbers_args)
        self.entries = {}                             # (kernel suffix, kernel scalar types) -> callable
        self.consts = {}                              # Python number -> its 1-element compute-dtype tensor
        # _lean_contig serves call() for plain plans whose kernel scalars (if any) go in as floats; it finds the
        # floats of scalars it has seen in ks
        self.lean = (self.plain or self.numbers is not None) and (not n_kernel_scalars or self.float_key is not None)
        self.ks = {}
        self.dense = {}                               # (Python number, n) -> its dense array (_dense_number)
        self.run = _lean_contig if self.lean else _fast_elementwise


def _new_plan(spec, tensors, key):
    ts = [as_tensor_arg(t) for t in tensors]
    compute, out_dtype = _result_dtypes(spec, ts)     # raises the op's own dtype errors
    if compute.half or out_dtype.half:
        return None             # 16-bit storage runs through run_elementwise's half path (_cpu.run_half)
    conv = []
    for t in tensors:
        if isinstance(t, Tensor):
            conv.append(None if t.dtype is compute else compute)
        else:
            conv.append((_PY_SCALAR_NP[type(t)], compute))
    plan = _Plan(compute, out_dtype, tuple(conv), len(spec.kernel_idx) if spec.kernel_idx else 0)
    if len(spec.plans) > 256:
        spec.plans.clear()
    spec.plans[key] = plan
    return plan


def _entry(spec, plan, suffix, args, ks):
    """The compiled kernel for these argument types: the overload's entry point once Numba has compiled
    (or loaded) it for exactly these types, else the dispatcher."""
    ekey = (suffix, tuple(map(type, ks))) if ks else suffix
    fn = plan.entries.get(ekey)
    if fn is None:
        disp = spec.kernel(suffix)
        disp(*args, *ks)              # compiles or loads the overload (and does this call's work)
        fn = disp
        try:
            sig = tuple(disp.typeof_pyval(a) for a in (*args, *ks))
            ov = disp.overloads.get(sig)
            if ov is not None and not ov.objectmode:
                fn = ov.entry_point
        except Exception:   # noqa: BLE001 -- an older/newer Numba without these: the dispatcher is fine
            pass
        plan.entries[ekey] = fn
        return None
    return fn


def _fast_scalars(spec, plan, scalars):
    """(kernel scalars, entry key) for the contiguous kernel."""
    if scalars and spec.kernel_idx != ():
        ks = None
        if plan.float_key is not None:      # floating compute dtype: Python numbers go in as floats
            ks = []
            for i in spec.kernel_idx:
                v = scalars[i]
                tp = v.__class__
                if tp is float or tp is int or tp is bool and not spec.in_dtype_pos:
                    ks.append(float(v))
                else:
                    ks = None
                    break
        if ks is None:
            ks = _kernel_scalars(spec, scalars, plan.compute)
            return ks, ("contig", tuple(map(type, ks)))
        return ks, plan.float_key
    return (), "contig"


def _const(plan, t, c):
    """Python number t as a 0-d tensor of the compute dtype c[1] (through c[0], the type it is wrapped as)."""
    k = plan.consts.get(t)      # kernels only read their inputs, so equal numbers share one
    if k is None or t == 0 or t != t:   # (0.0 == -0.0 and NaN != NaN: those are never shared)
        a = np.array((t,), c[0])
        if a.dtype != c[1].np:
            a = a.astype(c[1].np)
        k = _make_tensor(Storage(a), 0, (), (), c[1])
        if len(plan.consts) < 64:
            plan.consts[t] = k
    return k


def _convert(plan, tensors):
    """The arguments as tensors of the compute dtype (Python numbers as 1-element arrays)."""
    ins = []
    for t, c in zip(tensors, plan.conv):
        if c is None:
            ins.append(t)
        elif c.__class__ is tuple:      # a Python number: a 1-element array of the compute dtype
            ins.append(_const(plan, t, c))
        else:
            ins.append(_cast(t, c))
    return ins


def _numbers_args(plan, n):
    """The argument list of the 1-D strided kernel call over n elements where every Tensor argument is dense
    (stride 1) and every Python number a broadcast 1-element array (stride 0): [shape, out, 0, out strides] then
    (data, offset, strides) per argument, data and offsets left for the caller to fill in a copy."""
    args = plan.geo.get(n)
    if args is None:
        one, zero = np.ones(1, np.int64), np.zeros(1, np.int64)
        args = [np.array((n,), np.int64), None, 0, one]
        for i in range(len(plan.conv)):
            args += [None, 0, zero if i in plan.numbers else one]
        if len(plan.geo) > 64:
            plan.geo.clear()
        plan.geo[n] = args
    return args


def _fast_numbers(spec, plan, tensors, scalars, ks, ekey):
    """_fast_elementwise for dense same-shape Tensors of the compute dtype with Python numbers (a * 2): the
    1-D strided kernel with cached geometry; None when the Tensors are not all dense and of one shape."""
    shape = None
    for i in plan.tensor_pos:
        t = tensors[i]
        if shape is None:
            shape = t._shape
            cs, n = _info(shape)
        if t._shape != shape or t._strides != cs:
            return None
    odata = np.empty(n, plan.out_np)
    out = _make_tensor(Storage(odata), 0, shape, cs, plan.out)
    if n:
        args = _numbers_args(plan, n).copy()
        args[1] = odata
        for i in plan.tensor_pos:
            t = tensors[i]
            args[4 + 3 * i] = t._storage.data
            args[5 + 3 * i] = t._offset
        for i in plan.numbers:
            args[4 + 3 * i] = _const(plan, tensors[i], plan.conv[i])._storage.data
        skey = ("strided", ekey[1]) if ekey.__class__ is tuple else "strided"
        fn = plan.entries.get(skey)
        if fn is None:
            fn = _entry(spec, plan, "strided", args, ks)
        if fn is not None:
            fn(*args, *ks)
    if spec.differentiable and grad_mode.state.enabled:
        for i in plan.tensor_pos:
            if _requires_grad(tensors[i]):
                record(spec, tensors, scalars, (out,))
                break
    return out


def _lean_contig(spec, plan, tensors, scalars):
    """_fast_elementwise's commonest cases spelled out for call(): every Tensor argument of the compute dtype, all of
    one shape, contiguous from offset 0, of a size run on one thread, and Python numbers (a * 2) only where the size
    is at most DENSE_NUMBERS (each becomes a cached array of that size); the kernel's entry known and its scalars
    (if any) Python numbers seen before. Anything else goes _fast_elementwise's way. At one element each Python
    opcode here is about 1% of the op's time."""
    numbers = plan.numbers
    shape = (tensors[0] if numbers is None else tensors[plan.tensor_pos[0]])._shape
    info = _shape_info.get(shape)
    if info is not None:
        cs, n = info
        if n < _cpu.PARALLEL_MIN and (numbers is None or n <= DENSE_NUMBERS):
            args = [None]
            for t in tensors:
                if numbers is not None and (t.__class__ is float or t.__class__ is int or t.__class__ is bool):
                    args.append(_dense_number(plan, t, n))      # (plan.numbers: these are the only non-Tensors)
                elif t._strides != cs or t._shape != shape or t._offset:
                    break
                else:
                    args.append(t._storage.data)    # (storage may run past n elements: the kernel loops over out)
            else:
                if plan.float_key is None:
                    fn, ks = plan.entries.get("contig"), ()
                else:
                    fn = plan.entries.get(plan.float_key)
                    try:
                        ks = plan.ks.get(scalars)
                    except TypeError:       # an unhashable argument: _fast_elementwise says what is wrong
                        ks = None
                    for i in spec.in_dtype_pos:     # True == 1: a bool alpha must meet _in_dtype_scalars' check
                        if scalars[i].__class__ is bool:
                            ks = None
                if fn is not None and ks is not None:
                    out = _make_tensor(Storage(np.empty(n, plan.out_np)), 0, shape, cs, plan.out)
                    if n:
                        args[0] = out._storage.data
                        fn(*args, *ks)
                    if spec.differentiable and grad_mode.state.enabled:
                        for i in plan.tensor_pos:
                            if _requires_grad(tensors[i]):
                                record(spec, tensors, scalars, (out,))
                                break
                    return out
                if numbers is not None and n:     # first call: _fast_elementwise never runs the contiguous
                    ks, ekey = _fast_scalars(spec, plan, scalars)   # kernel with numbers, so enter it here
                    _cache_ks(plan, scalars, ks, ekey)
                    fn = plan.entries.get(ekey)
                    if fn is None:
                        out = _make_tensor(Storage(np.empty(n, plan.out_np)), 0, shape, cs, plan.out)
                        args[0] = out._storage.data
                        _entry(spec, plan, "contig", args, ks)      # (runs the call)
                        if spec.differentiable and grad_mode.state.enabled and \
                                any(_requires_grad(tensors[i]) for i in plan.tensor_pos):
                            record(spec, tensors, scalars, (out,))
                        return out
    return _fast_elementwise(spec, plan, tensors, scalars)


DENSE_NUMBERS = 256     # operand size up to which a Python number goes in as a cached dense array (_lean_contig)


def _dense_number(plan, v, n):
    """Python number v as an array of n elements of the plan's compute dtype, cached per (value, n) like
    _const (a contiguous kernel call costs half a strided one's at small sizes)."""
    key = (v, n)
    a = plan.dense.get(key)
    if a is None or v == 0 or v != v:       # (0.0 == -0.0 and NaN != NaN: never shared)
        c = plan.conv[plan.numbers[0]]
        a = np.full(n, _const(plan, v, c)._storage.data[0], c[1].np)     # (kernels never write their inputs;
        if len(plan.dense) < 16:                                          # a read-only array would compile anew)
            plan.dense[key] = a
    return a


def _cache_ks(plan, scalars, ks, ekey):
    """Keep ks, the kernel floats of scalars, for _lean_contig where equal scalars give equal floats."""
    if plan.lean and scalars and ekey is plan.float_key and len(plan.ks) < 64 and \
            all(v.__class__ in _PY_SCALAR_NP and v != 0 for v in scalars):
        plan.ks[scalars] = ks   # floats of nonzero Python numbers: equal numbers, equal floats (unlike -0.0 and 0.0)


def _fast_elementwise(spec, plan, tensors, scalars):
    ks, ekey = _fast_scalars(spec, plan, scalars)
    _cache_ks(plan, scalars, ks, ekey)
    if plan.plain:
        t0 = tensors[0]
        shape = t0._shape
        info = _shape_info.get(shape)
        if info is None:
            info = _info(shape)
        cs, n = info
        for t in tensors:
            if t._shape != shape or t._strides != cs:
                break
        else:       # same shape, all contiguous: one flat loop
            odata = np.empty(n, plan.out_np)
            out = _make_tensor(Storage(odata), 0, shape, cs, plan.out)
            if n:
                args = [odata]
                for t in tensors:
                    d = t._storage.data
                    off = t._offset
                    args.append(d if off == 0 and len(d) == n else d[off:off + n])
                fn = plan.entries.get(ekey)
                if fn is None:
                    fn = _entry(spec, plan, "contig", args, ks)
                if fn is not None:
                    if n >= _cpu.PARALLEL_MIN:
                        _run_contig(fn, args, ks, n)
                    else:
                        fn(*args, *ks)
            if spec.differentiable and grad_mode.state.enabled:
                for t in tensors:
                    if _requires_grad(t):
                        record(spec, tensors, scalars, (out,))
                        break
            return out
        ins = tensors
    else:
        if plan.numbers is not None:
            out = _fast_numbers(spec, plan, tensors, scalars, ks, ekey)
            if out is not None:
                return out
        ins = _convert(plan, tensors)
    shape = None
    for t in ins:               # the shape: broadcasting only when the dimensioned operands disagree
        s = t._shape
        if s:
            if shape is None:
                shape = s
            elif s != shape:
                shape = L.broadcast_shapes(*[t._shape for t in ins])
                break
    if shape is None:
        shape = ()
    cs, n = _info(shape)
    layout = None if "memory_format" in spec.arg_types else _result_layout(shape, ins)
    if layout is None and n < _cpu.BLOCK_MIN:       # small and row-major: the cached-entry strided call
        out = _make_tensor(Storage(np.empty(n, plan.out_np)), 0, shape, cs, plan.out)
        if n:
            _run_strided(spec, plan, ins, ks, out, shape, cs, n, 0, cs)
    else:       # the input's memory order kept (as PyTorch does); large ones may go blocked or threaded
        out = empty(shape, plan.out, layout)
        run_elementwise(spec, ins, ks, out)
    if spec.differentiable and grad_mode.state.enabled:
        for t in tensors:
            if isinstance(t, Tensor) and _requires_grad(t):
                record(spec, tensors, scalars, (out,))
                break
    return out


def _run_strided(spec, plan, ins, ks, out, shape, cs, n, o_off, o_st):
    """Run the kernel into out (offset o_off, strides o_st) over inputs broadcast to shape."""
    odata = out._storage.data
    strides = [o_st]
    contig = o_st == cs
    for t in ins:
        if t._shape == shape and t._strides == cs:
            strides.append(cs)
        else:
            contig = False
            strides.append(L.broadcast_strides(t._shape, t._strides, shape))
    if contig:
        args = [odata[o_off:o_off + n]] + [t._storage.data[t._offset:t._offset + n] for t in ins]
        fn = _entry(spec, plan, "contig", args, ks)
        if fn is not None:
            fn(*args, *ks)
        return
    gkey = (shape, *strides)
    geo = _geometry.get(gkey)
    if geo is None:
        cshape, cstrides = L.collapse(shape, strides)
        geo = [np.array(cshape, np.int64)] + [np.array(st, np.int64) for st in cstrides]
        if len(_geometry) > 4096:
            _geometry.clear()
        _geometry[gkey] = geo
    args = [geo[0], odata, o_off, geo[1]]
    for t, g in zip(ins, geo[2:]):
        args += [t._storage.data, t._offset, g]
    fn = _entry(spec, plan, "strided", args, ks)
    if fn is not None:
        fn(*args, *ks)


def fused(name, tensors, scalars):
    """A fused backward kernel: an elementwise op generated from a derivative formula (reftorch._functional._fused)."""
    spec = fused_spec(name, len(tensors))
    if _intercept.tracer is not None:     # reftorch.compile records the backward of a step it captures
        return _intercept.tracer.call(spec, tensors, scalars)
    return elementwise(spec, tensors, scalars)
