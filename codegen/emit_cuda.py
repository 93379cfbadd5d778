"""numba.cuda kernels from ops.yaml: the scalar expressions of the CPU kernels, in device loops.

The scalar function of each elementwise op (and of each fused backward kernel) is the CPU one with
`@cuda.jit(device=True, inline=True)`; the loops around it are written once per kind here:

  <op>_contig(out, a0, a1, ..., scalars)               grid-stride over contiguous 1-D operands
  <op>_strided(shape, out, o_off, o_st, a0, a0_off, a0_st, ..., scalars)
                                                      grid-stride over the linear index, which is split
                                                      into coordinates by div/mod (cheap on a GPU)
  <op>_reduce(x, off, M, sm, K, sk, acc, start, ...)   one block per output row, threads fold strided
                                                      shares of the row, a shared-memory tree merges
  <op>_reduce_serial(same arguments)                  one thread per output row (outer-axis reductions,
                                                      and combines whose partials cannot be merged)
  <op>_scan(x, off, M, sm, K, sk, out, acc0)          one block per row, Hillis-Steele over chunks
  <op>_scan_serial(same arguments)                    one thread per row
  matmul_tiled(a, b, out)                             shared-memory tiles over 3-D (batch, rows, cols)
  fill_from(dst, src)                                 dst[:] = src[0] (seeds the partials of split reductions)

The arguments are those of the CPU kernels (reftorch/kernels/cpu.py), so the dispatcher computes the
geometry once for both devices. No warp shuffles or ballots: the simulator has none.
"""
from __future__ import annotations

import ast

from .common import HEADER, complex_helpers, kernel_scalars, template

BLOCK = 256   # the most threads per block of the reduction and scan kernels (their shared arrays)
TILE = 16     # matmul tile edge: TILE x TILE threads per block

DEVICE = "@cuda.jit(device=True, inline=True)"


# ------------------------------------------------------------------------------ prelude

