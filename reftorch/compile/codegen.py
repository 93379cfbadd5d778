"""Source for one fused region: the registry's scalar expressions composed into one Numba module.

Each region becomes a self-contained module (Numba's cache follows the file it compiles, so the
prelude and every scalar function it needs are copied in), written to a per-user cache directory
under a name that hashes its source, and imported from there; Numba caches its machine code next
to it, so a second process that traces the same region loads it instead of compiling it.

The module holds, for the forward pass:

  fused_contig(out0.., in0..)                     every input contiguous and region-shaped
                                                  (nogil: large inputs run it on chunks from several threads,
                                                  so no second, parallel=True kernel has to compile)
  fused_strided(shape, out0.., in0, in0_off, in0_st, ..)   broadcast or strided inputs (odometer)

and, when the region records autograd history, its backward pass: one kernel that reads the
region's inputs and the gradients of its outputs, recomputes the forward values it needs
(elementwise: cheaper than saving them), and writes the gradient of every input that wants one,
from the derivative formulas of ops.yaml in reverse program order:

  fused_backward_contig(gin0.., in0.., gout0..)  /  fused_backward_strided(shape, gin0.., in0, off, st, ..)

The loop body is one statement per op, in program order, each commented with the op and its
ops.yaml expression; each operand is cast as the dispatcher casts it (compute dtype, or bool for a
mask) and each result as the op's output dtype, so the values are the eager ones. Python numbers
of the trace (constants, alpha=...) are written into the source as literals, so LLVM folds them
(`x ** 3` becomes x*x*x, as PyTorch computes it).

`cuda_source(region)` emits the same regions as numba.cuda kernels (grid-stride loops).
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import math
import os
import re
import sys
import tempfile

import numpy as np

import reftorch._philox as _philox

_REGISTRY = None
_MODULES = {}
_DERIV = {}

# Scalar helpers that replace the prelude's for fused kernels: float32 tanh without a libm call (a
# rational approximation, <= 7 ulp, so the loop vectorises: libm's tanhf costs ~14-60 ns per element
# here and stops vectorisation), and pow with the small integer/half exponents PyTorch itself turns into
# multiplies (the exponent is a literal in the source, so the branches fold away). A vectorised
# exp/tanh (codegen/templates/vmath.py) is more accurate but measured 1.8x slower in the fused GELU chain.
LOCAL_HELPERS = '''
# ---- reftorch.compile's own scalar helpers (reftorch/compile/codegen.py LOCAL_HELPERS)

from numba.extending import intrinsic as _intrinsic


@_intrinsic
def _fmuladd32(typingctx, a, b, c):
    # a * b + c through llvm.fmuladd: one FMA instruction where the CPU has one (vectorised with the loop),
    # a multiply and an add elsewhere; only the tanh polynomial uses it, so other ops round as eager does
    from numba.core import types as nt
    from llvmlite import ir as llir
    sig = nt.float32(nt.float32, nt.float32, nt.float32)

    def codegen(context, builder, signature, args):
        f32 = llir.FloatType()
        fnty = llir.FunctionType(f32, [f32, f32, f32])
        fn = builder.module.globals.get("llvm.fmuladd.f32") or llir.Function(builder.module, fnty, "llvm.fmuladd.f32")
        return builder.call(fn, args)
    return sig, codegen


@njit(inline="always")
def tanh(x):
    # float32: Eigen's rational approximation of tanh on [-7.9, 7.9] (vectorises; <= 7 ulp against
    # the exact value); float64 keeps libm's tanh
    if isinstance(x, np.float32):
        c = np.float32(7.90531110763549805)
        y = min(max(x, -c), c)
        y2 = y * y
        p = _fmuladd32(y2, np.float32(-2.76076847742355e-16), np.float32(2.00018790482477e-13))
        p = _fmuladd32(y2, p, np.float32(-8.60467152213735e-11))
        p = _fmuladd32(y2, p, np.float32(5.12229709037114e-08))
        p = _fmuladd32(y2, p, np.float32(1.48572235717979e-05))
        p = _fmuladd32(y2, p, np.float32(6.37261928875436e-04))
        p = _fmuladd32(y2, p, np.float32(4.89352455891786e-03))
        p = y * p
        q = _fmuladd32(y2, np.float32(1.19825839466702e-06), np.float32(1.18534705686654e-04))
        q = _fmuladd32(y2, q, np.float32(2.26843463243900e-03))
        q = _fmuladd32(y2, q, np.float32(4.89352518554385e-03))
        r = p / q
        if x != x:
            return x
        if abs(x) >= np.float32(9.0):       # tanh rounds to +-1 in float32 from about 9.01 on
            return np.float32(1.0) if x > 0 else np.float32(-1.0)
        return x if abs(x) < np.float32(0.0004) else r
    return math.tanh(x)


_prelude_tpow = tpow


@njit(inline="always")
def tpow(a, b):
    # floats with the exponents PyTorch special-cases for a Scalar exponent; the rest (integer bases too)
    # is the prelude's tpow
    if isinstance(a, (float, np.float32, np.float64)):
        if b == 3:
            return a * a * a
        if b == 1:
            return a
        if b == 0.5:
            return np.sqrt(a)
        if b == -1:
            return 1 / a
        if b == -2:
            return 1 / (a * a)
    return _prelude_tpow(a, b)
'''


def _registry():
    """ops.yaml parsed by the generator's own model (imported only when something is compiled)."""
    global _REGISTRY
    if _REGISTRY is None:
        _ensure_codegen_importable()
        from codegen import model
        path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "ops.yaml")
        ops = _cached_parse(path, model)
        reg = {op.name: op for op in ops}
        for op in ops:
            for alias in op.variants.aliases:
                reg.setdefault(alias, op)
        _REGISTRY = reg
    return _REGISTRY


