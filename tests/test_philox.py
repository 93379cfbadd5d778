"""The counter-based generator of cpu rand / randn (reftorch/_philox.py): Philox 4x32-10's known answer,
draws as pure functions of (seed, counter), manual_seed and get/set_rng_state replaying them."""
from __future__ import annotations

import numpy as np
from numba import njit

import reftorch
from reftorch import _philox


def test_philox_known_answer():
    # Random123's known-answer vector for philox4x32_10 (counter 0, key 0)
    block = njit(lambda s, c: _philox.philox_block(s, c))
    assert [int(w) for w in block(np.uint64(0), np.uint64(0))] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_draws_are_functions_of_the_counter():
    reftorch.manual_seed(7)
    whole = reftorch.rand(10)
    reftorch.manual_seed(7)
    parts = reftorch.cat([reftorch.rand(4), reftorch.rand(2, 3).reshape(-1)])      # the next draw takes the next counters
    assert whole.tolist() == parts.tolist()
    assert np.array_equal(whole.numpy(), _philox.uniform(10, 7, 0, np.float32))
    g = reftorch.Generator().manual_seed(7)         # another generator with the same seed: the same stream
    assert reftorch.rand(10, generator=g).tolist() == whole.tolist()
    reftorch.manual_seed(8)
    assert reftorch.rand(10).tolist() != whole.tolist()


def test_uniform_is_exact_in_its_dtype_and_below_one():
    for dt, bits in ((reftorch.float32, 24), (reftorch.float64, 53), (reftorch.float16, 11), (reftorch.bfloat16, 8)):
        x = reftorch.rand(4000, dtype=dt).double().numpy()
        assert x.min() >= 0 and x.max() < 1
        assert np.array_equal(x * 2.0 ** bits, np.floor(x * 2.0 ** bits))
        assert abs(x.mean() - 0.5) < 0.03
    z = reftorch.randn(20000, dtype=reftorch.float64).numpy()
    assert abs(z.mean()) < 0.05 and abs(z.var() - 1) < 0.05


def test_rng_state_carries_the_offset():
    reftorch.manual_seed(3)
    reftorch.rand(5)
    state = reftorch.get_rng_state()
    a, b = reftorch.rand(3).tolist(), reftorch.randn(3).tolist()
    reftorch.set_rng_state(state)
    assert reftorch.rand(3).tolist() == a and reftorch.randn(3).tolist() == b
    # the in-place fillers draw from the same stream
    reftorch.manual_seed(3)
    u = reftorch.empty(6, dtype=reftorch.float64).uniform_()
    assert np.array_equal(u.numpy(), _philox.uniform(6, 3, 0, np.float64))
