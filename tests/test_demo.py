"""The demo users run first (`python -m reftorch.demo`), run as they would run it: in a subprocess."""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

needs_sklearn = pytest.mark.skipif(importlib.util.find_spec("sklearn") is None,
                                   reason="the demo's dataset comes from scikit-learn (pip install 'reftorch[demo]')")


def _run(*args, timeout=300):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    return subprocess.run([sys.executable, "-m", "reftorch.demo", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


@needs_sklearn
def test_quick_demo_trains_saves_and_reloads(tmp_path):
    proc = _run("--quick", "--checkpoint-dir", str(tmp_path))
    out = proc.stdout
    assert proc.returncode == 0, f"demo failed:\n{out}\n{proc.stderr[-3000:]}"
    accuracy = {m: float(a) for m, a in re.findall(r"^(MLP|CNN) test accuracy: ([\d.]+)%", out, re.M)}
    assert set(accuracy) == {"MLP", "CNN"}, out
    assert accuracy["MLP"] >= 97.0 and accuracy["CNN"] >= 95.0, out
    reloaded = {m: float(a) for m, a in re.findall(r"^(MLP|CNN) reloaded from .*: test accuracy ([\d.]+)% "
                                                   r"\(same as before saving\)", out, re.M)}
    assert reloaded == accuracy, out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["digits_cnn.pt", "digits_mlp.pt"]
    assert "epoch" in proc.stderr         # the progress bars (tqdm, or one line per epoch without it)


@needs_sklearn
def test_demo_refuses_unavailable_device_and_missing_matplotlib(tmp_path):
    import reftorch
    cuda = getattr(reftorch, "cuda", None)
    if cuda is None or not cuda.is_available():
        proc = _run("--device", "cuda", "--checkpoint-dir", str(tmp_path), timeout=120)
        assert proc.returncode == 2 and "error: --device cuda:" in proc.stderr
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        proc = _run("--plot", str(tmp_path / "curves.png"), timeout=120)
        assert proc.returncode != 0 and "--plot needs matplotlib" in proc.stderr


@pytest.mark.parametrize("example", ["six_line_loop.py", "custom_function.py", "dynamic_net.py"])
def test_examples_run(example):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / example)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{example} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}"


@needs_sklearn
def test_distributed_demo_matches_one_process(tmp_path):
    """`--distributed` under the launcher: 2 processes, each with half of every batch, gradients averaged —
    the same training as one process on the whole batch, so the same accuracy (issue 9)."""
    pytest.importorskip("mpi4py")
    from reftorch.distributed.run import build_command
    args = ["--models", "mlp", "--epochs", "1", "--no-progress", "--checkpoint-dir"]
    one = _run(*args, str(tmp_path / "one"))
    assert one.returncode == 0, one.stdout + one.stderr[-3000:]
    cmd, env = build_command(2, "reftorch.demo", [*args, str(tmp_path / "two"), "--distributed"], module=True)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    two = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert two.returncode == 0, two.stdout + two.stderr[-3000:]
    acc = [float(re.search(r"^MLP test accuracy: ([\d.]+)%", p.stdout, re.M).group(1)) for p in (one, two)]
    assert "2 processes" in two.stdout, two.stdout
    assert abs(acc[0] - acc[1]) <= 0.3, acc