def _cached_parse(path, model):
    """model.load(path), pickled in the cache directory under the hash of ops.yaml and of the parser: the
    strict parse takes ~1.5 s, the pickle ~20 ms."""
    import pickle
    with open(path, "rb") as f:
        text = f.read()
    h = hashlib.sha1(text)
    with open(model.__file__, "rb") as f:
        h.update(f.read())
    cache = None
    try:
        cache = os.path.join(_compiled_dir(), f"registry_{h.hexdigest()[:20]}.pickle")
        with open(cache, "rb") as f:
            return pickle.load(f)
    except Exception:
        pass
    ops = model.load(path, text.decode())
    if cache is not None:
        try:
            tmp = f"{cache}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                pickle.dump(ops, f)
            os.replace(tmp, cache)
        except Exception:
            pass
    return ops


def _ensure_codegen_importable():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if root not in sys.path and os.path.isdir(os.path.join(root, "codegen")):
        sys.path.append(root)


def derivative(op_name, arg):
    """(tensor names, scalar names, scalar expression) of the op's derivative for `arg` when the formula
    is elementwise; None when it is not (or the arg has no formula: "none" then)."""
    key = (op_name, arg)
    if key not in _DERIV:
        reg = _registry()
        op = reg[op_name]
        formula = op.formula(arg)
        if formula is None:
            _DERIV[key] = "none"
        else:
            from codegen.emit_autograd import fusable
            _DERIV[key] = fusable(op, formula, reg)
    return _DERIV[key]


def _np_type(dt):
    name = np.dtype(dt.np).name
    return "np.bool_" if name == "bool" else f"np.{name}"


def _lit(v):
    """A Python literal for a constant of the trace (numpy scalars keep their type)."""
    if v is None:
        return "None"
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, np.generic):
        t = f"np.{np.dtype(type(v)).name}"
        return f"{t}({_lit(v.item())})"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, int):
        return repr(int(v))
    raise TypeError(f"no literal for {v!r}")


# ---------------------------------------------------------------------------------------- the loop body

