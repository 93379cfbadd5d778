"""Runs tests/cuda (every generated CUDA kernel in numba's simulator, against the CPU kernels) in a
pytest process of its own: NUMBA_ENABLE_CUDASIM=1 swaps numba.cuda for the simulator process-wide,
so it cannot share this process. The child's output is shown when it fails."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_S = 1500
SHARDS = 4      # the simulator's tests in 4 processes (tests/cuda/conftest.py picks each one's share)


@pytest.mark.parametrize("shard", range(SHARDS))
def test_cuda_kernels_in_the_simulator(shard):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", REFTORCH_SIM_SHARD=f"{shard}/{SHARDS}", PYTHONPATH=os.pathsep.join(
        p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    cmd = [sys.executable, "-m", "pytest", os.path.join("tests", "cuda"), "-o", "addopts=", "-q", "-p", "no:cacheprovider",
           "-W", "ignore::RuntimeWarning"]
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"the simulator run took over {TIMEOUT_S} s:\n{(err.stdout or '')[-4000:]}")
    tail = (proc.stdout + proc.stderr)[-12000:]
    assert proc.returncode == 0, f"`{' '.join(cmd)}` failed (exit {proc.returncode}):\n{tail}"
    assert " passed" in proc.stdout[-400:], f"the simulator run ran no test:\n{tail}"
    print(proc.stdout.strip().splitlines()[-1])
