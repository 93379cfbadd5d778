"""vmap: a function of one sample run on a batch, batched by kind of op, not by op.

Inside vmap every batched input is a *logical* tensor: a view of its first sample (so shapes, dims and
Python-level code see one sample) tagged `_vmap = (level, physical)`, the physical tensor holding the
whole batch in dim 0. While a level is open the dispatcher hands each op call to `_Hook.call`
(`_dispatch._forward`, a chain shared with forward-mode AD); an op with an argument batched at the
innermost level runs once on the physical tensors, by the rule of its kind in ops.yaml:

  unary / binary / ternary   broadcasting: batched operands get the output's rank after their batch dim
  reduction / scan / argreduction / view, and ops with dim arguments
                             the dim arguments (`dim`, `dim?`, `dim[]?`, a view's `dims`) shifted past
                             the batch dim; a view's target `size` / `shape` gets the batch size in front
  ops.yaml `vmap:`           the op as an expression over ops batched by kind, run on the logical tensors
  matmul (ops whose body is np.matmul)
                             the batch dim in front of the matrix dims (vectors made matrices and back)
  anything else              a loop over the samples, its results stacked

and its result is tagged again. Writes into a batched tensor (copy_, indexed writes, in-place composites)
write its physical tensor (`_Hook.assigned`); indexing by batched index tensors runs per sample (`_Index`);
random ops follow each level's `randomness` flag (`_random_call`: 'different' draws with the batch dims in
front, 'same' one draw shared by the batch, 'error' refuses). Levels nest (vmap(vmap(f))): a physical
tensor may itself be the logical tensor of the level outside, whose rule then runs in turn. Function
transforms inside vmap (vmap(grad(f))) work on the *bottom* tensors, which hold every open level's batch
dim (to_bottom / rewrap), since autograd records there.
"""
from __future__ import annotations

import functools

import numpy as np

import reftorch._creation_random as _creation_random
import reftorch._dispatch as _dispatch
import reftorch._functional as F
import reftorch._indexing as _indexing
import reftorch._random as _random
import reftorch.autograd.forward_ad as fwAD
from .._tensor import Tensor
from ..kernels.transforms import VMAPS
from ._common import depth, finish
from ._pytree import tree_flatten, tree_unflatten

DIM_TYPES = ("dim", "dim?", "dim[]?")
DIM_LIST_NAMES = ("dims",)          # int[] arguments that list dims (permute's), by the signatures' convention
SIZE_NAMES = ("size", "shape")      # int[] arguments of views that give the whole target shape
RELATIVE_NAMES = ("sizes",)         # int[] arguments of views relative to a dim argument (unflatten's)
ELEMENTWISE = ("unary", "binary", "ternary")
DIM_KINDS = ("reduction", "scan", "argreduction", "view")


class _Level:
    """One vmap call's level; `open` while it runs (a tensor tagged with a closed level is a plain tensor, and
    Tensor.item() refuses a tagged tensor of an open one, as PyTorch does)."""
    __slots__ = ("id", "size", "randomness", "open", "depth", "dual")

    def __init__(self, id_, size, randomness):
        self.id, self.size, self.randomness, self.open = id_, size, randomness, True
        self.depth = depth.n        # the transforms (grad, jacrev...) running when the level opened
        self.dual = fwAD._state.level   # and forward AD's level (jvp's)

    def transform_inside(self):
        """Whether a transform (grad, jvp...) runs inside this level (PyTorch's tensors there are wrapped again,
        and .item() on them says so)."""
        return depth.n > self.depth or fwAD._state.level is not self.dual


class _State:
    levels = []             # open levels, outermost first
    counter = 0


_state = _State()


def _active(x):
    """(level, physical) when x is batched at an open level, else None."""
    tag = x._vmap if isinstance(x, Tensor) else None
    if tag is None or not tag[0].open:
        return None
    return tag


def wrap(level, physical):
    """The logical tensor of a physical one (its first sample's view, tagged)."""
    p = physical
    t = Tensor._make(p._storage, p._offset, p._shape[1:], p._strides[1:], p.dtype, p.device)
    t._vmap = (level, physical)
    return t


