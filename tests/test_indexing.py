"""Tensor indexing against NumPy: __getitem__, __setitem__ and index_put_, values, views, gradients, errors.

The random index combinations (hypothesis) mix ints, slices with steps, None, Ellipsis, Python bools,
integer lists / arrays / tensors and bool masks. Their reference is NumPy with PyTorch's one difference
applied: integers are taken first, as select (for x of shape [2, 3, 4], x[0, :, [0, 1]] has shape [3, 2]
in PyTorch, [2, 3] in NumPy); the remaining index then follows NumPy's rules exactly. The fixed
expectations (shapes, error messages) were read off PyTorch 2.13.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import reftorch as torch
from reftorch.autograd import gradcheck, gradgradcheck

EXAMPLES = 5 * settings.default.max_examples


# ------------------------------------------------------------------------------ random index combinations

@st.composite
def index_cases(draw):
    """(shape, items): an index for a tensor of that shape. Items are ('int', i[, form]), ('slice', s), ('none',),
    ('ellipsis',), ('bool', b), ('array', ndarray, form) and ('mask', ndarray, form)."""
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.integers(0, 4)) if draw(st.integers(0, 9)) == 0 else draw(st.integers(1, 4))
                  for _ in range(ndim))
    n_used = draw(st.integers(0, ndim))
    ellipsis_at = draw(st.one_of(st.none(), st.integers(0, n_used)))
    lead = n_used if ellipsis_at is None else ellipsis_at
    dims = list(range(lead)) + list(range(ndim - (n_used - lead), ndim))     # self dims the items consume
    bshape = draw(st.sampled_from([(2,), (3,), (1,), (2, 1), (0,), ()]))     # shape all index arrays broadcast to
    items, i = [], 0
    while i < len(dims):
        if i == lead and ellipsis_at is not None:
            items.append(("ellipsis",))
        if draw(st.integers(0, 5)) == 0:
            items.append(("none",))
        if draw(st.integers(0, 12)) == 0:
            items.append(("bool", draw(st.booleans())))
        size = shape[dims[i]]
        kind = draw(st.sampled_from(["int", "int", "slice", "slice", "slice", "array", "array", "mask"]))
        if kind == "mask" and i + 1 < len(dims) and dims[i + 1] == dims[i] + 1 and draw(st.booleans()):
            mshape = (size, shape[dims[i + 1]])
        else:
            mshape = (size,)
        if kind == "int" and size:
            items.append(("int", draw(st.integers(-size, size - 1))))
        elif kind == "array" and (size or 0 in bshape):
            sub = bshape[draw(st.integers(0, len(bshape))):]
            sub = tuple(1 if draw(st.integers(0, 3)) == 0 else s for s in sub) if size else bshape
            values = draw(st.lists(st.integers(-size, size - 1), min_size=int(np.prod(sub)),
                                   max_size=int(np.prod(sub)))) if size else []
            form = draw(st.sampled_from(["list", "tensor", "int32", "numpy"]))
            if sub == ():                   # a 0-d integer index is an integer (PyTorch selects)
                items.append(("int", values[0], form))
            else:
                items.append(("array", np.array(values, np.int64).reshape(sub), form))
        elif kind == "mask":
            bits = draw(st.lists(st.booleans(), min_size=int(np.prod(mshape)), max_size=int(np.prod(mshape))))
            items.append(("mask", np.array(bits, bool).reshape(mshape), draw(st.sampled_from(["tensor", "list"]))))
            i += len(mshape)
            continue
        else:
            start = draw(st.one_of(st.none(), st.integers(-size - 2, size + 2)))
            stop = draw(st.one_of(st.none(), st.integers(-size - 2, size + 2)))
            items.append(("slice", slice(start, stop, draw(st.sampled_from([None, 1, 2, 3])))))
        i += 1
    if ellipsis_at is not None and ellipsis_at == len(dims):
        items.append(("ellipsis",))
    if draw(st.integers(0, 5)) == 0:
        items.append(("none",))
    return shape, items


def _advanced_count(items):
    return sum(1 for it in items if it[0] in ("array", "mask", "bool"))


def to_torch_index(items):
    out = []
    for it in items:
        kind = it[0]
        if kind == "int" and len(it) == 3:
            out.append({"list": it[1], "tensor": torch.tensor(it[1]), "int32": torch.tensor(it[1], dtype=torch.int32),
                        "numpy": np.array(it[1])}[it[2]])
        elif kind in ("int", "slice", "bool"):
            out.append(it[1])
        elif kind == "none":
            out.append(None)
        elif kind == "ellipsis":
            out.append(Ellipsis)
        elif kind == "array":
            a, form = it[1], it[2]
            out.append({"list": lambda: a.tolist(), "tensor": lambda: torch.tensor(a),
                        "int32": lambda: torch.tensor(a, dtype=torch.int32), "numpy": lambda: a}[form]())
        else:
            out.append(torch.tensor(it[1]) if it[2] == "tensor" else it[1].tolist())
    if len(out) == 1 and not isinstance(out[0], list):
        return out[0]
    return tuple(out)


def numpy_reference(a, items):
    """a[index] with PyTorch's semantics, from NumPy: ints first (as basic indexing), then the rest."""
    first = []
    for it in items:
        if it[0] == "int":
            first.append(it[1])
        elif it[0] in ("slice", "array"):
            first.append(slice(None))
        elif it[0] == "mask":
            first += [slice(None)] * it[1].ndim
        elif it[0] == "ellipsis":
            first.append(Ellipsis)
    a1 = a[tuple(first)]
    rest = tuple({"slice": lambda it: it[1], "array": lambda it: it[1], "mask": lambda it: it[1],
                  "none": lambda it: None, "ellipsis": lambda it: Ellipsis, "bool": lambda it: it[1]}[it[0]](it)
                 for it in items if it[0] != "int")
    return a1[rest]


