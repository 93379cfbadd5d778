"""Strided layout: shapes, strides (in elements), broadcasting, dimension collapsing, view geometry.

Pure functions over tuples; nothing here touches data. View ops of ops.yaml (kind: view) find their
geometry here by name: `<op>(shape, strides, offset, *args) -> (shape, strides, offset)`. Strides of
None say that no view has that shape (reshape and flatten of incompatible strides): the dispatcher
then gives the result a contiguous copy. Offsets and strides follow PyTorch's, empty views included.
"""
from __future__ import annotations

import math

import numpy as np


def contiguous_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def is_contiguous(shape, strides):
    if 0 in shape:          # PyTorch: a tensor without elements is contiguous, whatever its strides
        return True
    acc = 1
    for s, st in zip(reversed(shape), reversed(strides)):
        if s == 1:
            continue
        if st != acc:
            return False
        acc *= s
    return True


def wrap_dim(dim, ndim, op=None):
    """PyTorch's dim wrapping with its range error; 0-d tensors accept -1 and 0."""
    try:
        dim = dim.__index__()
    except AttributeError:
        raise TypeError(f"{op + '(): ' if op else ''}dim must be an integer, got {type(dim).__name__}") from None
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def wrap_dims(dims, ndim, op=None):
    """A dim, a sequence of dims or None -> sorted tuple of distinct non-negative dims."""
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int) or hasattr(dims, "__index__") and not isinstance(dims, (tuple, list)):
        dims = (dims,)
    out = []
    for d in dims:
        w = wrap_dim(d, ndim, op)
        if w in out:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        out.append(w)
    if ndim == 0:
        return ()
    return tuple(sorted(out))


def broadcast_shapes(*shapes):
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, size in enumerate(s):
            j = ndim - len(s) + i
            if out[j] == 1:
                out[j] = size
            elif size != 1 and size != out[j]:
                raise RuntimeError(_mismatch(shapes, j - ndim))
    return tuple(out)


def _mismatch(shapes, neg_dim):
    a, b = shapes[0], shapes[1] if len(shapes) > 1 else shapes[0]
    # find the pair that disagrees, as PyTorch names them
    for x in shapes:
        for y in shapes:
            if len(x) >= -neg_dim and len(y) >= -neg_dim:
                sx, sy = x[neg_dim], y[neg_dim]
                if sx != sy and sx != 1 and sy != 1:
                    a, b = x, y
                    ndim = max(len(s) for s in shapes)
                    return (f"The size of tensor a ({sx}) must match the size of tensor b ({sy}) at "
                            f"non-singleton dimension {ndim + neg_dim}")
    return "shapes cannot be broadcast together"


def broadcast_strides(shape, strides, to_shape):
    """Strides of a tensor viewed at to_shape (stride 0 along broadcast dims)."""
    pad = len(to_shape) - len(shape)
    out = [0] * pad
    for s, st, t in zip(shape, strides, to_shape[pad:]):
        out.append(st if s == t else 0)
    return tuple(out)


def collapse(shape, stride_lists):
    """Drop size-1 dims and merge adjacent dims that every operand walks as one (DESIGN §5).

    Returns (shape, [strides per operand]); most calls end with one or two dims."""
    keep = [i for i, s in enumerate(shape) if s != 1]
    if not keep:
        return (1,), [(0,) for _ in stride_lists]
    new_shape = [shape[keep[0]]]
    new_strides = [[st[keep[0]]] for st in stride_lists]
    for i in keep[1:]:
        size = shape[i]
        if all(ns[-1] == st[i] * size for ns, st in zip(new_strides, stride_lists)):
            new_shape[-1] *= size
            for ns, st in zip(new_strides, stride_lists):
                ns[-1] = st[i]
        else:
            new_shape.append(size)
            for ns, st in zip(new_strides, stride_lists):
                ns.append(st[i])
    return tuple(new_shape), [tuple(ns) for ns in new_strides]


# ----------------------------------------------------------------------- view geometry by op name

def _sizes(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def infer_size(shape, numel_):
    shape = [int(s) for s in shape]
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = numel([s for s in shape if s != -1])
    if neg:
        if known == 0 and numel_ == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                               "unspecified dimension size -1 can be any value and is ambiguous")
        if known == 0 or numel_ % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel_}")
        shape[neg[0]] = numel_ // known
    elif known != numel_:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel_}")
    return tuple(shape)


def view_strides(old_shape, old_strides, new_shape):
    """Strides for viewing (old_shape, old_strides) as new_shape without a copy, or None (PyTorch's
    computeStride: split and merge only within runs of dims that are contiguous with each other)."""
    if numel(old_shape) == 0:
        return contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_strides[-1] if old_strides else 1
    tensor_numel, view_numel = 1, 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_strides[tensor_d - 1]
                tensor_numel, view_numel = 1, 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def view(shape, strides, offset, size):
    new = infer_size(_sizes(size), numel(shape))
    st = view_strides(shape, strides, new) if shape else contiguous_strides(new)
    if st is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return new, st, offset