def _phys(x, level):
    """x's physical tensor at level (batch dim 0) and whether it is batched there."""
    tag = x._vmap if isinstance(x, Tensor) else None
    if tag is not None and tag[0] is level:
        return tag[1], True
    return x, False


# ------------------------------------------------------------------------------------ rules

def _wrap_dim(d, ndim):
    n = max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def _shift_dims(spec, scalars, ndim):
    """The scalar arguments with dims moved past the batch dim, or None when a rule cannot say (dim=None of a
    reduction over a 0-d sample...)."""
    out = list(scalars)
    view = spec.kind == "view"
    for i, name in enumerate(spec.scalar_names):
        ty, v = spec.arg_types[name], scalars[i] if i < len(scalars) else None
        if ty.startswith("int[]") and not (view and name in DIM_LIST_NAMES + SIZE_NAMES + RELATIVE_NAMES):
            return None         # a list relative to every dim (a stride, repeat's sizes...): no rule says how
        if name == "dim" and ty == "int" and view:      # a new dim's position (unsqueeze): in [-ndim-1, ndim]
            out[i] = _wrap_dim(v, ndim + 1) + 1
        elif ty in DIM_TYPES or (name in DIM_LIST_NAMES and view):
            if v is None:
                if ty != "dim[]?" or ndim == 0:
                    return None
                out[i] = tuple(range(1, ndim + 1))      # every dim of the sample
            elif isinstance(v, (tuple, list)):
                if ndim == 0:
                    return None
                dims = [_wrap_dim(d, ndim) + 1 for d in v]
                if name in DIM_LIST_NAMES:      # an ordering of every dim (permute): the batch dim stays first
                    dims = [0] + dims
                out[i] = type(v)(dims)
            else:
                if ndim == 0:
                    return None
                out[i] = _wrap_dim(v, ndim) + 1
        elif name in SIZE_NAMES and spec.kind == "view" and isinstance(v, (tuple, list)):
            out[i] = None       # filled by _sized (needs the batch size)
    return out


def _elementwise(spec, phys, batched, scalars, run, level):
    rank = max(p.ndim - 1 if b else p.ndim for p, b in zip(phys, batched) if isinstance(p, Tensor))
    args = []
    for p, b in zip(phys, batched):
        if b and p.ndim - 1 < rank:
            p = F.reshape(p, (p._shape[0],) + (1,) * (rank - p.ndim + 1) + tuple(p._shape[1:]))
        args.append(p)
    return run(spec, args, scalars)


def _by_dims(spec, phys, batched, scalars, run, level):
    if len(phys) != 1 or not batched[0]:
        return None
    x = phys[0]
    shifted = _shift_dims(spec, scalars, x.ndim - 1)
    if shifted is None:
        return None
    for i, name in enumerate(spec.scalar_names):
        if shifted[i] is None and name in SIZE_NAMES and spec.kind == "view":
            size = tuple(scalars[i])
            extra = len(size) - (x.ndim - 1)
            if extra > 0:           # expand to more dims: new dims go after the batch dim
                x = F.reshape(x, (x._shape[0],) + (1,) * extra + tuple(x._shape[1:]))
            shifted[i] = (x._shape[0],) + size
    return run(spec, [x], tuple(shifted))


def _matmul(spec, phys, batched, scalars, run, level):
    if len(phys) != 2:
        return None
    (a, b), (ba, bb) = phys, batched
    ka, kb = (a.ndim - 1 if ba else a.ndim), (b.ndim - 1 if bb else b.ndim)
    if ka == 0 or kb == 0:
        return None
    squeeze = []
    if ba and ka == 1:
        a, ka = F.unsqueeze(a, 1), 2
        squeeze.append(-2)
    if bb and kb == 1:
        b, kb = F.unsqueeze(b, -1), 2
        squeeze.append(-1)
    rank = max(ka, kb)
    if ba and ka < rank:
        a = F.reshape(a, (a._shape[0],) + (1,) * (rank - ka) + tuple(a._shape[1:]))
    if bb and kb < rank:
        b = F.reshape(b, (b._shape[0],) + (1,) * (rank - kb) + tuple(b._shape[1:]))
    out = F.matmul(a, b)
    for d in squeeze if len(squeeze) < 2 else (-1, -1):
        out = F.squeeze(out, d)
    return out