def _source(shape, layout):
    """A float64 tensor of the given shape holding 0, 1, 2, ... in row-major order, in some memory layout."""
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    if layout == "transposed" and len(shape) >= 2:
        return torch.tensor(np.ascontiguousarray(a.T)).T, a
    if layout == "strided":
        big = torch.zeros(tuple(2 * s for s in shape), dtype=torch.float64)
        view = big[tuple(slice(None, None, 2) for _ in shape)] if shape else big
        view.copy_(torch.tensor(a))
        return view, a
    return torch.tensor(a), a


@settings(max_examples=EXAMPLES)
@given(index_cases(), st.sampled_from(["contiguous", "transposed", "strided"]))
def test_getitem_matches_numpy(case, layout):
    shape, items = case
    x, a = _source(shape, layout)
    index = to_torch_index(items)
    try:
        expected = numpy_reference(a, items)
    except IndexError:                  # index arrays that do not broadcast together
        with pytest.raises(IndexError, match="shape mismatch: indexing tensors could not be broadcast together"):
            x[index]
        return
    got = x[index]
    assert tuple(got.shape) == expected.shape, f"index {index!r} on shape {shape}"
    np.testing.assert_array_equal(got.numpy(), expected)
    if not any(it[0] == "int" for it in items) or not _advanced_count(items):
        direct = a[tuple(i if not isinstance(i, torch.Tensor) else i.numpy() for i in
                         (index if isinstance(index, tuple) else (index,)))]
        np.testing.assert_array_equal(got.numpy(), direct)          # where NumPy and PyTorch agree
    if not _advanced_count(items):
        assert got._storage is x._storage, "basic indexing must return a view"


@settings(max_examples=EXAMPLES)
@given(index_cases(), st.integers(0, 2**31 - 1))
def test_getitem_gradient_adds_up_at_the_indexed_positions(case, seed):
    shape, items = case
    n = int(np.prod(shape))
    positions = _positions(shape, items)
    w = np.random.default_rng(seed).standard_normal(positions.shape)
    x = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    (x[to_torch_index(items)] * torch.tensor(w)).sum().backward()
    expected = np.bincount(positions.reshape(-1), w.reshape(-1), minlength=n).reshape(shape)
    np.testing.assert_allclose(x.grad.numpy(), expected, atol=1e-12)


def _positions(shape, items):
    """Which element of a tensor of this shape each element of x[index] is (the cases whose index arrays
    broadcast together: the others are test_getitem_matches_numpy's)."""
    try:
        return numpy_reference(np.arange(int(np.prod(shape))).reshape(shape), items)
    except IndexError:
        assume(False)