class _Body:
    """The statements of one region: loads named x<j>, values v<vid>, gradients g<vid>."""

    def __init__(self, region):
        self.region = region
        self.in_index = {}
        for j, (ref, dt) in enumerate(region.inputs):
            self.in_index[ref[1] if ref[0] == "v" else id(ref[1])] = j
        self.local_dtype = {}
        self.operands = {}          # node index -> [operand expressions]
        self.scalars = {}           # node index -> [scalar literals]
        self.fwd = []
        for k, n in enumerate(region.nodes):
            if n.spec.kind == "random":
                self._random(k, n)
                continue
            if n.spec.kind == "method":     # a dtype conversion (ir._annotate_cast): the operand, cast
                expr, _ = self.ref(n.args[0])
                self.operands[k], self.scalars[k] = [expr], []
                self.fwd.append(f"# .to({n.out_dtype.short})")
                self.fwd.append(f"v{n.outs[0]} = {_np_type(n.out_dtype)}({expr})")
                self.local_dtype[n.outs[0]] = n.out_dtype
                continue
            args = []
            for i, a in enumerate(n.args):
                want = n.operand_dtypes[i]
                if i in n.consts:
                    args.append(_lit(n.consts[i]))
                    continue
                expr, have = self.ref(a)
                args.append(expr if have is want else f"{_np_type(want)}({expr})")
            # float scalars (alpha=...) in the compute dtype, as PyTorch's kernels take them: a float64 literal
            # would turn a float32 loop into a float64 one
            ct = np.dtype(n.compute.np)
            sc = [_lit(ct.type(v)) if ct.kind == "f" and isinstance(v, float) else _lit(v) for v in n.kernel_scalars]
            self.operands[k], self.scalars[k] = args, sc
            vid = n.outs[0]
            op = _registry()[n.spec.name]
            self.fwd.append(f"# {n.spec.name}: {op.scalar}   ({n.compute.short} -> {n.out_dtype.short})")
            self.fwd.append(f"v{vid} = {_np_type(n.out_dtype)}(_s_{op.name}({', '.join(args + sc)}))")
            self.local_dtype[vid] = n.out_dtype

    def _random(self, k, n):
        """A counter-based draw: element _lin (the loop's linear index) of its counters, as _philox.py draws it."""
        r = self.region.random.index(n)
        spec = n.spec
        call = f"philox_uniform(_rk{r}, _rc{r} + _lin, {_philox.bits_of(spec.dtype.np)})" if spec.name == "rand" else \
            f"philox_normal(_rk{r}, _rc{r} + _lin)"
        self.operands[k], self.scalars[k] = [], []
        self.fwd.append(f"# {spec.name}: Philox draw (reftorch/_philox.py) at counter {r}'s first + the linear index "
                        f"({n.out_dtype.short})")
        self.fwd.append(f"v{n.outs[0]} = {_np_type(n.out_dtype)}({call})")
        self.local_dtype[n.outs[0]] = n.out_dtype

    def ref(self, a):
        """(expression, dtype) of a node argument that is a graph value or a captured tensor."""
        if a[0] == "v" and a[1] in self.local_dtype:
            return f"v{a[1]}", self.local_dtype[a[1]]
        j = self.in_index[a[1] if a[0] == "v" else id(a[1])]
        return f"x{j}", self.region.inputs[j][1]

    def backward(self):
        """Lines computing g<...> in reverse program order; returns (lines, {input j: grad expr}, helpers)."""
        r = self.region
        contrib = {}                # expression name of a value ("v12" / "x0") -> [contributions]
        for m, vid in enumerate(r.grad_outputs):
            contrib.setdefault(f"v{vid}", []).append(f"go{m}")
        if r.reduce is not None and r.reduce.grad:      # a trailing sum: its gradient, broadcast, is a scalar
            contrib.setdefault(f"v{r.reduce.vid}", []).append("gr")
        lines, helpers = [], {}
        for k in range(len(r.nodes) - 1, -1, -1):
            n = r.nodes[k]
            vid = n.outs[0]
            parts = contrib.get(f"v{vid}")
            if not parts:
                continue
            dt = _np_type(n.out_dtype)
            lines.append(f"# g{vid}: gradient of v{vid} = {n.spec.name}(...); its formulas feed the inputs' gradients")
            lines.append(f"g{vid} = {dt}({' + '.join(parts)})" if len(parts) > 1 else f"g{vid} = {parts[0]}")
            op = _registry()[n.spec.name]
            tnames = [a.name for a in op.signature.tensor_args]
            snames = _kernel_scalar_names(op)
            for i, a in enumerate(n.args):
                if i in n.consts or not r.wants_grad(a):
                    continue
                d = derivative(n.spec.name, tnames[i])
                if d == "none":
                    continue
                dtn, dsn, expr = d
                hname = f"_d_{op.name}_{tnames[i]}"
                helpers[hname] = (list(dtn) + list(dsn), expr, f"{op.name} backward for {tnames[i]} -- "
                                                                  f"{op.formula(tnames[i])}")
                env = {"grad": f"g{vid}", "result": f"v{vid}"}
                env.update(zip(tnames, self.operands[k]))
                env.update(zip(snames, self.scalars[k]))
                call = f"{hname}({', '.join(env[x] for x in list(dtn) + list(dsn))})"
                target, tdt = self.ref(a)
                contrib.setdefault(target, []).append(f"{_np_type(tdt)}({call})")
        outs = {}
        for j in r.grad_inputs:
            parts = contrib.get(f"x{j}", [])
            dt = _np_type(r.inputs[j][1])
            outs[j] = f"{dt}({' + '.join(parts)})" if parts else f"{dt}(0)"
        return lines, outs, helpers


