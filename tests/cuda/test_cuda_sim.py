"""Every generated CUDA kernel (reftorch/kernels/cuda.py), run in numba's CUDA simulator and compared
with the CPU kernel (reftorch/kernels/cpu.py) on the same inputs: bit for bit where the output is
integer or bool, within float tolerance otherwise.

Runs only with NUMBA_ENABLE_CUDASIM=1, in a process of its own (tests/test_cuda_simulator.py starts
it): the simulator replaces numba.cuda for the whole process. Parametrised from the generated
KERNELS table, so a new ops.yaml entry is covered with no new test code.

The simulator runs each thread as Python (~0.1 ms a thread), so inputs are a few hundred elements and
grids tiny (2 blocks x 32 threads; the kernels loop grid-stride). One dtype per family is sampled:
bool, int64, float32 (float64 for the fused backward kernels and matmul), complex64, to keep the run short (the
complex kernels add ~15 s).
"""
import math
import os
import sys

import numpy as np
import pytest

if not os.environ.get("NUMBA_ENABLE_CUDASIM"):
    pytest.skip("needs NUMBA_ENABLE_CUDASIM=1 (run by tests/test_cuda_simulator.py)", allow_module_level=True)

from codegen.model import load  # noqa: E402
from reftorch import _cuda_launch as launch  # noqa: E402
from reftorch.kernels import cpu  # noqa: E402

gk = launch.kernels()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REGISTRY = {op.name: op for op in load(os.path.join(ROOT, "reftorch", "ops.yaml"))}
FAMILY_DTYPE = {"bool": np.dtype(np.bool_), "int": np.dtype(np.int64), "float": np.dtype(np.float32),
                "complex": np.dtype(np.complex64)}
GRID = (2, 32)
launch.configure(threads=GRID[1], tree_threads=GRID[1], max_blocks=GRID[0])
np.seterr(all="ignore")
# The simulator runs a block's threads as Python threads and polls them at every syncthreads(); with
# the default 5 ms GIL switch interval each barrier waits out several switches (5x slower here).
sys.setswitchinterval(1e-4)


def families(name, info):
    op = REGISTRY[info["op"]]
    if name.startswith("_bw_"):
        return ["float"]
    return [f for f in op.test.dtypes if f in op.dtypes] or list(op.dtypes)


def cases(kind):
    out = []
    for name, info in sorted(gk.KERNELS.items()):
        if info["kind"] != kind:
            continue
        for fam in families(name, info):
            for suffix in info["kernels"]:
                out.append(pytest.param(name, fam, suffix, id=f"{name}-{suffix}-{fam}"))
    return out


# ---------------------------------------------------------------------------- inputs

def arg_type(op, name):
    for a in op.signature.args:
        if a.name == name:
            return a.type
    return "Tensor"   # grad, result


def domain(op, name, grad_kernel):
    doms = dict((k, (lo, hi)) for k, lo, hi in op.test.domain)
    if grad_kernel:
        doms.update((k, (lo, hi)) for k, lo, hi in op.test.grad_domain)
    return doms.get(name, (-3.0, 3.0))


def values(rng, dtype, lo, hi, n):
    if dtype == np.bool_:
        return rng.random(n) < 0.5
    if dtype.kind in "iu":
        a, b = max(math.ceil(lo), -9), min(math.floor(hi), 9)
        return rng.integers(a, max(a, b) + 1, n).astype(dtype)
    if dtype.kind == "c":       # both parts in the domain
        return (rng.uniform(lo, hi, n) + 1j * rng.uniform(lo, hi, n)).astype(dtype)
    return rng.uniform(lo, hi, n).astype(dtype)


def input_dtype(op, name, compute):
    t = arg_type(op, name)
    return {"Mask": np.dtype(np.bool_), "Index": np.dtype(np.int64), "Index?": np.dtype(np.int64)}.get(t, compute)


def scalar_values(op, names, compute):
    """The kernel's scalar arguments as the dispatcher passes them (_dispatch._scalar_arg)."""
    given = dict(op.test.args)
    out = []
    for name in names:
        src = given.get(name)
        if src is None:
            src = next((a.default for a in op.signature.args if a.name == name), None)
        v = eval(src, {"np": np, "math": math, "inf": math.inf}) if src is not None else 1
        if v is None or isinstance(v, bool):
            out.append(v if compute.kind != "f" or v is None else float(v))
        elif compute.kind == "c":
            out.append(complex(v))
        elif compute.kind == "f":
            out.append(float(v))
        else:
            out.append(v if isinstance(v, float) and v != int(v) else int(v))
    return out


