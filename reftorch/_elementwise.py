"""Elementwise ops (unary, binary, ternary and fused backward kernels) on the cpu: one plan per argument signature.

A plan (_Plan) is keyed by the op and its arguments' signature -- each argument's dtype, 0-d-ness and
wrapped-ness, or the type of a Python number -- and built once by the general promotion code. It holds what
every call with that signature needs: the compute and result dtypes, each argument's conversion, the compiled
kernels' entry points (Numba's dispatcher spends ~0.7 µs typing the arguments of every call) and caches of what
equal calls repeat. A call is: look up the plan, run it (_Plan.run). Same-shape dense operands are its cheapest
geometry (one flat loop, _run_dense); any other layout broadcasts and keeps the input's memory order
(_run_general). Per-op overhead is what small tensors pay (DESIGN §5).

16-bit float signatures have a plan too (fmt: its format), whose dense case runs the cpu_half kernel on the bit
patterns with float32 kernel scalars, as _cpu.run_half does; their other calls (casts, Python numbers, other
layouts) and ops with other tensor argument kinds (masks, indices) take _elementwise, which promotes on every
call and runs _cpu.run_elementwise (run_half for 16-bit storage).
"""
from __future__ import annotations

import numpy as np

import reftorch._backend as _backend
import reftorch._chalf as _chalf
import reftorch._dtype as D
import reftorch._cpu as _cpu
import reftorch._cuda_dispatch as _cuda_d
import reftorch._intercept as _intercept
import reftorch._layout as L
from ._args import _cast, _info, _result_layout, _kernel_scalars, _operands, _result_dtypes, _shape_info, as_tensor_arg
from ._cpu import bits, empty, half_kernel, run_elementwise, _run_contig
from ._spec import fused_spec
from ._tensor import Storage, Tensor
import reftorch.autograd.grad_mode as grad_mode

_CHALF = D.complex32
_make_tensor = Tensor._make
_requires_grad = Tensor.__dict__["requires_grad"].__get__   # the raw slot (bind() adds a property later)
_PY_SCALAR_NP = {bool: np.bool_, int: np.int64, float: np.float64}  # as as_tensor_arg wraps them
_U16 = np.uint16    # 16-bit floats as the bit patterns their kernels take


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
    elif plan is False:     # a signature the general path serves (complex32), known from its first call
        return None
    return plan


def elementwise(spec, tensors, scalars):
    if _cuda_d.used:        # an argument on cuda or meta: its back end
        be = _backend.off_cpu(tensors)
        if be is not None:
            return be.elementwise(spec, tensors, scalars)
    if spec.plans is not None:
        plan = _plan_for(spec, tensors)
        if plan is not None:
            return plan.run(tensors, scalars)
    return _elementwise(spec, tensors, scalars)


def _elementwise(spec, tensors, scalars):
    ts = [as_tensor_arg(t) for t in tensors]
    compute, out_dtype = _result_dtypes(spec, ts)
    if compute is _CHALF:       # complex32: computed in complex64, rounded back (reftorch/_chalf.py); the op
        with grad_mode.no_grad():       # itself is recorded on complex32 by the dispatcher
            return _chalf.call(spec, tensors, scalars, elementwise)
    shape = L.broadcast_shapes(*[t._shape for t in ts])
    ins = _operands(spec, ts, compute)
    out = empty(shape, out_dtype, None if "memory_format" in spec.arg_types else _result_layout(shape, ts))
    run_elementwise(spec, ins, _kernel_scalars(spec, scalars, compute), out)
    return out


# ---------------------------------------------------------------------------- the plan (see the module docstring)


_geometry = {}          # (collapsed shape, strides...) -> the int64 arrays a strided kernel takes
DENSE_NUMBERS = 256     # operand size up to which a Python number goes in as a cached array of that size


