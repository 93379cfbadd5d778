"""python -m codegen [--check] [--registry PATH] [--out DIR]

Regenerates reftorch/kernels/ and docs/ops.md from reftorch/ops.yaml; with --check, writes nothing
and exits 1 naming every stale file.
"""
from __future__ import annotations

import argparse
import os
import sys

from .generate import generate
from .model import RegistryError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m codegen", description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="fail if generated files are stale; write nothing")
    p.add_argument("--registry", default=os.path.join(ROOT, "reftorch", "ops.yaml"))
    p.add_argument("--out", default=ROOT, help="root under which reftorch/kernels and docs are written")
    args = p.parse_args(argv)
    try:
        files = generate(args.registry)
    except RegistryError as err:
        print(f"codegen: {err}", file=sys.stderr)
        return 2
    stale = []
    for rel, text in files.items():
        path = os.path.join(args.out, rel)
        old = open(path).read() if os.path.exists(path) else None
        if old != text:
            stale.append(rel)
            if not args.check:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
    if args.check:
        if stale:
            for rel in stale:
                print(f"codegen: {rel} is stale; run `python -m codegen`", file=sys.stderr)
            return 1
        print(f"codegen: {len(files)} generated files are up to date")
        return 0
    print(f"codegen: wrote {len(stale)} of {len(files)} files" + (": " + ", ".join(stale) if stale else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
