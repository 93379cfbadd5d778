"""Start-up work: kernels jitted on first lookup, cached loads without Numba's registry refresh, the
cached Numba runtime, REFTORCH_EAGER_INIT. No timings are asserted (benches/startup.py measures them)."""
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code, **env):
    full = dict(os.environ, **env)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip().splitlines()[-1]


# in a process of its own: in the suite's workers, other tests have looked up (or bound the helpers of) any
# kernel this could pick, in an order that depends on how xdist shares the tests out
_LOOKUP = """
import threading
from numba.core.dispatcher import Dispatcher
from reftorch.kernels import _cache, cpu


def not_looked_up(suffix):
    return [n for n in _cache._PENDING[cpu.__name__] if n.endswith(suffix) and n not in vars(cpu)]


fresh = [n for n in not_looked_up("_strided") if "_s_" + n[:-len("_strided")] not in vars(cpu)]
name = fresh[-1]
k = getattr(cpu, name)
assert isinstance(k, Dispatcher)
assert cpu.__dict__[name] is k and getattr(cpu, name) is k      # bound in the module: later lookups are plain
helper = "_s_" + name[:-len("_strided")]
assert helper not in cpu.__dict__                               # the scalar function it calls: bound when ...
_cache._bind_helpers(k.py_func)                                 # ... the kernel first compiles (not on a load)
assert isinstance(cpu.__dict__[helper], Dispatcher) and k.py_func not in _cache._UNBOUND
assert k.targetoptions.get("nogil") and k.targetoptions.get("error_model") == "numpy"
assert not hasattr(cpu, "no_such_kernel")
assert name in dir(cpu) and set(not_looked_up("_contig")) <= set(dir(cpu))

names = not_looked_up("_blocked")[:3]                           # six threads look up the same three kernels
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
print("ok")
"""


def test_kernels_are_jitted_on_first_lookup_once_across_threads():
    assert _run(_LOOKUP, REFTORCH_EAGER_INIT="0") == "ok"


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

# the kernels of the first ops, how each got its code (cache hits, misses), and what the process imported
_FIRST_OPS = """
import sys
import reftorch
from reftorch.kernels import _cache
from numba.core import entrypoints
x = reftorch.ones(10)
y = (x * x + x).sum().item()
hits = sum(sum(d.stats.cache_hits.values()) for d in _cache._JITTED.values())
misses = sum(sum(d.stats.cache_misses.values()) for d in _cache._JITTED.values())
print(y, hits, misses, "numpy.ma" in sys.modules, entrypoints._already_initialized)
"""


def test_warm_cache_first_op_skips_registries_and_scipy(tmp_path):
    env = dict(NUMBA_CACHE_DIR=str(tmp_path), REFTORCH_EAGER_INIT="0")     # lazy: import reftorch imports no Numba
    first = _run(_WARM, **env)                   # fills the cache (compiles: Numba's registries load)
    assert first.split()[0] == "20.0" and first.split()[2] == "False"      # never scipy.linalg
    assert any(f.startswith("nrt-") for f in os.listdir(tmp_path))          # Numba's runtime, cached
    second = _run(_WARM, **env)                  # loads: no registry refresh, no array-math registry
    assert second.split() == ["20.0", "False", "False"]
    third = _run(_WARM, REFTORCH_NUMBA_REFRESH="1", **env)                  # Numba's own loads still work
    assert third.split()[0] == "20.0"


def test_eager_init_thread_with_an_immediate_first_op():
    # the warm-up thread and the first op both want Numba's CPU context and its compiler lock: never a deadlock
    code = ("import reftorch, sys\n"
            "print(reftorch.ones(10).add(1).sum().item(), reftorch.arange(4.).exp().sum().item() > 0)")
    for _ in range(3):
        full = dict(os.environ, REFTORCH_EAGER_INIT="1")
        r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=full, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0 and r.stdout.split() == ["20.0", "True"], r.stderr[-3000:]


