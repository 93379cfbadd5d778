"""Issue 16 (branch surface-a): legacy constructors and types, creation forms, operators, the modules programs
import. Every expectation below was checked against torch 2.13 (values, dtypes, exception classes, messages)."""
from __future__ import annotations

import collections
import pickle
import re
import warnings

import numpy as np
import pytest

import reftorch as torch
from reftorch import nn


def raises(exc, msg):
    return pytest.raises(exc, match=re.escape(msg))


# ------------------------------------------------------------------------------ point 1: legacy constructors

def test_tensor_constructor_forms():
    assert torch.Tensor().shape == (0,) and torch.Tensor().dtype is torch.float32
    assert torch.Tensor(2, 3).shape == (2, 3)
    assert torch.Tensor(3).shape == (3,)
    t = torch.Tensor([1, 2])
    assert t.dtype is torch.float32 and t.tolist() == [1.0, 2.0]
    assert torch.Tensor((2, 3)).tolist() == [2.0, 3.0]                 # a tuple is data, a Size is a size
    assert torch.Tensor(torch.Size([2, 3])).shape == (2, 3)
    assert torch.Tensor(size=(2, 3)).shape == (2, 3)
    assert torch.Tensor(data=[1]).tolist() == [1.0]
    assert torch.Tensor([True]).tolist() == [1.0]
    assert torch.Tensor(range(3)).tolist() == [0.0, 1.0, 2.0]
    assert torch.Tensor(np.int64(2)).shape == (2,)
    assert torch.Tensor(np.array(2.)).shape == ()
    assert torch.Tensor(2, torch.tensor(3)).shape == (2, 3)
    a = torch.tensor([1, 2])
    b = torch.Tensor(a)                   # Tensor(other) aliases other, keeping its dtype
    assert b.dtype is torch.int64 and b.data_ptr() == a.data_ptr()
    assert type(torch.FloatTensor([1])) is torch.Tensor


