"""torch.fft side by side: rfft and irfft of 2**20 float32 in reftorch, NumPy and PyTorch, one thread each.

    PYTHONPATH=. /path/to/venv-with-torch/bin/python benches/fft.py [--rounds 3]

reftorch's transforms are NumPy's pocketfft behind the registry's dispatch; × NumPy / × PyTorch above 1 means
reftorch is faster. The libraries take turns (--rounds) and each keeps its best turn.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "REFTORCH_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import reftorch  # noqa: E402

try:
    import torch
    torch.set_num_threads(1)
except ImportError:          # the torch column stays blank
    torch = None

N = 2 ** 20


def best_time(fn, reps=10):
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype(np.float32)
    spec = np.fft.rfft(x)
    rows = [("rfft 2**20 float32", x, lambda m, a: m.fft.rfft(a), np.fft.rfft),
            ("irfft 2**20 complex64", spec, lambda m, a: m.fft.irfft(a), np.fft.irfft)]
    print(f"{'op':<24}{'reftorch ms':>12}{'numpy ms':>10}{'torch ms':>10}{'x NumPy':>9}{'x PyTorch':>10}")
    for name, arr, fn, npfn in rows:
        rt_in = reftorch.from_numpy(arr)
        th_in = torch.from_numpy(arr) if torch is not None else None
        best = {"r": float("inf"), "n": float("inf"), "t": float("inf")}
        for _ in range(args.rounds):
            best["r"] = min(best["r"], best_time(lambda: fn(reftorch, rt_in)))
            best["n"] = min(best["n"], best_time(lambda: npfn(arr)))
            if torch is not None:
                best["t"] = min(best["t"], best_time(lambda: fn(torch, th_in)))
        t_col = f"{best['t'] * 1e3:>10.2f}" if torch is not None else f"{'':>10}"
        ratio_t = f"{best['t'] / best['r']:>10.2f}" if torch is not None else f"{'':>10}"
        print(f"{name:<24}{best['r'] * 1e3:>12.2f}{best['n'] * 1e3:>10.2f}{t_col}{best['n'] / best['r']:>9.2f}{ratio_t}")


if __name__ == "__main__":
    main()
