"""Where the first op's time goes in a new process: each stage timed with perf_counter (no profiler),
median over several fresh processes. Warm kernel cache unless --cold (REFTORCH_NO_CACHE=1).
--eager MODE sets REFTORCH_EAGER_INIT: 0 (the default here: lazy, so that each stage stands apart), 1
(Numba's start-up on a thread) or sync (reftorch's own default: inside `import reftorch`); the stages after
`import reftorch` then time what is left.

    python benches/startup.py [--runs 7] [--cold] [--eager 0|1|sync]
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
W, T = time.perf_counter, time.process_time
marks = [("start", W(), T())]
def mark(name):
    marks.append((name, W(), T()))
import numpy
mark("import numpy")
import reftorch as m
mark("import reftorch")
x = m.ones(10)
mark("ones(10)")
import numba
mark("import numba")
from reftorch import _cpu
k = _cpu.kernels()
mark("kernels module")
from numba.core.registry import cpu_target
from numba.core.runtime import rtsys
rtsys.initialize(cpu_target.target_context)
mark("CPU context, runtime")
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
print(json.dumps([(n, (w - marks[i][1], t - marks[i][2])) for i, (n, w, t) in enumerate(marks[1:])]
                 + [("total", (marks[-1][1] - marks[0][1], marks[-1][2] - marks[0][2]))]))
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
    p.add_argument("--eager", default="0", help="REFTORCH_EAGER_INIT for the child processes (0: lazy, the stages "
                                                "below apart; 1: a thread; sync: the default, inside the import)")
    args = p.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}   # as users run it: .pyc files
    if args.cold:
        env["REFTORCH_NO_CACHE"] = "1"
    env["REFTORCH_EAGER_INIT"] = args.eager
    rows = run(args.runs, env, args.refresh)
    print(f"{os.getloadavg()[0]:.1f} load; {args.runs} fresh processes, {'cold' if args.cold else 'warm'} kernel cache"
          f", REFTORCH_EAGER_INIT={args.eager}")
    print(f"{'stage':28s} {'wall ms: median':>16s} {'range':>13s} {'CPU ms: median':>16s} {'range':>13s}")
    for key in rows[0]:
        w = sorted(r[key][0] * 1e3 for r in rows)
        c = sorted(r[key][1] * 1e3 for r in rows)
        print(f"{key:28s} {statistics.median(w):16.1f} {w[0]:6.0f}-{w[-1]:<6.0f} {statistics.median(c):16.1f} {c[0]:6.0f}-{c[-1]:<6.0f}")


if __name__ == "__main__":
    main()
