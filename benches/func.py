"""Per-sample gradients of a small MLP (batch 256): vmap(grad(loss)) against a Python loop of per-sample
backward passes, in reftorch (and in PyTorch when it is importable, for reference).

    python benches/func.py [--batch 256] [--rounds 3]

Both ways compute the same gradients (checked before timing). CPU time, single-threaded BLAS, best of
--rounds medians; the ratio is what counts (the issue's target: vmap(grad) at least 5x the loop).
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "REFTORCH_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def _timeit(fn, reps=5):
    fn()
    times = []
    for _ in range(reps):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


def workload(torch, batch):
    """(vmap way, loop way) of computing every sample's gradients of an MLP's loss."""
    rng = np.random.default_rng(0)
    params = {k: torch.tensor(rng.standard_normal(s).astype(np.float32)) for k, s in
              (("w1", (64, 32)), ("b1", (64,)), ("w2", (10, 64)), ("b2", (10,)))}
    xs = torch.tensor(rng.standard_normal((batch, 32)).astype(np.float32))
    ys = torch.tensor(rng.integers(0, 10, batch))
    F = torch.nn.functional

    def loss(p, x, y):
        h = torch.relu(F.linear(x, p["w1"], p["b1"]))
        return F.cross_entropy(F.linear(h, p["w2"], p["b2"]).unsqueeze(0), y.unsqueeze(0))

    def by_vmap():
        return torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, xs, ys)

    leaves = {k: v.clone().requires_grad_(True) for k, v in params.items()}

    def by_loop():
        out = {k: [] for k in leaves}
        for i in range(batch):
            gs = torch.autograd.grad(loss(leaves, xs[i], ys[i]), list(leaves.values()))
            for k, g in zip(leaves, gs):
                out[k].append(g)
        return {k: torch.stack(v) for k, v in out.items()}

    return by_vmap, by_loop


def run(torch, name, batch, rounds):
    by_vmap, by_loop = workload(torch, batch)
    a, b = by_vmap(), by_loop()
    for k in a:
        np.testing.assert_allclose(a[k].numpy(), b[k].numpy(), rtol=1e-3, atol=1e-4)      # (float32)
    tv = min(_timeit(by_vmap) for _ in range(rounds))
    tl = min(_timeit(by_loop, reps=2) for _ in range(rounds))
    print(f"{name:9s} per-sample grads, MLP 32-64-10, batch {batch}: vmap(grad) {tv * 1e3:8.1f} ms   "
          f"loop of backward {tl * 1e3:8.1f} ms   loop / vmap = {tl / tv:5.1f}x")
    return tl / tv


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import reftorch
    run(reftorch, "reftorch", args.batch, args.rounds)
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)
    run(torch, "torch", args.batch, args.rounds)


if __name__ == "__main__":
    main()
