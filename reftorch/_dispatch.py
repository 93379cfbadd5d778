"""The dispatcher: one code path per kind of op, none per op.

call(name, tensors, scalars) looks up the op's spec (generated from ops.yaml), then its kind's
handler parses arguments, promotes types, broadcasts, allocates, picks the kernel and records the
autograd node. Per-op knowledge comes only from the spec and the generated kernels.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

from ._layout import contiguous_array as _contig

from . import _dtype as D
from . import _layout as L
from . import _reference
from . import _cuda_dispatch as _cuda_d
from . import _meta
from . import _half
from . import _threads
from . import _alloc
from . import _autocast
from ._device import CPU
from ._tensor import Storage, Tensor, reinterpreted
from ._tensor import _set_requires_grad_slot
from .autograd import grad_mode
from .autograd.graph import NO_EDGE, OpNode, SavedTensor, grad_accumulator, gradient_edge
from .autograd.inplace import note_view, rebase_history, restride_history
from .autograd.anomaly_mode import record_trace
from .autograd import anomaly_mode as _anomaly
from .autograd.graph import _weakref_type
from .kernels import api as _api
from .kernels import array_ops as _array_ops
from . import _blas
from .kernels import composites as _composites
from .kernels import derivatives as _derivatives
from .kernels import views as _views

TENSOR_TYPES = ("Tensor", "Tensor?", "Tensor[]", "Index", "Index?", "Mask")
PROMOTED = ("Tensor", "Tensor?", "Tensor[]")
_make_tensor = Tensor._make
_requires_grad = Tensor.__dict__["requires_grad"].__get__   # the raw slot (bind() adds a property later)
_tracer = None  # reftorch.compile's Tracer while it records a call (every op then goes through it)
_cpu = None  # reftorch.kernels.cpu, imported on first kernel use (Numba import cost stays off `import reftorch`)


def _kernels():
    global _cpu
    if _cpu is None:
        from .kernels import cpu     # its _cache keeps SciPy and Numba's registries off warm-cache loads
        _cpu = cpu
    return _cpu


def _save_plan(spec):
    """How record() finds each value the op's formulas read, worked out once per op: ("result",),
    ("scalar", index), ("input", index) or ("attr", index or None for the result, attribute).
    None where the general lookup is needed (a Tensor[] argument)."""
    if spec.list_arg is not None:
        return None
    plan = []
    for key in spec.saves:
        if key in ("result", "results"):
            plan.append((key, None))
        elif "." in key:
            base, attr = key.split(".")
            if base == "result":
                plan.append(("attr", (None, attr)))
            elif base in spec.tensor_args:
                plan.append(("attr", (spec.tensor_args.index(base), attr)))
            else:
                return None
        elif key in spec.scalar_names:
            plan.append(("scalar", spec.scalar_names.index(key)))
        elif key in spec.tensor_args:
            plan.append(("input", spec.tensor_args.index(key)))
        else:
            return None
    return tuple(zip(spec.saves, plan))


class _KernelCache(dict):
    """An op's kernels by suffix. Replacing one (tests do, to check reference mode) also drops the entry
    points the op's plans took from the old one."""
    __slots__ = ("spec",)

    def __init__(self, spec):
        super().__init__()
        self.spec = spec

    def _forget(self):
        plans = self.spec.plans
        if plans:
            for plan in plans.values():
                plan.entries.clear()

    def __setitem__(self, key, value):
        replaced = key in self      # a new suffix: no plan holds an entry point of it yet
        dict.__setitem__(self, key, value)
        if replaced:
            self._forget()

    def __delitem__(self, key):
        dict.__delitem__(self, key)
        self._forget()


class OpSpec:
    """Runtime view of one ops.yaml entry (from the generated SPECS table)."""
    __slots__ = ("name", "kind", "args", "tensor_args", "scalar_names", "dtypes", "families", "result", "outputs",
                 "differentiable", "saves", "identity", "accumulate", "backward", "handler", "promote_idx",
                 "list_arg", "arg_types", "_kernel_cache", "tensor_types", "kernel_idx", "plans", "save_plan",
                 "rejects", "autocast", "cuda", "round_idx", "matmul_body", "blas", "in_dtype_pos", "geometry")

    def __init__(self, d):
        self.name = d["name"]
        self.kind = d["kind"]
        self.args = d["args"]
        self.tensor_args = tuple(a[0] for a in self.args if a[1] in TENSOR_TYPES)
        self.tensor_types = tuple(a[1] for a in self.args if a[1] in TENSOR_TYPES)
        self.arg_types = {a[0]: a[1] for a in self.args}
        self.list_arg = next((a[0] for a in self.args if a[1] == "Tensor[]"), None)
        self.scalar_names = tuple(a[0] for a in self.args if a[1] not in TENSOR_TYPES)
        self.dtypes = d["dtypes"]
        self.families = {f: True for f in d["dtypes"]}
        self.result = d["result"]
        self.outputs = d["outputs"]
        self.differentiable = d["differentiable"]
        self.saves = d["saves"]
        self.identity = d["identity"]
        self.accumulate = d["accumulate"]
        self.backward = getattr(_derivatives, f"{self.name}_backward", None)
        self.geometry = getattr(_views, self.name, None)      # view ops: their ops.yaml `geometry:` body
        kernel_args = d.get("kernel_args", ())
        self.kernel_idx = tuple(i for i, n in enumerate(self.scalar_names) if n in kernel_args) \
            if d["kind"] != "fused" else None
        self._kernel_cache = _KernelCache(self)
        # the lean elementwise path (see _fast_elementwise): one plan per argument-type key, for ops whose
        # tensor arguments are all plain promoted Tensors
        self.plans = {} if (self.kind in ("unary", "binary", "ternary", "fused")
                            and all(ty == "Tensor" for ty in self.tensor_types)) else None
        self.save_plan = _save_plan(self)
        self.rejects = d.get("rejects", ())
        self.autocast = d.get("autocast")     # ops.yaml `autocast:` policy (reftorch/_autocast.py), or None
        self.cuda = d.get("cuda")      # array ops: the device implementation (reftorch/_cuda_dispatch.py IMPLS)
        self.matmul_body = d.get("matmul_body", False)   # array ops whose body is checks + np.matmul(a, b)
        self.blas = d.get("blas", False)     # array ops whose body calls BLAS (small products: one thread, _blas.py)
        # positions among the kernel scalars of ops.yaml `scalars_in_dtype` (rounded for a 16-bit compute dtype)
        self.round_idx = tuple(i for i, n in enumerate(kernel_args) if n in d.get("scalars_in_dtype", ()))
        # their positions among the scalar arguments: PyTorch checks these against the result dtype (alpha_check)
        self.in_dtype_pos = tuple(i for i, n in enumerate(self.scalar_names) if n in d.get("scalars_in_dtype", ()))

    def check_inputs(self, ts):
        """PyTorch's refusals by input dtype (ops.yaml `rejects`), checked before any promotion."""
        fams = [D.FAMILIES[t.dtype.category] for t in ts]
        for quant, fam, msg in self.rejects:
            if (any if quant == "any" else all)(f == fam for f in fams):
                raise RuntimeError(msg)

    def check_dtype(self, dtype):
        fam = D.FAMILIES[dtype.category]
        if fam not in self.families:
            raise RuntimeError(f"\"{self.name}\" not implemented for '{dtype.short}'")

    def kernel(self, suffix):
        k = self._kernel_cache.get(suffix)
        if k is None:
            k = getattr(_kernels(), f"{self.name}_{suffix}")
            self._kernel_cache[suffix] = k
        return k


SPECS = {name: OpSpec(d) for name, d in _api.SPECS.items()}
_fused_specs = {}


# ---------------------------------------------------------------------------- helpers

def as_tensor_arg(x, dtype=None):
    """Python scalars and sequences become tensors; scalars are marked 'wrapped' for promotion."""
    if isinstance(x, Tensor):
        return x
    from ._creation import tensor as make_tensor, wrapped_scalar
    if isinstance(x, (bool, int, float, complex, np.number, np.bool_)):
        if dtype is None and isinstance(x, (float, np.floating)):
            dtype = D.float64       # a wrapped number keeps double precision (only its category promotes)
        elif dtype is None and isinstance(x, (complex, np.complexfloating)):
            dtype = D.complex128
        t = wrapped_scalar(x, dtype)
        t._wrapped = True
        return t
    if isinstance(x, np.ndarray):
        return Tensor._from_array(x)
    return make_tensor(x)


def new_tensor(arr, dtype):
    """A fresh tensor owning a contiguous array."""
    flat = arr.reshape(-1)
    return Tensor._make(Storage(flat), 0, arr.shape, L.contiguous_strides(arr.shape), dtype)


def empty(shape, dtype, strides=None):
    n = L.numel(shape)
    try:
        data = np.empty(n, dtype.np)
    except (ValueError, MemoryError):   # too big for any memory: PyTorch's error (reftorch/_alloc.py)
        raise _alloc.error(shape, dtype.itemsize) from None
    return Tensor._make(Storage(data), 0, tuple(shape), strides or L.contiguous_strides(shape), dtype)


def promoted(spec, ts):
    """Result type of the op's promotable tensor arguments (PyTorch's three tiers)."""
    dim, zero, scal = [], [], []
    for t in ts:
        if t._wrapped:
            scal.append(t.dtype.category)
        elif t._shape:
            dim.append(t.dtype)
        else:
            zero.append(t.dtype)
    return D.result_type(dim, zero, scal)


