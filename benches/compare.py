"""reftorch side by side with NumPy and PyTorch, in one run: ratios are what count.

    python benches/compare.py [--quick] [--json out.json] [--torch-python PATH] [--only SUBSTRING] [--default-threads]

PyTorch is optional and never a dependency of reftorch. When `import torch` works in this Python it
is timed in-process; otherwise `--torch-python /path/to/python` (or REFTORCH_BENCH_TORCH_PYTHON) names
a Python that has torch (e.g. a separate venv: `python -m venv /tmp/tv && /tmp/tv/bin/pip install
torch==2.13.0 numpy`), and the same workloads run there in a subprocess during this run. Without
either, the torch columns are blank.

The libraries take turns (--rounds, default 3) and each workload keeps its best turn. Within a turn each
workload runs a warm-up first, then the median of many repetitions (per-op overheads: the
median of 5 CPU-time timings of many back-to-back calls; the MLP step: CPU time too, since small
single-threaded work is what a shared machine's wall clock distorts most). Everything runs single-threaded (BLAS threads and
torch.set_num_threads(1)), so the ratios compare the libraries, not thread pools on a shared machine;
--default-threads leaves both at their defaults instead (every usable core: threads by size, for large ops).
The machine's own limits (a large copy's GB/s, numpy.matmul's GFLOP/s) are measured in the same run
so every throughput also reads as a fraction of what the hardware gives. `import reftorch` and the
first op run in fresh processes, with a warm and a cold kernel cache (wall and CPU seconds: wall time
on a busy machine includes waiting for a core).
"""
from __future__ import annotations

import os

DEFAULT_THREADS = "--default-threads" in __import__("sys").argv     # read before argparse: the BLAS reads the env at load
if not DEFAULT_THREADS:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "REFTORCH_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
        os.environ.setdefault(_var, "1")     # before NumPy loads its BLAS (reftorch's threads: parallel_threshold)

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timeit(fn, reps, warmup=2, clock=time.perf_counter):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t = clock()
        fn()
        times.append(clock() - t)
    return statistics.median(times)


