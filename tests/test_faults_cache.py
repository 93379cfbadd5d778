"""A damaged kernel cache repairs itself (issue 20, point 2): empty, zero-filled or truncated index and data files
(what a crash or a full disk during a cache write leaves) are removed and recompiled, with one warning each,
counted in reftorch.kernels.cache_stats(); the next process loads the rewritten entries."""
from __future__ import annotations

import glob
import json
import os
import pickle
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAM = """
import json, reftorch as torch
a = torch.arange(10.0)
print(json.dumps({"exp_sum": float(a.exp().sum()), "stats": torch.kernels.cache_stats()}))
"""
EXP_SUM = 12818.308050524603      # sum(exp(0..9)) in float64; float32 within 1e-6 relative


def run(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), PYTHONPATH=ROOT)
    env.pop("REFTORCH_NO_CACHE", None)
    r = subprocess.run([sys.executable, "-c", PROGRAM], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["exp_sum"] == pytest.approx(EXP_SUM, rel=1e-6)
    assert out["stats"]["dir"] == str(cache_dir)
    return out["stats"], r.stderr


@pytest.fixture(scope="module")
def populated(tmp_path_factory):
    cache = tmp_path_factory.mktemp("numba-cache")
    stats, _ = run(cache)
    assert stats["repaired"] == 0
    return cache


def one(cache, pattern):
    (path,) = glob.glob(os.path.join(str(cache), "**", pattern), recursive=True)
    return path


def zero_fill(path):
    size = os.path.getsize(path)
    with open(path, "wb") as f:
        f.write(b"\0" * size)


def empty(path):
    open(path, "wb").close()


def cut_short(path):
    os.truncate(path, os.path.getsize(path) // 2)


def wrong_payload(path):
    with open(path, "wb") as f:
        pickle.dump(("not", "a", "kernel"), f)


@pytest.mark.parametrize("damage", [
    {"*exp_contig*.nbi": zero_fill, "*sum_reduce*.nbi": empty, "*_rows_sum*.nbc": cut_short, "nrt-*.pickle": cut_short},
    {"*exp_contig*.nbc": zero_fill, "*sum_reduce*.nbc": wrong_payload, "*_rows_sum*.nbi": cut_short},
], ids=["indexes", "data"])
def test_a_damaged_cache_is_recompiled_and_rewritten(populated, tmp_path, damage):
    cache = tmp_path / "cache"
    shutil.copytree(populated, cache)
    for pattern, hurt in damage.items():
        hurt(one(cache, pattern))
    stats, err = run(cache)
    assert stats["repaired"] == len(damage), (stats, err)
    assert "Traceback" not in err and err.count("was damaged") == len(damage), err
    stats, err = run(cache)                       # rewritten: the next process loads them as they are
    assert stats["repaired"] == 0 and "damaged" not in err, (stats, err)
