"""Half-precision elementwise throughput: float16 and bfloat16 kernels against float32, in one process.

    python benches/half.py [--quick] [--n N]

16-bit storage moves half the bytes of float32 (issue 8 targets >= 1.5x float32 on large memory-bound
ops). Rows: reftorch float32, float16, bfloat16 (ns/element and the ratio to float32), NumPy float16
(its own software conversions) and PyTorch float16/bfloat16 when installed (`pip install torch`).
"""
from __future__ import annotations

import argparse
import os
import statistics
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


def timeit(fn, reps):
    return timeall({0: fn}, reps)[0]


def timeall(fns, reps):
    """Median seconds of each function, the functions taking turns in every repetition: on a loaded machine
    a burst of load then slows them alike instead of one of them (the ratios are what this bench reports)."""
    for fn in fns.values():
        fn()
        fn()
    times = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


WORKLOADS = {
    "a + b": lambda m, a, b: m.add(a, b),
    "a * b + a": lambda m, a, b: m.add(m.multiply(a, b), a),
    "relu(a)": lambda m, a, b: m.relu(a) if m is not np else np.maximum(a, 0),
    "exp(a)": lambda m, a, b: m.exp(a),
    "sum(a)": lambda m, a, b: m.sum(a),
}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--n", type=int, default=None, help="elements per operand (default 16M, --quick 4M)")
    args = p.parse_args(argv)
    n = args.n or (4_000_000 if args.quick else 16_000_000)
    reps = 5 if args.quick else 11
    rng = np.random.default_rng(0)
    base_a, base_b = rng.uniform(-2, 2, n).astype(np.float32), rng.uniform(-2, 2, n).astype(np.float32)
    from reftorch.kernels.cpu_half import HAVE_F16C
    from reftorch._cpu import PARALLEL_MIN, THREADS
    print(f"half-precision elementwise, {n:,} elements per operand, median of {reps} "
          f"(float16 path: {'F16C' if HAVE_F16C else 'integer'}; {THREADS} threads from {PARALLEL_MIN:,} elements "
          f"while the load leaves a core free; load average {os.getloadavg()[0]:.2f})")
    cols = ["reftorch f32", "reftorch f16", "x f32", "reftorch bf16", "x f32", "numpy f16"]
    if torch is not None:
        cols += ["torch f16", "torch bf16"]
    print(f"{'ns/element':<12}" + "".join(f"{c:>14}" for c in cols))
    for name, fn in WORKLOADS.items():
        fns = {}
        for dname, dt in (("f32", reftorch.float32), ("f16", reftorch.float16), ("bf16", reftorch.bfloat16)):
            a = reftorch.from_numpy(base_a).to(dt)
            b = reftorch.from_numpy(base_b).to(dt)
            fns[dname] = (lambda a, b: lambda: fn(reftorch, a, b))(a, b)
        row = {k: t / n * 1e9 for k, t in timeall(fns, reps).items()}
        a16, b16 = base_a.astype(np.float16), base_b.astype(np.float16)
        row["np"] = timeit(lambda: fn(np, a16, b16), max(3, reps // 3)) / n * 1e9
        cells = [row["f32"], row["f16"], row["f32"] / row["f16"], row["bf16"], row["f32"] / row["bf16"], row["np"]]
        if torch is not None:
            for tdt in (torch.float16, torch.bfloat16):
                ta, tb = torch.from_numpy(base_a).to(tdt), torch.from_numpy(base_b).to(tdt)
                cells.append(timeit(lambda: fn(torch, ta, tb), reps) / n * 1e9)
        text = "".join(f"{c:>13.2f}x" if i in (2, 4) else f"{c:>14.3f}" for i, c in enumerate(cells))
        print(f"{name:<12}{text}")
    print("x f32: float32 time / 16-bit time (above 1: the 16-bit kernel is faster)")


if __name__ == "__main__":
    main()
