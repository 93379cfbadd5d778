"""PyTorch's own OpInfo samples that reftorch got wrong (issue 26, its non-nn points), each expectation checked
against torch 2.13: integer arange/linspace/logspace, Tensor.flip(dims=), Tensor.to's positional flags,
scatter with a float value on integer and bool tensors, integer baddbmm, random ops' requires_grad, gather
with an empty index, clamp_min/clamp_max on bool."""
from __future__ import annotations

import numpy as np
import pytest

import reftorch as torch

# (factory, dtype, arguments, torch 2.13's values): integer arange counts from truncated bounds (int64: in
# integers), linspace/logspace round from the first and second halves as PyTorch's kernels do
SPACED = [
    ('arange', 'int64', (0.0, -8.000001, -4.0), [0, -4]),
    ('arange', 'int64', (0.5, 7.6, 2.5), [0, 2, 4, 6]),
    ('arange', 'int64', (-1.5, 3, 1.1), [-1, 0, 1, 2]),
    ('arange', 'int64', (10, 0, -3), [10, 7, 4, 1]),
    ('arange', 'int64', (0, 100, 7), [0, 7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 77, 84, 91, 98]),
    ('linspace', 'int64', (-3, 7, 50), [-3, -2, -2, -2, -2, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6, 7]),
    ('linspace', 'int64', (0, 10, 7), [0, 1, 3, 5, 6, 8, 10]),
    ('linspace', 'int64', (-10.5, 10.5, 13), [-10, -8, -6, -5, -3, -1, 0, 1, 3, 5, 6, 8, 10]),
    ('linspace', 'int64', (3.7, -2.2, 9), [3, 2, 1, 1, 0, 0, 0, -1, -2]),
    ('linspace', 'int64', (5, 5, 1), [5]),
    ('linspace', 'int64', (-100, 100, 33), [-100, -93, -87, -81, -75, -68, -62, -56, -50, -43, -37, -31, -25, -18, -12, -6, 0, 6, 12, 18, 25, 31, 37, 43, 50, 56, 62, 68, 75, 81, 87, 93, 100]),
    ('logspace', 'int64', (0, 3, 50), [1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 19, 22, 25, 29, 33, 39, 44, 51, 59, 68, 79, 91, 104, 120, 138, 159, 184, 212, 244, 281, 323, 372, 429, 494, 568, 655, 754, 868, 1000]),
    ('logspace', 'int64', (-1, 2, 11, 2), [0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4]),
    ('logspace', 'int64', (0.5, 2.5, 9), [1, 1, 3, 5, 10, 17, 31, 56, 100]),
    ('arange', 'int32', (0.0, -8.000001, -4.0), [0, -4, -8]),
    ('arange', 'int32', (0.5, 7.6, 2.5), [0, 2, 4]),
    ('arange', 'int32', (-1.5, 3, 1.1), [-1, 0, 1, 2, 3]),
    ('arange', 'int32', (10, 0, -3), [10, 7, 4, 1]),
    ('arange', 'int32', (0, 100, 7), [0, 7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 77, 84, 91, 98]),
    ('linspace', 'int32', (-3, 7, 50), [-3, -2, -2, -2, -2, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6, 7]),
    ('linspace', 'int32', (0, 10, 7), [0, 1, 3, 5, 6, 8, 10]),
    ('linspace', 'int32', (-10.5, 10.5, 13), [-10, -8, -6, -5, -3, -1, 0, 1, 3, 5, 6, 8, 10]),
    ('linspace', 'int32', (3.7, -2.2, 9), [3, 2, 1, 1, 0, 0, 0, -1, -2]),
    ('linspace', 'int32', (5, 5, 1), [5]),
    ('linspace', 'int32', (-100, 100, 33), [-100, -93, -87, -81, -75, -68, -62, -56, -50, -43, -37, -31, -25, -18, -12, -6, 0, 6, 12, 18, 25, 31, 37, 43, 50, 56, 62, 68, 75, 81, 87, 93, 100]),
    ('logspace', 'int32', (0, 3, 50), [1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 19, 22, 25, 29, 33, 39, 44, 51, 59, 68, 79, 91, 104, 120, 138, 159, 184, 212, 244, 281, 323, 372, 429, 494, 568, 655, 754, 868, 1000]),
    ('logspace', 'int32', (-1, 2, 11, 2), [0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4]),
    ('logspace', 'int32', (0.5, 2.5, 9), [1, 1, 3, 5, 10, 17, 31, 56, 100]),
    ('arange', 'int16', (0.0, -8.000001, -4.0), [0, -4, -8]),
    ('arange', 'int16', (0.5, 7.6, 2.5), [0, 2, 4]),
    ('arange', 'int16', (-1.5, 3, 1.1), [-1, 0, 1, 2, 3]),
    ('arange', 'int16', (10, 0, -3), [10, 7, 4, 1]),
    ('arange', 'int16', (0, 100, 7), [0, 7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 77, 84, 91, 98]),
    ('linspace', 'int16', (-3, 7, 50), [-3, -2, -2, -2, -2, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6, 7]),
    ('linspace', 'int16', (0, 10, 7), [0, 1, 3, 5, 6, 8, 10]),
    ('linspace', 'int16', (-10.5, 10.5, 13), [-10, -8, -6, -5, -3, -1, 0, 1, 3, 5, 6, 8, 10]),
    ('linspace', 'int16', (3.7, -2.2, 9), [3, 2, 1, 1, 0, 0, 0, -1, -2]),
    ('linspace', 'int16', (5, 5, 1), [5]),
    ('linspace', 'int16', (-100, 100, 33), [-100, -93, -87, -81, -75, -68, -62, -56, -50, -43, -37, -31, -25, -18, -12, -6, 0, 6, 12, 18, 25, 31, 37, 43, 50, 56, 62, 68, 75, 81, 87, 93, 100]),
    ('logspace', 'int16', (0, 3, 50), [1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 19, 22, 25, 29, 33, 39, 44, 51, 59, 68, 79, 91, 104, 120, 138, 159, 184, 212, 244, 281, 323, 372, 429, 494, 568, 655, 754, 868, 1000]),
    ('logspace', 'int16', (-1, 2, 11, 2), [0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4]),
    ('logspace', 'int16', (0.5, 2.5, 9), [1, 1, 3, 5, 10, 17, 31, 56, 100]),
    ('arange', 'int8', (0.0, -8.000001, -4.0), [0, -4, -8]),
    ('arange', 'int8', (0.5, 7.6, 2.5), [0, 2, 4]),
    ('arange', 'int8', (-1.5, 3, 1.1), [-1, 0, 1, 2, 3]),
    ('arange', 'int8', (10, 0, -3), [10, 7, 4, 1]),
    ('arange', 'int8', (0, 100, 7), [0, 7, 14, 21, 28, 35, 42, 49, 56, 63, 70, 77, 84, 91, 98]),
    ('linspace', 'int8', (-3, 7, 50), [-3, -2, -2, -2, -2, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 6, 6, 6, 6, 7]),
    ('linspace', 'int8', (0, 10, 7), [0, 1, 3, 5, 6, 8, 10]),
    ('linspace', 'int8', (-10.5, 10.5, 13), [-10, -8, -6, -5, -3, -1, 0, 1, 3, 5, 6, 8, 10]),
    ('linspace', 'int8', (3.7, -2.2, 9), [3, 2, 1, 1, 0, 0, 0, -1, -2]),
    ('linspace', 'int8', (5, 5, 1), [5]),
    ('linspace', 'int8', (-100, 100, 33), [-100, -93, -87, -81, -75, -68, -62, -56, -50, -43, -37, -31, -25, -18, -12, -6, 0, 6, 12, 18, 25, 31, 37, 43, 50, 56, 62, 68, 75, 81, 87, 93, 100]),
    ('logspace', 'int8', (0, 3, 50), [1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 19, 22, 25, 29, 33, 39, 44, 51, 59, 68, 79, 91, 104, 120, -118, -97, -72, -44, -12, 25, 67, 116, -83, -18, 56, -113, -14, 100, -24]),
    ('logspace', 'int8', (-1, 2, 11, 2), [0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4]),
    ('logspace', 'int8', (0.5, 2.5, 9), [1, 1, 3, 5, 10, 17, 31, 56, 100]),
]