def out_dtype(op, grad_kernel, compute):
    if grad_kernel:
        return compute
    if op.result == "bool":
        return np.dtype(np.bool_)
    if op.result == "int64":
        return np.dtype(np.int64)
    if op.result in ("real", "real_float") and compute.kind == "c":
        return np.dtype(np.float32 if compute == np.complex64 else np.float64)
    if op.result in ("float", "real_float") and compute.kind not in "fc":
        return np.dtype(np.float32)
    return compute


def compare(got, want, op):
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    elif want.dtype.kind == "c" and op.reduce is not None and "logaddexp" in op.reduce.combine:
        # a complex log is defined up to 2 pi i: the tree scan's merges wrap the imaginary part where the CPU's
        # serial fold does not (torch's CUDA scan is a tree too), so the parts are compared modulo 2 pi
        np.testing.assert_allclose(got.real, want.real, rtol=max(op.test.rtol, 2e-5), atol=max(op.test.atol, 1e-5))
        turns = (got.imag - want.imag) / (2 * np.pi)
        np.testing.assert_allclose(turns, np.round(turns), atol=1e-5)
    else:
        np.testing.assert_allclose(got, want, rtol=max(op.test.rtol, 2e-5), atol=max(op.test.atol, 1e-5),
                                   equal_nan=True)


def setup_elementwise(name, fam, seed):
    info = gk.KERNELS[name]
    op = REGISTRY[info["op"]]
    grad_kernel = name.startswith("_bw_")
    compute = np.dtype(np.float64) if grad_kernel else FAMILY_DTYPE[fam]
    if op.result == "float" and compute.kind not in "fc":
        compute = np.dtype(np.float32)          # the dispatcher casts integer inputs to the default float
    rng = np.random.default_rng(seed)
    dts = [input_dtype(op, t, compute) for t in info["tensors"]]
    doms = [domain(op, t, grad_kernel) for t in info["tensors"]]
    if compute != FAMILY_DTYPE[fam] and not grad_kernel:     # values of the family, cast as the dispatcher does
        doms = [(lo, hi) if dt != compute else (max(lo, -9), min(hi, 9)) for dt, (lo, hi) in zip(dts, doms)]
        makers = [(lambda size, lo=lo, hi=hi, dt=dt: values(rng, FAMILY_DTYPE[fam], lo, hi, size).astype(dt))
                  for dt, (lo, hi) in zip(dts, doms)]
    else:
        makers = [(lambda size, lo=lo, hi=hi, dt=dt: values(rng, dt, lo, hi, size)) for dt, (lo, hi) in zip(dts, doms)]
    scalars = scalar_values(op, info["scalars"], compute)
    return op, makers, scalars, out_dtype(op, grad_kernel, compute)


# ---------------------------------------------------------------------------- elementwise

@pytest.mark.parametrize("name, fam, suffix", cases("elementwise"))
def test_elementwise(name, fam, suffix):
    op, makers, scalars, odt = setup_elementwise(name, fam, 0)
    if suffix == "contig":
        n = 517
        ins = [make(n) for make in makers]
        want = np.zeros(n, odt)
        getattr(cpu, f"{name}_contig")(want, *ins, *scalars)
        got = np.zeros(n, odt)
        launch.elementwise_contig(name, got, ins, scalars)
        compare(got, want, op)
        return
    # strided: a transposed, a broadcast (stride 0), a reversed (negative stride, offset) and a
    # stepped operand, rotated over the inputs; the output is itself transposed, at an offset inside a
    # larger buffer. The expected values: the CPU contiguous kernel over the gathered operands.
    shape = (6, 5, 11)
    n = int(np.prod(shape))
    o_off, o_st = 3, (1, 6 * 11, 6)
    for rotation in (0, 2):
        ins = []
        for i, make in enumerate(makers):
            ins.append(strided_operand((i + rotation) % 4, shape, make))
        flat = np.zeros(n, odt)
        getattr(cpu, f"{name}_contig")(flat, *[np.ascontiguousarray(gather(*a, shape)).reshape(-1) for a in ins],
                                       *scalars)
        want = np.zeros(n + 7, odt)
        gather(want, o_off, o_st, shape)[...] = flat.reshape(shape)
        got = np.zeros(n + 7, odt)
        launch.elementwise_strided(name, shape, got, o_off, o_st, ins, scalars)
        compare(got, want, op)


def gather(arr, off, strides, shape):
    """The view (off, strides in elements) of a flat array, as NumPy sees it."""
    item = arr.itemsize
    return np.lib.stride_tricks.as_strided(arr[off:], shape, tuple(s * item for s in strides))


