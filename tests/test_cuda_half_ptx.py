"""The float16/bfloat16 CUDA kernels (reftorch/kernels/cuda_half.py) compiled to PTX with numba.cuda.compile_ptx.

The simulator runs them as Python and catches no typing error; this does, without a GPU (numba-cuda[cu13]
only; skipped without it). The scalar functions are those of reftorch/kernels/cuda.py (tests/test_cuda_ptx.py
compiles them); what is new here is the loading, rounding and float32 accumulation around them, so the
default run samples (each compile costs seconds): the conversions from and to float32 and bool, and between
the formats; one elementwise op of each signature shape (result dtype, scalar and mask arguments) in
alternating formats and one fused backward kernel per format, as strided kernels; sum, argmax and cumsum
(each kernel in one format); the tiled matmul in both formats. REFTORCH_PTX_ALL=1 compiles every kernel of
the module in both formats.
"""
import os
from types import SimpleNamespace

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(bool(os.environ.get("NUMBA_ENABLE_CUDASIM")),
                                reason="the simulator replaces numba.cuda.compile_ptx")

pytest.importorskip("numba_cuda", reason="needs numba-cuda[cu13] (pip install -e '.[cuda]')")

from numba import cuda, typeof  # noqa: E402
from numba.core import types  # noqa: E402

from codegen.model import load  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGISTRY = {op.name: op for op in load(os.path.join(ROOT, "reftorch", "ops.yaml"))}
ALL = bool(os.environ.get("REFTORCH_PTX_ALL"))
CC = (7, 5)


def _toolkit_works():
    def probe(out):
        out[0] = 1.0
    try:
        cuda.compile_ptx(probe, (types.float32[::1],), cc=CC)
        return True
    except Exception:  # noqa: BLE001 -- any failure here means no usable NVVM
        return False


if not _toolkit_works():
    pytest.skip("numba-cuda cannot compile PTX here", allow_module_level=True)

from reftorch.kernels import cuda_half as hk  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def no_driver_needed():
    """As in tests/test_cuda_ptx.py: a stand-in current device for numba-cuda's overload compilation."""
    import numba.cuda.dispatcher as dispatcher
    real = dispatcher.get_current_device
    if not cuda.is_available():
        dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=CC, id=0)
    yield
    dispatcher.get_current_device = real


def arr(dt, ndim=1, layout="C"):
    return types.Array(typeof(np.dtype(dt).type(0)), ndim, layout)


H = np.uint16
TUP = types.UniTuple(types.int64, 2)


def elementwise_sig(info, suffix, out_dt, in_dts, scalars):
    ins = [arr(d) for d in in_dts]
    if suffix == "contig":
        return (arr(out_dt), *ins, *scalars)
    args = [TUP, arr(out_dt), types.int64, TUP]
    for a in ins:
        args += [a, types.int64, TUP]
    return (*args, *scalars)


def op_types(name, info):
    """(output dtype, input dtypes, scalar types) of a half elementwise kernel as the dispatcher calls it."""
    op = REGISTRY[info["op"]]
    if name.startswith("_bw_"):
        return H, [H] * len(info["tensors"]), [types.float64] * len(info["scalars"])
    by_name = {a.name: a.type for a in op.signature.args}
    ins = [{"Mask": np.bool_, "Index": np.int64, "Index?": np.int64}.get(by_name.get(t, "Tensor"), H)
           for t in info["tensors"]]
    out = {"bool": np.bool_, "int64": np.int64}.get(op.result, H)
    sc = []
    for s in info["scalars"]:
        ty = by_name.get(s, "Scalar").rstrip("?")
        sc.append({"bool": types.boolean, "int": types.int64}.get(ty, types.float64))
    return out, ins, sc


SAMPLE = {"reduction": "sum", "argreduction": "argmax", "scan": "cumsum"}


def cases():
    out = []
    for fmt in hk.FORMATS:
        for dt in ((np.float32, np.float64, np.int64, np.bool_) if ALL else (np.float32, np.bool_)):
            out.append(pytest.param("cvt_to_any", fmt, "contig", (dt, [H], []), id=f"cvt_to_any-{fmt}-{np.dtype(dt).name}"))
            out.append(pytest.param("cvt_from_any", fmt, "contig", (H, [dt], []), id=f"cvt_from_any-{fmt}-{np.dtype(dt).name}"))
        other = [f for f in hk.FORMATS if f != fmt][0]
        out.append(pytest.param(f"cvt_to_{other}", fmt, "strided", (H, [H], []), id=f"cvt_to_{other}-{fmt}"))
        out.append(pytest.param("matmul", fmt, "tiled", None, id=f"matmul-{fmt}"))
    i = 0
    bw_done = set()
    shapes_seen = set()
    for name, info in sorted(hk.KERNELS.items()):
        kind = info["kind"]
        if kind in ("conversion", "matmul"):
            continue
        if kind == "elementwise":
            if name.startswith("_bw_"):
                fmts = [f for f in hk.FORMATS if f not in bw_done][:1] if not ALL else list(hk.FORMATS)
                bw_done.update(fmts)
            else:
                out_dt, in_dts, sc = op_types(name, info)
                shape = (np.dtype(out_dt).name, tuple(np.dtype(d).name for d in in_dts), tuple(map(str, sc)))
                if shape in shapes_seen and not ALL:
                    continue
                shapes_seen.add(shape)
                fmts = list(hk.FORMATS) if ALL else [hk.FORMATS[i % 2]]
                i += 1
            for fmt in fmts:
                for suffix in (info["kernels"] if ALL else ("strided",)):
                    out.append(pytest.param(name, fmt, suffix, op_types(name, info), id=f"{name}-{fmt}-{suffix}"))
        else:
            if not ALL and name != SAMPLE.get(kind) and SAMPLE.get(kind) in hk.KERNELS:
                continue
            for j, suffix in enumerate(info["kernels"]):
                for fmt in (hk.FORMATS if ALL else hk.FORMATS[j % 2:j % 2 + 1]):
                    out.append(pytest.param(name, fmt, suffix, None, id=f"{name}-{fmt}-{suffix}"))
    return out


def reduction_sig(name, info, suffix):
    op = REGISTRY[info["op"]]
    geo = [types.int64] * 5
    x = arr(H)
    if info["kind"] == "argreduction":
        return (x, *geo, arr(np.int64))
    rule = op.reduce.accumulate
    acc = {"float64": np.float64, "int64": np.int64, "bool": np.bool_}.get(rule, np.float32)
    if info["kind"] == "scan":
        return (x, *geo, arr(acc), arr(acc))
    return (x, *geo, arr(acc), types.int64, *[types.float64] * len(info["scalars"]))


@pytest.mark.parametrize("name, fmt, suffix, sig", cases())
def test_half_kernel_compiles_to_ptx(name, fmt, suffix, sig):
    info = hk.KERNELS[name]
    if info["kind"] == "matmul":
        args = (arr(H, 3, "A"), arr(H, 3, "A"), arr(H, 3))
    elif info["kind"] in ("elementwise", "conversion"):
        out_dt, in_dts, scalars = sig
        args = elementwise_sig(info, suffix, out_dt, in_dts, scalars)
    else:
        args = reduction_sig(name, info, suffix)
    kernel = getattr(hk, f"{name}_{fmt}_{suffix}")
    ptx, _ = cuda.compile_ptx(kernel.py_func, args, cc=CC)
    assert ".entry" in ptx or ".visible" in ptx
