"""reftorch.distributed, DistributedDataParallel, DistributedSampler and the launcher.

The multi-process tests launch the venv's own `mpiexec -n 2` as a subprocess bounded by a timeout;
they are skipped (with the reason) when mpi4py or mpiexec is not installed: pip install 'reftorch[distributed]'.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import reftorch as torch
import reftorch.distributed as dist
from reftorch import nn
from reftorch.distributed.run import build_command, find_mpiexec
from reftorch.nn.parallel import DistributedDataParallel as DDP
from reftorch.utils.data import DistributedSampler

TIMEOUT = 120
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:
    import mpi4py  # noqa: F401
    _MPI_MISSING = None
except ImportError:
    _MPI_MISSING = "mpi4py is not installed (pip install 'reftorch[distributed]')"
if _MPI_MISSING is None and find_mpiexec() is None:
    _MPI_MISSING = "mpiexec is not installed (pip install 'reftorch[distributed]')"
needs_mpi = pytest.mark.skipif(_MPI_MISSING is not None, reason=_MPI_MISSING or "")


# ------------------------------------------------------------------------------------------ the shared model

# The worker and the single-process reference build the same model and data from these.
COMMON = textwrap.dedent("""
    import numpy as np
    import reftorch as torch
    from reftorch import nn

    BATCH, STEPS = 12, 6

    def make_model():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3)).double()

    def batch(step):
        g = np.random.default_rng(100 + step)
        x = torch.tensor(g.standard_normal((BATCH, 5)))
        y = torch.tensor(g.integers(0, 3, BATCH))
        return x, y

    def params(model):
        return [p.detach().numpy().copy() for p in model.parameters()]
