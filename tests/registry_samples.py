"""Sample inputs for any ops.yaml entry, for the tests generated from the registry.

A sample is chosen from the entry's kind, its argument types and its `test:` metadata -- never from
its name -- so a new entry is covered with no new test code:

  * Tensor arguments get values of the drawn dtype inside `test.domain` (or `grad_domain` for
    gradient checks), jointly broadcastable shapes (0-d and size-0 included), and a memory layout
    (contiguous, transposed, sliced with steps, offset, or expanded with stride 0);
    Mask arguments get bools, Index arguments int64 indices, Tensor[] arguments a list of tensors.
  * `dim`/`dim?`/`dim[]?` arguments get random valid dims, `keepdim` a random bool, other bool
    arguments a random bool when the reference takes them; `test.args` fixes any argument (a value,
    or a lambda over the tensor arguments' NumPy arrays, e.g. `{size: "lambda self: (2,) + self.shape"}`);
    every other argument keeps its default.
  * `test.shapes` names a shape rule for ops whose inputs constrain each other (HINTS below).
"""
from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass, field

import numpy as np

import reftorch
from codegen.model import SHAPE_HINTS, load
from reftorch import _dtype as D
from reftorch._reference import compile_ref, describe, float_inputs, run_ref, to_numpy_arg
from reftorch._tensor import Storage, Tensor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = load(os.path.join(ROOT, "reftorch", "ops.yaml"))
BY_NAME = {op.name: op for op in OPS}

CONCRETE = {"bool": ("bool",), "int": ("uint8", "int32", "int64"), "float": ("float32", "float64"),
            "complex": ("complex64", "complex128")}
DATA_TYPES = ("Tensor", "Tensor?")            # promoted tensor arguments: they carry the drawn dtype
TENSOR_TYPES = ("Tensor", "Tensor?", "Index", "Index?", "Mask")
DIM_TYPES = ("dim", "dim?", "dim[]?")
DEFAULT_DOMAIN = (-10.0, 10.0)
DEFAULT_GRAD_DOMAIN = (-3.0, 3.0)
LAYOUTS = ("contiguous", "contiguous", "transposed", "strided", "offset", "expanded")


class SampleError(ValueError):
    """The entry's metadata does not allow a sample (say which test: field to add)."""


def concrete_dtypes(op):
    return [d for fam in op.test.dtypes for d in CONCRETE[fam]]


def tensor_args(op):
    return [a for a in op.signature.args if a.type in TENSOR_TYPES or a.type == "Tensor[]"]


def has_float_inputs(op):
    return "float" in op.test.dtypes and any(a.type in DATA_TYPES + ("Tensor[]",) for a in op.signature.args)


# ------------------------------------------------------------------------------------------ draws

