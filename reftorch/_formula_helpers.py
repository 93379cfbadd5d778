"""Metadata helpers that derivative formulas and composite bodies of ops.yaml may call.

They are shape arithmetic and broadcast plumbing shared by many formulas, not per-op code."""
from __future__ import annotations

import warnings

import numpy as np

import reftorch._layout as L
from ._tensor import Size
from ._dtype import defaults
from ._dtype import fill_value
from ._tensor import Tensor
import reftorch._cuda_dispatch as _cuda_dispatch
from ._device import CPU
from ._device import get_default_device
import reftorch.kernels.return_types as _return_types
from ._sum_to import sum_to  # noqa: F401  -- the formulas' name for it


def invert_permutation(dims):
    dims = list(dims)
    n = len(dims)
    inv = [0] * n
    for i, d in enumerate(dims):
        inv[d % n] = i
    return tuple(inv)


def _reduce_dims(dim, ndim):
    """The dims a reduction over `dim` combines; None and an empty list mean every dim (PyTorch's rule)."""
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    return L.wrap_dims(dim, ndim)


def numel_of(shape, dim=None):
    """How many elements a reduction over dim of a tensor of this shape combines."""
    dims = _reduce_dims(dim, len(shape))
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def reduced_shape(shape, dim, keepdim):
    dims = _reduce_dims(dim, len(shape))
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def unsqueeze_dims(t, shape, dim, keepdim):
    """t (a reduction's output over dim of a tensor of `shape`) with the reduced dims put back as 1."""
    if keepdim or not shape:
        return t
    return t.reshape(reduced_shape(shape, dim, True))


def expand_reduced(t, shape, dim, keepdim):
    """A reduction's gradient broadcast back over the input's shape."""
    return unsqueeze_dims(t, shape, dim, keepdim).expand(tuple(shape))


def normalize_dims(dim, ndim):
    return L.wrap_dims(dim, ndim)


def default_float():
    return defaults.float


def is_floating(t):
    return t.dtype.is_floating_point


def is_tensor(x):
    return isinstance(x, Tensor)


def check_fill(value, dt):
    """A fill value (a number or 0-d tensor) for a tensor of dtype dt, with PyTorch's checked conversion of the
    Scalar it becomes: a complex one with an imaginary part into a real dtype raises (reftorch/_dtype.py)."""
    if isinstance(value, Tensor) and value.ndim == 0 and value.dtype.is_complex:
        value = value.item()
    fill_value(value, dt)


def checked_scalar(value, dt):
    """A Scalar argument (addmm's beta, alpha) as PyTorch's kernel converts it to dtype dt (value.to<scalar_t>()):
    a complex one into a real dtype only without an imaginary part, and then as its real part (truncated for an
    integral dtype); any other value is returned as it is."""
    if isinstance(value, Tensor) and value.ndim == 0 and value.dtype.is_complex:
        value = value.item()
    if not isinstance(value, (complex, np.complexfloating)) or dt.is_complex:
        return value
    v = fill_value(value, dt)
    return int(v) if dt.category == 1 else float(v) if dt.category == 2 else v


def device_of(*args):
    """The device for the new tensors of a composite body (the generator passes its tensor arguments): the first
    one off the cpu (cuda, meta), else cpu when there are tensors (a composite is an op: `with device("meta")`
    changes its caller's factories, not its own helpers), else None (the default device); cpu tensors beside a
    cuda one are 0-d ones or raise in the op anyway."""
    if not _cuda_dispatch.used and get_default_device() is CPU:
        return None
    found = None
    for a in args:
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(x, Tensor):
                if x.device.type != "cpu":
                    return x.device
                found = CPU
    return found


def lowest(dtype):
    """The most negative finite value of a floating dtype (a stand-in for -inf that keeps gradients finite)."""
    import numpy as np
    import ml_dtypes    # its finfo knows bfloat16 as well as NumPy's types
    return float(ml_dtypes.finfo(dtype.np).min)




return_types = _return_types    # torch.return_types: generated from the signatures' `-> (...)` (ops.yaml)


def return_type(name, *values, **fields):
    """`torch.return_types.<name>` for a composite op's results, positionally or by its fields (as declared in
    the op's signature; codegen checks each body's call against it)."""
    cls = getattr(_return_types, name)
    return cls(*values) if not fields else cls(**fields)


# ---------------------------------------------------------------------------- einsum