def _value_for(target_shape, draw_kind, rng):
    """A scalar, or a tensor broadcastable to target_shape (dims dropped or set to 1, maybe a leading 1)."""
    if draw_kind == 0:
        return 7.5, np.float64(7.5)
    shape = list(target_shape)[rng.integers(0, len(target_shape) + 1):]
    shape = [1 if rng.integers(0, 3) == 0 else s for s in shape]
    if draw_kind == 2:
        shape = [1] + shape
    v = rng.standard_normal(shape)
    return torch.tensor(v), v


@settings(max_examples=EXAMPLES)
@given(index_cases(), st.integers(0, 2), st.integers(0, 2**31 - 1))
def test_setitem_matches_numpy(case, value_kind, seed):
    shape, items = case
    rng = np.random.default_rng(seed)
    positions = _positions(shape, items)
    value, v = _value_for(positions.shape, value_kind, rng)
    a = rng.standard_normal(shape)
    x = torch.tensor(a)
    x[to_torch_index(items)] = value
    expected, once = _written(a, positions, v)
    got = x.numpy()
    np.testing.assert_array_equal(got.reshape(-1)[once], expected.reshape(-1)[once])

    # the same write recorded by autograd: same values; gradients go to the value, not to what it replaced
    leaf = torch.tensor(a, requires_grad=True)
    y = leaf * 1.0
    vt = value
    if isinstance(value, torch.Tensor):
        vt = torch.tensor(v, requires_grad=True)
    y[to_torch_index(items)] = vt
    np.testing.assert_array_equal(y.detach().numpy().reshape(-1)[once], expected.reshape(-1)[once])
    w = rng.standard_normal(shape)
    (y * torch.tensor(w)).sum().backward()
    g = w.copy().reshape(-1)
    g[positions.reshape(-1)] = 0
    np.testing.assert_allclose(leaf.grad.numpy().reshape(-1), g, atol=1e-12)
    if isinstance(vt, torch.Tensor):
        full = w.reshape(-1)[positions]                 # each value element gets the gradient of its slots
        want = _sum_to(full, np.shape(v))
        np.testing.assert_allclose(vt.grad.numpy(), want, atol=1e-12)


def _written(a, positions, v):
    """a with v written at positions, and the positions written at most once (where the result is certain)."""
    out = a.copy().reshape(-1)
    vb = np.broadcast_to(np.asarray(v).reshape(np.shape(v)[1:] if np.ndim(v) > positions.ndim else np.shape(v)),
                         positions.shape)
    out[positions.reshape(-1)] = vb.reshape(-1)
    counts = np.bincount(positions.reshape(-1), minlength=a.size)
    return out.reshape(a.shape), counts <= 1


def _sum_to(g, shape):
    shape = tuple(shape)
    while len(shape) > g.ndim:                 # a leading 1 of the value, stripped before broadcasting
        g = g[None]
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead))) if lead else g
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


# ------------------------------------------------------------------------------ PyTorch's result shapes

SHAPES = [
    ((3, 4), lambda x: x[:, [0, 2]], (3, 2)),
    ((3, 4), lambda x: x[[]], (0, 4)),
    ((3, 4), lambda x: x[[True, False, True]], (2, 4)),
    ((3, 4), lambda x: x[np.array([[0, 1], [1, 0]])], (2, 2, 4)),
    ((3, 4), lambda x: x[[[0, 1], [1, 0]]], (2,)),                  # a list of lists is a tuple of indices
    ((3, 4), lambda x: x[[torch.tensor(0), 1]], ()),
    ((3, 4), lambda x: x[torch.tensor(1)], (4,)),                   # a 0-d integer tensor selects
    ((3, 4), lambda x: x[torch.tensor(True)], (1, 3, 4)),
    ((3, 4), lambda x: x[..., ...], (3, 4)),
    ((2, 3, 4, 5), lambda x: x[0, :, [0, 1]], (3, 2, 5)),           # NumPy would give (2, 3, 5)
    ((2, 3, 4, 5), lambda x: x[:, [0, 1], :, 0], (2, 2, 4)),        # NumPy would give (2, 2, 4) too
    ((2, 3, 4, 5), lambda x: x[[0, 1], :, [0, 1]], (2, 3, 5)),      # separated: index dims first
    ((2, 3, 4, 5), lambda x: x[:, [0, 1], [0, 1]], (2, 2, 5)),      # adjacent: in place
    ((2, 3, 4, 5), lambda x: x[None, ..., None, 0], (1, 2, 3, 4, 1)),
    ((2, 3, 4, 5), lambda x: x[True, 0, [0, 1]], (2, 4, 5)),
    ((2, 3, 4, 5), lambda x: x[False], (0, 2, 3, 4, 5)),
    ((2, 3, 4, 5), lambda x: x[0, True], (1, 3, 4, 5)),
    ((), lambda x: x[None], (1,)),
    ((), lambda x: x[...], ()),
    ((), lambda x: x[True], (1,)),
]