@pytest.mark.parametrize("fn, dtype, args, expected", SPACED)
def test_integer_ranges_as_pytorch(fn, dtype, args, expected):
    got = getattr(torch, fn)(*args, dtype=getattr(torch, dtype))
    assert got.dtype is getattr(torch, dtype) and got.tolist() == expected


def test_range_tensor_overloads_and_a_zero_integer_step():
    ref = torch.linspace(-3, 7, 50, dtype=torch.int64).tolist()
    assert torch.linspace(torch.tensor(-3), torch.tensor(7), 50, dtype=torch.int64).tolist() == ref
    with pytest.raises(ValueError, match="^step must be nonzero$"):
        torch.arange(5, -5, -0.5, dtype=torch.int64)          # the step truncates to 0
    assert torch.arange(5, -5, -0.5, dtype=torch.int32).tolist() == [5] * 20


def test_flip_takes_dims_by_keyword():
    x = torch.arange(4).reshape(2, 2)
    assert x.flip(dims=(0,)).tolist() == [[2, 3], [0, 1]]
    assert x.flip(dims=[0, 1]).tolist() == [[3, 2], [1, 0]] == x.flip(0, 1).tolist()


def test_to_reads_positional_non_blocking_and_copy():
    x = torch.ones(2)
    assert x.to("cpu", torch.float64, True, True).dtype is torch.float64
    assert x.to(torch.float64, True, True).dtype is torch.float64
    assert x.to(torch.ones(1, dtype=torch.int32), True, True).dtype is torch.int32
    assert x.to(torch.float32, False, True) is not x and x.to(torch.float32, False, False) is x


