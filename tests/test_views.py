"""Views share storage: geometry (shape, strides, offset, contiguity) as PyTorch computes it, writes seen
both ways, copies only where PyTorch copies, PyTorch's errors, and gradients through every view.

The expected geometries were read off PyTorch 2.13 for x = torch.arange(24.).reshape(2, 3, 4)."""
from __future__ import annotations

import numpy as np
import pytest

import reftorch as torch
from reftorch.autograd import gradcheck, gradgradcheck


def base():
    return torch.arange(24.).reshape(2, 3, 4)


# (name, view of x, shape, strides, storage offset, is_contiguous) -- PyTorch's numbers
GEOMETRY = [
    ("view", lambda x: x.view(4, 6), (4, 6), (6, 1), 0, True),
    ("view -1", lambda x: x.view(-1, 4), (6, 4), (4, 1), 0, True),
    ("view of a size-1 slice", lambda x: x[:, 1:2].transpose(0, 1).view(2, 4), (2, 4), (12, 1), 4, False),
    ("reshape (a view)", lambda x: x.reshape(2, 12), (2, 12), (12, 1), 0, True),
    ("flatten", lambda x: x.flatten(), (24,), (1,), 0, True),
    ("flatten(1)", lambda x: x.flatten(1), (2, 12), (12, 1), 0, True),
    ("flatten(1, 1)", lambda x: x.flatten(1, 1), (2, 3, 4), (12, 4, 1), 0, True),
    ("unflatten", lambda x: x.unflatten(2, (2, 2)), (2, 3, 2, 2), (12, 4, 2, 1), 0, True),
    ("unflatten -1", lambda x: x.unflatten(2, (-1, 2)), (2, 3, 2, 2), (12, 4, 2, 1), 0, True),
    ("unflatten transposed", lambda x: x.transpose(0, 2).unflatten(0, (2, 2)), (2, 2, 3, 2), (2, 1, 4, 12), 0,
     False),
    ("permute", lambda x: x.permute(2, 0, 1), (4, 2, 3), (1, 12, 4), 0, False),
    ("transpose", lambda x: x.transpose(0, 2), (4, 3, 2), (1, 4, 12), 0, False),
    ("swapaxes", lambda x: x.swapaxes(0, 1), (3, 2, 4), (4, 12, 1), 0, False),
    ("t", lambda x: x[0].t(), (4, 3), (1, 4), 0, False),
    ("t of 1-D", lambda x: x[0, 0].t(), (4,), (1,), 0, True),
    ("T", lambda x: x.T, (4, 3, 2), (1, 4, 12), 0, False),
    ("mT", lambda x: x.mT, (2, 4, 3), (12, 1, 4), 0, False),
    ("expand", lambda x: x[:, :1].expand(2, 5, 4), (2, 5, 4), (12, 0, 1), 0, False),
    ("expand new dims", lambda x: x[:, :1].expand(3, 2, 3, 4), (3, 2, 3, 4), (0, 12, 0, 1), 0, False),
    ("expand -1", lambda x: x[:, :1].expand(-1, 3, -1), (2, 3, 4), (12, 0, 1), 0, False),
    ("expand_as", lambda x: x[:1].expand_as(x), (2, 3, 4), (0, 4, 1), 0, False),
    ("squeeze", lambda x: x[:, :1].squeeze(), (2, 4), (12, 1), 0, False),
    ("squeeze dims", lambda x: x[:, :1].squeeze((0, 1)), (2, 4), (12, 1), 0, False),
    ("squeeze non-1 dim", lambda x: x.squeeze(0), (2, 3, 4), (12, 4, 1), 0, True),
    ("unsqueeze last", lambda x: x.unsqueeze(3), (2, 3, 4, 1), (12, 4, 1, 1), 0, True),
    ("unsqueeze middle", lambda x: x.unsqueeze(1), (2, 1, 3, 4), (12, 12, 4, 1), 0, True),
    ("narrow", lambda x: x.narrow(2, 1, 2), (2, 3, 2), (12, 4, 1), 1, False),
    ("narrow negative start", lambda x: x.narrow(2, -3, 2), (2, 3, 2), (12, 4, 1), 1, False),
    ("select", lambda x: x.select(1, 2), (2, 4), (12, 1), 8, False),
    ("select negative", lambda x: x.select(-1, -1), (2, 3), (12, 4), 3, False),
    ("slices with steps", lambda x: x[:, ::2, 1::3], (2, 2, 1), (12, 8, 3), 1, False),
    ("empty slice keeps PyTorch's offset", lambda x: x[5:2], (0, 3, 4), (12, 4, 1), 24, True),
    ("empty slice inside", lambda x: x[:, :, 3:1], (2, 3, 0), (12, 4, 1), 3, True),
    ("diagonal", lambda x: x[0].diagonal(), (3,), (5,), 0, False),
    ("diagonal offset", lambda x: x.diagonal(1, 1, 2), (2, 3), (12, 5), 1, False),
    ("diagonal negative, swapped dims", lambda x: x.diagonal(-1, 2, 1), (2, 3), (12, 5), 1, False),
    ("diagonal off the end", lambda x: x.diagonal(5, 1, 2), (2, 0), (12, 5), 0, True),
    ("as_strided", lambda x: x.as_strided((2, 2), (1, 2), 1), (2, 2), (1, 2), 1, False),
    ("as_strided from a view", lambda x: x[1].as_strided((2, 2), (1, 2)), (2, 2), (1, 2), 12, False),
    ("unfold", lambda x: x.unfold(2, 2, 1), (2, 3, 3, 2), (12, 4, 1, 1), 0, False),
    ("unfold step", lambda x: x.unfold(1, 2, 2), (2, 1, 4, 2), (12, 8, 1, 4), 0, False),
    ("unfold size 0", lambda x: x.unfold(1, 0, 1), (2, 4, 4, 0), (12, 4, 1, 4), 0, True),
    ("movedim", lambda x: x.movedim(0, 2), (3, 4, 2), (4, 1, 12), 0, False),
    ("moveaxis tuples", lambda x: torch.moveaxis(x, (0, 1), (2, 0)), (3, 4, 2), (4, 1, 12), 0, False),
    ("basic indexing", lambda x: x[None, 1, ..., None, 2], (1, 3, 1), (24, 4, 4), 14, False),
]


