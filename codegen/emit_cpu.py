"""Numba CPU kernels from ops.yaml: one scalar function per op, and the loops around it per kind.

The loops are written once per kind here (NumPy's ufunc model: the op supplies a scalar, the
machinery does strides); every op gets the same loops with its own scalar spliced in.

Elementwise ops get three kernels (each compiled on first use only):
  <op>_contig(out, in0, in1, ..., scalars)      every operand dense in one memory order, same length
  <op>_strided(shape, out, o_off, o_st, in0, in0_off, in0_st, ..., scalars)
  <op>_blocked(same arguments)                  large operands whose stride orders disagree (a.T + b)
  <op>_inplace(out, in1, ..., scalars)         in place, dense: out is in0 (see inplace_kernel)
The strided kernel walks the outer dimensions with an odometer (no div/mod per element) and
specialises the inner loop for unit and zero strides so that LLVM can vectorise it; the blocked one
walks the last two dimensions in 64x64 tiles. Indices are uint64: signed indices carry a
negative-index check that stops vectorisation (DESIGN §5). exp/log/tanh/log1p/expm1/erf of float32 come
from templates/vmath.py (polynomials that vectorise) instead of one libm call per element; sums and
products over contiguous rows reassociate (several accumulators, vectorised).
Elementwise and reduction kernels release the GIL (nogil): the dispatcher runs large ones in chunks on
several threads (reftorch/_dispatch.py, PARALLEL_MIN).
"""
from __future__ import annotations

from .common import CACHE_GUARD, HEADER, LAZY_MODULE, kernel_scalars, prelude, template, vmath  # noqa: F401


SCALAR_DECORATOR = '@njit(error_model="numpy", forceinline=True)'


def scalar_fn(name, params, expr, comment, decorator=SCALAR_DECORATOR):
    """The op's scalar function, called by each of its loops: compiled once per signature and inlined by LLVM
    (forceinline: its alwaysinline attribute), so the loops vectorise. Numba-level inlining (inline="always")
    deep-copied the body's IR into every loop variant (a 3-input strided kernel has 8), which made cold compiles
    of heavy formulas several times slower (igamma's gradient kernel: 11 s -> 1 s) for the same machine code;
    without any forced inlining LLVM's cost model left larger bodies (gelu's backward) as calls, unvectorised."""
    return (f"{decorator}\ndef _s_{name}({', '.join(params)}):\n"
            f"    # ops.yaml: {comment}\n    return {expr}\n")


def _odometer(n, top):
    """The step at the end of each outer iteration: the index over dims top..0 counts up like an odometer,
    moving the output offset po and each input's p<i> by its stride (no div/mod per element)."""
    lines = [f"        d = {top}", "        while d >= 0:", "            idx[d] += np.uint64(1)",
             "            po += np.uint64(o_st[d])"]
    lines += [f"            p{i} += np.uint64(a{i}_st[d])" for i in range(n)]
    lines += ["            if idx[d] < np.uint64(shape[d]):", "                break",
              "            po -= np.uint64(o_st[d]) * np.uint64(shape[d])"]
    lines += [f"            p{i} -= np.uint64(a{i}_st[d]) * np.uint64(shape[d])" for i in range(n)]
    return lines + ["            idx[d] = np.uint64(0)", "            d -= 1", ""]


def inplace_kernel(name, n, scalars, comment):
    """The contiguous kernel of an in-place op (out is input 0, passed once). Given out and a0 as two arguments
    that alias, LLVM's runtime overlap check fails and the scalar loop runs (a.add_(b): 4.6x slower than a + b);
    one pointer read and written at the same index vectorises."""
    sc = "".join(", " + s for s in scalars)
    rest = "".join(f", a{i}" for i in range(1, n))
    vals = ", ".join(["out[i]"] + [f"a{i}[i]" for i in range(1, n)] + list(scalars))
    return (f"@njit(cache=CACHE, error_model=\"numpy\", nogil=True)\ndef {name}_inplace(out{rest}{sc}):\n"
            f"    # ops.yaml: {comment} -- in place\n"
            f"    for i in range(out.shape[0]):\n"
            f"        out[i] = _s_{name}({vals})\n")


