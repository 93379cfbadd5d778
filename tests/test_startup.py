"""Start-up work: kernels jitted on first lookup, cached loads without Numba's registry refresh, the
cached Numba runtime, REFTORCH_EAGER_INIT. No timings are asserted (benches/startup.py measures them)."""
import os
import subprocess
import sys
import threading

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code, **env):
    full = dict(os.environ, **env)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip().splitlines()[-1]


def _not_looked_up(suffix):
    """Kernels of cpu.py that no code has looked up yet in this process (still outside the module)."""
    from reftorch.kernels import _cache, cpu
    return [n for n in _cache._PENDING[cpu.__name__] if n.endswith(suffix) and n not in vars(cpu)]


def test_kernels_are_jitted_on_first_lookup():
    from numba.core.dispatcher import Dispatcher
    from reftorch.kernels import cpu
    fresh = _not_looked_up("_strided")
    assert fresh, "every strided kernel of cpu.py was already looked up"
    name = fresh[-1]
    k = getattr(cpu, name)
    assert isinstance(k, Dispatcher)
    assert cpu.__dict__[name] is k and getattr(cpu, name) is k      # bound in the module: later lookups are plain
    helper = "_s_" + name[:-len("_strided")]
    assert isinstance(cpu.__dict__[helper], Dispatcher)             # the scalar function it calls, jitted with it
    assert k.targetoptions.get("nogil") and k.targetoptions.get("error_model") == "numpy"
    assert not hasattr(cpu, "no_such_kernel")
    assert name in dir(cpu) and set(_not_looked_up("_contig")) <= set(dir(cpu))


def test_lookup_from_threads_gives_one_dispatcher():
    from reftorch.kernels import cpu
    names = _not_looked_up("_blocked")[:3]
    got, barrier = [], threading.Barrier(6)

    def look():
        barrier.wait()
        got.append(tuple(getattr(cpu, n) for n in names))

    threads = [threading.Thread(target=look) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(names) == 3 and len(got) == 6 and all(g == got[0] for g in got)
    assert all(cpu.__dict__[n] is d for n, d in zip(names, got[0]))


def test_jitted_kernel_runs():
    import reftorch
    from reftorch.kernels import cpu
    a = np.arange(6, dtype=np.float64)
    out = np.empty_like(a)
    cpu.mul_contig(out, a, a)
    np.testing.assert_array_equal(out, a * a)
    assert reftorch.tensor([1.0, 2.0]).add(1).tolist() == [2.0, 3.0]


_WARM = """
import sys
import reftorch
assert "numba" not in sys.modules, "import reftorch imported numba"
x = reftorch.ones(10)
y = (x * x + x).sum().item()
print(y, "numba.np.arraymath" in sys.modules, "scipy.linalg" in sys.modules)
"""


def test_warm_cache_first_op_skips_registries_and_scipy(tmp_path):
    env = dict(NUMBA_CACHE_DIR=str(tmp_path))
    first = _run(_WARM, **env)                   # fills the cache (compiles: Numba's registries load)
    assert first.split()[0] == "20.0" and first.split()[2] == "False"      # never scipy.linalg
    assert any(f.startswith("nrt-") for f in os.listdir(tmp_path))          # Numba's runtime, cached
    second = _run(_WARM, **env)                  # loads: no registry refresh, no array-math registry
    assert second.split() == ["20.0", "False", "False"]
    third = _run(_WARM, REFTORCH_NUMBA_REFRESH="1", **env)                  # Numba's own loads still work
    assert third.split()[0] == "20.0"


def test_eager_init_thread_and_sync():
    code = ("import reftorch, sys\nfrom reftorch import _startup\n"
            "t = _startup._thread\nif t is not None: t.join()\n"
            "print('numba' in sys.modules, reftorch.arange(4.).exp().sum().item() > 0)")
    assert _run(code, REFTORCH_EAGER_INIT="1") == "True True"
    assert _run(code, REFTORCH_EAGER_INIT="sync") == "True True"
