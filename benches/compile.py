"""reftorch.compile bench: the GELU-tanh chain over 4M float32 elements, its training step, and an MLP step.

Prints compiled vs reftorch eager vs PyTorch eager (when `import torch` works in this interpreter, else
through --torch-python, default $TORCH_PYTHON or /tmp/torchvenv/bin/python), against the copy-bandwidth
floor: read the input once and write the output once, numpy.copyto into a fresh numpy.empty (what the
compiled call does: it allocates its output; the copy into a preallocated array is printed too), and the
compile overhead: the first call of a process with an empty kernel directory (trace + codegen + Numba
compile), and the first call of a second process that finds the generated kernel in the disk cache.

The MLP 64-128-128-10 step (batch 64, Adam, cross-entropy) runs as reftorch eager, as compile(model) with an
eager backward and optimizer, as a whole compiled step (`@compile def train_step(x, y): ...; loss.backward();
opt.step()`: forward, backward and Adam captured and replayed), and as PyTorch eager (timed before and after
the reftorch rows; the best of both is kept).

Timings are the minimum over interleaved repetitions (the machines these run on are shared); the load average
is printed with them.

    python benches/compile.py [--n 4194304] [--reps 20] [--no-mlp] [--torch-python PATH]
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def interleaved(fns, reps):
    """Minimum seconds of each callable, measured round-robin so that load spikes hit all alike."""
    best = {k: float("inf") for k in fns}
    for f in fns.values():
        f()
    for _ in range(reps):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            best[k] = min(best[k], time.perf_counter() - t)
    return best


def gelu_chain(torch, x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


TORCH_SNIPPET = r"""
import math, time, sys, torch
import numpy as np
n, reps = {n}, {reps}
torch.manual_seed(0)
x = torch.randn(n)
f = lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
xg = torch.randn(n, requires_grad=True)
gout = torch.ones(n)
def train():
    y = f(xg); y.backward(gout); xg.grad = None
rng = np.random.default_rng(0)
xb = rng.standard_normal((64, 64)).astype(np.float32); yb = rng.integers(0, 10, 64)
tm = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128), torch.nn.ReLU(),
                         torch.nn.Linear(128, 10))
opt = torch.optim.Adam(tm.parameters(), 1e-3)
TX, TY = torch.from_numpy(xb), torch.from_numpy(yb)
loss = torch.nn.CrossEntropyLoss()
def mlp():
    opt.zero_grad(); loss(tm(TX), TY).backward(); opt.step()