def elementwise_kernels(name, tensors, scalars, comment):
    """The contiguous and the strided kernel of one elementwise op (n tensor inputs)."""
    n = len(tensors)
    call_args = lambda vals: ", ".join(list(vals) + list(scalars))
    sc = "".join(", " + s for s in scalars)
    ins = ", ".join(f"a{i}" for i in range(n))
    out = []
    out.append(f"@njit(cache=CACHE, error_model=\"numpy\", nogil=True)\ndef {name}_contig(out, {ins}{sc}):\n"
               f"    # ops.yaml: {comment}\n"
               f"    for i in range(out.shape[0]):\n"
               f"        out[i] = _s_{name}({call_args(f'a{i}[i]' for i in range(n))})\n")
    params = "".join(f", a{i}, a{i}_off, a{i}_st" for i in range(n))
    lines = [f"@njit(cache=CACHE, error_model=\"numpy\", nogil=True)",
             f"def {name}_strided(shape, out, o_off, o_st{params}{sc}):",
             f"    # ops.yaml: {comment}",
             "    nd = len(shape)",
             "    last = nd - 1",
             "    n = np.uint64(shape[last])",
             "    so = np.uint64(o_st[last])",
             "    po = np.uint64(o_off)"]
    for i in range(n):
        lines += [f"    s{i} = np.uint64(a{i}_st[last])", f"    p{i} = np.uint64(a{i}_off)"]
    lines += ["    outer = 1", "    for d in range(last):", "        outer *= shape[d]",
              "    idx = np.zeros(nd, np.uint64)", "    for _ in range(outer):"]
    # inner-loop specialisations: every input stride 0 or 1 with a unit output stride
    combos = []
    if n <= 3:
        for mask in range(1, 2 ** n):
            combos.append(tuple((mask >> i) & 1 for i in range(n)))  # 1 = unit stride, 0 = broadcast
        combos.sort(key=lambda c: -sum(c))
    else:
        combos = [tuple([1] * n)]
    first = True
    for combo in combos:
        cond = " and ".join(["so == 1"] + [f"s{i} == {c}" for i, c in enumerate(combo)])
        lines.append(f"        {'if' if first else 'elif'} {cond}:")
        first = False
        for i, c in enumerate(combo):
            if c == 0:
                lines.append(f"            v{i} = a{i}[p{i}]")
        vals = [f"a{i}[p{i} + i]" if c else f"v{i}" for i, c in enumerate(combo)]
        lines += ["            for i in range(n):", f"                out[po + i] = _s_{name}({call_args(vals)})"]
    lines += ["        else:", "            for i in range(n):",
              f"                out[po + i * so] = _s_{name}({call_args(f'a{i}[p{i} + i * s{i}]' for i in range(n))})"]
    lines += _odometer(n, "last - 1")     # over the outer dimensions
    out.append("\n".join(lines))
    return "\n\n".join(out)


def blocked_kernel(name, n, scalars, comment):
    """<op>_blocked: the strided kernel for operands whose stride orders disagree (a.T + b): the last two
    dims go in 64x64 tiles, so that every cache line a transposed input brings in is used before it leaves
    (DESIGN §5: 1.9 against 5-13 ns/element). The dispatcher calls it for large tensors only."""
    call_args = lambda vals: ", ".join(list(vals) + list(scalars))
    sc = "".join(", " + s for s in scalars)
    params = "".join(f", a{i}, a{i}_off, a{i}_st" for i in range(n))
    lines = [f"@njit(cache=CACHE, error_model=\"numpy\", nogil=True)",
             f"def {name}_blocked(shape, out, o_off, o_st{params}{sc}):",
             f"    # ops.yaml: {comment}",
             "    nd = len(shape)",
             "    R = np.uint64(shape[nd - 2])",
             "    C = np.uint64(shape[nd - 1])",
             "    ro = np.uint64(o_st[nd - 2])",
             "    co = np.uint64(o_st[nd - 1])",
             "    po = np.uint64(o_off)"]
    for i in range(n):
        lines += [f"    r{i} = np.uint64(a{i}_st[nd - 2])", f"    c{i} = np.uint64(a{i}_st[nd - 1])",
                  f"    p{i} = np.uint64(a{i}_off)"]
    lines += ["    outer = 1", "    for d in range(nd - 2):", "        outer *= shape[d]",
              "    idx = np.zeros(nd, np.uint64)",
              "    T = np.uint64(64)",
              "    for _ in range(outer):",
              "        for i0 in range(np.uint64(0), R, T):",
              "            i1 = min(i0 + T, R)",
              "            for j0 in range(np.uint64(0), C, T):",
              "                j1 = min(j0 + T, C)",
              "                for i in range(i0, i1):",
              "                    qo = po + i * ro"]
    lines += [f"                    q{i} = p{i} + i * r{i}" for i in range(n)]
    lines += ["                    for j in range(j0, j1):",
              f"                        out[qo + j * co] = _s_{name}({call_args(f'a{i}[q{i} + j * c{i}]' for i in range(n))})"]
    lines += _odometer(n, "nd - 3")       # over the dims before the last two
    return "\n".join(lines)