class HypothesisDraw:
    """Draws through hypothesis (shrinks towards small shapes and the first choices)."""

    def __init__(self, data):
        from hypothesis import strategies as st
        self._data, self._st = data, st

    def int(self, lo, hi):
        return self._data.draw(self._st.integers(lo, hi))

    def choice(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def bool(self):
        return self.int(0, 1) == 1


class RandomDraw:
    """The same draws from a seeded random.Random (for the deterministic gradient checks)."""

    def __init__(self, seed):
        self._r = random.Random(seed)

    def int(self, lo, hi):
        return self._r.randint(lo, hi)

    def choice(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def bool(self):
        return self.int(0, 1) == 1


# ------------------------------------------------------------------------------------------ samples

@dataclass
class Sample:
    op: object
    dtype: str
    kwargs: dict                     # what the op is called with
    arrays: dict                     # tensor argument -> NumPy copy (a list for Tensor[]; None when absent)
    named: dict                      # non-tensor arguments passed (name -> value)
    layouts: dict = field(default_factory=dict)

    def call(self, fn=None):
        fn = fn or getattr(reftorch.kernels.api, self.op.name)
        star = next((a for a in self.op.signature.args if getattr(a, "varargs", False)), None)
        if star is None:
            return fn(**self.kwargs)
        names = [a.name for a in self.op.signature.args]
        before = names[:names.index(star.name)]
        args = [self.kwargs[n] for n in before] + list(self.kwargs[star.name])
        rest = {k: v for k, v in self.kwargs.items() if k not in before and k != star.name}
        return fn(*args, **rest)

    def ref(self):
        """The entry's reference on this sample (the calling rules of reftorch/_reference.py)."""
        ref = compile_ref(self.op.test.ref)
        positional = [self.arrays[a.name] for a in tensor_args(self.op)]
        named = {k: to_numpy_arg(v) for k, v in self.named.items()}
        defaults = {a.name: _eval_default(a.default) for a in self.op.signature.args if a.default is not None}
        positional = [_copy(p) for p in positional]
        if self.op.result == "float":
            positional = float_inputs(positional)
        return run_ref(ref, positional, named, defaults)

    def tensors(self):
        """Every tensor the op receives, flattened in signature order."""
        out = []
        for a in tensor_args(self.op):
            v = self.kwargs.get(a.name)
            out += list(v) if isinstance(v, (list, tuple)) else [v] if isinstance(v, Tensor) else []
        return out

    def input_dtypes(self):
        return [t._array().dtype for t in self.tensors()]

    def describe(self):
        parts = [f"dtype {self.dtype}"]
        for a in tensor_args(self.op):
            v = self.kwargs.get(a.name)
            lay = self.layouts.get(a.name)
            parts.append(describe(a.name, v) + (f" [{lay}]" if lay else ""))
        parts += [f"{k}={v!r}" for k, v in self.named.items()]
        vals = "; ".join(f"{k}={np.array2string(np.asarray(v), threshold=40)}" if not isinstance(v, list) else
                         f"{k}=[{', '.join(np.array2string(np.asarray(x), threshold=40) for x in v)}]"
                         for k, v in self.arrays.items() if v is not None)
        return "\n    ".join(["; ".join(parts), "values: " + vals.replace("\n", " ")])


def _copy(x):
    if isinstance(x, list):
        return [np.array(v) for v in x]
    return np.array(x) if isinstance(x, np.ndarray) else x


def _eval_default(src):
    try:
        return to_numpy_arg(eval(src, {"__builtins__": {}}))  # noqa: S307 -- signature defaults
    except Exception:
        return object()


def _eval_arg(src):
    return eval(src, {"np": np, "math": math, "torch": reftorch, "tensor": reftorch.tensor,  # noqa: S307
                      "__builtins__": __builtins__})


class Ctx:
    """What a shape rule sees and fills: the op, the draws, and per-argument shapes, arrays and values."""

    def __init__(self, op, draw, dtype, grad, max_side, max_dims=3):
        self.op, self.draw, self.dtype, self.grad, self.max_side = op, draw, dtype, grad, max_side
        self.max_dims = max_dims
        self.shapes = {}      # tensor argument -> shape (a list of shapes for Tensor[])
        self.arrays = {}      # tensor argument -> ready-made NumPy array (index tensors)
        self.values = {}      # non-tensor argument -> value
        self.fixed = {k: _eval_arg(v) for k, v in op.test.args}
        self.min_dims = _min_dims(self.fixed)

    # shapes ---------------------------------------------------------------------------------
    def shape(self, min_dims=0, max_dims=3, min_side=None, allow_empty=True):
        min_dims = max(min_dims, self.min_dims)
        max_dims = max(min(max_dims, self.max_dims), min_dims)
        lo = 1 if min_side is None else min_side
        nd = self.draw.int(min_dims, max_dims)
        shape = [self.draw.int(lo, self.max_side) for _ in range(nd)]
        if allow_empty and not self.grad and nd and min_side is None and self.draw.int(0, 7) == 0:
            shape[self.draw.int(0, nd - 1)] = 0
        return tuple(shape)

    def broadcast_shapes(self, n, same=False, force=False, **kw):
        base = self.shape(**kw)
        if n == 1 or same or (not force and self.draw.int(0, 2) == 0):
            return [base] * n
        for _ in range(8):
            out = []
            for _ in range(n):
                drop = self.draw.int(0, len(base)) if self.draw.bool() else 0
                s = list(base[drop:])
                for d in range(len(s)):
                    if self.draw.int(0, 2) == 0:
                        s[d] = 1
                out.append(tuple(s))
            if not force or len(set(out)) > 1:
                return out
            kw["min_dims"] = max(1, kw.get("min_dims", 0))      # broadcasting needs a dim
            base = self.shape(**kw)
        return out

    def dim(self, nd, optional=False, many=False):
        if optional and self.draw.int(0, 3) == 0:
            return None
        if nd == 0:
            return None if optional else self.draw.choice((0, -1))
        if many and self.draw.int(0, 2) == 0:
            k = self.draw.int(1, nd)
            dims = list(range(nd))
            picked = []
            for _ in range(k):
                picked.append(dims.pop(self.draw.int(0, len(dims) - 1)))
            return tuple(d - nd if self.draw.bool() else d for d in picked)
        return self.draw.int(-nd, nd - 1)

    def index_array(self, shape, high):
        """int64 indices in [0, high) (high 0 allows only empty index arrays)."""
        seed = self.draw.int(0, 2**31 - 1)
        if high <= 0:
            return np.zeros(shape, np.int64)
        return np.random.default_rng(seed).integers(0, high, shape).astype(np.int64)


def _min_dims(fixed):
    """Dims named by fixed arguments (`dims: (0,)`) need that many dimensions."""
    need = 0
    for name, v in fixed.items():
        if "dim" not in name or callable(v):
            continue
        for d in (v if isinstance(v, (tuple, list)) else (v,)):
            if isinstance(d, int) and not isinstance(d, bool):
                need = max(need, d + 1 if d >= 0 else -d)
    return need


# ------------------------------------------------------------------------------------------ shape rules

HINTS = {}


def hint(name):
    def register(fn):
        HINTS[name] = fn
        return fn
    return register


def _tensor_names(op, types=TENSOR_TYPES):
    return [a.name for a in op.signature.args if a.type in types]


@hint(None)
def generic(ctx, same=False, force_broadcast=False, min_dims=0, max_dims=3):
    """Jointly broadcastable shapes for the tensor arguments; equal shapes for a Tensor[] list."""
    names = _tensor_names(ctx.op)
    shapes = ctx.broadcast_shapes(max(len(names), 1), same=same, force=force_broadcast,
                                  min_dims=min_dims, max_dims=max_dims)
    for name, s in zip(names, shapes):
        ctx.shapes[name] = s
    for a in ctx.op.signature.args:
        if a.type == "Tensor[]":
            s = ctx.shapes.get(names[0]) if names else ctx.shape(min_dims=max(min_dims, 1), max_dims=max_dims)
            ctx.shapes[a.name] = [s] * ctx.draw.int(1, 3)


@hint("same")
def same_shapes(ctx, **kw):
    """Every tensor argument has the same shape (no broadcasting)."""
    kw.pop("force_broadcast", None)
    generic(ctx, same=True, **kw)


@hint("nonscalar")
def nonscalar(ctx, **kw):
    """At least one dimension."""
    kw.pop("min_dims", None)
    generic(ctx, min_dims=1, **kw)


@hint("matrix")
def matrix(ctx, **kw):
    """At least two dimensions (tril, triu, diagonal-like ops); tensor arguments share one shape."""
    kw.pop("min_dims", None)
    kw.pop("force_broadcast", None)
    generic(ctx, same=True, min_dims=2, **kw)


@hint("contiguous")
def contiguous(ctx, **kw):
    """Generic shapes, contiguous inputs only (views whose arguments need compatible strides)."""
    generic(ctx, **kw)
    ctx.contiguous_only = True


@hint("matmul")
def matmul_shapes(ctx, **kw):
    """(self, other) for NumPy's matmul: 1-D or 2-D operands, batched with broadcast batch dims."""
    a, b = _tensor_names(ctx.op, DATA_TYPES)[:2]
    n, k, m = (ctx.draw.int(1 if ctx.grad else 0, 3) for _ in range(3))
    kind = ctx.draw.int(0, 5)
    if kind == 0:
        sa, sb = (k,), (k,)
    elif kind == 1:
        sa, sb = (k,), (k, m)
    elif kind == 2:
        sa, sb = (n, k), (k,)
    elif kind == 3:
        sa, sb = (n, k), (k, m)
    else:
        batch = ctx.shape(min_dims=1, max_dims=2, allow_empty=False)
        bb = tuple(1 if ctx.draw.int(0, 2) == 0 else s for s in batch)[ctx.draw.int(0, len(batch)):]
        sa, sb = batch + (n, k), bb + (k, m)
        if ctx.draw.bool():
            sa, sb = sb[:-2] + (n, k), sa[:-2] + (k, m)
    ctx.shapes[a], ctx.shapes[b] = sa, sb


@hint("mm")
def mm_shapes(ctx, **kw):
    """2-D (n, k) @ (k, m); with a third tensor first (addmm's self), it broadcasts to (n, m)."""
    names = _tensor_names(ctx.op, DATA_TYPES)
    n, k, m = (ctx.draw.int(1, 3) for _ in range(3))
    mats = names[-2:]
    ctx.shapes[mats[0]], ctx.shapes[mats[1]] = (n, k), (k, m)
    for extra in names[:-2]:
        ctx.shapes[extra] = ctx.draw.choice([(n, m), (m,), (1, m), (n, 1), ()])


@hint("bmm")
def bmm_shapes(ctx, **kw):
    """3-D (b, n, k) @ (b, k, m); a leading third tensor (baddbmm's self) broadcasts to (b, n, m)."""
    names = _tensor_names(ctx.op, DATA_TYPES)
    b, n, k, m = (ctx.draw.int(1, 3) for _ in range(4))
    mats = names[-2:]
    ctx.shapes[mats[0]], ctx.shapes[mats[1]] = (b, n, k), (b, k, m)
    for extra in names[:-2]:
        ctx.shapes[extra] = ctx.draw.choice([(b, n, m), (n, m), (1, 1, m), ()])


@hint("mv")
def mv_shapes(ctx, **kw):
    """(n, k) @ (k,); a leading third tensor (addmv's self) broadcasts to (n,)."""
    names = _tensor_names(ctx.op, DATA_TYPES)
    n, k = ctx.draw.int(1, 3), ctx.draw.int(1, 3)
    ctx.shapes[names[-2]], ctx.shapes[names[-1]] = (n, k), (k,)
    for extra in names[:-2]:
        ctx.shapes[extra] = ctx.draw.choice([(n,), (1,), ()])


@hint("vector")
def vectors(ctx, **kw):
    """Every tensor argument 1-D: equal lengths (dot, inner), or independent ones with `outer`-like ops
    when the hint is `vectors`."""
    k = ctx.draw.int(0 if not ctx.grad else 1, 4)
    for name in _tensor_names(ctx.op):
        ctx.shapes[name] = (k,)


@hint("vectors")
def independent_vectors(ctx, **kw):
    """Every tensor argument 1-D, each its own length (outer, ger)."""
    for name in _tensor_names(ctx.op):
        ctx.shapes[name] = (ctx.draw.int(0 if not ctx.grad else 1, 4),)


@hint("cat")
def cat_shapes(ctx, **kw):
    """A Tensor[] of 1-3 tensors equal except along `dim` (drawn here)."""
    base = list(ctx.shape(min_dims=1))
    d = ctx.draw.int(0, len(base) - 1)
    ctx.values["dim"] = d - len(base) if ctx.draw.bool() else d
    listed = [a.name for a in ctx.op.signature.args if a.type == "Tensor[]"][0]
    shapes = []
    for _ in range(ctx.draw.int(1, 3)):
        s = list(base)
        s[d] = ctx.draw.int(0 if not ctx.grad else 1, 3)
        shapes.append(tuple(s))
    ctx.shapes[listed] = shapes


@hint("stack")
def stack_shapes(ctx, **kw):
    """A Tensor[] of 1-3 tensors of one shape; `dim` in [-(ndim + 1), ndim]."""
    base = ctx.shape()
    listed = [a.name for a in ctx.op.signature.args if a.type == "Tensor[]"][0]
    ctx.shapes[listed] = [base] * ctx.draw.int(1, 3)
    nd = len(base) + 1
    ctx.values["dim"] = ctx.draw.int(-nd, nd - 1)


def _self_and_dim(ctx, min_side=1):
    """self with at least one dim, and a dim of it of non-zero size (set as the `dim` argument)."""
    data = _tensor_names(ctx.op, DATA_TYPES)[0]
    s = ctx.shape(min_dims=1, min_side=min_side, allow_empty=False)
    ctx.shapes[data] = s
    d = ctx.draw.int(0, len(s) - 1)
    dim_arg = next((a.name for a in ctx.op.signature.args if a.type in DIM_TYPES), "dim")
    ctx.values[dim_arg] = d - len(s) if ctx.draw.bool() else d
    return data, s, d


@hint("gather")
def gather_shapes(ctx, **kw):
    """gather(self, dim, index): index no larger than self except along dim, values < self.size(dim)."""
    data, s, d = _self_and_dim(ctx)
    idx_name = _tensor_names(ctx.op, ("Index",))[0]
    shape = tuple(ctx.draw.int(0 if not ctx.grad else 1, n) if i != d else ctx.draw.int(1, 4) for i, n in enumerate(s))
    ctx.arrays[idx_name] = ctx.index_array(shape, s[d])
    for extra in _tensor_names(ctx.op, DATA_TYPES)[1:]:        # scatter's src: at least index's shape
        ctx.shapes[extra] = shape


@hint("scatter")
def scatter_shapes(ctx, **kw):
    """scatter(self, dim, index, src): like gather, with indices distinct along dim (no write races)."""
    data, s, d = _self_and_dim(ctx)
    idx_name = _tensor_names(ctx.op, ("Index",))[0]
    shape = [ctx.draw.int(1, n) for n in s]
    shape[d] = ctx.draw.int(1, s[d])
    rng = np.random.default_rng(ctx.draw.int(0, 2**31 - 1))
    perm = np.argsort(rng.random(tuple(shape[:d]) + (s[d],) + tuple(shape[d + 1:])), axis=d)
    ctx.arrays[idx_name] = np.take(perm, np.arange(shape[d]), axis=d).astype(np.int64)
    for extra in _tensor_names(ctx.op, DATA_TYPES)[1:]:
        ctx.shapes[extra] = tuple(shape)


@hint("scatter_add")
def scatter_add_shapes(ctx, **kw):
    """scatter_add(self, dim, index, src): like gather; repeated indices add up."""
    gather_shapes(ctx)


@hint("index_select")
def index_select_shapes(ctx, **kw):
    """index_select(self, dim, index): 1-D index of values < self.size(dim)."""
    data, s, d = _self_and_dim(ctx)
    idx_name = _tensor_names(ctx.op, ("Index",))[0]
    ctx.arrays[idx_name] = ctx.index_array((ctx.draw.int(0 if not ctx.grad else 1, 4),), s[d])


@hint("index_copy")
def index_copy_shapes(ctx, **kw):
    """index_copy/index_fill(self, dim, index[, source]): distinct indices (repeated ones race in PyTorch)."""
    data, s, d = _self_and_dim(ctx)
    idx_name = _tensor_names(ctx.op, ("Index",))[0]
    k = ctx.draw.int(0 if not ctx.grad else 1, s[d])
    seed = ctx.draw.int(0, 2**31 - 1)
    ctx.arrays[idx_name] = np.random.default_rng(seed).permutation(s[d])[:k].astype(np.int64)
    src = tuple(k if i == d else n for i, n in enumerate(s))
    for extra in _tensor_names(ctx.op, DATA_TYPES)[1:]:
        ctx.shapes[extra] = src


@hint("index_add")
def index_add_shapes(ctx, **kw):
    """index_add/index_copy(self, dim, index, source): source is self with size(dim) = len(index)."""
    data, s, d = _self_and_dim(ctx)
    idx_name = _tensor_names(ctx.op, ("Index",))[0]
    k = ctx.draw.int(1, 4)
    ctx.arrays[idx_name] = ctx.index_array((k,), s[d])
    src = tuple(k if i == d else n for i, n in enumerate(s))
    for extra in _tensor_names(ctx.op, DATA_TYPES)[1:]:
        ctx.shapes[extra] = src


@hint("take")
def take_shapes(ctx, **kw):
    """take(self, index): index of any shape with values < self.numel()."""
    data = _tensor_names(ctx.op, DATA_TYPES)[0]
    s = ctx.shape(allow_empty=False)
    ctx.shapes[data] = s
    idx_name = _tensor_names(ctx.op, ("Index",))[0]
    ctx.arrays[idx_name] = ctx.index_array(ctx.shape(max_dims=2), int(np.prod(s)))


@hint("index_put")
def index_put_shapes(ctx, **kw):
    """self with at least one non-empty dim, indexed by the entry's fixed `indices` along dim 0; the values
    broadcast to the indexed shape."""
    data = _tensor_names(ctx.op, DATA_TYPES)[0]
    s = ctx.shape(min_dims=1, allow_empty=False)
    ctx.shapes[data] = s
    idx = ctx.fixed.get("indices")
    n_idx = len(np.asarray(idx[0])) if idx else 1
    indexed = (n_idx,) + s[1:]
    for extra in _tensor_names(ctx.op, DATA_TYPES)[1:]:
        ctx.shapes[extra] = indexed[ctx.draw.int(0, len(indexed)):]


@hint("one_hot")
def one_hot_shapes(ctx, **kw):
    """An Index tensor of any shape with values < the `num_classes` argument (fixed in test.args or 4)."""
    idx_name = _tensor_names(ctx.op, ("Index", "Tensor"))[0]
    n = ctx.fixed.get("num_classes", 4)
    if n is None or n < 0:
        n = 4
    ctx.arrays[idx_name] = ctx.index_array(ctx.shape(max_dims=2), n)


@hint("bincount")
def bincount_shapes(ctx, **kw):
    """A 1-D non-negative Index tensor; optional weights of the same length."""
    names = _tensor_names(ctx.op)
    k = ctx.draw.int(0, 5)
    ctx.arrays[names[0]] = ctx.index_array((k,), 6)
    for extra in names[1:]:
        ctx.shapes[extra] = (k,)


@hint("square")
def square_matrices(ctx, **kw):
    """Square matrices, optionally batched (linear algebra)."""
    n = ctx.draw.int(1, 3)
    batch = ctx.shape(max_dims=1, allow_empty=False)
    for name in _tensor_names(ctx.op):
        ctx.shapes[name] = batch + (n, n)


def _matrices(ctx, kind, rhs_first=False):
    """A batch (0-1 dims) of n x n matrices for the first tensor argument (the last with rhs_first, as in
    cholesky_solve(B, L)), built from the draws: `spd` M M^T + n I, `invertible` R + n I (diagonally dominant:
    well-conditioned, and so are its triangles); the other tensor arguments get n x k right-hand sides."""
    names = _tensor_names(ctx.op, DATA_TYPES)
    if rhs_first:
        names = names[-1:] + names[:-1]
    n = ctx.draw.int(1, 3)
    batch = ctx.shape(max_dims=1, allow_empty=False)
    rng = np.random.default_rng(ctx.draw.int(0, 2**31 - 1))
    r = rng.uniform(-1, 1, batch + (n, n))
    a = r @ np.swapaxes(r, -1, -2) + n * np.eye(n) if kind == "spd" else r + n * np.eye(n)
    ctx.arrays[names[0]] = a.astype(ctx.dtype)
    k = ctx.draw.int(1, 2)
    for extra in names[1:]:
        ctx.shapes[extra] = batch + (n, k)
    return names, batch, n, rng


@hint("spd")
def spd_matrices(ctx, **kw):
    """Symmetric positive-definite matrices (cholesky, eigh), and right-hand sides."""
    _matrices(ctx, "spd")


@hint("invertible")
def invertible_matrices(ctx, **kw):
    """Well-conditioned square matrices (inv, det, solve, lu), and right-hand sides."""
    _matrices(ctx, "invertible")


@hint("invertible_rhs_first")
def invertible_after_rhs(ctx, **kw):
    """Right-hand sides first, then the well-conditioned matrix (cholesky_solve(B, L), triangular_solve(B, A))."""
    _matrices(ctx, "invertible", rhs_first=True)


@hint("householder")
def householder_inputs(ctx, **kw):
    """householder_product(A, tau): an m x n matrix (m >= n) and k <= n scalars tau."""
    names = _tensor_names(ctx.op, DATA_TYPES)
    n = ctx.draw.int(1, 3)
    m = ctx.draw.int(n, 4)
    ctx.shapes[names[0]], ctx.shapes[names[1]] = (m, n), (ctx.draw.int(0 if not ctx.grad else 1, n),)


@hint("lu_solve")
def lu_solve_inputs(ctx, **kw):
    """lu_solve(LU, pivots, B): a well-conditioned LU factor, valid 1-based LAPACK pivots (int32), and
    right-hand sides."""
    names, batch, n, rng = _matrices(ctx, "invertible")
    pivots = next(a.name for a in ctx.op.signature.args if "pivots" in a.name)
    piv = np.array([rng.integers(j, n) + 1 for j in range(n)], np.int32)
    ctx.arrays[pivots] = np.broadcast_to(piv, batch + (n,)).copy()


@hint("vectors3")
def vectors3(ctx, **kw):
    """Two tensors with a dim of size 3 (cross products), broadcasting elsewhere; `dim` names it."""
    names = _tensor_names(ctx.op, DATA_TYPES)
    base = list(ctx.shape(max_dims=2, allow_empty=False))
    d = ctx.draw.int(0, len(base))
    shape = tuple(base[:d] + [3] + base[d:])
    ctx.shapes[names[0]] = shape
    ctx.shapes[names[1]] = tuple(1 if (i != d and ctx.draw.int(0, 3) == 0) else n for i, n in enumerate(shape))
    ctx.values["dim"] = d - len(shape) if ctx.draw.bool() else d


@hint("chain")
def matrix_chain(ctx, **kw):
    """A Tensor[] of 2-4 matrices whose sizes chain; the first and the last may be vectors (multi_dot)."""
    listed = [a.name for a in ctx.op.signature.args if a.type == "Tensor[]"][0]
    sizes = [ctx.draw.int(1, 3) for _ in range(ctx.draw.int(3, 5))]
    shapes = [(sizes[i], sizes[i + 1]) for i in range(len(sizes) - 1)]
    if ctx.draw.bool():
        shapes[0] = shapes[0][1:]
    if ctx.draw.bool():
        shapes[-1] = shapes[-1][:1]
    ctx.shapes[listed] = shapes


@hint("lstsq")
def lstsq_inputs(ctx, **kw):
    """A (batch of) m x n matrices and m x k right-hand sides."""
    names = _tensor_names(ctx.op, DATA_TYPES)
    batch = ctx.shape(max_dims=1, allow_empty=False)
    m, n, k = (ctx.draw.int(1, 3) for _ in range(3))
    ctx.shapes[names[0]], ctx.shapes[names[1]] = batch + (m, n), batch + (m, k)


# every hint the registry may use: the tests fail on a hint they do not know, and codegen/model.py
# lists the same names so that the parser rejects a misspelt one
assert set(HINTS) - {None} == set(SHAPE_HINTS), set(HINTS) ^ set(SHAPE_HINTS)


# ------------------------------------------------------------------------------------------ values

def _domains(op, grad):
    dom = {k: (lo, hi) for k, lo, hi in op.test.domain}
    if grad:
        dom.update({k: (lo, hi) for k, lo, hi in op.test.grad_domain})
    return dom


def values(draw, shape, dtype, domain, grad, specials_ok):
    """A C-contiguous array of `shape` and `dtype` inside `domain` ((lo, hi) or None)."""
    rng = np.random.default_rng(draw.int(0, 2**31 - 1))
    npdt = np.dtype(dtype)
    if npdt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if npdt.kind in "iu":
        lo, hi = domain or DEFAULT_DOMAIN
        info = np.iinfo(npdt)
        lo, hi = max(math.ceil(lo), int(info.min)), min(math.floor(hi), int(info.max))
        if lo > hi:
            raise SampleError(f"no {dtype} value lies in the domain {domain}")
        return rng.integers(lo, hi + 1, shape).astype(npdt)
    lo, hi = domain or (DEFAULT_GRAD_DOMAIN if grad else DEFAULT_DOMAIN)
    if npdt.kind == "c":                # real and imaginary parts each inside the domain
        return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(npdt)
    x = rng.uniform(lo, hi, shape)
    if not grad:
        mode = draw.int(0, 5)
        if mode == 0:                     # ties and integers: halves inside the domain
            r = np.round(x * 2) / 2
            x = np.where((r >= lo) & (r <= hi), r, x)
        elif mode == 1 and specials_ok and x.size:
            specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0])
            pick = rng.random(shape) < 0.3
            x = np.where(pick, specials[rng.integers(0, len(specials), shape)], x)
    return x.astype(npdt)