def _top_level(body):
    """Statements of a module body, those inside top-level if/else blocks included."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)


def _bound_names(tree):
    """Names a module binds at its top level (functions, assignments, imports), not inside functions."""
    names = set()
    for node in _top_level(tree.body if isinstance(tree, ast.Module) else [tree]):
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def prelude():
    """The CUDA prelude, plus every CPU helper it lacks, copied as a device function."""
    cuda_src = complex_helpers(template("cuda_prelude.py"), DEVICE)
    cpu_src = template("prelude.py")
    have = _bound_names(ast.parse(cuda_src))
    cpu_lines = cpu_src.splitlines()
    extra = []
    for node in ast.parse(cpu_src).body:
        if isinstance(node, ast.ImportFrom) and node.module == "math":
            missing = [a.name for a in node.names if (a.asname or a.name) not in have]
            if missing:
                extra.append(f"from math import {', '.join(missing)}")
        elif isinstance(node, ast.FunctionDef) and node.name not in have:
            body = cpu_lines[node.lineno - 1:node.end_lineno]   # the def without its @njit decorator
            extra.append(f"{DEVICE}  # copied from codegen/templates/prelude.py\n" + "\n".join(body))
        elif isinstance(node, ast.Assign) and not (_bound_names(node) <= have):
            extra.append(ast.get_source_segment(cpu_src, node))
    if extra:
        cuda_src += "\n\n# ---- CPU helpers with no CUDA version of their own in codegen/templates/cuda_prelude.py\n\n" \
                    + "\n\n\n".join(extra) + "\n"
    return cuda_src


# ------------------------------------------------------------------------------ merging partial results

# helpers f with f(f(a, b), c) == f(a, f(b, c)) and f(a, b) == f(b, a): f(acc, x) merges partials by itself
ASSOCIATIVE = {"max", "min", "fmax", "fmin", "logaddexp"}
MERGE_OPS = {ast.Add: "+", ast.Mult: "*", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}


def _is(node, name):
    return isinstance(node, ast.Name) and node.id == name


def _mentions(node, name):
    return any(_is(n, name) for n in ast.walk(node))


def _selects(node):
    """True when the expression always yields acc or x itself (max-like combines)."""
    if isinstance(node, ast.Name):
        return node.id in ("acc", "x")
    if isinstance(node, ast.IfExp):
        return _selects(node.body) and _selects(node.orelse)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min", "fmax", "fmin"):
        return len(node.args) == 2 and all(_selects(a) for a in node.args) and not node.keywords
    return False


def merge_expr(combine):
    """How two partial results of `combine` merge, or None when they cannot (then one thread folds a row).

    `acc OP f(x)` with OP associative and commutative merges as `acc OP x` (sum: acc + x; a sum of
    squares acc + x * x merges its partials by +); a combine that selects acc or x merges by itself.
    """
    tree = ast.parse(combine.strip(), mode="eval").body
    if isinstance(tree, ast.BinOp) and type(tree.op) in MERGE_OPS:
        sym = MERGE_OPS[type(tree.op)]
        if (_is(tree.left, "acc") and not _mentions(tree.right, "acc")) or \
                (_is(tree.right, "acc") and not _mentions(tree.left, "acc")):
            return f"acc {sym} x"
    if isinstance(tree, ast.BoolOp) and len(tree.values) == 2:
        word = "and" if isinstance(tree.op, ast.And) else "or"
        a, b = tree.values
        if (_is(a, "acc") and not _mentions(b, "acc")) or (_is(b, "acc") and not _mentions(a, "acc")):
            return f"acc {word} x"
    if _selects(tree) or (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id in ASSOCIATIVE
                          and not tree.keywords and sorted(ast.dump(a) for a in tree.args) ==
                          sorted(ast.dump(ast.Name(n, ast.Load())) for n in ("acc", "x"))):
        return combine.strip()
    return None


def tree_merge(op):
    """merge_expr of a reduction or scan, or None when its rows must be folded by one thread. Without an
    identity every partial starts at a raw element, which only a selecting combine (max-like) allows."""
    merge = merge_expr(op.reduce.combine)
    if merge is not None and op.reduce.identity is None and not _same(merge, op.reduce.combine):
        return None
    return merge


def _same(a, b):
    return ast.dump(ast.parse(a.strip(), mode="eval")) == ast.dump(ast.parse(b.strip(), mode="eval"))


def reduction_scalars(op):
    """Extra scalar arguments of a reduction kernel (the same rule as emit_cpu.reduction_kernel)."""
    return [a.name for a in op.signature.args if a.type in ("Scalar", "float")]


# ------------------------------------------------------------------------------ elementwise

def scalar_fn(name, params, expr, comment):
    return f"{DEVICE}\ndef _s_{name}({', '.join(params)}):\n    # ops.yaml: {comment}\n    return {expr}\n"


def elementwise_kernels(name, n, scalars, comment):
    """The contiguous and the strided kernel of one elementwise op with n tensor inputs."""
    sc = "".join(", " + s for s in scalars)
    ins = ", ".join(f"a{i}" for i in range(n))
    call = lambda vals: f"_s_{name}({', '.join(list(vals) + list(scalars))})"
    contig = (f"@cuda.jit\ndef {name}_contig(out, {ins}{sc}):\n"
              f"    # ops.yaml: {comment}\n"
              f"    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):\n"
              f"        out[i] = {call(f'a{j}[i]' for j in range(n))}\n")
    params = "".join(f", a{i}, a{i}_off, a{i}_st" for i in range(n))
    lines = ["@cuda.jit",
             f"def {name}_strided(shape, out, o_off, o_st{params}{sc}):",
             f"    # ops.yaml: {comment}",
             "    nd = len(shape)",
             "    n = 1",
             "    for d in range(nd):",
             "        n *= shape[d]",
             "    for i in range(cuda.grid(1), n, cuda.gridsize(1)):",
             "        rem = i",
             "        po = o_off"]
    lines += [f"        p{j} = a{j}_off" for j in range(n)]
    lines += ["        for d in range(nd - 1, -1, -1):",
              "            c = rem % shape[d]",
              "            rem //= shape[d]",
              "            po += c * o_st[d]"]
    lines += [f"            p{j} += c * a{j}_st[d]" for j in range(n)]
    lines += [f"        out[po] = {call(f'a{j}[p{j}]' for j in range(n))}", ""]
    return contig + "\n\n" + "\n".join(lines)


# ------------------------------------------------------------------------------ reductions and scans

def _combine_fns(op, params, merge):
    r = op.reduce
    out = f"""{DEVICE}
def _c_{op.name}(acc, x{params}):
    # ops.yaml: {op.name} -- combine: {r.combine}
    return {r.combine}
"""
    if merge is not None:
        out += f"""

{DEVICE}
def _m_{op.name}(acc, x{params}):
    # ops.yaml: {op.name} -- merges two partial results of combine
    return {merge}