class _Plan:
    """Everything a call with one argument signature needs, worked out once by the general promotion code: the
    compute and result dtypes, each argument's conversion (conv: None for a Tensor of the compute dtype, a dtype to
    cast to, or (wrapping NumPy type, compute dtype) for a Python number), the kernels' entry points, and caches of
    what equal calls repeat (kernel scalars, Python numbers as arrays, strided geometry)."""
    __slots__ = ("spec", "compute", "out", "out_np", "conv", "plain", "numbers", "tensor_pos", "dense", "floats",
                 "bool_guard", "keep_layout", "entries", "ks", "consts", "dense_numbers", "geo", "fmt", "layouts")

    def __init__(self, spec, compute, out, conv):
        self.spec, self.compute, self.out, self.out_np, self.conv = spec, compute, out, out.np, conv
        self.fmt = compute.half     # "bf16"/"f16": the kernels of cpu_half, on bit patterns
        self.plain = all(c is None for c in conv)     # every argument a Tensor already of the compute dtype
        numbers = tuple(i for i, c in enumerate(conv) if c.__class__ is tuple)
        self.numbers = numbers or None                # the positions of Python numbers (a * 2)
        self.tensor_pos = tuple(i for i, c in enumerate(conv) if c.__class__ is not tuple)
        # the dense case needs no cast: Tensors of the compute dtype, and Python numbers beside at least one
        self.dense = self.tensor_pos != () and all(c is None or c.__class__ is tuple for c in conv) and \
            (self.fmt is None or numbers == ())
        # kernel scalars of a floating compute dtype go in as Python floats (see _fast_scalars); a 16-bit one's
        # are rounded as the op says (scalars_in_dtype), by _kernel_scalars
        self.floats = compute.category == 2 and bool(spec.kernel_idx) and self.fmt is None
        self.bool_guard = bool(spec.in_dtype_pos)
        self.keep_layout = "memory_format" not in spec.arg_types    # clone (.contiguous()) returns row-major
        self.entries = {}       # (kernel suffix, kernel scalar types) -> the compiled entry point
        self.ks = {}            # scalars -> (kernel scalars, contig entry key, strided entry key)
        self.consts = {}        # Python number -> its 1-element compute-dtype tensor (_const)
        self.dense_numbers = {}     # (Python number, n) -> an array of n copies of it (_dense_number)
        self.geo = {}           # n -> the stride-0 strided kernel's arguments (_numbers_args)
        self.layouts = {}       # the operands' (shape, strides) -> what _run_general works out of them

    def run(self, tensors, scalars):
        """The call: its kernel scalars (kept ones when these scalars were seen before, see _fast_scalars), then
        the cheapest geometry that fits -- every Tensor of one shape and dense from its offset runs one flat loop
        over the n elements, Python numbers going in as arrays of n copies (small n: the contig kernel costs half a
        strided one) or broadcast by stride 0 (large n); anything else is _run_general's -- then the graph node
        when an input requires grad."""
        spec = self.spec
        try:
            sc = self.ks.get(scalars)
        except TypeError:       # an unhashable argument: _fast_scalars says what is wrong
            sc = None
        if sc is not None and self.bool_guard:
            for i in spec.in_dtype_pos:     # True == 1: a kept value of alpha=1 must not serve alpha=True,
                if scalars[i].__class__ is bool:    # which PyTorch refuses for a non-bool result
                    sc = None
        if sc is None:
            sc = _fast_scalars(spec, self, scalars)
        out = None
        if self.dense:
            shape = tensors[self.tensor_pos[0]]._shape
            info = _shape_info.get(shape)
            if info is None:
                info = _info(shape)
            cs, n = info
            small = n <= DENSE_NUMBERS
            args = [None]
            fmt = self.fmt
            for t, c in zip(tensors, self.conv):
                if c is None:
                    if t._strides != cs or t._shape != shape:
                        break
                    off = t._offset
                    # (a storage may run past n elements: the kernels loop over the output)
                    a = t._storage.data if not off else t._storage.data[off:off + n]
                    args.append(a if fmt is None else a.view(_U16))     # (a Tensor of the 16-bit compute dtype)
                else:
                    args.append(_dense_number(self, t, c, n) if small else _const(self, t, c)._storage.data)
            else:
                odata = np.empty(n, self.out_np)
                out = _make_tensor(Storage(odata), 0, shape, cs, self.out)
                if n:
                    args[0] = odata if fmt is None else bits(odata)
                    fn = self.entries.get(sc[1]) if small or self.numbers is None else None
                    if fn is not None and n < _cpu.PARALLEL_MIN:
                        fn(*args, *sc[0])   # the commonest call of all: the contig kernel's entry point
                    else:
                        _run_dense(spec, self, args, sc, n, small)
        if out is None:
            out = _run_general(spec, self, tensors, sc) if self.fmt is None else _elementwise(spec, tensors, scalars)
        return out