def test_tensor_constructor_errors():
    with raises(TypeError, "new(): data must be a sequence (got float)"):
        torch.Tensor(2.5)
    with raises(TypeError, "new(): data must be a sequence (got numpy.float64)"):
        torch.Tensor(np.float64(2))
    with raises(TypeError, "new(): data must be a sequence (got NoneType)"):
        torch.Tensor(None)
    with raises(TypeError, "new(): invalid data type 'str'"):
        torch.Tensor("a")
    with raises(RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"):
        torch.Tensor(-1)
    with raises(TypeError, "new(): argument 'size' failed to unpack the object at pos 2 with error \"type must be "
                           "tuple of ints,but got float\""):
        torch.Tensor(2, 3.0)
    with raises(TypeError, "new() received an invalid combination of arguments - got (int, dtype=torch.dtype), but "
                           "expected one of:\n * (*, torch.device device = None)\n      didn't match because some of "
                           "the keywords were incorrect: dtype\n"):
        torch.FloatTensor(2, dtype=torch.float32)
    with raises(ValueError, "expected sequence of length 2 at dim 1 (got 1)"):
        torch.Tensor([[1, 2], [3]])
    with raises(TypeError, "expected TensorOptions(dtype=float, device=cpu, layout=Strided, requires_grad=false "
                           "(default), pinned_memory=false (default), memory_format=(nullopt)) (got TensorOptions("
                           "dtype=long int, device=cpu"):
        torch.FloatTensor(torch.zeros(2, dtype=torch.long))


@pytest.mark.parametrize("name, dtype", [
    ("FloatTensor", torch.float32), ("DoubleTensor", torch.float64), ("HalfTensor", torch.float16),
    ("BFloat16Tensor", torch.bfloat16), ("LongTensor", torch.int64), ("IntTensor", torch.int32),
    ("ShortTensor", torch.int16), ("CharTensor", torch.int8), ("ByteTensor", torch.uint8),
    ("BoolTensor", torch.bool)])
def test_typed_constructors_and_isinstance(name, dtype):
    cls = getattr(torch, name)
    assert cls([1, 0]).dtype is dtype and cls(2, 3).shape == (2, 3) and cls(3).dtype is dtype
    assert cls.dtype is dtype and cls.__name__ == name and not cls.is_cuda
    assert isinstance(torch.zeros(2, dtype=dtype), cls)
    other = torch.float64 if dtype is not torch.float64 else torch.float32
    assert not isinstance(torch.zeros(2, dtype=other), cls)
    assert not issubclass(cls, torch.Tensor) and not isinstance(3, cls)
    assert torch.zeros(2, dtype=dtype).type() == f"torch.{name}"
    assert torch.zeros(2).type(f"torch.{name}").dtype is dtype
    assert torch.zeros(2).type(cls).dtype is dtype


def test_typed_constructor_conversions():
    assert torch.LongTensor([1.7, 2]).tolist() == [1, 2]
    assert torch.ByteTensor([-1]).tolist() == [255]
    assert torch.BoolTensor([1, 0]).tolist() == [True, False]
    with raises(RuntimeError, "value cannot be converted to type uint8 without overflow"):
        torch.ByteTensor([300])
    assert isinstance(nn.Parameter(torch.zeros(2)), torch.FloatTensor)
    assert isinstance(torch.zeros(2, requires_grad=True), torch.FloatTensor)


def test_type_method():
    t = torch.zeros(2)
    assert t.type() == "torch.FloatTensor" and t.type(torch.float32) is t
    assert t.type("torch.LongTensor").dtype is torch.int64
    assert t.type(dtype=torch.int8).dtype is torch.int8
    assert torch.zeros(2, dtype=torch.int64).type(torch.Tensor).dtype is torch.float32
    assert t.type("torch.Tensor").dtype is torch.float32
    for bad, shown in (("foo", "foo"), ("torch.float64", "torch.float64"), ("LongTensor", "LongTensor"),
                       (np.float64, "numpy.float64"), (float, "float")):
        with raises(ValueError, f"invalid type: '{shown}'"):
            t.type(bad)
    with raises(TypeError, "dtype must be a type, str, or dtype object"):
        t.type(3)


def test_new_and_new_star():
    t = torch.zeros(2, dtype=torch.int32)
    assert t.new(2, 3).shape == (2, 3) and t.new(2, 3).dtype is torch.int32
    assert t.new([1.5, 2]).tolist() == [1, 2] and t.new().shape == (0,)
    assert t.new((2, 3)).tolist() == [2, 3] and t.new(torch.Size([2, 3])).shape == (2, 3)
    assert t.new(t).data_ptr() == t.data_ptr()
    f = torch.zeros(2)
    assert f.new_tensor([1, 2]).dtype is torch.float32
    assert f.new_tensor([1, 2], dtype=torch.int64).dtype is torch.int64
    assert f.new_empty(2, 3).shape == (2, 3) and f.new_empty((2, 3)).shape == (2, 3)
    assert f.new_empty(size=(2, 3)).shape == (2, 3)
    assert f.new_ones([2, 3], dtype=torch.int32).dtype is torch.int32
    assert f.new_full((2,), 3).tolist() == [3.0, 3.0]
    assert torch.zeros(2, dtype=torch.int64).new_full((2,), 3.5).tolist() == [3, 3]
    assert f.new_zeros(2, 3, requires_grad=True).requires_grad
    assert f.new_empty_strided((2, 3), (1, 2)).stride() == (1, 2)
    with pytest.warns(UserWarning, match="rather than tensor.new_tensor"):
        assert f.new_tensor(torch.tensor([1, 2])).dtype is torch.float32
    with raises(TypeError, 'new_zeros() missing 1 required positional arguments: "size"'):
        f.new_zeros()
    with raises(TypeError, "new_ones(): argument 'size' (position 1) must be tuple of ints, not float"):
        f.new_ones(2.0)
    with raises(TypeError, "new_full(): argument 'size' (position 1) must be tuple of ints, not int"):
        f.new_full(2, 3)
    with raises(TypeError, "new_zeros() got an unexpected keyword argument 'foo'"):
        f.new_zeros(2, foo=1)
    with raises(TypeError, "new_zeros(): argument 'size' must be tuple of ints, not int"):
        f.new_zeros(size=2)
    with raises(RuntimeError, "Only Tensors of floating point and complex dtype can require gradients"):
        torch.zeros(2, dtype=torch.int64).new_zeros(2, requires_grad=True)


def test_variable():
    from reftorch.autograd import Variable
    a = torch.zeros(2, requires_grad=True)
    v = Variable(a * 2)
    assert type(v) is torch.Tensor and v.grad_fn is None and not v.requires_grad
    b = torch.zeros(2)
    assert Variable(b) is not b and Variable(b).data_ptr() == b.data_ptr()
    assert Variable(b, requires_grad=True).requires_grad and Variable(b, True).is_leaf
    assert Variable().shape == (0,) and Variable(data=b).shape == (2,)
    assert isinstance(b, Variable) and not isinstance(3, Variable) and not issubclass(Variable, torch.Tensor)
    with pytest.warns(UserWarning, match=re.escape("volatile was removed and now has no effect. Use `with "
                                                   "torch.no_grad():` instead.")):
        assert not Variable(b, volatile=True).requires_grad
    with raises(TypeError, "Variable data has to be a tensor, but got list"):
        Variable([1, 2])
    with raises(ValueError, "Variable can't be volatile and require_grad at the same time!"):
        Variable(b, True, True)
    with raises(TypeError, "'foo' is an invalid keyword argument for this function"):
        Variable(b, foo=1)
    with raises(RuntimeError, "Only Tensors of floating point and complex dtype can require gradients"):
        Variable(torch.zeros(2, dtype=torch.long), requires_grad=True)


# ------------------------------------------------------------------------------ point 2: creation forms

def test_randint_forms():
    assert torch.randint(5, (3,)).shape == (3,) and torch.randint(5, (3,)).dtype is torch.int64
    assert torch.randint(2, 5, (3,)).shape == (3,)
    assert torch.randint(high=5, size=(3,)).shape == (3,)
    assert torch.randint(low=2, high=5, size=(3,)).shape == (3,)
    assert torch.randint(size=(3,), high=5).shape == (3,)
    assert torch.randint(5, size=(3,)).shape == (3,)
    assert torch.randint(2, 5, size=(2, 2)).shape == (2, 2)
    assert torch.randint(5, torch.Size([2, 3])).shape == (2, 3) and torch.randint(5, [2]).shape == (2,)
    assert torch.randint(5, (3,), dtype=torch.float32).dtype is torch.float32
    v = torch.randint(3, 6, (200,))
    assert 3 <= int(v.min()) and int(v.max()) <= 5
    with raises(TypeError, "randint(): argument 'size' (position 2) must be tuple of ints, not int"):
        torch.randint(5, 3)
    with raises(TypeError, "randint(): argument 'high' (position 1) must be int, not float"):
        torch.randint(5.5, (3,))
    with raises(TypeError, "randint() received an invalid combination of arguments - got (int), but expected"):
        torch.randint(5)
    with raises(TypeError, "randint() received an invalid combination of arguments - got (int, int, int), but"):
        torch.randint(0, 5, 3)
    with raises(TypeError, 'randint() missing 2 required positional argument: "high", "size"'):
        torch.randint(low=1, size=(3,))
    with raises(RuntimeError, "random_ expects 'from' to be less than 'to', but got from=3 >= to=2"):
        torch.randint(3, 2, (3,))
    with raises(RuntimeError, "Only Tensors of floating point and complex dtype can require gradients"):
        torch.randint(5, (3,), requires_grad=True)


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "rand", "randn"])
def test_size_keyword(fn):
    f = getattr(torch, fn)
    assert f(size=(2, 3)).shape == (2, 3) and f(size=[2]).shape == (2,)
    msg = f"{fn}() received an invalid combination of arguments - got (list, size=list)" if fn.startswith("rand") \
        else f"{fn}() got multiple values for argument 'size'"
    with raises(TypeError, msg):
        f([2], size=[2])
    with raises(TypeError, f"{fn}(): argument 'size' must be tuple of ints, not int"):
        f(size=2)


