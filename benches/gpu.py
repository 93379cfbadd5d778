"""reftorch's generated CUDA kernels on a real GPU: every kernel checked against the CPU kernel, then
elementwise, reduction and matmul throughput beside PyTorch CUDA (when importable).

The second half goes through the device plumbing, as users do: reftorch tensors on `cuda`, one op of
each kind (and autograd) checked against the same op on cpu, and timings of tensor-level add, sum and
matmul and of the demo's training step (MLP, batch 32, Adam) on cuda, on cpu and in PyTorch CUDA.

    python benches/gpu.py [--quick] [--size N] [--skip-check] [--skip-time] [--only NAME,...] [--json OUT]

Elementwise throughput reads as a fraction of the device's copy bandwidth, measured in the same run
(a device-to-device copy of the same size). Times come from CUDA events around many launches after a
warm-up launch (which compiles the kernel). Without a GPU it says so and exits 0. Under numba's
simulator (NUMBA_ENABLE_CUDASIM=1) it runs too, to exercise this script with a tiny --size; its
numbers then mean nothing.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SIMULATOR = bool(os.environ.get("NUMBA_ENABLE_CUDASIM"))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="check contiguous kernels only, 10M-element workloads")
    p.add_argument("--size", type=int, default=None, help="elements of the elementwise workloads (default 100M)")
    p.add_argument("--skip-check", action="store_true", help="time only")
    p.add_argument("--skip-time", action="store_true", help="check only")
    p.add_argument("--only", default="", help="comma-separated kernel names to check (default: all)")
    p.add_argument("--reps", type=int, default=20, help="launches per timing")
    p.add_argument("--json", default=None, help="write the results here as JSON")
    return p.parse_args(argv)


# ---------------------------------------------------------------------------- the checks

FAMILY_DTYPE = {"bool": np.dtype(np.bool_), "int": np.dtype(np.int64), "float": np.dtype(np.float32)}


def _values(rng, dt, lo, hi, n):
    if dt == np.bool_:
        return rng.random(n) < 0.5
    if dt.kind in "iu":
        a, b = max(math.ceil(lo), -9), min(math.floor(hi), 9)
        return rng.integers(a, max(a, b) + 1, n).astype(dt)
    return rng.uniform(lo, hi, n).astype(dt)


def _scalars(op, names, compute):
    given = dict(op.test.args)
    out = []
    for name in names:
        src = given.get(name) or next((a.default for a in op.signature.args if a.name == name), None)
        v = eval(src, {"np": np, "math": math, "inf": math.inf}) if src is not None else 1
        if v is not None and compute.kind == "f":
            v = float(v)
        elif v is not None and not isinstance(v, bool) and not (isinstance(v, float) and v != int(v)):
            v = int(v)
        out.append(v)
    return out


def _close(got, want, op=None):
    if want.dtype.kind in "biu":
        bad = np.count_nonzero(got != want)
        return bad == 0, f"{bad} of {want.size} differ"
    rtol = max(op.test.rtol if op else 0, 2e-5)
    atol = max(op.test.atol if op else 0, 1e-5)
    ok = np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    with np.errstate(invalid="ignore"):
        err = np.nanmax(np.abs(got.astype(np.float64) - want.astype(np.float64))) if want.size else 0.0
    return ok, f"max |err| {err:.3g}"


class Checker:
    def __init__(self, cuda, launch, cpu, registry, quick):
        self.cuda, self.launch, self.cpu, self.registry, self.quick = cuda, launch, cpu, registry, quick
        self.gk = launch.kernels()
        self.rows = []

    def run(self, only):
        for name, info in sorted(self.gk.KERNELS.items()):
            if only and name not in only:
                continue
            try:
                getattr(self, f"check_{info['kind']}")(name, info)
            except Exception as err:  # noqa: BLE001 -- report every kernel, keep going
                self.rows.append((name, "-", "-", "ERROR", f"{type(err).__name__}: {err}".splitlines()[0][:100]))
                traceback.print_exc(limit=2, file=sys.stderr)
        return self.rows

    def families(self, name, info):
        op = self.registry[info["op"]]
        return ["float"] if name.startswith("_bw_") else ([f for f in op.test.dtypes if f in op.dtypes] or list(op.dtypes))

    def check_elementwise(self, name, info):
        op = self.registry[info["op"]]
        dev = self.cuda.to_device
        for fam in self.families(name, info):
            grad = name.startswith("_bw_")
            compute = np.dtype(np.float64) if grad else FAMILY_DTYPE[fam]
            if op.result == "float" and compute.kind != "f":
                compute = np.dtype(np.float32)
            odt = compute if grad else {"bool": np.dtype(np.bool_), "int64": np.dtype(np.int64)}.get(op.result, compute)
            doms = dict((k, (lo, hi)) for k, lo, hi in op.test.domain)
            rng = np.random.default_rng(0)
            n = 100_003 if not SIMULATOR else 1003
            ins = []
            for t in info["tensors"]:
                ty = next((a.type for a in op.signature.args if a.name == t), "Tensor")
                dt = {"Mask": np.dtype(np.bool_), "Index": np.dtype(np.int64)}.get(ty, compute)
                lo, hi = doms.get(t, (-3.0, 3.0))
                ins.append(_values(rng, FAMILY_DTYPE[fam] if dt == compute and not grad else dt, lo, hi, n).astype(dt))
            sc = _scalars(op, info["scalars"], compute)
            want = np.zeros(n, odt)
            getattr(self.cpu, f"{name}_contig")(want, *ins, *sc)
            d_out = self.cuda.device_array(n, odt)
            self.launch.elementwise_contig(name, d_out, [dev(a) for a in ins], sc)
            self.rows.append((name, "contig", str(compute), *self._verdict(d_out.copy_to_host(), want, op)))
            if self.quick:
                continue
            # strided: every input read transposed, the output written contiguous, shape (rows, cols)
            rows, cols = (317, 331) if not SIMULATOR else (17, 31)
            m = rows * cols
            src = [a[:m].reshape(cols, rows) for a in ins]          # stored (cols, rows), read transposed
            want = np.zeros(m, odt)
            getattr(self.cpu, f"{name}_contig")(want, *[np.ascontiguousarray(a.T).reshape(-1) for a in src], *sc)
            d_out = self.cuda.device_array(m, odt)
            self.launch.elementwise_strided(name, (rows, cols), d_out, 0, (cols, 1),
                                            [(dev(np.ascontiguousarray(a).reshape(-1)), 0, (1, rows)) for a in src], sc)
            self.rows.append((name, "strided", str(compute), *self._verdict(d_out.copy_to_host(), want, op)))

    def _verdict(self, got, want, op):
        ok, detail = _close(got, want, op)
        return ("ok" if ok else "FAIL"), detail

    def _reduce_layouts(self):
        if SIMULATOR:
            return {"inner": (4, 100, 100, 1), "outer": (50, 1, 20, 50), "all": (1, 999, 999, 1)}
        return {"inner": (1000, 1000, 1000, 1), "outer": (1000, 1, 1000, 1000), "all": (1, 1 << 20, 1 << 20, 1)}

    def check_reduction(self, name, info):
        op = self.registry[info["op"]]
        for fam in self.families(name, info):
            for layout, (M, sm, K, sk) in self._reduce_layouts().items():
                x = self._reduce_input(op, fam, M * K)
                adt = _acc_dtype(op, x.dtype)
                extra = _scalars(op, info["scalars"], x.dtype)
                start = 0 if op.reduce.identity is not None else 1
                init = _identity(op.reduce.identity, adt) if start == 0 else 0
                want = np.full(M, init, adt)
                getattr(self.cpu, f"{name}_reduce")(x, 0, M, sm, K, sk, want, start, *extra)
                d_acc = self.cuda.to_device(np.full(M, init, adt))
                self.launch.reduce(name, self.cuda.to_device(x), 0, M, sm, K, sk, d_acc, start, extra)
                self.rows.append((name, layout, str(x.dtype), *self._verdict(d_acc.copy_to_host(), want, op)))

    def check_argreduction(self, name, info):
        op = self.registry[info["op"]]
        for fam in self.families(name, info):
            for layout, (M, sm, K, sk) in self._reduce_layouts().items():
                x = self._reduce_input(op, fam, M * K, ties=True)
                want = np.zeros(M, np.int64)
                getattr(self.cpu, f"{name}_reduce")(x, 0, M, sm, K, sk, want)
                d_out = self.cuda.to_device(np.zeros(M, np.int64))
                self.launch.argreduce(name, self.cuda.to_device(x), 0, M, sm, K, sk, d_out)
                self.rows.append((name, layout, str(x.dtype), *self._verdict(d_out.copy_to_host(), want, op)))

    def check_scan(self, name, info):
        op = self.registry[info["op"]]
        for fam in self.families(name, info):
            scan_layouts = {"inner": (100, 1000, 1000, 1), "outer": (1000, 1, 100, 1000)} if not SIMULATOR else \
                {"inner": (3, 100, 100, 1), "outer": (30, 1, 10, 30)}
            for layout, (M, sm, K, sk) in scan_layouts.items():
                x = self._reduce_input(op, fam, M * K)
                adt = _acc_dtype(op, x.dtype)
                acc0 = np.full(1, _identity(op.reduce.identity, adt), adt)
                want = np.zeros(M * K, adt)
                getattr(self.cpu, f"{name}_scan")(x, 0, M, sm, K, sk, want, acc0)
                d_out = self.cuda.device_array(M * K, adt)
                self.launch.scan(name, self.cuda.to_device(x), 0, M, sm, K, sk, d_out, self.cuda.to_device(acc0))
                self.rows.append((name, layout, str(x.dtype), *self._verdict(d_out.copy_to_host(), want, op)))

    def check_matmul(self, name, info):
        rng = np.random.default_rng(1)
        M, K, N = (200, 300, 150) if not SIMULATOR else (20, 30, 15)
        for dt in (np.float32, np.float64, np.int64):
            a = _values(rng, np.dtype(dt), -3, 3, 2 * M * K).reshape(2, M, K)
            b = _values(rng, np.dtype(dt), -3, 3, 2 * K * N).reshape(2, K, N)
            d_out = self.cuda.device_array((2, M, N), dt)
            self.launch.matmul(self.cuda.to_device(a), self.cuda.to_device(b), d_out)
            ok, detail = _close(d_out.copy_to_host(), np.matmul(a, b))
            if np.dtype(dt).kind == "f":
                ok = np.allclose(d_out.copy_to_host(), np.matmul(a, b), rtol=1e-4, atol=1e-3)
            self.rows.append((name, "tiled", np.dtype(dt).name, "ok" if ok else "FAIL", detail))

    def _reduce_input(self, op, fam, n, ties=False):
        dt = FAMILY_DTYPE[fam]
        if op.result == "float" and dt.kind != "f":
            dt = np.dtype(np.float32)
        rng = np.random.default_rng(2)
        if ties and dt.kind == "f":
            return (rng.integers(-6, 6, n) / 2).astype(dt)
        doms = dict((k, (lo, hi)) for k, lo, hi in op.test.domain)
        lo, hi = doms.get("self", (-3.0, 3.0))
        if op.name in ("prod", "cumprod") and dt.kind == "f":
            lo, hi = 0.99, 1.01                    # long products stay finite
        return _values(rng, dt, lo, hi, n)


def _acc_dtype(op, dt):
    rule = op.reduce.accumulate
    if rule == "wide":
        return np.dtype(np.float64) if dt.kind == "f" else np.dtype(np.int64)
    return {"float64": np.dtype(np.float64), "int64": np.dtype(np.int64), "bool": np.dtype(np.bool_)}.get(rule, dt)


def _identity(src, dt):
    v = {"inf": np.inf, "-inf": -np.inf}.get(str(src))
    if v is None:
        v = float(src) if dt.kind == "f" else (bool(float(src)) if dt.kind == "b" else int(float(src)))
    return v


# ---------------------------------------------------------------------------- the timings

def gpu_seconds(cuda, fn, reps):
    """Seconds per call: a warm-up call (compiles), then CUDA events around `reps` calls."""
    fn()
    cuda.synchronize()
    if SIMULATOR:                       # the simulator's events keep no time
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - t) / reps
    start, end = cuda.event(timing=True), cuda.event(timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return cuda.event_elapsed_time(start, end) / 1e3 / reps


def torch_seconds(torch, fn, reps):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / reps


def timings(cuda, launch, torch, n, reps):
    """(workload, seconds, amount, unit, torch seconds or None) rows; amount/seconds is the throughput."""
    gk = launch.kernels()
    rows = []
    rng = np.random.default_rng(0)
    a = cuda.to_device(rng.random(n, dtype=np.float32))
    b = cuda.to_device(rng.random(n, dtype=np.float32))
    out = cuda.device_array(n, np.float32)
    ta = tb = None
    if torch is not None:
        ta = torch.as_tensor(a.copy_to_host(), device="cuda")
        tb = torch.as_tensor(b.copy_to_host(), device="cuda")

    def t_or_none(fn):
        return torch_seconds(torch, fn, reps) if torch is not None else None

    copy = gpu_seconds(cuda, lambda: out.copy_to_device(a), reps)
    rows.append(("copy (device to device)", copy, 8 * n, "B", t_or_none(lambda: ta.clone())))
    rows.append(("add float32 (contiguous)", gpu_seconds(cuda, lambda: launch.elementwise_contig("add", out, [a, b], [1.0]), reps),
                 12 * n, "B", t_or_none(lambda: torch.add(ta, tb))))
    if "exp" in gk.KERNELS:
        rows.append(("exp float32 (contiguous)", gpu_seconds(cuda, lambda: launch.elementwise_contig("exp", out, [a]), reps),
                     8 * n, "B", t_or_none(lambda: torch.exp(ta))))
    side = int(math.isqrt(n))
    m = side * side
    rows.append((f"add float32 ({side}x{side}, one operand transposed)",
                 gpu_seconds(cuda, lambda: launch.elementwise_strided("add", (side, side), out, 0, (side, 1),
                                                                       [(a, 0, (side, 1)), (b, 0, (1, side))], [1.0]), reps),
                 12 * m, "B", t_or_none(lambda: torch.add(ta[:m].view(side, side), tb[:m].view(side, side).t()))))
    acc = cuda.device_array(1, np.float64)
    zero = cuda.to_device(np.zeros(1, np.float64))

    def full_sum():
        acc.copy_to_device(zero)                   # device to device: no synchronising host copy
        launch.reduce("sum", a, 0, 1, n, n, 1, acc, 0)
    rows.append(("sum float32, all elements", gpu_seconds(cuda, full_sum, reps), 4 * n, "B", t_or_none(lambda: ta.sum())))
    K = 1024
    M = n // K
    acc_rows = cuda.to_device(np.zeros(M, np.float64))
    rows.append((f"sum float32 over rows ({M}x{K}, dim=1)",
                 gpu_seconds(cuda, lambda: launch.reduce("sum", a, 0, M, K, K, 1, acc_rows, 0), reps), 4 * M * K, "B",
                 t_or_none(lambda: ta[:M * K].view(M, K).sum(dim=1))))
    rows.append((f"sum float32 over columns ({K}x{M}, dim=0)",
                 gpu_seconds(cuda, lambda: launch.reduce("sum", a, 0, M, 1, K, M, acc_rows, 0), reps), 4 * M * K, "B",
                 t_or_none(lambda: ta[:M * K].view(K, M).sum(dim=0))))
    mm = 4096 if n >= 50_000_000 else (1024 if n >= 1_000_000 else 64)
    for dt, name in ((np.float32, "float32"), (np.float64, "float64")):
        x = cuda.to_device(rng.random((1, mm, mm)).astype(dt))
        y = cuda.to_device(rng.random((1, mm, mm)).astype(dt))
        z = cuda.device_array((1, mm, mm), dt)
        tx = torch.as_tensor(x.copy_to_host()[0], device="cuda") if torch is not None else None
        rows.append((f"matmul {name} {mm}x{mm}x{mm} (tiled, shared memory)",
                     gpu_seconds(cuda, lambda: launch.matmul(x, y, z), max(2, reps // 4)), 2 * mm ** 3, "FLOP",
                     t_or_none(lambda: torch.matmul(tx, tx))))
    return rows


# ---------------------------------------------------------------------------- through the device plumbing

def tensor_checks():
    """(op, 'tensor', dtype, verdict, detail) rows: reftorch ops on cuda tensors against the same ops on cpu."""
    import reftorch as rt
    rng = np.random.default_rng(3)
    a = rt.tensor(rng.standard_normal((33, 47)).astype(np.float32))
    b = rt.tensor(rng.standard_normal((47,)).astype(np.float32))
    w = rt.tensor(rng.standard_normal((47, 29)).astype(np.float32))
    idx = rt.tensor(rng.integers(0, 47, (33, 5)))
    cases = {
        "exp (strided)": lambda x, y, m, i: x.t().exp(),
        "mul+add (broadcast, scalar)": lambda x, y, m, i: x * y + 2,
        "where": lambda x, y, m, i: rt.where(x > 0, x, y),
        "sum(dim=1)": lambda x, y, m, i: x.sum(1),
        "amax (all)": lambda x, y, m, i: x.amax(),
        "argmax(dim=0)": lambda x, y, m, i: x.argmax(0),
        "cumsum(dim=1)": lambda x, y, m, i: x.cumsum(1),
        "matmul": lambda x, y, m, i: x @ m,
        "matmul (vector)": lambda x, y, m, i: x @ y,
        "cat": lambda x, y, m, i: rt.cat([x, x[:3]]),
        "sort": lambda x, y, m, i: x.sort(1).values,
        "gather": lambda x, y, m, i: x.gather(1, i),
        "softmax": lambda x, y, m, i: rt.softmax(x, 1),
        "to(float64)": lambda x, y, m, i: x.to(rt.float64),
    }
    rows = []
    for name, fn in cases.items():
        try:
            want = fn(a, b, w, idx)
            got = fn(a.cuda(), b.cuda(), w.cuda(), idx.cuda())
            ok, detail = _close(got.cpu().numpy(), want.numpy())
            ok = ok and got.is_cuda
        except Exception as err:  # noqa: BLE001 -- a failing op is a row of the table, not the end of the run
            ok, detail = False, f"{type(err).__name__}: {err}"
        rows.append((name, "tensor", "float32", "ok" if ok else "FAIL", detail))
    try:                                        # autograd through a small net
        grads = []
        for dev in ("cpu", "cuda"):
            x = a.detach().to(dev).requires_grad_()
            m = w.detach().to(dev).requires_grad_()
            ((x @ m).tanh().logsumexp(1).mean()).backward()
            grads.append((x.grad.cpu().numpy(), m.grad.cpu().numpy()))
        ok = all(np.allclose(g1, g0, rtol=1e-4, atol=1e-5) for g0, g1 in zip(*grads))
        rows.append(("autograd (matmul, tanh, logsumexp)", "tensor", "float32", "ok" if ok else "FAIL", ""))
    except Exception as err:  # noqa: BLE001
        rows.append(("autograd (matmul, tanh, logsumexp)", "tensor", "float32", "FAIL", f"{type(err).__name__}: {err}"))
    return rows


def _demo_step(rt, dev, seed=0):
    """A callable running one training step of the demo's MLP on `dev` (batch 32, Adam)."""
    from reftorch.demo import make_mlp
    rt.manual_seed(seed)
    model = make_mlp().to(dev)
    opt = rt.optim.Adam(model.parameters(), lr=4e-3)
    x = rt.randn(32, 1, 8, 8).to(dev)
    y = rt.randint(0, 10, (32,)).to(dev)
    loss_fn = rt.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _torch_demo_step(torch):
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64),
                                torch.nn.ReLU(), torch.nn.Linear(64, 10)).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=4e-3)
    x, y = torch.randn(32, 1, 8, 8, device="cuda"), torch.randint(0, 10, (32,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _wall_seconds(fn, reps, sync):
    fn()
    sync()
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    sync()
    return (time.perf_counter() - t) / reps


def tensor_timings(torch, n, reps):
    """Rows like timings(), measured on reftorch tensors (wall clock, synchronised): the dispatcher's cost
    included. The demo step also runs on cpu (its time is the 'amount' column's reference)."""
    import reftorch as rt
    sync = rt.cuda.synchronize
    rows = []
    a, b = rt.rand(n, device="cuda"), rt.rand(n, device="cuda")
    ta = tb = None
    if torch is not None:
        ta, tb = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")

    def t_or_none(fn):
        return _wall_seconds(fn, reps, torch.cuda.synchronize) if torch is not None else None
    rows.append(("tensors: a + b float32", _wall_seconds(lambda: a + b, reps, sync), 12 * n, "B",
                 t_or_none(lambda: ta + tb)))
    rows.append(("tensors: a.sum() float32", _wall_seconds(lambda: a.sum(), reps, sync), 4 * n, "B",
                 t_or_none(lambda: ta.sum())))
    mm = 2048 if n >= 50_000_000 else (512 if n >= 1_000_000 else 32)
    x = rt.rand(mm, mm, device="cuda")
    tx = torch.rand(mm, mm, device="cuda") if torch is not None else None
    rows.append((f"tensors: x @ x float32 {mm}x{mm}", _wall_seconds(lambda: x @ x, max(2, reps // 4), sync),
                 2 * mm ** 3, "FLOP", t_or_none(lambda: tx @ tx)))
    steps = max(2, reps // 2)
    cpu_step = _wall_seconds(_demo_step(rt, "cpu"), steps, lambda: None)
    gpu_step = _wall_seconds(_demo_step(rt, "cuda"), steps, sync)
    rows.append(("demo MLP training step (batch 32, Adam), cuda", gpu_step, 0, "step",
                 _wall_seconds(_torch_demo_step(torch), steps, torch.cuda.synchronize) if torch is not None else None))
    rows.append(("demo MLP training step (batch 32, Adam), reftorch cpu", cpu_step, 0, "step", None))
    return rows


# ---------------------------------------------------------------------------- main

def main(argv=None):
    args = parse_args(argv)
    try:
        from numba import cuda
        available = cuda.is_available()
    except Exception as err:  # noqa: BLE001
        print(f"benches/gpu.py: numba.cuda does not load ({err}); nothing to measure.")
        return 0
    if not available:
        print("benches/gpu.py: no CUDA GPU here (numba.cuda.is_available() is False); nothing to measure.\n"
              "The simulator and PTX checks (tests/test_cuda_simulator.py, tests/test_cuda_ptx.py) run without one.")
        return 0
    from codegen.model import load
    from reftorch import _cuda_launch as launch
    from reftorch.kernels import cpu
    registry = {op.name: op for op in load(os.path.join(ROOT, "reftorch", "ops.yaml"))}
    if SIMULATOR:
        print("benches/gpu.py: running under numba's CUDA simulator -- a dry run of this script; numbers mean nothing.")
        launch.configure(threads=32, tree_threads=32, max_blocks=2)
        dev_name = "numba CUDA simulator"
    else:
        dev = cuda.get_current_device()
        dev_name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
        print(f"device: {dev_name}, compute capability {dev.compute_capability}, "
              f"{getattr(dev, 'MULTIPROCESSOR_COUNT', '?')} SMs")
    try:
        import torch
        if not torch.cuda.is_available():
            torch = None
    except ImportError:
        torch = None
    print(f"PyTorch: {torch.__version__ if torch is not None else 'not importable (its columns stay blank)'}")
    result = {"device": dev_name, "checks": [], "timings": []}
    failures = 0
    if not args.skip_check:
        only = {s for s in args.only.split(",") if s}
        t0 = time.perf_counter()
        rows = Checker(cuda, launch, cpu, registry, args.quick).run(only)
        bad = [r for r in rows if r[3] != "ok"]
        failures = len(bad)
        print(f"\nchecks: {len(rows) - len(bad)} of {len(rows)} kernel runs match the CPU kernels "
              f"({time.perf_counter() - t0:.0f} s, compiles included)")
        for r in bad:
            print(f"  {r[3]:5} {r[0]} [{r[1]}, {r[2]}]: {r[4]}")
        t0 = time.perf_counter()
        trows = tensor_checks()
        tbad = [r for r in trows if r[3] != "ok"]
        failures += len(tbad)
        print(f"tensor checks (device plumbing): {len(trows) - len(tbad)} of {len(trows)} ops on cuda tensors match "
              f"the cpu ({time.perf_counter() - t0:.0f} s)")
        for r in tbad:
            print(f"  {r[3]:5} {r[0]}: {r[4]}")
        result["checks"] = rows + trows
    if not args.skip_time:
        n = args.size or (10_000_000 if args.quick else 100_000_000)
        rows = timings(cuda, launch, torch, n, args.reps if not SIMULATOR else 1)
        rows += tensor_timings(torch, n, args.reps if not SIMULATOR else 1)
        copy_bw = rows[0][2] / rows[0][1]
        print(f"\n{'workload':56} {'reftorch':>10} {'rate':>12} {'of copy BW':>10} {'PyTorch':>10} {'PT/rt':>7}")
        for name, sec, amount, unit, tsec in rows:
            rate = amount / sec
            rate_s = f"{rate / 1e9:.0f} GB/s" if unit == "B" else (f"{rate / 1e12:.2f} TFLOP/s" if unit == "FLOP" else "")
            frac = f"{rate / copy_bw:.0%}" if unit == "B" else ""
            ts = f"{tsec * 1e3:.3f} ms" if tsec else ""
            ratio = f"{tsec / sec:.2f}" if tsec else ""
            print(f"{name:56} {sec * 1e3:7.3f} ms {rate_s:>12} {frac:>10} {ts:>10} {ratio:>7}")
            result["timings"].append(dict(workload=name, seconds=sec, amount=amount, unit=unit, torch_seconds=tsec))
        print("(PT/rt: PyTorch's time over reftorch's; above 1 reftorch is faster)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=str)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