def _new_plan(spec, tensors, key):
    ts = [as_tensor_arg(t) for t in tensors]
    compute, out_dtype = _result_dtypes(spec, ts)     # raises the op's own dtype errors
    if compute is _CHALF or (out_dtype.half or compute.half) and not \
            (compute.half and (out_dtype is compute or out_dtype.category < 2)):
        # complex32 runs through complex64 (_chalf.py), a cast into or out of 16 bits through run_half's
        # temporary: promoted by the general path on each call
        spec.plans[key] = False
        return None
    conv = []
    for t in tensors:
        if isinstance(t, Tensor):
            conv.append(None if t.dtype is compute else compute)
        else:
            conv.append((_PY_SCALAR_NP[type(t)], compute))
    plan = _Plan(spec, compute, out_dtype, tuple(conv))
    if len(spec.plans) > 256:
        spec.plans.clear()
    spec.plans[key] = plan
    return plan


def _fast_scalars(spec, plan, scalars):
    """(kernel scalars, contig entry key, strided entry key) of a call, converted (raising the op's scalar errors)
    and kept in plan.ks where equal scalars surely give equal kernel values: no kernel scalars at all, or nonzero
    Python numbers going in as floats (0.0 == -0.0 and NaN != NaN: never kept)."""
    keep = True
    ks = None
    if not scalars or spec.kernel_idx == ():
        ks = ()
    elif plan.floats:       # a floating compute dtype: Python numbers go in as floats
        ks = []
        for i in spec.kernel_idx:
            v = scalars[i]
            tp = v.__class__
            if tp is float or tp is int or tp is bool and not spec.in_dtype_pos:
                ks.append(float(v))
            else:
                ks = None
                break
        keep = ks is not None and all(v.__class__ in _PY_SCALAR_NP and v != 0 for v in scalars)
    if ks is None:
        ks = _kernel_scalars(spec, scalars, plan.compute)
        keep = False
        if plan.fmt is not None:    # float32 arithmetic in the 16-bit kernels, as _cpu.run_half passes them;
            ks = [np.float32(v) if v.__class__ is float else v for v in ks]     # (a value of the scalars alone)
            keep = all(v.__class__ in _PY_SCALAR_NP and v != 0 for v in scalars)
    types = tuple(map(type, ks))
    hit = (ks, ("contig", types), ("strided", types))
    if keep and len(plan.ks) < 64:
        try:
            plan.ks[scalars] = hit
        except TypeError:   # (an unhashable scalar the op ignores)
            pass
    return hit


def _entry(spec, plan, suffix, ekey, args, ks):
    """The compiled kernel for these argument types: the overload's entry point once Numba has compiled
    (or loaded) it for exactly these types, else the dispatcher. None the first time, which runs the call."""
    disp = spec.kernel(suffix) if plan.fmt is None else half_kernel(spec.name, plan.fmt, suffix)
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


def _run_dense(spec, plan, args, sc, n, small):
    """Run the kernel over the flat arrays of _Plan.run's dense case (args[0] the output's)."""
    ks, ckey, skey = sc
    if plan.numbers is not None and not small:
        suffix, ekey, args = "strided", skey, _numbers_args(plan, n, args)
    else:
        suffix, ekey = "contig", ckey
    fn = plan.entries.get(ekey)
    if fn is None:
        _entry(spec, plan, suffix, ekey, args, ks)      # (runs the call)
    elif n >= _cpu.PARALLEL_MIN and suffix == "contig":
        _run_contig(fn, args, ks, n)
    else:
        fn(*args, *ks)


def _numbers_args(plan, n, flat):
    """The 1-D strided kernel's arguments for the flat arrays of _run_dense (Python numbers as 1-element arrays):
    [shape, out, 0, out strides] then (data, 0, strides) per argument, stride 0 for the numbers (geometry cached)."""
    args = plan.geo.get(n)
    if args is None:
        one, zero = np.ones(1, np.int64), np.zeros(1, np.int64)
        args = [np.array((n,), np.int64), None, 0, one]
        for i in range(len(plan.conv)):
            args += [None, 0, zero if i in plan.numbers else one]
        if len(plan.geo) > 64:
            plan.geo.clear()
        plan.geo[n] = args
    args = args.copy()
    args[1] = flat[0]
    for i in range(1, len(flat)):
        args[1 + 3 * i] = flat[i]
    return args