def strided_operand(layout, shape, make):
    """(flat array, offset, strides) of a view of `shape` in one of four layouts."""
    d0, d1, d2 = shape
    if layout == 0:      # transposed: a (d2, d1, d0) array seen as (d0, d1, d2)
        return make(d0 * d1 * d2), 0, (1, d0, d0 * d1)
    if layout == 1:      # broadcast along dim 1
        return make(d0 * d2), 0, (d2, 0, 1)
    if layout == 2:      # reversed along dim 0
        return make(d0 * d1 * d2), (d0 - 1) * d1 * d2, (-d1 * d2, d2, 1)
    return make(d0 * d1 * 2 * d2), 0, (d1 * 2 * d2, 2 * d2, 2)    # every other element of the last dim


# ---------------------------------------------------------------------------- reductions

# (M, sm, K, sk): rows reduced along the inner axis, along the outer axis, and everything into one
LAYOUTS = {"inner": (5, 300, 300, 1), "outer": (12, 1, 40, 12), "all": (1, 777, 777, 1)}


def reduce_input(op, fam, n, rng, ties=False):
    dt = FAMILY_DTYPE[fam]
    if op.result == "float" and dt.kind not in "fc":
        dt = np.dtype(np.float32)                      # the dispatcher casts integer inputs first
    if ties and dt.kind == "f":
        return (rng.integers(-6, 6, n) / 2).astype(dt)
    lo, hi = domain(op, "self", False)
    return values(rng, dt, lo, hi, n)


def acc_dtype(op, dt):
    rule = op.reduce.accumulate
    if rule == "wide":
        return np.dtype({"f": np.float64, "c": np.complex128}.get(dt.kind, np.int64))
    if rule == "float64" and dt.kind == "c":
        return np.dtype(np.complex128)      # a complex scan's float64 (reftorch/_args.py _acc_dtype)
    return {"float64": np.dtype(np.float64), "int64": np.dtype(np.int64), "bool": np.dtype(np.bool_)}.get(rule, dt)


def identity(src, dt):
    v = {"inf": np.inf, "-inf": -np.inf}.get(str(src))
    if v is None:
        v = complex(float(src)) if dt.kind == "c" else float(src) if dt.kind == "f" else \
            (bool(float(src)) if dt.kind == "b" else int(float(src)))
    return v


@pytest.mark.parametrize("name, fam, suffix", cases("reduction"))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_reduction(name, fam, suffix, layout):
    op = REGISTRY[gk.KERNELS[name]["op"]]
    M, sm, K, sk = LAYOUTS[layout]
    rng = np.random.default_rng(1)
    x = reduce_input(op, fam, M * K, rng)
    adt = acc_dtype(op, x.dtype)
    extra = scalar_values(op, gk.KERNELS[name]["scalars"], x.dtype)
    start = 0 if op.reduce.identity is not None else 1
    accs = []
    for run in ("cpu", "cuda"):
        acc = np.full(M, identity(op.reduce.identity, adt), adt) if start == 0 else np.zeros(M, adt)
        if run == "cpu":
            getattr(cpu, f"{name}_reduce")(x, 0, M, sm, K, sk, acc, start, *extra)
        else:
            getattr(gk, f"{name}_{suffix}")[GRID](x, 0, M, sm, K, sk, acc, start, *extra)
        accs.append(acc)
    compare(accs[1], accs[0], op)


@pytest.mark.parametrize("name, fam, suffix", cases("argreduction"))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_argreduction(name, fam, suffix, layout):
    op = REGISTRY[gk.KERNELS[name]["op"]]
    M, sm, K, sk = LAYOUTS[layout]
    x = reduce_input(op, fam, M * K, np.random.default_rng(2), ties=True)
    want = np.zeros(M, np.int64)
    getattr(cpu, f"{name}_reduce")(x, 0, M, sm, K, sk, want)
    got = np.zeros(M, np.int64)
    getattr(gk, f"{name}_{suffix}")[GRID](x, 0, M, sm, K, sk, got)
    np.testing.assert_array_equal(got, want)


SCAN_LAYOUTS = {"inner": (3, 100, 100, 1), "outer": (12, 1, 9, 12)}


@pytest.mark.parametrize("name, fam, suffix", cases("scan"))
@pytest.mark.parametrize("layout", sorted(SCAN_LAYOUTS))
def test_scan(name, fam, suffix, layout):
    op = REGISTRY[gk.KERNELS[name]["op"]]
    M, sm, K, sk = SCAN_LAYOUTS[layout]
    x = reduce_input(op, fam, M * K, np.random.default_rng(3))
    adt = acc_dtype(op, x.dtype)
    acc0 = np.full(1, identity(op.reduce.identity, adt), adt)
    want = np.zeros(M * K, adt)
    getattr(cpu, f"{name}_scan")(x, 0, M, sm, K, sk, want, acc0)
    got = np.zeros(M * K, adt)
    getattr(gk, f"{name}_{suffix}")[GRID](x, 0, M, sm, K, sk, got, acc0)
    compare(got, want, op)