def _kernel_scalar_names(op):
    from codegen.emit_cpu import kernel_scalars
    return kernel_scalars(op)


def _scalar_fns(region, helpers, decorator):
    """The _s_<op> functions of the region's ops, of ops its derivative formulas call, and _d_ helpers."""
    from codegen.emit_cpu import scalar_fn
    reg = _registry()
    names = []
    for n in region.nodes:
        if n.spec.name not in names and n.spec.kind not in ("random", "method"):
            names.append(n.spec.name)
    for params, expr, _ in helpers.values():
        for callee in re.findall(r"\b_s_(\w+)\(", expr):
            if callee not in names:
                names.append(callee)
    # the Philox scalar functions, copied from reftorch/_philox.py, when the region draws random numbers
    parts = [inspect.getsource(f).replace('@njit(inline="always")', decorator) for f in _philox.SCALAR_FUNCTIONS] \
        if region.random else []
    for name in names:
        op = reg[name]
        params = [a.name for a in op.signature.tensor_args] + _kernel_scalar_names(op)
        parts.append(scalar_fn(op.name, params, op.scalar, f"{op.name} -- {op.scalar}", decorator))
    for hname, (params, expr, comment) in helpers.items():
        parts.append(f"{decorator}\ndef {hname}({', '.join(params)}):\n    # ops.yaml: {comment}\n"
                     f"    return {expr}\n")
    return parts


# ---------------------------------------------------------------------------------------- CPU loops

