"""Creation functions: tensor, zeros, arange, rand... and the seeded random generator."""
from __future__ import annotations

import collections.abc
import math
import numbers
import warnings

import numpy as np

from ._layout import contiguous_array as _contig

import reftorch._alloc as _alloc
from ._args import check_space_args
import reftorch._dtype as D
import reftorch._layout as L
import reftorch._meta as _meta
from ._device import as_device
from ._tensor import Storage, Tensor
import reftorch.autograd.grad_mode as grad_mode
from ._cuda_dispatch import from_host
from ._cuda_dispatch import clone


_GRAD_DTYPE_ERROR = "Only Tensors of floating point and complex dtype can require gradients"


def _finish(arr, dtype, device=None, requires_grad=False):
    if requires_grad and dtype.category < 2:
        raise RuntimeError(_GRAD_DTYPE_ERROR)
    dev = as_device(device)
    if dev.type == "meta":      # the geometry only (reftorch/_meta.py)
        return _on_meta(arr.shape, dtype, requires_grad)
    arr = _contig(arr)
    if dtype is D.complex32 and arr.dtype != D.CHALF_NP:    # values computed in dtype.host (complex64)
        arr = D.to_chalf(arr)
    if dev.type == "cuda":
        t = from_host(arr, dtype, dev)
        if requires_grad:
            t.requires_grad_(True)
        return t
    t = Tensor._make(Storage(arr.reshape(-1)), 0, tuple(arr.shape), L.contiguous_strides(arr.shape), dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


_SCALAR_ERRORS = {"float": "must be real number, not {}", "complex": "must be real number, not {}", "bool": "'{}' object cannot be interpreted as an integer",
                  "int": "'{}' object cannot be interpreted as an integer"}


def _is_sequence(x):
    """What PyTorch's tensor() walks into: sequences (list, tuple, range, deque, Size ...) and arrays."""
    return isinstance(x, (collections.abc.Sequence, np.ndarray, Tensor)) and not isinstance(x, (str, bytes))


def _leaf_dtype(x):
    """The dtype PyTorch infers for one element: Python numbers by kind, NumPy scalars and tensors their own."""
    if isinstance(x, Tensor):
        return x.dtype
    if isinstance(x, (np.generic, np.ndarray)):
        return D.from_numpy(x.dtype)
    if isinstance(x, bool):
        return D.bool_
    if isinstance(x, int):
        return D.int64
    if isinstance(x, float):
        return D.defaults.float
    if isinstance(x, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
    if isinstance(x, complex):
        return D.default_complex()
    raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


def _infer_dtype(data):
    """PyTorch's inference: the promotion of every element's dtype; an empty sequence is the default float."""
    if isinstance(data, (Tensor, np.ndarray, np.generic)) or not _is_sequence(data):
        return _leaf_dtype(data)
    result = None
    for x in data:
        if isinstance(x, str):
            raise ValueError("too many dimensions 'str'")
        d = _infer_dtype(x)
        result = d if result is None else D.promote_types(result, d)
    return D.defaults.float if result is None else result


def _sizes(data):
    """The shape, read off the first element of each level (as PyTorch does)."""
    shape = []
    x = data
    while _is_sequence(x) and not isinstance(x, Tensor):     # a tensor element is a scalar (item())
        if isinstance(x, np.ndarray) and x.ndim == 0:
            raise TypeError("len() of unsized object")
        n = len(x)
        shape.append(n)
        if len(shape) > 64:
            raise ValueError(f"too many dimensions '{type(x).__name__}'")
        if n == 0:
            break
        x = x[0]
    return shape


def _flatten(x, shape, dim, out, kind):
    """Append the leaves of x (which must have shape[dim:]) to out, with PyTorch's errors for ragged data."""
    if dim == len(shape):
        if isinstance(x, Tensor):
            if x.numel() != 1:
                if x.dtype.category == 1:
                    raise TypeError("only integer tensors of a single element can be converted to an index")
                raise ValueError("only one element tensors can be converted to Python scalars")
            out.append(x.item())
        elif _is_sequence(x) and not (isinstance(x, np.ndarray) and x.ndim == 0):
            raise TypeError(_SCALAR_ERRORS[kind].format(type(x).__name__))
        else:
            out.append(x.item() if isinstance(x, np.ndarray) else x)
        return
    if not _is_sequence(x):
        raise TypeError("not a sequence")
    if isinstance(x, np.ndarray) and x.ndim == 0:
        raise TypeError("len() of unsized object")
    if len(x) != shape[dim]:
        raise ValueError(f"expected sequence of length {shape[dim]} at dim {dim} (got {len(x)})")
    if shape[dim] == 0:
        return
    for y in x:
        _flatten(y, shape, dim + 1, out, kind)


_PY_SCALARS = {float, int, bool, complex}


def _python_scalars(data):
    """The set of leaf types when data is a list (or tuple) of Python numbers, or a list of such rows; else None."""
    if not isinstance(data, (list, tuple)):
        return None
    types = set(map(type, data))
    if types <= _PY_SCALARS:
        return types
    if types <= {list, tuple}:
        leaves = set()
        for row in data:
            sub = set(map(type, row))
            if not sub <= _PY_SCALARS:
                return None
            leaves |= sub
        return leaves
    return None


def _fast_array(data, dt):
    """np.array of Python numbers in dtype dt when it needs no checks PyTorch makes (None: take the slow path)."""
    try:
        if dt.category == 3:
            return np.array(data, dtype=np.complex128).astype(dt.host)
        if dt.category == 2:
            return np.array(data, dtype=np.float64).astype(dt.np)
        arr = np.array(data)
    except (ValueError, OverflowError, TypeError):
        return None
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        return None
    if dt.category == 0:
        return arr.astype(bool)
    if arr.dtype.kind == "f":
        return None                     # float values into an integer dtype: checked on the slow path
    lo, hi = _int_range(dt)
    if arr.size and (arr.min() < lo or arr.max() > hi):
        return None
    return arr.astype(dt.np)


def _int_range(dt):
    """The Python values PyTorch's checked conversion lets into an integer dtype (unsigned ones wrap negatives)."""
    info = np.iinfo(dt.np)
    lo = -int(info.max) if info.min == 0 else int(info.min)
    return lo, int(info.max)


def _convert(values, shape, dt):
    """values (a flat list of Python numbers) as an array of dtype dt, with PyTorch's overflow checks."""
    if dt.category < 3 and any(isinstance(v, complex) for v in values):     # Python's own refusals, as PyTorch's
        if dt.category == 0:
            return (np.array(values, dtype=np.complex128) != 0).reshape(shape)
        raise TypeError(_SCALAR_ERRORS[D.FAMILIES[dt.category]].format("complex"))
    if dt.category == 1:
        if any(isinstance(v, int) and not -2 ** 63 <= v < 2 ** 63 for v in values):
            raise ValueError("Overflow when unpacking long long")
        arr = np.array(values, dtype=np.float64 if any(isinstance(v, float) for v in values) else np.int64)
        lo, hi = _int_range(dt)
        if arr.dtype == np.float64:
            lo = max(lo, 0) if np.iinfo(dt.np).min == 0 else lo
            bad = np.isnan(arr) | (arr < lo) | (arr > hi)
        else:
            bad = (arr < lo) | (arr > hi)
        if bad.any():
            raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")
        with np.errstate(invalid="ignore"):
            arr = arr.astype(np.int64).astype(dt.np) if arr.dtype == np.float64 else arr.astype(dt.np)
    elif dt.category == 3:
        arr = np.array(values, dtype=np.complex128).astype(dt.host)
    elif dt.category == 0:
        arr = np.array(values, dtype=np.float64).astype(bool)
    else:
        with np.errstate(over="ignore"):
            arr = np.array(values, dtype=np.float64).astype(dt.np)
    return arr.reshape(shape)


_COPY_WARNING = ("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                 "sourceTensor.detach().clone().requires_grad_(True), rather than {}(sourceTensor).")


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of data (nested sequences, scalars, NumPy arrays or tensors)."""
    dt = _dtype_arg("tensor", dtype)
    if isinstance(data, Tensor):
        warnings.warn(_COPY_WARNING.format("torch.tensor"), UserWarning, stacklevel=2)
    return _from_data(data, dt, device, requires_grad)


def _from_data(data, dt, device, requires_grad):
    """tensor()'s conversion (dt None: inferred); new_tensor and the legacy constructors share it."""
    if isinstance(data, Tensor):
        arr = data.detach()._array().copy()
        dt = dt or data.dtype
        return _finish(arr.astype(dt.host, copy=False), dt, device if device is not None else data.device,
                       requires_grad)
    if isinstance(data, (np.ndarray, np.generic)):
        src = D.from_numpy(data.dtype)
        dt = dt or src
        return _finish(np.array(data, dtype=dt.host), dt, device, requires_grad)
    fast = _python_scalars(data)
    if fast is not None:        # nested lists of Python numbers only: NumPy builds it (ragged data: the walk below)
        dt = dt or (D.default_complex() if complex in fast else D.defaults.float if float in fast else D.int64 if int in fast else D.bool_ if fast else
                    D.defaults.float)
        arr = _fast_array(data, dt)
        if arr is not None:
            return _finish(arr, dt, device, requires_grad)
    if dt is None:
        dt = _infer_dtype(data)
    shape = _sizes(data)
    values = []
    if 0 not in shape:      # PyTorch stores (and checks) the elements only when there are any
        _flatten(data, shape, 0, values, D.FAMILIES[dt.category])
    return _finish(_convert(values, tuple(shape), dt), dt, device, requires_grad)


def as_tensor(data, dtype=None, device=None):
    dt = _dtype_arg("as_tensor", dtype)
    if isinstance(data, Tensor):
        if device is not None and as_device(device) != data.device:
            return data.to(device, dt)
        return data if dt is None or dt is data.dtype else data.to(dt)
    if isinstance(data, np.ndarray) and (dt is None or dt.np == data.dtype) and device is None:
        return from_numpy(data)
    return _from_data(data, dt, device, False)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """obj as a tensor, sharing memory with a tensor or an array whenever dtype and device allow (copy=None),
    always copying (copy=True), or never (copy=False: raises when it cannot alias)."""
    dt = _dtype_arg("asarray", dtype)
    dev = as_device(device) if device is not None else None
    if isinstance(obj, Tensor) or isinstance(obj, np.ndarray):
        src_dt = obj.dtype if isinstance(obj, Tensor) else D.from_numpy(obj.dtype)
        src_dev = obj.device if isinstance(obj, Tensor) else as_device("cpu")
        same = (dt is None or dt is src_dt) and (dev is None or dev == src_dev)
        if copy is False and not same:
            if dt is not None and dt is not src_dt:
                raise ValueError(f"can't alias tensor with dtype '{src_dt.short}' into dtype '{dt.short}'.")
            raise ValueError(f"can't alias tensor on device '{src_dev}' into device '{dev}'.")
        t = obj if isinstance(obj, Tensor) else from_numpy(obj)
        if copy or not same:
            t = t.to(device=dev or src_dev, dtype=dt or src_dt, copy=True)
        if requires_grad and not t.requires_grad:
            t.requires_grad_(True)
        return t
    if not _is_sequence(obj) and hasattr(obj, "__array__"):
        return asarray(np.asarray(obj), dtype=dtype, device=device, copy=copy, requires_grad=requires_grad)
    if copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    return _from_data(obj, dt, dev, requires_grad)


def from_numpy(arr):
    """A tensor sharing memory with a NumPy array."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    return Tensor._from_array(arr)


def from_dlpack(ext_tensor):
    """A tensor sharing memory with an object that exports DLPack (__dlpack__: a NumPy array, a cpu tensor of
    reftorch or PyTorch ...), read through NumPy's importer."""
    return Tensor._from_array(np.from_dlpack(ext_tensor))


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A 0-d tensor holding s, of the default dtype unless told otherwise (as torch.scalar_tensor)."""
    dt = _dtype_arg("scalar_tensor", dtype) or D.defaults.float
    if isinstance(s, Tensor):
        s = s.item()
    return _finish(np.array(s, dtype=dt.host).reshape(()), dt, device, requires_grad)


def wrapped_scalar(v, dtype=None):
    """A Python number as the 0-d operand of an op: its dtype from its kind unless given (the dispatcher's)."""
    dt = D.as_dtype(dtype) if dtype is not None else D.scalar_default(D.scalar_category(v))
    return _finish(np.array(v, dtype=dt.host).reshape(()), dt, "cpu")   # cpu whatever the default device: a number
    #                                                                       mixes with tensors of any device


def _dtype_arg(fname, dtype):
    """A dtype argument as PyTorch parses it: a dtype, or Python's float, int, bool (float means float64)."""
    if dtype is None or isinstance(dtype, D.dtype):
        return dtype
    py = {float: D.float64, int: D.int64, bool: D.bool_}.get(dtype) if isinstance(dtype, type) else None
    if py is None:
        raise TypeError(f"{fname}(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    return py


def _size_items(fname, size):
    out = []
    for i, s in enumerate(size):
        if isinstance(s, Tensor) and s.dim() == 0 and not s.dtype.is_floating_point:
            s = int(s)
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise TypeError(f"{fname}(): argument 'size' failed to unpack the object at pos {i + 1} with error "
                            f"\"type must be tuple of ints,but got {type(s).__name__}\"")
        if not -2 ** 63 <= s < 2 ** 63:       # PyTorch's sizes are int64
            raise TypeError(f"{fname}(): argument 'size' failed to unpack the object at pos {i + 1} with error "
                            "\"Overflow when unpacking long long\"")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


def _size_args(fname, args, size=None):
    """The size of a factory: varargs ints (zeros(2, 3)), one sequence (zeros((2, 3))) or size=..."""
    if size is not None:
        if args:
            raise TypeError(f"{fname}() got multiple values for argument 'size'")
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"{fname}(): argument 'size' must be tuple of ints, not {type(size).__name__}")
        return _size_items(fname, size)
    if not args:
        raise TypeError(f'{fname}() missing 1 required positional arguments: "size"')
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return _size_items(fname, args[0])
    if len(args) > 1 and any(isinstance(a, (tuple, list)) for a in args):
        raise TypeError(f"{fname}() takes 1 positional argument but {len(args)} were given")
    if len(args) == 1 and (isinstance(args[0], bool) or not isinstance(args[0], (numbers.Integral, Tensor))):
        raise TypeError(f"{fname}(): argument 'size' (position 1) must be tuple of ints, not {type(args[0]).__name__}")
    return _size_items(fname, args)


def _sequence_size(fname, size):
    """A size that must be a sequence (full(size, v), new_full ...)."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{fname}(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    return _size_items(fname, size)


def _out_dtype(fname, dtype, out, default=None):
    """The dtype a factory makes: dtype=, else out's, else the default; an out of another dtype is an error."""
    dt = _dtype_arg(fname, dtype)
    if out is not None:
        if dt is not None and dt is not out.dtype:
            raise RuntimeError(f"dtype {dt.short} does not match dtype of out parameter ({out.dtype.short})")
        return out.dtype
    return dt or default or D.defaults.float


def _into(fname, out, t, keep_numel=False):
    """A factory's out=: out is resized to t's shape (keeping its strides when the shape is the same) and
    takes t's values. keep_numel (arange, linspace, logspace): an out with as many elements as
    the result keeps its shape, as in PyTorch."""
    if out is None:
        return t
    if keep_numel and out.numel() == t.numel():
        t = t.reshape(out._shape)
    if grad_mode.state.enabled and out.requires_grad:
        raise RuntimeError(f"aten::{fname}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    out.resize_(t._shape)
    with grad_mode.no_grad():
        out.copy_(t)
    return out


def _no_elements(shape, dt, device, requires_grad):
    """A factory's result without elements where NumPy cannot describe the shape (torch.empty(2**62, 0): a dim
    times the itemsize past NumPy's limit), as PyTorch has it: empty storage, PyTorch's contiguous strides."""
    _alloc.check(shape, dt.itemsize)      # a size or a stride past int64 still raises PyTorch's error
    t = Tensor._make(Storage(np.empty(0, dt.np)), 0, tuple(shape), L.contiguous_strides(shape), dt)
    if as_device(device).type != "cpu":
        t = t.to(device)
    return _grad(t, requires_grad)


def _numpy_holds(shape, dt):
    try:
        np.empty(shape, dt.np)
        return True
    except ValueError:
        return False


def empty(*args, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None):
    shape = _size_args("empty", args, size)
    dt = _out_dtype("empty", dtype, out)
    if out is None and _meta_device(device):
        return _on_meta(shape, dt, requires_grad)
    if out is None and 0 in shape and not _numpy_holds(shape, dt):
        return _no_elements(shape, dt, device, requires_grad)
    with _alloc.sized(shape, dt.itemsize):      # PyTorch's errors for sizes no memory holds (reftorch/_alloc.py)
        arr = np.empty(shape, dt.np)
    if out is not None:
        _into("empty", out, _finish(arr, dt))  # the values are unspecified either way
        return out
    return _finish(arr, dt, device, requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    shape = _sequence_size("empty_strided", size)
    strides = tuple(int(s) for s in stride)
    if len(strides) != len(shape):
        raise RuntimeError(f"mismatch in length of strides and shape")
    dt = _dtype_arg("empty_strided", dtype) or D.defaults.float
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
    with _alloc.sized((extent,), dt.itemsize):
        storage = Storage(np.empty(extent, dt.np))
    t = Tensor._make(storage, 0, shape, strides, dt)
    if device is not None and as_device(device).type != "cpu":
        t = t.to(device)
    return _grad(t, requires_grad)


def zeros(*args, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    shape = _size_args("zeros", args, size)
    dt = _out_dtype("zeros", dtype, out)
    if out is None and _meta_device(device):
        return _on_meta(shape, dt, requires_grad)
    if out is None and 0 in shape and not _numpy_holds(shape, dt):
        return _no_elements(shape, dt, device, requires_grad)
    with _alloc.sized(shape, dt.itemsize):
        arr = np.zeros(shape, dt.np)
    return _into("zeros", out, _finish(arr, dt, device if out is None else None, requires_grad))


def ones(*args, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    shape = _size_args("ones", args, size)
    dt = _out_dtype("ones", dtype, out)
    if out is None and _meta_device(device):
        return _on_meta(shape, dt, requires_grad)
    if out is None and 0 in shape and not _numpy_holds(shape, dt):
        return _no_elements(shape, dt, device, requires_grad)
    with _alloc.sized(shape, dt.itemsize):
        arr = np.ones(shape, dt.host)
    return _into("ones", out, _finish(arr, dt, device if out is None else None, requires_grad))


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    shape = _sequence_size("full", size)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    default = D.scalar_default(D.scalar_category(fill_value))
    dt = _out_dtype("full", dtype, out, default)
    fill_value = D.fill_value(fill_value, dt)
    if out is None and _meta_device(device):
        return _on_meta(shape, dt, requires_grad)
    if out is None and 0 in shape and not _numpy_holds(shape, dt):
        return _no_elements(shape, dt, device, requires_grad)
    with _alloc.sized(shape, dt.itemsize):
        arr = np.full(shape, fill_value, dt.host)
    return _into("full", out, _finish(arr, dt, device if out is None else None, requires_grad))


def _like(fn, t, *args, dtype=None, device=None, requires_grad=False, memory_format=None, **kw):
    return fn(t.shape, *args, dtype=dtype if dtype is not None else t.dtype, requires_grad=requires_grad,
              device=device if device is not None else t.device)


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
               pin_memory=False):
    return _like(zeros, input, dtype=_dtype_arg("zeros_like", dtype), requires_grad=requires_grad, device=device)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
              pin_memory=False):
    return _like(ones, input, dtype=_dtype_arg("ones_like", dtype), requires_grad=requires_grad, device=device)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
               pin_memory=False):
    return _like(empty, input, dtype=_dtype_arg("empty_like", dtype), requires_grad=requires_grad, device=device)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None,
              pin_memory=False):
    dt = _dtype_arg("full_like", dtype)
    return full(input.shape, fill_value, dtype=dt if dt is not None else input.dtype,
                requires_grad=requires_grad, device=device if device is not None else input.device)


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
           pin_memory=False):
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if vals[2] == 0:
        raise RuntimeError("step must be nonzero")
    default = D.defaults.float if any(isinstance(v, float) for v in vals) else D.int64
    dt = _out_dtype("arange", dtype, out, default)
    if dt.is_complex:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dt.short}'")
    arr = _arange_values(*vals, dt)
    n = arr.shape[0]
    t = _finish(arr.astype(dt.np), dt, device if out is None else None, requires_grad)
    if out is not None and out.numel() != n and out.numel() > 0:
        warnings.warn(f"The number of elements in the out tensor of shape [{', '.join(map(str, out._shape))}] is "
                      f"{out.numel()} which does not match the computed number of elements {n}. Note that this may "
                      f"occur as a result of rounding error. The out tensor will be resized to a tensor of shape "
                      f"({n},).", UserWarning, stacklevel=2)
    return _into("arange", out, t, keep_numel=True)


def _arange_values(start, end, step, dt):
    """PyTorch's arange: the length in double (int64: in integers, from the truncated bounds), the values
    start + i * step in double (integer dtypes: from the truncated start and step)."""
    for v in (start, end):
        if isinstance(v, float) and not math.isfinite(v):
            raise RuntimeError(f"unsupported range: {_num(start)} -> {_num(end)}")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dt.category == 2:
        n = max(math.ceil((end - start) / step), 0)
        with _alloc.sized((n,), dt.itemsize):
            return start + np.arange(n, dtype=np.float64) * step
    xs, xe, xt = int(start), int(end), int(step)        # C++'s casts: toward zero
    if dt is D.int64:
        if xt == 0:
            raise ValueError("step must be nonzero")
        sgn = (xt > 0) - (xt < 0)
        q = xe - xs + xt - sgn
        n = abs(q) // abs(xt) * (1 if (q >= 0) == (xt > 0) else -1)     # C's truncating division
    else:
        n = math.ceil((end - start) / step)
    with _alloc.sized((max(n, 0),), 8):
        return xs + np.arange(max(n, 0), dtype=np.int64) * xt


def _num(v):
    return f"{v:g}" if isinstance(v, float) else str(v)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    steps = check_space_args("linspace", start, end, steps)
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, steps)]
    dt = _out_dtype("linspace", dtype, out, D.scalar_default(3) if any(isinstance(v, complex) for v in vals) else None)
    _no_bool(dt, "linspace")
    _no_chalf(dt, "linspace")
    t = _finish(_linspace_values(*vals, dt), dt, device if out is None else None, requires_grad)
    return _into("linspace", out, t, keep_numel=True)