def _cast(t, dtype):
    """t converted to dtype (a no-op when it already is); wrapped scalars convert for free."""
    if t.dtype is dtype:
        return t
    if dtype.half or t.dtype.half:
        out = empty(t._shape, dtype)
        if _half.cast_into(t, out):     # float32 <-> 16 bits in a kernel, rounding as NumPy does
            out._wrapped = t._wrapped
            return out
        with np.errstate(over="ignore", invalid="ignore"):     # out of range rounds to inf, silently
            arr = t._array().astype(dtype.np)
    else:
        arr = t._array().astype(dtype.np)
    out = new_tensor(_contig(arr), dtype)
    out._wrapped = t._wrapped
    return out


def _result_dtypes(spec, ts):
    """(compute dtype, output dtype) of an elementwise op."""
    promotable = [t for t, ty in zip(ts, spec.tensor_types) if ty in PROMOTED]
    if spec.rejects:
        spec.check_inputs(promotable)
    dt = promoted(spec, promotable)
    spec.check_dtype(dt)
    if spec.result in ("float", "real_float") and dt.category < 2:
        dt = D.defaults.float
    out = {"bool": D.bool_, "int64": D.int64}.get(spec.result, dt)
    if spec.result in ("real", "real_float"):   # a real function of a complex number (abs, angle)
        out = dt.to_real()
    return dt, out


# ---------------------------------------------------------------------------- elementwise