def _loops(prefix, arrays, body, stores, doc, parallel, reduce=None, scalar=None, draws=0):
    """contig (+ par) and strided kernels: arrays [(array name, element name)], stores [(out name, expr)];
    reduce: (accumulator numpy type, identity literal, value name) folds that value into r0[0];
    draws: how many counter-based draws the body makes (their [key, counter] pairs arrive in the array rst,
    and the body reads the linear index _lin)."""
    outs = (["r0"] if reduce else []) + [o for o, _ in stores]
    ins = [a for a, _ in arrays]
    tail = ([scalar] if scalar else []) + (["rst"] if draws else [])      # parameters after the arrays
    parts = []
    pre, post = [], []
    if reduce:
        acc_t, init, val = reduce
        pre = [f"    acc = {acc_t}({init})"]
        post = ["    r0[0] = acc"]
        parallel = False
    for r in range(draws):
        pre += [f"    _rk{r} = rst[{2 * r}]", f"    _rc{r} = rst[{2 * r + 1}]"]

    def inner(index, load, indent):
        pad = " " * indent
        lines = [f"{pad}_lin = np.uint64({index})"] if draws else []
        lines += [f"{pad}{x} = {load(a)}" for a, x in arrays]
        lines += [pad + b for b in body]
        lines += [f"{pad}{o}[{index}] = {e}" for o, e in stores]
        if reduce:
            lines += [f"{pad}acc = {acc_t}(_r_combine(acc, {val}))"]
        return lines

    length = f"{stores[0][0]}.shape[0]" if stores else f"{ins[0]}.shape[0]"
    variants = [(f"{prefix}_contig", False)]
    for name, par in variants:
        deco = '@njit(cache=CACHE, error_model="numpy", fastmath=FM' + (", nogil=True)" if parallel else ")")
        lines = [deco, f"def {name}({', '.join(outs + ins + tail)}):", *doc, *pre,
                 f"    for i in {'prange' if par else 'range'}({length}):"]
        lines += inner("i", lambda a: f"{a}[i]", 8)
        lines += post
        parts.append("\n".join(lines) + "\n")
    params = ", ".join(outs + [f"{a}, {a}_off, {a}_st" for a in ins] + tail)
    lines = ['@njit(cache=CACHE, error_model="numpy", fastmath=FM)', f"def {prefix}_strided(shape, {params}):", *doc,
             "    # outputs are fresh and contiguous: element k of the walk is element k of each output;",
             "    # offsets are uint64 (wrapping arithmetic serves negative strides) so loads need no sign check",
             "    nd = len(shape)", "    last = nd - 1", "    n = np.uint64(shape[last])", "    outer = 1",
             "    for d in range(last):", "        outer *= shape[d]", "    idx = np.zeros(nd, np.uint64)"]
    lines += [f"    p_{a} = np.uint64({a}_off)" for a in ins]
    lines += [f"    s_{a} = np.uint64({a}_st[last])" for a in ins]
    lines += ["    k = np.uint64(0)", "    for _ in range(outer):"]
    unit = " and ".join(f"s_{a} == 1" for a in ins) or "True"
    lines += [f"        if {unit}:", "            for i in range(n):"]
    lines += inner("k + i", lambda a: f"{a}[p_{a} + i]", 16)
    lines += ["        else:", "            for i in range(n):"]
    lines += inner("k + i", lambda a: f"{a}[p_{a} + i * s_{a}]", 16)
    lines += ["        k += n", "        d = last - 1", "        while d >= 0:", "            idx[d] += np.uint64(1)"]
    lines += [f"            p_{a} += np.uint64({a}_st[d])" for a in ins]
    lines += ["            if idx[d] < np.uint64(shape[d]):", "                break"]
    lines += [f"            p_{a} -= np.uint64({a}_st[d]) * np.uint64(shape[d])" for a in ins]
    lines += ["            idx[d] = np.uint64(0)", "            d -= 1"]
    if pre:
        k = lines.index("    k = np.uint64(0)")
        lines[k:k] = pre
        lines += post
    parts.append("\n".join(lines) + "\n")
    return parts


def _header(region, device):
    return ("# GENERATED by reftorch.compile: one fused elementwise region -- do not edit.\n"
            f"# ops, in program order: {' -> '.join(region.ops)}\n"
            f"# iteration shape when traced: {list(region.shape)}   device: {device}\n"
            + ("# backward: gradients of inputs "
               + ", ".join(f"a{j}" for j in region.grad_inputs) + " from those of "
               + ", ".join([f"v{v}" for v in region.grad_outputs]
                           + ([f"the trailing {region.reduce.node.spec.name}"]
                              if region.reduce is not None and region.reduce.grad else [])) + "\n"
               if region.grad_inputs else ""))