def per_call(fn, n):
    """Median of 5 timings of n back-to-back calls, per call (for microsecond overheads). CPU time of this
    process: these calls are single-threaded, and on a shared machine wall time adds other processes' turns."""
    for _ in range(max(n // 10, 10)):
        fn()
    best = []
    for _ in range(5):
        t = time.process_time()
        for _ in range(n):
            fn()
        best.append((time.process_time() - t) / n)
    return statistics.median(best)


# ------------------------------------------------------------------------------------ the workloads

class Lib:
    """What a workload needs from a library: its module and how it wraps a NumPy array."""

    def __init__(self, name, mod):
        self.name, self.mod = name, mod

    def arr(self, a):
        if self.name == "numpy":
            return a
        return self.mod.from_numpy(a)

    def grad_leaf(self, a):
        if self.name == "numpy":
            return None
        return self.mod.from_numpy(a).requires_grad_()


def gelu_chain(x, tanh):
    # the tanh form of GELU written as 6 eager ops
    inner = (x + 0.044715 * x * x * x) * 0.7978845608028654
    return 0.5 * x * (1 + tanh(inner))


def workloads(lib, q):
    """(name, fn or None, options) for every workload, built for one library from the same seeded data."""
    rng = np.random.default_rng(0)
    np_ = lib.name == "numpy"
    m = lib.mod
    out = []
    per_n = 2000 if q else 20000

    N = 2_000_000 if q else 10_000_000
    xn, yn = rng.random(N, np.float32), rng.random(N, np.float32)
    x, y = lib.arr(xn), lib.arr(yn)
    out.append((f"add {N // 10**6}M float32", lambda: x + y, dict(bytes=3 * xn.nbytes)))
    out.append((f"exp {N // 10**6}M float32", (lambda: np.exp(x)) if np_ else (lambda: x.exp()),
                dict(bytes=2 * xn.nbytes)))
    for name in ("tanh", "log", "sigmoid"):     # the vectorised float32 transcendentals (codegen/templates/vmath.py)
        if np_:
            fn = (lambda: 1 / (1 + np.exp(-x))) if name == "sigmoid" else (lambda f=getattr(np, name): f(x))
        else:
            fn = lambda f=name: getattr(x, f)()
        out.append((f"{name} {N // 10**6}M float32", fn, dict(bytes=2 * xn.nbytes)))
    M = N * 2 // 5
    gn = rng.standard_normal(M, np.float32)
    g = lib.arr(gn)
    tanh = np.tanh if np_ else m.tanh
    out.append((f"gelu-tanh 6-op chain {M / 1e6:.0f}M eager", lambda: gelu_chain(g, tanh), dict(bytes=2 * gn.nbytes)))
    R, C = (1024, 1024) if q else (4096, 1024)
    an, bn = rng.random((R, C), np.float32), rng.random(C, np.float32)
    a, b = lib.arr(an), lib.arr(bn)
    out.append((f"broadcast add ({R}x{C})+({C},)", lambda: a + b, dict(bytes=2 * an.nbytes)))
    out.append((f"sum dim=1 of ({R},{C})", lambda: a.sum(1), dict(bytes=an.nbytes)))
    out.append((f"sum dim=0 of ({R},{C})", lambda: a.sum(0), dict(bytes=an.nbytes)))
    out.append((f"mean dim=0 of ({R},{C})", lambda: a.mean(0), dict(bytes=an.nbytes)))
    out.append((f"amax dim=0 of ({R},{C})", (lambda: a.max(0)) if np_ else (lambda: a.amax(0)), dict(bytes=an.nbytes)))
    # kept or reduced dims that do not collapse to one axis each (no copy: <op>_reduce_nd)
    cn = rng.random((16, 128, 256) if q else (64, 128, 256), np.float32)
    c3 = lib.arr(cn)
    out.append((f"sum dim=(0,2) of {cn.shape}", lambda: c3.sum((0, 2)), dict(bytes=cn.nbytes)))
    out.append((f"sum dim=1 of {cn.shape}", lambda: c3.sum(1), dict(bytes=cn.nbytes)))
    out.append((f"full sum {N // 10**6}M", lambda: x.sum(), dict(bytes=xn.nbytes)))
    K = 512 if q else 1024
    mn = rng.random((K, K), np.float32)
    mm = lib.arr(mn)
    out.append((f"matmul {K}^3 float32", lambda: mm @ mm, dict(flops=2 * K ** 3)))
    S = 1024 if q else 2048
    pn, qn = rng.random((S, S), np.float32), rng.random((S, S), np.float32)
    pp, qq = lib.arr(pn), lib.arr(qn)
    out.append((f"a.T + b.T ({S},{S})", lambda: pp.T + qq.T, dict(bytes=3 * pn.nbytes)))
    out.append((f"a.T + b ({S},{S})", lambda: pp.T + qq, dict(bytes=3 * pn.nbytes)))

    o1, o2 = lib.arr(np.ones(1, np.float32)), lib.arr(np.ones(1, np.float32))
    out.append(("per-op overhead: a + b, 1 element", lambda: o1 + o2, dict(per_call=per_n)))
    out.append(("per-op overhead: a * 2, 1 element", lambda: o1 * 2, dict(per_call=per_n)))
    out.append(("per-op overhead: a.exp(), 1 element", (lambda: np.exp(o1)) if np_ else (lambda: o1.exp()),
                dict(per_call=per_n)))
    r1 = lib.grad_leaf(np.ones(1, np.float32))
    out.append(("per-op overhead: a + b, 1 element, grad", None if np_ else (lambda: r1 + o2), dict(per_call=per_n)))
    out.append(("per-op overhead: a * 2, 1 element, grad", None if np_ else (lambda: r1 * 2), dict(per_call=per_n)))

    F = 200_000 if q else 1_000_000
    fxn, fwn = rng.random(F, np.float32), rng.random(F, np.float32)

    def fwd_bwd():
        xx = m.from_numpy(fxn)
        w = m.from_numpy(fwn).requires_grad_()
        (xx * w).tanh().sum().backward()

    out.append((f"fwd+bwd (x*w).tanh().sum() {F // 1000}K", None if np_ else fwd_bwd, {}))
    # small tensors, one thread: CPU time (see per_call)
    out.append(("MLP 64-128-128-10 train step (batch 64, Adam)", None if np_ else mlp_step(m), dict(cpu=True)))
    return out


def mlp_step(torch_like):
    """One training step of an MLP: forward, cross-entropy, backward, Adam (the same code for both libraries)."""
    nn = torch_like.nn
    rng = np.random.default_rng(0)
    X = torch_like.from_numpy(rng.standard_normal((64, 64)).astype(np.float32))
    Y = torch_like.from_numpy(rng.integers(0, 10, 64))
    torch_like.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch_like.optim.Adam(model.parameters(), 1e-3)
    lossf = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        lossf(model(X), Y).backward()
        opt.step()
    return step


def time_workloads(lib, q, only):
    """{name: seconds}, and [(name, options)] of every workload in order."""
    reps = 5 if q else 15
    res, meta = {}, []
    for name, fn, opt in workloads(lib, q):
        meta.append((name, opt))
        if fn is None or (only and only not in name):
            continue
        if "per_call" in opt:
            res[name] = per_call(fn, opt["per_call"])
        else:
            res[name] = timeit(fn, reps * 4 if opt.get("cpu") else reps, warmup=10 if opt.get("cpu") else 2,
                               clock=time.process_time if opt.get("cpu") else time.perf_counter)
    return res, meta


# ------------------------------------------------------------------------------------ fresh processes

_STARTUP = """
import sys, time
sys.path.insert(0, {root!r})
T, W = time.process_time, time.perf_counter
t0, w0 = T(), W()
import {mod} as m
t1, w1 = T(), W()
x = m.ones(10)
y = (x + x).sum()
t2, w2 = T(), W()
print(w1 - w0, w2 - w1, t1 - t0, t2 - t1)
"""


def startup_times(python, mod, label_envs):
    """(import s, first op s) wall and CPU, in a fresh process, per environment (after one untimed run that
    fills the bytecode and kernel caches)."""
    out = {}
    for label, extra in label_envs:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}   # as users run it
        env.update(extra)
        code = _STARTUP.format(root=ROOT, mod=mod)
        subprocess.run([python, "-c", code], env=env, capture_output=True)
        runs = []
        for _ in range(3):
            r = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True)
            try:
                runs.append(tuple(map(float, r.stdout.split())))
            except ValueError:
                runs.append((float("nan"),) * 4)
        out[label] = tuple(statistics.median(v[i] for v in runs) for i in range(4))
    return out