def _loop(spec, phys, batched, scalars, run, level):
    """The op once per sample, the results stacked (ops no rule covers)."""
    results = []
    per_sample = [_phys(c, level) for c in scalars]     # a scalar argument given as a batched 0-d tensor
    for i in range(level.size):
        args = [F.select(p, 0, i) if b else p for p, b in zip(phys, batched)]
        results.append(run(spec, args, tuple(F.select(c, 0, i) if b else c for c, b in per_sample)))
    if isinstance(results[0], (tuple, list)):
        many = [F.stack([r[k] for r in results]) for k in range(len(results[0]))]
        return results[0].__class__(*many) if hasattr(results[0], "_fields") else tuple(many)
    return F.stack(results)


def _rule(spec):
    if spec.kind in ELEMENTWISE:
        return _elementwise
    if spec.matmul_body:
        return _matmul
    if spec.kind in DIM_KINDS or any(spec.arg_types[n] in DIM_TYPES for n in spec.scalar_names):
        return _by_dims
    return None


def _wrap_out(level, out):
    if isinstance(out, Tensor):
        return wrap(level, out)
    if isinstance(out, (tuple, list)):
        items = [wrap(level, o) if isinstance(o, Tensor) else o for o in out]
        return out.__class__(*items) if hasattr(out, "_fields") else type(out)(items)
    return out


# ------------------------------------------------------------------------------------ randomness

RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                "'different' randomness flags on vmap or perform the randomness operation out of vmap")
RANDOM_OUT = ("vmap: We do not support calling out variants of random operations inside of vmap. Please use non-out "
              "variants as a workaround")
RANDOM_SAME_BATCHED = ("Vmap does not currently support same randomness with a batched tensor input. Please file an "
                       "issue with functorch")
RANDOM_FILL_UNBATCHED = ("vmap: Cannot ask for different inplace randomness on an unbatched tensor. This will appear "
                         "like same randomness. If this is necessary for your usage, please file an issue with "
                         "functorch.")


def _levels_of(x):
    """The open levels x is batched at."""
    found = []
    hit = _active(x)
    while hit is not None:
        found.append(hit[0])
        hit = _active(hit[1])
    return found


def _random_levels(kind, tensors):
    """The open levels, outermost first, that draw per sample ('different'), after every level's flag is checked
    as PyTorch's are (innermost first): 'error' refuses any draw; 'same' refuses tensor inputs batched there
    (the draws could not be shared); 'different' refuses an in-place fill of a tensor not batched there."""
    different = []
    batched = [set(_levels_of(t)) for t in tensors]
    for lv in reversed(_state.levels):
        if lv.randomness == "error":
            raise RuntimeError(RANDOM_ERROR)
        inputs = batched[1:] if kind == "fill" else batched
        if lv.randomness == "same" and any(lv in b for b in inputs):
            raise RuntimeError(RANDOM_SAME_BATCHED)
        if lv.randomness == "different":
            if kind == "fill" and lv not in batched[0]:
                raise RuntimeError(RANDOM_FILL_UNBATCHED)
            different.append(lv)
    return different[::-1]


def _wrap_levels(t, levels):
    """The logical tensor of t whose leading dims are the batch dims of levels (outermost first)."""
    for lv in levels:
        t = wrap(lv, t)
    return t


def _sized_factory(fn, args, kwargs, prefix):
    """A factory's draw with the batch sizes in front of its size (randperm: one permutation per sample)."""
    kw = dict(kwargs)
    name = fn.__name__
    if name == "randperm":
        n = 1
        for s in prefix:
            n *= s
        draws = [fn(*args, **kw) for _ in range(n)]
        return F.reshape(F.stack(draws), tuple(prefix) + tuple(draws[0]._shape))
    if name == "randint":
        low, high, shape = _creation_random._randint_args(args, {k: kw.pop(k) for k in ("low", "high", "size")
                                                                  if k in kw})
        return fn(low, high, tuple(prefix) + tuple(shape), **kw)
    if name == "normal":
        mean, std = (list(args) + [kw.pop("mean", 0.0), kw.pop("std", 1.0)])[:2] if len(args) < 2 else args[:2]
        size = args[2] if len(args) > 2 else kw.pop("size", None)
        return fn(mean, std, tuple(prefix) + _creation_random._sequence_size("normal", size), **kw)
    shape = _creation_random._size_args(name, args, kw.pop("size", None))      # rand, randn
    return fn(tuple(prefix) + tuple(shape), **kw)


