"""SyncBatchNorm: plain BatchNorm without a multi-process group; over 2 MPI processes (each holding
half of the batch) the same outputs, input gradients and running statistics as one BatchNorm over
the whole batch. convert_sync_batchnorm and the errors as torch 2.13's."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import reftorch as torch
import reftorch.distributed as dist
from reftorch import nn
from reftorch.distributed.run import build_command, find_mpiexec
from reftorch.nn.modules.syncbn import _SyncBatchNormFunction

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import mpi4py  # noqa: F401
    _MPI_MISSING = None if find_mpiexec() is not None else "mpiexec is not installed"
except ImportError:
    _MPI_MISSING = "mpi4py is not installed (pip install 'reftorch[distributed]')"


def _data():
    g = np.random.default_rng(0)
    return g.standard_normal((6, 3, 4)), g.standard_normal((6, 3, 4))


def test_repr_errors_and_convert():
    m = nn.SyncBatchNorm(3)
    assert repr(m) == "SyncBatchNorm(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    with pytest.raises(ValueError, match=r"^expected at least 2D input \(got 1D input\)$"):
        m(torch.ones(3))
    with pytest.raises(ValueError, match="^SyncBatchNorm number of input channels should be non-zero$"):
        m(torch.ones(3, 0))
    bn = nn.BatchNorm2d(3)
    s = nn.Sequential(nn.Conv2d(2, 3, 1), bn, nn.Sequential(nn.BatchNorm1d(3)))
    out = nn.SyncBatchNorm.convert_sync_batchnorm(s)
    assert type(out[1]) is nn.SyncBatchNorm and type(out[2][0]) is nn.SyncBatchNorm
    assert out[1].weight is bn.weight and out[1].running_mean is bn.running_mean


def test_without_group_is_batch_norm():
    x, _ = _data()
    a, b = nn.SyncBatchNorm(3).double(), nn.BatchNorm1d(3).double()
    np.testing.assert_allclose(a(torch.tensor(x)).detach().numpy(), b(torch.tensor(x)).detach().numpy())
    np.testing.assert_allclose(a.running_var.numpy(), b.running_var.numpy())


def test_sync_function_in_a_world_of_one_matches_batch_norm(monkeypatch):
    """The synchronised path's own arithmetic (forward, backward, running stats) with all_reduce over one
    process, against F.batch_norm."""
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS"):
        monkeypatch.delenv(var, raising=False)
    dist.init_process_group("mpi")
    try:
        x, dy = _data()
        results = []
        for sync in (True, False):
            inp = torch.tensor(x).requires_grad_(True)
            w = torch.tensor([1.5, -0.5, 2.0], dtype=torch.float64).requires_grad_(True)
            b = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64).requires_grad_(True)
            rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
            if sync:
                y = _SyncBatchNormFunction.apply(inp, w, b, rm, rv, 1e-5, 0.1, None)
            else:
                y = nn.functional.batch_norm(inp, rm, rv, w, b, True, 0.1, 1e-5)
            (y * torch.tensor(dy)).sum().backward()
            results.append([t.detach().numpy() for t in (y, inp.grad, w.grad, b.grad, rm, rv)])
        for got, want in zip(*results):
            np.testing.assert_allclose(got, want, atol=1e-10)
    finally:
        dist.destroy_process_group()


WORKER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import reftorch as torch
    import reftorch.distributed as dist
    from reftorch import nn
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    g = np.random.default_rng(0)
    x, dy = g.standard_normal((6, 3, 4)), g.standard_normal((6, 3, 4))
    m = nn.SyncBatchNorm(3).double()
    inp = torch.tensor(x[rank * 3:(rank + 1) * 3]).requires_grad_(True)
    y = m(inp)
    (y * torch.tensor(dy[rank * 3:(rank + 1) * 3])).sum().backward()
    out = {"y": y.detach().numpy().tolist(), "gx": inp.grad.numpy().tolist(), "rm": m.running_mean.tolist(),
           "rv": m.running_var.tolist(), "gw": m.weight.grad.tolist()}
    open(f"result{rank}.json", "w").write(json.dumps(out))
""")


@pytest.mark.skipif(_MPI_MISSING is not None, reason=_MPI_MISSING or "")
def test_two_processes_match_one_batch_norm_over_the_whole_batch(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    cmd, env = build_command(2, str(script), [])
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = [json.loads((tmp_path / f"result{k}.json").read_text()) for k in range(2)]
    x, dy = _data()
    ref = nn.BatchNorm1d(3).double()
    inp = torch.tensor(x).requires_grad_(True)
    y = ref(inp)
    (y * torch.tensor(dy)).sum().backward()
    np.testing.assert_allclose(np.concatenate([r[0]["y"], r[1]["y"]]), y.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(np.concatenate([r[0]["gx"], r[1]["gx"]]), inp.grad.numpy(), atol=1e-10)
    for k in range(2):
        np.testing.assert_allclose(r[k]["rm"], ref.running_mean.numpy(), atol=1e-12)
        np.testing.assert_allclose(r[k]["rv"], ref.running_var.numpy(), atol=1e-12)
    # weight gradients stay local (DDP averages them): their sum is the whole batch's
    np.testing.assert_allclose(np.add(r[0]["gw"], r[1]["gw"]), ref.weight.grad.numpy(), atol=1e-10)