def _merge(op):
    from .emit_cuda import merge_expr     # (emit_cuda imports this module)
    return merge_expr(op.reduce.combine)


def _reassociable(op):
    """True when the combine is `acc + f(x)` or `acc * f(x)` with an identity: partial results may then be
    summed in any order, which lets LLVM vectorise a row with several accumulators (fastmath reassoc)."""
    return op.reduce.identity is not None and _merge(op) in ("acc + x", "acc * x")


def combine_fn(op):
    """_c_<op>(acc, x[, scalars]): the combine of a reduction or scan, inlined into its loops."""
    extra = [a.name for a in op.signature.args if a.type in ("Scalar", "float")] if op.kind == "reduction" else []
    sc = "".join(", " + s for s in extra)
    return f'''@njit(inline="always")
def _c_{op.name}(acc, x{sc}):
    # ops.yaml: {op.name} -- combine: {op.reduce.combine}
    return {op.reduce.combine}
'''


def _names(op, fmt, load):
    """(kernel name stem, comment tag, element reader) of op's loops: fmt/load name a 16-bit storage format
    and its load helper (emit_cpu_half.py), whose kernels read uint16 bit patterns and compute in float32."""
    if fmt is None:
        return op.name, "", lambda idx: f"x[{idx}]"
    return f"{op.name}_{fmt}", f" [{fmt}]", lambda idx: f"{load}(x[{idx}])"