def to_tensor(arr, layout, expand_dims=()):
    """A reftorch tensor with arr's values in the given memory layout (arr is not shared)."""
    if layout == "transposed" and arr.ndim >= 2:
        perm = list(range(arr.ndim))[::-1]
        phys = np.ascontiguousarray(arr.transpose(perm))
        return Tensor._from_array(phys.transpose(np.argsort(perm)))
    if layout == "strided" and arr.ndim >= 1 and arr.size:
        big = np.empty(tuple(2 * s + 1 for s in arr.shape), arr.dtype)
        big[...] = _poison(arr.dtype)
        window = tuple(slice(1, 1 + 2 * s, 2) for s in arr.shape)
        big[window] = arr
        return Tensor._from_array(big[window])
    if layout == "offset" and arr.size:
        flat = np.empty(arr.size + 3, arr.dtype)
        flat[:3] = _poison(arr.dtype)
        flat[3:] = arr.reshape(-1)
        return Tensor._make(Storage(flat), 3, arr.shape, _contig_strides(arr.shape), D.from_numpy(arr.dtype))
    if layout == "expanded" and expand_dims:
        small = np.ascontiguousarray(arr[tuple(slice(0, 1) if d in expand_dims else slice(None)
                                               for d in range(arr.ndim))])
        strides = [0 if d in expand_dims else st for d, st in enumerate(_contig_strides(small.shape))]
        return Tensor._make(Storage(small.reshape(-1)), 0, arr.shape, tuple(strides), D.from_numpy(arr.dtype))
    return Tensor._from_array(np.array(arr))


