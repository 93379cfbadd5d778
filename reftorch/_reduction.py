"""Reductions (sum, amax, all ...), argreductions (argmax) and scans (cumsum) on the cpu.

A reduction call is described device-independently by _args.ReductionCall (dtype rules, dims, shapes); here its
geometry becomes (M outputs, K reduced elements each) over the input's storage, copying only when the kept or the
reduced dims cannot be walked with one stride each, and the op's reduce kernel runs (in threads above
_cpu.PARALLEL_MIN). The same call again -- same op, dtype, geometry and arguments -- keeps a plan
(_ReductionPlan) that goes straight to the kernel.
"""
from __future__ import annotations

import numpy as np

from ._layout import contiguous_array as _contig
import reftorch._backend as _backend
import reftorch._cpu as _cpu
import reftorch._cuda_dispatch as _cuda_d
import reftorch._dtype as D
import reftorch._layout as L
from ._args import ReductionCall, _acc_dtype, _cast, _identity, _info, _reduced_shape, as_tensor_arg
from ._cpu import _chunks, _in_threads, bits, half_kernel, new_tensor, to_half
from ._tensor import Storage, Tensor

_make_tensor = Tensor._make


def _reduce_geometry(x, dims):
    """(array, offset, M, sm, K, sk) over x's storage, copying x only when the kept or the reduced
    dims cannot be walked with one stride each."""
    keep = [d for d in range(x.ndim) if d not in dims]
    kshape = tuple(x._shape[d] for d in keep)
    rshape = tuple(x._shape[d] for d in dims)
    ks, kst = L.collapse(kshape, [tuple(x._strides[d] for d in keep)])
    rs, rst = L.collapse(rshape, [tuple(x._strides[d] for d in dims)])
    if len(ks) == 1 and len(rs) == 1:
        return x._storage.data, x._offset, ks[0], kst[0][0], rs[0], rst[0][0]
    arr = _contig(x._array().transpose(keep + list(dims))).reshape(-1)
    M, K = L.numel(kshape), L.numel(rshape)
    return arr, 0, M, K, K, 1


_NO_DIMS = np.empty(0, np.int64)


def _reduce_layout(x, dims):
    """_reduce_geometry's (array, offset, M, sm, K, sk) and, where the kept or the reduced dims collapse to more
    than one axis each, nd = (P, pshape, pstr, J, jshape, jstr) for the <op>_reduce_nd kernel instead of a copy:
    M/sm is the last kept axis (contiguous in acc), K/sk the reduced axis of the smallest stride, P and J count
    the index tuples of the other kept (pshape, pstr) and reduced (jshape, jstr) axes. nd is None for one kept
    and one reduced axis, and for layouts that walk neither axis contiguously (those copy, as before)."""
    keep = [d for d in range(x.ndim) if d not in dims]
    red = sorted(dims, key=lambda d: -abs(x._strides[d]))     # largest stride first: permuted dims collapse too
    ks, kst = L.collapse(tuple(x._shape[d] for d in keep), [tuple(x._strides[d] for d in keep)])
    rs, rst = L.collapse(tuple(x._shape[d] for d in red), [tuple(x._strides[d] for d in red)])
    kst, rst = kst[0], rst[0]
    if len(ks) == 1 and len(rs) == 1:
        return x._storage.data, x._offset, ks[0], kst[0], rs[0], rst[0], None
    i = min(range(len(rs)), key=lambda d: abs(rst[d]))
    M, sm, K, sk = ks[-1], kst[-1], rs[i], rst[i]
    if abs(sm) != 1 and abs(sk) != 1:
        return _reduce_geometry(x, dims) + (None,)
    jsh, jst = rs[:i] + rs[i + 1:], rst[:i] + rst[i + 1:]
    nd = (L.numel(ks[:-1]), np.array(ks[:-1], np.int64) if len(ks) > 1 else _NO_DIMS,
          np.array(kst[:-1], np.int64) if len(ks) > 1 else _NO_DIMS,
          L.numel(jsh), np.array(jsh, np.int64) if jsh else _NO_DIMS, np.array(jst, np.int64) if jsh else _NO_DIMS)
    return x._storage.data, x._offset, M, sm, K, sk, nd