def reduction_loops(op, fmt=None, load=None, rows_load=None):
    # rows_load: the load of the reassociated contiguous-row loop when it differs (emit_cpu_half.ROWS_LOADS)
    r = op.reduce
    stem, tag, ld = _names(op, fmt, load)
    rows_ld = _names(op, fmt, rows_load or load)[2]
    extra = [a.name for a in op.signature.args if a.type in ("Scalar", "float")]
    sc = "".join(", " + s for s in extra)
    rows = ""
    rows_call = ""
    rows_seed = rows_exact = ""
    if rows_load:
        # the fast load may differ from the exact one in NaN payloads only: a NaN result (rare) reruns the row
        # with the exact load, so every result (which NaN a sum of several returns included) stays as it was
        rows_seed = "\n        a0 = a"
        rows_exact = f"""
        if a != a:
            a = a0
            for k in range(K):
                a = _c_{op.name}(a, {ld("base + k")}{sc})"""
    if _reassociable(op):
        rows = f'''

@njit(cache=CACHE, error_model="numpy", nogil=True, fastmath={{"reassoc"}})
def _rows_{stem}(x, off, M, sm, K, acc{sc}):
    # ops.yaml: {op.name}{tag} -- contiguous rows, reassociated: the loop vectorises with several partial
    # accumulators ({"float32 sums still accumulate in float64, the acc dtype" if fmt is None else "in float32"})
    for m in range(M):
        base = off + m * sm
        a = acc[m]{rows_seed}
        for k in range(K):
            a = _c_{op.name}(a, {rows_ld("base + k")}{sc}){rows_exact}
        acc[m] = a
'''
        if _merge(op) == op.reduce.combine.strip() and fmt is None:
            # partial results combine like elements (sum: acc + x): the dispatcher may split one long row
            rows = f"\n\n{op.name}_self_merging = True  # ops.yaml: {op.name} -- combine: {r.combine}\n" + rows
        rows_call = f"""
        if sk == 1 and start == 0:
            _rows_{stem}(x, off, M, sm, K, acc{sc})
            return"""
    # a reduction with an identity always starts from it (start == 0): no seeding from an element, whose type
    # need not fit the accumulator (complex elements into any's bool one)
    seed_first = "" if r.identity is not None else f"""
    if start == 1:
        for m in range(M):
            acc[m] = {ld("off + m * sm")}"""
    return f'''{rows}

@njit(cache=CACHE, error_model="numpy", nogil=True)
def {stem}_reduce(x, off, M, sm, K, sk, acc, start{sc}):
    # ops.yaml: {op.name}{tag} -- reduce K elements (stride sk) for each of M outputs (stride sm) into acc.
    # start == 1: acc is seeded from the first element (a reduction without identity).
    off = np.uint64(off)
    M = np.uint64(M)
    K = np.uint64(K)
    sm = np.uint64(sm)
    sk = np.uint64(sk){seed_first}
    k0 = np.uint64(start)
    if sk <= sm or M == 1:
        # the reduced axis is the inner one: one running value per output row{rows_call}
        for m in range(M):
            base = off + m * sm
            a = acc[m]
            for k in range(k0, K):
                a = _c_{op.name}(a, {ld("base + k * sk")}{sc})
            acc[m] = a
    elif sm == 1:
        # the reduced axis is the outer one and the kept one contiguous: whole rows into acc (vectorises), in
        # blocks of OUTER_BLOCK outputs (their acc stays in L1) and 4 rows a pass (a quarter of the acc loads
        # and stores); each output still combines its elements in order, as one row at a time would
        B = np.uint64(OUTER_BLOCK)
        for m0 in range(np.uint64(0), M, B):
            m1 = min(m0 + B, M)
            k = k0
            while k + np.uint64(4) <= K:
                b0 = off + k * sk
                b1 = b0 + sk
                b2 = b1 + sk
                b3 = b2 + sk
                for m in range(m0, m1):
                    a = _c_{op.name}(acc[m], {ld("b0 + m")}{sc})
                    a = _c_{op.name}(a, {ld("b1 + m")}{sc})
                    a = _c_{op.name}(a, {ld("b2 + m")}{sc})
                    acc[m] = _c_{op.name}(a, {ld("b3 + m")}{sc})
                k += np.uint64(4)
            while k < K:
                b0 = off + k * sk
                for m in range(m0, m1):
                    acc[m] = _c_{op.name}(acc[m], {ld("b0 + m")}{sc})
                k += np.uint64(1)
    else:
        # the reduced axis is the outer one: accumulate whole rows into acc (contiguous writes)
        for k in range(k0, K):
            base = off + k * sk
            for m in range(M):
                acc[m] = _c_{op.name}(acc[m], {ld("base + m * sm")}{sc})


@njit(cache=CACHE, error_model="numpy", nogil=True)
def {stem}_reduce_nd(x, off, p0, p1, pshape, pstr, M, sm, J, jshape, jstr, K, sk, seed, out, start{sc}):
    # ops.yaml: {op.name}{tag} -- {stem}_reduce over dims that do not collapse to one kept and one reduced axis
    # (no copy of x): for each index p in [p0, p1) of the outer kept dims (pshape, pstr; out holds M outputs per
    # p) and each of the J indices of the outer reduced dims (jshape, jstr), the M x K reduce, OUTER_BLOCK
    # outputs at a time into an accumulator of seed's dtype (seeded with seed[0] when start == 0) that stays in
    # cache and is then written (cast) to out
    B = min(M, OUTER_BLOCK)
    buf = np.empty(B, seed.dtype)
    for p in range(p0, p1):
        po = off
        q = p
        for d in range(len(pshape) - 1, -1, -1):
            po += (q % pshape[d]) * pstr[d]
            q //= pshape[d]
        for m0 in range(0, M, B):
            n = min(B, M - m0)
            a = buf[:n]
            if start == 0:
                a[:] = seed[0]
            for j in range(J):
                jo = po + m0 * sm
                q = j
                for d in range(len(jshape) - 1, -1, -1):
                    jo += (q % jshape[d]) * jstr[d]
                    q //= jshape[d]
                {stem}_reduce(x, jo, n, sm, K, sk, a, start if j == 0 else 0{sc})
            o = p * M + m0
            for i in range(n):
                out[o + i] = a[i]
'''


