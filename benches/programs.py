"""Real, unmodified PyTorch programs run with torch and with reftorch in its place; outcomes compared.

    PYTHONPATH=$PWD python benches/programs.py --programs /work/programs [--only ID ...] [--jobs N]

Each program of the manifest (benches/programs_manifest.json) runs twice under the same interpreter
(--python, default /work/benchvenv/bin/python, which has torch): once as it is, once with
benches/torchshim first on PYTHONPATH, so that `import torch` (and every `torch.X`) resolves to
reftorch. Each run gets a fresh copy of the program's directory, with the manifest's synthesised
inputs written into it, and runs the manifest's steps in order (e.g. nanoGPT's prepare, train and
sample). The outcome of a run is its exit status, the last line of a traceback if it failed, and,
where the manifest names a metric (a regex with one group), the last number that regex matches in
the output. A program "matches" when both runs exit 0 and their metrics agree within the manifest's
rtol (the two libraries draw different random numbers, so only loose agreement is expected), or
when both fail. The table lists every program, and the summary the share of programs that finish
on torch which also finish on reftorch with the same outcome.

Nothing is downloaded. The programs directory is populated by hand from public repositories (the
search tool's stored copies; comment-only lines and docstrings may be stripped, code unchanged):
  tutorials/       pytorch/tutorials: beginner_source/{examples_tensor,examples_autograd,examples_nn,
                   basics,blitz,nlp,introyt}/*.py and recipes_source/recipes/*.py
  examples/        pytorch/examples: word_language_model/{main,model,data,generate}.py,
                   differentiable_physics/mass_spring.py,
                   time_sequence_prediction/{generate_sine_wave,train}.py, regression/main.py
  nanoGPT/         karpathy/nanoGPT: train.py, model.py, sample.py, configurator.py,
                   data/shakespeare_char/prepare.py
  makemore/        karpathy/makemore: makemore.py
Each manifest entry says which file it is (repo, path). Programs that need torchvision, torchaudio,
torchtext, downloads or a GPU are listed in the manifest with `exclude` and the reason, and not run.
Third-party packages the programs import (matplotlib, tiktoken, requests) are found through
--site (a `pip install --target` directory), the same for both runs.
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHIM = os.path.join(HERE, "torchshim")
MANIFEST = os.path.join(HERE, "programs_manifest.json")

_WORDS = ("the king queen lord lady speak thou thee hath doth night day love death sword crown "
          "heart blood fair sweet good noble brother sister father mother come go stay fly "
          "war peace honour grace tears joy sorrow heaven earth fire water air gold").split()


def _text(seed, n_lines):
    """Deterministic play-like text: speaker lines of words from a small vocabulary."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n_lines):
        speaker = rng.choice(["KING", "QUEEN", "LORD", "LADY", "FOOL"])
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 12)))
        lines.append(f"{speaker}:\n{words.capitalize()}.\n")
    return "\n".join(lines)


def _names(seed, n):
    rng = random.Random(seed)
    syll = ["an", "na", "el", "la", "ri", "so", "ma", "ja", "ke", "li", "ev", "ya", "or", "da"]
    return "\n".join("".join(rng.choice(syll) for _ in range(rng.randint(1, 4))) for _ in range(n)) + "\n"


def _write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


SYNTH = {
    # nanoGPT's data/shakespeare_char/prepare.py reads input.txt when it is there (no download)
    "shakespeare_char": lambda d: _write(os.path.join(d, "data/shakespeare_char/input.txt"), _text(0, 600)),
    "names": lambda d: _write(os.path.join(d, "names.txt"), _names(0, 800)),
    "wikitext2": lambda d: [_write(os.path.join(d, f"data/wikitext-2/{s}.txt"), _text(i, n))
                            for i, (s, n) in enumerate([("train", 300), ("valid", 40), ("test", 40)])],
}


def _env(site, reftorch):
    env = dict(os.environ)
    paths = ([SHIM, ROOT] if reftorch else []) + ([site] if site else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg",
               PYTHONHASHSEED="0", PYTHONUNBUFFERED="1")
    return env


def _error_line(text):
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b", ln) or "Error:" in ln:
            return ln.strip()[:200]
    return lines[-1].strip()[:200] if lines else ""


def _metric(entry, text):
    pattern = entry.get("metric")
    if not pattern:
        return None
    found = re.findall(pattern, text)
    return float(found[-1]) if found else None


