"""Every generated CUDA kernel (reftorch/kernels/cuda.py) compiled to PTX with numba.cuda.compile_ptx.

No GPU is needed, only numba-cuda with the CUDA 13 toolkit wheels (`pip install -e '.[cuda]'`);
without them the module is skipped. The simulator runs kernels as Python and catches no typing
error; this does. Parametrised from the generated KERNELS table, so new ops are covered by themselves.

Sampling, to fit CI (NVVM compiles are not cached: this file was ~18% of the suite's time cold): the
strided kernel (the scalar function plus the full index arithmetic) is compiled for one dtype of each
family the op accepts (bool, int64, and for floats float32 or float64, by the parity of the kernel name's
CRC-32, so both widths are typed across the registry); the contiguous kernel, the same scalar function
around a plainer loop, only where an op has no strided kernel; reductions and scans for each family
(float32), matmul for float32, float64, int64 and complex64. REFTORCH_PTX_ALL=1 compiles every kernel for every
family and both float dtypes.
"""
import math
import os
import zlib
from types import SimpleNamespace

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(bool(os.environ.get("NUMBA_ENABLE_CUDASIM")),
                                reason="the simulator replaces numba.cuda.compile_ptx")

numba_cuda = pytest.importorskip("numba_cuda", reason="needs numba-cuda[cu13] (pip install -e '.[cuda]')")

from numba import cuda, typeof  # noqa: E402
from numba.core import types  # noqa: E402

from codegen.model import load  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGISTRY = {op.name: op for op in load(os.path.join(ROOT, "reftorch", "ops.yaml"))}
NP_TYPE = {"bool": np.bool_, "int": np.int64, "float": np.float32, "complex": np.complex64}
ALL = bool(os.environ.get("REFTORCH_PTX_ALL"))
CC = (7, 5)   # named, so that compile_ptx never asks a (missing) driver for the current device's


def _toolkit_works():
    def probe(out):
        out[0] = 1.0
    try:
        cuda.compile_ptx(probe, (types.float32[::1],), cc=CC)
        return True, ""
    except Exception as err:  # noqa: BLE001 -- any failure here means no usable NVVM
        return False, f"{type(err).__name__}: {err}"


_OK, _WHY = _toolkit_works()
if not _OK:
    pytest.skip(f"numba-cuda cannot compile PTX here ({_WHY})", allow_module_level=True)

from reftorch.kernels import cuda as gk  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def no_driver_needed():
    """numba-cuda compiles the @overload implementations that a kernel calls (isinstance, np.int64,
    np.iinfo) for the *current device*, even under compile_ptx(cc=...), so without a driver it fails
    with "CUDA driver library cannot be found". Hand it a stand-in device of compute capability CC."""
    import numba.cuda.dispatcher as dispatcher
    real = dispatcher.get_current_device
    if not cuda.is_available():
        dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=CC, id=0)
    yield
    dispatcher.get_current_device = real


def arr(dt, ndim=1, layout="C"):
    return types.Array(typeof(np.dtype(dt).type(0)), ndim, layout)


def scalar_types(op, names, compute):
    """numba types of the kernel's scalar arguments, valued as the dispatcher passes them."""
    given = dict(op.test.args)
    out = []
    for name in names:
        src = given.get(name)
        if src is None:
            src = next((a.default for a in op.signature.args if a.name == name), None)
        v = eval(src, {"np": np, "math": math, "inf": math.inf}) if src is not None else 1
        if v is not None:
            if np.dtype(compute).kind == "c":
                v = complex(v)
            elif np.dtype(compute).kind == "f":
                v = float(v)
            elif not isinstance(v, bool) and not (isinstance(v, float) and v != int(v)):
                v = int(v)
        out.append(typeof(v))
    return out


def arg_dtype(op, name, compute):
    t = next((a.type for a in op.signature.args if a.name == name), "Tensor")
    return {"Mask": np.bool_, "Index": np.int64, "Index?": np.int64}.get(t, compute)


def out_dtype(op, name, compute):
    if name.startswith("_bw_"):
        return compute
    if op.result == "bool":
        return np.bool_
    if op.result == "int64":
        return np.int64
    if op.result in ("real", "real_float") and np.dtype(compute).kind == "c":
        return np.float32 if np.dtype(compute) == np.complex64 else np.float64
    if op.result in ("float", "real_float") and np.dtype(compute).kind not in "fc":
        return np.float32
    return compute


def elementwise_sig(name, info, suffix, compute):
    op = REGISTRY[info["op"]]
    ins = [arr(arg_dtype(op, t, compute)) for t in info["tensors"]]
    sc = scalar_types(op, info["scalars"], compute)
    out = arr(out_dtype(op, name, compute))
    if suffix == "contig":
        return (out, *ins, *sc)
    tup = types.UniTuple(types.int64, 2)
    args = [tup, out, types.int64, tup]
    for a in ins:
        args += [a, types.int64, tup]
    return (*args, *sc)