def _linspace_values(start, end, steps, dt):
    """PyTorch's cpu linspace: step = (end - start) / (steps - 1) in the dtype (double for integers); the first
    half counts up from start, the second half down from end."""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    steps = int(steps)
    _alloc.check((steps,), dt.itemsize)
    ty = dt.np.type if dt.category >= 2 else np.float64
    if dt.category >= 2:
        s, e = ty(start), ty(end)
    else:               # start and end in the integer dtype first (wrapping), as PyTorch's kernel takes them
        s, e = (np.float64(v) for v in np.array([math.trunc(float(start)), math.trunc(float(end))]).astype(dt.np))
    if steps <= 1:
        return np.full(steps, s).astype(dt.np)
    with np.errstate(over="ignore", invalid="ignore"):
        step = (e - s) / ty(steps - 1)
        half = steps // 2
        lo = np.arange(half).astype(ty)
        hi = (steps - 1 - np.arange(half, steps)).astype(ty)
        # PyTorch's kernel fuses the multiply-add (one rounding): emulated in a wider type
        wide = _FMA_WIDE.get(ty) if dt.category == 2 else None
        if wide is not None:
            vals = np.concatenate([wide(s) + wide(step) * lo.astype(wide), wide(e) - wide(step) * hi.astype(wide)])
        else:
            vals = np.concatenate([s + step * lo, e - step * hi])
        return vals.astype(dt.np)


