"""The slow autograd tests: memory stays flat over many training steps, and a 100,000-node chain
backs up iteratively (no recursion error)."""
import gc
import sys
import tracemalloc

import reftorch as torch


def _step(x, w):
    (x @ w).tanh().sum().backward()
    w.grad = None                                        # the next step starts from scratch


def test_memory_stays_flat_over_10000_steps():
    # Traced from before the model exists, so the baseline holds at least its 1 MiB weight. A graph
    # kept alive per step (its 32 KiB tanh output alone) would add ~290 MiB by step 10,000; what
    # does grow -- Python's free lists filling up -- stays within a few KiB.
    gc.collect()
    gc.disable()                                         # freed by reference counting alone: no cycles
    tracemalloc.start()
    sizes = {}
    try:
        torch.manual_seed(0)
        x = torch.randn(8, 256)
        w = torch.randn(256, 1024, requires_grad=True)
        for i in range(1, 10_001):
            _step(x, w)
            if i in (1_000, 10_000):
                sizes[i] = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        gc.enable()
    assert sizes[1_000] > 1 << 20
    assert sizes[10_000] <= sizes[1_000] * 1.05, sizes


def test_100000_node_chain_backs_up_without_recursion():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y.view(2)                                   # cheap ops: the engine's own cost dominates
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000)                          # nothing may recurse per node
    try:
        (y * 3).sum().backward()
    finally:
        sys.setrecursionlimit(limit)
    assert x.grad.tolist() == [3.0, 3.0]
    del y                                                # tearing the chain down must not recurse either