def _sample_phys(fn, args, kwargs, levels):
    """A sampler's draws with its tensor inputs as physical tensors holding the batch dims of levels in front
    (expanded where an input is not batched there: each sample draws its own)."""
    args = [to_bottom(a, levels) if isinstance(a, Tensor) else a for a in args]
    kwargs = {k: to_bottom(v, levels) if isinstance(v, Tensor) else v for k, v in kwargs.items()}
    if fn.__name__ != "multinomial":    # pointwise in its inputs: the batch dims broadcast through
        return fn(*args, **kwargs)
    probs = args[0]         # rows of probabilities: the batch dims folded into the rows and unfolded after
    prefix = tuple(probs._shape[:len(levels)])
    out = fn(F.reshape(probs, (-1, probs._shape[-1])), *args[1:], **kwargs)
    return F.reshape(out, prefix + tuple(probs._shape[len(levels):-1]) + (out._shape[-1],))


def _random_call(kind, fn, args, kwargs):
    """A random op called inside vmap (reftorch/_creation_random.py's hook), by its levels' randomness flags."""
    if kwargs.get("out") is not None:
        raise RuntimeError(RANDOM_OUT)
    if kind == "factory" and fn.__name__ == "normal" and any(isinstance(a, Tensor) for a in (*args, *kwargs.values())):
        kind = "sample"         # normal(mean_tensor, std...): draws parameterised by tensors
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
    levels = _random_levels(kind, tensors)
    _creation_random._random_hook = None        # the op's own draws (and ops) below are plain
    try:
        if not levels:
            return fn(*args, **kwargs)      # one draw shared by the batch (a fill writes it into every sample)
        prefix = tuple(lv.size for lv in levels)
        if kind == "factory":
            return _wrap_levels(_sized_factory(fn, args, kwargs, prefix), levels)
        if kind == "sample":
            return _wrap_levels(_sample_phys(fn, args, kwargs, levels), levels)
        self = args[0]      # fill: one sample's values each, drawn into a fresh batch, then written into self
        draws = F.empty(prefix + tuple(self._shape), dtype=self.dtype, device=self.device)
        rest = [to_bottom(a, levels) if isinstance(a, Tensor) else a for a in args[1:]]
        fn(draws, *rest, **kwargs)
    finally:
        _creation_random._random_hook = _random_call
    return _random._write(self, _wrap_levels(draws, levels))


def _inplace_error(name):
    return (f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor `other` in extra_args "
            "that has more elements than `self`. This happened due to `other` being vmapped over but `self` not being "
            f"vmapped over in a vmap. Please try to use out-of-place operators instead of {name}. If said operator is "
            "being called inside the PyTorch framework, please file a bug report instead.")


# PyTorch's error for an in-place op on an unbatched self with a batched operand depends on its batch rule:
BROADCAST_ERROR_OPS = ("add_", "atan2_", "copysign_", "bitwise_or_")     # runs, and fails to broadcast
ARITHMETIC_OPS = ("sub_", "mul_", "div_", "clamp_min_", "logical_and_")  # "inplace arithmetic"
NAMED_OPS = ("index_put_", "index_add_", "index_fill_", "scatter_add_", "fill_")   # by name; others: the fallback's


def _unbatched_self_error(name, phys, level):
    if name in BROADCAST_ERROR_OPS:
        shape = np.broadcast_shapes(*[tuple(p._shape) for p in phys if isinstance(p, Tensor)])
        return (f"output with shape [{', '.join(map(str, phys[0]._shape))}] doesn't match the broadcast shape "
                f"[{', '.join(map(str, shape))}]")
    if name in ARITHMETIC_OPS:
        return _inplace_error("inplace arithmetic")
    if name in NAMED_OPS:
        return _inplace_error(name)
    return _inplace_error("aten::" + name).replace("in a vmap.", f"at level {_state.levels.index(level) + 1}.")