"""
    return out


def _loader(fmt):
    """x[i] as the kernels read it: as stored, or (fmt: a 16-bit format of emit_cuda_half) loaded to float32."""
    if fmt is None:
        return lambda e: e
    from .emit_cpu_half import FORMATS
    return lambda e: f"{FORMATS[fmt][0]}({e})"


def reduction_kernels(op, fmt=None, combine=True):
    """The reduction kernels of op; with fmt ("f16"/"bf16") those of 16-bit input (named <op>_<fmt>_...)
    that load x to float32 (acc is float32), and combine=False leaves out the combine functions."""
    sc = "".join(", " + s for s in reduction_scalars(op))
    merge = tree_merge(op)
    ld = _loader(fmt)
    kn = op.name if fmt is None else f"{op.name}_{fmt}"
    out = _combine_fns(op, sc, merge) if combine else ""
    # a reduction with an identity always starts from it (start == 0): no seeding from an element, whose type
    # need not fit the accumulator (complex elements into any's bool one), as emit_cpu's kernels
    seeded = op.reduce.identity is None
    fold = f"""
            if got:
                a = _c_{op.name}(a, v{sc})
            else:
                a = v
                got = True""" if seeded else f"""
            a = _c_{op.name}(a, v{sc})"""
    seed = f"""
        if start == 1:
            a = {ld('x[base]')}""" if seeded else ""
    if merge is not None:
        out += f"""

@cuda.jit
def {kn}_reduce(x, off, M, sm, K, sk, acc, start{sc}):
    # ops.yaml: {op.name} -- one block per output row (grid-stride over the M rows): each thread folds the
    # elements k = t, t + nt, ... of its row, then a shared-memory tree merges the block's partials.
    # start == 0: acc holds the identity on entry; start == 1: no identity, partials start at an element.
    part = cuda.shared.array(BLOCK, acc.dtype)
    has = cuda.shared.array(BLOCK, types.boolean)
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for m in range(cuda.blockIdx.x, M, cuda.gridDim.x):
        base = off + m * sm
        a = acc[m]
        got = start == 0
        for k in range(t, K, nt):
            v = {ld('x[base + k * sk]')}{fold}
        part[t] = a
        has[t] = got
        cuda.syncthreads()
        live = nt
        while live > 1:
            half = (live + 1) // 2
            if t + half < live and has[t + half]:
                if has[t]:
                    part[t] = _m_{op.name}(part[t], part[t + half]{sc})
                else:
                    part[t] = part[t + half]
                    has[t] = True
            cuda.syncthreads()
            live = half
        if t == 0:
            acc[m] = part[0]
        cuda.syncthreads()
"""
    out += f"""

@cuda.jit
def {kn}_reduce_serial(x, off, M, sm, K, sk, acc, start{sc}):
    # ops.yaml: {op.name} -- one thread per output row: neighbouring threads read neighbouring elements
    # when the reduced axis is the outer one.{'' if merge else ' (Its partial results cannot be merged: no tree kernel.)'}
    for m in range(cuda.grid(1), M, cuda.gridsize(1)):
        base = off + m * sm
        a = acc[m]{seed}
        for k in range(start, K):
            a = _c_{op.name}(a, {ld('x[base + k * sk]')}{sc})
        acc[m] = a
"""
    return out


def argreduction_kernels(op, fmt=None, combine=True):
    r = op.reduce
    ld = _loader(fmt)
    kn = op.name if fmt is None else f"{op.name}_{fmt}"
    vdt = "x.dtype" if fmt is None else "types.float32"
    head = f"""{DEVICE}
def _b_{op.name}(x, best):
    # ops.yaml: {op.name} -- better: {r.better}
    return {r.better}


""" if combine else ""
    return head + f"""@cuda.jit
def {kn}_reduce(x, off, M, sm, K, sk, out):
    # ops.yaml: {op.name} -- one block per output row; threads keep the best of their share, then a
    # shared-memory tree keeps the better of each pair, the lower index on ties (first one wins).
    vals = cuda.shared.array(BLOCK, {vdt})
    idx = cuda.shared.array(BLOCK, types.int64)
    has = cuda.shared.array(BLOCK, types.boolean)
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for m in range(cuda.blockIdx.x, M, cuda.gridDim.x):
        base = off + m * sm
        best = {ld('x[base]')}
        bi = 0
        got = False
        for k in range(t, K, nt):
            v = {ld('x[base + k * sk]')}
            if not got or _b_{op.name}(v, best):
                best = v
                bi = k
                got = True
        vals[t] = best
        idx[t] = bi
        has[t] = got
        cuda.syncthreads()
        live = nt
        while live > 1:
            half = (live + 1) // 2
            if t + half < live and has[t + half]:
                v = vals[t + half]
                j = idx[t + half]
                w = vals[t]
                if not has[t] or _b_{op.name}(v, w) or (not _b_{op.name}(w, v) and j < idx[t]):
                    vals[t] = v
                    idx[t] = j
                    has[t] = True
            cuda.syncthreads()
            live = half
        if t == 0:
            out[m] = idx[0]
        cuda.syncthreads()


