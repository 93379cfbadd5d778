"""The row loops of reftorch/kernels/rows.py (codegen/templates/rows.py) that softmax, log_softmax and attention
take over their last dim: NumPy's keepdims max and sum, NaN and infinities included, any dim, any layout."""
import numpy as np
import pytest

import reftorch as torch
from reftorch.kernels import rows


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("row", [9, 40])     # (rows of 40: NumPy's max, the loop's sum)
def test_amax_and_total_are_numpys_keepdims_reductions(dtype, layout, row):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6, row)).astype(dtype)
    x[0, 0, 3], x[1, 2, :] = np.nan, -np.inf
    x[2, 1, 0] = np.inf
    if layout == "transposed":
        x = x.transpose(1, 0, 2)
    for dim in (-1, 2, 1, 0):
        want_max = np.maximum.reduce(x, axis=dim, keepdims=True)
        got_max = rows.amax(x, dim)
        assert got_max.dtype == dtype and got_max.shape == want_max.shape
        np.testing.assert_array_equal(got_max, want_max)
        finite = np.where(np.isfinite(x), x, 0)
        np.testing.assert_allclose(rows.total(finite, dim), np.add.reduce(finite, axis=dim, keepdims=True),
                                   rtol=1e-6 if dtype == np.float32 else 1e-14,
                                   atol=1e-5 if dtype == np.float32 else 1e-13)     # (sums that cancel)
    nan_rows = np.isnan(rows.total(x, -1))
    np.testing.assert_array_equal(nan_rows, np.isnan(np.add.reduce(x, axis=-1, keepdims=True)))


def test_softmax_rows_with_nan_and_masked_rows_give_torchs_values():
    # torch 2.13: a row holding a NaN is all NaN; a row of -inf is all NaN (0/0); others sum to one
    x = torch.tensor([[1.0, float("nan"), 2.0], [float("-inf")] * 3, [0.0, 1.0, 2.0]])
    p = torch.softmax(x, -1).numpy()
    assert np.isnan(p[0]).all() and np.isnan(p[1]).all()
    np.testing.assert_allclose(p[2], np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum(), rtol=1e-6)
    lp = torch.log_softmax(x, -1).numpy()
    np.testing.assert_allclose(lp[2], np.log(p[2]), rtol=1e-6)
    with pytest.raises(ValueError, match="zero-size array"):     # empty rows: NumPy's own reduce, its error
        rows.amax(np.zeros((3, 0), np.float32), -1)
    assert torch.softmax(torch.zeros(3, 0), -1).shape == (3, 0)
