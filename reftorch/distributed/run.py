"""python -m reftorch.distributed.run -n 2 script.py [args]: run a script on N processes with MPI.

It runs `mpiexec -n N python -m mpi4py script.py [args]` with the mpiexec of this Python's own
environment (the `mpich` wheel installs it next to python), so that:
- each process gets NUMBA_NUM_THREADS and OMP_NUM_THREADS = cores // N (at least 1), set before
  Numba is imported (N processes each with all the cores' threads run far slower than one), unless
  the variable is already set;
- an exception on one rank aborts the whole job (mpi4py's runner calls MPI_Abort) instead of
  leaving the others waiting in a collective forever.

    python -m reftorch.distributed.run -n 2 -m reftorch.demo --distributed
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys


def find_mpiexec():
    """The mpiexec next to sys.executable (the venv's own), else the first on PATH; None if there is none."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    return shutil.which("mpiexec")


def cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:              # not Linux
        return os.cpu_count() or 1


def build_command(nproc, target, args, module=False, mpiexec=None, extra=()):
    """(argv, environment) of the mpiexec command that runs target on nproc processes."""
    mpiexec = mpiexec or find_mpiexec()
    if mpiexec is None:
        raise FileNotFoundError("mpiexec not found: pip install 'reftorch[distributed]' (mpi4py and the mpich wheel)")
    env = dict(os.environ)
    threads = str(max(1, cpu_count() // nproc))
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS"):
        env.setdefault(var, threads)
    argv = [mpiexec, "-n", str(nproc), *extra, sys.executable, "-m", "mpi4py"]
    argv += ["-m", target] if module else [target]
    return argv + list(args), env


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m reftorch.distributed.run",
                                description="run a script on N processes with MPI (mpiexec -n N python -m mpi4py)")
    p.add_argument("-n", "--nproc", "--nproc-per-node", "--nproc_per_node", dest="nproc", type=int, default=1,
                   help="number of processes (default: 1)")
    p.add_argument("-m", dest="module", action="store_true", help="run target as a module (like python -m)")
    p.add_argument("--mpiexec-args", default="", help="extra arguments for mpiexec, one string (e.g. '-hosts a,b')")
    p.add_argument("target", help="the script (or, with -m, the module) to run")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    a = p.parse_args(argv)
    if a.nproc < 1:
        p.error("-n must be at least 1")
    return a


def main(argv=None):
    a = parse_args(argv)
    try:
        cmd, env = build_command(a.nproc, a.target, a.args, module=a.module, extra=a.mpiexec_args.split())
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(cmd[0], cmd, env)        # mpiexec takes this process's place: signals and exit status go to it


if __name__ == "__main__":
    sys.exit(main())