def reshape(shape, strides, offset, size):
    """view's geometry when the strides allow it; strides None asks the caller for a contiguous copy."""
    new = infer_size(_sizes(size), numel(shape))
    st = view_strides(shape, strides, new) if shape else contiguous_strides(new)
    return new, st, offset


def flatten(shape, strides, offset, start_dim=0, end_dim=-1):
    new = flatten_shape(shape, start_dim, end_dim)
    if len(shape) and wrap_dim(start_dim, len(shape)) == wrap_dim(end_dim, len(shape)):
        return shape, strides, offset
    return reshape(shape, strides, offset, new)


def unflatten(shape, strides, offset, dim, sizes):
    """Splits one dim into `sizes` (one -1 allowed); always a view."""
    d = wrap_dim(dim, len(shape))
    sizes = _sizes(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sum(1 for s in sizes if s == -1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = numel([s for s in sizes if s != -1])
    if -1 in sizes:
        if known == 0 or shape[d] % known:
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
                               f"({shape[d]}) in the input tensor")
        sizes = tuple(shape[d] // known if s == -1 else s for s in sizes)
    elif known != shape[d]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
                           f"({shape[d]}) in the input tensor")
    inner = contiguous_strides(sizes)
    new_strides = tuple(s * strides[d] for s in inner)
    return shape[:d] + tuple(sizes) + shape[d + 1:], strides[:d] + new_strides + strides[d + 1:], offset


def t(shape, strides, offset):
    if len(shape) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {len(shape)}D")
    return tuple(reversed(shape)), tuple(reversed(strides)), offset


def t_(shape, strides, offset):
    """t's geometry for the in-place t_(), whose error names it."""
    if len(shape) > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {len(shape)}D")
    return t(shape, strides, offset)


def adjoint(shape, strides, offset):
    """The conjugate transpose of the last two dims; reftorch has no complex dtypes, so a transpose."""
    if len(shape) < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{len(shape)}-D tensor.")
    return transpose(shape, strides, offset, -2, -1)


def transpose(shape, strides, offset, dim0, dim1):
    n = len(shape)
    d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    if n == 0:
        return shape, strides, offset
    sh, st = list(shape), list(strides)
    sh[d0], sh[d1] = sh[d1], sh[d0]
    st[d0], st[d1] = st[d1], st[d0]
    return tuple(sh), tuple(st), offset


def permute(shape, strides, offset, dims):
    dims = _sizes(dims)
    n = len(shape)
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
                           f"len(dims) = {len(dims)}".replace("(sparse_coo)", ""))
    w = [wrap_dim(d, n) for d in dims]
    if len(set(w)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return tuple(shape[d] for d in w), tuple(strides[d] for d in w), offset


def expand(shape, strides, offset, size):
    size = _sizes(size)
    if len(size) < len(shape):
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(size)}): the number of sizes "
                           f"provided ({len(size)}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({len(shape)})")
    pad = len(size) - len(shape)
    new_shape, new_strides = [], []
    for i, s in enumerate(size):
        if i < pad:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                                   "non-existing dimension 0")
            new_shape.append(s)
            new_strides.append(0)
            continue
        old, st = shape[i - pad], strides[i - pad]
        if s == -1:
            s = old
        if old == s:
            new_shape.append(s)
            new_strides.append(st)
        elif old == 1:
            new_shape.append(s)
            new_strides.append(0)
        else:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({old}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(size)}.  Tensor sizes: "
                               f"{list(shape)}")
    return tuple(new_shape), tuple(new_strides), offset


def unsqueeze(shape, strides, offset, dim):
    d = wrap_dim(dim, len(shape) + 1)
    st = strides[d] * shape[d] if d < len(shape) else 1
    return shape[:d] + (1,) + shape[d:], strides[:d] + (st,) + strides[d:], offset


def squeeze(shape, strides, offset, dim=None):
    dims = wrap_dims(dim, len(shape)) if dim is not None else tuple(range(len(shape)))
    keep = [i for i in range(len(shape)) if not (i in dims and shape[i] == 1)]
    return tuple(shape[i] for i in keep), tuple(strides[i] for i in keep), offset


def select(shape, strides, offset, dim, index):
    if len(shape) == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape))
    index = index.__index__()
    size = shape[d]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(shape)} at dimension {d}")
    index = index + size if index < 0 else index
    return shape[:d] + shape[d + 1:], strides[:d] + strides[d + 1:], offset + index * strides[d]


def slice_dim(shape, strides, offset, dim=0, start=None, end=None, step=1):
    """One-dim slice start:end:step (Python's clamping; PyTorch's storage offset, even when empty)."""
    if len(shape) == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape))
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start, stop, step = slice(start, end, step).indices(shape[d])
    n = max(0, (stop - start + step - 1) // step)
    new_shape = shape[:d] + (n,) + shape[d + 1:]
    new_strides = strides[:d] + (strides[d] * step,) + strides[d + 1:]
    return new_shape, new_strides, offset + start * strides[d]


slice_ = slice_dim


def narrow(shape, strides, offset, dim, start, length):
    if len(shape) == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape))
    size = shape[d]
    start = start.__index__()
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return slice_dim(shape, strides, offset, d, start, start + length, 1)