def _doc(region):
    outs = [f"o{m} = v{vid} {dt.short}" for m, (vid, dt) in enumerate(zip(region.outputs, region.out_dtypes))]
    if region.reduce is not None:
        outs.insert(0, f"r0[0] = {region.reduce.node.spec.name} of v{region.reduce.vid}")
    return ["    # inputs:  " + ", ".join(f"a{j} {dt.short}" for j, (_, dt) in enumerate(region.inputs)),
            "    # outputs: " + ", ".join(outs)]


def region_source(region):
    """The CPU module of a region (forward, and backward when region.grad_inputs is not empty)."""
    _ensure_codegen_importable()
    from codegen.common import COMPLEX_MARKER, complex_helpers
    from codegen.emit_cpu import SCALAR_DECORATOR, prelude
    body = _Body(region)
    nin = len(region.inputs)
    arrays = [(f"a{j}", f"x{j}") for j in range(nin)]
    fwd_stores = [(f"o{m}", f"v{vid}") for m, vid in enumerate(region.outputs)]
    bw_lines, bw_outs, helpers = body.backward() if region.grad_inputs else ([], {}, {})
    # complex_math.py's functions: the prelude's complex branches (tpow's) call them, as in the eager kernels
    complex_fns = complex_helpers(COMPLEX_MARKER + "\n", '@njit(error_model="numpy")')
    parts = [_header(region, "cpu"), "from reftorch.kernels._cache import CACHE  # first: it sets up Numba's CPU target\n",
             prelude(), complex_fns, "from numba import prange\n\n"
             "# no fast-math: every op rounds as the eager kernel rounds it (the float32 tanh below is the exception)\n"
             "FM = False\n",
             LOCAL_HELPERS]
    parts += _scalar_fns(region, helpers, SCALAR_DECORATOR)     # as the eager kernels' (emit_cpu.scalar_fn)
    red = None
    if region.reduce is not None:
        rt = region.reduce
        acc_t = "np.bool_" if rt.acc.kind == "b" else f"np.{rt.acc.name}"
        ident = {"inf": "inf", "-inf": "-inf"}.get(str(rt.identity))
        if ident is None:
            v = float(rt.identity)
            ident = repr(bool(v)) if rt.acc.kind == "b" else (repr(v) if rt.acc.kind == "f" else repr(int(v)))
        red = (acc_t, ident, f"v{rt.vid}")
        parts.append(f'@njit(inline="always")\ndef _r_combine(acc, x):\n'
                     f"    # ops.yaml: {rt.node.spec.name} -- combine: {rt.combine} (accumulates in {rt.acc.name}; "
                     f"the result r0 is cast to {rt.out_dtype.short})\n    return {rt.combine}\n")
    draws = len(region.random)
    parts += _loops("fused", arrays, body.fwd, fwd_stores, _doc(region), parallel=True, reduce=red, draws=draws)
    if region.grad_inputs:
        bw_arrays = arrays + [(f"b{m}", f"go{m}") for m in range(len(region.grad_outputs))]
        bw_stores = [(f"gi{m}", bw_outs[j]) for m, j in enumerate(region.grad_inputs)]
        scalar = "gr" if region.reduce is not None and region.reduce.grad else None
        doc = ["    # gradients: " + ", ".join(f"gi{m} of a{j}" for m, j in enumerate(region.grad_inputs))
               + "".join(f"; b{m}: gradient of v{v}" for m, v in enumerate(region.grad_outputs)),
               "    # the forward values are recomputed, then the derivative formulas run in reverse order"]
        if scalar:
            doc.append(f"    # gr: the gradient of the trailing {region.reduce.node.spec.name}, the same for every element")
        if draws:
            doc.append("    # rst: the forward's draws, recomputed from the same counters")
        parts += _loops("fused_backward", bw_arrays, body.fwd + bw_lines, bw_stores, doc, parallel=True,
                        scalar=scalar, draws=draws)
    return "\n\n".join(p.rstrip() + "\n" for p in parts)


