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

The GPT-2-style char transformer (2 layers, 2 heads, 64 wide, block 32, batch 8, dropout 0.2,
F.scaled_dot_product_attention, AdamW, clip_grad_norm_) trains with the same weights and batches on both
libraries in this process (it needs `import torch`): the whole step -- forward with its dropout masks (reftorch's
counter-based draws, fused into the generated kernels), loss, zero_grad, backward, clipping, AdamW -- compiled
with reftorch.compile, against PyTorch eager and reftorch eager, alternating, best of rounds; the ratio
compiled / PyTorch eager is printed (the target of issue 19 is <= 1.0).

Timings are the minimum over interleaved repetitions (the machines these run on are shared); the load average
is printed with them.

    python benches/compile.py [--n 4194304] [--reps 20] [--no-mlp] [--no-gpt] [--gpt-only] [--torch-python PATH]
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


def gpt_model(torch, dropout=0.2, vocab=65, n_embd=64, n_head=2, n_layer=2, block=32):
    """A GPT-2-style char transformer in `torch` (reftorch or PyTorch): token + position embeddings, pre-norm
    blocks of causal self-attention (F.scaled_dot_product_attention, dropout on the weights and the residual)
    and a GELU MLP, a final LayerNorm and a linear head; forward(idx, targets) returns the cross-entropy."""
    nn, F = torch.nn, torch.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.proj, self.drop = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd), nn.Dropout(dropout)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in self.qkv(x).split(n_embd, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout if self.training else 0.0, is_causal=True)
            return self.drop(self.proj(y.transpose(1, 2).contiguous().view(B, T, C)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.attn, self.ln2 = nn.LayerNorm(n_embd), Attention(), nn.LayerNorm(n_embd)
            self.fc, self.out, self.drop = nn.Linear(n_embd, 4 * n_embd), nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos, self.drop = nn.Embedding(vocab, n_embd), nn.Embedding(block, n_embd), nn.Dropout(dropout)
            self.blocks = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln, self.head = nn.LayerNorm(n_embd), nn.Linear(n_embd, vocab)

        def forward(self, idx, targets):
            x = self.drop(self.tok(idx) + self.pos(torch.arange(idx.shape[1])))
            for b in self.blocks:
                x = b(x)
            logits = self.head(self.ln(x))
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
    return GPT()


def gpt_train_step(torch, model, compiled=False):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step(x, y):
        loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss
    return torch.compile(step) if compiled else step


def gpt_times(rounds, dropout=0.2):
    """(seconds per step: reftorch compiled, PyTorch eager, reftorch eager; first compiled call s; graph breaks)."""
    import torch
    import reftorch
    rng = np.random.default_rng(0)
    xb, yb = rng.integers(0, 65, (8, 32)), rng.integers(0, 65, (8, 32))
    torch.manual_seed(0)
    tm = gpt_model(torch, dropout)
    rms = [gpt_model(reftorch, dropout) for _ in range(2)]
    for rm in rms:      # the same weights on both libraries
        with reftorch.no_grad():
            for p, q in zip(tm.parameters(), rm.parameters()):
                q.copy_(reftorch.from_numpy(p.detach().numpy().copy()))
    t_step, e_step = gpt_train_step(torch, tm), gpt_train_step(reftorch, rms[1])
    c_step = gpt_train_step(reftorch, rms[0], compiled=True)
    TX, TY = torch.from_numpy(xb), torch.from_numpy(yb)
    RX, RY = reftorch.from_numpy(xb), reftorch.from_numpy(yb)
    t0 = time.perf_counter()
    c_step(RX, RY)
    first = time.perf_counter() - t0
    threads, rthreads = torch.get_num_threads(), reftorch.get_num_threads()
    t = interleaved({"compiled": lambda: c_step(RX, RY), "torch": lambda: t_step(TX, TY),
                     "eager": lambda: e_step(RX, RY)}, rounds)
    # and both libraries on one thread (kernels and BLAS): on a busy machine threads wait for cores
    torch.set_num_threads(1)
    reftorch.set_num_threads(1)
    try:
        t1 = interleaved({"compiled": lambda: c_step(RX, RY), "torch": lambda: t_step(TX, TY)}, rounds)
    finally:
        torch.set_num_threads(threads)
        reftorch.set_num_threads(rthreads)
    t["compiled1"], t["torch1"] = t1["compiled"], t1["torch"]
    return t, first, c_step.graph_breaks(), f"torch {torch.__version__}, {threads} threads"


def print_gpt(rounds):
    try:
        import torch  # noqa: F401
    except ImportError:
        print("GPT train step: needs `import torch` in this interpreter (run it with the bench venv)")
        return
    for dropout in (0.2, 0.0):
        t, first, breaks, info = gpt_times(rounds, dropout)
        us = lambda s: f"{s * 1e3:8.2f} ms"     # noqa: E731
        print(f"GPT-2-style char transformer train step (2 layers, 2 heads, 64 wide, block 32, batch 8, dropout "
              f"{dropout}, sdpa, AdamW, clip_grad_norm_); {info}; load average "
              f"{', '.join(f'{v:.2f}' for v in os.getloadavg())}")
        print(f"  reftorch.compile(step)       {us(t['compiled'])}   / PyTorch eager = {t['compiled'] / t['torch']:5.2f}"
              f"   (first call {first:.1f} s; graph breaks: {len(breaks)})")
        print(f"  reftorch eager               {us(t['eager'])}   / PyTorch eager = {t['eager'] / t['torch']:5.2f}")
        print(f"  PyTorch eager                {us(t['torch'])}")
        print(f"  one thread each: reftorch.compile(step) {us(t['compiled1'])}, PyTorch eager {us(t['torch1'])}   "
              f"ratio {t['compiled1'] / t['torch1']:5.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4 * 1024 * 1024)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--first-call-only", action="store_true")
    ap.add_argument("--no-mlp", action="store_true")
    ap.add_argument("--torch-python", default=None, help="a Python with torch (default $TORCH_PYTHON or "
                                                         "/tmp/torchvenv/bin/python)")
    ap.add_argument("--no-gpt", action="store_true")
    ap.add_argument("--gpt-only", action="store_true")
    a = ap.parse_args()
    if a.first_call_only:
        print(*first_call(a.n))
        return
    if a.gpt_only:
        print_gpt(a.reps)
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
    if not a.no_gpt:
        print_gpt(a.reps)


if __name__ == "__main__":
    main()
