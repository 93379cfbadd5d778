"""Foreach ops (ops.yaml kind `foreach`: the optimizers' fused updates over lists of tensors) on the cpu.

Element k of every list forms one group of equal-sized tensors of one dtype; one kernel call per FOREACH_CHUNK
groups of a dtype runs the op's body over every element, updating the lists it assigns in place. Non-contiguous
tensors go through contiguous copies (written back).
"""
from __future__ import annotations

import numpy as np

from ._args import _info, check_inference_write, check_no_internal_overlap
from ._tensor import Tensor
import reftorch.autograd.grad_mode as grad_mode
import reftorch.kernels.api as _api

FOREACH_CHUNK = 8      # tensors per foreach kernel call: lists are padded to it, so one compile serves every length
_foreach_updates = {}  # foreach op -> indices of the lists its body assigns
_foreach_empty = {}    # numpy dtype -> the empty array that pads a chunk
_foreach_entries = {}  # (op, dtype, scalar types) -> compiled entry point for writable contiguous arrays
_requires_grad = Tensor.__dict__["requires_grad"].__get__   # the raw slot (bind() adds a property later)


def foreach(spec, lists, scalars):
    """Run the foreach op over the lists (every check before the first write), then bump the updated versions."""
    name = spec.name
    upd = _foreach_updates.get(name)
    if upd is None:
        upd = _foreach_updates[name] = tuple(spec.tensor_args.index(n) for n in _api.SPECS[name]["updates"])
    lists = [list(ts) for ts in lists]
    n = len(lists[0])
    if any(len(ts) != n for ts in lists):
        raise RuntimeError(f"{name}: Tensor lists must have the same number of tensors, got "
                           f"{', '.join(str(len(ts)) for ts in lists)}.")
    by_dtype, copies = {}, []
    checked = set()     # dtypes already checked against the op
    for k in range(n):
        group = [ts[k] for ts in lists]
        dt0 = _check_group(spec, group, checked)
        arr_list = by_dtype.get(dt0)
        if arr_list is None:
            arr_list = by_dtype[dt0] = []
        arr_list.append(_group_arrays(group, upd, copies))
    ks = []
    for (arg, ty, _, _), v in zip([a for a in spec.args if a[1] != "Tensor[]"], scalars):
        if isinstance(v, Tensor):
            v = v.item()
        ks.append(bool(v) if ty == "bool" else int(v) if ty == "int" else float(v))
    for dtype, groups in by_dtype.items():
        _run_chunks(spec, dtype, groups, len(lists), ks)
    for t, a in copies:
        t._array()[...] = a.reshape(t._shape)
    for i in upd:
        for t in lists[i]:
            t._storage.version += 1
    return None


def _check_group(spec, group, checked):
    """PyTorch's checks of one group (Tensors on the cpu, of one dtype and shape, a dtype the op takes): its dtype."""
    name = spec.name
    t0 = group[0]
    if not isinstance(t0, Tensor):
        raise TypeError(f"{name}(): expected lists of Tensors, got {type(t0).__name__}")
    dt0, shape0 = t0.dtype, t0._shape
    for t in group:
        if t.__class__ is not Tensor and not isinstance(t, Tensor):
            raise TypeError(f"{name}(): expected lists of Tensors, got {type(t).__name__}")
        if t.device.type != "cpu":
            raise RuntimeError(f"{name}: expected all tensors to be on the cpu, got {t.device}")
        if t.dtype is not dt0:
            raise RuntimeError(f"{name}: expected all tensors of a group to have the same dtype, got "
                               f"{dt0.short} and {t.dtype.short}")
        if t._shape != shape0:
            raise RuntimeError(f"{name}: expected all tensors of a group to have the same shape, got "
                               f"{list(shape0)} and {list(t._shape)}")
    if dt0 not in checked:
        spec.check_dtype(dt0)
        if dt0.half:
            raise RuntimeError(f"{name}: \"{name}\" not implemented for '{dt0.short}'")
        checked.add(dt0)
    return dt0


def _group_arrays(group, upd, copies):
    """The group's flat arrays for the kernel: each tensor's own storage where it is contiguous and writable, else a
    contiguous copy (those of updated lists noted in copies, to be written back)."""
    cs, numel = _info(group[0]._shape)
    rg_check = grad_mode.state.enabled
    arrays = []
    for i, t in enumerate(group):
        data = t._storage.data
        flags = data.flags
        if i in upd:
            check_inference_write(t)
            if not flags.writeable:
                raise ValueError("assignment destination is read-only")
            if rg_check and _requires_grad(t):
                raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
            if 0 in t._strides:
                check_no_internal_overlap(t)
        if (t._strides == cs or numel <= 1) and flags.writeable and flags.c_contiguous:
            arrays.append(data if t._offset == 0 and data.shape[0] == numel else data[t._offset:t._offset + numel])
        else:       # a copy: contiguous and writable, so that every list is a tuple of one array type
            a = np.array(t._array(), order="C").reshape(-1)
            if i in upd:
                copies.append((t, a))
            arrays.append(a)
    return arrays


def _run_chunks(spec, dtype, groups, n_lists, ks):
    """The kernel over the groups of one dtype, FOREACH_CHUNK at a time (the last chunk padded with empty arrays)."""
    pad = _foreach_empty.get(dtype.np)
    if pad is None:
        pad = _foreach_empty[dtype.np] = np.empty(0, dtype.np)
    for lo in range(0, len(groups), FOREACH_CHUNK):
        chunk = groups[lo:lo + FOREACH_CHUNK]
        chunk += [[pad] * n_lists] * (FOREACH_CHUNK - len(chunk))
        args = [tuple(g[j] for g in chunk) for j in range(n_lists)]
        # writable C-contiguous 1-D arrays of one dtype (copies where not): the compiled overload, once known
        ekey = (spec.name, dtype, tuple(v.__class__ for v in ks))
        fn = _foreach_entries.get(ekey)
        if fn is not None:
            fn(*args, *ks)
        else:
            disp = spec.kernel("foreach")
            disp(*args, *ks)
            try:
                ov = disp.overloads.get(tuple(disp.typeof_pyval(a) for a in (*args, *ks)))
                _foreach_entries[ekey] = ov.entry_point if ov is not None and not ov.objectmode else disp
            except Exception:   # noqa: BLE001 -- another Numba: the dispatcher is fine
                _foreach_entries[ekey] = disp