def _head(spec, tensors, scalars):
    """One op call from the top of the hook chain, as the dispatcher makes it."""
    h = _dispatch._forward
    return h.call(spec, tensors, scalars, _dispatch._call_spec) if h is not None else \
        _dispatch._call_spec(spec, tensors, scalars)


class _Hook:
    """What the dispatcher calls while a vmap level is open: one hook of the chain (`next`: the hook
    installed before, forward AD's or an outer vmap's -- the same class, one chain for every level)."""
    next = None

    @staticmethod
    def _inner(run):
        nxt = _Hook.next
        return run if nxt is None else (lambda spec, ts, sc: nxt.call(spec, ts, sc, run))

    @staticmethod
    def _level(tensors):
        best = None
        for x in tensors:
            hit = _active(x)
            if hit is not None and (best is None or _state.levels.index(hit[0]) > _state.levels.index(best)):
                best = hit[0]
        return best

    @staticmethod
    def call(spec, tensors, scalars, run):
        level = _Hook._level((*tensors, *scalars))     # (a scalar argument may be a batched 0-d tensor)
        if level is None:
            return _Hook._inner(run)(spec, tensors, scalars)
        form = VMAPS.get(spec.name)
        if form is not None:            # ops.yaml `vmap:`: the op in terms of ops batched by kind
            a = dict(zip(spec.tensor_args, tensors))
            a.update(zip(spec.scalar_names, scalars))
            return form(F, a)
        # the physical op goes through the whole chain again: a level outside this one (its tensors may be
        # batched there) and forward AD (their tangents) see it
        inner = _head
        phys, batched = zip(*[_phys(x, level) for x in tensors]) if tensors else ((), ())
        rule = None if any(_phys(c, level)[1] for c in scalars) else _rule(spec)     # (batched scalars: the loop)
        out = rule(spec, list(phys), list(batched), tuple(scalars), inner, level) if rule is not None else None
        if out is None:
            out = _loop(spec, list(phys), list(batched), tuple(scalars), inner, level)
        return _wrap_out(level, out)

    @staticmethod
    def call_inplace(spec, tensors, scalars, run_inplace, run):
        level = _Hook._level(tensors)
        nxt = _Hook.next
        if level is None:
            return nxt.call_inplace(spec, tensors, scalars, run_inplace, run) if nxt is not None else \
                run_inplace(spec, tensors, scalars)
        self_phys, self_batched = _phys(tensors[0], level)
        if not self_batched:
            raise RuntimeError(_unbatched_self_error(spec.name + "_", [_phys(x, level)[0] for x in tensors], level))
        result = _Hook.call(spec, tensors, scalars, run)        # out of place, then written into the batch
        self_phys.copy_(_phys(result, level)[0])
        return tensors[0]

    @staticmethod
    def assigned(self, new, op="inplace arithmetic"):
        """new's values are being written into self (copy_, an indexed write, an in-place composite): batched
        at an open level, the write is the physical tensors' (the whole batch; True: nothing left to write)."""
        level = _Hook._level((self, new))
        if level is None:
            return _Hook.next is not None and _Hook.next.assigned(self, new, op)
        self_phys, self_batched = _phys(self, level)
        if not self_batched:        # (op: PyTorch's name in the error -- index_put_ for an advanced-index write)
            raise RuntimeError(_inplace_error(op))
        self_phys.copy_(_phys(new, level)[0])       # (through the chain again: outer levels, tangents)
        return True

    @staticmethod
    def converted(src, out):
        hit = _active(src)
        if hit is not None:
            level, phys = hit
            out = wrap(level, phys.to(out.dtype))
        if _Hook.next is not None:
            return _Hook.next.converted(src, out)
        return out


# ------------------------------------------------------------------------------------ batched index tensors

MASK_ERROR = ("vmap: We do not support batching operators that can support dynamic shape. Attempting to batch over "
              "indexing with a boolean mask.")


