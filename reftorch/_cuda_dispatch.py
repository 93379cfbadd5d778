"""Tensors on `cuda`: their storage, transfers, and the dispatcher's handlers for them.

A cuda tensor's Storage.data is a 1-D numba.cuda device array (the simulator's, under
NUMBA_ENABLE_CUDASIM=1); offset, shape and strides mean what they mean on cpu, so view ops are the
same geometry. The handlers of reftorch/_dispatch.py delegate here when an argument lives on cuda
(`used` stays False until the first cuda tensor exists, so cpu-only programs pay one flag test):

- elementwise ops (and the fused backward kernels) run the generated kernels of reftorch/kernels/cuda.py
  through reftorch/_cuda_launch.py; reductions, arg-reductions and scans likewise (tree kernels);
- array ops that name a device implementation in ops.yaml (`cuda: tiled_matmul`, ...: IMPLS below) run it:
  the tiled shared-memory matmul, gathers and scatters by flat positions;
- the other array ops (NumPy bodies: cat, gather, sort, indexing...) run their CPU body on a host copy
  and upload the result (a round trip: correct, not fast);
- random numbers come from a counter-based generator (reftorch/_cuda_random.py);
- float16/bfloat16 tensors keep uint16 device arrays of bit patterns (`device_np`): their ops run the kernels
  of reftorch/kernels/cuda_half.py (float32 compute, round to nearest even on store), and casts into or out
  of them its conversion kernels (`convert`).

Importing this module does not import numba.cuda; the first cuda tensor does.
"""
from __future__ import annotations

import numpy as np

import reftorch._dtype as D
import reftorch._layout as L
from ._tensor import HOST_COPIES, Storage, Tensor, numpy_error  # noqa: F401 (numpy_error: the back end's)
import reftorch.autograd.grad_mode as grad_mode
from ._args import ReductionCall, _operands, _acc_dtype, _identity, _kernel_scalars, _reduced_shape, _result_dtypes, _tensor_names, as_tensor_arg, promoted
from ._cpu import empty as cpu_empty, new_tensor, run_elementwise as cpu_run
from ._spec import PROMOTED, SPECS
import reftorch._cuda_launch as launch
import reftorch.cuda as cuda
from ._device import canonical, check_available, device
from .autograd.graph import Node
from .autograd.graph import gradient_edge
from ._lazy import lazy_module

_cuda_index = lazy_module("reftorch._cuda_index")      # its kernels: on the first cuda index

used = False     # set once a tensor off the cpu exists (cuda here, meta in reftorch/_meta.py): the dispatcher's fast test


def _cu():
    return launch.kernels().cuda


def _launch():
    return launch


# ---------------------------------------------------------------------------- devices

def _mix_error(dev):
    return RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, {dev} and "
                        "cpu!")


def find(tensors, lenient=()):
    """The cuda device of the arguments, or None when none is on cuda. Raises PyTorch's error when a
    cpu tensor of one or more dims meets a cuda one (0-d cpu tensors mix, like Python numbers).
    Arguments at positions in `lenient` (index tensors of array ops) may stay on cpu."""
    cuda_dev = None
    cpu = False
    for i, t in enumerate(tensors):
        items = t if isinstance(t, (list, tuple)) else (t,)
        for x in items:
            if not isinstance(x, Tensor):
                continue
            if x.device.type == "cuda":
                if cuda_dev is None:
                    cuda_dev = x.device
            elif x._shape and i not in lenient:
                cpu = True
    if cuda_dev is not None and cpu:
        raise _mix_error(cuda_dev)
    return cuda_dev


# ---------------------------------------------------------------------------- storage and transfers

def device_np(dtype):
    """The NumPy dtype of a cuda storage: uint16 bit patterns for the 16-bit floats (no device type needed)."""
    return np.uint16 if dtype.half else dtype.np


def from_host(arr, dtype, dev):
    """A contiguous cuda tensor holding a copy of the NumPy array."""
    global used
    used = True
    if dtype.half:
        with np.errstate(over="ignore", invalid="ignore"):     # out of range rounds to inf, as .to() does
            arr = np.asarray(arr, dtype=dtype.np)
    else:
        arr = np.asarray(arr, dtype=dtype.np)
    if not arr.flags.c_contiguous:      # (np.ascontiguousarray would make a 0-d array 1-d)
        arr = arr.copy()
    flat = arr.reshape(-1)
    data = _cu().to_device(flat.view(np.uint16) if dtype.half else flat)
    return Tensor._make(Storage(data), 0, tuple(arr.shape), L.contiguous_strides(arr.shape), dtype,
                        canonical(dev))