def _einsum_parse(equation, ndims):
    """(input label lists, output label list) of an einsum equation; '...' stays one label."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise RuntimeError(f"einsum(): {'more' if len(ndims) > len(terms) else 'fewer'} operands were provided "
                           "than specified in the equation")

    def labels(term):
        out, rest = [], term
        while rest:
            if rest.startswith("..."):
                out.append("...")
                rest = rest[3:]
            elif rest[0].isalpha():
                out.append(rest[0])
                rest = rest[1:]
            else:
                raise RuntimeError(f"einsum(): invalid subscript given at index {eq.index(rest[0])} in the equation "
                                   f"string, subscripts must be in [a-zA-Z]")
        return out

    ins = [labels(t) for t in terms]
    if arrow:
        return ins, labels(rhs)
    counts = {}
    for term in ins:
        for lab in term:
            counts[lab] = counts.get(lab, 0) + 1
    out = sorted(lab for lab, c in counts.items() if c == 1 and lab != "...")
    return ins, (["..."] if "..." in counts else []) + out


def einsum_grad_plan(equation, shapes):
    """For each operand of einsum(equation, *operands): how to get its gradient from the output's.

    Returns [(equation, other operand indices, extras)], the gradient of operand k being
    einsum(equation, grad, *others, *extras); extras are ('ones', shape) for labels summed only in
    operand k (the gradient is constant along them) and ('eye', n) for a label repeated in operand k
    (the gradient lives on its diagonal)."""
    ins, out = _einsum_parse(equation, [len(s) for s in shapes])
    used = {lab for term in ins + [out] for lab in term}
    fresh = [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used]
    ells = [tuple(s[t.index("..."):len(s) - (len(t) - 1 - t.index("..."))]) if "..." in t else None
            for t, s in zip(ins, shapes)]
    full = tuple(broadcast_shapes(*[e for e in ells if e is not None]))
    plans = []
    for k, term in enumerate(ins):
        others = [i for i in range(len(ins)) if i != k]
        present = set(out).union(*[set(ins[i]) for i in others]) if others else set(out)
        target, extras, seen = [], [], {}
        ell = len(shapes[k]) - (len(term) - (1 if "..." in term else 0))
        pos = 0
        for lab in term:
            if lab == "...":
                # summed, or broadcast against the others' (fewer or size-1 dims): ones keep this operand's
                # dims in the result, which einsum_backward then sums down to the operand's shape
                got = [full] if "..." in out else []
                if lab not in present or tuple(broadcast_shapes(*got, *[ells[i] for i in others
                                                                       if ells[i] is not None])) != ells[k]:
                    extras.append(("ones", tuple(shapes[k][pos:pos + ell]), "..."))
                target.append(lab)
                pos += ell
                continue
            size = shapes[k][pos]
            pos += 1
            if lab in seen:
                f = fresh.pop(0)
                extras.append(("eye", size, lab + f))
                target.append(f)
                continue
            seen[lab] = size
            if lab not in present:
                extras.append(("ones", (size,), lab))
            target.append(lab)
        terms = ["".join(out)] + ["".join(ins[i]) for i in others] + [e[2] for e in extras]
        plans.append((",".join(terms) + "->" + "".join(target), others, [e[:2] for e in extras]))
    return plans


def common_shape(*shapes):
    """The shape tensors of these shapes broadcast to, with the error of an op whose operands do not broadcast."""
    return L.broadcast_shapes(*shapes)


def broadcast_shapes(*shapes):
    """torch.broadcast_shapes: the shape that tensors of these shapes (ints count as 1-D) broadcast to, with
    PyTorch's errors (those of its Python reference, torch._refs._broadcast_shapes)."""
    shapes = tuple((s,) if isinstance(s, int) else s for s in shapes if s is not None)
    for s in shapes:
        if not isinstance(s, (tuple, list)):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {s}")
    common = [1] * max((len(s) for s in shapes), default=0)
    for i, s in enumerate(shapes):
        for d in range(-1, -1 - len(s), -1):
            if s[d] == common[d]:
                continue
            if common[d] == 1:
                if s[d] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[d] = s[d]
            elif s[d] != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {s[d]} at {d}! Mismatching "
                                   f"argument at index {i} had {s}; but expected shape should be broadcastable "
                                   f"to {common}")
    return Size(common)


def warn_once(message, category=UserWarning):
    """A warning a composite body gives once per process, as PyTorch's TORCH_WARN_ONCE (meshgrid without
    indexing=, chain_matmul), attributed to the user's line: above it sit the generated wrapper, the
    dispatcher's composite() and the body."""
    if message in _warned:
        return
    _warned.add(message)
    warnings.warn(message, category, stacklevel=5)


_warned = set()     # messages warn_once has given


def not_implemented(what):
    """The formula of an input PyTorch records but cannot differentiate (`not_implemented` in its
    derivatives.yaml: zeta's and igamma's first argument): asking for that gradient raises its error."""
    raise NotImplementedError(f"the derivative for '{what}' is not implemented.")
