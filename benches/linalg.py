"""torch.linalg side by side: reftorch, NumPy and PyTorch on the same matrices, in one run.

    PYTHONPATH=. /path/to/venv-with-torch/bin/python benches/linalg.py [--rounds 3] [--check]

solve, cholesky, eigh and svd at 256 x 256 and batched 64 x 32 x 32 (float64 and float32), one thread each.
The libraries take turns (--rounds) and each keeps its best turn. × NumPy / × PyTorch above 1 means reftorch
is faster. --check also compares every torch.linalg function reftorch has against PyTorch on batched
float32/float64 inputs (max relative difference per function; sign-free comparisons for the factors that
are fixed only up to sign).
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


def best_time(fn, reps=5):
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def workloads(rng):
    out = []
    for shape in ((256, 256), (64, 32, 32)):
        for dt in (np.float64, np.float32):
            a = rng.standard_normal(shape).astype(dt)
            spd = (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dt)
            b = rng.standard_normal(shape[:-1] + (4,)).astype(dt)
            tag = f"{'x'.join(map(str, shape))} {np.dtype(dt).name}"
            out += [(f"solve {tag}", (spd, b), lambda m, x, y: m.linalg.solve(x, y), np.linalg.solve),
                    (f"cholesky {tag}", (spd,), lambda m, x: m.linalg.cholesky(x), np.linalg.cholesky),
                    (f"eigh {tag}", (spd,), lambda m, x: m.linalg.eigh(x), np.linalg.eigh),
                    (f"svd {tag}", (a,), lambda m, x: m.linalg.svd(x, full_matrices=False),
                     lambda x: np.linalg.svd(x, full_matrices=False))]
    return out


def bench(rounds):
    rng = np.random.default_rng(0)
    rows = workloads(rng)
    print(f"{'workload':28s} {'reftorch':>10s} {'NumPy':>10s} {'PyTorch':>10s} {'x NumPy':>8s} {'x PyTorch':>9s}")
    for name, arrays, call, np_call in rows:
        r_args = [reftorch.from_numpy(a) for a in arrays]
        t_args = [torch.from_numpy(a) for a in arrays] if torch else None
        best = {"r": float("inf"), "n": float("inf"), "t": float("inf")}
        for _ in range(rounds):
            best["r"] = min(best["r"], best_time(lambda: call(reftorch, *r_args)))
            best["n"] = min(best["n"], best_time(lambda: np_call(*arrays)))
            if torch:
                best["t"] = min(best["t"], best_time(lambda: call(torch, *t_args)))
        ratio_t = f"{best['t'] / best['r']:9.2f}" if torch else f"{'-':>9s}"
        t_ms = f"{best['t'] * 1e3:8.2f}ms" if torch else f"{'-':>10s}"
        print(f"{name:28s} {best['r'] * 1e3:8.2f}ms {best['n'] * 1e3:8.2f}ms {t_ms} {best['n'] / best['r']:8.2f} "
              f"{ratio_t}")


def _max_rel(a, b, signless=False):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if signless:
        a, b = np.abs(a), np.abs(b)
    scale = max(1.0, float(np.abs(b).max(initial=0)))
    return float(np.abs(a - b).max(initial=0)) / scale


def check():
    """Every function against PyTorch on batched inputs in both float dtypes; prints the worst relative gap."""
    rng = np.random.default_rng(1)
    cases = {
        "inv": lambda m, a, s, b, v: m.linalg.inv(a), "det": lambda m, a, s, b, v: m.linalg.det(a),
        "slogdet": lambda m, a, s, b, v: m.linalg.slogdet(a)[1], "logdet": lambda m, a, s, b, v: m.logdet(s),
        "solve": lambda m, a, s, b, v: m.linalg.solve(a, b), "cholesky": lambda m, a, s, b, v: m.linalg.cholesky(s),
        "eigvalsh": lambda m, a, s, b, v: m.linalg.eigvalsh(s), "svdvals": lambda m, a, s, b, v: m.linalg.svdvals(a),
        "qr.R": lambda m, a, s, b, v: m.linalg.qr(a)[1], "lu_factor": lambda m, a, s, b, v: m.linalg.lu_factor(a)[0],
        "lu.L": lambda m, a, s, b, v: m.linalg.lu(a)[1], "lu_solve": lambda m, a, s, b, v: m.linalg.lu_solve(
            *m.linalg.lu_factor(a), b),
        "solve_triangular": lambda m, a, s, b, v: m.linalg.solve_triangular(s.tril(), b, upper=False),
        "matrix_exp": lambda m, a, s, b, v: m.linalg.matrix_exp(a / 4),
        "matrix_power": lambda m, a, s, b, v: m.linalg.matrix_power(a, -3), "pinv": lambda m, a, s, b, v: m.linalg.pinv(a),
        "matrix_rank": lambda m, a, s, b, v: m.linalg.matrix_rank(a), "cond": lambda m, a, s, b, v: m.linalg.cond(a),
        "matrix_norm nuc": lambda m, a, s, b, v: m.linalg.matrix_norm(a, "nuc"),
        "matrix_norm -inf": lambda m, a, s, b, v: m.linalg.matrix_norm(a, -float("inf")),
        "norm": lambda m, a, s, b, v: m.linalg.norm(a), "lstsq": lambda m, a, s, b, v: m.linalg.lstsq(a, b)[0],
        "cholesky_solve": lambda m, a, s, b, v: m.cholesky_solve(b, m.linalg.cholesky(s)),
        "cholesky_inverse": lambda m, a, s, b, v: m.cholesky_inverse(m.linalg.cholesky(s)),
        "ldl_solve": lambda m, a, s, b, v: m.linalg.ldl_solve(*m.linalg.ldl_factor(s), b),
        "householder_product": lambda m, a, s, b, v: m.linalg.householder_product(*m.geqrf(a)),
        "cross": lambda m, a, s, b, v: m.linalg.cross(v, v.flip(-1)), "vander": lambda m, a, s, b, v: m.linalg.vander(v),
        "multi_dot": lambda m, a, s, b, v: m.linalg.multi_dot([a[0], a[1], b[0]]),
        "tensorinv": lambda m, a, s, b, v: m.linalg.tensorinv(a[0], ind=1),
        "eigh.V": lambda m, a, s, b, v: m.linalg.eigh(s)[1], "svd.U": lambda m, a, s, b, v: m.linalg.svd(a)[0],
    }
    signless = {"eigh.V", "svd.U"}
    for dt in (np.float64, np.float32):
        a = rng.standard_normal((3, 4, 4)).astype(dt)
        s = (a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)).astype(dt)
        b = rng.standard_normal((3, 4, 2)).astype(dt)
        v = rng.standard_normal((3, 3)).astype(dt)
        worst = []
        for name, fn in cases.items():
            r = fn(reftorch, *(reftorch.from_numpy(x) for x in (a, s, b, v))).numpy()
            t = fn(torch, *(torch.from_numpy(x) for x in (a, s, b, v))).numpy()
            worst.append((_max_rel(r, t, name in signless), name))
        print(f"{np.dtype(dt).name}: " + ", ".join(f"{n} {w:.1e}" for w, n in sorted(worst, reverse=True)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    if args.check and torch is not None:
        check()
    bench(args.rounds)


if __name__ == "__main__":
    main()