def acc_dtype(op, dt):
    rule = op.reduce.accumulate
    if rule == "wide":
        return {"f": np.float64, "c": np.complex128}.get(np.dtype(dt).kind, np.int64)
    if rule == "float64" and np.dtype(dt).kind == "c":
        return np.complex128
    return {"float64": np.float64, "int64": np.int64, "bool": np.bool_}.get(rule, dt)


def reduction_sig(name, info, suffix, compute):
    op = REGISTRY[info["op"]]
    x = compute
    if op.result == "float" and np.dtype(x).kind not in "fc":
        x = np.float32
    geo = [types.int64] * 5
    if info["kind"] == "argreduction":
        return (arr(x), *geo, arr(np.int64))
    acc = acc_dtype(op, x)
    if info["kind"] == "scan":
        return (arr(x), *geo, arr(acc), arr(acc))
    return (arr(x), *geo, arr(acc), types.int64, *scalar_types(op, info["scalars"], x))


def cases():
    out = []
    for name, info in sorted(gk.KERNELS.items()):
        op = REGISTRY[info["op"]]
        kind = info["kind"]
        if kind == "matmul":
            for dt in (np.float32, np.float64, np.int64, np.complex64):
                out.append(pytest.param(name, "tiled", dt, id=f"matmul-{np.dtype(dt).name}"))
            continue
        fams = ["float"] if name.startswith("_bw_") else list(op.dtypes)
        wide = zlib.crc32(name.encode()) % 2 == 1       # this kernel's float family in float64, else float32
        dts = [np.float64 if f == "float" and wide else NP_TYPE[f] for f in fams]
        if ALL and "float" in fams:
            dts = [NP_TYPE[f] for f in fams] + [np.float64]
        for suffix in info["kernels"]:
            if suffix == "contig" and not ALL:
                if "strided" in info["kernels"]:
                    continue        # the same scalar function as the strided kernel, around a plainer loop
                chosen = [np.float64 if "float" in fams else dts[-1]]
            else:
                chosen = dts
            for dt in chosen:
                out.append(pytest.param(name, suffix, dt, id=f"{name}-{suffix}-{np.dtype(dt).name}"))
    out.append(pytest.param("fill", "from", np.float64, id="fill_from-float64"))
    return out


@pytest.mark.parametrize("name, suffix, dtype", cases())
def test_compiles_to_ptx(name, suffix, dtype):
    info = gk.KERNELS.get(name, {"kind": "utility"})
    kind = info["kind"]
    if kind == "utility":
        sig = (arr(dtype), arr(dtype))
    elif kind == "elementwise":
        sig = elementwise_sig(name, info, suffix, dtype)
    elif kind == "matmul":
        sig = (arr(dtype, 3, "A"), arr(dtype, 3, "A"), arr(dtype, 3))
    else:
        sig = reduction_sig(name, info, suffix, dtype)
    kernel = getattr(gk, f"{name}_{suffix}")
    ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=CC)
    assert ".entry" in ptx or ".visible" in ptx


@pytest.mark.parametrize("name, sig", [
    ("uniform_kernel", (arr(np.float32), types.uint64, types.uint64, types.uint64, types.float64)),
    ("uniform_kernel", (arr(np.float64), types.uint64, types.uint64, types.uint64, types.float64)),
    ("normal_kernel", (arr(np.float32), types.uint64, types.uint64)),
    ("integers_kernel", (arr(np.int64), types.uint64, types.uint64, types.int64, types.uint64)),
])
def test_cuda_random_kernels_compile_to_ptx(name, sig):
    """The counter-based generator of cuda tensors (reftorch/_cuda_random.py), as the runtime calls it."""
    from reftorch import _cuda_random
    ptx, _ = cuda.compile_ptx(getattr(_cuda_random, name).py_func, sig, cc=CC)
    assert ".entry" in ptx or ".visible" in ptx


@pytest.mark.parametrize("name, dt", [(n, dt) for n in ("take_kernel", "put_kernel", "put_add_kernel")
                                      for dt in (np.float32, np.float64, np.int64)])
def test_cuda_indexing_kernels_compile_to_ptx(name, dt):
    """Gather/scatter by flat positions for cuda tensors (reftorch/_cuda_index.py), atomics included."""
    from reftorch import _cuda_index
    sig = {"take_kernel": (arr(dt), arr(dt, layout="A"), arr(np.int64, layout="A")),
           "put_kernel": (arr(dt, layout="A"), arr(np.int64, layout="A"), arr(dt, layout="A")),
           "put_add_kernel": (arr(dt, layout="A"), arr(np.int64, layout="A"), arr(dt, layout="A"))}[name]
    ptx, _ = cuda.compile_ptx(getattr(_cuda_index, name).py_func, sig, cc=CC)
    assert ".entry" in ptx or ".visible" in ptx