@pytest.mark.parametrize("shape, fn, expected", SHAPES)
def test_result_shapes_match_pytorch(shape, fn, expected):
    x = torch.zeros(shape)
    assert tuple(fn(x).shape) == expected


def test_basic_indexing_returns_views_and_advanced_indexing_copies():
    x = torch.arange(12.).reshape(3, 4)
    v = x[1:, ::2]
    assert v._storage is x._storage and v.stride() == (4, 2) and v.storage_offset() == 4
    v[0, 0] = -1.0
    assert x[1, 0].item() == -1.0
    c = x[[0, 1]]
    assert c._storage is not x._storage
    c[0, 0] = 100.0
    assert x[0, 0].item() == 0.0
    assert x[...] is not x and x[...]._storage is x._storage


# ------------------------------------------------------------------------------ errors

GET_ERRORS = [
    ((3, 4), lambda x: x[:, [5]], IndexError, "index 5 is out of bounds for dimension 0 with size 4"),
    ((3, 4), lambda x: x[[0, 1], [5, 0]], IndexError, "index 5 is out of bounds for dimension 1 with size 4"),
    ((3, 4), lambda x: x[[5]], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ((3, 4), lambda x: x[5], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ((3, 4), lambda x: x[:, 5], IndexError, "index 5 is out of bounds for dimension 1 with size 4"),
    ((3, 4), lambda x: x[0, 0, 0], IndexError, "too many indices for tensor of dimension 2"),
    ((), lambda x: x[0], IndexError, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                                     "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"),
    ((), lambda x: x[1], IndexError, "index 1 is out of bounds for dimension 0 with size 0"),
    ((), lambda x: x[:], IndexError, "slice() cannot be applied to a 0-dim tensor."),
    ((), lambda x: x[0, ], IndexError, "too many indices for tensor of dimension 0"),
    ((3, 4), lambda x: x[torch.tensor([0.5])], IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
    ((3, 4), lambda x: x[torch.tensor([1], dtype=torch.int16)], IndexError,
     "tensors used as indices must be long, int, byte or bool tensors"),
    ((3, 4), lambda x: x[torch.ones(2, 2, dtype=torch.bool)], IndexError,
     "The shape of the mask [2, 2] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0"),
    ((3, 4), lambda x: x[:, torch.ones(3, dtype=torch.bool)], IndexError,
     "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [3, 4] at index 1"),
    ((3, 4), lambda x: x[[0, 1], [0, 1, 2]], IndexError,
     "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"),
    ((3, 4), lambda x: x[1.5], IndexError, "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                                           "Variables are valid indices (got float)"),
    ((3, 4), lambda x: x[::-1], ValueError, "step must be greater than zero"),
    ((3, 4), lambda x: x[::0], ValueError, "slice step cannot be zero"),
]


@pytest.mark.parametrize("shape, fn, exc, message", GET_ERRORS, ids=[e[3][:50] for e in GET_ERRORS])
def test_getitem_errors_read_like_pytorch(shape, fn, exc, message):
    with pytest.raises(exc) as info:
        fn(torch.zeros(shape))
    assert str(info.value) == message


SET_ERRORS = [
    (0, torch.ones(3), RuntimeError, "The expanded size of the tensor (4) must match the existing size (3) at "
                                     "non-singleton dimension 0.  Target sizes: [4].  Tensor sizes: [3]"),
    (0, torch.ones(2, 4), RuntimeError, "expand(torch.FloatTensor{[2, 4]}, size=[4]): the number of sizes provided "
                                        "(1) must be greater or equal to the number of dimensions in the tensor (2)"),
    ([0, 1], torch.ones(3), RuntimeError, "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing "
                                          "result of shape [2, 4]"),
    ([0, 5], 1.0, IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (5, 1.0, IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ((0, 0, 0), 1.0, IndexError, "too many indices for tensor of dimension 2"),
    (torch.tensor([0.5]), 1, IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (torch.ones(2, 2, dtype=torch.bool), 1.0, IndexError,
     "The shape of the mask [2, 2] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0"),
    (0, [1, 2, 3, 4], TypeError, "can't assign a list to a torch.FloatTensor"),
    (0, np.ones(4), TypeError, "can't assign a numpy.ndarray to a torch.FloatTensor"),
    (0, "a", TypeError, "can't assign a str to a torch.FloatTensor"),
]


@pytest.mark.parametrize("index, value, exc, message", SET_ERRORS, ids=[e[3][:50] for e in SET_ERRORS])
def test_setitem_errors_come_before_any_write(index, value, exc, message):
    x = torch.arange(12.).reshape(3, 4)
    version = x._version
    with pytest.raises(exc) as info:
        x[index] = value
    assert str(info.value) == message
    np.testing.assert_array_equal(x.numpy(), np.arange(12.).reshape(3, 4))
    assert x._version == version


# ------------------------------------------------------------------------------ setitem semantics

def test_setitem_casts_to_the_destination_dtype_and_strips_leading_ones():
    x = torch.zeros(3, 4, dtype=torch.int64)
    x[0] = 2.7
    x[1] = torch.tensor([1.5, 2.5, -3.7, 4.0])
    x[2, :2] = torch.tensor([[[True, False]]])
    assert x.tolist() == [[2, 2, 2, 2], [1, 2, -3, 4], [1, 0, 0, 0]]
    assert x.dtype is torch.int64
    f = torch.zeros(3, 4)
    f[:, [0, 2]] = torch.tensor([[1.], [2.], [3.]], dtype=torch.float64)
    assert f.dtype is torch.float32
    assert f.tolist() == [[1, 0, 1, 0], [2, 0, 2, 0], [3, 0, 3, 0]]
    u = torch.zeros(2, dtype=torch.uint8)
    u[0] = -1
    assert u.tolist() == [255, 0]


def test_setitem_with_a_mask_and_an_overlapping_value():
    x = torch.arange(6.)
    x[x > 2] = 0.0
    assert x.tolist() == [0, 1, 2, 0, 0, 0]
    y = torch.arange(6.)
    y[1:] = y[:-1]                      # source and destination overlap: read before writing
    assert y.tolist() == [0, 0, 1, 2, 3, 4]


def test_setitem_bumps_the_version_once():
    x = torch.zeros(3, 4)
    v0 = x._version
    x[[0, 2], 1:] = 1.0
    assert x._version == v0 + 1


def test_setitem_on_leaves_that_require_grad_raises_like_pytorch():
    leaf = torch.zeros(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place"):
        leaf[[0]] = 1.0
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is being used"):
        leaf[0] = 1.0
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place"):
        leaf[...] = 1.0
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is being used"):
        leaf[0][1] = 1.0
    with torch.no_grad():
        leaf[0] = 1.0                   # allowed without recording (weight initialisation)
    assert leaf[0].tolist() == [1.0] * 4 and leaf.is_leaf


def test_setitem_on_a_non_leaf_is_an_in_place_op():
    leaf = torch.ones(3, requires_grad=True)
    y = leaf * 2
    version = y._version
    y[0] = 10.0
    assert y._version == version + 1 and y.grad_fn is not None and y.tolist() == [10.0, 2.0, 2.0]
    (y * torch.tensor([1., 2., 3.])).sum().backward()
    assert leaf.grad.tolist() == [0.0, 4.0, 6.0]


def test_setitem_makes_a_tensor_depend_on_the_value():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    x = torch.zeros(2, 3)
    x[:, 1] = w * 3
    assert x.requires_grad and not x.is_leaf
    x.sum().backward()
    assert w.grad.tolist() == [3.0, 3.0]


def test_setitem_through_a_view_of_a_non_leaf_reaches_the_base():
    leaf = torch.zeros(3, 4, dtype=torch.float64, requires_grad=True)
    v = torch.tensor([5.0, 6.0], dtype=torch.float64, requires_grad=True)
    a = leaf * 1
    row = a[1]
    row[[0, 2]] = v
    assert a[1].tolist() == [5.0, 0.0, 6.0, 0.0]
    w = torch.arange(12., dtype=torch.float64).reshape(3, 4)
    (a * w).sum().backward()
    expected = np.arange(12.).reshape(3, 4)
    expected[1, [0, 2]] = 0
    np.testing.assert_array_equal(leaf.grad.numpy(), expected)
    assert v.grad.tolist() == [4.0, 6.0]


def test_index_put_():
    x = torch.zeros(5)
    r = x.index_put_((torch.tensor([0, 0, 3]),), torch.tensor([1., 2., 3.]), accumulate=True)
    assert r is x and x.tolist() == [3.0, 0.0, 0.0, 3.0, 0.0]
    x.index_put_((torch.tensor([1, 4]),), torch.tensor(9.))
    assert x.tolist() == [3.0, 9.0, 0.0, 3.0, 9.0]
    m = torch.zeros(2, 3)
    m.index_put_((None, torch.tensor([True, False, True])), torch.tensor(1.))
    assert m.tolist() == [[1, 0, 1], [1, 0, 1]]
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match, got Float "
                                           "for the destination and Double for the source."):
        x.index_put_((torch.tensor([0]),), torch.tensor([1.], dtype=torch.float64))
    assert torch.index_put(torch.zeros(3), (torch.tensor([1, 1]),), torch.tensor(2.), True).tolist() == [0, 4, 0]


def test_index_put_accumulate_gradients():
    leaf = torch.ones(5, requires_grad=True)
    a = leaf * 2
    v = torch.tensor([1., 2., 3.], requires_grad=True)
    a.index_put_((torch.tensor([0, 0, 3]),), v, accumulate=True)
    assert a.tolist() == [5.0, 2.0, 2.0, 5.0, 2.0]
    (a * torch.arange(5.)).sum().backward()
    assert leaf.grad.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert v.grad.tolist() == [0.0, 0.0, 3.0]


def test_uint8_masks_index_with_a_deprecation_warning():
    x = torch.arange(3.)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = x[torch.tensor([1, 0, 1], dtype=torch.uint8)]
    assert r.tolist() == [0.0, 2.0]
    assert any("indexing with dtype torch.uint8 is now deprecated" in str(w.message) for w in caught)


def test_advanced_indexing_second_order():
    x = torch.arange(6., dtype=torch.float64).reshape(2, 3).requires_grad_()
    assert gradcheck(lambda t: t[[0, 1, 1], [2, 0, 0]], (x,))
    assert gradgradcheck(lambda t: t[[0, 1, 1], [2, 0, 0]] ** 2, (x,))
    mask = torch.tensor([[True, False, True], [False, True, True]])
    assert gradgradcheck(lambda t: t[mask] ** 2, (x,))
    assert gradgradcheck(lambda t: t[:, None, 1:][[1, 0]] ** 2, (x,))
    y = x[[0, 1, 1], [2, 0, 0]]
    g, = torch.autograd.grad((y ** 2).sum(), x, create_graph=True)
    assert g.tolist() == [[0.0, 0.0, 4.0], [12.0, 0.0, 0.0]]


def test_tuples_of_ints_and_slices_index_as_numpy_and_raise_as_torch():
    # the direct path for x[i, a:b, ...] (reftorch/_indexing.py _basic): values, views, errors, gradients
    a = np.arange(60.0).reshape(3, 4, 5)
    x = torch.tensor(a)
    for key in [(1,), (slice(None), 2), (slice(1, None), -1, slice(None, None, 2)), (slice(None),) * 3, (),
                (-3, slice(-2, 10), 4), (slice(5, 1),)]:
        got = x[key]
        np.testing.assert_array_equal(got.numpy(), a[key])
        assert got._storage is x._storage and got is not x
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        x[:, 4]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 3"):
        x[0, 0, 0, 0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[:, ::-1]
    w = torch.tensor(a, requires_grad=True)
    w[:, 1:3, 0].sum().backward()
    want = np.zeros_like(a)
    want[:, 1:3, 0] = 1
    np.testing.assert_array_equal(w.grad.numpy(), want)