# ---------------------------------------------------------------------------------------- CUDA

def cuda_source(region):
    """The region as numba.cuda kernels: grid-stride loops over contiguous operands (`fused_cuda`,
    `fused_backward_cuda`) and over broadcast/strided ones (`fused_cuda_strided`, `fused_backward_cuda_strided`:
    the linear index is split into coordinates by div/mod, cheap on a GPU; outputs are fresh and contiguous).
    Scalar helpers are device functions. reftorch.compile launches them for cuda tensors (compile/__init__.py)."""
    _ensure_codegen_importable()
    from codegen.emit_cuda import DEVICE, prelude as cuda_prelude
    body = _Body(region)
    nin = len(region.inputs)
    bw_lines, bw_outs, helpers = body.backward() if region.grad_inputs else ([], {}, {})
    # the CUDA prelude's own tanh/tpow serve (math.tanh is fast on a GPU; literal exponents fold there too)
    # kernels are cached on disk by numba next to the module, as the CPU regions are (cache=CACHE)
    parts = [_header(region, "cuda"), "import math\nimport numpy as np\nfrom numba import cuda\n"
             "from reftorch.kernels._cache import CACHE\n", cuda_prelude()]
    parts += _scalar_fns(region, helpers, DEVICE)

    def kernel(name, arrays, lines, stores, doc, tail=()):
        outs = [o for o, _ in stores]
        ins = [a for a, _ in arrays]
        src = ["@cuda.jit(cache=CACHE)", f"def {name}({', '.join(outs + ins + list(tail))}):", *doc,
               f"    for i in range(cuda.grid(1), {outs[0]}.shape[0], cuda.gridsize(1)):"]
        src += [f"        {x} = {a}[i]" for a, x in arrays]
        src += ["        " + b for b in lines]
        src += [f"        {o}[i] = {e}" for o, e in stores]
        return "\n".join(src) + "\n"

    def strided(name, arrays, lines, stores, doc, tail=()):
        # every operand as (array, offset, strides) over the iteration shape (stride 0 where broadcast)
        outs = [o for o, _ in stores]
        params = ", ".join(outs + [f"{a}, {a}_off, {a}_st" for a, _ in arrays] + list(tail))
        src = ["@cuda.jit(cache=CACHE)", f"def {name}(shape, {params}):", *doc,
               "    nd = len(shape)", f"    for i in range(cuda.grid(1), {outs[0]}.shape[0], cuda.gridsize(1)):"]
        src += [f"        p_{a} = {a}_off" for a, _ in arrays]
        src += ["        rem = i", "        for d in range(nd - 1, -1, -1):", "            c = rem % shape[d]",
                "            rem = rem // shape[d]"]
        src += [f"            p_{a} += c * {a}_st[d]" for a, _ in arrays]
        src += [f"        {x} = {a}[p_{a}]" for a, x in arrays]
        src += ["        " + b for b in lines]
        src += [f"        {o}[i] = {e}" for o, e in stores]
        return "\n".join(src) + "\n"

    arrays = [(f"a{j}", f"x{j}") for j in range(nin)]
    stores = [(f"o{m}", f"v{vid}") for m, vid in enumerate(region.outputs)]
    if region.reduce is not None:       # the trailing reduction is left to the CUDA reduction kernels
        stores.append((f"o{len(stores)}", f"v{region.reduce.vid}"))
    parts.append(kernel("fused_cuda", arrays, body.fwd, stores, _doc(region)))
    parts.append(strided("fused_cuda_strided", arrays, body.fwd, stores, _doc(region)))
    if region.grad_inputs:
        bw_arrays = arrays + [(f"b{m}", f"go{m}") for m in range(len(region.grad_outputs))]
        bw_stores = [(f"gi{m}", bw_outs[j]) for m, j in enumerate(region.grad_inputs)]
        tail = ["gr"] if region.reduce is not None and region.reduce.grad else []
        doc = ["    # the forward values are recomputed, then the derivative formulas run in reverse"]
        parts.append(kernel("fused_backward_cuda", bw_arrays, body.fwd + bw_lines, bw_stores, doc, tail))
        parts.append(strided("fused_backward_cuda_strided", bw_arrays, body.fwd + bw_lines, bw_stores, doc, tail))
    return "\n\n".join(p.rstrip() + "\n" for p in parts)