def empty(shape, dtype, dev):
    global used
    used = True
    n = L.numel(shape)
    data = _cu().device_array(n, dtype=device_np(dtype))
    return Tensor._make(Storage(data), 0, tuple(shape), L.contiguous_strides(shape), dtype, canonical(dev))


def _extent(t):
    """[lo, hi) of the storage elements the view reads."""
    lo = hi = t._offset
    for n, st in zip(t._shape, t._strides):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + 1


def host_array(t):
    """A NumPy copy of a cuda tensor's view (read-only: writes must go through the device)."""
    if 0 in t._shape:
        return np.empty(t._shape, t.dtype.np)
    lo, hi = _extent(t)
    chunk = t._storage.data[lo:hi].copy_to_host()
    if t.dtype.half:
        chunk = chunk.view(t.dtype.np)
    isz = chunk.itemsize
    arr = np.ndarray(t._shape, chunk.dtype, chunk, (t._offset - lo) * isz, tuple(s * isz for s in t._strides))
    arr.flags.writeable = False
    return arr


HOST_COPIES["cuda"] = host_array


def to_cpu(t):
    """A cpu copy (no history)."""
    return new_tensor(np.array(host_array(t), order="C"), t.dtype)


_scalars = {}   # (dtype, device, bytes) -> the number on the device: a Python number is uploaded once


def _on(dev, t):
    """t on the device: cpu 0-d tensors (and wrapped numbers) are copied over, keeping their flags."""
    if t is None or not isinstance(t, Tensor) or t.device.type == "cuda":
        return t
    if t._wrapped and not t._shape and not t.requires_grad:     # never written: safe to share
        key = (t.dtype, dev, t._array().tobytes())
        out = _scalars.get(key)
        if out is None:
            if len(_scalars) >= 4096:
                _scalars.clear()
            out = _scalars[key] = from_host(t._array(), t.dtype, dev)
            out._wrapped = True
        return out
    out = move(t, dev) if t.requires_grad and grad_mode.state.enabled else from_host(t._array(), t.dtype, dev)
    out._wrapped = t._wrapped
    return out


def moved_inputs(tensors, outs):
    """The inputs a cuda op's node records: a cpu 0-d tensor that requires grad as the device copy the op read
    (its gradient flows back through the move, to the cpu, as in PyTorch)."""
    dev = next((o.device for o in outs if isinstance(o, Tensor) and o.device.type == "cuda"), None)
    if dev is None:
        return tensors
    return [_on(dev, t) if isinstance(t, Tensor) and t.device.type == "cpu" and t.requires_grad else t
            for t in tensors]


def write(out, arr):
    """out[...] = arr (a NumPy array of out's shape), on the device."""
    n = out.numel()
    if n == 0:
        return out
    with np.errstate(over="ignore", invalid="ignore"):
        arr = np.ascontiguousarray(arr, dtype=out.dtype.np).reshape(-1)
    if L.is_contiguous(out._shape, out._strides):
        out._storage.data[out._offset:out._offset + n].copy_to_device(arr.view(np.uint16) if out.dtype.half else arr)
    else:
        src = from_host(arr.reshape(out._shape), out.dtype, out.device)
        copy_into(out, src)
    return out


def copy_into(dst, src):
    """dst[...] = src (same device, broadcastable shapes, any dtypes) with the clone kernel."""
    if src.device.type != "cuda":
        src = from_host(src._array(), src.dtype, dst.device)
    if src._shape != dst._shape:
        shape, strides, off = L.expand(src._shape, src._strides, src._offset, dst._shape)
        src = Tensor._make(src._storage, off, tuple(shape), tuple(strides), src.dtype, src.device)
    if src.dtype.half or dst.dtype.half:
        return convert(dst, src)
    run_elementwise(SPECS["clone"], [src], [], dst)
    return dst


def convert(dst, src):
    """dst[...] = src (same shape) where either is 16-bit: the conversion kernels of kernels/cuda_half.py,
    or a copy of the bit patterns (the clone kernel over uint16) between tensors of one 16-bit dtype."""
    a, b = src.dtype.half, dst.dtype.half
    if a == b:
        _launch_elementwise("clone", [src], [], dst, None)
    elif a and b:
        _launch_elementwise(f"cvt_to_{b}", [src], [], dst, a)
    elif a:
        _launch_elementwise("cvt_to_any", [src], [], dst, a)
    else:
        _launch_elementwise("cvt_from_any", [src], [], dst, b)
    return dst