def _reduce_nd_call(kernel, arr, off, nd, M_, sm, K_, sk, seed, out, start, extra=()):
    """kernel (an <op>_reduce_nd) over nd's outer axes (see _reduce_layout) into out, accumulating in seed's dtype;
    above PARALLEL_MIN elements the outer kept indices (or, with one, the M outputs) in threads (see _parallel)."""
    P, psh, pst, J, jsh, jst = nd
    if _cpu._parallel(P * M_ * J * K_) and (P >= 2 * _cpu.THREADS or (P == 1 and M_ >= 2 * _cpu.THREADS)):
        if P > 1:
            _in_threads(lambda lo, hi: kernel(arr, off, lo, hi, psh, pst, M_, sm, J, jsh, jst, K_, sk, seed, out,
                                              start, *extra), _chunks(P, 1))
        else:
            _in_threads(lambda lo, hi: kernel(arr, off + lo * sm, 0, 1, psh, pst, hi - lo, sm, J, jsh, jst, K_, sk,
                                              seed, out[lo:hi], start, *extra), _chunks(M_, 8))
        return
    kernel(arr, off, 0, P, psh, pst, M_, sm, J, jsh, jst, K_, sk, seed, out, start, *extra)


_reduction_plans = {}      # (op, dtype, shape, strides, dim, keepdim, dtype arg) -> _ReductionPlan


class _ReductionPlan:
    __slots__ = ("out_dtype", "acc_np", "out_np", "out_shape", "out_strides", "geometry", "identity", "nd", "size",
                 "seed", "start", "half")


def reduction(spec, tensors, scalars):
    be = _backend.off_cpu(tensors) if _cuda_d.used else None
    if be is not None:
        return be.reduction(spec, tensors, scalars)
    x = tensors[0]
    if isinstance(x, Tensor) and len(scalars) == len(spec.scalar_names) <= 3:
        key = [spec, x.dtype, x._shape, x._strides]
        for v in scalars:       # only plain arguments key a plan (1.0 == 1, but dim=1.0 must still raise)
            tp = v.__class__
            if tp is list or tp is tuple:
                v = tuple(v)
                if not all(d.__class__ is int for d in v):
                    key = None
                    break
            elif not (v is None or tp is int or tp is bool or tp is D.dtype):
                key = None
                break
            key.append((tp, v))
        plan = None
        if key is not None:
            key = tuple(key)
            plan = _reduction_plans.get(key)
        if plan is not None:
            return _run_reduction(spec, plan, x, scalars)
        out = _reduction(spec, tensors, scalars, key)
        return out
    return _reduction(spec, tensors, scalars, None)


def _run_reduction(spec, plan, x, scalars):
    M, sm, K, sk = plan.geometry
    fmt = plan.half     # 16-bit input: its kernels read the bit patterns and accumulate in float32
    arr = bits(x._storage.data) if fmt else x._storage.data
    if plan.nd and not fmt:     # written straight into the result (the accumulator is a block in cache)
        acc = np.empty(plan.size, plan.out_np)
        _reduce_nd_call(spec.kernel("reduce_nd"), arr, x._offset, plan.nd, M, sm, K, sk, plan.seed, acc, plan.start)
    else:
        acc = np.empty(plan.size, plan.acc_np)
        if plan.start == 0:
            acc.fill(plan.identity)     # (np.full costs ~2 us more per call)
        if plan.nd:
            _reduce_nd_call(half_kernel(spec.name, fmt, "reduce_nd"), arr, x._offset, plan.nd, M, sm, K, sk,
                            plan.seed, acc, plan.start)
        else:
            _reduce_call(spec, arr, x._offset, M, sm, K, sk, acc, plan.start, (),
                         half_kernel(spec.name, fmt, "reduce") if fmt else None)
    out = _make_tensor(Storage(_result(acc, plan.out_dtype)), 0, plan.out_shape, plan.out_strides, plan.out_dtype)
    return out


