"""Fork safety after threaded work (issue 20, point 1): once the main process ran an op large enough for
reftorch's thread pool, DataLoader workers (fork, spawn, forkserver, persistent) and plain forked children run
their ops instead of waiting forever on the pool's threads, which a fork does not copy. Each case runs in a
subprocess with a DataLoader timeout and a process timeout, so that a regression fails instead of hanging."""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PRELUDE = """
import os, sys, threading
import reftorch as torch
from reftorch import _cpu
from reftorch.utils.data import DataLoader, Dataset

N = 1 << 22                                 # above PARALLEL_MIN: chunks on the pool's threads


def big(i):
    return float((torch.full((N,), float(i)) * 2).sum())


class Big(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.tensor(big(i))


def threads_in_worker(i):
    out = [None, None]
    ts = [threading.Thread(target=lambda k=k: out.__setitem__(k, big(i))) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out[0] == out[1]
    return torch.tensor(out[0])


def expected():
    return [2.0 * i * N for i in range(4)]


def threaded_work_first():
    assert big(1) == 2.0 * N
    assert any(t.name.startswith("reftorch") for t in threading.enumerate()), "the main process used no pool"
"""

LOADER = PRELUDE + """
if __name__ == "__main__":                  # spawned workers import this file again
    threaded_work_first()
    loader = DataLoader(Big(), batch_size=None, num_workers=2, timeout=60, multiprocessing_context={ctx!r},
                        persistent_workers={persistent})
    for epoch in range({epochs}):
        assert [float(x) for x in loader] == expected(), epoch
    print("ok")
"""


def run(tmp_path, program, timeout=240):
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(program))
    env = dict(os.environ, PYTHONPATH=ROOT, REFTORCH_NUM_THREADS="4")
    r = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


METHODS = multiprocessing.get_all_start_methods()


@pytest.mark.parametrize("ctx, persistent, epochs", [
    ("fork", False, 1), ("fork", True, 2), ("spawn", False, 1), ("forkserver", True, 2),
])
def test_dataloader_workers_after_threaded_work(tmp_path, ctx, persistent, epochs):
    if ctx not in METHODS:
        pytest.skip(f"no {ctx} start method here")
    run(tmp_path, LOADER.format(ctx=ctx, persistent=persistent, epochs=epochs))


@pytest.mark.skipif("fork" not in METHODS, reason="no fork start method")
def test_forked_workers_that_use_threads_themselves(tmp_path):
    """Workers are serial by default (as PyTorch's); one that turns threads back on gets a fresh pool, and
    ops on its own threads run too."""
    run(tmp_path, PRELUDE + """
threaded_work_first()
def init(worker_id):
    assert _cpu.THREADS == 1           # workers run serial, as PyTorch's (torch.set_num_threads(1))
    _cpu.THREADS = 4


class Threaded(Big):
    def __getitem__(self, i):
        return threads_in_worker(i)


loader = DataLoader(Threaded(), batch_size=None, num_workers=2, timeout=60, multiprocessing_context="fork",
                    worker_init_fn=init)
assert [float(x) for x in loader] == expected()
print("ok")
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")
def test_a_forked_child_runs_threaded_ops(tmp_path):
    run(tmp_path, PRELUDE + """
threaded_work_first()
import signal
pid = os.fork()
if pid == 0:
    signal.alarm(60)                        # a hang kills the child, and the parent sees it
    ok = big(3) == 6.0 * N and threads_in_worker(2).item() == 4.0 * N
    ok = ok and any(t.name.startswith("reftorch") for t in threading.enumerate())    # a fresh pool ran
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
assert status == 0, status
print("ok")
""")
