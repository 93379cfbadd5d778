"""An op call's arguments, device-independent: Python numbers and sequences as tensors, type promotion and
casts, kernel scalars, PyTorch's argument checks (in-place, index dtypes, extents), and the helpers that map a
flat tensor list back to the op's signature. Every back end and every kind of op shares these.
"""
from __future__ import annotations

import numpy as np

from ._cpu import cast as _cast, half_acc_dtype
import reftorch._dtype as D
import reftorch._layout as L
from ._spec import PROMOTED
from ._tensor import Storage, Tensor
import reftorch.autograd.grad_mode as grad_mode

sequence_tensor = None   # reftorch._creation.tensor (it sits above this module and registers itself): a list argument


_shape_info = {}        # shape -> (contiguous strides, numel)


def _info(shape):
    info = _shape_info.get(shape)
    if info is None:
        if len(_shape_info) > 4096:
            _shape_info.clear()
        info = _shape_info[shape] = (L.contiguous_strides(shape), L.numel(shape))
    return info


def as_tensor_arg(x, dtype=None):
    """Python scalars and sequences become tensors; scalars are marked 'wrapped' for promotion."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float, complex, np.number, np.bool_)):
        if dtype is None and isinstance(x, (float, np.floating)):
            dtype = D.float64       # a wrapped number keeps double precision (only its category promotes)
        elif dtype is None and isinstance(x, (complex, np.complexfloating)):
            dtype = D.complex128
        dt = D.as_dtype(dtype) if dtype is not None else D.scalar_default(D.scalar_category(x))
        t = Tensor._make(Storage(np.array(x, dtype=dt.np).reshape(-1)), 0, (), (), dt)   # on cpu whatever the
        t._wrapped = True       # default device: a number mixes with tensors of any device
        return t
    if isinstance(x, np.ndarray):
        return Tensor._from_array(x)
    return sequence_tensor(x)


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


def _result_dtypes(spec, ts):
    """(compute dtype, output dtype) of an elementwise op."""
    promotable = [t for t, ty in zip(ts, spec.tensor_types) if ty in PROMOTED]
    dt = promoted(spec, promotable)
    if spec.rejects:
        spec.check_inputs(promotable, dt)
    spec.check_dtype(dt)
    if spec.result in ("float", "real_float") and dt.category < 2:
        dt = D.defaults.float
    out = {"bool": D.bool_, "int64": D.int64}.get(spec.result, dt)
    if spec.result in ("real", "real_float"):   # a real function of a complex number (abs, angle)
        out = dt.to_real()
    return dt, out


def _operands(spec, ts, compute, cast=_cast):
    """Inputs converted for the kernel (by the back end's cast): promoted args to the compute dtype, masks to
    bool."""
    out = []
    for t, ty in zip(ts, spec.tensor_types):
        if ty == "Mask":
            out.append(cast(t, D.bool_))
        elif ty in PROMOTED:
            out.append(cast(t, compute))
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
        # a complex value is not integral either (PyTorch's alpha.isIntegral), so an integral result names it
        # a floating point number, and only a complex result takes one
        if isinstance(v, (float, np.floating, complex, np.complexfloating)) and dtype.category < 2:
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")
        if isinstance(v, (complex, np.complexfloating)) and dtype.category == 2:
            raise RuntimeError(f"For non-complex input tensors, argument {name} must not be a complex number.")
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
    v = D.fill_value(v, dtype)      # a complex one into a real kernel only without an imaginary part, as PyTorch
    if dtype.category == 2:
        return float(v)
    D.check_scalar_fits(v, dtype)
    if dtype.category == 1 and isinstance(v, float) and v != int(v):
        return v
    return int(v) if not isinstance(v, bool) else v


def _can_cast(src, dst):
    return src.category <= dst.category


INFERENCE_INPLACE = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to "
                     "get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for "
                     "more details.")


def check_inference_write(t):
    """An inference tensor is written in place only inside inference_mode."""
    if t._storage.inference and not grad_mode.state.inference:
        raise RuntimeError(INFERENCE_INPLACE)


def check_inplace(t):
    """PyTorch's checks before an in-place write that autograd may record."""
    if t._storage.inference and not grad_mode.state.inference:
        raise RuntimeError(INFERENCE_INPLACE)
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


OVERLAP = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
           "memory location. Please clone() the tensor before performing the operation.")