def diagonal(shape, strides, offset, offset_=0, dim1=0, dim2=1):
    n = len(shape)
    d1, d2 = wrap_dim(dim1, n), wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if offset_ >= 0:
        size = max(0, min(shape[d1], shape[d2] - offset_))
        off = offset + (offset_ * strides[d2] if size else 0)
    else:
        size = max(0, min(shape[d1] + offset_, shape[d2]))
        off = offset + (-offset_ * strides[d1] if size else 0)
    keep = [i for i in range(n) if i not in (d1, d2)]
    return (tuple(shape[i] for i in keep) + (size,), tuple(strides[i] for i in keep) + (strides[d1] + strides[d2],),
            off)


def unfold(shape, strides, offset, dimension, size, step):
    d = wrap_dim(dimension, len(shape))
    full = shape[d] if shape else 1
    if size > full:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {full} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    n = (full - size) // step + 1
    if not shape:
        return (size,), (1,), offset
    return (shape[:d] + (n,) + shape[d + 1:] + (size,), strides[:d] + (strides[d] * step,) + strides[d + 1:]
            + (strides[d],), offset)


def movedim(shape, strides, offset, source, destination):
    n = len(shape)
    src = [wrap_dim(s, n) for s in ((source,) if hasattr(source, "__index__") else source)]
    dst = [wrap_dim(s, n) for s in ((destination,) if hasattr(destination, "__index__") else destination)]
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                           f"contain the same number of dims as destination ({list(dst)} dims)")
    for name, ds in (("source", src), ("destination", dst)):
        if len(set(ds)) != len(ds):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(ds)})")
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(n) if i not in src)
    order = [o if o is not None else next(rest) for o in order]
    return permute(shape, strides, offset, order)


def as_strided(shape, strides, offset, size, stride, storage_offset=None):
    size, stride = _sizes(size), _sizes(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(st < 0 for st in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    if storage_offset is not None and storage_offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {storage_offset}")
    return tuple(size), tuple(stride), offset if storage_offset is None else storage_offset


def storage_extent(shape, strides, offset):
    """Elements of storage a view needs: one past its last element (0 for an empty view)."""
    if numel(shape) == 0:
        return 0
    return offset + sum((s - 1) * st for s, st in zip(shape, strides)) + 1


def flatten_shape(shape, start_dim=0, end_dim=-1):
    n = len(shape)
    if n == 0:
        return (1,)
    s, e = wrap_dim(start_dim, n), wrap_dim(end_dim, n)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    return shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:]


def contiguous_array(a):
    """a as a C-contiguous NumPy array, copying only when needed (np.ascontiguousarray turns 0-d into 1-d)."""
    return a if a.flags.c_contiguous else np.array(a, order="C")


def collapse_operands(shape, tensors):
    """Contiguous output of `shape` and each tensor broadcast to it, dimension-collapsed: (collapsed shape, a
    list of (storage array, offset, collapsed strides) per tensor); at least 1-D, as the strided kernels index."""
    strides = [contiguous_strides(shape)] + [broadcast_strides(t._shape, t._strides, shape) for t in tensors]
    cshape, cstrides = collapse(shape, strides)
    if not cshape:
        cshape, cstrides = (1,), [(0,)] * len(strides)
    return cshape, [(t._storage.data, t._offset, st) for t, st in zip(tensors, cstrides[1:])]


# ---------------------------------------------------------------- views that read the bytes as another dtype
# (shape, strides, offset, dtype) -> (shape, strides, offset, dtype of the view); the dispatcher's view() gives
# the view an alias of the storage in that dtype (reftorch/_tensor.py reinterpreted). Strides are in elements of
# the view's dtype: a complex element is two floats.

def _complex_parts(shape, strides, offset, dtype, part):
    return tuple(shape), tuple(2 * s for s in strides), 2 * offset + part, dtype.to_real()


def real(shape, strides, offset, dtype):
    if not dtype.is_complex:
        return tuple(shape), tuple(strides), offset, dtype
    return _complex_parts(shape, strides, offset, dtype, 0)


def imag(shape, strides, offset, dtype):
    if not dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _complex_parts(shape, strides, offset, dtype, 1)


def view_as_real(shape, strides, offset, dtype):
    if not dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    shape, strides, offset, real_dtype = _complex_parts(shape, strides, offset, dtype, 0)
    return shape + (2,), strides + (1,), offset, real_dtype


def view_as_complex(shape, strides, offset, dtype):
    if dtype.name not in ("float32", "float64"):
        raise RuntimeError("view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {dtype.short}")
    if not shape or shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return tuple(shape[:-1]), tuple(s // 2 for s in strides[:-1]), offset // 2, dtype.to_complex()


REINTERPRET = {"real": real, "imag": imag, "view_as_real": view_as_real, "view_as_complex": view_as_complex}