def test_eager_init_thread_and_sync():
    code = ("import reftorch, sys\nfrom reftorch import _startup\n"
            "t = _startup._thread\nif t is not None: t.join()\n"
            "print('numba' in sys.modules, reftorch.arange(4.).exp().sum().item() > 0)")
    assert _run(code, REFTORCH_EAGER_INIT="1") == "True True"
    assert _run(code, REFTORCH_EAGER_INIT="sync") == "True True"
    assert _run(code) == "True True"                            # sync is the default
    code = "import reftorch, sys\nprint('numba' in sys.modules, reftorch.arange(4.).exp().sum().item() > 0)"
    assert _run(code, REFTORCH_EAGER_INIT="0") == "False True"  # lazy: Numba comes with the first op


def test_warm_cache_first_ops_load_without_compiling(tmp_path):
    env = dict(NUMBA_CACHE_DIR=str(tmp_path))
    y, hits, misses, ma, entry_points = _run(_FIRST_OPS, **env).split()
    assert y == "20.0" and int(misses) > 0 and entry_points == "True"     # compiled: Numba's entry points ran first
    y, hits, misses, ma, entry_points = _run(_FIRST_OPS, **env).split()
    assert y == "20.0" and int(hits) > 0 and misses == "0"                # every kernel loaded from the cache ...
    assert ma == "False" and entry_points == "False"                      # ... without numpy.ma or the entry-point scan
    y, hits, misses, ma, entry_points = _run(_FIRST_OPS, REFTORCH_NUMBA_REFRESH="1", **env).split()
    assert y == "20.0" and misses == "0" and entry_points == "True"       # Numba's own loads: its hook runs


def test_no_cache_switch_writes_nothing(tmp_path):
    out = _run(_FIRST_OPS, NUMBA_CACHE_DIR=str(tmp_path), REFTORCH_NO_CACHE="1").split()
    assert out[0] == "20.0" and out[1] == "0" and int(out[2]) > 0
    assert os.listdir(tmp_path) == []


_KERNEL_MODULE = """
from reftorch.kernels._cache import CACHE, njit, jit_on_lookup


@njit(inline="always")
def _helper(a):
    return a + {step}


@njit(cache=CACHE, error_model="numpy", nogil=True)
def kernel(a):
    return _helper(a)


__getattr__, __dir__ = jit_on_lookup(globals())
"""

_CALL_KERNEL = """
import sys
sys.path.insert(0, {path!r})
import numpy as np
import stale_kernel
from numba.core import entrypoints
k = stale_kernel.kernel
r = k(np.float64(1.0))
print(r, sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values()), entrypoints._already_initialized)
"""


def test_changed_kernel_source_recompiles(tmp_path):
    src, cache = tmp_path / "src", tmp_path / "cache"
    src.mkdir()
    (src / "stale_kernel.py").write_text(_KERNEL_MODULE.format(step=1))
    code = _CALL_KERNEL.format(path=str(src))
    env = dict(NUMBA_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")
    assert _run(code, **env).split() == ["2.0", "0", "1", "True"]     # compiled and cached
    assert _run(code, **env).split() == ["2.0", "1", "0", "False"]    # loaded
    (src / "stale_kernel.py").write_text(_KERNEL_MODULE.format(step=10) + "\n")   # new source, new size and mtime
    assert _run(code, **env).split() == ["11.0", "0", "1", "True"]    # the stale entry is not loaded: recompiled
    assert _run(code, **env).split() == ["11.0", "1", "0", "False"]


_MASKED = """
import numpy as np, numpy.ma
from numba.core.errors import NumbaTypeError
from reftorch.kernels import cpu
k = cpu.atan2_contig                    # a fresh process: no overloads yet
a = np.arange(6, dtype=np.float64)
try:
    k(np.empty_like(a), numpy.ma.array(a), a)
except NumbaTypeError as e:     # Numba types the arguments of an unmatched call
    print("refused" if "MaskedArray" in str(e) else e)
"""


def test_masked_arrays_are_still_refused():
    # in a process of its own: in a long test run every kernel of cpu.py may already have overloads
    assert _run(_MASKED).strip() == "refused"