def startup_table(torch_python):
    """Print and return the import / first-op times (fresh processes; benches/startup.py splits them by stage)."""
    print()
    startup = {}
    envs = (("warm cache", {}), ("warm cache, REFTORCH_EAGER_INIT=0 (lazy)", {"REFTORCH_EAGER_INIT": "0"}),
            ("cold cache", {"REFTORCH_NO_CACHE": "1"}))
    startup["reftorch"] = startup_times(sys.executable, "reftorch", envs)
    if torch_python:
        startup["torch"] = startup_times(torch_python, "torch", (("", {}),))
    for lib, res in startup.items():
        for label, (imp, first, imp_cpu, first_cpu) in res.items():
            print(f"import {lib}{f' ({label})' if label else ''}: {imp * 1e3:.0f} ms wall, {imp_cpu * 1e3:.0f} ms "
                  f"CPU; first op (ones, add, sum) after import: {first * 1e3:.0f} ms wall, "
                  f"{first_cpu * 1e3:.0f} ms CPU")
    return startup


# ------------------------------------------------------------------------------------ the table

def fmt_t(t):
    if t is None:
        return "-"
    return f"{t * 1e6:.2f}us" if t < 1e-3 else f"{t * 1e3:.2f}ms"


def machine_limits(quick):
    n = 10_000_000 if not quick else 2_000_000
    a = np.random.rand(n).astype(np.float32)
    b = np.empty_like(a)
    t = timeit(lambda: np.copyto(b, a), 10)
    copy_gbs = 2 * a.nbytes / t / 1e9
    m = np.random.rand(1024, 1024).astype(np.float32)
    t = timeit(lambda: np.matmul(m, m), 5)
    gflops = 2 * 1024 ** 3 / t / 1e9
    return copy_gbs, gflops