@pytest.mark.parametrize("name, fn, shape, strides, offset, contiguous", GEOMETRY, ids=[g[0] for g in GEOMETRY])
def test_geometry_matches_pytorch(name, fn, shape, strides, offset, contiguous):
    x = base()
    v = fn(x)
    assert tuple(v.shape) == shape
    assert v.stride() == strides
    assert v.storage_offset() == offset
    assert v.is_contiguous() == contiguous
    assert v._storage is x._storage, "a view must share its base's storage"
    np.testing.assert_array_equal(v.numpy(), _numpy_view(x.numpy(), v))


def _numpy_view(a, v):
    """The elements v should hold, read from a's buffer through v's geometry."""
    if v.numel() == 0:
        return np.empty(tuple(v.shape), a.dtype)
    flat = a.reshape(-1)
    idx = np.full(tuple(v.shape), v.storage_offset())
    for d, (n, st) in enumerate(zip(v.shape, v.stride())):
        idx = idx + (np.arange(n) * st).reshape((n,) + (1,) * (v.ndim - d - 1))
    return flat[idx]


MULTI = [
    ("unbind", lambda x: x.unbind(1), [((2, 4), (12, 1), 0), ((2, 4), (12, 1), 4), ((2, 4), (12, 1), 8)]),
    ("split int", lambda x: x.split(3, 2), [((2, 3, 3), (12, 4, 1), 0), ((2, 3, 1), (12, 4, 1), 3)]),
    ("split sizes", lambda x: torch.split(x, [1, 3], 2), [((2, 3, 1), (12, 4, 1), 0), ((2, 3, 3), (12, 4, 1), 1)]),
    ("chunk", lambda x: x.chunk(3, 2), [((2, 3, 2), (12, 4, 1), 0), ((2, 3, 2), (12, 4, 1), 2)]),
    ("chunk of nothing", lambda x: torch.zeros(0, 3).chunk(3), [((0, 3), (3, 1), 0)] * 3),
    ("split of nothing", lambda x: torch.zeros(0, 3).split(2), [((0, 3), (3, 1), 0)]),
    ("split larger than the dim", lambda x: x.split(5), [((2, 3, 4), (12, 4, 1), 0)]),
]


