"""Regression tests for what the second half of PyTorch's OpInfo walk (benches/opinfo.py, issue 26) found:
each expectation was read off torch 2.13 side by side, or follows from first principles as noted."""
import numpy as np
import pytest

import reftorch as torch
import reftorch.nn.functional as F

F64 = torch.float64


def test_einsum_gradient_when_the_ellipsis_broadcasts():
    # '...ik,...j->ij' on [1, 2, 3] and [3]: out[i, j] = sum_k a[0, i, k] * b[j]
    a = torch.tensor(np.arange(6.0).reshape(1, 2, 3), dtype=F64, requires_grad=True)
    b = torch.tensor([1.0, 2.0, 3.0], dtype=F64, requires_grad=True)
    out = torch.einsum("...ik,...j->ij", a, b)
    assert out.tolist() == [[3.0, 6.0, 9.0], [12.0, 24.0, 36.0]]
    ga, gb = torch.autograd.grad(out.sum(), (a, b))
    assert list(ga.shape) == [1, 2, 3] and ga.tolist() == [[[6.0] * 3] * 2]      # sum_j b[j]
    assert gb.tolist() == [15.0, 15.0, 15.0]                                     # sum of a
    # a size-1 ellipsis dim broadcast against the other's 4: the gradient is summed back to size 1
    a2 = torch.ones(1, 2, 3, dtype=F64, requires_grad=True)
    b2 = torch.ones(4, 3, dtype=F64, requires_grad=True)
    (g2,) = torch.autograd.grad(torch.einsum("...ik,...kj->...ij", a2, b2.reshape(4, 3, 1)).sum(), (a2,))
    assert list(g2.shape) == [1, 2, 3] and g2.tolist() == [[[4.0] * 3] * 2]


def test_tensordot_contracts_a_size_one_dim_against_any_size():
    a = torch.tensor([[[2.0]]], dtype=F64)                       # [1, 1, 1]
    b = torch.tensor(np.arange(4.0).reshape(2, 1, 2), dtype=F64)  # [2, 1, 2]
    out = torch.tensordot(a, b, dims=([0, 1], [2, 0]))         # b summed over its dims 2 and 0 first
    assert list(out.shape) == [1, 1] and out.tolist() == [[2.0 * 6.0]]
    with pytest.raises(RuntimeError, match=r"^contracted dimensions need to match, but first has size 2 in dim 0 "
                                           r"and second has size 3 in dim 0$"):
        torch.tensordot(torch.ones(2, 1), torch.ones(3, 1), dims=([0], [0]))


def test_histogramdd_edges_that_do_not_increase_count_nothing():
    x = torch.tensor([[0.0, 1.0], [0.5, -1.0], [2.0, 2.0]])
    hist, _ = torch.histogramdd(x, [torch.tensor([0.0, 1.0, 2.0]), torch.tensor([3.0, -3.0])])
    assert hist.tolist() == [[0.0], [0.0]]      # edges[0] <= y <= edges[-1] holds for no y
    hist, _ = torch.histogramdd(x, [torch.tensor([0.0, 1.0, 2.0]), torch.tensor([-3.0, 3.0])],
                                weight=torch.tensor([1.0, 2.0, 4.0]))
    assert hist.tolist() == [[3.0], [4.0]]      # the last bin keeps its right edge (x = 2)
    dens, _ = torch.histogramdd(x, [torch.tensor([0.0, 1.0, 2.0]), torch.tensor([-3.0, 3.0])], density=True)
    assert dens.reshape(-1).tolist() == pytest.approx([2 / 3 / 6, 1 / 3 / 6])   # / total, / bin widths 1 and 6


def test_searchsorted_on_empty_sequences():
    out = torch.searchsorted(torch.zeros(0, 0), torch.zeros(0, 0))
    assert list(out.shape) == [0, 0] and out.dtype == torch.int64
    out = torch.searchsorted(torch.zeros(2, 0), torch.ones(2, 3), out_int32=True)
    assert out.tolist() == [[0, 0, 0], [0, 0, 0]] and out.dtype == torch.int32


