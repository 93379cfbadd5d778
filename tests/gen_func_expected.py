"""Writes tests/func_expected.json: the cases of tests/func_cases.py run with PyTorch (2.13, cpu).

Run from the repository root in an environment that has torch: `python tests/gen_func_expected.py`.
Not a test (CI has no torch); tests/test_func.py compares reftorch with what this wrote."""
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(__file__))
import func_cases  # noqa: E402

if __name__ == "__main__":
    warnings.simplefilter("ignore")
    out = {}
    for name, fn in func_cases.CASES.items():
        out[name] = fn(torch)
    out["_torch_version"] = torch.__version__
    with open(os.path.join(os.path.dirname(__file__), "func_expected.json"), "w") as f:
        f.write(func_cases.dumps(out))