""")

WORKER = COMMON + textwrap.dedent("""
    import json, sys
    import reftorch.distributed as dist
    from reftorch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    out = {"rank": rank, "world": world}

    # ---- collectives
    t = torch.arange(6.0, dtype=torch.float64).reshape(2, 3).t() + rank     # non-contiguous
    dist.all_reduce(t)
    out["sum"] = t.tolist()
    for name, op in (("avg", dist.ReduceOp.AVG), ("max", dist.ReduceOp.MAX), ("min", dist.ReduceOp.MIN)):
        t = torch.tensor([1.0 + rank, 10.0 - rank])
        dist.all_reduce(t, op=op)
        out[name] = t.tolist()
    t = torch.tensor([rank, 2 * rank], dtype=torch.int64)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    out["isum"] = t.tolist()
    t = torch.full((2, 2), float(rank))
    dist.broadcast(t, src=world - 1)
    out["bcast"] = t.tolist()
    outs = [torch.zeros(3) for _ in range(world)]
    dist.all_gather(outs, torch.full((3,), float(rank)))
    out["gather"] = [o.tolist() for o in outs]
    o = torch.zeros(2)
    dist.reduce_scatter(o, [torch.full((2,), float(10 * r + rank)) for r in range(world)])
    out["rscatter"] = o.tolist()
    dist.barrier()

    # ---- DDP training: rank r trains on its share of each batch
    model = make_model()
    if rank == 1:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)                        # construction must broadcast rank 0's values
    model.register_buffer("counter", torch.tensor([float(rank)]))
    ddp = DDP(model, bucket_cap_mb=0.001)          # several buckets
    out["buckets"] = len(ddp._buckets)
    out["buffer"] = model.counter.tolist()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    share = BATCH // world
    for step in range(STEPS):
        x, y = batch(step)
        x, y = x[rank * share:(rank + 1) * share], y[rank * share:(rank + 1) * share]
        opt.zero_grad()
        if step % 2 == 0:                           # no_sync: two half-batches accumulated, one all-reduce
            with ddp.no_sync():
                (nn.functional.cross_entropy(ddp(x[:share // 2]), y[:share // 2]) / 2).backward()
            (nn.functional.cross_entropy(ddp(x[share // 2:]), y[share // 2:]) / 2).backward()
        else:
            nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    flat = np.concatenate([p.ravel() for p in params(model)])
    gathered = [torch.zeros(flat.size, dtype=torch.float64) for _ in range(world)]
    dist.all_gather(gathered, torch.tensor(flat))
    out["replica_diff"] = float(max(np.abs(g.numpy() - flat).max() for g in gathered))
    out["params"] = [p.tolist() for p in params(model)]
    dist.destroy_process_group()
    with open(f"result{rank}.json", "w") as f:
        json.dump(out, f)
""")


def _reference_params():
    """The same training on one process, on the full batches."""
    ns = {}
    exec(COMMON, ns)
    model = ns["make_model"]()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    B = ns["BATCH"]
    for step in range(ns["STEPS"]):
        x, y = ns["batch"](step)
        opt.zero_grad()
        if step % 2 == 0:       # the workers' no_sync steps: the mean of the 4 quarter-batch means
            for k in range(4):
                sl = slice(k * B // 4, (k + 1) * B // 4)
                (nn.functional.cross_entropy(model(x[sl]), y[sl]) / 4).backward()
        else:
            nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return ns["params"](model)


def _run(cmd, tmp_path, env=None):
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path, env=env)
    return proc, time.perf_counter() - start


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _results(folder, world):
    return [json.loads((folder / f"result{r}.json").read_text()) for r in range(world)]


# ------------------------------------------------------------------------------------------ 2 processes

@needs_mpi
def test_two_processes_collectives_and_ddp_training(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    cmd, env = build_command(2, str(script), [])
    env.update({k: v for k, v in _env().items() if k == "PYTHONPATH"})
    proc, _ = _run(cmd, tmp_path, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r0, r1 = _results(tmp_path, 2)
    assert (r0["world"], r1["world"]) == (2, 2)
    for r in (r0, r1):
        assert r["sum"] == [[1.0, 7.0], [3.0, 9.0], [5.0, 11.0]]
        assert r["avg"] == [1.5, 9.5] and r["max"] == [2.0, 10.0] and r["min"] == [1.0, 9.0]
        assert r["isum"] == [1, 2]
        assert r["bcast"] == [[1.0, 1.0], [1.0, 1.0]]
        assert r["gather"] == [[0.0] * 3, [1.0] * 3]
        assert r["buffer"] == [0.0]                 # rank 0's buffer, broadcast at construction
        assert r["buckets"] > 1
        assert r["replica_diff"] == 0.0             # the replicas' weights stay identical
    assert r0["rscatter"] == [1.0, 1.0] and r1["rscatter"] == [21.0, 21.0]
    assert r0["params"] == r1["params"]
    ref = _reference_params()
    err = max(float(np.abs(np.asarray(a) - b).max()) for a, b in zip(r0["params"], ref))
    print(f"max |2-process - 1-process| after training: {err:.3g}")
    assert err < 1e-12                              # float64 rounding only


@needs_mpi
def test_a_rank_that_raises_aborts_the_job(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(textwrap.dedent("""
        import reftorch as torch
        import reftorch.distributed as dist
        dist.init_process_group("mpi")
        if dist.get_rank() == 1:
            raise RuntimeError("rank 1 fails")
        dist.all_reduce(torch.ones(3))          # rank 0 would wait here forever
    """))
    proc, elapsed = _run([sys.executable, "-m", "reftorch.distributed.run", "-n", "2", str(script)], tmp_path, _env())
    print(f"aborted in {elapsed:.2f} s")
    assert proc.returncode != 0
    assert "rank 1 fails" in proc.stderr


@needs_mpi
def test_launcher_divides_the_threads(tmp_path):
    script = tmp_path / "env.py"
    script.write_text("import json, os\nfrom mpi4py import MPI\n"
                      "json.dump([os.environ['NUMBA_NUM_THREADS'], os.environ['OMP_NUM_THREADS']], "
                      "open(f'result{MPI.COMM_WORLD.rank}.json', 'w'))\n")
    env = {k: v for k, v in _env().items() if k not in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS")}
    proc, _ = _run([sys.executable, "-m", "reftorch.distributed.run", "-n", "2", str(script)], tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    from reftorch.distributed.run import cpu_count
    threads = str(max(1, cpu_count() // 2))
    assert _results(tmp_path, 2) == [[threads, threads]] * 2


@needs_mpi
def test_world_size_one_with_mpi4py_without_mpiexec(tmp_path):
    code = ("import reftorch as torch, reftorch.distributed as dist\n"
            "dist.init_process_group('mpi')\n"
            "t = torch.tensor([2.0]); dist.all_reduce(t, op=dist.ReduceOp.AVG)\n"
            "print(dist.get_rank(), dist.get_world_size(), t.item())\n")
    proc, _ = _run([sys.executable, "-c", code], tmp_path, _env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "1", "2.0"]


def test_launcher_command():
    if find_mpiexec() is None:
        with pytest.raises(FileNotFoundError):
            build_command(2, "s.py", [])
        return
    cmd, env = build_command(3, "s.py", ["--x", "1"], mpiexec="/x/mpiexec")
    assert cmd == ["/x/mpiexec", "-n", "3", sys.executable, "-m", "mpi4py", "s.py", "--x", "1"]
    cmd, _ = build_command(2, "pkg.mod", [], module=True, mpiexec="/x/mpiexec")
    assert cmd[-3:] == ["mpi4py", "-m", "pkg.mod"]


# ------------------------------------------------------------------------------------------ 1 process, in here

@pytest.fixture
def world_of_one(monkeypatch):
    """A default group of one process without MPI (as without mpi4py installed)."""
    monkeypatch.setitem(sys.modules, "mpi4py", None)          # import mpi4py -> ImportError
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS"):
        monkeypatch.delenv(var, raising=False)
    dist.init_process_group("mpi")
    yield
    dist.destroy_process_group()


def test_not_initialized():
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="has not been initialized"):
        DDP(nn.Linear(2, 2))


def test_world_of_one_collectives(world_of_one):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    with pytest.raises(ValueError, match="twice"):
        dist.init_process_group("mpi")
    t = torch.arange(6.0).reshape(2, 3).t()
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX, dist.ReduceOp.MIN):
        dist.all_reduce(t, op=op)
    assert t.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    dist.broadcast(t, 0)
    outs = [torch.zeros(3, 2)]
    dist.all_gather(outs, t)
    assert outs[0].tolist() == t.tolist()
    o = torch.zeros(2)
    dist.reduce_scatter(o, [torch.tensor([1.0, 2.0])])
    assert o.tolist() == [1.0, 2.0]
    dist.barrier()
    with pytest.raises(ValueError, match="tensor_list"):
        dist.all_gather([torch.zeros(3), torch.zeros(3)], torch.zeros(3))
    with pytest.raises(RuntimeError, match="only the 'mpi' backend"):
        dist.destroy_process_group()
        dist.init_process_group("nccl")
    dist.init_process_group()


def test_world_of_one_ddp_equals_plain_training(world_of_one):
    def train(wrap):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2)).double()
        net = DDP(model) if wrap else model
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        g = np.random.default_rng(0)
        for _ in range(3):
            x, y = torch.tensor(g.standard_normal((6, 4))), torch.tensor(g.standard_normal((6, 2)))
            opt.zero_grad()
            nn.functional.mse_loss(net(x), y).backward()
            opt.step()
        return net, [p.detach().numpy().copy() for p in model.parameters()]
    ddp, a = train(True)
    _, b = train(False)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert isinstance(ddp.module, nn.Sequential)
    assert list(ddp.state_dict())[0] == "module.0.weight"


def test_ddp_unused_parameter_keeps_none_grad(world_of_one):
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 1), nn.Linear(3, 1)

        def forward(self, x):
            return self.a(x)
    model = TwoHeads()
    ddp = DDP(model)
    ddp(torch.ones(2, 3)).sum().backward()
    assert model.a.weight.grad is not None and model.b.weight.grad is None
    ddp(torch.ones(2, 3)).sum().backward()          # a second pass starts afresh
    assert model.a.weight.grad.tolist() == [[4.0, 4.0, 4.0]]


def test_distributed_sampler_matches_pytorch_scheme():
    n, replicas = 10, 3
    shards = [list(DistributedSampler(range(n), replicas, r, shuffle=False)) for r in range(replicas)]
    assert shards == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]      # padded by repeating from the start
    assert [len(DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=True)) for r in range(3)] == [3] * 3
    for epoch in (0, 1):
        samplers = [DistributedSampler(range(n), replicas, r, seed=7) for r in range(replicas)]
        for s in samplers:
            s.set_epoch(epoch)
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(7 + epoch)).tolist()
        perm += perm[:2]
        assert [list(s) for s in samplers] == [perm[r::replicas] for r in range(replicas)]
    assert list(DistributedSampler(range(2), 5, 4, shuffle=False)) == [0]   # padding longer than the dataset
    with pytest.raises(ValueError, match="Invalid rank 3"):
        DistributedSampler(range(n), 3, 3)


def test_import_does_not_load_mpi4py():
    code = "import sys, reftorch, reftorch.distributed, reftorch.nn.parallel; print('mpi4py' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT, env=_env())
    assert out.stdout.strip() == "False", out.stderr