def reduction_kernel(op):
    return combine_fn(op) + reduction_loops(op)


def better_fn(op):
    return f'''@njit(inline="always")
def _b_{op.name}(x, best):
    # ops.yaml: {op.name} -- better: {op.reduce.better}
    return {op.reduce.better}
'''


def argreduction_loops(op, fmt=None, load=None):
    stem, tag, ld = _names(op, fmt, load)
    return f'''@njit(cache=CACHE, error_model="numpy")
def {stem}_reduce(x, off, M, sm, K, sk, out):
    # ops.yaml: {op.name}{tag} -- index of the best of K elements for each of M outputs (first one wins ties)
    off = np.uint64(off)
    sm = np.uint64(sm)
    sk = np.uint64(sk)
    if sm == 1 and M > 1 and K > 1:
        # the reduced axis is the outer one and the kept one contiguous: whole rows at a time against a row of
        # the best values so far (selects, vectorises), in blocks of OUTER_BLOCK outputs
        B = np.uint64(OUTER_BLOCK)
        bv = np.empty(min(B, np.uint64(M)), {"x.dtype" if fmt is None else "np.float32"})
        for m0 in range(np.uint64(0), np.uint64(M), B):
            n = min(m0 + B, np.uint64(M)) - m0
            for i in range(n):
                bv[i] = {ld("off + m0 + i")}
                out[m0 + i] = 0
            for k in range(np.uint64(1), np.uint64(K)):
                base = off + k * sk + m0
                for i in range(n):
                    v = {ld("base + i")}
                    b = _b_{op.name}(v, bv[i])
                    bv[i] = v if b else bv[i]
                    out[m0 + i] = k if b else out[m0 + i]
        return
    for m in range(np.uint64(M)):
        base = off + m * sm
        best = {ld("base")}
        bi = 0
        for k in range(np.uint64(1), np.uint64(K)):
            v = {ld("base + k * sk")}
            if _b_{op.name}(v, best):
                best = v
                bi = k
        out[m] = bi
'''


def argreduction_kernel(op):
    return better_fn(op) + "\n\n" + argreduction_loops(op)


def scan_loops(op, fmt=None, load=None):
    stem, tag, ld = _names(op, fmt, load)
    return f'''@njit(cache=CACHE, error_model="numpy")
def {stem}_scan(x, off, M, sm, K, sk, out, acc0):
    # ops.yaml: {op.name}{tag} -- running combine along K (stride sk) for each of M rows; out is (M, K) contiguous
    off = np.uint64(off)
    sm = np.uint64(sm)
    sk = np.uint64(sk)
    K = np.uint64(K)
    for m in range(np.uint64(M)):
        base = off + m * sm
        a = acc0[0]
        for k in range(K):
            a = _c_{op.name}(a, {ld("base + k * sk")})
            out[m * K + k] = a


@njit(cache=CACHE, error_model="numpy")
def {stem}_scan_rows(x, off, M, K, sk, out, acc0):
    # ops.yaml: {op.name}{tag} -- the running combine along K (stride sk) of M contiguous outputs, a whole row at a
    # time (vectorises); out is (K, M) contiguous, each row combining the one before (the same order as _scan)
    off = np.uint64(off)
    sk = np.uint64(sk)
    K = np.uint64(K)
    M = np.uint64(M)
    for m in range(M):
        out[m] = _c_{op.name}(acc0[0], {ld("off + m")})
    for k in range(np.uint64(1), K):
        base = off + k * sk
        prev = (k - np.uint64(1)) * M
        for m in range(M):
            out[prev + M + m] = _c_{op.name}(out[prev + m], {ld("base + m")})
'''