def _poison(dtype):
    """Padding around strided views: a kernel that reads outside its view sees it."""
    return {"f": np.nan, "b": True}.get(np.dtype(dtype).kind, 77)


def _contig_strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


def _pick_layout(draw, shape, grad, noncontig):
    """(layout, expanded dims) for a tensor of this shape."""
    n = int(np.prod(shape)) if shape else 1
    options = ["contiguous"]
    if len(shape) >= 2 and n > 1:
        options.append("transposed")
    if len(shape) >= 1 and n > 1:
        options.append("strided")
    if n:
        options.append("offset")
    wide = [d for d, s in enumerate(shape) if s > 1]
    if wide and not grad:
        options.append("expanded")
    if noncontig:
        options = [o for o in options if o in ("transposed", "strided")] or options
        return draw.choice(options), ()
    layout = draw.choice(options + ["contiguous"])
    dims = ()
    if layout == "expanded":
        dims = tuple(d for d in wide if draw.bool()) or (wide[0],)
    return layout, dims


# ------------------------------------------------------------------------------------------ building

def make_sample(op, draw, dtype, *, grad=False, broadcast=False, noncontig=False, contiguous=False, max_side=4,
                max_numel=64, max_dims=3):
    """A sample of op's inputs; grad=True: values from grad_domain, small, no stride-0 inputs, requiring grad;
    contiguous=True: contiguous inputs of one shape (where the shape rule allows)."""
    last = None
    for _ in range(20):
        s = _attempt(op, draw, dtype, grad, broadcast, noncontig, contiguous, max_side, max_dims)
        numel = max([t.numel() for t in s.tensors()] or [0])
        ok = numel <= max_numel
        if noncontig:
            ok = ok and any(not t.is_contiguous() for t in s.tensors() if t.dtype.is_floating_point)
        if broadcast:
            shapes = [tuple(t.shape) for t in s.tensors() if t.dtype.is_floating_point]
            ok = ok and len(set(shapes)) > 1
        if ok:
            return s
        last = s
    return last