def _result(acc, out_dtype):
    """The accumulator as the result's dtype (NumPy's 16-bit casts are software: _cpu.to_half)."""
    if acc.dtype == out_dtype.np:
        return acc
    if out_dtype.half and acc.dtype == np.float32:
        return to_half([acc], out_dtype)[0]
    return acc.astype(out_dtype.np)


def _reduce_call(spec, arr, off, M_, sm, K_, sk, acc, start, extra=(), kernel=None):
    """The op's reduce kernel (or `kernel`: its 16-bit one) over (M_, K_) of arr; above PARALLEL_MIN elements
    in threads (see _parallel)."""
    merge = spec.kernel("reduce")
    kernel = kernel or merge
    if not _cpu._parallel(M_ * K_):
        kernel(arr, off, M_, sm, K_, sk, acc, start, *extra)
    elif M_ >= 2 * _cpu.THREADS:     # outputs in chunks, one per thread
        _in_threads(lambda lo, hi: kernel(arr, off + lo * sm, hi - lo, sm, K_, sk, acc[lo:hi], start, *extra),
                    _chunks(M_, 8))
    elif M_ == 1 and start == 0 and getattr(_cpu.kernels(), f"{spec.name}_self_merging", False):
        # one output: each thread reduces a slice into a partial, and the partials reduce alike
        ranges = _chunks(K_)
        parts = np.repeat(acc, len(ranges))

        def run(lo, hi):
            i = lo // ranges[0][1]
            kernel(arr, off + lo * sk, 1, 1, hi - lo, sk, parts[i:i + 1], 0, *extra)
        _in_threads(run, ranges)
        merge(parts, 0, 1, 1, len(ranges), 1, acc, 0, *extra)
    else:
        kernel(arr, off, M_, sm, K_, sk, acc, start, *extra)


def _reduction(spec, tensors, scalars, key):
    x = as_tensor_arg(tensors[0])
    r = ReductionCall(spec, x, scalars, _cast)
    xin, dims, out_dtype, acc_dtype = r.xin, r.dims, r.out_dtype, r.acc_dtype
    out_shape, M, extra = r.out_shape, r.M, r.extra
    if M == 0:
        acc = np.empty(0, acc_dtype.np)
    else:
        arr, off, M_, sm, K_, sk, nd = _reduce_layout(xin, dims)
        start = 0 if spec.identity is not None else 1
        seed = np.full(1, _identity(spec.identity, acc_dtype) if start == 0 else 0, acc_dtype.np)
        if nd is not None and r.K > 0 and not xin.dtype.half:
            acc = np.empty(M, out_dtype.np)         # written straight into the result (the kernel's acc: a block)
            _reduce_nd_call(spec.kernel("reduce_nd"), arr, off, nd, M_, sm, K_, sk, seed, acc, start, extra)
        else:
            acc = np.full(M, seed[0], acc_dtype.np) if start == 0 else np.empty(M, acc_dtype.np)
            if r.K > 0 and nd is not None:          # 16-bit: the kernel writes float32, the result is cast below
                _reduce_nd_call(half_kernel(spec.name, xin.dtype.half, "reduce_nd"), bits(arr), off, nd, M_,
                                sm, K_, sk, seed, acc, start, extra)
            elif r.K > 0 and xin.dtype.half:
                _reduce_call(spec, bits(arr), off, M_, sm, K_, sk, acc, start, extra,
                             half_kernel(spec.name, xin.dtype.half, "reduce"))
            elif r.K > 0:
                _reduce_call(spec, arr, off, M_, sm, K_, sk, acc, start, extra)
        if key is not None and xin is x and not extra and r.K > 0 and arr is x._storage.data:
            # the same call again (same op, dtype, geometry and arguments) skips straight to the kernel
            plan = _ReductionPlan()
            plan.out_dtype, plan.acc_np, plan.out_np = out_dtype, acc_dtype.np, out_dtype.np
            plan.out_shape, plan.out_strides = tuple(out_shape), _info(tuple(out_shape))[0]
            plan.geometry, plan.nd, plan.size = (M_, sm, K_, sk), nd, M
            plan.identity = _identity(spec.identity, acc_dtype) if spec.identity is not None else None
            plan.start, plan.seed, plan.half = start, seed, xin.dtype.half
            if len(_reduction_plans) > 4096:
                _reduction_plans.clear()
            _reduction_plans[key] = plan
    out = new_tensor(_result(acc, out_dtype).reshape(out_shape), out_dtype)
    return out