def test_integer_baddbmm_truncates_beta_and_alpha():
    a = torch.arange(8).reshape(2, 2, 2)
    b = a + 1
    out = torch.baddbmm(torch.ones(2, 2, 2, dtype=torch.int64), a, b, beta=0.5, alpha=1.5)
    assert out.dtype is torch.int64 and out.tolist() == [[[3, 4], [11, 16]], [[55, 64], [79, 92]]]
    out = torch.baddbmm(torch.ones(2, 2, 2, dtype=torch.int64), a, a, beta=2.7, alpha=-1.5)
    assert out.tolist() == [[[0, -1], [-4, -9]], [[-44, -53], [-64, -77]]]


def test_gather_and_scatter_with_an_empty_index():
    x = torch.arange(5.0, requires_grad=True)
    empty = torch.empty(2, 0, dtype=torch.int64)
    out = torch.gather(x, 0, empty)
    assert out.shape == (2, 0) and out.dtype is torch.float32
    out.sum().backward()
    assert x.grad.tolist() == [0.0] * 5
    assert torch.zeros(5).scatter_add(0, empty, torch.ones(2, 3)).tolist() == [0.0] * 5
    assert torch.zeros(5).scatter(0, empty, torch.ones(2, 3)).tolist() == [0.0] * 5
    assert torch.zeros(5).scatter(0, empty, value=1.0).tolist() == [0.0] * 5


def test_random_samples_require_grad_with_zero_gradients():
    mean, std = torch.zeros(3, requires_grad=True), torch.ones(3, requires_grad=True)
    out = torch.normal(mean, std)
    assert out.requires_grad
    out.sum().backward()
    assert mean.grad.tolist() == [0.0] * 3 and std.grad.tolist() == [0.0] * 3
    assert torch.normal(mean, 2.0).requires_grad and torch.normal(1.0, std).requires_grad
    p = torch.full((3,), 0.5, requires_grad=True)
    sample = torch.bernoulli(p)
    assert sample.requires_grad and set(sample.tolist()) <= {0.0, 1.0}
    sample.sum().backward()
    assert p.grad.tolist() == [0.0] * 3
    with torch.no_grad():
        assert not torch.bernoulli(p).requires_grad
    inf = torch.normal(torch.tensor([float("inf")], requires_grad=True), torch.ones(1))
    assert inf.tolist() == [float("inf")]


def test_clamp_min_and_clamp_max_on_bool_tensors():
    b, f = torch.tensor([True, False, True]), torch.tensor([False, True, False])
    assert torch.clamp_min(b, f).tolist() == [True, True, True]
    assert torch.clamp_max(b, f).tolist() == [False, False, False]
    assert torch.clamp_min(b, torch.tensor(True)).dtype is torch.bool
    assert torch.tensor([True, False, True, True]).unfold(0, 2, 1).tolist() == [[True, False], [False, True],
                                                                             [True, True]]


def test_a_0d_value_tensor_gets_its_gradient_from_masked_fill_and_index_fill():
    w = torch.arange(6.0).reshape(2, 3)
    x = torch.arange(6.0).reshape(2, 3).requires_grad_()
    v = torch.tensor(2.5, requires_grad=True)
    m = torch.tensor([[True, False, True], [False, False, True]])
    out = x.masked_fill(m, v)
    (out * w).sum().backward()
    assert out.tolist() == [[2.5, 1.0, 2.5], [3.0, 4.0, 2.5]]
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [3.0, 4.0, 0.0]] and v.grad.item() == 7.0
    x.grad = v.grad = None
    out = x.index_fill(1, torch.tensor([0, 2, 0]), v)          # a repeated index counts once
    (out * w).sum().backward()
    assert out.tolist() == [[2.5, 1.0, 2.5], [2.5, 4.0, 2.5]]
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [0.0, 4.0, 0.0]] and v.grad.item() == 10.0
    v.grad = None
    y = torch.zeros(2, 3)
    y.masked_fill_(m, v)
    assert y.requires_grad
    y.sum().backward()
    assert v.grad.item() == 3.0
    assert torch.zeros(2, 3, dtype=torch.int64).masked_fill(m, torch.tensor(2.7)).tolist() == [[2, 0, 2], [0, 0, 2]]


