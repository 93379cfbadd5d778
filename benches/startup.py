"""Where the first op's time goes in a new process: each stage timed with perf_counter (no profiler),
median over several fresh processes. Warm kernel cache unless --cold (REFTORCH_NO_CACHE=1).

    python benches/startup.py [--runs 7] [--cold]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CHILD = r"""
import sys, time
sys.path.insert(0, {root!r})
W = time.perf_counter
marks = [("start", W())]
def mark(name):
    marks.append((name, W()))
import numpy
mark("import numpy")
import reftorch as m
mark("import reftorch")
x = m.ones(10)
mark("ones(10)")
import numba
mark("import numba")
from reftorch import _dispatch
k = _dispatch._kernels()
mark("kernels module")
if {refresh}:
    from numba.core.registry import cpu_target
    cpu_target.target_context.refresh()
    mark("target context refresh")
y = x + x
mark("first add")
s = y.sum()
mark("first sum")
z = (x * x).exp()
mark("mul, exp")
import json
print(json.dumps([(n, t - marks[i][1]) for i, (n, t) in enumerate(marks[1:])] + [("total", marks[-1][1] - marks[0][1])]))
"""


def run(runs, env, refresh=False):
    code = _CHILD.format(root=ROOT, refresh=refresh)
    subprocess.run([sys.executable, "-c", code], env=env, capture_output=True)   # fill caches
    rows = []
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if r.returncode:
            sys.exit(r.stderr)
        rows.append(dict(json.loads(r.stdout.splitlines()[-1])))
    return rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--cold", action="store_true")
    p.add_argument("--refresh", action="store_true", help="time Numba's target-context refresh as a stage of its own")
    args = p.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}   # as users run it: .pyc files
    if args.cold:
        env["REFTORCH_NO_CACHE"] = "1"
    rows = run(args.runs, env, args.refresh)
    for key in rows[0]:
        vals = sorted(r[key] for r in rows)
        print(f"{key:28s} median {statistics.median(vals) * 1e3:7.1f} ms   range {vals[0] * 1e3:.1f}-{vals[-1] * 1e3:.1f}")


if __name__ == "__main__":
    main()