def run_one(entry, programs, site, python, reftorch, keep):
    """Runs every step of one program in a fresh copy of its directory; returns its outcome."""
    work = tempfile.mkdtemp(prefix=f"prog-{entry['id'].replace('/', '_')}-{'ref' if reftorch else 'torch'}-")
    src = os.path.join(programs, entry["dir"])
    shutil.copytree(src, work, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    for name in entry.get("inputs", []):
        SYNTH[name](work)
    scale = 1 if not reftorch else entry.get("reftorch_timeout_scale", 4)
    out, rc, t0 = [], 0, time.time()
    try:
        for step in entry["steps"]:
            cmd = [python, step["path"]] + step.get("args", [])
            try:
                p = subprocess.run(cmd, cwd=os.path.join(work, step.get("cwd", "")), env=_env(site, reftorch),
                                   capture_output=True, text=True, timeout=entry.get("timeout", 120) * scale)
                out.append(p.stdout + p.stderr)
                rc = p.returncode
            except subprocess.TimeoutExpired as e:
                text = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
                out.append(text + "\nTIMEOUT")
                rc = "timeout"
            if rc != 0:
                break
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(out)
    return {"rc": rc, "error": "" if rc == 0 else _error_line(text), "metric": _metric(entry, text),
            "seconds": round(time.time() - t0, 1), "output": text}


def _agree(entry, a, b):
    if a["rc"] != 0 or b["rc"] != 0:
        return a["rc"] != 0 and b["rc"] != 0
    x, y = a["metric"], b["metric"]
    if entry.get("metric") is None:
        return True
    if x is None or y is None:
        return x is None and y is None
    if not (math.isfinite(x) and math.isfinite(y)):
        return (math.isfinite(x), math.isnan(x)) == (math.isfinite(y), math.isnan(y))
    return abs(x - y) <= entry.get("rtol", 0.5) * max(abs(x), abs(y)) + entry.get("atol", 1e-6)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", default="/work/programs")
    ap.add_argument("--site", default="/work/programs/site:/work/programs/site2",
                    help="pip --target directories of the programs' other imports, os.pathsep-separated")
    ap.add_argument("--python", default="/work/benchvenv/bin/python")
    ap.add_argument("--only", nargs="*", help="program ids (default: all)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--reftorch-only", action="store_true", help="skip the torch runs (uses --torch-cache)")
    ap.add_argument("--torch-cache", default=None, help="json of torch outcomes, read and written")
    ap.add_argument("--json", default=None, help="write every outcome here")
    ap.add_argument("--keep", action="store_true", help="keep the run directories")
    ap.add_argument("--verbose", "-v", action="store_true", help="print reftorch's output when it differs")
    args = ap.parse_args(argv)

    with open(MANIFEST) as f:
        manifest = json.load(f)
    entries = [e for e in manifest if not args.only or e["id"] in args.only]
    cache = {}
    if args.torch_cache and os.path.exists(args.torch_cache):
        with open(args.torch_cache) as f:
            cache = json.load(f)

    def work(entry):
        if "exclude" in entry:
            return entry, None, None
        if args.reftorch_only and entry["id"] in cache:
            t = cache[entry["id"]]
        else:
            t = run_one(entry, args.programs, args.site, args.python, False, args.keep)
        r = run_one(entry, args.programs, args.site, args.python, True, args.keep)
        return entry, t, r

    results = []
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for entry, t, r in pool.map(work, entries):
            results.append((entry, t, r))
            _print_row(entry, t, r, args.verbose)
    _summary(results)
    if args.torch_cache:
        cache.update({e["id"]: t for e, t, _ in results if t is not None})
        with open(args.torch_cache, "w") as f:
            json.dump(cache, f)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"id": e["id"], "torch": t, "reftorch": r, "exclude": e.get("exclude")}
                       for e, t, r in results], f, indent=1)


def _print_row(entry, t, r, verbose):
    if t is None:
        print(f"{entry['id']:<44} EXCLUDED  {entry['exclude']}", flush=True)
        return
    verdict = "MATCH" if _agree(entry, t, r) else "DIFFER"
    if t["rc"] != 0:
        verdict = "TORCH-FAILS"
    fmt = lambda o: f"rc={o['rc']} m={o['metric']!s:<10.10} {o['seconds']:>6}s"  # noqa: E731
    errors = r["error"][:120] if t["rc"] == 0 else f"torch: {t['error'][:90]} | reftorch: {r['error'][:90]}"
    print(f"{entry['id']:<44} {verdict:<11} torch[{fmt(t)}] reftorch[{fmt(r)}] {errors}", flush=True)
    if verbose and verdict == "DIFFER":
        print("    | " + "\n    | ".join(r["output"].strip().splitlines()[-15:]), flush=True)


def _summary(results):
    ran = [(e, t, r) for e, t, r in results if t is not None]
    on_torch = [(e, t, r) for e, t, r in ran if t["rc"] == 0]
    same = [1 for e, t, r in on_torch if _agree(e, t, r)]
    excluded = len(results) - len(ran)
    pct = 100.0 * len(same) / len(on_torch) if on_torch else 0.0
    print(f"\n{len(results)} programs: {excluded} excluded, {len(ran) - len(on_torch)} fail on torch, "
          f"{len(on_torch)} finish on torch; reftorch finishes {len(same)} of them with the same outcome "
          f"= {pct:.1f}%")


if __name__ == "__main__":
    sys.exit(main())
