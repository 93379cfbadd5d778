"""Data-parallel training on MPI: all-reduce bandwidth, and step-time scaling from 1 to N processes.

    python benches/distributed.py [-n 2] [--quick] [--json out.json]

Runs itself under `python -m reftorch.distributed.run -n P` for P = 1 and P = N (so each process
gets cores // P Numba threads) and reports, from rank 0:
- all_reduce (SUM, float32, in place) of 4 KiB .. 64 MiB: median time, algorithm bandwidth
  (bytes / time) and bus bandwidth (2 (P-1)/P bytes / time, NCCL's convention);
- one training step of an MLP (DistributedDataParallel, SGD) on a fixed global batch split over
  the processes (strong scaling): median step time, speed-up over 1 process, and the time of the
  gradients' all-reduce alone.
Needs `pip install 'reftorch[distributed]'`.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def median_time(fn, reps, warmup=2, sync=None, cpu=None):
    """Median wall time of fn(); with cpu=[], also appends the median CPU time (all threads) to it."""
    for _ in range(warmup):
        fn()
    times, cpu_times = [], []
    for _ in range(reps):
        if sync:
            sync()
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t)
        cpu_times.append(time.process_time() - c)
    if cpu is not None:
        cpu.append(statistics.median(cpu_times))
    return statistics.median(times)


def worker(out_path, quick):
    import numpy as np

    import reftorch as torch
    import reftorch.distributed as dist
    from reftorch import nn
    from reftorch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    result = {"world": world, "threads": os.environ.get("NUMBA_NUM_THREADS"), "allreduce": [], "step": {}}

    sizes = [4 << 10, 64 << 10, 1 << 20, 16 << 20] + ([] if quick else [64 << 20])
    for nbytes in sizes:
        t = torch.ones(nbytes // 4, dtype=torch.float32)
        reps = 20 if nbytes <= (1 << 20) else 5
        sec = median_time(lambda: dist.all_reduce(t), reps, sync=dist.barrier)
        result["allreduce"].append({"bytes": nbytes, "seconds": sec, "algbw_GBps": nbytes / sec / 1e9,
                                    "busbw_GBps": 2 * (world - 1) / world * nbytes / sec / 1e9})

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    ddp = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = 512
    g = np.random.default_rng(0)
    x = torch.tensor(g.standard_normal((batch, 256)), dtype=torch.float32)
    y = torch.tensor(g.integers(0, 10, batch))
    lo, hi = batch * rank // world, batch * (rank + 1) // world
    xs, ys = x[lo:hi], y[lo:hi]

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(xs), ys).backward()
        opt.step()

    n_params = sum(p.numel() for p in model.parameters())
    grads = torch.zeros(n_params)
    cpu = []
    seconds = median_time(step, 5 if quick else 15, sync=dist.barrier, cpu=cpu)
    cpu_all = torch.tensor(cpu, dtype=torch.float64)
    dist.all_reduce(cpu_all)                   # CPU seconds of all processes together
    result["step"] = {"params": n_params, "global_batch": batch, "seconds": seconds,
                      "cpu_seconds": cpu_all.item(),
                      "allreduce_seconds": median_time(lambda: dist.all_reduce(grads), 10, sync=dist.barrier)}
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=2, help="processes to compare with 1 (default 2)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", default=None)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        return worker(a.worker, a.quick)

    results = {}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT] + [v for v in [os.environ.get("PYTHONPATH")] if v]))
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS"):
        env.pop(var, None)                  # the launcher's cores // P
    # 1 process with the launcher's threads (all cores), 1 process with 1 thread, N processes
    for procs, threads in ((1, None), (1, 1), (a.n, None)):
        out = os.path.join(tempfile.mkdtemp(prefix="reftorch-bench-"), "result.json")
        cmd = [sys.executable, "-m", "reftorch.distributed.run", "-n", str(procs), os.path.abspath(__file__),
               "--worker", out] + (["--quick"] if a.quick else [])
        run_env = env if threads is None else dict(env, NUMBA_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
        subprocess.run(cmd, check=True, env=run_env, timeout=600)
        with open(out) as f:
            results[(procs, threads)] = json.load(f)

    print(f"all_reduce (SUM, float32, in place), {a.n} processes")
    print(f"{'size':>10} {'time':>10} {'algbw GB/s':>11} {'busbw GB/s':>11}")
    for r in results[(a.n, None)]["allreduce"]:
        print(f"{r['bytes'] / 1024:>8.0f} K {r['seconds'] * 1e3:>8.3f} ms {r['algbw_GBps']:>11.2f} "
              f"{r['busbw_GBps']:>11.2f}")
    base = min((results[(1, None)]["step"], results[(1, 1)]["step"]), key=lambda s: s["seconds"])
    print(f"\nMLP training step ({base['params']:,} float32 parameters, global batch {base['global_batch']}, "
          f"DistributedDataParallel + SGD)")
    print(f"{'procs':>5} {'threads':>7} {'step':>10} {'speed-up':>8} {'CPU, all procs':>15} {'grad all_reduce':>16}")
    for (procs, _), r in results.items():
        s = r["step"]
        speedup = base["seconds"] / s["seconds"]
        print(f"{procs:>5} {r['threads'] or '-':>7} {s['seconds'] * 1e3:>7.1f} ms {speedup:>7.2f}x "
              f"{s['cpu_seconds'] * 1e3:>12.1f} ms {s['allreduce_seconds'] * 1e3:>13.2f} ms")
    print("(speed-up: over the faster 1-process run. Wall times mean something only on an otherwise idle machine: "
          "under load, P processes get P shares of the CPUs, and threads that wait for each other stall)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({f"{p}x{t or 'auto'}": r for (p, t), r in results.items()}, f, indent=1)


if __name__ == "__main__":
    main()
