"""Complex numbers at reftorch's surface: refusals, checks and printing that a differential sweep against
torch 2.13 found different. Every expected value and message here was read off torch 2.13 on CPU."""
import re

import numpy as np
import pytest

import reftorch as rt


def raises(exc, msg):
    return pytest.raises(exc, match="^" + re.escape(msg) + "$")


# ---------------------------------------------------------------- a complex number into a real tensor

@pytest.mark.parametrize("dtype,cname", [(rt.float32, "float"), (rt.float64, "double"), (rt.int64, "int64_t"),
                                         (rt.int32, "int"), (rt.float16, "c10::Half"),
                                         (rt.bfloat16, "c10::BFloat16")])
def test_full_complex_into_real_raises(dtype, cname):
    with raises(RuntimeError, f"value cannot be converted to type {cname} without overflow"):
        rt.full((2,), 1j, dtype=dtype)


def test_complex_fill_values_into_real():
    msg = "value cannot be converted to type float without overflow"
    m = rt.tensor([True, False, True])
    for thunk in (lambda: rt.zeros(3).masked_fill(m, 1j), lambda: rt.zeros(3).masked_fill_(m, 1j),
                  lambda: rt.zeros(3).masked_fill(m, rt.tensor(1j)), lambda: rt.zeros(3).fill_(1j),
                  lambda: rt.full_like(rt.zeros(2), 1j), lambda: rt.zeros(2).new_full((2,), 1j),
                  lambda: rt.full((2,), rt.tensor(1j), dtype=rt.float32)):
        with raises(RuntimeError, msg):
            thunk()
    t = rt.zeros(3)
    with raises(RuntimeError, msg):
        t[0] = 1j
    with raises(RuntimeError, msg):
        t[:] = 1j
    with raises(RuntimeError, "value cannot be converted to type int64_t without overflow"):
        rt.zeros(3, dtype=rt.int64).fill_(1j)
    assert t.tolist() == [0.0, 0.0, 0.0]


def test_complex_without_imaginary_part_or_into_bool_is_taken():
    m = rt.tensor([True, False, True])
    assert rt.full((2,), 1 + 0j, dtype=rt.float32).tolist() == [1.0, 1.0]
    assert rt.full((2,), 2 + 0j, dtype=rt.int64).tolist() == [2, 2]
    assert rt.full((2,), 1j, dtype=rt.bool).tolist() == [True, True]
    assert rt.full((2,), 0j, dtype=rt.bool).tolist() == [False, False]
    assert rt.zeros(3).masked_fill(m, 2 + 0j).tolist() == [2.0, 0.0, 2.0]
    assert rt.zeros(3).fill_(2 + 0j).tolist() == [2.0, 2.0, 2.0]
    assert rt.zeros(3, dtype=rt.bool).masked_fill(m, 1j).tolist() == [True, False, True]
    t = rt.zeros(3)
    t[0] = 2 + 0j
    assert t.tolist() == [2.0, 0.0, 0.0]
    b = rt.zeros(3, dtype=rt.bool)
    b[0] = 1j
    assert b.tolist() == [True, False, False]
    # a tensor is copied: its imaginary part is dropped (bool: nonzero)
    assert rt.zeros(3).fill_(rt.tensor(1j)).tolist() == [0.0, 0.0, 0.0]
    assert rt.zeros(3, dtype=rt.bool).fill_(rt.tensor(1j)).tolist() == [True, True, True]


def test_index_fill_and_index_put_complex_into_real():
    with raises(RuntimeError, "index_fill_(): Converting complex Scalar to non-complex type is not supported"):
        rt.zeros(3).index_fill(0, rt.tensor([0]), 2 + 0j)
    with raises(RuntimeError, "index_fill_(): Converting complex Scalar to non-complex type is not supported"):
        rt.zeros(3, dtype=rt.bool).index_fill_(0, rt.tensor([0]), rt.tensor(1j))
    with raises(RuntimeError, "Index put requires the source and destination dtypes match, got Float for the "
                              "destination and ComplexFloat for the source."):
        rt.zeros(3).index_put_((rt.tensor([0]),), rt.tensor(1j))


def test_tensor_of_complex_with_real_dtype():
    with raises(TypeError, "must be real number, not complex"):
        rt.tensor([1j], dtype=rt.float32)
    with raises(TypeError, "must be real number, not complex"):
        rt.tensor(1 + 0j, dtype=rt.float64)
    with raises(TypeError, "'complex' object cannot be interpreted as an integer"):
        rt.tensor([1j], dtype=rt.int64)
    assert rt.tensor([1j, 0j], dtype=rt.bool).tolist() == [True, False]


# ---------------------------------------------------------------- products refuse mixed dtypes (no promotion)

def _m(dtype, *shape):
    return rt.ones(shape or (2, 2), dtype=dtype)