_FMA_WIDE = {np.float32: np.float64, np.float64: np.longdouble}


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    steps = check_space_args("logspace", start, end, steps, "float base = 10.0, ")
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    cplx = isinstance(start, complex) or isinstance(end, complex)
    dt = _out_dtype("logspace", dtype, out, D.scalar_default(3) if cplx else None)
    if cplx and not dt.is_complex:
        raise RuntimeError(f"torch.logspace(): inferred dtype {D.scalar_default(3).cpp} can't be safely cast to "
                           f"passed dtype {dt.short}")
    _no_bool(dt, "logspace")
    with _alloc.sized((steps,), dt.itemsize):
        if dt.is_complex:       # base ** (linspace's exponents) as exp(e log(base)) in the dtype, as c10's pow
            with np.errstate(all="ignore"):
                arr = np.exp(_linspace_values(start, end, steps, dt) * np.log(dt.np.type(base))).astype(dt.np)
        elif dt.category < 2:     # integer start and end, PyTorch's two-sided spacing, a C cast of the powers
            exps = _linspace_values(math.trunc(float(start)), math.trunc(float(end)), steps, D.float64)
            arr = np.trunc(np.power(float(base), exps)).astype(np.int64).astype(dt.np)
        else:
            arr = np.logspace(float(start), float(end), steps, base=base).astype(dt.np)
    t = _finish(arr, dt, device if out is None else None, requires_grad)
    return _into("logspace", out, t, keep_numel=True)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    dt = _out_dtype("eye", dtype, out)
    if dt is D.complex32:
        raise NotImplementedError("\"eye\" not implemented for 'ComplexHalf'")
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    with _alloc.sized((n, m if m is not None else n), dt.itemsize):
        arr = np.eye(n, m if m is not None else n, dtype=dt.np)
    t = _finish(arr, dt, device if out is None else None, requires_grad)
    return _into("eye", out, t)


