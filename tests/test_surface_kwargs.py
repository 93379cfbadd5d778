"""Keyword forms every op gets from its signature (issue 16 point 4): `axis=` as dim's alias, `out=` with PyTorch's
autograd, dtype and resize rules, and `dtype=` honoured by reductions and scans (issue 20 point 5).

Every expectation below was checked against torch 2.13 (CPU build) by running the same code."""
import warnings

import pytest

import reftorch as torch


def values(t):
    return t.tolist(), t.dtype, tuple(t.shape)


# ------------------------------------------------------------------------------------------- dtype= on reductions

def test_int8_sum_cumsum_prod_with_int8_dtype_wrap():
    x = torch.ones(1000, dtype=torch.int8)
    assert values(x.sum(dtype=torch.int8)) == (-24, torch.int8, ())
    assert values(torch.sum(x, 0, dtype=torch.int8)) == (-24, torch.int8, ())
    assert values(x.cumsum(0, dtype=torch.int8)[-1]) == (-24, torch.int8, ())
    assert values(torch.full((10,), 3, dtype=torch.int8).prod(dtype=torch.int8)) == (-87, torch.int8, ())
    assert torch.ones(3, dtype=torch.int8).cumprod(0, dtype=torch.int8).dtype == torch.int8


def test_bool_prod_with_bool_dtype():
    assert values(torch.tensor([True, False]).prod(dtype=torch.bool)) == (False, torch.bool, ())
    assert values(torch.tensor([True, True]).prod(dtype=torch.bool)) == (True, torch.bool, ())


def test_reduction_dtype_over_strided_and_partial_dims():
    x = torch.ones(4, 1000, dtype=torch.int8).permute(1, 0)
    assert values(x.sum(0, dtype=torch.int8)) == ([-24] * 4, torch.int8, (4,))
    y = torch.ones(10, 10, 10, dtype=torch.int8)[:, ::2, ::2]
    assert values(y.sum((0, 2), dtype=torch.int8)) == ([50] * 5, torch.int8, (5,))


def test_reduction_dtype_other_cases():
    x = torch.ones(1000, dtype=torch.int8)
    assert x.sum(dtype=torch.float16).dtype == torch.float16
    assert values(x.sum()) == (1000, torch.int64, ())                 # without dtype= ints still widen
    assert values(torch.ones(3).sum(dtype=torch.int64)) == (3, torch.int64, ())
    assert torch.ones(3, dtype=torch.float64).mean(dtype=torch.float32).dtype == torch.float32
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype. Optional dtype must be either a "
                                           "floating point or complex dtype. Got: Long"):
        torch.ones(3, dtype=torch.int64).mean(dtype=torch.int64)


# ------------------------------------------------------------------------------------------- axis=

def test_axis_is_an_alias_of_dim():
    x = torch.arange(6.0).reshape(2, 3)
    assert values(x.sum(axis=1)) == ([3.0, 12.0], torch.float32, (2,))
    assert values(torch.sum(x, axis=0, keepdim=True)) == ([[3.0, 5.0, 7.0]], torch.float32, (1, 3))
    assert values(x.cumsum(axis=1)) == ([[0.0, 1.0, 3.0], [3.0, 7.0, 12.0]], torch.float32, (2, 3))
    assert values(torch.argmax(x, axis=1)) == ([2, 2], torch.int64, (2,))
    assert tuple(x.unsqueeze(axis=0).shape) == (1, 2, 3)
    assert values(x.any(axis=1)) == ([True, True], torch.bool, (2,))
    assert tuple(torch.cat([x, x], axis=1).shape) == (2, 6)
    assert values(torch.gather(x, axis=1, index=torch.zeros(2, 1, dtype=torch.long))) == \
        ([[0.0], [3.0]], torch.float32, (2, 1))
    assert values(x.max(axis=1).values) == ([2.0, 5.0], torch.float32, (2,))
    assert values(torch.sort(x, axis=0, descending=True).values) == \
        ([[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]], torch.float32, (2, 3))
    assert tuple(x.softmax(axis=1).shape) == (2, 3)