@cuda.jit
def {kn}_reduce_serial(x, off, M, sm, K, sk, out):
    # ops.yaml: {op.name} -- one thread per output row (first one wins ties)
    for m in range(cuda.grid(1), M, cuda.gridsize(1)):
        base = off + m * sm
        best = {ld('x[base]')}
        bi = 0
        for k in range(1, K):
            v = {ld('x[base + k * sk]')}
            if _b_{op.name}(v, best):
                best = v
                bi = k
        out[m] = bi
"""


def scan_kernels(op, fmt=None, combine=True):
    merge = tree_merge(op)
    ld = _loader(fmt)
    kn = op.name if fmt is None else f"{op.name}_{fmt}"
    out = _combine_fns(op, "", merge) if combine else ""
    if merge is not None:
        out += f"""

@cuda.jit
def {kn}_scan(x, off, M, sm, K, sk, out, acc0):
    # ops.yaml: {op.name} -- one block per row; the row goes by in chunks of nt elements, each scanned
    # in shared memory (Hillis-Steele) and merged with the carry of the chunks before it.
    # out is (M, K) contiguous; acc0[0] is the identity.
    buf = cuda.shared.array(BLOCK, out.dtype)
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    ident = acc0[0]
    for m in range(cuda.blockIdx.x, M, cuda.gridDim.x):
        base = off + m * sm
        carry = ident
        for c0 in range(0, K, nt):
            k = c0 + t
            v = ident
            if k < K:
                v = _c_{op.name}(ident, {ld('x[base + k * sk]')})
            buf[t] = v
            cuda.syncthreads()
            step = 1
            while step < nt:
                w = buf[t]
                if t >= step:
                    w = _m_{op.name}(buf[t - step], w)
                cuda.syncthreads()
                buf[t] = w
                cuda.syncthreads()
                step *= 2
            if k < K:
                out[m * K + k] = _m_{op.name}(carry, buf[t])
            carry = _m_{op.name}(carry, buf[min(nt, K - c0) - 1])
            cuda.syncthreads()
"""
    out += f"""

@cuda.jit
def {kn}_scan_serial(x, off, M, sm, K, sk, out, acc0):
    # ops.yaml: {op.name} -- one thread per row; out is (M, K) contiguous{'' if merge else ' (partials cannot be merged: no tree kernel)'}
    for m in range(cuda.grid(1), M, cuda.gridsize(1)):
        base = off + m * sm
        a = acc0[0]
        for k in range(K):
            a = _c_{op.name}(a, {ld('x[base + k * sk]')})
            out[m * K + k] = a
"""
    return out


FILL = """@cuda.jit
def fill_from(dst, src):
    # not an op: dst[:] = src[0] on the device (seeds the partials of a split reduction with the identity)
    for i in range(cuda.grid(1), dst.shape[0], cuda.gridsize(1)):
        dst[i] = src[0]
"""


MATMUL = """@cuda.jit
def matmul_tiled(a, b, out):
    # ops.yaml: matmul -- out[z] = a[z] @ b[z] for 3-D (batch, rows, cols) arrays; the caller broadcasts
    # the batch and adds the unit dims of 1-D operands. Each block computes TILE x TILE outputs (grid-stride
    # over tiles and batch), staging TILE x TILE tiles of a and b in shared memory; it accumulates in
    # out's dtype (float32 in float32, as cuBLAS does by default; integers wrap like NumPy's).
    ta = cuda.shared.array((TILE, TILE), a.dtype)
    tb = cuda.shared.array((TILE, TILE), b.dtype)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    nb = out.shape[0]
    M = a.shape[1]
    K = a.shape[2]
    N = b.shape[2]
    zero = out.dtype.type(0)
    for z in range(cuda.blockIdx.z, nb, cuda.gridDim.z):
        for r0 in range(cuda.blockIdx.y * TILE, M, cuda.gridDim.y * TILE):
            for c0 in range(cuda.blockIdx.x * TILE, N, cuda.gridDim.x * TILE):
                r = r0 + ty
                c = c0 + tx
                acc = zero
                for k0 in range(0, K, TILE):
                    ta[ty, tx] = a[z, r, k0 + tx] if (r < M and k0 + tx < K) else zero
                    tb[ty, tx] = b[z, k0 + ty, c] if (c < N and k0 + ty < K) else zero
                    cuda.syncthreads()
                    for k in range(TILE):
                        acc += ta[ty, k] * tb[k, tx]
                    cuda.syncthreads()
                if r < M and c < N:
                    out[z, r, c] = acc
