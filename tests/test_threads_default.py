"""Large ops use every core by default, decided by size alone (issue 19): the load average no longer keeps a
quiet machine's second core idle, and set_num_threads / REFTORCH_NUM_THREADS still cap the threads."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

import reftorch
from reftorch import _blas
from reftorch import _cpu as _dispatch  # the thread rule lives in the cpu back end

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_size_decides_not_the_load(monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (99.0, 99.0, 99.0))     # a busy machine changes nothing
    monkeypatch.setattr(_dispatch, "THREADS", 2)
    assert _dispatch._parallel(_dispatch.PARALLEL_MIN)
    assert not _dispatch._parallel(_dispatch.PARALLEL_MIN - 1)
    monkeypatch.setattr(_dispatch, "THREADS", 1)
    assert not _dispatch._parallel(1 << 30)


def test_threaded_op_matches_serial(monkeypatch):
    x = np.random.default_rng(0).random(_dispatch.PARALLEL_MIN + 12345, np.float32)
    t = reftorch.from_numpy(x)
    monkeypatch.setattr(_dispatch, "THREADS", 2)
    par = (t * 2 + 1).numpy(), float(t.sum())
    monkeypatch.setattr(_dispatch, "THREADS", 1)
    one = (t * 2 + 1).numpy(), float(t.sum())
    assert np.array_equal(par[0], one[0]) and par[1] == one[1]


def test_env_and_set_num_threads_cap():
    code = ("import reftorch as t; from reftorch import _cpu as d; a = t.get_num_threads(); "
            "t.set_num_threads(1); print(a, t.get_num_threads(), d._parallel(1 << 30))")
    env = dict(os.environ, PYTHONPATH=ROOT, REFTORCH_NUM_THREADS="3")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["3", "1", "False"]


def test_a_library_loaded_later_follows_set_num_threads(monkeypatch):
    """MKL's LAPACK (loaded on the first eigh where the optional wheel is installed) takes the count given before
    it was loaded and every later one, as NumPy's OpenBLAS does."""
    seen = []
    monkeypatch.setattr(_blas, "_followers", [])
    monkeypatch.setattr(_blas, "_asked", [])
    monkeypatch.setattr(_blas, "set_threads", None)       # NumPy's BLAS keeps its count for the other tests
    monkeypatch.setattr(reftorch._cpu, "THREADS", reftorch.get_num_threads())
    _blas.follow(seen.append)
    assert seen == []                       # nothing asked yet: the library keeps its own default
    reftorch.set_num_threads(1)
    _blas.follow(seen.append)               # a second library, loaded after the call
    assert seen == [1, 1]
    reftorch.set_num_threads(2)
    assert seen == [1, 1, 2, 2]


def test_strided_elementwise_in_threads_matches_serial(monkeypatch):
    """Broadcast and transposed operands run the strided (or blocked) kernel over chunks of the outermost dim (in
    the output's memory order) on the pool's threads: the same values as one thread, every element written once."""
    rng = np.random.default_rng(1)      # above BLOCK_MIN elements: the general runner's sizes
    a, b = rng.random((300, 257), np.float32), rng.random(257, np.float32)
    c, e, g = rng.random((260, 270)), rng.random((600, 400), np.float32), rng.random((300, 300))
    ta, tb, tc, te, tg = (reftorch.from_numpy(x) for x in (a, b, c, e, g))
    cases = [lambda: ta + tb, lambda: tc.T + tc.T, lambda: tc.T * 2 + tc.T, lambda: reftorch.where(ta > 0.5, ta, tb),
             lambda: te[:, ::2].exp(), lambda: ta.unsqueeze(0).expand(8, 300, 257) - tb,
             lambda: tg.T + tg]       # (the blocked kernel: an operand walks the output's rows down its columns)
    monkeypatch.setattr(_dispatch, "THREADS", 3)
    monkeypatch.setattr(_dispatch, "_parallel", lambda n: True)
    chunks = []
    in_threads = _dispatch._in_threads
    monkeypatch.setattr(_dispatch, "_in_threads",
                        lambda run, ranges: (chunks.append(len(ranges)), in_threads(run, ranges)))
    par = [f().numpy() for f in cases]
    assert chunks.count(3) >= len(cases)       # every case ran on three threads
    monkeypatch.setattr(_dispatch, "THREADS", 1)
    monkeypatch.setattr(_dispatch, "_parallel", lambda n: False)
    one = [f().numpy() for f in cases]
    want = [a + b, c.T + c.T, c.T * 2 + c.T, np.where(a > 0.5, a, b), np.exp(e[:, ::2]),
            np.broadcast_to(a, (8, 300, 257)) - b, g.T + g]
    for p, o, w in zip(par, one, want):
        assert np.array_equal(p, o)
        np.testing.assert_allclose(p, w, rtol=1e-6)
