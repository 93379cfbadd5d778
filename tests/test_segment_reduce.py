"""torch.segment_reduce (issue surface16): reductions over consecutive segments given by lengths or offsets, its
checks in torch 2.13's order and messages, and SegmentReduceBackward0's rules (those of torch's CPU kernel).
Expected values are worked out by hand or with NumPy over the same segments."""
import numpy as np
import pytest

import reftorch as torch

DATA = np.arange(1.0, 13.0).reshape(3, 4)
LENGTHS = [2, 0, 1]                     # rows 0-1, nothing, row 2


def _seg(reduce, **kw):
    return torch.segment_reduce(torch.tensor(DATA, dtype=torch.float32), reduce, **kw)


def _np_reduce(fn, empty):
    rows = [DATA[0:2], DATA[2:2], DATA[2:3]]
    return np.stack([fn(r, axis=0) if len(r) else np.full(4, empty) for r in rows])


@pytest.mark.parametrize("reduce, fn, empty", [
    ("sum", np.sum, 0.0), ("mean", np.mean, np.nan), ("max", np.max, -np.inf), ("amax", np.max, -np.inf),
    ("min", np.min, np.inf), ("amin", np.min, np.inf), ("prod", np.prod, 1.0)])
def test_reductions_over_lengths_and_the_same_offsets(reduce, fn, empty):
    want = _np_reduce(fn, empty)
    got = _seg(reduce, lengths=torch.tensor(LENGTHS))
    assert got.dtype == torch.float32 and got.shape == (3, 4)
    np.testing.assert_array_equal(got.numpy(), want.astype(np.float32))
    np.testing.assert_array_equal(_seg(reduce, offsets=torch.tensor([0, 2, 2, 3])).numpy(), got.numpy())


def test_initial_joins_every_segment_and_fills_empty_ones():
    L = torch.tensor(LENGTHS)
    np.testing.assert_array_equal(_seg("sum", lengths=L, initial=100).numpy()[:, 0], [106.0, 100.0, 109.0])
    np.testing.assert_array_equal(_seg("mean", lengths=L, initial=100).numpy()[:, 0], [53.0, 100.0, 109.0])
    np.testing.assert_array_equal(_seg("prod", lengths=L, initial=100).numpy()[:, 0], [500.0, 100.0, 900.0])
    np.testing.assert_array_equal(_seg("max", lengths=L, initial=100).numpy()[:, 0], [100.0, 100.0, 100.0])
    np.testing.assert_array_equal(_seg("min", lengths=L, initial=100).numpy()[:, 0], [1.0, 100.0, 9.0])
    assert _seg("sum", lengths=L, initial=torch.tensor(2.0)).numpy()[1, 0] == 2.0


def test_axis_with_lengths_per_row_of_the_leading_dims():
    lengths = torch.tensor([[1, 3], [2, 2], [4, 0]])
    got = _seg("sum", lengths=lengths, axis=1).numpy()
    want = [[1, 9], [11, 15], [42, 0]]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(_seg("sum", lengths=lengths, axis=-1).numpy(), want)
    offsets = torch.tensor([[0, 1, 4], [0, 2, 4], [0, 4, 4]])
    np.testing.assert_array_equal(_seg("sum", offsets=offsets, axis=1).numpy(), want)


def test_offsets_need_not_start_at_zero_and_unsafe_lengths_may_fall_short():
    np.testing.assert_array_equal(_seg("sum", offsets=torch.tensor([1, 2, 3])).numpy(), DATA[1:3])
    np.testing.assert_array_equal(_seg("sum", lengths=torch.tensor([1, 1]), unsafe=True).numpy(), DATA[0:2])
    assert _seg("mean", offsets=torch.tensor([0])).shape == (0, 4)


def test_nan_propagates_through_max():
    got = torch.segment_reduce(torch.tensor([1.0, float("nan"), 3.0]), "max", lengths=torch.tensor([2, 1]))
    assert np.isnan(got[0].item()) and got[1].item() == 3.0


def test_half_accumulates_in_half_as_torch_kernel_does():
    x = np.linspace(-1, 1, 50).astype(np.float16)
    got = torch.segment_reduce(torch.tensor(x), "sum", lengths=torch.tensor([50])).item()
    acc = np.float16(0)
    for v in x:                         # one rounding to float16 per step
        acc = np.float16(acc + v)
    assert got == float(acc)