def _attempt(op, draw, dtype, grad, broadcast, noncontig, contiguous, max_side, max_dims):
    ctx = Ctx(op, draw, dtype, grad, max_side, max_dims)
    rule = op.test.shapes
    if rule not in HINTS:
        raise SampleError(f"op '{op.name}': unknown test.shapes hint {rule!r} (known: {sorted(h for h in HINTS if h)})")
    if rule is None:
        generic(ctx, force_broadcast=broadcast, same=contiguous)
    else:
        HINTS[rule](ctx, force_broadcast=broadcast)
    domains = _domains(op, grad)
    kwargs, arrays, layouts = {}, {}, {}
    contiguous_only = contiguous or getattr(ctx, "contiguous_only", False)
    first_float = True

    def build(name, typ, shape):
        nonlocal first_float
        if name in ctx.arrays:
            arr = ctx.arrays[name]
        elif typ == "Mask":
            arr = values(draw, shape, "bool", None, grad, False)
        elif typ in ("Index", "Index?"):
            arr = ctx.index_array(shape, 3)
        else:
            arr = values(draw, shape, dtype, domains.get(name), grad, specials_ok=name not in domains)
        want_nc = noncontig and first_float and arr.dtype.kind == "f" and arr.size > 1
        if contiguous_only:
            layout, dims = "contiguous", ()
        else:
            layout, dims = _pick_layout(draw, arr.shape, grad, want_nc)
        if want_nc:
            first_float = False
        if layout == "expanded":
            arr = np.ascontiguousarray(np.broadcast_to(
                arr[tuple(slice(0, 1) if d in dims else slice(None) for d in range(arr.ndim))], arr.shape))
        t = to_tensor(arr, layout, dims)
        return t, np.array(arr), layout

    for a in op.signature.args:
        if a.name in ctx.fixed and (a.type in TENSOR_TYPES or a.type == "Tensor[]"):
            v = ctx.fixed[a.name]
            kwargs[a.name], arrays[a.name] = v, (None if v is None else np.asarray(v))
            continue
        if a.type == "Tensor[]":
            ts, arrs = [], []
            for s in ctx.shapes[a.name]:
                t, arr, _ = build(a.name, a.type, s)
                ts.append(t)
                arrs.append(arr)
            kwargs[a.name], arrays[a.name] = ts, arrs
        elif a.type in TENSOR_TYPES:
            shape = ctx.shapes.get(a.name, ctx.arrays[a.name].shape if a.name in ctx.arrays else ())
            t, arr, layout = build(a.name, a.type, shape)
            kwargs[a.name], arrays[a.name], layouts[a.name] = t, arr, layout

    primary = next((arrays[a.name] for a in op.signature.args if arrays.get(a.name) is not None), None)
    if isinstance(primary, list):
        primary = primary[0] if primary else None
    nd = primary.ndim if isinstance(primary, np.ndarray) else 0
    ref_params = _ref_params(op)
    named = {}
    for a in op.signature.args:
        if a.type in TENSOR_TYPES or a.type == "Tensor[]":
            continue
        if a.name in ctx.fixed:
            v = ctx.fixed[a.name]
            if callable(v) and not isinstance(v, type):
                v = v(**{k: arrays[k] for k in _param_names(v)})
        elif a.name in ctx.values:
            v = ctx.values[a.name]
        elif a.type in DIM_TYPES:
            v = ctx.dim(nd, optional=a.type != "dim", many=a.type == "dim[]?")
            if a.default is not None and v is None and a.type != "dim[]?" and a.default != "None":
                continue
        elif a.type in ("bool", "bool?") and (a.name == "keepdim" or ref_params is None or a.name in ref_params):
            v = draw.bool()
        elif a.type in ("Scalar", "Scalar?") and a.default is None:
            v = _scalar(draw, dtype)
        elif a.default is not None:
            continue
        else:
            raise SampleError(f"op '{op.name}': argument {a.name!r} ({a.type}) has no default; give its value in "
                              f"test.args (a Python value, or a lambda over the tensor arguments' arrays)")
        kwargs[a.name] = v
        named[a.name] = v
    return Sample(op, dtype, kwargs, arrays, named, layouts)


