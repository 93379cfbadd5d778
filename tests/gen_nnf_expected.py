"""Writes tests/nnf_expected.json: the cases of tests/nnf_cases.py run with PyTorch (2.13, cpu).

Run from the repository root in an environment that has torch: `python tests/gen_nnf_expected.py`.
Not a test (CI has no torch); tests/test_nnf_functional.py compares reftorch with what this wrote."""
import os
import sys
import warnings

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import nnf_cases  # noqa: E402

if __name__ == "__main__":
    warnings.simplefilter("ignore")
    out = {}
    for name, fn in nnf_cases.CASES.items():
        out[name] = fn(torch, F)
    out["_torch_version"] = torch.__version__
    with open(os.path.join(os.path.dirname(__file__), "nnf_expected.json"), "w") as f:
        f.write(nnf_cases.dumps(out))