# ---------------------------------------------------------------------------------------- loading

def _compiled_dir():
    """Where generated modules go: $REFTORCH_COMPILE_DIR, else <user cache>/reftorch/compiled, else /tmp."""
    from ..kernels import _cache
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    explicit = os.environ.get("REFTORCH_COMPILE_DIR")
    for cand in ((explicit,) if explicit else ()) + (os.path.join(base, "reftorch", "compiled"), os.path.join(tempfile.gettempdir(),
                                                                          f"reftorch-compiled-{os.getuid()}")):
        if _cache._writable(cand):
            return cand
    raise RuntimeError("reftorch.compile: no writable directory for generated kernels")


def load(src):
    """Write the source under its hash (once) and import it."""
    h = hashlib.sha1(src.encode()).hexdigest()[:20]
    mod = _MODULES.get(h)
    if mod is not None:
        return mod
    d = _compiled_dir()
    path = os.path.join(d, f"rc_{h}.py")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(src)
        os.replace(tmp, path)
    name = f"reftorch_compiled_{h}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    _MODULES[h] = mod
    return mod


def source_ok(src):
    """The generated source parses (tests)."""
    ast.parse(src)
    return True


# ---------------------------------------------------------------------------------------- optimizer update

ADAM_OPS = ("_adam_exp_avg", "_adam_exp_avg_sq", "_adam_param")


def adam_source():
    """One pass of Adam over one parameter: the three in-place ops optim.Adam runs one after another
    (ops.yaml _adam_exp_avg, _adam_exp_avg_sq, _adam_param), composed into one loop that reads the gradient,
    the parameter and both moments once. Each element goes through the same scalar functions, in the same
    order and with the same float64 scalars as the eager kernels, so the result is the eager one bit for bit."""
    _ensure_codegen_importable()
    from codegen.emit_cpu import prelude
    reg = _registry()
    parts = ["# GENERATED by reftorch.compile: Adam's update of one parameter in one pass -- do not edit.\n",
             prelude(), "from reftorch.kernels._cache import CACHE\n"]
    for name in ADAM_OPS:
        op = reg[name]
        params = [a.name for a in op.signature.tensor_args] + _kernel_scalar_names(op)
        from codegen.emit_cpu import scalar_fn
        parts.append(scalar_fn(op.name, params, op.scalar, f"{op.name} -- {op.scalar}"))
    parts.append('''@njit(cache=CACHE, error_model="numpy", nogil=True)
def adam_update(p, g, m, v, beta1, beta2, lr, weight_decay, eps, bias_correction1, bias_correction2_sqrt,
                maximize, decoupled):
    # p, g, m, v: the parameter, its gradient, exp_avg, exp_avg_sq (flat, contiguous, one dtype);
    # scalars are floats, as the dispatcher passes them to the eager kernels
    for i in range(p.shape[0]):
        # exp_avg.lerp_(g, 1 - beta1)  (ops.yaml _adam_exp_avg)
        m[i] = _s__adam_exp_avg(m[i], g[i], p[i], beta1, weight_decay, maximize, decoupled)
        # exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)  (ops.yaml _adam_exp_avg_sq)
        v[i] = _s__adam_exp_avg_sq(v[i], g[i], p[i], beta2, weight_decay, maximize, decoupled)
        # the parameter, from the updated moments  (ops.yaml _adam_param)
        p[i] = _s__adam_param(p[i], m[i], v[i], lr, weight_decay, decoupled, bias_correction1,
                              bias_correction2_sqrt, eps)
''')
    return "\n\n".join(p.rstrip() + "\n" for p in parts)