def test_axis_errors():
    x = torch.ones(2, 3)
    with pytest.raises(TypeError, match="sum\\(\\) got an unexpected keyword argument 'axis'"):
        torch.sum(x, dim=1, axis=1)
    with pytest.raises(TypeError, match='cumsum\\(\\) missing 1 required positional arguments: "dim"'):
        x.cumsum()


# ------------------------------------------------------------------------------------------- out=

def test_out_is_written_and_returned():
    x = torch.arange(6.0).reshape(2, 3)
    o = torch.empty(2, 3)
    assert torch.add(x, 1, out=o) is o and values(o) == ([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], torch.float32, (2, 3))
    o = torch.empty(2)
    assert torch.sum(x, 1, out=o) is o and values(o) == ([3.0, 12.0], torch.float32, (2,))
    o = torch.empty(2, 2)
    assert torch.matmul(x, x.t(), out=o) is o and values(o) == ([[5.0, 14.0], [14.0, 50.0]], torch.float32, (2, 2))
    assert values(torch.cat([x, x], out=torch.empty(4, 3)))[2] == (4, 3)
    assert values(torch.mean(x, 1, out=torch.empty(2))) == ([1.0, 4.0], torch.float32, (2,))
    assert values(torch.clamp(x, 0, 1, out=torch.empty(2, 3)))[0] == [[0.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    y = torch.ones(3)
    assert torch.mul(y, 2, out=y) is y and y.tolist() == [2.0, 2.0, 2.0]


def test_out_keeps_strides_of_a_right_shaped_out_and_casts_within_a_category():
    x = torch.ones(2, 3)
    o = torch.empty(3, 2).t()
    torch.add(x, 1, out=o)
    assert o.stride() == (1, 2) and o.tolist() == [[2.0] * 3] * 2
    o = torch.empty(2, 3, dtype=torch.float64)
    assert torch.add(x, 1, out=o).dtype == torch.float64
    o = torch.empty(2, 3, dtype=torch.int32)
    assert torch.add(torch.ones(2, 3, dtype=torch.long), 1, out=o).dtype == torch.int32


def test_out_of_another_shape_is_resized():
    x = torch.ones(2, 3)
    o = torch.empty(3, 2)
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized since it had shape \[3, 2\], "
                                         r"which does not match the required output shape \[2, 3\]. This behavior is "
                                         r"deprecated"):
        assert torch.add(x, 1, out=o) is o
    assert tuple(o.shape) == (2, 3) and o.stride() == (3, 1) and o.tolist() == [[2.0] * 3] * 2
    o = torch.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # an empty out is resized silently
        torch.exp(torch.zeros(2, 3), out=o)
    assert values(o) == ([[1.0] * 3] * 2, torch.float32, (2, 3))


def test_out_errors():
    x = torch.ones(2, 3)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch.add(x, 1, out=torch.empty(0, dtype=torch.long))
    msg = r"add\(\): functions with out=... arguments don't support automatic differentiation, but one of the " \
          r"arguments requires grad."
    with pytest.raises(RuntimeError, match=msg):
        torch.add(torch.ones(2, requires_grad=True), 1, out=torch.empty(2))
    with pytest.raises(RuntimeError, match=msg):
        torch.add(torch.ones(2), 1, out=torch.empty(2, requires_grad=True))
    with torch.no_grad():
        assert torch.add(torch.ones(2, requires_grad=True), 1, out=torch.empty(2)).tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="unsupported operation: more than one element of the written-to tensor "
                                           "refers to a single memory location"):
        torch.add(x, 1, out=x[:, :1].expand(2, 3))
    with pytest.raises(TypeError, match="add\\(\\): argument 'out' must be Tensor, not list"):
        torch.add(x, 1, out=[torch.empty(2, 3)])


def test_out_tuple_for_several_results():
    v, i = torch.empty(0), torch.empty(0, dtype=torch.long)
    r = torch.sort(torch.tensor([3.0, 1, 2]), out=(v, i))
    assert r.values is v and r.indices is i
    assert v.tolist() == [1.0, 2.0, 3.0] and i.tolist() == [1, 2, 0]
    with pytest.raises(TypeError):
        torch.sort(torch.tensor([3.0, 1, 2]), out=v)