@pytest.mark.parametrize("kw, exc, msg", [
    ({}, RuntimeError, r"segment_reduce\(\): Either lengths or offsets must be defined."),
    ({"indices": [0]}, RuntimeError, "indices based reduction is not supported yet"),
    ({"lengths": [2, 0, 1]}, TypeError, "argument 'lengths' must be Tensor, not list"),
    ({"lengths": [1, 1]}, RuntimeError, "Expected all rows of lengths along axis to sum to data.size"),
    ({"lengths": [1, 1], "unsafe": True, "reduce": "foo"}, RuntimeError,
     "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
    ({"lengths": [1, -1, 3]}, RuntimeError, "lengths contains negative value!"),
    ({"lengths": [1, -1, 3], "unsafe": True}, RuntimeError, "Expected segment_length >= 0 to be true"),
    ({"offsets": [0, 3, 2]}, RuntimeError, "Expected segment_length >= 0 to be true"),
    ({"lengths": [[2, 0, 1]]}, RuntimeError, "Expected axis to be the last dimension of lengths but got 0."),
    ({"lengths": [3], "axis": 2}, IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\]"),
    ({"lengths": [2.0, 1.0]}, NotImplementedError,
     "\"_segment_reduce_lengths_cpu_kernel1\" not implemented for 'Float'"),
    ({"offsets": [0.0, 3.0]}, NotImplementedError,
     "\"_segment_reduce_offsets_cpu_kernel1\" not implemented for 'Float'"),
    ({"lengths": [3], "initial": 1e300}, RuntimeError, "value cannot be converted to type float without overflow"),
    ({"lengths": [3], "initial": 1 + 1j}, RuntimeError, "value cannot be converted to type float without overflow"),
])
def test_errors(kw, exc, msg):
    kw = dict(kw)
    reduce = kw.pop("reduce", "sum")
    for k in ("lengths", "offsets", "indices"):
        if k in kw and not (k == "lengths" and msg.startswith("argument")):
            kw[k] = torch.tensor(kw[k])
    with pytest.raises(exc, match=msg):
        _seg(reduce, **kw)


def test_integer_data_is_refused():
    with pytest.raises(NotImplementedError, match="\"_segment_reduce_cpu\" not implemented for 'Long'"):
        torch.segment_reduce(torch.tensor([1, 2, 3]), "sum", lengths=torch.tensor([3]))


X = [1.0, 3.0, 3.0, 2.0, 5.0]
SEGS = [3, 0, 2]


@pytest.mark.parametrize("reduce, initial, grad, want", [
    ("sum", None, [1.0, 10.0, 100.0], [1, 1, 1, 100, 100]),
    ("mean", None, [1.0, 10.0, 100.0], [1 / 3, 1 / 3, 1 / 3, 50, 50]),
    ("max", None, [1.0, 10.0, 100.0], [0, 0.5, 0.5, 0, 100]),         # a positive gradient splits over ties
    ("max", None, [-1.0, 2.0, -3.0], [0, -1, -1, 0, -3]),             # ... a negative one does not (torch's kernel)
    ("min", None, [1.0, 10.0, 100.0], [1, 0, 0, 100, 0]),
    ("max", 3.0, [4.0, 1.0, 1.0], [0, 2, 2, 0, 1]),                   # initial ties count no share
    ("prod", 2.0, [1.0, 10.0, 100.0], [18, 6, 6, 1000, 400]),         # result / x, result 2*1*3*3 = 18
])
def test_gradients(reduce, initial, grad, want):
    x = torch.tensor(X, requires_grad=True)
    y = torch.segment_reduce(x, reduce, lengths=torch.tensor(SEGS), initial=initial)
    assert y.grad_fn.name() == "SegmentReduceBackward0"
    g, = torch.autograd.grad(y, x, torch.tensor(grad))
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-6)


def test_prod_gradient_at_zeros_and_nan_uses_the_product_of_the_others():
    x = torch.tensor([1.0, 0.0, 3.0, 0.0, 0.0], requires_grad=True)
    y = torch.segment_reduce(x, "prod", lengths=torch.tensor([3, 2]))
    assert torch.autograd.grad(y, x, torch.tensor([1.0, 10.0]))[0].tolist() == [0.0, 3.0, 0.0, 0.0, 0.0]
    x = torch.tensor([2.0, float("nan"), 1.0], requires_grad=True)
    g = torch.autograd.grad(torch.segment_reduce(x, "prod", lengths=torch.tensor([3])), x, torch.tensor([4.0]))[0]
    assert np.isnan(g[0].item()) and g[1].item() == 8.0 and np.isnan(g[2].item())


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_gradcheck_along_axis(reduce):
    rng = np.random.default_rng(0)
    d = torch.tensor(rng.standard_normal((2, 7, 3)), requires_grad=True)
    lengths = torch.tensor([[2, 1, 4], [3, 3, 1]])
    assert torch.autograd.gradcheck(lambda v: torch.segment_reduce(v, reduce, lengths=lengths, axis=1), (d,))


def test_second_derivative_is_not_implemented():
    x = torch.tensor([2.0, 2.0, 1.0], requires_grad=True)
    y = torch.segment_reduce(x, "max", lengths=torch.tensor([3]))
    g, = torch.autograd.grad(y, x, torch.tensor([4.0]), create_graph=True)
    assert g.tolist() == [2.0, 2.0, 0.0]
    with pytest.raises(NotImplementedError, match="_segment_reduce_backward"):
        torch.autograd.grad(g.sum(), x)