def _dense(t):
    """PyTorch's is_non_overlapping_and_dense: the elements fill one block of memory, in some order of the dims."""
    expected = 1
    for n, st in sorted(((n, st) for n, st in zip(t._shape, t._strides) if n != 1), key=lambda d: d[1]):
        if st != expected:
            return False
        expected *= n
    return True


def _byte_start(t):
    """Where t's first element sits in memory (its storage buffer's address, host or device, plus its offset)."""
    data = t._storage.data
    face = getattr(data, "__array_interface__", None) or getattr(data, "__cuda_array_interface__", None)
    return None if face is None else face["data"][0] + t._offset * t.dtype.itemsize


def overlap(a, b):
    """PyTorch's get_overlap_status of two tensors: "full" (the same tensor, or the same bytes with the same
    strides), "partial" (their bytes intersect otherwise), or None (apart, empty, or a layout that is not dense,
    which PyTorch calls too hard to tell and lets through)."""
    if a is b:
        return "full"
    if not (a.numel() and b.numel() and _dense(a) and _dense(b)):
        return None
    if getattr(a._storage, "owner", a._storage) is not getattr(b._storage, "owner", b._storage):
        return None         # two storages (PyTorch's is_alias_of), even over one NumPy array
    start_a, start_b = _byte_start(a), _byte_start(b)
    if start_a is None or start_b is None:
        return None
    end_a, end_b = start_a + a.numel() * a.dtype.itemsize, start_b + b.numel() * b.dtype.itemsize
    if start_a == start_b and end_a == end_b and a._strides == b._strides:
        return "full"
    return "partial" if start_a < end_b and start_b < end_a else None


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


def _check_extent(x, shape, strides, off):
    L.check_extent(shape, strides, off, x._storage.data.shape[0], x.dtype.itemsize)


# ---------------------------------------------------------------------------- reductions (every device)

def _acc_dtype(spec, dt):
    rule = spec.accumulate
    if dt.half and rule not in ("bool", "int64"):
        return half_acc_dtype(rule)
    if rule == "wide":
        return D.complex128 if dt.category == 3 else D.float64 if dt.category == 2 else D.int64
    if rule == "float64" and dt.category == 3:
        return D.complex128     # a complex scan's float64 is its complex128
    return {"float64": D.float64, "int64": D.int64, "bool": D.bool_}.get(rule, dt)


def _reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _identity(src, dtype):
    v = {"inf": np.inf, "-inf": -np.inf}.get(str(src))
    if v is None:
        v = complex(float(src)) if dtype.category == 3 else float(src) if dtype.category == 2 else \
            (bool(float(src)) if dtype.category == 0 else int(float(src)))
    return v


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


def check_space_args(name, start, end, steps, base=""):
    """PyTorch's parser and checks on linspace's and logspace's arguments: steps an int (a bool or a float is a
    TypeError naming the four overloads), start and end tensors 0-d, steps not negative."""
    if isinstance(steps, Tensor) and steps.ndim == 0 and steps.dtype.category == 1:
        steps = steps.item()
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool):
        got = ", ".join("Tensor" if isinstance(v, Tensor) else type(v).__name__ for v in (start, end, steps))
        rest = f"int steps, {base}*, Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, " \
               "torch.device device = None, bool pin_memory = False, bool requires_grad = False)\n"
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        + "".join(f" * ({a} start, {b} end, {rest}" for a, b in (("Tensor", "Tensor"),
                                  ("Number", "Tensor"), ("Tensor", "Number"), ("Number", "Number"))))
    dims = [f"{arg} with {v.ndim} dimension(s)" for arg, v in (("start", start), ("end", end)) if isinstance(v, Tensor)]
    if any(isinstance(v, Tensor) and v.ndim for v in (start, end)):
        raise RuntimeError(f"{name} only supports 0-dimensional start and end tensors, but got {' and '.join(dims)}.")
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return steps