class _Index:
    """Indexing by index tensors batched at an open level (reftorch/_indexing.py's hook): per sample, each
    sample's indices on its own sample (a batched boolean mask has no batched shape: PyTorch's error)."""

    @staticmethod
    def _level(index):
        items = index if isinstance(index, tuple) else (index,)
        level = _Hook._level(items)
        if level is not None and any(_phys(it, level)[1] and it.dtype.name in ("bool", "uint8") for it in items):
            raise RuntimeError(MASK_ERROR)
        return level, items

    @staticmethod
    def _sample(items, level, i, tuple_index):
        got = tuple(F.select(_phys(it, level)[0], 0, i) if _phys(it, level)[1] else it for it in items)
        return got if tuple_index else got[0]

    @staticmethod
    def read(self, index):
        level, items = _Index._level(index)
        if level is None:
            return None
        phys, batched = _phys(self, level)
        outs = [(F.select(phys, 0, i) if batched else phys)[_Index._sample(items, level, i, isinstance(index, tuple))]
                for i in range(level.size)]
        return wrap(level, F.stack(outs))

    @staticmethod
    def write(self, index, value, accumulate):
        level, items = _Index._level(index)
        if level is None:
            return False
        phys, batched = _phys(self, level)
        if not batched:
            raise RuntimeError(_inplace_error("index_put_"))
        vphys, vbatched = _phys(value, level)
        for i in range(level.size):
            target = F.select(phys, 0, i)
            v = F.select(vphys, 0, i) if vbatched else vphys
            _indexing._write(target, _Index._sample(items, level, i, isinstance(index, tuple)), v, accumulate)
        return True


# ------------------------------------------------------------------------------------ bottom tensors

def to_bottom(x, levels=None):
    """x as one tensor with the batch dims of every open level (or of levels, which x's are among) in front
    (outermost first), expanded where x is not batched at a level."""
    chain = []
    cur = x
    while True:
        hit = _active(cur)
        if hit is None:
            break
        chain.append(hit[0])
        cur = hit[1]
    pos = 0
    for lv in _state.levels if levels is None else levels:
        if lv not in chain:
            cur = F.unsqueeze(cur, pos)
            cur = F.expand(cur, tuple(cur._shape[:pos]) + (lv.size,) + tuple(cur._shape[pos + 1:]))
        pos += 1
    return cur


def rewrap(bottom):
    """The logical tensor, at the innermost open level, of a bottom tensor."""
    t = bottom
    for lv in _state.levels:
        t = wrap(lv, t)
    return t


def active():
    return bool(_state.levels)


# ------------------------------------------------------------------------------------ vmap

def _fname(func):
    return getattr(func, "__name__", repr(func))


def _flat_dims(in_dims, args, fname):
    """One in_dim per leaf of args."""
    if isinstance(in_dims, int) and not isinstance(in_dims, bool):
        leaves, spec = tree_flatten(args)
        return leaves, [in_dims] * len(leaves), spec
    if not isinstance(in_dims, tuple):
        raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if len(in_dims) != len(args):
        raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {tree_flatten(in_dims)[1]!r} but inputs has "
                         f"structure {tree_flatten(args)[1]!r}.")
    leaves, dims = [], []
    for a, d in zip(args, in_dims):
        ls, _ = tree_flatten(a)
        if isinstance(d, (tuple, list, dict)):
            ds, _ = tree_flatten(d)
            if len(ds) != len(ls):
                raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with "
                                 "the structure of `inputs`.")
        else:
            ds = [d] * len(ls)
        leaves += ls
        dims += ds
    return leaves, dims, tree_flatten(args)[1]