def test_launcher_picks_a_kernel_for_every_layout():
    """launch.reduce / argreduce / scan choose tree or serial kernels by geometry; both give the CPU result."""
    for name, info in gk.KERNELS.items():
        if info["kind"] not in ("reduction", "argreduction", "scan"):
            continue
        op = REGISTRY[info["op"]]
        fam = families(name, info)[-1]
        for M, sm, K, sk in LAYOUTS.values():
            x = reduce_input(op, fam, M * K, np.random.default_rng(4), ties=info["kind"] == "argreduction")
            if info["kind"] == "argreduction":
                want, got = np.zeros(M, np.int64), np.zeros(M, np.int64)
                getattr(cpu, f"{name}_reduce")(x, 0, M, sm, K, sk, want)
                launch.argreduce(name, x, 0, M, sm, K, sk, got)
                np.testing.assert_array_equal(got, want)
                continue
            adt = acc_dtype(op, x.dtype)
            if info["kind"] == "scan":
                acc0 = np.full(1, identity(op.reduce.identity, adt), adt)
                want, got = np.zeros(M * K, adt), np.zeros(M * K, adt)
                getattr(cpu, f"{name}_scan")(x, 0, M, sm, K, sk, want, acc0)
                launch.scan(name, x, 0, M, sm, K, sk, got, acc0)
            else:
                extra = scalar_values(op, info["scalars"], x.dtype)
                start = 0 if op.reduce.identity is not None else 1
                init = identity(op.reduce.identity, adt) if start == 0 else 0
                want, got = np.full(M, init, adt), np.full(M, init, adt)
                getattr(cpu, f"{name}_reduce")(x, 0, M, sm, K, sk, want, start, *extra)
                launch.reduce(name, x, 0, M, sm, K, sk, got, start, extra)
            compare(got, want, op)


@pytest.mark.parametrize("name", sorted(n for n, i in gk.KERNELS.items() if i.get("split")))
def test_long_row_split_over_blocks(name, monkeypatch):
    """One long row cut into chunks over the blocks, the partials reduced again (plus a tail chunk)."""
    monkeypatch.setattr(launch, "SPLIT_MIN", 500)
    monkeypatch.setattr(launch, "SPLIT_CHUNK", 100)
    info = gk.KERNELS[name]
    op = REGISTRY[info["op"]]
    for fam in families(name, info):
        x = reduce_input(op, fam, 777, np.random.default_rng(6))
        adt = acc_dtype(op, x.dtype)
        extra = scalar_values(op, info["scalars"], x.dtype)
        start = 0 if op.reduce.identity is not None else 1
        init = identity(op.reduce.identity, adt) if start == 0 else 0
        want = np.full(1, init, adt)
        getattr(cpu, f"{name}_reduce")(x, 0, 1, 777, 777, 1, want, start, *extra)
        got = gk.cuda.to_device(np.full(1, init, adt))          # device arrays: partials stay on the device
        launch.reduce(name, gk.cuda.to_device(x), 0, 1, 777, 777, 1, got, start, extra)
        compare(got.copy_to_host(), want, op)


# ---------------------------------------------------------------------------- matmul

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex64])
def test_matmul(dtype):
    rng = np.random.default_rng(5)
    a = values(rng, np.dtype(dtype), -3, 3, 2 * 33 * 17).reshape(2, 33, 17)
    b = values(rng, np.dtype(dtype), -3, 3, 2 * 20 * 17).reshape(2, 20, 17).transpose(0, 2, 1)  # a strided b
    got = np.zeros((2, 33, 20), dtype)
    launch.matmul(a, b, got)
    want = np.matmul(a, b)
    if np.dtype(dtype).kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_array_equal(got, want)


def test_matmul_empty_inner_dim_gives_zeros():
    a, b = np.zeros((1, 3, 0), np.float64), np.zeros((1, 0, 4), np.float64)
    got = np.full((1, 3, 4), np.nan)
    launch.matmul(a, b, got)
    np.testing.assert_array_equal(got, np.zeros((1, 3, 4)))


def test_every_cpu_kernel_has_a_cuda_kernel():
    """The CPU module's elementwise/reduction/scan kernels all have CUDA counterparts."""
    missing = []
    for attr in dir(cpu):
        for suffix in ("_contig", "_strided", "_reduce", "_scan"):
            if attr.endswith(suffix) and not attr.startswith("__"):
                name = attr[: -len(suffix)]
                if name not in gk.KERNELS:
                    missing.append(attr)
    assert not missing, f"CPU kernels with no CUDA kernel: {missing}"