def test_size_errors():
    with raises(TypeError, "zeros(): argument 'size' (position 1) must be tuple of ints, not float"):
        torch.zeros(2.0)
    with raises(TypeError, "zeros(): argument 'size' failed to unpack the object at pos 2 with error \"type must be "
                           "tuple of ints,but got float\""):
        torch.zeros((2, 3.0))
    with raises(TypeError, "zeros() takes 1 positional argument but 2 were given"):
        torch.zeros((2,), (3,))
    with raises(TypeError, 'zeros() missing 1 required positional arguments: "size"'):
        torch.zeros()
    with raises(TypeError, "full(): argument 'size' (position 1) must be tuple of ints, not int"):
        torch.full(2, 3)
    with raises(TypeError, "zeros(): argument 'size' (position 1) must be tuple of ints, not bool"):
        torch.zeros(True)
    with raises(TypeError, "rand() received an invalid combination of arguments - got (), but expected one of:"):
        torch.rand()
    with raises(TypeError, 'randn() missing 1 required positional arguments: "size"'):
        torch.randn(dtype=torch.float64)
    assert torch.full(size=(2, 3), fill_value=1.5).tolist() == [[1.5] * 3] * 2
    assert torch.zeros([torch.tensor(2), 3]).shape == (2, 3) and torch.zeros(()).shape == ()