def test_narrow_and_narrow_copy_errors():
    x = torch.ones(20, 10, 5)
    for start in (torch.ones(5, dtype=torch.int32), torch.tensor(True), torch.tensor(2.0)):
        with pytest.raises(RuntimeError, match=r"^start must be an 0-dim integral Tensor\.$"):
            torch.narrow(x, 1, start, 2)
    assert list(torch.narrow(x, 0, torch.tensor(2), 1).shape) == [1, 10, 5]
    with pytest.raises(RuntimeError, match=r"^Expected dim < static_cast<int64_t>\(self_sizes.size\(\)\) to be true"):
        torch.narrow_copy(x, 3, 0, 0)
    with pytest.raises(RuntimeError, match=r"^start \(0\) \+ length \(-1\) exceeds dimension size \(10\)\.$"):
        torch.narrow_copy(torch.ones(10), 0, 0, -1)
    assert torch.narrow_copy(torch.arange(5), 0, -3, 2).tolist() == [2, 3]


def test_ormqr_shape_checks():
    z = torch.zeros
    for args, message in [
            ((torch.tensor(1.0), torch.tensor(1.0), torch.tensor(1.0)), r"input must have at least 2 dimensions\.$"),
            ((z(5, 3), z(3), z(5)), r"other must have at least 2 dimensions\.$"),
            ((z(5, 3), z(2), z(5, 4)), r"tau.shape\[-1\] must be equal to min\(other.shape\[-2\], input.shape\[-1\]\)$"),
            ((z(5, 3), z(3), z(4, 5)), r"other.shape\[-2\] must be equal to input.shape\[-2\]$"),
            ((z(2, 5, 3), z(3), z(2, 5, 4)), r"Expected tau to have one dimension less than input, but got tau.ndim "
                                            r"equal to 1 and input.ndim is equal to 3$")]:
        with pytest.raises(RuntimeError, match=r"^torch.ormqr: " + message):
            torch.ormqr(*args)
    # tau of zeros: every reflector is the identity, so Q @ other is other
    other = torch.tensor(np.arange(12.0).reshape(4, 3))
    assert torch.ormqr(torch.ones(4, 3, dtype=torch.float32), z(3), other.float()).tolist() == other.tolist()


def test_roll_errors():
    with pytest.raises(RuntimeError, match=r"^`shifts` required$"):
        torch.roll(torch.ones(5), [])
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-1, 0\], but got 2\)$"):
        torch.roll(torch.ones(5), 0, 2)
    with pytest.raises(IndexError, match=r"^Dimension specified as 0 but tensor has no dimensions$"):
        torch.roll(torch.tensor(1.0), 0, 0)
    assert torch.roll(torch.arange(4), 1, -1).tolist() == [3, 0, 1, 2]


def test_activation_and_embedding_argument_errors():
    with pytest.raises(RuntimeError, match=r"^Lower bound should be less than or equal to the upper bound$"):
        F.rrelu(torch.ones(5, 5), lower=0.3, upper=0.1)
    with pytest.raises(RuntimeError, match=r"^lambda must be in range \[0, 3.40282e\+38\] for input dtype Float, "
                                           r"but found -0.5$"):
        F.softshrink(torch.ones(1), lambd=-0.5)
    with pytest.raises(RuntimeError, match=r"^lambda must be in range \[0, 1.79769e\+308\] for input dtype Double"):
        F.softshrink(torch.ones(1, dtype=F64), lambd=-0.5)
    for weight in (torch.tensor(1.0), torch.ones(1, 1, 1)):
        with pytest.raises(RuntimeError, match=r"^'weight' must be 2-D$"):
            F.embedding(torch.zeros(2, 2, dtype=torch.int64), weight)