def torch_times(args):
    """Torch's timings: in this process when torch imports here, else from --torch-python in a subprocess."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        if not DEFAULT_THREADS:
            torch.set_num_threads(1)
        return time_workloads(Lib("torch", torch), args.quick, args.only)[0], sys.executable, torch.__version__
    python = args.torch_python or os.environ.get("REFTORCH_BENCH_TORCH_PYTHON")
    if not python:
        return {}, None, None
    cmd = [python, os.path.abspath(__file__), "--worker", "torch"] + (["--quick"] if args.quick else []) + \
        (["--only", args.only] if args.only else []) + (["--default-threads"] if DEFAULT_THREADS else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"torch worker failed ({python}):\n{r.stderr[-2000:]}", file=sys.stderr)
        return {}, None, None
    data = json.loads(r.stdout.strip().splitlines()[-1])
    return data["times"], python, data["version"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions")
    p.add_argument("--json", default=os.path.join(ROOT, "benches", "compare.json"))
    p.add_argument("--torch-python", help="a Python with torch installed, when this one has none")
    p.add_argument("--only", help="run only the workloads whose name contains this")
    p.add_argument("--rounds", type=int, default=3, help="turns each library takes (each workload: its best turn)")
    p.add_argument("--no-startup", action="store_true", help="skip the import / first-op measurements")
    p.add_argument("--startup-only", action="store_true", help="only the import / first-op measurements")
    p.add_argument("--default-threads", action="store_true",
                   help="both libraries at their default threads (else one thread each)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args()

    if args.worker == "torch":      # the torch side, run by --torch-python: print its times as JSON
        import torch
        if not DEFAULT_THREADS:
            torch.set_num_threads(1)
        times = time_workloads(Lib("torch", torch), args.quick, args.only)[0]
        print(json.dumps(dict(times=times, version=torch.__version__)))
        return

    if args.startup_only:
        try:
            import torch  # noqa: F401
            torch_python = sys.executable
        except ImportError:
            torch_python = args.torch_python or os.environ.get("REFTORCH_BENCH_TORCH_PYTHON")
        startup_table(torch_python)
        return
    sys.path.insert(0, ROOT)
    import reftorch
    copy_gbs, np_gflops = machine_limits(args.quick)
    # the libraries take turns, args.rounds times, and each workload keeps its best time: on a shared machine a
    # burst of other work that lands on one library's turn would otherwise decide its ratios
    t_torch, t_np, t_ours = {}, {}, {}
    for _ in range(args.rounds):
        tt, torch_python, torch_version = torch_times(args)
        tn, meta = time_workloads(Lib("numpy", np), args.quick, args.only)
        to, _ = time_workloads(Lib("reftorch", reftorch), args.quick, args.only)
        for best, new in ((t_torch, tt), (t_np, tn), (t_ours, to)):
            for name, t in new.items():
                best[name] = min(t, best.get(name, t))
    print(f"machine: copy {copy_gbs:.1f} GB/s, numpy.matmul {np_gflops:.1f} GFLOP/s (float32 1024^3, 1 thread), "
          f"torch {torch_version or 'absent'}" + (f" ({torch_python})" if torch_python else "") +
          f"; best of {args.rounds} rounds, the libraries in turn")
    print(f"{'workload':46s} {'reftorch':>10s} {'numpy':>10s} {'torch':>10s} {'x numpy':>8s} {'x torch':>8s}  note")
    print("(x numpy, x torch: the peer's time / reftorch's time -- above 1 means reftorch is faster)")
    rows = []
    for name, opt in meta:
        if name not in t_ours:
            continue
        ours, tn, tt = t_ours[name], t_np.get(name), t_torch.get(name)
        row = dict(workload=name, reftorch_s=ours, numpy_s=tn, torch_s=tt,
                   vs_numpy=(tn / ours) if tn else None, vs_torch=(tt / ours) if tt else None)
        note = ""
        if "bytes" in opt:
            row["GB/s"] = opt["bytes"] / ours / 1e9
            note = f"{row['GB/s']:.1f} GB/s ({row['GB/s'] / copy_gbs:.0%} of copy)"
        if "flops" in opt:
            row["GFLOP/s"] = opt["flops"] / ours / 1e9
            note = f"{row['GFLOP/s']:.1f} GFLOP/s"
        rows.append(row)
        vn = f"{row['vs_numpy']:.2f}" if row["vs_numpy"] else "-"
        vt = f"{row['vs_torch']:.2f}" if row["vs_torch"] else "-"
        print(f"{name:46s} {fmt_t(ours):>10s} {fmt_t(tn):>10s} {fmt_t(tt):>10s} {vn:>8s} {vt:>8s}  {note}", flush=True)

    if not args.only:
        parallel_threshold(args.quick, 5 if args.quick else 15)
    startup = {} if args.no_startup else startup_table(torch_python)
    print_targets(rows, startup)
    with open(args.json, "w") as f:
        json.dump(dict(machine=dict(copy_GBs=copy_gbs, numpy_matmul_GFLOPs=np_gflops), torch=torch_version,
                       rows=rows, startup=startup), f, indent=1)
    print(f"\nwrote {args.json}")


# issue 6's targets: (what, which rows, the test on a row) -- ratios are the peer's time / reftorch's
_THROUGHPUT = ("add ", "exp ", "tanh ", "log ", "sigmoid ", "gelu-tanh", "broadcast add", "sum dim", "full sum",
               "a.T + b")
TARGETS = (
    ("large elementwise, broadcast, transposed, reduction: >= 1.0x NumPy and PyTorch",
     lambda n: n.startswith(_THROUGHPUT), lambda r: (r["vs_numpy"] or 9) >= 1.0 and (r["vs_torch"] or 9) >= 1.0),
    ("matmul >= 0.9x NumPy", lambda n: n.startswith("matmul"), lambda r: (r["vs_numpy"] or 9) >= 0.9),
    ("per-op overhead <= 3 us without grad", lambda n: n.startswith("per-op") and not n.endswith("grad"),
     lambda r: r["reftorch_s"] <= 3e-6),
    ("per-op overhead <= 5 us recording grad", lambda n: n.startswith("per-op") and n.endswith("grad"),
     lambda r: r["reftorch_s"] <= 5e-6),
    ("MLP training step <= 1.5x PyTorch's time", lambda n: n.startswith("MLP"),
     lambda r: r["vs_torch"] is None or r["vs_torch"] >= 1 / 1.5),
)


def print_targets(rows, startup):
    """Which of issue 6's targets this run meets, row by row (absolute times are this machine's, this run's)."""
    print("\ntargets (issue 6), this run:")
    for what, picks, holds in TARGETS:
        chosen = [r for r in rows if picks(r["workload"])]
        if not chosen:
            continue
        missed = [r["workload"] for r in chosen if not holds(r)]
        print(f"  {'holds ' if not missed else 'MISSED'}  {what}" + (f"  (missed: {'; '.join(missed)})" if missed else ""))
    warm = startup.get("reftorch", {}).get("warm cache")
    if warm:
        imp, first = warm[0], warm[1]
        print(f"  {'holds ' if imp <= 0.5 else 'MISSED'}  import reftorch <= 0.5 s  ({imp * 1e3:.0f} ms)")
        print(f"  {'holds ' if first <= 0.05 else 'MISSED'}  first op <= 50 ms, warm cache  ({first * 1e3:.0f} ms)")