def argreduction(spec, tensors, scalars):
    be = _backend.off_cpu(tensors) if _cuda_d.used else None
    if be is not None:
        return be.argreduction(spec, tensors, scalars)
    x = as_tensor_arg(tensors[0])
    kw = dict(zip(spec.scalar_names, scalars))
    spec.check_dtype(x.dtype)
    dim = kw.get("dim")
    keepdim = bool(kw.get("keepdim", False))
    if dim is None:
        src = x.reshape(-1) if x.is_contiguous() else x.contiguous().reshape(-1)
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
    res = np.zeros(M, np.int64)
    if M and K:
        arr, off, M_, sm, K_, sk = _reduce_geometry(src, dims)
        if src.dtype.half:
            half_kernel(spec.name, src.dtype.half, "reduce")(bits(arr), off, M_, sm, K_, sk, res)
        else:
            spec.kernel("reduce")(arr, off, M_, sm, K_, sk, res)
    return new_tensor(res.reshape(out_shape), D.int64)


def scan(spec, tensors, scalars):
    be = _backend.off_cpu(tensors) if _cuda_d.used else None
    if be is not None:
        return be.scan(spec, tensors, scalars)
    x = as_tensor_arg(tensors[0])
    kw = dict(zip(spec.scalar_names, scalars))
    d = L.wrap_dim(kw["dim"], x.ndim)
    dtype = kw.get("dtype")
    xin = _cast(x, D.as_dtype(dtype)) if dtype is not None else x
    spec.check_dtype(xin.dtype)
    out_dtype = D.int64 if (spec.accumulate == "wide" and xin.dtype.category < 2 and dtype is None) else xin.dtype
    acc_dtype = _acc_dtype(spec, xin.dtype)
    if x.ndim == 0:
        xin = xin.reshape(1)
        d = 0
    n = xin.numel()
    K = xin._shape[d]
    M = n // K if K else 0
    res = np.empty(n, acc_dtype.np)
    keep = [i for i in range(xin.ndim) if i != d]
    rows = False
    if n:
        arr, off, M_, sm, K_, sk = _reduce_geometry(xin, (d,))
        acc0 = np.full(1, _identity(spec.identity, acc_dtype), acc_dtype.np)
        rows = sm == 1 and M_ > 1 and K_ > 1        # the kept axis contiguous: rows at a time, res (K, kept...)
        if rows:
            (half_kernel(spec.name, xin.dtype.half, "scan_rows") if xin.dtype.half else spec.kernel("scan_rows"))(
                bits(arr), off, M_, K_, sk, res, acc0)
        elif xin.dtype.half:
            half_kernel(spec.name, xin.dtype.half, "scan")(bits(arr), off, M_, sm, K_, sk, res, acc0)
        else:
            spec.kernel("scan")(arr, off, M_, sm, K_, sk, res, acc0)
    order = [d] + keep if rows else keep + [d]
    res = res.reshape(tuple(xin._shape[i] for i in order))
    inv = np.argsort(order)
    res = _contig(res.transpose(inv)).astype(out_dtype.np, copy=False)
    out = new_tensor(res.reshape(x._shape), out_dtype)
    return out


def _forget_plans():
    """Plans hold result dtypes (a float number's category resolves to the default float dtype):
    set_default_dtype drops them (a plan is rebuilt on the next call)."""
    _reduction_plans.clear()


D._on_default_change.append(_forget_plans)