def _run_general(spec, plan, tensors, sc):
    """Any geometry: arguments cast, shapes broadcast, the result in the memory order of the first input of its
    shape (as PyTorch's TensorIterator); small row-major results take the strided kernel's entry point, the rest
    _cpu.run_elementwise (blocked for disagreeing stride orders, threaded when large). What the operands' shapes
    and strides decide is worked out once per plan (_general_layout)."""
    ins = tensors if plan.plain else _convert(plan, tensors)
    key = []
    for t in ins:
        key.append((t._shape, t._strides))
    key = tuple(key)
    g = plan.layouts.get(key)
    if g is None:
        g = _general_layout(plan, ins)
        if len(plan.layouts) > 64:
            plan.layouts.clear()
        plan.layouts[key] = g
    shape, cs, n, layout, geo = g
    if geo is None:
        out = empty(shape, plan.out, layout)
        run_elementwise(spec, ins, sc[0], out)
        return out
    out = _make_tensor(Storage(np.empty(n, plan.out_np)), 0, shape, cs, plan.out)
    if n:
        _run_geometry(spec, plan, ins, sc, out, n, 0, geo)
    return out


def _general_layout(plan, ins):
    """(shape, row-major strides, n, the result's layout, geo) of operands ins: geo the strided kernel's geometry
    (_strided_geometry) for a small row-major result, None where _cpu.run_elementwise runs."""
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
    layout = _result_layout(shape, ins) if plan.keep_layout else None
    geo = _strided_geometry(ins, shape, cs, cs) if layout is None and n < _cpu.BLOCK_MIN else None
    return shape, cs, n, layout, geo


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


def _dense_number(plan, v, c, n):
    """Python number v as an array of n elements of the compute dtype, cached per (value, n) like _const."""
    key = (v, n)
    a = plan.dense_numbers.get(key)
    if a is None or v == 0 or v != v:       # (0.0 == -0.0 and NaN != NaN: never shared)
        a = np.full(n, _const(plan, v, c)._storage.data[0], c[1].np)     # (kernels never write their inputs;
        if len(plan.dense_numbers) < 16:                                  # a read-only array would compile anew)
            plan.dense_numbers[key] = a
    return a


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


_CONTIG = "contig"      # _strided_geometry's answer when every operand walks the shape densely


def _run_strided(spec, plan, ins, sc, out, shape, cs, n, o_off, o_st):
    """Run the kernel into out (offset o_off, strides o_st) over inputs broadcast to shape; sc is _fast_scalars'."""
    _run_geometry(spec, plan, ins, sc, out, n, o_off, _strided_geometry(ins, shape, cs, o_st))


def _strided_geometry(ins, shape, cs, o_st):
    """_CONTIG when the output (strides o_st) and every input walk shape densely, else the strided kernel's int64
    arrays: the collapsed shape, then the output's and each input's strides (kept in _geometry)."""
    strides = [o_st]
    contig = o_st == cs
    for t in ins:
        if t._shape == shape and t._strides == cs:
            strides.append(cs)
        else:
            contig = False
            strides.append(L.broadcast_strides(t._shape, t._strides, shape))
    if contig:
        return _CONTIG
    gkey = (shape, *strides)
    geo = _geometry.get(gkey)
    if geo is None:
        cshape, cstrides = L.collapse(shape, strides)
        geo = [np.array(cshape, np.int64)] + [np.array(st, np.int64) for st in cstrides]
        if len(_geometry) > 4096:
            _geometry.clear()
        _geometry[gkey] = geo
    return geo


def _run_geometry(spec, plan, ins, sc, out, n, o_off, geo):
    """The contig kernel (geo _CONTIG) or the strided one over _strided_geometry's arrays, into out from o_off."""
    ks, ckey, skey = sc
    odata = out._storage.data
    if geo is _CONTIG:
        suffix = "contig"
        args = [odata[o_off:o_off + n]]
        if ins[0] is out:       # in place: out passed once (see emit_cpu.inplace_kernel)
            suffix, ckey, ins = "inplace", ("inplace", ckey), ins[1:]
        args += [t._storage.data[t._offset:t._offset + n] for t in ins]
        fn = plan.entries.get(ckey)
        if fn is None:
            _entry(spec, plan, suffix, ckey, args, ks)
        else:
            fn(*args, *ks)
        return
    args = [geo[0], odata, o_off, geo[1]]
    for t, g in zip(ins, geo[2:]):
        args += [t._storage.data, t._offset, g]
    fn = plan.entries.get(skey)
    if fn is None:
        _entry(spec, plan, "strided", skey, args, ks)
    else:
        fn(*args, *ks)


def fused(name, tensors, scalars):
    """A fused backward kernel: an elementwise op generated from a derivative formula (reftorch._functional._fused)."""
    spec = fused_spec(name, len(tensors))
    if _intercept.tracer is not None:     # reftorch.compile records the backward of a step it captures
        return _intercept.tracer.call(spec, tensors, scalars)
    return elementwise(spec, tensors, scalars)