out = {{}}
for name, fn, r in (("gelu", lambda: f(x), reps), ("gelu_train", train, max(reps // 2, 3)), ("mlp", mlp, reps * 5)):
    fn(); fn()
    best = float("inf")
    for _ in range(r):
        t = time.perf_counter(); fn(); best = min(best, time.perf_counter() - t)
    out[name] = best
print(repr(out), torch.__version__, torch.get_num_threads())
"""


def torch_times(n, reps, exe=None):
    try:
        import torch  # noqa: F401
        exe = sys.executable
    except ImportError:
        exe = exe or os.environ.get("TORCH_PYTHON", "/tmp/torchvenv/bin/python")
        if not os.path.exists(exe):
            return None, None
    out = subprocess.run([exe, "-c", TORCH_SNIPPET.format(n=n, reps=reps)], capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr[-500:]
    line = out.stdout.strip().splitlines()[-1]
    d, ver, threads = line.rsplit(" ", 2)
    return eval(d), f"torch {ver}, {threads} threads"


def first_call(n):
    """(trace s, first replay s) of the GELU chain in this process: the trace runs eagerly; the fused kernel is
    generated and compiled (or loaded from the disk cache) on the first replay."""
    import reftorch
    x = reftorch.randn(n)
    x.numpy()
    (x * 2).tanh()          # the eager kernels the trace needs: their load is not compile's cost
    cf = reftorch.compile(lambda x: gelu_chain(reftorch, x))
    t0 = time.perf_counter()
    cf(x)
    t1 = time.perf_counter()
    cf(x)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def child_first_call(n, kdir):
    env = dict(os.environ, REFTORCH_COMPILE_DIR=kdir)
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--n", str(n), "--first-call-only"],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return float("nan"), float("nan")
    a, b = p.stdout.strip().splitlines()[-1].split()
    return float(a), float(b)


def mlp_times(reps):
    import reftorch
    import reftorch.nn as nn
    import reftorch.optim as optim
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((64, 64)).astype(np.float32)
    yb = rng.integers(0, 10, 64)
    reftorch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = optim.Adam(model.parameters(), 1e-3)
    X, Y = reftorch.from_numpy(xb), reftorch.from_numpy(yb)
    lossf = nn.CrossEntropyLoss()
    cm = reftorch.compile(model)

    def step(m):
        opt.zero_grad()
        lossf(m(X), Y).backward()
        opt.step()

    @reftorch.compile
    def train_step(x, y):
        opt.zero_grad()
        loss = lossf(model(x), y)
        loss.backward()
        opt.step()
        return loss
    t0 = time.perf_counter()
    train_step(X, Y)
    first = time.perf_counter() - t0
    for _ in range(3):
        train_step(X, Y)
    assert not train_step.graph_breaks(), train_step.graph_breaks()
    t = interleaved({"eager": lambda: step(model), "compiled": lambda: step(cm),
                     "step": lambda: train_step(X, Y)}, reps)
    t["first"] = first
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4 * 1024 * 1024)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--first-call-only", action="store_true")
    ap.add_argument("--no-mlp", action="store_true")
    ap.add_argument("--torch-python", default=None, help="a Python with torch (default $TORCH_PYTHON or "
                                                         "/tmp/torchvenv/bin/python)")
    a = ap.parse_args()
    if a.first_call_only:
        print(*first_call(a.n))
        return
    n = a.n
    with tempfile.TemporaryDirectory() as kdir:     # an empty kernel directory: a cold compile, then a cached one
        cold = child_first_call(n, kdir)
        warm = child_first_call(n, kdir)
    import numba

    import reftorch
    import reftorch.compile as _  # noqa: F401
    rc = sys.modules["reftorch.compile"]
    x = reftorch.randn(n)
    f = lambda x: gelu_chain(reftorch, x)       # noqa: E731
    cf = reftorch.compile(f)
    cf(x)
    cf(x)
    np.testing.assert_allclose(cf(x).numpy(), f(x).numpy(), rtol=1e-5, atol=1e-6)
    region = [s for e in cf._cache.values() for s in e.steps if hasattr(s, "kernels")][0]
    serial = region.kernel.fused_contig
    src = x.numpy()
    dst = np.empty_like(src)
    rc._par_min()
    par = lambda d, s: rc._threaded(serial, [d], [s], (), s.shape[0])     # noqa: E731
    fns = {
        "compiled": lambda: cf(x),
        "kernel serial": lambda: serial(dst, src),
        "kernel threaded": lambda: par(dst, src),
        "copy floor": lambda: np.copyto(dst, src),
        "copy + alloc": lambda: np.copyto(np.empty_like(src), src),
    }
    t = interleaved(fns, a.reps)
    t_eager = interleaved({"eager": lambda: f(x)}, max(a.reps // 4, 3))["eager"]
    # training: forward + backward of the chain (x requires grad); compiled = one fused kernel each way
    xg = reftorch.randn(n, requires_grad=True)
    gout = reftorch.ones(n)

    def train(fn):
        y = fn(xg)
        y.backward(gout)
        xg.grad = None
    train(cf)
    tt = interleaved({"compiled": lambda: train(cf), "eager": lambda: train(f)}, max(a.reps // 4, 3))
    tq, tinfo = torch_times(n, a.reps, a.torch_python)
    mlp = None if a.no_mlp else mlp_times(a.reps * 5)
    tq2, _ = torch_times(n, a.reps, a.torch_python)
    if tq and tq2:
        tq = {k: min(v, tq2[k]) for k, v in tq.items()}

    ms = lambda s: f"{s * 1e3:9.2f} ms" if s is not None else "      n/a   "     # noqa: E731
    us = lambda s: f"{s * 1e6:9.0f} us" if s is not None else "      n/a   "     # noqa: E731
    print(f"GELU-tanh chain, {n} float32; {os.cpu_count()} CPUs, numba {numba.__version__} with "
          f"{numba.config.NUMBA_NUM_THREADS} threads (threaded loop from {rc._par_min()} elements); "
          f"{tinfo or 'no PyTorch'}; load average {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    tc = t["compiled"]
    print(f"  reftorch.compile             {ms(tc)}")
    print(f"    fused kernel, serial       {ms(t['kernel serial'])}")
    print(f"    fused kernel, threaded     {ms(t['kernel threaded'])}")
    print(f"  reftorch eager               {ms(t_eager)}   compiled is {t_eager / tc:6.2f}x faster")
    if tq:
        print(f"  PyTorch eager                {ms(tq['gelu'])}   compiled is {tq['gelu'] / tc:6.2f}x faster")
    print(f"  copy floor (fresh output)    {ms(t['copy + alloc'])}   compiled / floor = "
          f"{tc / t['copy + alloc']:5.2f}   (numpy.copyto into numpy.empty: read once, write once)")
    print(f"  copy into a preallocated out {ms(t['copy floor'])}   compiled / this = {tc / t['copy floor']:5.2f}")
    print(f"  first call, empty kernel dir {cold[0] + cold[1]:8.2f} s   (trace {cold[0]:.2f} s + codegen and "
          f"Numba compile {cold[1]:.2f} s)")
    print(f"  first call, second process   {warm[0] + warm[1]:8.2f} s   (trace {warm[0]:.2f} s + kernel from the "
          f"disk cache {warm[1]:.2f} s)")
    print("training step of the chain (forward + backward)")
    print(f"  reftorch.compile             {ms(tt['compiled'])}")
    print(f"  reftorch eager               {ms(tt['eager'])}   compiled is {tt['eager'] / tt['compiled']:6.2f}x faster")
    if tq:
        print(f"  PyTorch eager                {ms(tq['gelu_train'])}   compiled is "
              f"{tq['gelu_train'] / tt['compiled']:6.2f}x faster")
    if mlp:
        print("MLP 64-128-128-10 training step (batch 64, Adam, cross-entropy)")
        rel = (lambda v: f"   / PyTorch = {v / tq['mlp']:5.2f}") if tq else (lambda v: "")   # noqa: E731
        print(f"  compiled step (fwd+bwd+Adam) {us(mlp['step'])}{rel(mlp['step'])}   (first call "
              f"{mlp['first']:.2f} s)")
        print(f"  reftorch.compile(model)      {us(mlp['compiled'])}{rel(mlp['compiled'])}   (eager backward, Adam)")
        print(f"  reftorch eager               {us(mlp['eager'])}{rel(mlp['eager'])}")
        if tq:
            print(f"  PyTorch eager                {us(tq['mlp'])}")


if __name__ == "__main__":
    main()