def test_out_on_factories():
    o = torch.empty(3)
    assert torch.zeros(3, out=o) is o and o.tolist() == [0.0] * 3
    assert torch.ones(2, 2, out=o) is o and o.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    o = torch.empty(3, dtype=torch.int64)
    assert torch.ones(3, out=o).tolist() == [1, 1, 1] and o.dtype is torch.int64
    assert torch.arange(2.5, out=torch.empty(0, dtype=torch.int64)).tolist() == [0, 1]
    torch.full((3,), 2.5, out=o)
    assert o.tolist() == [2, 2, 2]
    o = torch.empty(3)
    assert torch.arange(5, out=torch.empty(0)).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert torch.eye(2, out=o).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert torch.linspace(0, 1, 4, out=o).tolist() == [[0.0, 0.3333333432674408], [0.6666666269302368, 1.0]]
    assert torch.arange(4, out=o).shape == (2, 2)       # as many elements: out keeps its shape
    assert torch.randperm(4, out=torch.empty(2, 2, dtype=torch.int64)).shape == (4,)
    assert torch.rand(4, out=o).shape == (4,) and torch.randn(2, out=o).shape == (2,)
    assert torch.randint(3, (3,), out=o) is o and o.dtype is torch.float32
    s = torch.empty(6)[::2]
    torch.zeros(3, out=s)
    assert s.stride() == (2,)                       # same shape: out keeps its strides
    torch.zeros(2, 2, out=s)
    assert s.stride() == (2, 1)
    base = torch.empty(3)
    view = base[:2]
    torch.ones(3, out=view)                         # grows in place within its storage
    assert base.tolist() == [1.0, 1.0, 1.0]
    with raises(RuntimeError, "dtype Float does not match dtype of out parameter (Long)"):
        torch.zeros(3, out=torch.empty(3, dtype=torch.int64), dtype=torch.float32)
    with raises(NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"):
        torch.rand(3, out=torch.empty(3, dtype=torch.int64))
    with raises(RuntimeError, "aten::zeros(): functions with out=... arguments don't support automatic "
                              "differentiation, but one of the arguments requires grad."):
        torch.zeros(3, out=torch.empty(3, requires_grad=True))
    with pytest.warns(UserWarning, match="The number of elements in the out tensor of shape \\[3\\] is 3"):
        torch.arange(2, out=torch.empty(3))


def test_tensor_from_sequences():
    assert torch.tensor(collections.deque([1, 2])).tolist() == [1, 2]
    assert torch.tensor(range(3)).dtype is torch.int64
    assert torch.tensor((1, 2.5)).dtype is torch.float32
    assert torch.tensor([torch.tensor(1.), 2]).dtype is torch.float32
    assert torch.tensor([[torch.tensor(1.), 2], (3, 4)]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert torch.tensor([torch.tensor(1, dtype=torch.int32), 2]).dtype is torch.int64
    assert torch.tensor([torch.tensor(1, dtype=torch.int32), 2.5]).dtype is torch.float32
    assert torch.tensor([torch.tensor(1.5, dtype=torch.float64), 2]).dtype is torch.float64
    assert torch.tensor([torch.tensor([1.]), torch.tensor([2.])]).tolist() == [1.0, 2.0]
    assert torch.tensor([[], []]).shape == (2, 0) and torch.tensor([[], [1]]).shape == (2, 0)
    assert torch.tensor(torch.Size([2, 3])).tolist() == [2, 3]
    with raises(ValueError, "expected sequence of length 1 at dim 1 (got 2)"):
        torch.tensor([[1], [2, 3]])
    with raises(TypeError, "not a sequence"):
        torch.tensor([[1, 2], 3])
    with raises(TypeError, "must be real number, not list"):
        torch.tensor([1., [2.]])
    with raises(TypeError, "'list' object cannot be interpreted as an integer"):
        torch.tensor([1, [2, 3]])
    with raises(ValueError, "only one element tensors can be converted to Python scalars"):
        torch.tensor([torch.zeros(2), torch.zeros(3)])
    with raises(TypeError, "new(): invalid data type 'str'"):
        torch.tensor("a")
    with raises(ValueError, "too many dimensions 'str'"):
        torch.tensor(["a"])
    for bad, name in ((None, "NoneType"), ({1: 2}, "dict"), ({1, 2}, "set"), (iter([1]), "list_iterator")):
        with raises(RuntimeError, f"Could not infer dtype of {name}"):
            torch.tensor(bad)
    with pytest.warns(UserWarning, match="rather than torch.tensor\\(sourceTensor\\)"):
        torch.tensor(torch.zeros(2))


def test_tensor_numpy_scalars_and_overflow():
    for v, dt in ((np.int32(5), torch.int32), (np.float64(5), torch.float64), (np.uint8(5), torch.uint8),
                  (np.int16(5), torch.int16), (np.float16(5), torch.float16), (np.bool_(True), torch.bool)):
        assert torch.tensor(v).dtype is dt
    assert torch.tensor([np.float64(1.5)]).dtype is torch.float64
    assert torch.tensor([np.int8(1), np.int16(3)]).dtype is torch.int16
    assert torch.tensor([np.float32(1), 2]).dtype is torch.float32
    assert torch.tensor([-1], dtype=torch.uint8).tolist() == [255]
    assert torch.tensor([-255], dtype=torch.uint8).tolist() == [1]
    assert torch.tensor([1.7, -1.7], dtype=torch.int64).tolist() == [1, -1]
    assert torch.Tensor([2 ** 70]).tolist() == [1.1805916207174113e+21]
    for vals, dt, name in (([300], torch.uint8, "uint8"), ([-256], torch.uint8, "uint8"),
                           ([200], torch.int8, "int8"), ([127.9], torch.int8, "int8"), ([-0.5], torch.uint8, "uint8"),
                           ([float("nan")], torch.int64, "int64"), ([2 ** 31], torch.int32, "int32")):
        with raises(RuntimeError, f"value cannot be converted to type {name} without overflow"):
            torch.tensor(vals, dtype=dt)
    with raises(ValueError, "Overflow when unpacking long long"):
        torch.tensor([2 ** 64])


def test_dtype_arguments():
    assert torch.zeros(2, dtype=float).dtype is torch.float64
    assert torch.zeros(2, dtype=int).dtype is torch.int64 and torch.zeros(2, dtype=bool).dtype is torch.bool
    for fn, call in (("tensor", lambda: torch.tensor([1, 2], dtype="float32")),
                     ("zeros", lambda: torch.zeros(2, dtype="float32")),
                     ("ones", lambda: torch.ones(2, dtype="int64")),
                     ("empty", lambda: torch.empty(2, dtype="float32")),
                     ("full", lambda: torch.full((2,), 1, dtype="float32"))):
        with raises(TypeError, f"{fn}(): argument 'dtype' must be torch.dtype, not str"):
            call()
    with raises(TypeError, "zeros(): argument 'dtype' must be torch.dtype, not type"):
        torch.zeros(2, dtype=np.float32)


def test_asarray():
    assert torch.asarray([1, 2]).dtype is torch.int64 and torch.asarray([1, 2.5]).dtype is torch.float32
    assert torch.asarray(np.array([1, 2], dtype=np.int32)).dtype is torch.int32
    a = np.array([1., 2.])
    t = torch.asarray(a)
    a[0] = 7
    assert t.tolist() == [7.0, 2.0]                     # shares memory
    t = torch.asarray(a, copy=True)
    a[0] = 8
    assert t.tolist() == [7.0, 2.0]
    assert torch.asarray(a, dtype=torch.float32).dtype is torch.float32
    x = torch.tensor([1., 2.])
    assert torch.asarray(x) is x and torch.asarray(x, copy=True).data_ptr() != x.data_ptr()
    assert torch.asarray(x, dtype=torch.float64).dtype is torch.float64
    r = torch.asarray(x, requires_grad=True)
    assert r is x and r.requires_grad and r.is_leaf
    assert torch.asarray([1., 2], dtype=torch.float64, requires_grad=True).requires_grad
    assert torch.asarray(3).dtype is torch.int64 and torch.asarray(np.float32(3.5)).dtype is torch.float32
    assert torch.asarray(range(3)).tolist() == [0, 1, 2]
    with raises(ValueError, "can't alias tensor with dtype 'Double' into dtype 'Float'."):
        torch.asarray(a, copy=False, dtype=torch.float32)
    with raises(ValueError, "can't alias arbitrary sequence into a tensor."):
        torch.asarray([1, 2], copy=False)


def test_finfo_iinfo():
    f = torch.finfo(torch.float32)
    assert (f.bits, f.eps, f.max, f.min, f.tiny, f.smallest_normal, f.resolution, f.dtype) == (
        32, 1.1920928955078125e-07, 3.4028234663852886e+38, -3.4028234663852886e+38, 1.1754943508222875e-38,
        1.1754943508222875e-38, 1e-06, "float32")
    assert repr(f) == ("finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, "
                       "smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=float32)")
    h = torch.finfo(torch.float16)
    assert (h.eps, h.max, h.tiny, h.resolution) == (0.0009765625, 65504.0, 6.103515625e-05, 0.001)
    b = torch.finfo(torch.bfloat16)
    assert (b.eps, b.max, b.resolution) == (0.0078125, 3.3895313892515355e+38, 0.01)
    assert torch.finfo().dtype == "float32" and torch.finfo(float).dtype == "float64"
    assert torch.finfo(torch.float32) == torch.finfo(torch.float32) != torch.finfo(torch.float64)
    i = torch.iinfo(torch.int64)
    assert (i.bits, i.max, i.min, i.dtype) == (64, 9223372036854775807, -9223372036854775808, "int64")
    assert repr(torch.iinfo(torch.uint8)) == "iinfo(min=0, max=255, dtype=uint8)"
    with raises(TypeError, "torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                           "'torch.finfo'"):
        torch.finfo(torch.int32)
    with raises(TypeError, "torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'"):
        torch.iinfo(torch.float32)
    with raises(TypeError, "torch.bool is not supported by torch.iinfo"):
        torch.iinfo(torch.bool)
    with raises(TypeError, "finfo(): argument 'type' (position 1) must be torch.dtype, not str"):
        torch.finfo("float32")
    with raises(AttributeError, "'torch.iinfo' object has no attribute 'eps'"):
        torch.iinfo(torch.int32).eps


def test_default_dtype_reaches_factories():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        made = [torch.arange(3.), torch.linspace(0, 1, 3), torch.full((2,), 1.5), torch.tensor([1.5]),
                torch.rand(2), torch.randn(2), torch.empty(2), torch.zeros(2), torch.ones(2), torch.logspace(0, 1, 2),
                torch.eye(2), torch.normal(0., 1., (2,)), torch.tensor(1.5), torch.scalar_tensor(1),
                torch.asarray([1.5]), torch.Tensor([1]), torch.tensor([1]) / 2, torch.zeros(2).new_tensor([1.])]
        assert all(t.dtype is torch.float64 for t in made)
        assert torch.arange(3).dtype is torch.int64 and torch.full((2,), 1).dtype is torch.int64
    finally:
        torch.set_default_dtype(old)
    with raises(TypeError, "only floating-point types are supported as the default type"):
        torch.set_default_dtype(torch.int64)
    with raises(TypeError, "invalid dtype object: only floating-point types are supported as the default type"):
        torch.set_default_dtype(float)


def test_arange_linspace_as_torch_computes():
    assert torch.arange(2.5, dtype=torch.int64).tolist() == [0, 1]
    assert torch.arange(0.5, 5, 1.5, dtype=torch.int64).tolist() == [0, 1, 2, 3, 4]
    assert torch.arange(-2.5, 2, dtype=torch.int32).tolist() == [-2, -1, 0, 1, 2]
    assert torch.linspace(-3, 10, 13).tolist()[3] == 0.25000011920928955
    assert torch.linspace(0, 1, 7).tolist()[4] == 0.6666666269302368
    assert torch.linspace(0, 10, 7, dtype=torch.int64).tolist() == [0, 1, 3, 5, 6, 8, 10]
    assert torch.linspace(0.3, 1.7, 5, dtype=torch.float16).tolist()[1] == 0.650390625
    with raises(RuntimeError, "upper bound and lower bound inconsistent with step sign"):
        torch.arange(5, 0)
    with raises(ValueError, "step must be nonzero"):
        torch.arange(0, 5, 0.5, dtype=torch.int64)
    with raises(RuntimeError, "unsupported range: 0 -> inf"):
        torch.arange(0, float("inf"))
    with raises(RuntimeError, "number of steps must be non-negative"):
        torch.linspace(0, 1, -1)


# ------------------------------------------------------------------------------ point 5: operators

def test_positive_where_equal():
    a = torch.tensor([1., 2.])
    assert (+a) is a and torch.positive(a) is a and a.positive() is a
    with raises(RuntimeError, "The `+` operator, on a bool tensor is not supported."):
        +torch.tensor([True])
    assert a.where(torch.tensor([True, False]), torch.tensor([9., 9.])).tolist() == [1.0, 9.0]
    assert torch.tensor([1, 2]).where(torch.tensor([True, False]), 0.5).tolist() == [1.0, 0.5]
    assert a.where(condition=torch.tensor([True, False]), other=3.).tolist() == [1.0, 3.0]
    with raises(RuntimeError, "where expected condition to be a boolean tensor, but got a tensor with dtype Long"):
        a.where(torch.tensor([1, 0]), 0.)
    with raises(RuntimeError, "where expected condition to be a boolean tensor, but got a tensor with dtype Long"):
        torch.where(torch.tensor([1, 0]), a, 0.)
    assert torch.equal(torch.tensor([1, 2]), torch.tensor([1., 2])) is True
    assert not torch.equal(torch.tensor([1, 2]), torch.tensor([[1, 2]]))
    assert not torch.equal(torch.tensor([1, 1]), torch.tensor([1]))
    assert not torch.equal(torch.tensor([float("nan")]), torch.tensor([float("nan")]))
    assert torch.equal(torch.tensor([]), torch.tensor([])) and torch.tensor([1]).equal(torch.tensor([1]))
    with raises(TypeError, "equal(): argument 'other' (position 2) must be Tensor, not list"):
        torch.equal(torch.tensor([1, 2]), [1, 2])


def test_isclose_allclose():
    nan = float("nan")
    x, y = torch.tensor([1., 2., nan]), torch.tensor([1., 2.1, nan])
    assert torch.isclose(x, y).tolist() == [True, False, False]
    assert torch.isclose(x, y, equal_nan=True).tolist() == [True, False, True]
    assert torch.isclose(torch.tensor([1., 2.]), torch.tensor([1.001, 2.1]), rtol=1e-2).tolist() == [True, False]
    assert torch.isclose(torch.tensor([1, 2]), torch.tensor([1, 3]), atol=1).tolist() == [True, True]
    assert torch.isclose(torch.tensor([1, 2], dtype=torch.uint8), torch.tensor([2, 1], dtype=torch.uint8),
                         atol=1).tolist() == [True, True]
    assert torch.isclose(torch.tensor([1000000001, 2]), torch.tensor([1000000000, 2]), rtol=0, atol=0).tolist() \
        == [False, True]
    assert torch.isclose(torch.tensor([[1.], [2.]]), torch.tensor([1., 2.])).tolist() == [[True, False],
                                                                                         [False, True]]
    inf = float("inf")
    assert torch.isclose(torch.tensor([inf, -inf]), torch.tensor([inf, inf])).tolist() == [True, False]
    assert torch.isclose(torch.tensor([True, False]), torch.tensor([True, True]), atol=1).tolist() == [True, True]
    with raises(RuntimeError, "Long did not match Float"):
        torch.isclose(torch.tensor([1, 2]), torch.tensor([1., 3]))
    with raises(RuntimeError, "rtol must be greater than or equal to zero, but got -1.5"):
        torch.isclose(torch.tensor([1.]), torch.tensor([1.]), rtol=-1.5)
    with raises(TypeError, "isclose(): argument 'other' (position 2) must be Tensor, not float"):
        torch.isclose(torch.tensor([1.]), 1.)
    assert torch.allclose(torch.tensor([1., 2.]), torch.tensor([1., 2.])) is True
    assert not torch.allclose(torch.tensor([1., nan]), torch.tensor([1., nan]))
    assert torch.allclose(torch.tensor([1., nan]), torch.tensor([1., nan]), equal_nan=True)
    assert torch.allclose(torch.tensor([1.]), torch.tensor([1., 1.]))
    assert torch.tensor([1., 2.]).allclose(torch.tensor([1., 2.]), 1e-5, 1e-8, False)
    with raises(RuntimeError, "The size of tensor a (2) must match the size of tensor b (3) at non-singleton "
                              "dimension 0"):
        torch.allclose(torch.tensor([1., 2]), torch.tensor([1., 1., 3]))


def test_view_dtype():
    a = torch.tensor([1., 2.])
    assert a.view(torch.int32).tolist() == [1065353216, 1073741824]
    assert a.view(dtype=torch.int32).tolist() == [1065353216, 1073741824]
    assert a.view(torch.int16).tolist() == [0, 16256, 0, 16384]
    assert a.view(torch.uint8).tolist() == [0, 0, 128, 63, 0, 0, 0, 64]
    assert a.view(torch.float64).tolist() == [2.000000473111868]
    assert a.view(torch.bool).tolist() == [False, False, True, True, False, False, False, True]
    assert torch.tensor([[1., 2.], [3., 4.]]).view(torch.float64).shape == (2, 1)
    assert torch.tensor([[1., 2.], [3., 4.]]).t().view(torch.int32).tolist() == [[1065353216, 1077936128],
                                                                                [1073741824, 1082130432]]
    assert torch.tensor(1.).view(torch.int32).tolist() == 1065353216
    assert torch.tensor([1, 2], dtype=torch.int16).view(torch.float16).tolist() == [5.960464477539063e-08,
                                                                                    1.1920928955078125e-07]
    assert torch.tensor([1., 2.], dtype=torch.float16).view(torch.int16).tolist() == [15360, 16384]
    v = torch.zeros(2, 4)[:, 1:3].view(torch.int16)
    assert v.stride() == (8, 1) and v.storage_offset() == 2
    assert torch.zeros(3, 4)[1:].view(torch.float64).stride() == (2, 1)
    b = a.view(torch.int32)
    b[0] = 0
    assert a.tolist() == [0.0, 2.0] and b.data_ptr() == a.data_ptr()
    g = torch.tensor([1., 2.], requires_grad=True)
    assert not g.view(torch.float32).requires_grad and g.view(torch.int32).grad_fn is None
    with raises(RuntimeError, "self.size(-1) must be divisible by 2 to view Float as Double (different element "
                              "sizes), but got 3"):
        torch.tensor([1., 2., 3.]).view(torch.float64)
    with raises(RuntimeError, "self.stride(-1) must be 1 to view Float as Double (different element sizes), "
                              "but got 2"):
        torch.tensor([[1., 2.], [3., 4.]]).t().view(torch.float64)
    with raises(RuntimeError, "self.dim() cannot be 0 to view Float as Short (different element sizes)"):
        torch.tensor(1.).view(torch.int16)
    with raises(RuntimeError, "self.storage_offset() must be divisible by 2 to view Float as Double (different "
                              "element sizes), but got 1"):
        torch.arange(6.)[1:5].view(torch.float64)
    with raises(RuntimeError, "self.stride(0) must be divisible by 2 to view Float as Double (different element "
                              "sizes), but got 3"):
        torch.zeros(4, 3)[:, :2].view(torch.float64)


def test_numpy_and_grad_mode():
    a = torch.tensor([1., 2.], requires_grad=True)
    msg = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
    with raises(RuntimeError, msg):
        a.numpy()
    with raises(RuntimeError, msg):
        np.array(a)
    with torch.no_grad():
        assert a.numpy().tolist() == [1.0, 2.0]
    b = a.numpy(force=True)
    b[0] = 5
    assert a.tolist() == [5.0, 2.0]                      # force=True still shares a cpu tensor's memory
    assert (a * 2).numpy(force=True).tolist() == [10.0, 4.0]


# ------------------------------------------------------------------------------ non-op Tensor methods

def test_protocol_methods():
    t = torch.tensor([1, 2])
    assert 2 in t and torch.tensor(2) in t and 3 not in t
    with raises(RuntimeError, "Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                              "<class 'str'>."):
        "a" in t
    assert reversed(torch.tensor([[1, 2], [3, 4]])).tolist() == [[3, 4], [1, 2]]
    assert reversed(torch.tensor(3)).tolist() == 3
    assert torch.tensor([1.5]).__long__() == 1 and torch.tensor(1.5).__nonzero__() is True
    assert torch.tensor([4., 6]).__div__(2).tolist() == [2.0, 3.0]
    assert torch.tensor([4, 6]).__rdiv__(12).tolist() == [3.0, 2.0]
    s = np.sin(torch.tensor([1., 2.]))
    assert isinstance(s, torch.Tensor) and s.dtype is torch.float32
    assert torch.tensor([1., 2.]).__dlpack_device__() == (1, 0)
    assert np.from_dlpack(torch.tensor([1., 2.])).tolist() == [1.0, 2.0]
    with raises(RuntimeError, "Boolean value of Tensor with no values is ambiguous"):
        bool(torch.tensor([]))


def test_queries():
    t = torch.tensor([1., 2.])
    assert not t.is_pinned() and t.get_device() == -1 and torch.get_device(t) == -1
    assert t.is_signed() and not torch.tensor([1], dtype=torch.uint8).is_signed()
    assert not torch.tensor([True]).is_signed()
    assert torch.tensor([1.]).is_nonzero() and not torch.tensor([0.]).is_nonzero()
    with raises(RuntimeError, "Boolean value of Tensor with more than one value is ambiguous"):
        t.is_nonzero()
    with raises(RuntimeError, "Boolean value of Tensor with no values is ambiguous"):
        torch.tensor([]).is_nonzero()
    assert t.is_same_size(torch.zeros(2)) and not torch.is_same_size(t, torch.zeros(3))
    z = torch.zeros(3)
    assert (z.is_set_to(z), z.is_set_to(z.view(3)), z.is_set_to(z[:2]), z.is_set_to(torch.zeros(3))) == (
        True, True, False, False)
    assert not t.is_neg() and t.resolve_neg() is t and not t.is_conj()
    assert t.conj() is t and t.resolve_conj() is t and t.conj_physical() is t and torch.conj(t) is t
    assert torch.zeros(2, 3, 4).permute(2, 0, 1).dim_order() == (1, 2, 0)
    assert torch.tensor([[1., 2]]).t().dim_order() == (0, 1)
    with raises(RuntimeError, "The tensor does not have unique dim order, or cannot map to exact one of the given "
                              "memory formats."):
        torch.zeros(2, 1).dim_order(ambiguity_check=True)
    assert t.const_data_ptr() == t.data_ptr()
    assert torch.zeros(2, 3).dense_dim() == 2 and torch.zeros(2, 3).sparse_dim() == 0
    with raises(RuntimeError, "is_coalesced expected sparse coordinate tensor layout but got Strided"):
        torch.zeros(2, 3).is_coalesced()
    assert torch.ones(2, 3).sum_to_size(3).tolist() == [2.0, 2.0, 2.0]
    assert torch.ones(2, 3).sum_to_size((2, 1)).tolist() == [[3.0], [3.0]]
    with raises(RuntimeError, "size {[4, 3]} is not expandable to size {[2, 3]}."):
        torch.ones(2, 3).sum_to_size(4, 3)


def test_storage_and_geometry():
    a = torch.tensor([1., 2.])
    s = a.storage()
    assert (s.size(), len(s), s.dtype, s.tolist(), s.data_ptr() == a.data_ptr()) == (2, 2, torch.float32,
                                                                                  [1.0, 2.0], True)
    s[0] = 5
    assert a.tolist() == [5.0, 2.0]
    assert a.untyped_storage().nbytes() == 8 and a.storage_type() is torch.FloatStorage
    b = torch.arange(4.)[1:]
    assert (b.untyped_storage().nbytes(), b.storage().size()) == (16, 4)
    x = torch.arange(4.)
    assert x.resize_(2) is x and x.tolist() == [0.0, 1.0]
    x.resize_(2, 3)
    assert x.shape == (2, 3) and x[0].tolist() == [0.0, 1.0, 2.0]
    assert torch.arange(6.).view(2, 3).t().resize_(3, 2).stride() == (1, 3)     # same shape: strides kept
    assert torch.arange(6.).view(2, 3).t().resize_(2, 3).stride() == (3, 1)
    base = torch.zeros(4)
    v = base[:2]
    v.resize_(4)
    v.fill_(1)
    assert base.tolist() == [1.0] * 4
    with raises(RuntimeError, "cannot resize variables that require grad"):
        torch.zeros(2, requires_grad=True).resize_(3)
    y = torch.zeros(2)
    assert y.resize_as_(torch.zeros(2, 2)).shape == (2, 2)
    z, src = torch.zeros(2), torch.arange(4.)
    z.set_(src)
    assert z.tolist() == [0.0, 1.0, 2.0, 3.0] and z.data_ptr() == src.data_ptr()
    z.set_(src.untyped_storage(), 1, (2,), (1,))
    assert z.tolist() == [1.0, 2.0]
    assert z.set_().shape == (0,)
    with raises(RuntimeError, "Could not set tensor of type long int to a tensor of type float"):
        torch.zeros(2).set_(torch.arange(4))
    with raises(RuntimeError, "a leaf Variable that requires grad is being used in an in-place operation."):
        torch.zeros(2, requires_grad=True).set_(torch.arange(4.))


def test_shared_memory_and_callbacks():
    t = torch.tensor([1., 2.])
    assert not t.is_shared() and t.share_memory_() is t and t.is_shared() and t.tolist() == [1.0, 2.0]
    a = torch.tensor([1., 2, 3])
    assert a.apply_(lambda x: x * 2) is a and a.tolist() == [2.0, 4.0, 6.0]
    i = torch.tensor([1, 2, 3])
    i.apply_(lambda x: x / 2)
    assert i.tolist() == [0, 1, 1]
    with raises(RuntimeError, "Can't call apply_() on Variable that requires grad. Use var.detach().apply_() "
                              "instead."):
        torch.tensor([1.], requires_grad=True).apply_(lambda x: x)
    m = torch.tensor([1., 2, 3])
    m.map_(torch.tensor([10., 20, 30]), lambda x, y: x + y)
    assert m.tolist() == [11.0, 22.0, 33.0]
    m.map2_(torch.tensor([1., 1, 1]), torch.tensor([0., 1, 2]), lambda x, y, z: x + y + z)
    assert m.tolist() == [12.0, 24.0, 36.0]
    with raises(RuntimeError, "The expanded size of the tensor (1) must match the existing size (2) at "
                              "non-singleton dimension 1.  Target sizes: [2, 1].  Tensor sizes: [2]"):
        torch.tensor([[1.], [2]]).map_(torch.tensor([10., 20]), lambda x, y: x + y)
    assert torch.zeros(2).module_load(torch.ones(2)).tolist() == [1.0, 1.0]


def test_deprecated_resize():
    a = torch.arange(6., requires_grad=True)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        b = a.resize(2, 3)
    assert b.shape == (2, 3) and b.requires_grad
    b.sum().backward()
    assert a.grad.tolist() == [1.0] * 6
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        assert a.resize_as(torch.zeros(3, 2)).shape == (3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.arange(6.).view(2, 3).t().resize(6).tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        with raises(RuntimeError, "requested resize to 4 (4 elements in total), but the given tensor has a size of 6 "
                                  "(6 elements). autograd's resize can only change the shape of a given tensor, while "
                                  "preserving the number of elements. "):
            a.resize(4)
    assert torch.is_complex(a) is False


# ------------------------------------------------------------------------------ point 7: modules

def test_functional_module():
    import reftorch.functional as tf
    assert tf.einsum is torch.einsum and tf.F is torch.nn.functional
    assert "einsum" in tf.__all__ and "split" in tf.__all__
    with pytest.raises(AttributeError):
        tf.not_a_name


def test_hooks_module():
    from reftorch.utils.hooks import RemovableHandle
    d = collections.OrderedDict()
    h = RemovableHandle(d)
    d[h.id] = 1
    with h:
        pass
    assert len(d) == 0
    m = nn.Linear(2, 2)
    handle = m.register_forward_hook(lambda *a: None)
    assert isinstance(handle, RemovableHandle) and len(m._forward_hooks) == 1
    handle.remove()
    assert len(m._forward_hooks) == 0
    assert isinstance(torch.zeros(1, requires_grad=True).register_hook(lambda g: g), RemovableHandle)
    h2 = pickle.loads(pickle.dumps(RemovableHandle(collections.OrderedDict())))
    assert h2.id >= 0


def test_jit_and_onnx():
    m = nn.Linear(2, 2)
    s = torch.jit.script(m)
    assert isinstance(s, nn.Module) and isinstance(s, torch.jit.ScriptModule) and s.weight is m.weight
    assert not isinstance(m, torch.jit.ScriptModule) and type(s).__name__ == "Linear"
    x = torch.randn(3, 2)
    assert torch.equal(torch.jit.trace(m, torch.zeros(1, 2))(x), m(x))

    def f(x):
        return x * 2
    assert torch.jit.script(f) is f and torch.jit.ignore(f) is f and torch.jit.ignore(drop=True)(f) is f
    assert torch.jit.unused(f) is f and torch.jit.export(f) is f
    assert not torch.jit.is_scripting() and not torch.jit.is_tracing()
    assert torch.jit.isinstance([1, 2], list[int]) and not torch.jit.isinstance([1, "a"], list[int])
    with raises(RuntimeError, "reftorch.jit.ScriptModule.save is not supported"):
        s.save("/nonexistent/x.pt")
    with raises(RuntimeError, "reftorch.jit.load is not supported"):
        torch.jit.load("x.pt")
    assert not torch.onnx.is_in_onnx_export()
    with raises(torch.onnx.OnnxExporterError, "reftorch.onnx.export is not supported"):
        torch.onnx.export(m, (x,), "m.onnx")


def test_safe_globals_registry():
    from reftorch import serialization
    serialization.clear_safe_globals()
    serialization.add_safe_globals([collections.OrderedDict, (collections.Counter, "my.Counter")])
    assert set(serialization.get_safe_globals()) == {collections.OrderedDict, (collections.Counter, "my.Counter")}
    serialization.clear_safe_globals()
    with serialization.safe_globals([collections.OrderedDict]):
        assert serialization.get_safe_globals() == [collections.OrderedDict]
    assert serialization.get_safe_globals() == []


def test_swap_tensors():
    a, b = torch.zeros(2, requires_grad=True), torch.ones(3)
    torch.utils.swap_tensors(a, b)
    assert (a.tolist(), b.tolist(), a.requires_grad, b.requires_grad) == ([1.0] * 3, [0.0] * 2, False, True)
    p, q = nn.Parameter(torch.zeros(2)), torch.ones(3)
    torch.utils.swap_tensors(p, q)
    assert type(p) is torch.Tensor and type(q) is nn.Parameter
    x, y = torch.zeros(2, requires_grad=True), torch.ones(2, requires_grad=True)
    (x * 2).sum().backward()
    torch.utils.swap_tensors(x, y)
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0] and y.grad.tolist() == [2.0, 2.0]
    import weakref
    r = torch.zeros(2)
    ref = weakref.ref(r)  # noqa: F841
    with raises(RuntimeError, "Cannot swap t1 because it has weakref associated with it"):
        torch.utils.swap_tensors(r, torch.ones(2))


def test_compiled_module_state_dict():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    c = torch.compile(m)
    assert c._orig_mod is m and isinstance(c, nn.Module) and type(c).__name__ == "OptimizedModule"
    assert list(c.state_dict()) == ["_orig_mod.0.weight", "_orig_mod.0.bias", "_orig_mod.1.weight",
                                    "_orig_mod.1.bias", "_orig_mod.1.running_mean", "_orig_mod.1.running_var",
                                    "_orig_mod.1.num_batches_tracked"]
    assert [n for n, _ in c.named_parameters()][0] == "_orig_mod.0.weight"
    assert str(c.load_state_dict(c.state_dict())) == "<All keys matched successfully>"
    with pytest.raises(RuntimeError, match="Error\\(s\\) in loading state_dict for OptimizedModule"):
        c.load_state_dict(m.state_dict())
    c.eval()
    assert not m.training
    x = torch.randn(3, 2)
    assert torch.allclose(c(x), m(x))


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_fused_adam_accepted(cls):
    def run(**kw):
        torch.manual_seed(0)
        ps = [nn.Parameter(torch.randn(5, 3)), nn.Parameter(torch.randn(7))]
        opt = getattr(torch.optim, cls)(ps, lr=0.01, **kw)
        for step in range(3):
            for p in ps:
                p.grad = torch.full(p.shape, 0.1 * (step + 1))
            opt.step()
        return [p.detach().clone() for p in ps]
    for a, b in zip(run(), run(fused=True)):        # torch's fused cpu step gives the same bits as its default
        assert torch.equal(a, b)
    for a, b in zip(run(amsgrad=True), run(fused=True, amsgrad=True)):
        assert torch.equal(a, b)
    with raises(RuntimeError, "`fused` and `foreach` cannot be `True` together."):
        getattr(torch.optim, cls)([nn.Parameter(torch.randn(2))], fused=True, foreach=True)
    with raises(RuntimeError, "`fused` does not support `differentiable`"):
        getattr(torch.optim, cls)([nn.Parameter(torch.randn(2))], fused=True, differentiable=True)
    q = torch.zeros(2, dtype=torch.int64)
    q.grad = torch.ones(2, dtype=torch.int64)
    opt = getattr(torch.optim, cls)([q], fused=True)
    with raises(RuntimeError, "`fused=True` requires all the params to be floating point Tensors of supported "
                              "devices: ['mps', 'cuda', 'xpu', 'hpu', 'cpu', 'mtia', 'privateuseone'] but "
                              "torch.int64 and cpu"):
        opt.step()


def test_no_warning_on_plain_creation():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.tensor([1, 2])
        torch.zeros(2).new_tensor([1])