def test_as_strided_scatter_gradient_wrt_self_is_one_off_the_scattered_cells():
    # out = self with the cells size (2,), stride (4,) overwritten by src: d out / d self is 1 elsewhere, 0 there
    # (torch's as_strided_scatter_backward puts the gradient on the scattered cells instead: OpInfo marks its
    # gradcheck an expected failure)
    x = torch.zeros(3, 3, dtype=F64, requires_grad=True)
    src = torch.ones(2, dtype=F64, requires_grad=True)
    out = torch.as_strided_scatter(x, src, (2,), (4,), 0)
    g = torch.arange(9.0, dtype=F64).reshape(3, 3)
    gx, gs = torch.autograd.grad(out, (x, src), g)
    assert gx.tolist() == [[0.0, 1.0, 2.0], [3.0, 0.0, 5.0], [6.0, 7.0, 8.0]]
    assert gs.tolist() == [0.0, 4.0]


# ---------------------------------------------------------------- linalg

def test_pinv_hermitian_reads_the_lower_triangle():
    a = torch.tensor([[2.0, 5.0], [1.0, 3.0]], dtype=F64)        # taken as [[2, 1], [1, 3]], det 5
    assert np.allclose(torch.linalg.pinv(a, hermitian=True).numpy(), [[0.6, -0.2], [-0.2, 0.4]])


def test_tolerance_tensors_are_one_per_matrix():
    m = torch.stack([torch.diag(torch.tensor([1.0, 1e-3]))] * 2)
    assert torch.linalg.matrix_rank(m, rtol=torch.tensor([1e-2, 1e-4])).tolist() == [1, 2]
    assert torch.linalg.matrix_rank(m, atol=torch.tensor([0.0, 0.1])).tolist() == [2, 1]


def test_matrix_norm_reads_dim_in_order_and_empty_matrices():
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    # dim=(-1, 0): rows of the transpose; inf = the largest column sum 2 + 4, 1 = the largest row sum 3 + 4
    assert torch.linalg.matrix_norm(a, float("inf"), dim=(-1, 0)).item() == 6.0
    assert torch.linalg.matrix_norm(a, 1, dim=(1, 0)).item() == 7.0
    with pytest.raises(RuntimeError, match=r"^linalg.matrix_norm: dims must be different. Got \(0, 0\)$"):
        torch.linalg.matrix_norm(a, 1, dim=(0, -2))
    for ord in (1, 2, float("inf"), "fro", "nuc"):
        assert torch.linalg.norm(torch.zeros(0, 0), ord).item() == 0.0
    with pytest.raises(IndexError, match=r"^amin\(\): Expected reduction dim"):
        torch.linalg.norm(torch.zeros(0, 0), -1)


