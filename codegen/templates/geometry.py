"""Strided geometry helpers shared by the view ops' `geometry:` bodies (ops.yaml) and the runtime's layout
module: shapes, contiguous strides, PyTorch's dim wrapping and size inference, and the stride rule by which a
tensor can be viewed at a new shape without a copy. Pure functions over tuples; copied verbatim to
reftorch/kernels/geometry.py by `python -m codegen`."""
import math


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


def storage_extent(shape, strides, offset):
    """Elements of storage a view needs: one past its last element (0 for an empty view)."""
    if numel(shape) == 0:
        return 0
    return offset + sum((s - 1) * st for s, st in zip(shape, strides)) + 1


def check_extent(shape, strides, offset, storage_size, itemsize):
    """PyTorch's setStorage error where a view (as_strided's) needs more storage than there is."""
    need = storage_extent(shape, strides, offset)
    if need > storage_size:
        raise RuntimeError(f"setStorage: sizes {list(shape)}, strides {list(strides)}, storage offset {offset}, and "
                           f"itemsize {itemsize} requiring a storage size of {need * itemsize} are out of bounds "
                           f"for storage of size {storage_size * itemsize}")


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


def size_tuple(size):
    """A size given as varargs or as one sequence (`view(2, 3)` / `view((2, 3))`) -> a tuple."""
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


def flatten_shape(shape, start_dim=0, end_dim=-1):
    n = len(shape)
    if n == 0:
        return (1,)
    s, e = wrap_dim(start_dim, n), wrap_dim(end_dim, n)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    return shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:]