@pytest.mark.parametrize("name, fn, expected", MULTI, ids=[m[0] for m in MULTI])
def test_multi_output_views(name, fn, expected):
    x = base()
    parts = fn(x)
    assert isinstance(parts, tuple)
    assert [(tuple(p.shape), p.stride(), p.storage_offset()) for p in parts] == expected
    if x.numel() and parts[0].numel() and parts[0].ndim == 3:
        assert parts[0]._storage is x._storage


def test_iteration_unbinds_dim_0():
    x = base()
    rows = list(x)
    assert len(rows) == 2 and all(r._storage is x._storage for r in rows)
    np.testing.assert_array_equal(rows[1].numpy(), x.numpy()[1])


# ---------------------------------------------------------------------------------- writes both ways

WRITABLE = [
    lambda x: x.view(6, 4), lambda x: x.reshape(24), lambda x: x.flatten(1), lambda x: x.unflatten(1, (3, 1)),
    lambda x: x.permute(1, 2, 0), lambda x: x.transpose(0, 1), lambda x: x[1].t(), lambda x: x.mT,
    lambda x: x.unsqueeze(0), lambda x: x[:1].squeeze(0), lambda x: x.narrow(1, 1, 2), lambda x: x.select(2, 3),
    lambda x: x[:, 1::2, ::3], lambda x: x.diagonal(0, 1, 2), lambda x: x.as_strided((3, 2), (4, 7), 2),
    lambda x: x.unfold(2, 2, 2), lambda x: x.movedim(2, 0), lambda x: x.unbind(1)[2], lambda x: x.split(1, 2)[3],
    lambda x: x.chunk(2, 1)[1], lambda x: x[..., 1], lambda x: x[1, None, :, 2:],
]


@pytest.mark.parametrize("fn", WRITABLE)
def test_view_and_base_see_each_others_writes(fn):
    x = base()
    v = fn(x)
    assert v._storage is x._storage
    v.fill_(-1.0)                                  # write through the view ...
    expected = np.arange(24.).reshape(2, 3, 4)
    _numpy_fill(expected, v, -1.0)
    np.testing.assert_array_equal(x.numpy(), expected)
    x.mul_(2.0)                                    # ... and through the base
    np.testing.assert_array_equal(v.numpy(), _numpy_view(x.numpy(), v))


def _numpy_fill(a, v, value):
    flat = a.reshape(-1)
    flat[_numpy_view(np.arange(a.size), v).reshape(-1).astype(np.int64)] = value


def test_version_counter_is_shared_with_views():
    x = base()
    v = x[0]
    before = x._version
    v.add_(1.0)
    assert x._version == v._version == before + 1


# --------------------------------------------------------------------------------- copies only when needed

def test_reshape_and_flatten_copy_only_when_strides_forbid_a_view():
    x = base()
    assert x.reshape(6, 4)._storage is x._storage
    assert x.flatten()._storage is x._storage
    tr = x.transpose(0, 1)
    r = tr.reshape(-1)
    assert r._storage is not x._storage and r.is_contiguous()
    np.testing.assert_array_equal(r.numpy(), x.numpy().transpose(1, 0, 2).reshape(-1))
    f = x.transpose(0, 2).flatten(1)
    assert f._storage is not x._storage
    np.testing.assert_array_equal(f.numpy(), x.numpy().transpose(2, 1, 0).reshape(4, 6))
    assert x[:, :1].transpose(0, 1).reshape(2, 4)._storage is x._storage   # size-1 dims don't block a view