def clone(t, dtype=None):
    """A contiguous copy on the same device (no history)."""
    out = empty(t._shape, dtype or t.dtype, t.device)
    return copy_into(out, t)


def move(t, dev, dtype=None):
    """t copied to another device (and dtype); differentiable like PyTorch's to()."""
    if dev.type == "cuda":
        check_available(dev)
        src = t if dtype is None or dtype is t.dtype else t.to(dtype)
        if src.device.type == "cuda":
            out = clone(src)
        else:
            out = from_host(src._array(), src.dtype, dev)
    else:
        src = t if t.device.type == "cpu" else to_cpu(t)
        out = src if dtype is None or dtype is src.dtype else src.to(dtype)
        if out is t:
            out = new_tensor(np.array(t._array(), order="C"), t.dtype)
    if grad_mode.state.enabled and t.requires_grad and out.dtype.is_floating_point:
        _record_copy(t, out)
    return out


def _record_copy(src, out):

    class ToCopyBackward0(Node):
        def __init__(self, edge, meta, dev):
            super().__init__((edge,), (meta,), [(out._shape, out.dtype)])
            self.src_device = dev

        def apply(self, grads, create_graph=False, needs=None):
            g = grads[0]
            if g is None:
                return [None]
            with grad_mode.set_grad_enabled(create_graph):
                return [move(g, self.src_device)]

    node = ToCopyBackward0(gradient_edge(src), (src._shape, src.dtype), src.device)
    out.requires_grad = True
    out.grad_fn = node
    out._output_nr = 0


# ---------------------------------------------------------------------------- elementwise

def _kernel_info(name, fmt=None):
    launch = _launch()
    return (launch.half_kernels() if fmt else launch.kernels()).KERNELS.get(name)


def _half_format(spec, ins):
    """The 16-bit format an op computes in: that of its promoted inputs (already cast alike), or None."""
    for t, ty in zip(ins, spec.tensor_types):
        if ty in PROMOTED:
            return t.dtype.half
    return None


def run_elementwise(spec, ins, scalars, out):
    """The generated CUDA kernel over inputs already on the device in the compute dtype (16-bit compute dtypes:
    the kernels of kernels/cuda_half.py)."""
    shape = out._shape
    n = L.numel(shape)
    if n == 0:
        return out
    name = spec.name
    fmt = _half_format(spec, ins)
    if out.dtype.category == 2 and out.dtype.half != fmt:
        # a result written into another floating dtype (an in-place op on a 16-bit tensor computing in float32,
        # or the reverse): the op in its compute dtype, then one conversion
        tmp = empty(shape, next(t.dtype for t, ty in zip(ins, spec.tensor_types) if ty in PROMOTED), out.device)
        return convert(out, run_elementwise(spec, ins, scalars, tmp))
    if _kernel_info(name, fmt) is None:          # no CUDA kernel: the CPU kernel on host copies
        host = cpu_run(spec, [to_cpu(t) for t in ins], scalars, cpu_empty(shape, out.dtype))
        return write(out, host._array())
    return _launch_elementwise(name, ins, scalars, out, fmt)


def _launch_elementwise(name, ins, scalars, out, fmt):
    """Kernel family `name` (of kernels/cuda_half.py with fmt) over the operands: contiguous or strided."""
    shape = out._shape
    n = L.numel(shape)
    if n == 0:
        return out
    launch = _launch()
    odata = out._storage.data
    if all(t._shape == shape and L.is_contiguous(t._shape, t._strides) for t in ins) and \
            L.is_contiguous(shape, out._strides):
        launch.elementwise_contig(name, odata[out._offset:out._offset + n],
                                  [t._storage.data[t._offset:t._offset + n] for t in ins], scalars, fmt)
        return out
    strides = [out._strides] + [L.broadcast_strides(t._shape, t._strides, shape) for t in ins]
    cshape, cstrides = L.collapse(shape, strides)
    launch.elementwise_strided(name, cshape, odata, out._offset, cstrides[0],
                               [(t._storage.data, t._offset, st) for t, st in zip(ins, cstrides[1:])], scalars, fmt)
    return out


def cast(t, dtype):
    if t.dtype is dtype:
        return t
    out = clone(t, dtype)
    out._wrapped = t._wrapped
    return out