def parallel_threshold(quick, reps):
    """reftorch's threaded kernels against one thread, by size: where threads start to pay is what
    reftorch._cpu.PARALLEL_MIN should be on this machine (threads never run with REFTORCH_NUM_THREADS /
    NUMBA_NUM_THREADS = 1)."""
    import reftorch
    from reftorch import _cpu as _dispatch
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(f"\nparallel threshold: time on 1 thread / time on {threads} (x > 1: threads pay); PARALLEL_MIN = "
          f"{_dispatch.PARALLEL_MIN}, load average now {os.getloadavg()[0]:.1f}")
    if threads < 2:
        print("  (one thread configured: nothing to compare)")
        return
    for n in ((1 << 18, 1 << 20, 1 << 22) if quick else (1 << 18, 1 << 20, 1 << 21, 1 << 22, 1 << 23)):
        u = reftorch.from_numpy(np.random.rand(n).astype(np.float32))
        line = []
        for label, fn in (("add", lambda: u + u), ("exp", lambda: u.exp()), ("sum", lambda: u.sum())):
            old_parallel, old_min, old_threads = _dispatch._parallel, _dispatch.PARALLEL_MIN, _dispatch.THREADS
            try:
                _dispatch._parallel, _dispatch.PARALLEL_MIN = (lambda n: True), 0     # forced, whatever the size
                _dispatch.THREADS = threads
                t_par = timeit(fn, reps)
                _dispatch.THREADS = 1
                t_one = timeit(fn, reps)
            finally:
                _dispatch._parallel, _dispatch.PARALLEL_MIN, _dispatch.THREADS = old_parallel, old_min, old_threads
            line.append(f"{label} {t_one / t_par:.2f}")
        print(f"  {n:>9d} elements: " + ", ".join(line))


if __name__ == "__main__":
    main()