def _scalar(draw, dtype):
    kind = np.dtype(dtype).kind
    if kind == "b":
        return draw.bool()
    if kind in "iu":
        return draw.int(0 if kind == "u" else -5, 5)
    return draw.int(-20, 20) / 4


def _param_names(fn):
    import inspect
    return list(inspect.signature(fn).parameters)


def _ref_params(op):
    """Parameter names of the entry's reference (None when it has none or they cannot be read)."""
    if op.test.ref is None:
        return set()
    import inspect
    try:
        return set(inspect.signature(compile_ref(op.test.ref)).parameters)
    except (TypeError, ValueError):
        return None


# ------------------------------------------------------------------------------------------ dtype rules

def expected_dtype(op, sample):
    """The result dtype the entry's `result` / `reduce.accumulate` rules promise (None: no rule to check)."""
    dt = np.dtype(sample.dtype)
    cat = 0 if dt.kind == "b" else 1 if dt.kind in "iu" else 2
    dflt = np.dtype(np.float32)
    if op.kind in ("unary", "binary", "ternary"):
        return {"same": dt, "float": dt if cat == 2 else dflt, "bool": np.dtype(bool),
                "int64": np.dtype(np.int64)}.get(op.result)
    if op.kind == "argreduction":
        return np.dtype(np.int64)
    if op.kind in ("reduction", "scan"):
        if sample.named.get("dtype") is not None:
            return None
        if op.result == "bool":
            return np.dtype(bool)
        if op.result == "float" and cat < 2:
            return dflt
        if op.reduce.accumulate == "wide" and cat < 2:
            return np.dtype(np.int64)
        return dt if op.result == "same" else None
    return None
