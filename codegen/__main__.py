"""python -m codegen [--check] [--registry PATH] [--out DIR]

Regenerates reftorch/kernels/ and docs/ops.md from reftorch/ops.yaml; with --check, writes nothing
and exits 1 naming every stale file.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

from .generate import generate
from .model import RegistryError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(path):
    """A generated file's text; None where there is none (or something else stands there: stale too)."""
    try:
        with open(path) as f:
            return f.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _write_all(root, texts):
    """All of `texts` ({relative path: text}) or none of them: every file is first written in full next to
    its destination (same file system, so the move is a rename), and the renames run only once all are
    written. A destination that exists and is not writable fails the whole run before anything moves."""
    staged = []
    try:
        for rel, text in texts.items():
            path = os.path.join(root, rel)
            if os.path.lexists(path) and not (os.path.isfile(path) and os.access(path, os.W_OK)):
                raise PermissionError(f"{rel} is not a writable file")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            mode = os.stat(path).st_mode & 0o7777 if os.path.exists(path) else 0o666 & ~_umask()
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix="." + os.path.basename(path), suffix=".tmp")
            staged.append((tmp, path))
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.chmod(tmp, mode)
    except BaseException:
        for tmp, _ in staged:
            _remove(tmp)
        raise
    for tmp, path in staged:     # renames: each atomic, and none of them can fail on space or permissions
        os.replace(tmp, path)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _remove(path):
    try:
        os.remove(path)
    except OSError:
        pass


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
    stale = [rel for rel, text in files.items() if _read(os.path.join(args.out, rel)) != text]
    if not args.check and stale:
        try:
            _write_all(args.out, {rel: files[rel] for rel in stale})
        except OSError as err:
            print(f"codegen: {err}; no file was written", file=sys.stderr)
            return 1
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