def test_contiguous_copies_only_when_needed():
    x = base()
    assert x.contiguous() is x
    assert x[:, :1].transpose(0, 1).contiguous() is not None
    tr = x.transpose(1, 2)
    c = tr.contiguous()
    assert c._storage is not x._storage and c.is_contiguous() and c.stride() == (12, 3, 1)
    np.testing.assert_array_equal(c.numpy(), tr.numpy())
    e = torch.zeros(3, 0).transpose(0, 1)
    assert e.is_contiguous() and e.contiguous() is e     # no elements: contiguous, as in PyTorch


def test_zero_dim_views():
    s = torch.tensor(3.0)
    assert tuple(s.flatten().shape) == (1,) and tuple(s.view(1, 1).shape) == (1, 1)
    assert tuple(s.unsqueeze(0).shape) == (1,) and tuple(s.squeeze(0).shape) == ()
    assert tuple(s.t().shape) == () and tuple(s.unfold(0, 1, 1).shape) == (1,)
    assert tuple(s.reshape(()).shape) == () and tuple(s[None].shape) == (1,) and s[...].item() == 3.0


# ------------------------------------------------------------------------------------------ errors

ERRORS = [
    (lambda x: x.transpose(0, 1).view(-1), RuntimeError,
     "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
     "contiguous subspaces). Use .reshape(...) instead."),
    (lambda x: x.view(5, 5), RuntimeError, "shape '[5, 5]' is invalid for input of size 24"),
    (lambda x: x.view(-1, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda x: x[:, :, :0].view(-1, 0), RuntimeError,
     "cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension size -1 can be any "
     "value and is ambiguous"),
    (lambda x: x.reshape(5, -1), RuntimeError, "shape '[5, -1]' is invalid for input of size 24"),
    (lambda x: x.flatten(2, 1), RuntimeError, "flatten() has invalid args: start_dim cannot come after end_dim"),
    (lambda x: x.unflatten(2, (3, 2)), RuntimeError,
     "unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 2 (4) in the input tensor"),
    (lambda x: x.unflatten(2, ()), RuntimeError, "unflatten: sizes must be non-empty"),
    (lambda x: x.t(), RuntimeError, "t() expects a tensor with <= 2 dimensions, but self is 3D"),
    (lambda x: x.permute(0, 0, 1), RuntimeError, "permute(): duplicate dims are not allowed."),
    (lambda x: x.expand(3, 4), RuntimeError,
     "expand(torch.FloatTensor{[2, 3, 4]}, size=[3, 4]): the number of sizes provided (2) must be greater or equal "
     "to the number of dimensions in the tensor (3)"),
    (lambda x: x.expand(2, 5, 4), RuntimeError,
     "The expanded size of the tensor (5) must match the existing size (3) at non-singleton dimension 1.  "
     "Target sizes: [2, 5, 4].  Tensor sizes: [2, 3, 4]"),
    (lambda x: x.narrow(2, 3, 2), RuntimeError, "start (3) + length (2) exceeds dimension size (4)."),
    (lambda x: x.narrow(2, 5, 0), IndexError, "start out of range (expected to be in range of [-4, 4], but got 5)"),
    (lambda x: x.narrow(2, 1, -1), RuntimeError, "narrow(): length must be non-negative."),
    (lambda x: x.select(1, 3), IndexError,
     "select(): index 3 out of range for tensor of size [2, 3, 4] at dimension 1"),
    (lambda x: x.select(3, 0), IndexError, "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    (lambda x: x[::-1], ValueError, "step must be greater than zero"),
    (lambda x: x[::0], ValueError, "slice step cannot be zero"),
    (lambda x: x.diagonal(0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical 1, 1"),
    (lambda x: x.as_strided((5, 5), (5, 1)), RuntimeError,
     "setStorage: sizes [5, 5], strides [5, 1], storage offset 0, and itemsize 4 requiring a storage size of 100 are "
     "out of bounds for storage of size 96"),
    (lambda x: x.as_strided((2, 2), (-1, 2)), RuntimeError,
     "as_strided: Negative strides are not supported at the moment, got strides: [-1, 2]"),
    (lambda x: x.as_strided((2,), (1, 2)), RuntimeError, "mismatch in length of strides and shape"),
    (lambda x: x.unfold(1, 4, 1), RuntimeError, "maximum size for tensor at dimension 1 is 3 but size is 4"),
    (lambda x: x.unfold(1, 2, 0), RuntimeError, "step is 0 but must be > 0"),
    (lambda x: x.movedim((0, 0), (2, 1)), RuntimeError, "movedim: repeated dim in `source` ([0, 0])"),
    (lambda x: x.movedim((0,), (2, 1)), RuntimeError,
     "movedim: Invalid source or destination dims: source ([0] dims) should contain the same number of dims as "
     "destination ([2, 1] dims)"),
    (lambda x: x.split([1, 2], 2), RuntimeError,
     "split_with_sizes expects split_sizes to sum exactly to 4 (input tensor's size at dimension 2), but got "
     "split_sizes=[1, 2]"),
    (lambda x: x.split([1, -1, 4], 2), RuntimeError,
     "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[1, -1, 4]"),
    (lambda x: x.split(0, 2), RuntimeError,
     "split_size can only be 0 if dimension size is 0, but got dimension size of 4"),
    (lambda x: x.split(-1, 2), RuntimeError, "split expects split_size be non-negative, but got split_size=-1"),
    (lambda x: x.chunk(0, 2), RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda x: torch.tensor(1.0).unbind(), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
]


@pytest.mark.parametrize("fn, exc, message", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors_read_like_pytorch(fn, exc, message):
    x = base()
    with pytest.raises(exc) as info:
        fn(x)
    assert str(info.value) == message


# ------------------------------------------------------------------------------------------ gradients

GRAD_CASES = {
    "view": lambda a: a.view(12, 5), "reshape (copy)": lambda a: a.transpose(0, 1).reshape(-1),
    "flatten": lambda a: a.flatten(1), "flatten (copy)": lambda a: a.transpose(0, 2).flatten(),
    "unflatten": lambda a: a.unflatten(2, (5, 1)), "permute": lambda a: a.permute(2, 0, 1),
    "transpose": lambda a: a.transpose(0, 2), "t": lambda a: a[0].t(), "T": lambda a: a.T, "mT": lambda a: a.mT,
    "expand": lambda a: a[:, :1].expand(2, 3, 6, 5), "expand_as": lambda a: a[:1].expand_as(a),
    "squeeze": lambda a: a[:, :1].squeeze(), "unsqueeze": lambda a: a.unsqueeze(1),
    "narrow": lambda a: a.narrow(2, -3, 2), "select": lambda a: a.select(1, -1), "slice": lambda a: a[:, 1::2, ::3],
    "unbind": lambda a: a.unbind(1), "split": lambda a: a.split([2, 3], 2), "chunk": lambda a: a.chunk(2, 0),
    "diagonal": lambda a: a.diagonal(1, 2, 0), "as_strided": lambda a: a.as_strided((3, 3), (2, 1), 1),
    "as_strided, overlapping": lambda a: a[1].as_strided((4, 4), (1, 1)),
    "as_strided of an expanded input": lambda a: a[0, 0].expand(3, 5).as_strided((2, 2), (0, 1)),
    "unfold": lambda a: a.unfold(2, 3, 1), "movedim": lambda a: a.movedim((0, 1), (2, 0)),
    "contiguous": lambda a: a.transpose(0, 1).contiguous(),
}


@pytest.fixture(scope="module")
def x64():
    torch.manual_seed(0)
    return torch.randn(3, 4, 5, dtype=torch.float64, requires_grad=True)


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradcheck_through_views(name, x64):
    assert gradcheck(GRAD_CASES[name], (x64,))


@pytest.mark.parametrize("name", ["select", "slice", "narrow", "diagonal", "unfold", "as_strided, overlapping",
                                  "expand"])
def test_second_order_through_views(name, x64):
    assert gradgradcheck(GRAD_CASES[name], (x64,))


def test_view_gradients_scatter_into_zeros():
    x = torch.zeros(3, 4, requires_grad=True)
    x.select(0, 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]])
    x.grad = None
    (x.unfold(1, 2, 1) * 1.0).sum().backward()             # overlapping windows add up
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 2, 2, 1]] * 3)
    x.grad = None
    x.diagonal(1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.eye(3, 4, 1))