def test_linalg_results_that_hang_off_their_input():
    x = torch.ones(2, 2, dtype=F64, requires_grad=True)
    y = torch.linalg.matrix_power(x, 0)
    assert y.requires_grad and y.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    (g,) = torch.autograd.grad(y.sum(), x, allow_unused=True)     # the overwritten clone passes nothing back
    assert g is None or g.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    x = torch.ones(3, 2, dtype=F64, requires_grad=True)
    q = torch.linalg.householder_product(x, torch.zeros(0, dtype=F64))
    assert q.requires_grad and q.tolist() == [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    out = torch.linalg.lstsq(torch.eye(2, dtype=F64, requires_grad=True), torch.ones(2, 1, dtype=F64), driver="gelss")
    assert out.solution.requires_grad and not out.singular_values.requires_grad


def test_tensorsolve_ldl_solve_and_vander_edges():
    # dims=(1,) moves A's dim 1 last: the [2, 6, 3] identity becomes the [2, 3, 6] one
    a = torch.eye(6).reshape(2, 3, 6).permute(0, 2, 1).contiguous()
    b = torch.arange(6.0).reshape(2, 3)
    assert torch.linalg.tensorsolve(a, b, dims=(1,)).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert torch.linalg.tensorsolve(a, b, dims=[1]).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    out = torch.linalg.ldl_solve(torch.zeros(0, 0), torch.zeros(0, dtype=torch.int32), torch.zeros(0, 5))
    assert list(out.shape) == [0, 5]
    assert torch.linalg.vander(torch.tensor(2.0), N=3).tolist() == [[1.0, 2.0, 4.0]]
    with pytest.raises(RuntimeError, match=r"^N must be greater than 1\.$"):
        torch.linalg.vander(torch.tensor([2.0, 3.0]), N=1)


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("call, cls, message", [
    (lambda: torch.eye(-1), RuntimeError, "n must be greater or equal to 0, got -1"),
    (lambda: torch.eye(0, -3), RuntimeError, "m must be greater or equal to 0, got -3"),
    (lambda: F.huber_loss(torch.ones(2), torch.ones(2), delta=0), RuntimeError,
     "huber_loss does not support non-positive values for delta."),
    (lambda: torch.movedim(torch.ones(2, 3, 4, 5, 6), [0, 4, -5], [1, 0, 2]), RuntimeError,
     "movedim: repeated dim in `source` ([0, 4, -5])"),
    (lambda: torch.movedim(torch.ones(2, 3, 4, 5, 6), [3, -3], [1, 0, 4]), RuntimeError,
     "movedim: Invalid source or destination dims: source ([3, -3] dims) should contain the same number of dims as "
     "destination ([1, 0, 4] dims)"),
    (lambda: F.gaussian_nll_loss(torch.ones(10, 2, 3), torch.ones(10, 2, 3), torch.ones(10, 2, 2)), ValueError,
     "var is of incorrect size"),
    (lambda: F.gaussian_nll_loss(torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 3), reduction="abc"), ValueError,
     "abc is not valid"),
    (lambda: torch.scatter_add(torch.zeros(3, 5), 0, torch.zeros(2, 2, dtype=torch.int64), torch.ones(2, 5, 2)),
     RuntimeError, "Index tensor must have the same number of dimensions as src tensor"),
    (lambda: torch.index_add(torch.zeros(3, 2), 0, torch.tensor([0, 1]), torch.ones(2)), RuntimeError,
     "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = [3, 2] "
     "source.shape = [2]"),
    (lambda: torch.index_add(torch.zeros(3, 2), 0, torch.tensor([0, 1]), torch.ones(3, 2)), RuntimeError,
     "index_add_(): Number of indices (2) should be equal to source.size(dim): (3), for dim: 0"),
    (lambda: torch.multinomial(torch.ones(1, 2, dtype=torch.int64), 2), RuntimeError,
     "multinomial only supports floating-point dtypes for input, got: Long"),
    (lambda: torch.multinomial(torch.ones(1, 2, dtype=F64), 2, out=torch.zeros(1, 2, dtype=F64)), RuntimeError,
     "multinomial expects Long tensor out, got: Double"),
    (lambda: torch.multinomial(torch.tensor([1.0, -1.0, 1.0]), 2, replacement=True), RuntimeError,
     "invalid multinomial distribution (encountering probability entry < 0)"),
    (lambda: torch.multinomial(torch.tensor([1.0, float("inf"), 1.0]), 2, replacement=True), RuntimeError,
     "invalid multinomial distribution (encountering probability entry = infinity or NaN)"),
    (lambda: torch.multinomial(torch.tensor([1.0, float("nan"), 1.0]), 2), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
])
def test_errors_match_torch(call, cls, message):
    with pytest.raises(cls) as info:
        call()
    assert str(info.value) == message


def test_multinomial_out():
    out = torch.zeros(3, dtype=torch.int64)
    res = torch.multinomial(torch.tensor([0.0, 0.0, 1.0]), 4, True, out=out)
    assert res is out and out.tolist() == [2, 2, 2, 2]      # all the weight on category 2


# ---------------------------------------------------------------- pooling

@pytest.mark.parametrize("call, cls, message", [
    (lambda: F.max_pool1d(torch.ones(0, 1, 49), 2, 50, -1, return_indices=True), RuntimeError,
     "pad must be non-negative, but got pad: -1"),
    (lambda: F.max_pool2d(torch.ones(0, 1, 49), 2, 50, -1), RuntimeError, "pad must be non-negative, but got pad: -1"),
    (lambda: F.max_pool1d(torch.ones(0, 10), 1), RuntimeError,
     "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:[0, 10]"),
    (lambda: F.max_pool1d(torch.tensor(1.0), 1), RuntimeError,
     "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:[]"),
    (lambda: F.max_pool2d(torch.ones(1, 0, 10), 1), RuntimeError,
     "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:[1, 0, 10]"),
    (lambda: F.max_pool3d(torch.ones(2, 1, 0, 1, 2), 1), RuntimeError,
     "max_pool3d_with_indices_out_cpu_template(): Expected input's non-batch dimensions to have positive length, "
     "but input has a shape of [2, 1, 0, 1, 2] and non-batch dimension 0 has length zero!"),
    (lambda: F.max_pool1d(torch.ones(3, 3, 3), 1, stride=0), RuntimeError,
     "max_pool1d() stride must be greater than zero, but got 0"),
    (lambda: F.max_pool1d(torch.ones(3, 3, 3), 0), RuntimeError,
     "max_pool1d() kernel_size must be greater than zero, but got 0"),
    (lambda: F.max_pool1d(torch.ones(3, 3, 3), 1, 1, 0, 0), RuntimeError,
     "max_pool1d() dilation must be greater than zero, but got 0"),
    (lambda: F.max_pool1d(torch.ones(2, 2, 2), 5, 1), RuntimeError, "max_pool1d() Invalid computed output size: -2"),
    (lambda: F.max_pool2d(torch.ones(3, 3, 3), 1, stride=0), RuntimeError, "stride should not be zero"),
    (lambda: F.max_pool3d(torch.ones(3, 3, 3, 3), 1, 1, 0, 0), RuntimeError,
     "dilation should be greater than zero, but got dilationT: 0 dilationH: 0 dilationW: 0"),
    (lambda: F.adaptive_max_pool1d(torch.ones(1, 2, 3), []), RuntimeError,
     "adaptive_max_pool1d() argument 'output_size' should contain one int (got 0)"),
    (lambda: F.adaptive_max_pool2d(torch.ones(1, 2, 3, 4), []), RuntimeError,
     "adaptive_max_pool2d(): internal error: output_size.size() must be 2"),
    (lambda: F.adaptive_avg_pool3d(torch.ones(1, 2, 3, 4), []), RuntimeError, "adaptive_avg_pool3d: output_size must be 3"),
    (lambda: F.adaptive_max_pool2d(torch.ones(1, 1, 1, 1), [-1, 0]), RuntimeError,
     "Trying to create tensor with negative dimension -1: [1, 1, -1, 0]"),
    (lambda: F.adaptive_avg_pool1d(torch.ones(1, 1, 1), [-1]), RuntimeError,
     "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {1, -1}"),
    (lambda: F.adaptive_max_pool3d(torch.ones(2, 2, 2), [2, 2, 2]), ValueError, "Input dimension should be at least 4"),
    (lambda: F.adaptive_max_pool1d(torch.ones(2), [2]), RuntimeError,
     "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' (while checking arguments for "
     "adaptive_max_pool1d)"),
])
def test_pooling_errors_match_torch(call, cls, message):
    with pytest.raises(cls) as info:
        call()
    assert str(info.value) == message


def test_max_pool1d_values_unchanged_by_the_checks():
    x = torch.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]])
    assert F.max_pool1d(x, 2).tolist() == [[[3.0, 5.0]]]
    assert F.max_pool1d(x, 2, ceil_mode=True).tolist() == [[[3.0, 5.0, 4.0]]]
    out, idx = F.max_pool1d(x, 3, 1, 1, return_indices=True)
    assert out.tolist() == [[[3.0, 3.0, 5.0, 5.0, 5.0]]] and idx.tolist() == [[[1, 1, 3, 3, 3]]]


def test_hermitian_paths_refuse_non_square_matrices():
    # LAPACK's syevd aborts the process on a non-square matrix: the check must come first
    for fn in (torch.linalg.pinv, torch.linalg.matrix_rank):
        with pytest.raises(RuntimeError, match=r"^linalg.eigh: A must be batches of square matrices, but they are 3 "
                                               r"by 2 matrices$"):
            fn(torch.ones(3, 2), hermitian=True)