def _batch_size(leaves, dims, in_dims, fname):
    sizes = []
    for x, d in zip(leaves, dims):
        if d is None:
            continue
        if not isinstance(x, Tensor):
            raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but the "
                             f"input is of type {type(x)}. We cannot vmap over non-Tensor arguments, please use None "
                             "as the respective in_dim")
        n = x.ndim
        if not -n <= d < n:
            raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, but "
                             f"that input is a Tensor of dimensionality {n} so expected in_dim to satisfy "
                             f"-{n} <= in_dim < {n}.")
        sizes.append(x._shape[d % n])
    if not sizes:
        raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): at least one input must be batched "
                         "(in_dims all None).")
    if any(s != sizes[0] for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _run(func, leaves, dims, spec, size, randomness, kwargs):
    """func on the logical tensors of one new level; the outputs' physical tensors (batch dim 0) or the
    unbatched outputs, with which were batched."""
    movedd = [F.movedim(x, d, 0) if d is not None else x for x, d in zip(leaves, dims)]
    _state.counter += 1
    level = _Level(_state.counter, size, randomness)
    d = _dispatch
    install = not _state.levels      # one hook serves every level (an outer vmap's is in the chain already)
    if install:
        _Hook.next, d._forward = d._forward, _Hook
        _creation_random._random_hook = _random_call
        _indexing._vmap_index = _Index
    _state.levels.append(level)
    try:
        args = tree_unflatten([wrap(level, x) if dd is not None else x for x, dd in zip(movedd, dims)], spec)
        out = func(*args, **kwargs)
    finally:
        _state.levels.pop()
        level.open = False
        if install:
            d._forward, _Hook.next = _Hook.next, None
            _creation_random._random_hook = None
            _indexing._vmap_index = None
    outs, out_spec = tree_flatten(out)
    phys = []
    for o in outs:
        if isinstance(o, Tensor) and o._vmap is not None and o._vmap[0] is level:
            phys.append((o._vmap[1], True))
        else:
            phys.append((o, False))
    return phys, out_spec


def _out(phys, out_spec, out_dims, size, fname):
    dims = [out_dims] * len(phys) if not isinstance(out_dims, tuple) else None
    if dims is None:
        dims, dspec = tree_flatten(out_dims)
        if len(dims) != len(phys):
            raise ValueError(f"vmap({fname}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                             f"structure of `outputs`. out_dims has structure {dspec!r} but outputs has structure "
                             f"{out_spec!r}.")
    result = []
    for (p, batched), d in zip(phys, dims):
        if d is None:
            if batched:
                raise ValueError(f"vmap({fname}, ...): `{fname}` can not return a BatchedTensor when out_dim is None")
            result.append(p)
            continue
        if not isinstance(p, Tensor):
            raise ValueError(f"vmap({fname}, ...): `{fname}` must only return Tensors, got type {type(p)}. Did you "
                             "mean to set out_dims= to None for output?")
        if not batched:
            p = F.expand(F.unsqueeze(p, 0), (size,) + tuple(p._shape))
        result.append(F.movedim(p, 0, _wrap_dim(d, p.ndim)))
    return result


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func over a batch: each input is split along its in_dim, outputs are stacked along their out_dim."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    fname = _fname(func)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if not args:
            raise ValueError(f"vmap({fname})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                             "trying to vmap over a function with no inputs. The latter is unsupported.")
        leaves, dims, spec = _flat_dims(in_dims, args, fname)
        size = _batch_size(leaves, dims, in_dims, fname)
        step = chunk_size or size
        chunks = []
        rng = _creation_random.get_rng_state() if randomness == "same" and step < size else None
        for start in range(0, size, step):
            if rng is not None:     # randomness='same' across chunks too: each chunk draws what the first did
                _creation_random.set_rng_state(rng)
            n = min(step, size - start)
            part = [F.narrow(x, d % x.ndim, start, n) if d is not None and step < size else x
                    for x, d in zip(leaves, dims)]
            phys, out_spec = _run(func, part, dims, spec, n, randomness, kwargs)
            chunks.append(_out(phys, out_spec, out_dims, n, fname))
        if len(chunks) == 1:
            merged = chunks[0]
        else:
            flat_dims = [out_dims] * len(chunks[0]) if not isinstance(out_dims, tuple) else tree_flatten(out_dims)[0]
            merged = [c[0] if d is None else F.cat(list(c), _wrap_dim(d, c[0].ndim))
                      for c, d in zip(zip(*chunks), flat_dims)]
        out = tree_unflatten(merged, out_spec)
        outermost = not _state.levels and not depth.n and _dispatch._forward is None
        return finish(out) if outermost else out
    return wrapper