BLOCK_MIN = 1 << 16  # elements from which operands with disagreeing stride orders take the blocked kernel
# Kernels release the GIL: from PARALLEL_MIN elements on, a contiguous elementwise kernel (or a reduction)
# runs in THREADS chunks at once, as PyTorch's intra-op pool does: every usable core by default, from a size
# (benches/compare.py's parallel threshold measures where threads start to pay) on. No load test: the
# 1-minute load average lags by a minute and counts this process's own threads, so on a quiet machine it kept
# large ops on one core (0.47x torch's broadcast add). THREADS is REFTORCH_NUM_THREADS, else NUMBA_NUM_THREADS
# (CI sets 1), else the usable CPUs; torch.set_num_threads caps it.
PARALLEL_MIN = int(os.environ.get("REFTORCH_PARALLEL_MIN", 1 << 21))
THREADS = int(os.environ.get("REFTORCH_NUM_THREADS") or os.environ.get("NUMBA_NUM_THREADS") or
              (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def set_num_threads(n):
    """The threads reftorch's kernels use (this one and THREADS - 1 in the pool) and the BLAS's threads for large
    products; small products stay on one BLAS thread (reftorch/_blas.py)."""
    global THREADS
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    THREADS = n                         # the next parallel op's pool has the new size (reftorch/_threads.py)
    _blas.set_max_threads(n)


def get_num_threads():
    return THREADS


def _parallel(n):
    """Whether n elements of work go to THREADS threads."""
    return n >= PARALLEL_MIN and THREADS >= 2


def _chunks(n, align=4096):
    """THREADS ranges covering range(n), each starting on a multiple of align."""
    step = -(-n // THREADS // align) * align
    return [(lo, min(lo + step, n)) for lo in range(0, n, step)]


def _in_threads(run, ranges):
    """run(lo, hi) for every range: all but the first in the pool, the first in this thread."""
    if len(ranges) == 1:
        run(*ranges[0])
        return
    pool = _threads.pool("reftorch", THREADS - 1)     # reftorch/_threads.py: a fresh one in a forked child
    futures = [pool.submit(run, lo, hi) for lo, hi in ranges[1:]]
    run(*ranges[0])
    for f in futures:
        f.result()


def _run_contig(kernel, arrays, scalars, n):
    if not _parallel(n):
        kernel(*arrays, *scalars)
        return
    _in_threads(lambda lo, hi: kernel(*[a[lo:hi] for a in arrays], *scalars), _chunks(n))


def run_elementwise(spec, ins, scalars, out):
    """Run the op's kernel over inputs already cast to the compute dtype, writing into `out`."""
    if out.dtype.half or ins[0].dtype.half or (out.dtype.category < 2 and any(t.dtype.half for t in ins)):
        return _half.run_elementwise(spec, ins, scalars, out)     # 16-bit floats: uint16 storage, f32 math
    shape = out._shape
    n = L.numel(shape)
    if n == 0:
        return out
    odata = out._storage.data
    if all(t._shape == shape and L.is_contiguous(t._shape, t._strides) for t in ins) and \
            L.is_contiguous(shape, out._strides):
        args = [odata[out._offset:out._offset + n]]
        args += [t._storage.data[t._offset:t._offset + n] for t in ins]
        _run_contig(spec.kernel("contig"), args, scalars, n)
        return out
    strides = [out._strides] + [L.broadcast_strides(t._shape, t._strides, shape) for t in ins]
    # walk the dims in the output's memory order (a transposed output is then walked contiguously), then
    # merge the dims every operand walks as one
    order = sorted(range(len(shape)), key=lambda d: -out._strides[d])
    cshape, cstrides = L.collapse(tuple(shape[d] for d in order), [tuple(st[d] for d in order) for st in strides])
    if len(cshape) == 1 and all(st[0] == 1 for st in cstrides):     # every operand dense, in one order
        args = [odata[out._offset:out._offset + n]]
        args += [t._storage.data[t._offset:t._offset + n] for t in ins]
        _run_contig(spec.kernel("contig"), args, scalars, n)
        return out
    kind = "strided"
    if n >= BLOCK_MIN and len(cshape) >= 2 and any(st[-1] > 1 and 0 < st[-2] < st[-1] for st in cstrides[1:]):
        kind = "blocked"        # an input walks the output's inner dim with a large stride: tile the last two dims
    # geometry travels as int64 arrays, not tuples: Numba then compiles one strided kernel per dtype
    # instead of one per (dtype, ndim), which cuts cold-compile time several-fold
    args = [np.array(cshape, np.int64), odata, out._offset, np.array(cstrides[0], np.int64)]
    for t, st in zip(ins, cstrides[1:]):
        args += [t._storage.data, t._offset, np.array(st, np.int64)]
    spec.kernel(kind)(*args, *scalars)
    return out


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


def _result_layout(shape, ts):
    """Strides of a new elementwise result: PyTorch's TensorIterator keeps the memory order of the first
    input of the result's shape whose strides give one (a.T + b.T is then a.T-ordered and dense). An op
    with a memory_format argument (clone, which .contiguous() uses) returns a contiguous result."""
    if len(shape) < 2:
        return None
    for t in ts:
        if t._shape != shape:
            continue            # broadcast (or a wrapped number): the next input decides
        big = [t._strides[d] for d in range(len(shape)) if shape[d] > 1]
        if 0 in big:
            continue
        if all(big[i] >= big[i + 1] for i in range(len(big) - 1)):
            return None         # row-major already: a contiguous result
        st = t._strides
        order = sorted(range(len(shape)), key=lambda d: -st[d])
        out, acc = [0] * len(shape), 1
        for d in reversed(order):
            out[d] = acc
            acc *= max(shape[d], 1)
        return tuple(out)
    return None


def _off_cpu(tensors):
    """The back end of the arguments' device when one is off the cpu: reftorch/_meta.py for meta (geometry, no
    data), reftorch/_cuda_dispatch.py for cuda; None on cpu. Only asked once such a tensor exists (_cuda_d.used)."""
    if _meta.used and _meta.find(tensors):
        return _meta
    if _cuda_d.find(tensors):
        return _cuda_d
    return None


def elementwise(spec, tensors, scalars):
    if _cuda_d.used:        # an argument on cuda or meta: its back end
        be = _off_cpu(tensors)
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


# ---------------------------------------------------------------------------- the lean elementwise path
#
# Per-op overhead is what small tensors pay (DESIGN §5: one Numba call costs ~0.2 µs, the Python around
# it used to cost ~20 µs). The first call with a given key -- each argument's dtype, 0-d-ness and
# wrapped-ness, or the type of a Python number -- runs the general promotion code once and keeps the
# result as a plan; later calls with that key skip promotion, and same-shape contiguous operands skip
# broadcasting and collapsing too. The compiled kernel is called through its entry point once its exact
# signature is known (Numba's dispatcher spends ~0.7 µs typing the arguments of every call).

_PY_SCALAR_NP = {bool: np.bool_, int: np.int64, float: np.float64}  # as as_tensor_arg wraps them
_shape_info = {}        # shape -> (contiguous strides, numel)
_NP_DTYPE = {np.dtype(np.bool_): D.bool_, np.dtype(np.int64): D.int64, np.dtype(np.float64): D.float64}
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
        return None             # 16-bit storage runs through run_elementwise's half path (reftorch/_half.py)
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


def _info(shape):
    info = _shape_info.get(shape)
    if info is None:
        if len(_shape_info) > 4096:
            _shape_info.clear()
        info = _shape_info[shape] = (L.contiguous_strides(shape), L.numel(shape))
    return info


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


_number_tensors = {}    # (type, value) -> the 0-d tensor a node saves for a Python number argument


def _number_tensor(v):
    """Python number v as the 0-d tensor of its own precision that a recorded node saves (PyTorch's double Scalar):
    what record() makes of the wrapped tensor as_tensor_arg gives, shared between nodes (saved values are read
    only)."""
    key = (v.__class__, v)
    t = _number_tensors.get(key)
    if t is None or v == 0 or v != v:
        a = np.array((v,), _PY_SCALAR_NP[v.__class__])
        t = _make_tensor(Storage(a), 0, (), (), _NP_DTYPE[a.dtype])
        if len(_number_tensors) < 256:
            _number_tensors[key] = t
    return t


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
                _record_numbers(spec, plan, tensors, scalars, out)
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
        if n < PARALLEL_MIN and (numbers is None or n <= DENSE_NUMBERS):
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
                                if numbers is not None:
                                    _record_numbers(spec, plan, tensors, scalars, out)
                                elif spec.save_plan is not None and len(scalars) == len(spec.scalar_names):
                                    _record_lean(spec, tensors, scalars, (out,))
                                else:
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
                            _record_numbers(spec, plan, tensors, scalars, out)
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


def _record_numbers(spec, plan, tensors, scalars, out):
    """record() for a call mixing Tensors and Python numbers (plan.numbers): each number saved as PyTorch saves its
    double Scalar."""
    if spec.save_plan is not None and len(scalars) == len(spec.scalar_names):
        _record_lean(spec, [_number_tensor(t) if i in plan.numbers else t for i, t in enumerate(tensors)],
                     scalars, (out,))
    else:
        record(spec, [_wrap_number(t) if i in plan.numbers else t for i, t in enumerate(tensors)], scalars, (out,))


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
                    if n >= PARALLEL_MIN:
                        _run_contig(fn, args, ks, n)
                    else:
                        fn(*args, *ks)
            if spec.differentiable and grad_mode.state.enabled:
                for t in tensors:
                    if _requires_grad(t):
                        if spec.save_plan is not None and len(scalars) == len(spec.scalar_names):
                            _record_lean(spec, tensors, scalars, (out,))    # plain Tensors: record()'s lean case
                        else:
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
    if layout is None and n < BLOCK_MIN:       # small and row-major: the cached-entry strided call
        out = _make_tensor(Storage(np.empty(n, plan.out_np)), 0, shape, cs, plan.out)
        if n:
            _run_strided(spec, plan, ins, ks, out, shape, cs, n, 0, cs)
    else:       # the input's memory order kept (as PyTorch does); large ones may go blocked or threaded
        out = empty(shape, plan.out, layout)
        run_elementwise(spec, ins, ks, out)
    if spec.differentiable and grad_mode.state.enabled:
        for t in tensors:
            if isinstance(t, Tensor) and _requires_grad(t):
                record(spec, [t if isinstance(t, Tensor) else _wrap_number(t) for t in tensors], scalars, (out,))
                break
    return out


def _wrap_number(v):
    """A Python number as the wrapped 0-d tensor as_tensor_arg makes of it."""
    a = np.array((v,), _PY_SCALAR_NP[type(v)])
    t = _make_tensor(Storage(a), 0, (), (), _NP_DTYPE[a.dtype])
    t._wrapped = True
    return t


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


def _operands(spec, ts, compute):
    """Inputs converted for the kernel: promoted args to the compute dtype, masks to bool."""
    out = []
    for t, ty in zip(ts, spec.tensor_types):
        if ty == "Mask":
            out.append(_cast(t, D.bool_))
        elif ty in PROMOTED:
            out.append(_cast(t, compute))
        else:
            check_index(t, spec.name)
            out.append(t)
    return out


def check_index(t, name):
    if t.dtype.category == 2:
        raise IndexError(f"{name}(): Expected dtype int64 for index, got {t.dtype.short}")


def _kernel_scalars(spec, scalars, dtype):
    if spec.kernel_idx is None:
        return [_scalar_arg(s, dtype) for s in scalars]
    if spec.in_dtype_pos:
        scalars = _in_dtype_scalars(spec, scalars, dtype)
    ks = [_scalar_arg(scalars[i], dtype) for i in spec.kernel_idx]
    if dtype.half and spec.round_idx:       # PyTorch's alpha.to<scalar_t>(): through float, then 16 bits
        for i in spec.round_idx:
            if ks[i] is not None:
                with np.errstate(over="ignore"):
                    ks[i] = float(np.float32(ks[i]).astype(dtype.np))
    return ks


def _in_dtype_scalars(spec, scalars, dtype):
    """The scalars with those of ops.yaml `scalars_in_dtype` checked as PyTorch's alpha_check does against the
    result dtype (a bool only for a bool result, a float not for an integral one) and made bool for a bool one."""
    scalars = list(scalars)
    for i in spec.in_dtype_pos:
        v, name = scalars[i], spec.scalar_names[i]
        if isinstance(v, Tensor):
            v = v.item()
        if isinstance(v, (bool, np.bool_)) and dtype is not D.bool_:
            raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
        if isinstance(v, (float, np.floating)) and dtype.category < 2:
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")
        if dtype is D.bool_ and v is not None:
            scalars[i] = bool(v)
    return scalars


def _scalar_arg(v, dtype):
    if isinstance(v, Tensor):
        v = v.item()
    if v is None:
        return v
    if dtype.category == 3:
        return complex(v)
    if dtype.category == 2:
        return float(v)
    D.check_scalar_fits(v, dtype)
    if dtype.category == 1 and isinstance(v, float) and v != int(v):
        return v
    return int(v) if not isinstance(v, bool) else v


def call_inplace(name, tensors, scalars):
    spec = SPECS[name]
    if _forward is not None:
        return _forward.call_inplace(spec, tensors, scalars, _call_inplace_spec, _call_spec)
    return _call_inplace_spec(spec, tensors, scalars)


def _call_inplace_spec(spec, tensors, scalars):
    name = spec.name
    if _tracer is not None:
        _tracer.inplace(name)
    if _reference.enabled:
        return _reference.checked_call(spec, _inplace, tensors, scalars)
    return _inplace(spec, tensors, scalars)


def _inplace(spec, tensors, scalars):
    self = tensors[0]
    if spec.plans is not None and isinstance(self, Tensor) and not (_cuda_d.used and _off_cpu(tensors)):
        plan = _plan_for(spec, tensors)
        if plan is not None and plan.out is self.dtype:
            done = _fast_inplace(spec, plan, self, tensors, scalars)
            if done is not None:
                return done
    return _inplace_general(spec, tensors, scalars)


def _fast_inplace(spec, plan, self, tensors, scalars):
    """The in-place op without autograd to record, when every operand has self's shape (or is 0-d) and none
    overlaps self partially; None sends the call down the general path."""
    shape = self._shape
    storage = self._storage
    if spec.differentiable and grad_mode.state.enabled:
        for t in tensors:
            if isinstance(t, Tensor) and _requires_grad(t):
                return None
    for t in tensors:
        if isinstance(t, Tensor):
            if t._shape != shape and t._shape != ():
                return None
            if t._storage is storage and (t._offset != self._offset or t._strides != self._strides):
                return None
    if not storage.data.flags.writeable:
        return None
    check_inplace(self)
    check_no_internal_overlap(self)
    ins = tensors if plan.plain else _convert(plan, tensors)
    cs, n = _info(shape)
    if n:
        ks, _ = _fast_scalars(spec, plan, scalars)
        _run_strided(spec, plan, ins, ks, self, shape, cs, n, self._offset, self._strides)
    storage.version += 1
    return self


def _inplace_general(spec, tensors, scalars):
    name = spec.name
    self = tensors[0]
    if not isinstance(self, Tensor):
        raise TypeError(f"{name}_(): expected a Tensor as self")
    be = _off_cpu(tensors) if _cuda_d.used else None
    if be is not None:
        return be.inplace(spec, tensors, scalars)
    ts = [self] + [as_tensor_arg(t) for t in tensors[1:]]
    compute, out_dtype = _result_dtypes(spec, ts)
    if not _can_cast(out_dtype, self.dtype):
        raise RuntimeError(f"result type {out_dtype.short} can't be cast to the desired output type "
                           f"{self.dtype.short}")
    shape = L.broadcast_shapes(*[t._shape for t in ts])
    if shape != self._shape:
        raise RuntimeError(f"output with shape [{', '.join(map(str, self._shape))}] doesn't match the broadcast "
                           f"shape [{', '.join(map(str, shape))}]")
    check_inplace(self)
    check_no_internal_overlap(self)
    ins = []
    for t in _operands(spec, ts, compute):
        c = t
        if c is t and t._storage is self._storage and (t._offset, t._strides) != (self._offset, self._strides):
            c = new_tensor(_contig(t._array()), t.dtype)      # overlapping operand: read a copy
        ins.append(c)
    if out_dtype is self.dtype:
        target = self
    else:
        target = empty(shape, out_dtype)
    needs_grad = spec.differentiable and grad_mode.state.enabled and any(t.requires_grad for t in ts)
    saved_inputs = _snapshot_for_inplace(spec, ts) if needs_grad else None
    run_elementwise(spec, ins, _kernel_scalars(spec, scalars, compute), target)
    if target is not self:
        self._array()[...] = target._array()
    self._storage.version += 1
    if needs_grad:
        record(spec, saved_inputs, scalars, (self,), inplace=True)
    return self


def _can_cast(src, dst):
    return src.category <= dst.category


def check_inplace(t):
    """PyTorch's checks before an in-place write that autograd may record."""
    if not grad_mode.state.enabled:
        return
    base = t._base
    if base is not None and base.requires_grad and t.grad_fn is None:
        raise RuntimeError("A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
                           "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify "
                           "your code by moving both the view and the inplace either both inside the no_grad block "
                           "(if you don't want the inplace to be tracked) or both outside (if you want the inplace "
                           "to be tracked).")
    if base is not None and base.requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if t.requires_grad and t.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def check_no_internal_overlap(t):
    """An in-place write into a tensor with repeated elements (an expand) is refused, as in PyTorch."""
    if any(st == 0 and n > 1 for n, st in zip(t._shape, t._strides)):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")


def _snapshot_for_inplace(spec, ts):
    """Inputs as the node must see them: self before it is overwritten (a copy, if a formula reads it)."""
    out = list(ts)
    if "self" in spec.saves and ts[0].requires_grad is not None:
        s = ts[0]
        c = new_tensor(s._array().copy(), s.dtype)     # a copy even when s is contiguous
        c.requires_grad = s.requires_grad
        c.grad_fn, c._output_nr, c._accum = s.grad_fn, s._output_nr, s._accum
        out[0] = c
    return out


# ---------------------------------------------------------------------------- reductions

def _reduce_geometry(x, dims):
    """(array, offset, M, sm, K, sk) over x's storage, copying x only when the kept or the reduced
    dims cannot be walked with one stride each."""
    keep = [d for d in range(x.ndim) if d not in dims]
    kshape = tuple(x._shape[d] for d in keep)
    rshape = tuple(x._shape[d] for d in dims)
    ks, kst = L.collapse(kshape, [tuple(x._strides[d] for d in keep)])
    rs, rst = L.collapse(rshape, [tuple(x._strides[d] for d in dims)])
    if len(ks) == 1 and len(rs) == 1:
        return x._storage.data, x._offset, ks[0], kst[0][0], rs[0], rst[0][0]
    arr = _contig(x._array().transpose(keep + list(dims))).reshape(-1)
    M, K = L.numel(kshape), L.numel(rshape)
    return arr, 0, M, K, K, 1


_NO_DIMS = np.empty(0, np.int64)


def _reduce_layout(x, dims):
    """_reduce_geometry's (array, offset, M, sm, K, sk) and, where the kept or the reduced dims collapse to more
    than one axis each, nd = (P, pshape, pstr, J, jshape, jstr) for the <op>_reduce_nd kernel instead of a copy:
    M/sm is the last kept axis (contiguous in acc), K/sk the reduced axis of the smallest stride, P and J count
    the index tuples of the other kept (pshape, pstr) and reduced (jshape, jstr) axes. nd is None for one kept
    and one reduced axis, and for layouts that walk neither axis contiguously (those copy, as before)."""
    keep = [d for d in range(x.ndim) if d not in dims]
    red = sorted(dims, key=lambda d: -abs(x._strides[d]))     # largest stride first: permuted dims collapse too
    ks, kst = L.collapse(tuple(x._shape[d] for d in keep), [tuple(x._strides[d] for d in keep)])
    rs, rst = L.collapse(tuple(x._shape[d] for d in red), [tuple(x._strides[d] for d in red)])
    kst, rst = kst[0], rst[0]
    if len(ks) == 1 and len(rs) == 1:
        return x._storage.data, x._offset, ks[0], kst[0], rs[0], rst[0], None
    i = min(range(len(rs)), key=lambda d: abs(rst[d]))
    M, sm, K, sk = ks[-1], kst[-1], rs[i], rst[i]
    if abs(sm) != 1 and abs(sk) != 1:
        return _reduce_geometry(x, dims) + (None,)
    jsh, jst = rs[:i] + rs[i + 1:], rst[:i] + rst[i + 1:]
    nd = (L.numel(ks[:-1]), np.array(ks[:-1], np.int64) if len(ks) > 1 else _NO_DIMS,
          np.array(kst[:-1], np.int64) if len(ks) > 1 else _NO_DIMS,
          L.numel(jsh), np.array(jsh, np.int64) if jsh else _NO_DIMS, np.array(jst, np.int64) if jsh else _NO_DIMS)
    return x._storage.data, x._offset, M, sm, K, sk, nd


def _reduce_nd_call(kernel, arr, off, nd, M_, sm, K_, sk, seed, out, start, extra=()):
    """kernel (an <op>_reduce_nd) over nd's outer axes (see _reduce_layout) into out, accumulating in seed's dtype;
    above PARALLEL_MIN elements the outer kept indices (or, with one, the M outputs) in threads (see _parallel)."""
    P, psh, pst, J, jsh, jst = nd
    if _parallel(P * M_ * J * K_) and (P >= 2 * THREADS or (P == 1 and M_ >= 2 * THREADS)):
        if P > 1:
            _in_threads(lambda lo, hi: kernel(arr, off, lo, hi, psh, pst, M_, sm, J, jsh, jst, K_, sk, seed, out,
                                              start, *extra), _chunks(P, 1))
        else:
            _in_threads(lambda lo, hi: kernel(arr, off + lo * sm, 0, 1, psh, pst, hi - lo, sm, J, jsh, jst, K_, sk,
                                              seed, out[lo:hi], start, *extra), _chunks(M_, 8))
        return
    kernel(arr, off, 0, P, psh, pst, M_, sm, J, jsh, jst, K_, sk, seed, out, start, *extra)


def _acc_dtype(spec, dt):
    rule = spec.accumulate
    if dt.half and rule not in ("bool", "int64"):
        return _half.acc_dtype(rule)
    if rule == "wide":
        return D.complex128 if dt.category == 3 else D.float64 if dt.category == 2 else D.int64
    return {"float64": D.float64, "int64": D.int64, "bool": D.bool_}.get(rule, dt)


def _reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


_reduction_plans = {}      # (op, dtype, shape, strides, dim, keepdim, dtype arg) -> _ReductionPlan


class _ReductionPlan:
    __slots__ = ("out_dtype", "acc_np", "out_np", "out_shape", "out_strides", "geometry", "identity", "nd", "size",
                 "seed", "start")


def reduction(spec, tensors, scalars):
    be = _off_cpu(tensors) if _cuda_d.used else None
    if be is not None:
        return be.reduction(spec, tensors, scalars)
    x = tensors[0]
    if isinstance(x, Tensor) and len(scalars) == len(spec.scalar_names) <= 3:
        key = [spec, x.dtype, x._shape, x._strides]
        for v in scalars:       # only plain arguments key a plan (1.0 == 1, but dim=1.0 must still raise)
            tp = v.__class__
            if tp is list or tp is tuple:
                v = tuple(v)
                if not all(d.__class__ is int for d in v):
                    key = None
                    break
            elif not (v is None or tp is int or tp is bool or tp is D.dtype):
                key = None
                break
            key.append((tp, v))
        plan = None
        if key is not None:
            key = tuple(key)
            plan = _reduction_plans.get(key)
        if plan is not None:
            return _run_reduction(spec, plan, x, scalars)
        out = _reduction(spec, tensors, scalars, key)
        return out
    return _reduction(spec, tensors, scalars, None)


def _run_reduction(spec, plan, x, scalars):
    M, sm, K, sk = plan.geometry
    if plan.nd:     # written straight into the result (the accumulator is a block in cache)
        acc = np.empty(plan.size, plan.out_np)
        _reduce_nd_call(spec.kernel("reduce_nd"), x._storage.data, x._offset, plan.nd, M, sm, K, sk, plan.seed, acc,
                        plan.start)
    else:
        acc = np.empty(plan.size, plan.acc_np)
        if plan.start == 0:
            acc.fill(plan.identity)     # (np.full costs ~2 us more per call)
        _reduce_call(spec, x._storage.data, x._offset, M, sm, K, sk, acc, plan.start)
    res = acc if acc.dtype == plan.out_np else acc.astype(plan.out_np)
    out = _make_tensor(Storage(res), 0, plan.out_shape, plan.out_strides, plan.out_dtype)
    if spec.differentiable and grad_mode.state.enabled:
        record(spec, (x,), scalars, (out,))
    return out


def _reduce_call(spec, arr, off, M_, sm, K_, sk, acc, start, extra=(), kernel=None):
    """The op's reduce kernel (or `kernel`: its 16-bit one) over (M_, K_) of arr; above PARALLEL_MIN elements
    in threads (see _parallel)."""
    merge = spec.kernel("reduce")
    kernel = kernel or merge
    if not _parallel(M_ * K_):
        kernel(arr, off, M_, sm, K_, sk, acc, start, *extra)
    elif M_ >= 2 * THREADS:     # outputs in chunks, one per thread
        _in_threads(lambda lo, hi: kernel(arr, off + lo * sm, hi - lo, sm, K_, sk, acc[lo:hi], start, *extra),
                    _chunks(M_, 8))
    elif M_ == 1 and start == 0 and getattr(_kernels(), f"{spec.name}_self_merging", False):
        # one output: each thread reduces a slice into a partial, and the partials reduce alike
        ranges = _chunks(K_)
        parts = np.repeat(acc, len(ranges))

        def run(lo, hi):
            i = lo // ranges[0][1]
            kernel(arr, off + lo * sk, 1, 1, hi - lo, sk, parts[i:i + 1], 0, *extra)
        _in_threads(run, ranges)
        merge(parts, 0, 1, 1, len(ranges), 1, acc, 0, *extra)
    else:
        kernel(arr, off, M_, sm, K_, sk, acc, start, *extra)


class ReductionCall:
    """What a reduction call asks for, device-independent: the input (cast as the dtype rules say), the
    reduced dims, the result's dtype and shape, the accumulator dtype, the (M outputs, K each) sizes and
    the op's extra kernel scalars. Shared by the cpu path below and reftorch/_cuda_dispatch.py."""
    __slots__ = ("x", "xin", "kw", "dims", "out_dtype", "acc_dtype", "out_shape", "M", "K", "extra")

    def __init__(self, spec, x, scalars, cast):
        kw = dict(zip(spec.scalar_names, scalars))
        if isinstance(kw.get("dim"), (tuple, list)) and len(kw["dim"]) == 0:
            kw["dim"] = None        # dim=() / [] reduces every dim, as in PyTorch
        dims = L.wrap_dims(kw.get("dim"), x.ndim, spec.name)
        dtype = kw.get("dtype")
        xin = x
        if dtype is not None:
            xin = cast(x, D.as_dtype(dtype))
        spec.check_dtype(xin.dtype)
        if spec.result in ("bool", "int64"):
            out_dtype = D.bool_ if spec.result == "bool" else D.int64
        elif spec.result == "float" and xin.dtype.category < 2:
            out_dtype = D.defaults.float
            xin = cast(xin, out_dtype)
        elif spec.accumulate == "wide" and xin.dtype.category < 2 and dtype is None:
            out_dtype = D.int64     # (with dtype=, the result is that dtype: int8 sums wrap, as in PyTorch)
        else:
            out_dtype = xin.dtype
        self.out_shape = _reduced_shape(x._shape, dims, bool(kw.get("keepdim", False)))
        self.M = L.numel(self.out_shape)
        self.K = L.numel(tuple(x._shape[d] for d in dims))
        if self.K == 0 and spec.identity is None and self.M > 0:    # no identity: nothing to give an empty slice
            raise RuntimeError(f"{spec.name}(): Expected reduction dim to be specified for input.numel() == 0. "
                             "Specify the reduction dim with the 'dim' argument.") if kw.get("dim") is None else \
                IndexError(f"{spec.name}(): Expected reduction dim {dims[0]} to have non-zero size.")
        self.x, self.xin, self.kw, self.dims, self.out_dtype = x, xin, kw, dims, out_dtype
        self.acc_dtype = _acc_dtype(spec, xin.dtype)
        self.extra = [_scalar_arg(kw[n], xin.dtype) for n in spec.scalar_names if n not in ("dim", "keepdim", "dtype")]


def _reduction(spec, tensors, scalars, key):
    x = as_tensor_arg(tensors[0])
    r = ReductionCall(spec, x, scalars, _cast)
    xin, dims, out_dtype, acc_dtype = r.xin, r.dims, r.out_dtype, r.acc_dtype
    out_shape, M, extra = r.out_shape, r.M, r.extra
    if M == 0:
        acc = np.empty(0, acc_dtype.np)
    else:
        arr, off, M_, sm, K_, sk, nd = _reduce_layout(xin, dims)
        start = 0 if spec.identity is not None else 1
        seed = np.full(1, _identity(spec.identity, acc_dtype) if start == 0 else 0, acc_dtype.np)
        if nd is not None and r.K > 0 and not xin.dtype.half:
            acc = np.empty(M, out_dtype.np)         # written straight into the result (the kernel's acc: a block)
            _reduce_nd_call(spec.kernel("reduce_nd"), arr, off, nd, M_, sm, K_, sk, seed, acc, start, extra)
        else:
            acc = np.full(M, seed[0], acc_dtype.np) if start == 0 else np.empty(M, acc_dtype.np)
            if r.K > 0 and nd is not None:          # 16-bit: the kernel writes float32, the result is cast below
                _reduce_nd_call(_half.kernel(spec.name, xin.dtype.half, "reduce_nd"), _half.bits(arr), off, nd, M_,
                                sm, K_, sk, seed, acc, start, extra)
            elif r.K > 0 and xin.dtype.half:
                _reduce_call(spec, _half.bits(arr), off, M_, sm, K_, sk, acc, start, extra,
                             _half.kernel(spec.name, xin.dtype.half, "reduce"))
            elif r.K > 0:
                _reduce_call(spec, arr, off, M_, sm, K_, sk, acc, start, extra)
        if key is not None and xin is x and not extra and r.K > 0 and arr is x._storage.data and not xin.dtype.half:
            # the same call again (same op, dtype, geometry and arguments) skips straight to the kernel
            plan = _ReductionPlan()
            plan.out_dtype, plan.acc_np, plan.out_np = out_dtype, acc_dtype.np, out_dtype.np
            plan.out_shape, plan.out_strides = tuple(out_shape), _info(tuple(out_shape))[0]
            plan.geometry, plan.nd, plan.size = (M_, sm, K_, sk), nd, M
            plan.identity = _identity(spec.identity, acc_dtype) if spec.identity is not None else None
            plan.start, plan.seed = start, seed
            if len(_reduction_plans) > 4096:
                _reduction_plans.clear()
            _reduction_plans[key] = plan
    res = acc if acc.dtype == out_dtype.np else acc.astype(out_dtype.np)
    out = new_tensor(res.reshape(out_shape), out_dtype)
    if spec.differentiable and grad_mode.state.enabled:
        record(spec, (x,), scalars, (out,))
    return out


def _identity(src, dtype):
    v = {"inf": np.inf, "-inf": -np.inf}.get(str(src))
    if v is None:
        v = complex(float(src)) if dtype.category == 3 else float(src) if dtype.category == 2 else (bool(float(src)) if dtype.category == 0 else int(float(src)))
    return v


def argreduction(spec, tensors, scalars):
    be = _off_cpu(tensors) if _cuda_d.used else None
    if be is not None:
        return be.argreduction(spec, tensors, scalars)
    x = as_tensor_arg(tensors[0])
    kw = dict(zip(spec.scalar_names, scalars))
    spec.check_dtype(x.dtype)
    dim = kw.get("dim")
    keepdim = bool(kw.get("keepdim", False))
    if dim is None:
        src = x.reshape(-1) if x.is_contiguous() else x.contiguous().reshape(-1)
        dims = (0,) if src.ndim else ()
        out_shape = tuple(1 for _ in x._shape) if keepdim else ()
    else:
        d = L.wrap_dim(dim, x.ndim)
        src = x
        dims = (d,) if x.ndim else ()
        out_shape = _reduced_shape(x._shape, dims, keepdim)
    K = L.numel(tuple(src._shape[d] for d in dims))
    if K == 0:
        raise IndexError(f"{spec.name}(): Expected reduction dim to be specified for input.numel() == 0.")\
            if dim is None else IndexError(f"{spec.name}(): Expected reduction dim {dims[0]} to have non-zero size.")
    M = L.numel(out_shape)
    res = np.zeros(M, np.int64)
    if M and K:
        arr, off, M_, sm, K_, sk = _reduce_geometry(src, dims)
        if src.dtype.half:
            _half.kernel(spec.name, src.dtype.half, "reduce")(_half.bits(arr), off, M_, sm, K_, sk, res)
        else:
            spec.kernel("reduce")(arr, off, M_, sm, K_, sk, res)
    return new_tensor(res.reshape(out_shape), D.int64)


def scan(spec, tensors, scalars):
    be = _off_cpu(tensors) if _cuda_d.used else None
    if be is not None:
        return be.scan(spec, tensors, scalars)
    x = as_tensor_arg(tensors[0])
    kw = dict(zip(spec.scalar_names, scalars))
    d = L.wrap_dim(kw["dim"], x.ndim)
    dtype = kw.get("dtype")
    xin = _cast(x, D.as_dtype(dtype)) if dtype is not None else x
    spec.check_dtype(xin.dtype)
    out_dtype = D.int64 if (spec.accumulate == "wide" and xin.dtype.category < 2 and dtype is None) else xin.dtype
    acc_dtype = _acc_dtype(spec, xin.dtype)
    if x.ndim == 0:
        xin = xin.reshape(1)
        d = 0
    n = xin.numel()
    K = xin._shape[d]
    M = n // K if K else 0
    res = np.empty(n, acc_dtype.np)
    keep = [i for i in range(xin.ndim) if i != d]
    rows = False
    if n:
        arr, off, M_, sm, K_, sk = _reduce_geometry(xin, (d,))
        acc0 = np.full(1, _identity(spec.identity, acc_dtype), acc_dtype.np)
        rows = sm == 1 and M_ > 1 and K_ > 1        # the kept axis contiguous: rows at a time, res (K, kept...)
        if rows:
            (_half.kernel(spec.name, xin.dtype.half, "scan_rows") if xin.dtype.half else spec.kernel("scan_rows"))(
                _half.bits(arr), off, M_, K_, sk, res, acc0)
        elif xin.dtype.half:
            _half.kernel(spec.name, xin.dtype.half, "scan")(_half.bits(arr), off, M_, sm, K_, sk, res, acc0)
        else:
            spec.kernel("scan")(arr, off, M_, sm, K_, sk, res, acc0)
    order = [d] + keep if rows else keep + [d]
    res = res.reshape(tuple(xin._shape[i] for i in order))
    inv = np.argsort(order)
    res = _contig(res.transpose(inv)).astype(out_dtype.np, copy=False)
    out = new_tensor(res.reshape(x._shape), out_dtype)
    if spec.differentiable and grad_mode.state.enabled:
        record(spec, (x,), scalars, (out,))
    return out


# ---------------------------------------------------------------------------- array, view, composite

def _new_array_plan(spec):
    """What array() needs of an op without a Tensor[] argument, worked out once: the positions of its promoted and
    of its Index tensor arguments, whether it has `dim` arguments, and the dtypes already checked. False for ops
    with a Tensor[] argument (the general path)."""
    if spec.list_arg is not None:
        return False
    promo = tuple(i for i, ty in enumerate(spec.tensor_types) if ty in PROMOTED)
    index = tuple(i for i, ty in enumerate(spec.tensor_types) if ty in ("Index", "Index?"))
    dims = any(spec.arg_types[n] in ("dim", "dim?", "dim[]?") for n in spec.scalar_names)
    return promo, index, dims, set()


_array_plans = {}       # spec -> _new_array_plan(spec)


def _forget_plans():
    """Plans hold result dtypes, and int / int or a float number's category resolve to the default float dtype:
    set_default_dtype drops them all (a plan is rebuilt on the next call)."""
    for spec in list(SPECS.values()) + list(_fused_specs.values()):
        if spec.plans is not None:
            spec.plans.clear()
    _reduction_plans.clear()
    _array_plans.clear()


D._on_default_change.append(_forget_plans)


def array(spec, tensors, scalars):
    if _cuda_d.used:        # an argument on meta or cuda: its back end (index tensors may stay on cpu)
        types = {t.device.type for t in tensors if isinstance(t, Tensor)}
        if "meta" in types:
            return _meta.array(spec, tensors, scalars)
        if "cuda" in types:
            return _cuda_d.array(spec, tensors, scalars)
    plan = _array_plans.get(spec)
    if plan is None:
        plan = _array_plans[spec] = _new_array_plan(spec)
    dt = None
    if plan and len(tensors) == len(spec.tensor_types):
        # the lean path: every tensor argument a Tensor (or an absent optional), the promoted ones of one dtype
        # that is not 16-bit, so nothing is promoted or cast
        promo, index, dims, checked = plan
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                break
        else:
            for i in promo:
                t = tensors[i]
                if t is not None:
                    if t._wrapped or (dt is not None and t.dtype is not dt):
                        break
                    dt = t.dtype
            else:
                if dt is None or not dt.half:
                    if dt is not None and dt not in checked:
                        spec.check_dtype(dt)
                        checked.add(dt)
                    for i in index:
                        if tensors[i] is not None:
                            check_index(tensors[i], spec.name)
                    ts = inputs = tensors
                    arrays = [t._array() if t is not None else None for t in tensors]
                    args = arrays
                    kw = dict(zip(spec.scalar_names, scalars)) if scalars else {}
                    if dims:
                        _wrap_dim_args(spec, kw, next((t.ndim for t in ts if t is not None), 0))
                    return _array_run(spec, ts, inputs, scalars, arrays, args, kw, dt)
            dt = None
    ts = inputs = [t if isinstance(t, Tensor) else (as_tensor_arg(t) if t is not None else None) for t in tensors]
    names = spec.tensor_args if spec.list_arg is None else _tensor_names(spec, len(ts))
    arg_types = spec.arg_types
    promo = [t for t, name in zip(ts, names) if t is not None and arg_types[name] in PROMOTED]
    for t, name in zip(ts, names):
        if t is not None and arg_types[name] in ("Index", "Index?"):
            check_index(t, spec.name)
    if promo:
        dt = promo[0].dtype
        if any(t.dtype is not dt or t._wrapped for t in promo) or not promo[0]._shape:
            dt = promoted(spec, promo)
        spec.check_dtype(dt)
        if any(t.dtype is not dt for t in promo):
            ts = [(_cast(t, dt) if (t is not None and any(t is p for p in promo)) else t) for t in ts]
    arrays = [t._array() if t is not None else None for t in ts]
    if dt is not None and dt.half:      # NumPy bodies run on 16-bit floats through float32, rounded back below
        arrays = [_half.up(a) for a in arrays]
    args = _group_list(spec, arrays)
    kw = dict(zip(spec.scalar_names, scalars))
    if kw:
        _wrap_dim_args(spec, kw, next((t.ndim for t in ts if t is not None), 0))
    return _array_run(spec, ts, inputs, scalars, arrays, args, kw, dt)


def _array_run(spec, ts, inputs, scalars, arrays, args, kw, dt):
    """The op's NumPy body over arrays (args: grouped by tensor argument), its results wrapped and recorded."""
    fn = _array_fns.get(spec.name)
    if fn is None:
        fn = _array_fns[spec.name] = getattr(_array_ops, f"{spec.name}_forward")
    try:
        # tensors by name: a signature may put scalars between them (index_put(self, indices, values));
        # IEEE overflow and 0/0 give inf/nan silently, as in PyTorch, not NumPy's RuntimeWarning
        # small products of a BLAS-calling body run on one BLAS thread (reftorch/_blas.py)
        run = _blas.serial_small if spec.blas else _call_body
        if _np_extobj is not None:      # np.errstate(all="ignore") without building its state per call
            token = _np_extobj.set(_NP_QUIET)
            try:
                res = run(fn, dict(zip(spec.tensor_args, args)), kw, arrays)
            finally:
                _np_extobj.reset(token)
        else:
            with np.errstate(all="ignore"):
                res = run(fn, dict(zip(spec.tensor_args, args)), kw, arrays)
    except IndexError as err:
        raise IndexError(str(err)) from None
    outs = res if isinstance(res, tuple) else (res,)
    if dt is not None and dt.half:
        outs = _half.to_half(outs, dt)
    tensors_out = []
    for a in outs:
        if a.__class__ is np.ndarray and a.base is None and a.flags.c_contiguous:
            # a fresh array (its own memory, so no input's): wrap it as it is
            odt = _FROM_NP.get(a.dtype)
            tensors_out.append(_make_tensor(Storage(a.reshape(-1)), 0, a.shape, _info(a.shape)[0],
                                            odt if odt is not None else D.from_numpy(a.dtype)))
            continue
        a = np.asarray(a)
        if any(np.may_share_memory(a, t._storage.data) for t in ts if t is not None):
            a = a.copy()
        tensors_out.append(Tensor._from_array(_contig(a)))
    if spec.differentiable and grad_mode.state.enabled:
        record(spec, inputs, scalars, tuple(tensors_out))
    return tuple(tensors_out) if isinstance(res, tuple) else tensors_out[0]


_array_fns = {}         # array op -> its generated NumPy body (kernels/array_ops.py)


def _call_body(fn, args, kw, arrays):
    return fn(**args, **kw)
_FROM_NP = D._FROM_NP
try:        # NumPy 2's error state is a context variable: set it to "ignore all" directly (np.errstate costs µs)
    from numpy._core._ufunc_config import _extobj_contextvar as _np_extobj
    with np.errstate(all="ignore"):
        _NP_QUIET = _np_extobj.get()
except Exception:   # noqa: BLE001 -- another NumPy: np.errstate it is
    _np_extobj = None


def _wrap_dim_args(spec, kw, ndim):
    """`dim`-typed arguments of an array op, wrapped against the first tensor's ndim."""
    for name, value in kw.items():
        ty = spec.arg_types[name]
        if value is None or ty not in ("dim", "dim?", "dim[]?"):
            continue
        if ty == "dim[]?" and isinstance(value, (tuple, list)):
            kw[name] = tuple(L.wrap_dim(d, ndim) for d in value)
        else:
            kw[name] = L.wrap_dim(value, ndim)


def _tensor_names(spec, n):
    names = []
    for name in spec.tensor_args:
        if name == spec.list_arg:
            names += [name] * (n - (len(spec.tensor_args) - 1))
        else:
            names.append(name)
    return names


def _group_list(spec, items):
    """Flat tensor inputs back into the op's positional tensor arguments (a Tensor[] gets a list)."""
    if spec.list_arg is None:
        return list(items)
    n_list = len(items) - (len(spec.tensor_args) - 1)
    out, i = [], 0
    for name in spec.tensor_args:
        if name == spec.list_arg:
            out.append(list(items[i:i + n_list]))
            i += n_list
        else:
            out.append(items[i])
            i += 1
    return out


def view(spec, tensors, scalars):
    x = tensors[0]
    if not isinstance(x, Tensor):
        x = as_tensor_arg(x)
    dtype, storage = x.dtype, x._storage
    shape, strides, off, *new_dtype = spec.geometry(x._shape, x._strides, x._offset, *scalars, dtype=dtype)
    if new_dtype:      # the same bytes as another dtype (real, imag, view_as_real/complex): an alias storage
        dtype = new_dtype[0]
        storage = reinterpreted(storage, dtype.np)
    if strides is None:         # no view has this shape (reshape, flatten): a contiguous copy takes it
        from ._creation import _copy_tensor
        copy = _meta.like(x) if x.device.type == "meta" else _copy_tensor(x, keep_graph=False)
        storage, strides, off = copy._storage, L.contiguous_strides(shape), 0
    elif not new_dtype:
        _check_extent(x, shape, strides, off)
    base = x._base if x._base is not None else x
    out = Tensor._make(storage, off, tuple(shape), tuple(strides), dtype, x.device,
                       base if storage is x._storage or new_dtype else None)
    if grad_mode.state.enabled and x.requires_grad:
        record(spec, (x,), scalars, (out,))
    return out


def view_inplace(name, tensors, scalars):
    """The in-place variant of a view op (`unsqueeze_`, `t_`, `transpose_`, `as_strided_`...): self's own
    shape, strides and offset become the view's, its data untouched; the storage's version moves on, as in
    PyTorch. Under autograd the view op's node, fed by self's old geometry, becomes self's history."""
    spec = SPECS[name]
    self = tensors[0]
    if not isinstance(self, Tensor):
        raise TypeError(f"{name}_(): expected a Tensor as self")
    if _tracer is not None:     # reftorch.compile: a tensor changing shape in place ends the captured region
        _tracer.inplace(name)
    shape, strides, off = spec.geometry(self._shape, self._strides, self._offset, *scalars, inplace=True)
    _check_extent(self, shape, strides, off)
    check_inplace(self)
    tracked = grad_mode.state.enabled and self.requires_grad
    if tracked:
        old = Tensor._make(self._storage, self._offset, self._shape, self._strides, self.dtype, self.device)
        old.requires_grad, old.grad_fn, old._output_nr = True, self.grad_fn, self._output_nr
    self._shape, self._strides, self._offset = tuple(shape), tuple(strides), off
    self._storage.version += 1
    if tracked:
        new = Tensor._make(self._storage, off, self._shape, self._strides, self.dtype, self.device)
        record(spec, (old,), scalars, (new,))
        restride_history(self, new.grad_fn)
    return self


def _check_extent(x, shape, strides, off):
    if L.storage_extent(shape, strides, off) > x._storage.data.shape[0]:
        raise RuntimeError(f"setStorage: sizes {list(shape)}, strides {list(strides)}, storage offset {off}, and "
                           f"itemsize {x.dtype.itemsize} requiring a storage size of "
                           f"{L.storage_extent(shape, strides, off) * x.dtype.itemsize} are out of bounds for "
                           f"storage of size {x._storage.data.shape[0] * x.dtype.itemsize}")


_F = None     # reftorch._functional, bound on first use (it imports this module)


def composite(name, *args, **kwargs):
    global _F
    if _F is None:
        from . import _functional
        _F = _functional
    if _autocast.state.any and SPECS[name].autocast is not None:
        keep = _autocast.kept(SPECS[name].autocast, args, kwargs)
        if keep is not None:        # `autocast: keep`: the body's own ops see no autocast (a native kernel)
            with _autocast.suspended(keep):
                return getattr(_composites, name)(_F, *args, **kwargs)
        args, kwargs = _autocast.cast_kwargs(SPECS[name].autocast, args, kwargs)
    return getattr(_composites, name)(_F, *args, **kwargs)


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


def composite_inplace(name, self, *args, **kwargs):
    """The in-place variant of a composite or array op (`clamp_`, `div_`, `scatter_`, `masked_fill_`...): the
    op's result, computed out of place before anything is written, copied into self, with
    PyTorch's casting and shape rules, and self's autograd history continued through the op."""
    if not isinstance(self, Tensor):
        raise TypeError(f"{name}_(): expected a Tensor as self")
    if _tracer is not None:
        _tracer.inplace(name)
    src = self
    if grad_mode.state.enabled and any(isinstance(t, Tensor) and t.requires_grad
                                       for t in (self, *args, *kwargs.values())):
        check_inplace(self)
        from . import _functional as F
        src = F.clone(self)     # the op may save its input; the write below must not invalidate that
    res = getattr(_api, name)(src, *args, **kwargs)
    if not _can_cast(res.dtype, self.dtype):
        raise RuntimeError(f"result type {res.dtype.short} can't be cast to the desired output type "
                           f"{self.dtype.short}")
    if res._shape != self._shape:
        raise RuntimeError(f"output with shape [{', '.join(map(str, self._shape))}] doesn't match the broadcast "
                           f"shape [{', '.join(map(str, res._shape))}]")
    check_no_internal_overlap(self)
    return self.copy_(res)


# ---------------------------------------------------------------------------- keyword forms (codegen/emit_api.py)

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


def call_out(name, out, fn, *args, **kwargs):
    """fn(*args, **kwargs) written into `out` (a tensor, or a tuple of them for an op with several results), by
    PyTorch's rules: no autograd through out=, the result dtype must cast to out's without changing category,
    an out of another shape is resized (with PyTorch's warning unless it was empty). Returns out."""
    tensors = [out] if isinstance(out, Tensor) else list(out) if isinstance(out, (tuple, list)) else []
    for a in (*args, *kwargs.values()):
        tensors += [a] if isinstance(a, Tensor) else [x for x in a if isinstance(x, Tensor)] \
            if isinstance(a, (tuple, list)) else []
    if grad_mode.state.enabled and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, but "
                           "one of the arguments requires grad.")
    res = fn(*args, **kwargs)
    many = isinstance(res, tuple)
    outs = tuple(out) if many and isinstance(out, (tuple, list)) else (out,) if not many else None
    if outs is None or any(not isinstance(o, Tensor) for o in outs) or len(outs) != (len(res) if many else 1):
        what = "tuple of Tensors" if many else "Tensor"
        raise TypeError(f"{name}(): argument 'out' must be {what}, not {type(out).__name__}" if outs is None or not
                        all(isinstance(o, Tensor) for o in outs) else
                        f"{name}(): argument 'out' must be a tuple of {len(res)} Tensors, not {len(outs)}")
    results = res if many else (res,)
    for r, o in zip(results, outs):
        if not _can_cast(r.dtype, o.dtype):
            raise RuntimeError(f"result type {r.dtype.short} can't be cast to the desired output type {o.dtype.short}")
    for r, o in zip(results, outs):
        _write_out(r, o)
    return res.__class__(*outs) if many and hasattr(res, "_fields") else tuple(outs) if many else out


def _write_out(r, o):
    """r's values into o, resized to r's shape first when it has another (PyTorch's resize_output)."""
    if o._shape != r._shape:
        if o.numel():
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(o._shape)}, "
                          f"which does not match the required output shape {list(r._shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning, stacklevel=4)
        fresh = empty(r._shape, o.dtype) if o.device.type == "cpu" else _meta.empty(r._shape, o.dtype) \
            if o.device.type == "meta" else _cuda_d.empty(r._shape, o.dtype, o.device)
        o._storage, o._offset, o._shape, o._strides = fresh._storage, 0, fresh._shape, fresh._strides
    with grad_mode.no_grad():
        o.copy_(r)


_forward = None     # reftorch/autograd/forward_ad.py's hook while a dual level is open (tangent propagation)


def call(name, tensors, scalars):
    spec = SPECS[name]
    if spec.plans is not None and _tracer is None and not _autocast.state.any and not _reference.enabled \
            and not _cuda_d.used and _forward is None:     # elementwise on cpu, nothing intercepting: the lean path
        plan = _plan_for(spec, tensors)
        if plan is not None:
            return plan.run(spec, plan, tensors, scalars)
        return _elementwise(spec, tensors, scalars)
    if _forward is not None:
        return _forward.call(spec, tensors, scalars, _call_spec)
    return _call_spec(spec, tensors, scalars)


def _call_spec(spec, tensors, scalars):
    if _autocast.state.any and spec.autocast is not None:
        tensors = _autocast.cast(spec.autocast, tensors)
    if _tracer is not None:     # reftorch.compile is recording this call (reftorch/compile/tracer.py)
        return _tracer.call(spec, tensors, scalars)
    if _reference.enabled:      # reference mode: also run the entry's NumPy reference and compare
        return _reference.checked_call(spec, _HANDLERS[spec.kind], tensors, scalars)
    return _HANDLERS[spec.kind](spec, tensors, scalars)


def values_for_check(t):
    """t's values as a NumPy array, read by library code only to validate arguments (nll_loss's target
    bounds): not a graph break while reftorch.compile traces, and its replay does not repeat the check."""
    if _tracer is None:
        return t.cpu().numpy()
    _tracer.depth += 1
    try:
        return t.cpu().numpy()
    finally:
        _tracer.depth -= 1


FOREACH_CHUNK = 8      # tensors per foreach kernel call: lists are padded to it, so one compile serves every length
_foreach_updates = {}  # foreach op -> indices of the lists its body assigns
_foreach_empty = {}    # numpy dtype -> the empty array that pads a chunk
_foreach_entries = {}  # (op, dtype, scalar types) -> compiled entry point for writable contiguous arrays


def call_foreach(name, lists, scalars):
    """A foreach op (ops.yaml kind foreach): element k of every list forms one group of equal-sized tensors of one
    dtype; one kernel call per FOREACH_CHUNK groups of a dtype runs the op's body over every element, updating the
    lists it assigns in place. Non-contiguous tensors go through contiguous copies (written back)."""
    spec = SPECS[name]
    if _tracer is not None:
        _tracer.inplace(name)
    upd = _foreach_updates.get(name)
    if upd is None:
        upd = _foreach_updates[name] = tuple(spec.tensor_args.index(n) for n in _api.SPECS[name]["updates"])
    lists = [list(ts) for ts in lists]
    n = len(lists[0])
    if any(len(ts) != n for ts in lists):
        raise RuntimeError(f"{name}: Tensor lists must have the same number of tensors, got "
                           f"{', '.join(str(len(ts)) for ts in lists)}.")
    by_dtype, copies = {}, []
    checked = set()     # dtypes already checked against the op
    rg_check = grad_mode.state.enabled
    for k in range(n):
        group = [ts[k] for ts in lists]
        t0 = group[0]
        if not isinstance(t0, Tensor):
            raise TypeError(f"{name}(): expected lists of Tensors, got {type(t0).__name__}")
        dt0, shape0 = t0.dtype, t0._shape
        for t in group:
            if t.__class__ is not Tensor and not isinstance(t, Tensor):
                raise TypeError(f"{name}(): expected lists of Tensors, got {type(t).__name__}")
            if t.device.type != "cpu":
                raise RuntimeError(f"{name}: expected all tensors to be on the cpu, got {t.device}")
            if t.dtype is not dt0:
                raise RuntimeError(f"{name}: expected all tensors of a group to have the same dtype, got "
                                   f"{dt0.short} and {t.dtype.short}")
            if t._shape != shape0:
                raise RuntimeError(f"{name}: expected all tensors of a group to have the same shape, got "
                                   f"{list(shape0)} and {list(t._shape)}")
        if dt0 not in checked:
            spec.check_dtype(dt0)
            if dt0.half:
                raise RuntimeError(f"{name}: \"{name}\" not implemented for '{dt0.short}'")
            checked.add(dt0)
        cs, numel = _info(shape0)
        arrays = []
        for i, t in enumerate(group):
            data = t._storage.data
            flags = data.flags
            if i in upd:
                if not flags.writeable:
                    raise ValueError("assignment destination is read-only")
                if rg_check and _requires_grad(t):
                    raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
                if 0 in t._strides:
                    check_no_internal_overlap(t)
            if (t._strides == cs or numel <= 1) and flags.writeable and flags.c_contiguous:
                arrays.append(data if t._offset == 0 and data.shape[0] == numel else data[t._offset:t._offset + numel])
            else:       # a copy: contiguous and writable, so that every list is a tuple of one array type
                a = np.array(t._array(), order="C").reshape(-1)
                if i in upd:
                    copies.append((t, a))
                arrays.append(a)
        arr_list = by_dtype.get(dt0)
        if arr_list is None:
            arr_list = by_dtype[dt0] = []
        arr_list.append(arrays)
    ks = []
    for (arg, ty, _, _), v in zip([a for a in spec.args if a[1] != "Tensor[]"], scalars):
        if isinstance(v, Tensor):
            v = v.item()
        ks.append(bool(v) if ty == "bool" else int(v) if ty == "int" else float(v))
    for dtype, groups in by_dtype.items():
        pad = _foreach_empty.get(dtype.np)
        if pad is None:
            pad = _foreach_empty[dtype.np] = np.empty(0, dtype.np)
        for lo in range(0, len(groups), FOREACH_CHUNK):
            chunk = groups[lo:lo + FOREACH_CHUNK]
            chunk += [[pad] * len(lists)] * (FOREACH_CHUNK - len(chunk))
            args = [tuple(g[j] for g in chunk) for j in range(len(lists))]
            # writable C-contiguous 1-D arrays of one dtype (copies where not): the compiled overload, once known
            ekey = (name, dtype, tuple(v.__class__ for v in ks))
            fn = _foreach_entries.get(ekey)
            if fn is not None:
                fn(*args, *ks)
            else:
                disp = spec.kernel("foreach")
                disp(*args, *ks)
                try:
                    ov = disp.overloads.get(tuple(disp.typeof_pyval(a) for a in (*args, *ks)))
                    _foreach_entries[ekey] = ov.entry_point if ov is not None and not ov.objectmode else disp
                except Exception:   # noqa: BLE001 -- another Numba: the dispatcher is fine
                    _foreach_entries[ekey] = disp
    for t, a in copies:
        t._array()[...] = a.reshape(t._shape)
    for i in upd:
        for t in lists[i]:
            t._storage.version += 1
    return None


def fused(name, tensors, scalars):
    """A fused backward kernel: an elementwise op generated from a derivative formula."""
    spec = _fused_specs.get(name)
    if spec is None:
        spec = OpSpec(dict(name=name, kind="fused", args=tuple((f"t{i}", "Tensor", None, False)
                                                                for i in range(len(tensors))),
                           dtypes=D.FAMILIES, result="same", outputs=1, differentiable=False,
                           saves=(), identity=None, accumulate=None))
        _fused_specs[name] = spec
    if _tracer is not None:     # reftorch.compile records the backward of a step it captures
        return _tracer.call(spec, tensors, scalars)
    return elementwise(spec, tensors, scalars)


_HANDLERS = {"unary": elementwise, "binary": elementwise, "ternary": elementwise, "reduction": reduction,
             "argreduction": argreduction, "scan": scan, "array": array, "view": view}


# ---------------------------------------------------------------------------- autograd recording

def record(spec, inputs, scalars, outputs, inplace=False):
    """Attach a node to the outputs when some differentiable input requires grad. With inplace=True
    outputs[0] is the tensor just overwritten: the node becomes its history (autograd/inplace.py)."""
    if spec.save_plan is not None and not inplace and len(scalars) == len(spec.scalar_names) \
            and len(inputs) == len(spec.tensor_args):
        return _record_lean(spec, inputs, scalars, outputs)
    if not any(isinstance(t, Tensor) and t.requires_grad for t in inputs):
        return
    names = _tensor_names(spec, len(inputs))
    edges, meta = [], []
    for t in inputs:
        differentiable = isinstance(t, Tensor) and t.dtype.category >= 2
        edges.append(gradient_edge(t) if differentiable else NO_EDGE)
        meta.append((t._shape, t.dtype) if isinstance(t, Tensor) else ((), None))
    if all(e[0] is None for e in edges):
        return
    kw = dict(zip(spec.scalar_names, scalars))

    def save(x):
        # an input sharing storage with the tensor written in place is saved at its version before the write,
        # so that using it in backward raises PyTorch's "modified by an inplace operation" error
        if inplace and x._storage is outputs[0]._storage:
            return SavedTensor(x, version=x._storage.version - 1)
        if x._wrapped:      # a Python number: formulas use it in its own precision (PyTorch's double Scalar),
            x = Tensor._make(x._storage, x._offset, x._shape, x._strides, x.dtype, x.device)  # not float32
        return SavedTensor(x)

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
    list_arity = None
    if spec.list_arg is not None:
        list_arity = [names.count(n) for n in spec.tensor_args]
    node = OpNode(spec.name, spec.backward, saved, edges, meta, [(o._shape, o.dtype) for o in outputs], list_arity)
    record_trace(node)
    if inplace:
        rebase_history(outputs[0], node)
        return
    for i, o in enumerate(outputs):
        if o.dtype.category >= 2:
            o.requires_grad = True
            o.grad_fn = node
            o._output_nr = i
    if spec.kind == "view" and outputs[0]._base is not None:
        note_view(outputs[0])


def _record_lean(spec, inputs, scalars, outputs):
    """record() for the common case (no Tensor[] argument, not in place) with the precomputed save plan."""
    edges, meta = [], []
    any_edge = False
    for t in inputs:
        if isinstance(t, Tensor):
            dt = t.dtype
            meta.append((t._shape, dt))
            if dt.category >= 2:
                fn = t.grad_fn             # gradient_edge(t), inlined
                if fn is not None:          # (a tensor with a grad_fn requires grad)
                    edges.append((fn, t._output_nr))
                    any_edge = True
                elif _requires_grad(t):
                    acc = t._accum          # grad_accumulator(t), inlined while its weak reference is alive
                    if acc is not None and acc.__class__ is _weakref_type:
                        acc = acc()
                    edges.append((acc if acc is not None else grad_accumulator(t), 0))
                    any_edge = True
                else:
                    edges.append(NO_EDGE)
            else:
                edges.append(NO_EDGE)
        else:
            meta.append(((), None))
            edges.append(NO_EDGE)
    if not any_edge:
        return
    saved = {}
    for key, (how, where) in spec.save_plan:
        if how == "input":
            x = inputs[where]
            if isinstance(x, Tensor):
                if x._wrapped:      # a Python number: formulas use it in its own precision (PyTorch's double
                    x = Tensor._make(x._storage, x._offset, x._shape, x._strides, x.dtype, x.device)  # Scalar)
                st = _new_saved(SavedTensor)        # SavedTensor(x), without the call
                st.tensor = x
                st.version = x._storage.version
                st.is_output = False
                saved[key] = st
            else:
                saved[key] = x
        elif how == "scalar":
            saved[key] = scalars[where]
        elif how == "result":
            saved[key] = SavedTensor(outputs[0], is_output=True)
        elif how == "results":
            saved[key] = [SavedTensor(o, is_output=True) for o in outputs]
        else:
            i, attr = where
            saved[key] = getattr(outputs[0] if i is None else inputs[i], attr)
    node = _new_saved(OpNode)           # OpNode.__init__ inlined (the hook slots keep their class defaults)
    node.next_functions = tuple(edges)
    node.input_meta = meta
    node.out_meta = [(o._shape, o.dtype) for o in outputs] if len(outputs) != 1 else \
        [(outputs[0]._shape, outputs[0].dtype)]
    node.op = spec.name
    node.backward_fn = spec.backward
    node.saved = saved
    node.list_arity = None
    if _anomaly._enabled:
        record_trace(node)
    nr = 0
    for o in outputs:
        if o.dtype.category >= 2:
            _set_requires_grad_slot(o, True)
            o.grad_fn = node
            o._output_nr = nr
        nr += 1
    if spec.kind == "view" and outputs[0]._base is not None:
        note_view(outputs[0])


_new_saved = object.__new__


def _by_name(name, spec, names, inputs, outputs):
    if name == "result":
        return outputs[0]
    if name == spec.list_arg:
        return [inputs[i] for i, n in enumerate(names) if n == name]
    if name in names:
        return inputs[names.index(name)]
    raise KeyError(name)