def elementwise(spec, tensors, scalars):
    dev = find(tensors)
    ts = [_on(dev, as_tensor_arg(t)) for t in tensors]
    compute, out_dtype = _result_dtypes(spec, ts)
    shape = L.broadcast_shapes(*[t._shape for t in ts])
    ins = _operands(spec, ts, compute, cast)
    out = empty(shape, out_dtype, dev)
    run_elementwise(spec, ins, _kernel_scalars(spec, scalars, compute), out)
    return out


def destination(self, tensors):
    """The cuda device an in-place op on self writes on: PyTorch's error when self is not on it."""
    dev = find(tensors)
    if self.device.type != "cuda":
        raise _mix_error(dev)
    return dev


operand = _on


def alloc(shape, dtype, dev):
    return empty(shape, dtype, dev)


# ---------------------------------------------------------------------------- reductions and scans

def _permuted(x, order):
    return Tensor._make(x._storage, x._offset, tuple(x._shape[d] for d in order),
                        tuple(x._strides[d] for d in order), x.dtype, x.device)


def _reduce_geometry(x, dims):
    keep = [d for d in range(x.ndim) if d not in dims]
    kshape = tuple(x._shape[d] for d in keep)
    rshape = tuple(x._shape[d] for d in dims)
    ks, kst = L.collapse(kshape, [tuple(x._strides[d] for d in keep)])
    rs, rst = L.collapse(rshape, [tuple(x._strides[d] for d in dims)])
    if len(ks) == 1 and len(rs) == 1:
        return x._storage.data, x._offset, ks[0], kst[0][0], rs[0], rst[0][0]
    c = clone(_permuted(x, keep + list(dims)))
    M, K = L.numel(kshape), L.numel(rshape)
    return c._storage.data, 0, M, K, K, 1


def _flat(data, shape, dtype, dev):
    return Tensor._make(Storage(data), 0, tuple(shape), L.contiguous_strides(shape), dtype, canonical(dev))


def reduction(spec, tensors, scalars):
    x = as_tensor_arg(tensors[0])
    dev = x.device
    r = ReductionCall(spec, x, scalars, cast)
    xin, dims, out_dtype, acc_dtype = r.xin, r.dims, r.out_dtype, r.acc_dtype
    out_shape, M, extra = r.out_shape, r.M, r.extra
    if M == 0:
        acc = empty((0,), acc_dtype, dev)
    else:
        arr, off, M_, sm, K_, sk = _reduce_geometry(xin, dims)
        if spec.identity is not None:
            acc = from_host(np.full(M_, _identity(spec.identity, acc_dtype), acc_dtype.np), acc_dtype, dev)
            start = 0
        else:
            acc = empty((M_,), acc_dtype, dev)
            start = 1
        if K_ > 0:
            _launch().reduce(spec.name, arr, off, M_, sm, K_, sk, acc._storage.data, start, extra, xin.dtype.half)
    res = cast(acc, out_dtype)
    return _flat(res._storage.data, out_shape, out_dtype, dev)


def argreduction(spec, tensors, scalars):
    x = as_tensor_arg(tensors[0])
    dev = x.device
    kw = dict(zip(spec.scalar_names, scalars))
    spec.check_dtype(x.dtype)
    dim = kw.get("dim")
    keepdim = bool(kw.get("keepdim", False))
    if dim is None:
        src = x if x.is_contiguous() else clone(x)
        src = _flat(src._storage.data[src._offset:src._offset + src.numel()], (src.numel(),), x.dtype, dev) \
            if src.numel() else src.reshape(-1)
        dims = (0,) if src.ndim else ()
        out_shape = tuple(1 for _ in x._shape) if keepdim else ()
    else:
        d = L.wrap_dim(dim, x.ndim)
        src = x
        dims = (d,) if x.ndim else ()
        out_shape = _reduced_shape(x._shape, dims, keepdim)
    K = L.numel(tuple(src._shape[d] for d in dims))
    if K == 0:
        raise IndexError(f"{spec.name}(): Expected reduction dim to be specified for input.numel() == 0.")\
            if dim is None else IndexError(f"{spec.name}(): Expected reduction dim {dims[0]} to have non-zero size.")
    M = L.numel(out_shape)
    res = from_host(np.zeros(M, np.int64), D.int64, dev)
    if M and K:
        arr, off, M_, sm, K_, sk = _reduce_geometry(src, dims)
        _launch().argreduce(spec.name, arr, off, M_, sm, K_, sk, res._storage.data, src.dtype.half)
    return _flat(res._storage.data, out_shape, D.int64, dev)