def test_the_nuclear_norm():
    x = torch.arange(24.0).reshape(2, 3, 4)
    assert np.allclose(torch.norm(x, p="nuc", dim=(0, 2)).tolist(), [29.2460, 38.2535, 48.2424], atol=1e-3)
    assert x.norm(p="nuc", dim=(2, 1), keepdim=True).shape == (2, 1, 1)
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0], [0.5, -1.0]], dtype=torch.float64, requires_grad=True)
    torch.norm(a, p="nuc").backward()
    assert np.allclose(a.grad.tolist(), [[-0.0068, 0.4923], [0.6985, 0.6252], [0.7155, -0.6056]], atol=1e-4)
    b = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch.norm(t, p="nuc", dim=(2, 0), keepdim=True), (b,))


@pytest.mark.parametrize("call, msg", [
    (lambda: torch.norm(torch.arange(24.0).reshape(2, 3, 4), p="nuc"), "dim must be a 2-tuple. Got 0 1 2"),
    (lambda: torch.norm(torch.ones(2, 3), p="nuc", dim=1), "dim must be a 2-tuple. Got 1"),
    (lambda: torch.norm(torch.arange(3.0), p="nuc"), "The input tensor A must have at least 2 dimensions."),
    (lambda: torch.norm(torch.arange(4).reshape(2, 2), p="nuc"),
     "Expected a floating point or complex tensor as input. Got Long"),
    (lambda: torch.norm(torch.ones(2, 2), p="bad"), "Order bad not supported."),
])
def test_nuclear_norm_errors(call, msg):
    with pytest.raises(RuntimeError) as info:
        call()
    assert str(info.value) == "linalg.matrix_norm: " + msg


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_logaddexp_propagates_nan_past_an_infinity(dtype):
    inf, nan = float("inf"), float("nan")
    out = torch.logaddexp(torch.tensor([nan, nan, inf, -inf, 1.0, 0.0], dtype=dtype),
                          torch.tensor([inf, -inf, nan, nan, nan, -inf], dtype=dtype))
    assert [v != v for v in out.tolist()] == [True] * 5 + [False] and out.tolist()[5] == 0.0


def test_logaddexp_gradients_at_edge_values():
    inf, nan = float("inf"), float("nan")
    a = torch.tensor([0.0, inf, -inf, inf, 1.0], dtype=torch.float64, requires_grad=True)
    b = torch.tensor([0.0, 1.0, -inf, inf, -inf], dtype=torch.float64, requires_grad=True)
    torch.logaddexp(a, b).sum().backward()
    same = lambda got, want: all((g != g and w != w) or g == w for g, w in zip(got, want))  # noqa: E731
    assert same(a.grad.tolist(), [0.5, 1.0, nan, nan, 1.0]), a.grad.tolist()          # torch 2.13's values
    assert same(b.grad.tolist(), [0.5, 0.0, nan, nan, 0.0]), b.grad.tolist()


@pytest.mark.parametrize("dtype, filled", [(torch.int64, 2), (torch.bool, True), (torch.float32, 2.5)], ids=str)
def test_scatter_a_number_keeps_self_dtype(dtype, filled):
    i = torch.tensor([[0, 1], [1, 0]])
    for out in (torch.zeros(2, 2, dtype=dtype).scatter(0, i, 2.5), torch.zeros(2, 2, dtype=dtype).scatter(0, i, value=2.5)):
        assert out.dtype is dtype and out.tolist() == [[filled, filled], [filled, filled]]
    x = torch.zeros(2, 2, dtype=dtype)
    assert x.scatter_(0, i, 2.5) is x and x.tolist() == [[filled, filled], [filled, filled]]
    assert torch.zeros(2, 2, dtype=dtype).scatter(0, i[:1], 2.5, reduce="add").dtype is dtype


def test_scatter_a_tensor_of_another_dtype_is_refused_and_gradients_flow():
    with pytest.raises(RuntimeError, match=r"^scatter\(\): Expected self.dtype to be equal to src.dtype$"):
        torch.zeros(2, 2).scatter(0, torch.tensor([[0, 1]]), torch.ones(1, 2, dtype=torch.float64))
    x = torch.ones(2, 3, requires_grad=True)
    src = torch.full((1, 3), 2.0, requires_grad=True)
    out = x.scatter(0, torch.tensor([[1, 0, 1]]), src)
    (out * torch.arange(6.0).reshape(2, 3)).sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0, 2.0], [0.0, 4.0, 0.0]] and src.grad.tolist() == [[3.0, 1.0, 5.0]]
    x.grad = None
    x.scatter(0, torch.tensor([[1, 0, 1]]), 7.0).sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
