"""reftorch.multiprocessing: tensors cross processes through shared memory (fork and spawn)."""
import time

import pytest

import reftorch as torch
import reftorch.multiprocessing as mp

TIMEOUT = 120


def _add_one(q, done):
    t = q.get(timeout=TIMEOUT)
    t.add_(1)                   # in place: the parent sees it
    done.put(t.is_shared())


def _hogwild(rank, w, steps):
    for _ in range(steps):
        w.add_(1.0)             # no lock: every process updates the same pages


def _fails(rank):
    if rank == 1:
        raise ValueError("boom in rank 1")


def _exits(rank):
    import os
    os._exit(3)


def _run(fn, args=(), nprocs=1, start_method="fork"):
    """start_processes joined under a deadline, so a hung child fails the test instead of stalling it."""
    context = mp.start_processes(fn, args=args, nprocs=nprocs, join=False, start_method=start_method)
    deadline = time.monotonic() + TIMEOUT
    try:
        while not context.join(timeout=max(deadline - time.monotonic(), 0.1)):
            assert time.monotonic() < deadline, "child processes did not finish in time"
    finally:
        for p in context.processes:
            if p.is_alive():
                p.kill()


def _pool_sum(t):
    return float(t.sum().item())


@pytest.fixture(params=["fork", "spawn"])
def ctx(request):
    return mp.get_context(request.param)


@pytest.mark.parametrize("strategy", ["file_descriptor", "file_system"])
def test_queue_shares_memory(ctx, strategy, monkeypatch):
    monkeypatch.setattr(mp._shared, "_sharing_strategy", strategy)
    t = torch.zeros(2, 3)
    view = t[1]                 # a view: only its part of the storage is updated, and seen through t
    q, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_add_one, args=(q, done))
    p.start()
    q.put(view)
    assert done.get(timeout=TIMEOUT) is True
    p.join(TIMEOUT)
    assert p.exitcode == 0
    assert t.is_shared()
    assert t.tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]


def test_hogwild_shared_before_fork():
    w = torch.zeros(4).share_memory_()
    assert w.is_shared()
    _run(_hogwild, (w, 5), nprocs=2)
    assert w.tolist() == [10.0] * 4


def test_spawn_and_errors():
    w = torch.zeros(3)
    _run(_hogwild, (w, 2), nprocs=2, start_method="spawn")
    assert w.tolist() == [4.0] * 3          # the spawn arguments went through shared memory too
    with pytest.raises(mp.ProcessRaisedException, match="boom in rank 1") as err:
        _run(_fails, nprocs=2)
    assert err.value.error_index == 1 and "-- Process 1 terminated with the following error:" in str(err.value)
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3"):
        _run(_exits)
    assert mp.start_processes(_hogwild, args=(w, 1), nprocs=1, start_method="fork") is None   # join=True
    assert w.tolist() == [5.0] * 3


def test_pool_simplequeue_and_strategies(ctx):
    with ctx.Pool(2) as pool:
        result = pool.map_async(_pool_sum, [torch.ones(3), torch.ones(2)], chunksize=1)
        assert result.get(TIMEOUT) == [3.0, 2.0]
    q = mp.SimpleQueue()
    q.put(torch.arange(3.0))
    assert q.get().tolist() == [0.0, 1.0, 2.0]
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(AssertionError, match="invalid sharing strategy 'x'"):
        mp.set_sharing_strategy("x")
    assert mp.Process is not None and callable(mp.set_start_method) and torch.multiprocessing is mp


def test_non_leaf_refused():
    x = torch.ones(2, requires_grad=True) * 2
    q = mp.SimpleQueue()
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor which requires_grad"):
        q.put(x)
    p = torch.nn.Parameter(torch.ones(2))
    q.put(p)
    got = q.get()
    assert isinstance(got, torch.nn.Parameter) and got.requires_grad and got.is_shared()


def test_file_system_strategy_leaves_nothing(monkeypatch):
    import glob
    import os
    monkeypatch.setattr(mp._shared, "_sharing_strategy", "file_system")
    before = set(glob.glob(f"/dev/shm/reftorch_{os.getpid()}_*"))
    q = mp.SimpleQueue()
    t = torch.ones(3)
    q.put(t)
    q.put(t[1:])
    del t                            # the sender's storage may go before the receiver opens it
    a, b = q.get(), q.get()
    b.add_(1)
    assert a.tolist() == [1.0, 2.0, 2.0]
    del a, b
    import gc
    gc.collect()
    assert set(glob.glob(f"/dev/shm/reftorch_{os.getpid()}_*")) == before