def test_matmul_family_refuses_mixed_dtypes():
    c, f, d = rt.complex64, rt.float32, rt.complex128
    cases = [
        (lambda: rt.mm(_m(c), _m(f)), "expected m1 and m2 to have the same dtype, but got: c10::complex<float> != float"),
        (lambda: rt.mm(_m(c), _m(d)), "expected m1 and m2 to have the same dtype, but got: c10::complex<float> != "
                                      "c10::complex<double>"),
        (lambda: _m(f) @ _m(c), "expected m1 and m2 to have the same dtype, but got: float != c10::complex<float>"),
        (lambda: rt.matmul(_m(f), _m(rt.float64)), "expected m1 and m2 to have the same dtype, but got: float != double"),
        (lambda: rt.matmul(_m(rt.int64), _m(f)), "expected m1 and m2 to have the same dtype, but got: long int != float"),
        (lambda: rt.matmul(_m(c, 2, 2, 2), _m(f, 2, 2)), "expected m1 and m2 to have the same dtype, but got: "
                                                         "c10::complex<float> != float"),
        (lambda: rt.matmul(_m(c, 2), _m(f, 2, 2)), "expected m1 and m2 to have the same dtype, but got: "
                                                   "c10::complex<float> != float"),
        (lambda: rt.bmm(_m(c, 1, 2, 2), _m(f, 1, 2, 2)), "expected scalar type ComplexFloat but found Float"),
        (lambda: rt.matmul(_m(c, 2), _m(f, 2, 2, 2)), "expected scalar type ComplexFloat but found Float"),
        (lambda: rt.mv(_m(c), _m(f, 2)), "addmv input tensors must have the same dtype, but got Float, ComplexFloat, "
                                         "and Float"),
        (lambda: rt.matmul(_m(c, 2, 2, 2), _m(d, 2)), "addmv input tensors must have the same dtype, but got "
                                                      "ComplexDouble, ComplexFloat, and ComplexDouble"),
        (lambda: rt.matmul(_m(c, 2), _m(f, 2)), "dot : expected both vectors to have same dtype, but found "
                                                "ComplexFloat and Float"),
        (lambda: rt.addmm(_m(c), _m(f), _m(c)), "mat1 and mat2 must have the same dtype, but got Float and "
                                                "ComplexFloat"),
        (lambda: rt.addmm(_m(f), _m(c), _m(c)), "self and mat2 must have the same dtype, but got Float and "
                                                "ComplexFloat"),
        (lambda: rt.addbmm(_m(c), _m(f, 1, 2, 2), _m(c, 1, 2, 2)), "mat1 and mat2 must have the same dtype, but got "
                                                                   "Float and ComplexFloat"),
        (lambda: rt.baddbmm(_m(c, 1, 2, 2), _m(f, 1, 2, 2), _m(c, 1, 2, 2)),
         "Input dtypes must be the same, got: input c10::complex<float>, batch1: float, batch2: c10::complex<float>"),
        (lambda: rt.baddbmm(_m(f, 1, 2, 2), _m(f, 1, 2, 2), _m(c, 1, 2, 2)),
         "expected scalar type Float but found ComplexFloat"),
        (lambda: rt.addmv(_m(c, 2), _m(f), _m(c, 2)), "addmv input tensors must have the same dtype, but got "
                                                      "ComplexFloat, Float, and ComplexFloat"),
        (lambda: rt.nn.functional.linear(_m(c), _m(f)), "expected m1 and m2 to have the same dtype, but got: "
                                                        "c10::complex<float> != float"),
        (lambda: rt.nn.functional.linear(_m(f, 3, 2, 2), _m(f), _m(rt.float64, 2)),
         "self and mat2 must have the same dtype, but got Double and Float"),
    ]
    for thunk, msg in cases:
        with raises(RuntimeError, msg):
            thunk()
    assert rt.outer(_m(c, 2), _m(f, 2)).dtype is c      # outer promotes, as torch


def test_lerp_refuses_mixed_dtypes():
    c, f = rt.complex64, rt.float32
    with raises(RuntimeError, "expected dtype c10::complex<float> for `end` but got dtype float"):
        rt.lerp(_m(c, 2), _m(f, 2), 0.5)
    with raises(RuntimeError, "expected dtype float for `end` but got dtype double"):
        rt.lerp(_m(f, 2), rt.tensor(1.0, dtype=rt.float64), 0.5)
    with raises(RuntimeError, "expected dtype float for `weight` but got dtype c10::complex<float>"):
        rt.lerp(_m(f, 2), _m(f, 2), _m(c, 2))
    with raises(RuntimeError, "expected dtype c10::complex<float> for `end` but got dtype c10::complex<double>"):
        _m(c, 2).lerp_(_m(rt.complex128, 2), 0.5)
    assert rt.lerp(_m(f, 2), _m(f, 2), rt.tensor(0.5, dtype=rt.float64)).dtype is f    # a 0-d weight: any dtype
