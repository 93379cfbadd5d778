"""The slow autograd tests: memory stays flat over many training steps, and a 100,000-node chain
backs up iteratively (no recursion error)."""
import gc
import sys
import tracemalloc

import numpy as np

import reftorch as torch


def _step(x, params):
    w1, b1, w2 = params
    loss = ((x @ w1 + b1).tanh() @ w2).sum()
    loss.backward()
    with torch.no_grad():
        for p in params:
            p.sub_(p.grad * 1e-4)
            p.grad = None
    return loss


def test_memory_stays_flat_over_10000_steps():
    torch.manual_seed(0)
    x = torch.randn(8, 4)
    params = [torch.randn(4, 16, requires_grad=True), torch.zeros(16, requires_grad=True),
              torch.randn(16, 1, requires_grad=True)]
    for _ in range(50):                                  # compile kernels, fill caches
        _step(x, params)
    gc.collect()
    gc.disable()                                         # freed by reference counting alone: no cycles
    tracemalloc.start()
    try:
        sizes = {}
        for i in range(1, 10_001):
            _step(x, params)
            if i in (1_000, 10_000):
                sizes[i] = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        gc.enable()
    assert sizes[10_000] <= sizes[1_000] * 1.05, sizes
    assert all(np.isfinite(p.detach()._array()).all() for p in params)


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