# ----------------------------------------------------------------------------- internal

def _copy_tensor(t, keep_graph=True):
    """A contiguous copy; recorded as `clone` when grad mode records (keep_graph)."""
    if keep_graph and grad_mode.state.enabled and t.requires_grad:
        return t.clone()        # the recorded op, through the Tensor method (the op layer sits above this one)
    if t.device.type == "cuda":
        return clone(t)
    return _finish(t._array().copy() if t.dtype is not D.complex32 else D.to_chalf(t._array()), t.dtype)


def _zero_gradient(out, *inputs):
    """out, joined to those inputs that require grad with a zero gradient: PyTorch's bernoulli and normal are
    not reparameterised (their derivatives are zeros), yet their results require grad as any op's do.
    0 * sign(x) is 0 for every x (NaN and inf included), so the values are the sample's."""
    if not grad_mode.state.enabled:
        return out
    for t in inputs:
        if isinstance(t, Tensor) and t.requires_grad:
            out = out + t.sign() * 0        # recorded ops, through Tensor's methods (as _copy_tensor)
    return out


def _no_chalf(dt, name):
    if dt is D.complex32:       # (reftorch/_chalf.py: PyTorch's cpu kernels that refuse it)
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'ComplexHalf'")


def _no_bool(dt, name):
    if dt is D.bool_:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")


def _meta_device(device):
    """Whether a factory's tensor goes to meta: the filling ones then draw and fill nothing (as in PyTorch)."""
    return as_device(device).type == "meta"


def _on_meta(shape, dtype, requires_grad):
    return _meta.empty(shape, dtype).requires_grad_(requires_grad)


def _on_cuda(device):
    return device is not None and as_device(device).type == "cuda"


def _grad(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild(arr, dtype_name, requires_grad, device=None):
    t = from_numpy(arr.copy())
    if device is not None:
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t