"""


# ------------------------------------------------------------------------------ the module

def _fused_op(fk, ops):
    """The ops.yaml entry a fused backward kernel (_bw_<op>_<arg>) comes from."""
    for op in ops:
        for a in op.signature.tensor_args:
            if fk.name == f"_bw_{op.name}_{a.name}":
                return op
    return None


def emit_module(ops, fused):
    """reftorch/kernels/cuda.py: a numba.cuda kernel for every kernel of reftorch/kernels/cpu.py."""
    parts = [HEADER, '"""numba.cuda kernels for every elementwise, reduction and scan op of ops.yaml, the fused\n'
                     'backward kernels and a tiled matmul. Nothing compiles at import: each kernel compiles on\n'
                     'its first launch (see reftorch/_cuda_launch.py), so this module imports without a GPU."""\n',
             prelude(), f"BLOCK = {BLOCK}  # the most threads per block of the reduction and scan kernels\n"
                        f"TILE = {TILE}  # matmul tile edge (TILE x TILE threads per block)\n"]
    table = []

    def row(name, kind, entry, tensors, scalars, suffixes, split=False):
        line = f"    {name!r}: dict(kind={kind!r}, op={entry!r}, tensors={tuple(tensors)!r}, scalars={tuple(scalars)!r}, "
        more = f"kernels={tuple(suffixes)!r}" + (", split=True" if split else "") + "),"
        table.append(line + more if len(line + more) <= 140 else line.rstrip() + "\n        " + more)

    parts.append("# " + "-" * 70 + " elementwise ops\n")
    for op in ops:
        if op.kind in ("unary", "binary", "ternary"):
            tensors = [a.name for a in op.signature.tensor_args]
            scalars = kernel_scalars(op)
            parts.append(scalar_fn(op.name, tensors + scalars, op.scalar, f"{op.name} -- {op.scalar}"))
            parts.append(elementwise_kernels(op.name, len(tensors), scalars, op.name))
            row(op.name, "elementwise", op.name, tensors, scalars, ("contig", "strided"))
    parts.append("# " + "-" * 70 + " fused backward kernels (from derivative formulas)\n")
    for fk in fused:
        op = _fused_op(fk, ops)
        parts.append(scalar_fn(fk.name, list(fk.tensors) + list(fk.scalars), fk.expr, fk.comment))
        parts.append(elementwise_kernels(fk.name, len(fk.tensors), fk.scalars, fk.comment))
        row(fk.name, "elementwise", op.name if op else fk.name, fk.tensors, fk.scalars, ("contig", "strided"))
    parts.append("# " + "-" * 70 + " reductions, argreductions, scans\n")
    for op in ops:
        if op.kind == "reduction":
            parts.append(reduction_kernels(op))
            merge = tree_merge(op)
            fns = (("reduce",) if merge else ()) + ("reduce_serial",)
            # split: partial results merge by combine itself, so one long row may be cut over many blocks
            # and the partials reduced again by the same kernel (reftorch/_cuda_launch.reduce)
            row(op.name, "reduction", op.name, ("self",), reduction_scalars(op), fns,
                split=merge is not None and _same(merge, op.reduce.combine))
        elif op.kind == "argreduction":
            parts.append(argreduction_kernels(op))
            row(op.name, "argreduction", op.name, ("self",), (), ("reduce", "reduce_serial"))
        elif op.kind == "scan":
            parts.append(scan_kernels(op))
            fns = (("scan",) if tree_merge(op) else ()) + ("scan_serial",)
            row(op.name, "scan", op.name, ("self",), (), fns)
    parts.append("# " + "-" * 70 + " matmul\n")
    parts.append(MATMUL)
    parts.append(FILL)
    row("matmul", "matmul", "matmul", ("self", "other"), (), ("tiled",))
    parts.append("# Every kernel family of this module, for the launcher and the tests: name -> its kind, the ops.yaml\n"
                 "# entry, the names of its tensor and scalar arguments, its kernels (functions <name>_<suffix>), and\n"
                 "# for reductions whether a long row may be split over blocks (partials merge by combine itself).\n"
                 "KERNELS = {\n" + "\n".join(table) + "\n}\n")
    return "\n\n".join(p.rstrip() + "\n" for p in parts)
