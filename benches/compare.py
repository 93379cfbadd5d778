"""reftorch side by side with NumPy and PyTorch, in one process: ratios are what count.

    python benches/compare.py [--quick] [--json out.json]

PyTorch is optional (`pip install torch==2.13.0` takes the CPU wheel); its columns are blank
without it. Each workload runs a warm-up first, then the median of many repetitions. The
machine's own limits (a large copy's GB/s, numpy.matmul's GFLOP/s) are measured in the same run so
every throughput also reads as a fraction of what the hardware gives.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import reftorch  # noqa: E402

try:
    import torch
    torch.set_num_threads(1)
except ImportError:
    torch = None


def timeit(fn, reps, warmup=2):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def per_call(fn, n):
    """Median of 5 timings of n back-to-back calls, per call (for microsecond overheads)."""
    fn()
    best = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best.append((time.perf_counter() - t) / n)
    return statistics.median(best)


class Bench:
    def __init__(self, quick):
        self.quick = quick
        self.rows = []
        self.reps = 5 if quick else 15

    def add(self, name, ours, np_fn=None, torch_fn=None, bytes_moved=None, flops=None, per_call_n=None):
        t_ours = per_call(ours, per_call_n) if per_call_n else timeit(ours, self.reps)
        t_np = (per_call(np_fn, per_call_n) if per_call_n else timeit(np_fn, self.reps)) if np_fn else None
        t_torch = None
        if torch is not None and torch_fn:
            t_torch = per_call(torch_fn, per_call_n) if per_call_n else timeit(torch_fn, self.reps)
        row = dict(workload=name, reftorch_s=t_ours, numpy_s=t_np, torch_s=t_torch,
                   vs_numpy=(t_np / t_ours) if t_np else None, vs_torch=(t_torch / t_ours) if t_torch else None)
        if bytes_moved:
            row["GB/s"] = bytes_moved / t_ours / 1e9
        if flops:
            row["GFLOP/s"] = flops / t_ours / 1e9
        self.rows.append(row)
        self.print_row(row)

    @staticmethod
    def header():
        print(f"{'workload':44s} {'reftorch':>10s} {'numpy':>10s} {'torch':>10s} {'x numpy':>8s} {'x torch':>8s}  note")

    @staticmethod
    def fmt_t(t):
        if t is None:
            return "-"
        return f"{t * 1e6:.2f}us" if t < 1e-3 else f"{t * 1e3:.2f}ms"

    def print_row(self, r):
        note = ""
        if "GB/s" in r:
            note = f"{r['GB/s']:.1f} GB/s"
        if "GFLOP/s" in r:
            note = f"{r['GFLOP/s']:.1f} GFLOP/s"
        vn = f"{r['vs_numpy']:.2f}" if r["vs_numpy"] else "-"
        vt = f"{r['vs_torch']:.2f}" if r["vs_torch"] else "-"
        print(f"{r['workload']:44s} {self.fmt_t(r['reftorch_s']):>10s} {self.fmt_t(r['numpy_s']):>10s} "
              f"{self.fmt_t(r['torch_s']):>10s} {vn:>8s} {vt:>8s}  {note}", flush=True)


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


def gelu_chain(x, mod):
    # the tanh form of GELU written as 6 eager ops
    inner = (x + 0.044715 * x * x * x) * 0.7978845608028654
    return 0.5 * x * (1 + mod.tanh(inner))


def import_times():
    code = "import time; t=time.perf_counter(); import reftorch as t_; a=time.perf_counter(); " \
           "x=t_.ones(10); y=(x+x).sum(); b=time.perf_counter(); print(a-t, b-a)"
    env = dict(os.environ)
    out = {}
    for label, extra in (("warm cache", {}), ("cold cache", {"REFTORCH_NO_CACHE": "1"})):
        e = dict(env, **extra)
        subprocess.run([sys.executable, "-c", code], env=e, capture_output=True)  # fill the cache
        r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True)
        try:
            imp, first = map(float, r.stdout.split())
        except ValueError:
            imp, first = float("nan"), float("nan")
        out[label] = (imp, first)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer repetitions")
    p.add_argument("--json", default="benches/compare.json")
    args = p.parse_args()
    q = args.quick
    B = Bench(q)
    copy_gbs, np_gflops = machine_limits(q)
    print(f"machine: copy {copy_gbs:.1f} GB/s, numpy.matmul {np_gflops:.1f} GFLOP/s (float32 1024^3), "
          f"torch {'absent' if torch is None else torch.__version__}")
    B.header()
    N = 2_000_000 if q else 10_000_000
    xn, yn = np.random.rand(N).astype(np.float32), np.random.rand(N).astype(np.float32)
    x, y = reftorch.from_numpy(xn), reftorch.from_numpy(yn)
    xt, yt = (torch.from_numpy(xn), torch.from_numpy(yn)) if torch else (None, None)
    B.add(f"add {N // 10**6}M float32", lambda: x + y, lambda: xn + yn, xt is not None and (lambda: xt + yt),
          bytes_moved=3 * xn.nbytes)
    B.add(f"exp {N // 10**6}M float32", lambda: x.exp(), lambda: np.exp(xn), xt is not None and (lambda: xt.exp()),
          bytes_moved=2 * xn.nbytes)
    M = N * 2 // 5
    gn = np.random.randn(M).astype(np.float32)
    g = reftorch.from_numpy(gn)
    gt = torch.from_numpy(gn) if torch else None
    B.add(f"gelu-tanh 6-op chain {M / 1e6:.0f}M eager", lambda: gelu_chain(g, reftorch),
          lambda: gelu_chain(gn, np), gt is not None and (lambda: gelu_chain(gt, torch)), bytes_moved=2 * gn.nbytes)
    R, C = (1024, 1024) if q else (4096, 1024)
    an, bn = np.random.rand(R, C).astype(np.float32), np.random.rand(C).astype(np.float32)
    a, b = reftorch.from_numpy(an), reftorch.from_numpy(bn)
    at, bt = (torch.from_numpy(an), torch.from_numpy(bn)) if torch else (None, None)
    B.add(f"broadcast add ({R}x{C})+({C},)", lambda: a + b, lambda: an + bn, at is not None and (lambda: at + bt),
          bytes_moved=2 * an.nbytes)
    B.add(f"sum dim=1 of ({R},{C})", lambda: a.sum(1), lambda: an.sum(1), at is not None and (lambda: at.sum(1)),
          bytes_moved=an.nbytes)
    B.add(f"full sum {N // 10**6}M", lambda: x.sum(), lambda: xn.sum(), xt is not None and (lambda: xt.sum()),
          bytes_moved=xn.nbytes)
    K = 512 if q else 1024
    mn = np.random.rand(K, K).astype(np.float32)
    m = reftorch.from_numpy(mn)
    mt = torch.from_numpy(mn) if torch else None
    B.add(f"matmul {K}^3 float32", lambda: m @ m, lambda: mn @ mn, mt is not None and (lambda: mt @ mt),
          flops=2 * K ** 3)
    S = 1024 if q else 2048
    pn, qn = np.random.rand(S, S).astype(np.float32), np.random.rand(S, S).astype(np.float32)
    pp, qq = reftorch.from_numpy(pn), reftorch.from_numpy(qn)
    pt, qt = (torch.from_numpy(pn), torch.from_numpy(qn)) if torch else (None, None)
    B.add(f"a.T + b.T ({S},{S})", lambda: pp.T + qq.T, lambda: pn.T + qn.T, pt is not None and (lambda: pt.T + qt.T),
          bytes_moved=3 * pn.nbytes)
    B.add(f"a.T + b ({S},{S})", lambda: pp.T + qq, lambda: pn.T + qn, pt is not None and (lambda: pt.T + qt),
          bytes_moved=3 * pn.nbytes)
    o1, o2 = reftorch.ones(1), reftorch.ones(1)
    on1, on2 = np.ones(1, np.float32), np.ones(1, np.float32)
    ot1, ot2 = (torch.ones(1), torch.ones(1)) if torch else (None, None)
    B.add("per-op overhead: add 1-element", lambda: o1 + o2, lambda: on1 + on2,
          ot1 is not None and (lambda: ot1 + ot2), per_call_n=2000 if q else 20000)
    r1 = reftorch.ones(1, requires_grad=True)
    rt1 = torch.ones(1, requires_grad=True) if torch else None
    B.add("per-op overhead: add 1-element, grad", lambda: r1 + o2, None,
          rt1 is not None and (lambda: rt1 + ot2), per_call_n=2000 if q else 20000)
    F = 200_000 if q else 1_000_000
    fxn, fwn = np.random.rand(F).astype(np.float32), np.random.rand(F).astype(np.float32)

    def fb_ours():
        xx = reftorch.from_numpy(fxn)
        w = reftorch.from_numpy(fwn).requires_grad_()
        (xx * w).tanh().sum().backward()

    def fb_torch():
        xx = torch.from_numpy(fxn)
        w = torch.from_numpy(fwn).requires_grad_()
        (xx * w).tanh().sum().backward()

    B.add(f"fwd+bwd (x*w).tanh().sum() {F // 1000}K", fb_ours, None, torch is not None and fb_torch)
    B.add("MLP 64-128-128-10 train step (batch 64, Adam)", *mlp_steps())
    kernel_rows(B, q)
    print()
    for label, (imp, first) in import_times().items():
        print(f"import reftorch ({label}): {imp * 1e3:.0f} ms; first op after import: {first * 1e3:.0f} ms")
    with open(args.json, "w") as f:
        json.dump(dict(machine=dict(copy_GBs=copy_gbs, numpy_matmul_GFLOPs=np_gflops), rows=B.rows), f, indent=1)
    print(f"\nwrote {args.json}")


def kernel_rows(B, quick):
    """More kernel-throughput rows: the vectorised float32 transcendentals, reductions over the outer
    axis, and the parallel threshold (reftorch._dispatch.PARALLEL_MIN) measured against one thread."""
    from reftorch import _dispatch
    N = 2_000_000 if quick else 10_000_000
    xn = np.random.rand(N).astype(np.float32) + np.float32(0.01)
    x = reftorch.from_numpy(xn)
    xt = torch.from_numpy(xn) if torch else None
    for name in ("tanh", "log", "sigmoid"):
        np_fn = (lambda: 1 / (1 + np.exp(-xn))) if name == "sigmoid" else (lambda f=getattr(np, name): f(xn))
        B.add(f"{name} {N // 10**6}M float32", lambda f=name: getattr(x, f)(), np_fn,
              xt is not None and (lambda f=name: getattr(xt, f)()), bytes_moved=2 * xn.nbytes)
    R, C = (1024, 1024) if quick else (4096, 1024)
    an = np.random.rand(R, C).astype(np.float32)
    a = reftorch.from_numpy(an)
    at = torch.from_numpy(an) if torch else None
    B.add(f"sum dim=0 of ({R},{C})", lambda: a.sum(0), lambda: an.sum(0), at is not None and (lambda: at.sum(0)),
          bytes_moved=an.nbytes)
    print(f"\nparallel threshold: reftorch with {_dispatch.THREADS} threads over 1 (x > 1: threads pay); "
          f"PARALLEL_MIN = {_dispatch.PARALLEL_MIN}, load average now {os.getloadavg()[0]:.1f} "
          f"(threads only below {_dispatch.THREADS - 0.5})")
    threads = _dispatch.THREADS
    for n in ((1 << 18, 1 << 20, 1 << 22) if quick else (1 << 18, 1 << 20, 1 << 21, 1 << 22, 1 << 23)):
        u = reftorch.from_numpy(np.random.rand(n).astype(np.float32))
        line = []
        for label, fn in (("add", lambda: u + u), ("exp", lambda: u.exp())):
            old = _dispatch._parallel
            try:
                _dispatch._parallel = lambda n: True      # forced, whatever the size and the load
                t_par = timeit(fn, B.reps)
                _dispatch.THREADS = 1
                t_one = timeit(fn, B.reps)
            finally:
                _dispatch._parallel, _dispatch.THREADS = old, threads
            line.append(f"{label} {t_one / t_par:.2f}")
        print(f"  {n:>9d} elements: " + ", ".join(line))


def mlp_steps():
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((64, 64)).astype(np.float32)
    yb = rng.integers(0, 10, 64)
    ours = None
    try:
        import reftorch.nn as nn
        import reftorch.optim as optim
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
        opt = optim.Adam(model.parameters(), 1e-3)
        X, Y = reftorch.from_numpy(xb), reftorch.from_numpy(yb)
        lossf = nn.CrossEntropyLoss()

        def ours():
            opt.zero_grad()
            lossf(model(X), Y).backward()
            opt.step()
    except (ImportError, AttributeError):
        def ours():
            pass
    tfn = None
    if torch is not None:
        tm = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128),
                                 torch.nn.ReLU(), torch.nn.Linear(128, 10))
        topt = torch.optim.Adam(tm.parameters(), 1e-3)
        TX, TY = torch.from_numpy(xb), torch.from_numpy(yb)
        tl = torch.nn.CrossEntropyLoss()

        def tfn():
            topt.zero_grad()
            tl(tm(TX), TY).backward()
            topt.step()
    return ours, None, tfn


if __name__ == "__main__":
    main()
