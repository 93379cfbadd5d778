"""nn.functional's issue-16 additions, torch.*'s nn names and issue 16/26's nn fixes, against PyTorch 2.13.

Each case of tests/nnf_cases.py runs here on reftorch and is compared with what the same case gave on PyTorch
(tests/nnf_expected.json, written by tests/gen_nnf_expected.py): values and gradients to 1e-6, and for misuse
the exception class and message."""
import json
import os
import sys
import warnings

import numpy as np
import pytest

import reftorch as torch
import reftorch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import nnf_cases  # noqa: E402

with open(os.path.join(os.path.dirname(__file__), "nnf_expected.json")) as _f:
    EXPECTED = json.load(_f)


def _same(got, want, path="value"):
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), path
        for k in want:
            _same(got[k], want[k], f"{path}[{k!r}]")
    elif isinstance(want, str) or want is None or isinstance(want, bool):
        assert got == want, f"{path}: {got!r} != {want!r}"
    elif isinstance(want, list) and any(isinstance(w, (str, dict)) or w is None for w in want):
        assert isinstance(got, list) and len(got) == len(want), f"{path}: {got!r} vs {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{path}[{i}]")
    else:
        try:
            g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
        except (ValueError, TypeError):     # ragged: compare element by element
            assert isinstance(got, list) and len(got) == len(want), path
            for i, (gi, wi) in enumerate(zip(got, want)):
                _same(gi, wi, f"{path}[{i}]")
            return
        assert g.shape == w.shape, f"{path}: shape {g.shape} != {w.shape}"
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6, equal_nan=True, err_msg=path)


@pytest.mark.parametrize("name", sorted(nnf_cases.CASES))
def test_matches_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = json.loads(nnf_cases.dumps(nnf_cases.CASES[name](torch, F)))
    _same(got, EXPECTED[name], name)


def test_fractional_max_pool_draws_its_samples():
    # without _random_samples the windows come from reftorch's generator: seeded, they repeat
    x = torch.randn(2, 3, 9, 8)
    torch.manual_seed(3)
    a = F.fractional_max_pool2d(x, 2, output_size=(4, 5), return_indices=True)
    torch.manual_seed(3)
    b = F.fractional_max_pool2d(x, 2, output_size=(4, 5), return_indices=True)
    assert torch.equal(a[0], b[0]) if hasattr(torch, "equal") else (a[0] == b[0]).all()
    assert (a[1] == b[1]).all() and a[0].shape == (2, 3, 4, 5)


def test_ctc_loss_gradcheck_through_log_softmax():
    logits = torch.randn(6, 2, 4, dtype=torch.float64, requires_grad=True)
    targets = torch.tensor([[1, 2, 2], [3, 1, 0]])

    def f(z):
        return F.ctc_loss(z.log_softmax(2), targets, (6, 5), (3, 2))
    assert torch.autograd.gradcheck(f, (logits,))


def test_grid_sample_and_embedding_bag_gradcheck():
    x = torch.randn(1, 2, 3, 4, dtype=torch.float64, requires_grad=True)
    grid = (torch.rand(1, 2, 3, 2, dtype=torch.float64) * 1.6 - 0.8).requires_grad_(True)
    for mode in ("bilinear", "bicubic"):
        assert torch.autograd.gradcheck(lambda a, g: F.grid_sample(a, g, mode=mode, align_corners=False), (x, grid))
    w = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    idx, off = torch.tensor([0, 2, 5, 2, 1]), torch.tensor([0, 2])
    for mode in ("sum", "mean", "max"):
        assert torch.autograd.gradcheck(lambda a: F.embedding_bag(idx, a, off, mode=mode), (w,))