def scan(spec, tensors, scalars):
    x = as_tensor_arg(tensors[0])
    dev = x.device
    kw = dict(zip(spec.scalar_names, scalars))
    d = L.wrap_dim(kw["dim"], x.ndim)
    dtype = kw.get("dtype")
    xin = cast(x, D.as_dtype(dtype)) if dtype is not None else x
    spec.check_dtype(xin.dtype)
    out_dtype = D.int64 if (spec.accumulate == "wide" and xin.dtype.category < 2 and dtype is None) else xin.dtype
    acc_dtype = _acc_dtype(spec, xin.dtype)
    if x.ndim == 0:
        xin = _flat(clone(xin)._storage.data, (1,), xin.dtype, dev)
        d = 0
    n = xin.numel()
    K = xin._shape[d]
    keep = [i for i in range(xin.ndim) if i != d]
    moved = tuple(xin._shape[i] for i in keep) + (K,)
    res = empty(moved, acc_dtype, dev)
    if n:
        arr, off, M_, sm, K_, sk = _reduce_geometry(xin, (d,))
        acc0 = from_host(np.full(1, _identity(spec.identity, acc_dtype), acc_dtype.np), acc_dtype, dev)
        _launch().scan(spec.name, arr, off, M_, sm, K_, sk, res._storage.data, acc0._storage.data, xin.dtype.half)
    inv = [int(i) for i in np.argsort(keep + [d])]
    out = clone(_permuted(res, inv), out_dtype)
    return _flat(out._storage.data, x._shape, out_dtype, dev)


# ---------------------------------------------------------------------------- array ops

def _tiled(ndim):
    return lambda spec, tensors, dev, kw: _matmul(spec, tensors, dev, ndim)


def _by_positions(impl):
    def run(spec, tensors, dev, kw):
        if not (isinstance(tensors[0], Tensor) and tensors[0].device.type == "cuda"):
            return None
        return getattr(_cuda_index, impl)(spec, tensors, kw)
    return run


def _log_softmax(spec, tensors, dev, kw):
    """x - max - log(sum(exp(x - max))) along dim with the device's reductions and elementwise kernels (through
    Tensor's methods: the op layer sits above this module)."""
    x = tensors[0]
    if not (isinstance(x, Tensor) and x.device.type == "cuda" and x.ndim and x.numel() and
            x.dtype.is_floating_point):
        return None
    d = L.wrap_dim(kw["dim"], x.ndim)
    with grad_mode.no_grad():
        s = x - x.amax(d, True)
        return s - s.exp().sum(d, True).log()


def _log_softmax_backward(spec, tensors, dev, kw):
    """grad_output - exp(output) * sum(grad_output) along dim with the device's reductions and elementwise kernels."""
    g, out = tensors
    if not (isinstance(g, Tensor) and isinstance(out, Tensor) and g.device.type == "cuda" and
            out.device.type == "cuda" and g.ndim and g.dtype is out.dtype and g.dtype.is_floating_point):
        return None
    d = L.wrap_dim(kw["dim"], g.ndim)
    with grad_mode.no_grad():
        return g - out.exp() * g.sum(d, True)


def _concat(spec, tensors, dev, kw):
    """cat(tensors, dim): one strided copy kernel per input into its slice of the result."""
    ts = list(tensors)
    if not ts or not all(isinstance(t, Tensor) and t.device.type == "cuda" for t in ts):
        return None
    nd = ts[0].ndim
    d = kw.get("dim", 0)
    if nd == 0 or not -nd <= d < nd or any(t.ndim != nd or t._shape == (0,) for t in ts):
        return None         # errors and PyTorch's legacy 1-D empty tensors: the body
    d %= nd
    if any(t._shape[k] != ts[0]._shape[k] for t in ts for k in range(nd) if k != d):
        return None
    dt = promoted(spec, ts)
    shape = list(ts[0]._shape)
    shape[d] = sum(t._shape[d] for t in ts)
    out = empty(tuple(shape), dt, dev)
    start = 0
    for t in ts:
        if t.numel():
            copy_into(Tensor._make(out._storage, out._offset + start * out._strides[d], t._shape, out._strides, dt,
                                   out.device), t)
        start += t._shape[d]
    return out


