"""reftorch.compile bench: the GELU-tanh chain over 4M float32 elements.

Prints compiled vs reftorch eager vs PyTorch eager (when `import torch` works in this interpreter, or
through $TORCH_PYTHON, e.g. /tmp/torchvenv/bin/python), the copy-bandwidth floor (read the input once,
write the output once: numpy.copyto), and the compile overhead: first call in this process, and the
first call of a second process that finds the generated kernel in the disk cache.

    python benches/compile.py [--n 4194304]
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def best(fn, reps=10):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts)


def gelu_chain(torch, x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


TORCH_SNIPPET = """
import math, time, torch
torch.manual_seed(0)
x = torch.randn({n})
f = lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
f(x)
ts = []
for _ in range(10):
    t = time.perf_counter(); f(x); ts.append(time.perf_counter() - t)
print(min(ts))
"""


def torch_time(n):
    try:
        import torch  # noqa: F401
        exe = sys.executable
    except ImportError:
        exe = os.environ.get("TORCH_PYTHON", "/tmp/torchvenv/bin/python")
        if not os.path.exists(exe):
            return None
    out = subprocess.run([exe, "-c", TORCH_SNIPPET.format(n=n)], capture_output=True, text=True)
    return float(out.stdout.strip()) if out.returncode == 0 else None


def first_call(n):
    """Seconds of the first compiled call (trace + codegen + Numba compile or cache load) in this process."""
    import reftorch
    x = reftorch.randn(n)
    cf = reftorch.compile(lambda x: gelu_chain(reftorch, x))
    t = time.perf_counter()
    cf(x)
    cf(x)           # the trace runs eagerly; the kernel compiles (or loads) on the first replay
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4 * 1024 * 1024)
    ap.add_argument("--first-call-only", action="store_true")
    a = ap.parse_args()
    if a.first_call_only:
        print(first_call(a.n))
        return
    import reftorch
    n = a.n
    t_first = first_call(n)
    x = reftorch.randn(n)
    cf = reftorch.compile(lambda x: gelu_chain(reftorch, x))
    cf(x)
    cf(x)
    np.testing.assert_allclose(cf(x).numpy(), gelu_chain(reftorch, x).numpy(), rtol=1e-5, atol=1e-6)
    t_comp = best(lambda: cf(x))
    t_eager = best(lambda: gelu_chain(reftorch, x), reps=5)
    src = x.numpy()
    dst = np.empty_like(src)
    t_copy = best(lambda: np.copyto(dst, src))
    t_copy_alloc = best(lambda: np.copyto(np.empty_like(src), src))
    t_torch = torch_time(n)
    second = subprocess.run([sys.executable, __file__, "--n", str(n), "--first-call-only"], capture_output=True,
                            text=True)
    t_second = float(second.stdout.strip().splitlines()[-1]) if second.returncode == 0 else float("nan")
    ms = lambda t: f"{t * 1e3:8.2f} ms" if t is not None else "     n/a"    # noqa: E731
    print(f"GELU-tanh chain, {n} float32 ({os.cpu_count()} CPUs)")
    print(f"  reftorch.compile            {ms(t_comp)}")
    print(f"  reftorch eager              {ms(t_eager)}   compiled is {t_eager / t_comp:5.2f}x faster")
    if t_torch is not None:
        print(f"  PyTorch eager               {ms(t_torch)}   compiled is {t_torch / t_comp:5.2f}x faster")
    else:
        print("  PyTorch eager                    n/a (no torch)")
    print(f"  copy floor (numpy.copyto)   {ms(t_copy)}   compiled / floor = {t_comp / t_copy:5.2f}")
    print(f"  copy floor with allocation  {ms(t_copy_alloc)}   compiled / floor = {t_comp / t_copy_alloc:5.2f}")
    print(f"  first call (this process)   {t_first:8.2f} s")
    print(f"  first call (second process, disk cache) {t_second:8.2f} s")


if __name__ == "__main__":
    main()