def foreach_kernel(op, elementwise):
    """<op>_foreach(lists..., scalars): the body's assignments, in order, for every element of every tensor of
    the lists (tuples of 1-D contiguous arrays, element k of each list of the same length): one call updates them
    all (the multi-tensor update of an optimizer). Calls of elementwise ops run their scalar functions; each
    assigned value is stored and read back, so that it is rounded to its array's dtype exactly as the op's own
    kernel would round it."""
    import ast
    import textwrap
    lists = [a.name for a in op.signature.args if a.type == "Tensor[]"]
    scalars = [a.name for a in op.signature.args if a.type != "Tensor[]"]

    class Rewrite(ast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and node.func.id in elementwise:
                node.func = ast.copy_location(ast.Name(f"_s_{node.func.id}", ast.Load()), node.func)
            return node

    tree = ast.parse(textwrap.dedent(op.body).strip(), mode="exec")
    params = ", ".join([f"l_{n}" for n in lists] + scalars)
    lines = ["@njit(cache=CACHE, error_model=\"numpy\", nogil=True)",
             f"def {op.name}_foreach({params}):",
             f"    # ops.yaml: {op.name} -- every element of every tensor, updated in place: "
             f"{', '.join(dict.fromkeys(s.targets[0].id for s in tree.body))}",
             f"    for k in range(len(l_{lists[0]})):"]
    lines += [f"        a_{n} = l_{n}[k]" for n in lists]
    lines += [f"        for i in range(a_{lists[0]}.shape[0]):"]
    lines += [f"            {n} = a_{n}[i]" for n in lists]
    for stmt in tree.body:
        target = stmt.targets[0].id
        expr = ast.unparse(ast.fix_missing_locations(Rewrite().visit(stmt.value)))
        lines += [f"            a_{target}[i] = {expr}", f"            {target} = a_{target}[i]"]
    return "\n".join(lines) + "\n"


def scan_kernel(op):
    return combine_fn(op) + "\n\n" + scan_loops(op)


def recorded(template):
    """A template's text for below CACHE_GUARD: without its own `from numba import njit`, its helpers are
    recorded like the kernels (a process builds dispatchers only for the helpers of kernels it compiles)."""
    return template.replace("from numba import njit\n", "")


def emit_module(ops, fused):
    """reftorch/kernels/cpu.py: every CPU kernel of the registry, plus fused backward kernels."""
    parts = [HEADER, '"""Numba CPU kernels for every elementwise, reduction and scan op of ops.yaml."""\n',
             CACHE_GUARD, recorded(prelude()), recorded(vmath())]
    for op in ops:
        if op.kind in ("unary", "binary", "ternary"):
            tensors = [a.name for a in op.signature.tensor_args]
            scalars = kernel_scalars(op)
            parts.append(scalar_fn(op.name, tensors + scalars, op.scalar, f"{op.name} -- {op.scalar}"))
            parts.append(elementwise_kernels(op.name, tensors, scalars, op.name))
            parts.append(inplace_kernel(op.name, len(tensors), scalars, op.name))
            parts.append(blocked_kernel(op.name, len(tensors), scalars, op.name))
        elif op.kind == "reduction":
            parts.append(reduction_kernel(op))
        elif op.kind == "argreduction":
            parts.append(argreduction_kernel(op))
        elif op.kind == "scan":
            parts.append(scan_kernel(op))
        elif op.kind == "foreach":
            parts.append(foreach_kernel(op, {o.name for o in ops if o.kind in ("unary", "binary", "ternary")}))
    for fk in fused:
        parts.append(scalar_fn(fk.name, list(fk.tensors) + list(fk.scalars), fk.expr, fk.comment))
        parts.append(elementwise_kernels(fk.name, fk.tensors, fk.scalars, fk.comment))
        parts.append(blocked_kernel(fk.name, len(fk.tensors), fk.scalars, fk.comment))
    parts.append(LAZY_MODULE)
    return "\n\n".join(p.rstrip() + "\n" for p in parts)


KERNELS_INIT = HEADER + '''"""Generated from reftorch/ops.yaml by `python -m codegen`."""


def cache_stats():
    """The kernel cache of this process: {"dir": its directory or None, "repaired": how many damaged cache
    files were found, removed and recompiled, "repaired_files": their paths} (reftorch/kernels/_cache.py)."""
    from ._cache import cache_stats     # here, not at the top: importing _cache imports Numba
    return cache_stats()
'''


def cache_module():
    """reftorch/kernels/_cache.py: codegen/templates/cache.py copied verbatim under the generated-file header."""
    return HEADER + template("cache.py")