# the device implementations an array op names in ops.yaml (`cuda: <name>`, codegen/model.py CUDA_IMPLS);
# each returns the result, or None to let the op's body run on host copies (and raise its errors)
IMPLS = {
    "tiled_matmul": _tiled(None),           # the tiled shared-memory kernel, matmul's broadcasting rules
    "tiled_matmul_2d": _tiled(2),
    "tiled_matmul_3d": _tiled(3),
    "gather_positions": _by_positions("gather_positions"),     # reftorch/_cuda_index.py: by flat positions
    "scatter_positions": _by_positions("scatter_positions"),
    "select_positions": _by_positions("select_positions"),     # the same kernels, positions from dim and index
    "add_at_positions": _by_positions("add_at_positions"),
    "gather_along": _by_positions("gather_along"),
    "scatter_add_along": _by_positions("scatter_add_along"),
    "shifted_log_softmax": _log_softmax,
    "log_softmax_backward": _log_softmax_backward,    # its gradient, from the same device kernels
    "concat_copies": _concat,               # cat: each input copied into its slice of the result   # x - logsumexp(x) along dim from device reductions (max subtracted first)
}


def array(spec, tensors, scalars, cpu_array):
    names = _tensor_names(spec, len(tensors))
    lenient = tuple(i for i, name in enumerate(names) if spec.arg_types[name] in ("Index", "Index?", "Mask"))
    dev = find(tensors, lenient)
    res = None
    if spec.cuda is not None:
        res = IMPLS[spec.cuda](spec, tensors, dev, dict(zip(spec.scalar_names, scalars)))
    if res is not None:
        return res
    # the op's NumPy body on host copies; results are uploaded
    host = [(to_cpu(t) if isinstance(t, Tensor) and t.device.type == "cuda" else t) for t in tensors]
    with grad_mode.no_grad():
        res = cpu_array(spec, host, [_host_value(v) for v in scalars])
    outs = res if isinstance(res, tuple) else (res,)
    outs = tuple(from_host(o._array(), o.dtype, dev) for o in outs)
    return outs if isinstance(res, tuple) else outs[0]


def _host_value(v):
    """A non-tensor argument for a host body: cuda tensors inside it (index tuples) copied to the cpu."""
    if isinstance(v, Tensor):
        return to_cpu(v) if v.device.type == "cuda" else v
    if isinstance(v, (tuple, list)):
        return type(v)(_host_value(x) for x in v)
    return v


def _matmul(spec, tensors, dev, want):
    """The tiled kernel (operands of `want` dims; None: matmul's rules), or None to let the host path run (and
    raise the body's errors)."""
    a, b = tensors
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)) or a.device != b.device:
        return None
    if a.ndim == 0 or b.ndim == 0 or (want is not None and (a.ndim != want or b.ndim != want)):
        return None
    dt = promoted(spec, [a, b])
    spec.check_dtype(dt)
    if dt.category == 0:
        return None
    a2 = a if a.ndim > 1 else _view(a, (1,) + a._shape, (0,) + a._strides)
    b2 = b if b.ndim > 1 else _view(b, b._shape + (1,), b._strides + (0,))
    M, K = a2._shape[-2:]
    K2, N = b2._shape[-2:]
    if K != K2:
        return None
    try:
        batch = L.broadcast_shapes(a2._shape[:-2], b2._shape[:-2])
    except Exception:  # noqa: BLE001 -- the body raises PyTorch's message
        return None
    if want == 3 and a2._shape[0] != b2._shape[0]:
        return None
    nb = L.numel(batch)
    a3 = _batched(cast(a2, dt), batch, nb)
    b3 = _batched(cast(b2, dt), batch, nb)
    out = empty((nb, M, N), dt, dev)
    if out.numel():
        if K == 0:
            write(out, np.zeros((nb, M, N), dt.np))
        else:
            _launch().matmul(a3, b3, out._storage.data.reshape(nb, M, N), dt.half)
    shape = tuple(batch) + ((M,) if a.ndim > 1 else ()) + ((N,) if b.ndim > 1 else ())
    return _flat(out._storage.data, shape, dt, dev)


def _view(t, shape, strides):
    return Tensor._make(t._storage, t._offset, tuple(shape), tuple(strides), t.dtype, t.device)


def _batched(t, batch, nb):
    """A 3-D contiguous device array (nb, rows, cols) of t broadcast over the batch dims."""
    shape, strides, off = L.expand(t._shape, t._strides, t._offset, tuple(batch) + t._shape[-2:])
    v = Tensor._make(t._storage, off, tuple(shape), tuple(strides), t.dtype, t.device)
    if not L.is_contiguous(v._shape, v._strides):
        v = clone(v)
    n = v.numel()
    return v._storage.data[v._offset:v._offset + n].reshape(nb, *t._shape[-2:])
