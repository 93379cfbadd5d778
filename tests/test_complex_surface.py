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


# ---------------------------------------------------------------- complex refusals of real-only ops

def test_deg2rad_rad2deg_and_inplace_abs_refuse_complex():
    c = rt.tensor([1 + 2j, -3 + 0.5j])
    for name in ("deg2rad", "rad2deg"):
        with raises(RuntimeError, f"{name} is not supported for complex tensors."):
            getattr(rt, name)(c)
        with raises(RuntimeError, f"{name} is not supported for complex tensors."):
            getattr(c.clone(), name + "_")()
    with raises(RuntimeError, "In-place abs is not supported for complex tensors."):
        c.clone().abs_()
    with raises(RuntimeError, "In-place abs is not supported for complex tensors."):
        c.clone().absolute_()
    assert c.tolist() == [1 + 2j, -3 + 0.5j]
    assert rt.abs(c, out=rt.empty(2)).tolist() == pytest.approx([5 ** 0.5, 9.25 ** 0.5])
    assert rt.deg2rad(rt.tensor([180.0])).tolist() == pytest.approx([3.14159265])


def test_autograd_refused_for_complex_silu_and_nan_to_num():
    c = rt.tensor([1 + 2j, -3 + 0.5j], requires_grad=True)
    with raises(RuntimeError, "silu does not support automatic differentiation for outputs with complex dtype."):
        rt.nn.functional.silu(c)
    with raises(RuntimeError, "nan_to_num does not support automatic differentiation for outputs with complex "
                              "dtype."):
        rt.nan_to_num(c)
    with rt.no_grad():
        assert rt.nan_to_num(c).dtype is rt.complex64
    assert rt.nn.functional.silu(c.detach()).dtype is rt.complex64
    f = rt.tensor([0.5, -1.0], requires_grad=True)
    rt.nn.functional.silu(f).sum().backward()
    assert f.grad is not None


@pytest.mark.parametrize("thunk,name", [
    (lambda c: rt.bitwise_not(c), "bitwise_not"), (lambda c: rt.i0(c), "i0"),
    (lambda c: rt.nextafter(c, c), "nextafter"), (lambda c: rt.floor_divide(c, c), None),
    (lambda c: rt.nn.functional.elu(c), None), (lambda c: rt.nn.functional.softplus(c), None)])
def test_no_kernel_for_complex_is_not_implemented_error(thunk, name):
    # torch 2.13: NotImplementedError('"<kernel>_cpu" not implemented for 'ComplexFloat''); reftorch names its op
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        thunk(rt.ones(2, dtype=rt.complex64))


# ---------------------------------------------------------------- Tensor.itemsize / nbytes, can_cast

def test_itemsize_nbytes():
    t = rt.ones(3, 4, dtype=rt.complex64)
    assert (t.itemsize, t.element_size(), t.nbytes) == (8, 8, 96)
    assert (t[0].nbytes, t[:, ::2].nbytes, t.expand(2, 3, 4).nbytes) == (32, 48, 192)
    assert rt.ones(2, dtype=rt.complex128).itemsize == 16 and rt.ones(2, dtype=rt.bool).itemsize == 1


def test_can_cast():
    C = rt
    table = [(C.complex64, C.float32, False), (C.float32, C.complex64, True), (C.float64, C.float32, True),
             (C.int64, C.float32, True), (C.float32, C.int64, False), (C.bool, C.int8, True), (C.int8, C.bool, False),
             (C.complex128, C.complex64, True), (C.uint8, C.int8, True), (C.int8, C.uint8, True),
             (C.float32, C.bool, False)]
    for a, b, ok in table:
        assert rt.can_cast(a, b) is ok, (a, b)
    assert rt.can_cast(from_=C.float32, to=C.int8) is False
    with raises(TypeError, "can_cast(): argument 'from_' (position 1) must be torch.dtype, not int"):
        rt.can_cast(1, C.float32)


# ---------------------------------------------------------------- fftfreq / rfftfreq, logspace

def test_fftfreq_edges():
    nan, inf = float("nan"), float("inf")
    assert rt.fft.fftfreq(0).tolist() == [] and rt.fft.fftfreq(0).dtype is rt.float32
    np.testing.assert_array_equal(rt.fft.rfftfreq(0).numpy(), [nan])
    np.testing.assert_array_equal(rt.fft.fftfreq(4, 0).numpy(), [nan, inf, -inf, -inf])
    np.testing.assert_array_equal(rt.fft.fftfreq(5, 0.0).numpy(), [nan, inf, inf, -inf, -inf])
    np.testing.assert_array_equal(rt.fft.rfftfreq(4, 0).numpy(), [nan, inf, inf])
    assert str(rt.fft.rfftfreq(-1)) == "tensor([-0.])"
    assert rt.fft.rfftfreq(-3).tolist() == []
    assert rt.fft.fftfreq(3, 2).tolist() == pytest.approx([0.0, 1 / 6, -1 / 6])
    assert rt.fft.fftfreq(4, rt.tensor(0.5)).tolist() == [0.0, 0.5, -1.0, -0.5]       # 0-d tensors stand for numbers
    assert rt.fft.rfftfreq(rt.tensor(4)).tolist() == [0.0, 0.25, 0.5]
    with raises(RuntimeError, "value cannot be converted to type double without overflow"):
        rt.fft.fftfreq(4, rt.tensor(1j))
    with raises(RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"):
        rt.fft.fftfreq(-1)
    with raises(RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"):
        rt.fft.rfftfreq(-4)
    for name in ("fftfreq", "rfftfreq"):
        fn = getattr(rt.fft, name)
        for dt in (rt.int64, rt.bool):
            with raises(RuntimeError, f"{name} requires a floating point or complex dtype"):
                fn(4, dtype=dt)
        with raises(NotImplementedError, "\"arange_cpu\" not implemented for 'ComplexFloat'"):
            fn(4, dtype=rt.complex64)
        with raises(TypeError, f"fft_{name}(): argument 'd' (position 2) must be float, not complex"):
            fn(4, 1j)
        with raises(TypeError, f"fft_{name}(): argument 'n' (position 1) must be int, not float"):
            fn(4.0)
        assert fn(4, dtype=rt.float16).dtype is rt.float16


def test_logspace_complex():
    # torch 2.13's bits (uint32 view of the complex64 values)
    r = rt.logspace(0, 1j, 3)
    assert r.dtype is rt.complex64
    assert r.numpy().view(np.uint32).tolist() == \
        [1065353216, 0, 1053854357, 1063898483, 3207270210, 1061057918]
    assert rt.logspace(rt.tensor(1j), 2, 3).numpy().view(np.uint32).tolist()[4:] == [1120403457, 0]
    assert rt.logspace(0, 1j, 3, dtype=rt.complex128).dtype is rt.complex128
    assert rt.logspace(1j, 2j, 0).shape == (0,)
    with raises(RuntimeError, "torch.logspace(): inferred dtype c10::complex<float> can't be safely cast to passed "
                              "dtype Float"):
        rt.logspace(0, 1j, 3, dtype=rt.float32)


# ---------------------------------------------------------------- istft's checks

def _istft_call(shape, **kw):
    return ("istft(CPUComplexFloatType[" + ", ".join(map(str, shape)) + "], n_fft=16, hop_length={hop}, "
            "win_length={win}, window={window}, center={center}, normalized=0, onesided={onesided}, length=None, "
            "return_complex={rc}) ").format(**kw)


def test_istft_checks():
    S = rt.ones(9, 13, dtype=rt.complex64)
    w = rt.hann_window(16)
    base = dict(hop=4, win=16, window="None", center=1, onesided="None", rc=0)
    with raises(RuntimeError, _istft_call((9, 13), **{**base, "window": "torch.FloatTensor{[16]}", "onesided": 0,
                                                       "rc": 1}) +
                ": expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when "
                "onesided=False, but got 9"):
        rt.istft(S, 16, window=w, onesided=False, return_complex=True)
    with raises(RuntimeError, _istft_call((2, 9, 13), **{**base, "onesided": 0, "rc": 1}) +
                ": expected the frequency dimension (3rd to the last) of the input tensor to match n_fft when "
                "onesided=False, but got 9"):
        rt.istft(rt.ones(2, 9, 13, dtype=rt.complex64), 16, onesided=False, return_complex=True)
    with raises(RuntimeError, _istft_call((7, 13), **{**base, "onesided": 1}) +
                ": expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 "
                "when onesided=True, but got 7"):
        rt.istft(rt.ones(7, 13, dtype=rt.complex64), 16, onesided=True)
    with raises(RuntimeError, "Cannot have onesided output if window or input is complex"):
        rt.istft(S, 16, return_complex=True)
    with raises(RuntimeError, _istft_call((9, 13), **{**base, "hop": 20}) + ": expected 0 < hop_length <= win_length"):
        rt.istft(S, 16, hop_length=20)
    with raises(RuntimeError, _istft_call((9, 13), **{**base, "win": 20}) + ": expected 0 < win_length <= n_fft"):
        rt.istft(S, 16, win_length=20)
    with raises(RuntimeError, _istft_call((9, 13), **{**base, "window": "torch.FloatTensor{[5]}"}) +
                ": Invalid window shape. window has to be 1D and length of `win_length`"):
        rt.istft(S, 16, window=rt.ones(5))
    with raises(RuntimeError, _istft_call((9, 13), **{**base, "window": "torch.FloatTensor{[16]}", "center": 0}) +
                "window overlap add min: 1\n[ CPUBoolType{} ]"):
        rt.istft(S, 16, window=w, center=False)
    with raises(RuntimeError, _istft_call((2, 2, 9, 3), **base) + ": expected a tensor with 3 or 4 dimensions, but "
                                                                   "got 5"):
        rt.istft(rt.ones(2, 2, 9, 3, dtype=rt.complex64), 16)
    with raises(RuntimeError, "istft requires a complex-valued input tensor matching the output from stft with "
                              "return_complex=True."):
        rt.istft(rt.ones(9, 13), 16)
    assert rt.istft(rt.ones(16, 13, dtype=rt.complex64), 16, onesided=False).shape == (48,)


# ---------------------------------------------------------------- torch.fft out= checks

def test_fft_out_dtype_checks():
    x, c = rt.ones(2, 6), rt.ones(2, 6, dtype=rt.complex64)
    E = (lambda dt: rt.empty(0, dtype=dt))
    F = rt.fft
    for fn, fname in ((F.fft, "fft"), (F.ifft, "ifft"), (F.rfft, "rfft"), (F.ihfft, "ihfft"), (F.fft2, "fftn"),
                      (F.ifftn, "fftn"), (F.rfft2, "rfftn"), (F.ihfftn, "ihfftn")):
        with raises(RuntimeError, f"{fname} expects a complex output tensor, but got Float"):
            fn(x, out=E(rt.float32))
    for fn, fname in ((F.irfft, "irfft"), (F.hfft, "hfft"), (F.irfft2, "irfftn"), (F.hfft2, "hfftn"),
                      (F.irfftn, "irfftn"), (F.hfftn, "hfftn")):
        with raises(RuntimeError, f"{fname} expects a floating point output tensor, but got ComplexFloat"):
            fn(c, out=E(rt.complex64))
        with raises(RuntimeError, f"{fname} expects a floating point output tensor, but got Long"):
            fn(x, out=E(rt.int64))
        assert fn(c, out=E(rt.float64)).dtype is rt.float64
    with raises(RuntimeError, "Found dtype ComplexDouble but expected ComplexFloat"):
        F.ifft(x, out=E(rt.complex128))
    with raises(RuntimeError, "Found dtype ComplexFloat but expected ComplexDouble"):
        F.ihfft(x.double(), out=E(rt.complex64))
    assert F.fft(x, out=E(rt.complex128)).dtype is rt.complex128       # (c2c and r2c change precision)
    assert F.ifft(c, out=E(rt.complex128)).dtype is rt.complex128
    assert F.ifft2(x, out=E(rt.complex128)).dtype is rt.complex128


# ---------------------------------------------------------------- linalg norms' dtype=

def test_norm_dtype_checks():
    f, c = rt.tensor([1.0, 2.0, 3.0]), rt.tensor([1 + 1j, 2 - 1j])
    L = rt.linalg
    cases = [
        (lambda: L.vector_norm(f, dtype=rt.complex64), "linalg.vector_norm: dtype should be real for real inputs, "
                                                       "but got ComplexFloat"),
        (lambda: L.vector_norm(c, dtype=rt.float64), "linalg.vector_norm: dtype should be complex for complex "
                                                     "inputs, but got Double"),
        (lambda: L.vector_norm(c, dtype=rt.int64), "linalg.vector_norm: dtype should be floating point or complex, "
                                                   "but got Long"),
        (lambda: L.vector_norm(f, dtype=rt.float16), "linalg.vector_norm: the dtype of the input (Float) should be "
                                                     "convertible without narrowing to the specified dtype (Half)"),
        (lambda: L.vector_norm(c.to(rt.complex128), dtype=rt.complex64),
         "linalg.vector_norm: the dtype of the input (ComplexDouble) should be convertible without narrowing to the "
         "specified dtype (ComplexFloat)"),
        (lambda: L.norm(c, dtype=rt.float32), "linalg.vector_norm: dtype should be complex for complex inputs, but "
                                              "got Float"),
        (lambda: L.matrix_norm(c.reshape(1, 2), dtype=rt.float32), "linalg.matrix_norm: dtype should be complex "
                                                                   "for complex inputs, but got Float"),
        (lambda: L.matrix_norm(f.reshape(1, 3), dtype=rt.complex64), "linalg.matrix_norm: dtype should be real for "
                                                                     "real inputs, but got ComplexFloat"),
    ]
    for thunk, msg in cases:
        with raises(RuntimeError, msg):
            thunk()
    r = L.vector_norm(c, dtype=rt.complex128)
    assert r.dtype is rt.float64 and r.item() == pytest.approx(7 ** 0.5)
    assert L.vector_norm(f.half(), dtype=rt.float32).dtype is rt.float32


# ---------------------------------------------------------------- printing

def test_print_widths_from_nonzero_finite_values():
    inf, nan = float("inf"), float("nan")
    t = rt.tensor([complex(inf, -inf), complex(nan, 1), 0j, -0j])
    assert str(t) == "tensor([inf-infj, nan+1.j, 0.+0.j, -0.-0.j])"
    assert repr(t) == str(t)
    assert str(rt.tensor([inf, 0.0])) == "tensor([inf, 0.])"
    assert str(rt.tensor([nan, 1.5, -0.0])) == "tensor([   nan, 1.5000, -0.0000])"
    assert str(rt.tensor([1.0, 10000.0])) == "tensor([1.0000e+00, 1.0000e+04])"
    assert str(rt.tensor([[1.5, -2.25], [inf, 3.0]])) == "tensor([[ 1.5000, -2.2500],\n        [    inf,  3.0000]])"


def test_summarized_vectors_pad_the_ellipsis():
    assert str(rt.full((2000,), 1j)) == "tensor([0.+1.j, 0.+1.j, 0.+1.j,  ..., 0.+1.j, 0.+1.j, 0.+1.j])"
    assert str(rt.arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    assert str(rt.zeros(2000)) == "tensor([0., 0., 0.,  ..., 0., 0., 0.])"


def test_sci_mode_printoption():
    try:
        rt.set_printoptions(sci_mode=True)
        assert str(rt.tensor([1 + 2j, -3.5 - 0.25j])) == "tensor([ 1.0000e+00+2.0000e+00j, -3.5000e+00-2.5000e-01j])"
        assert str(rt.tensor([0.5, 2.0])) == "tensor([5.0000e-01, 2.0000e+00])"
        assert str(rt.zeros(2)) == "tensor([0., 0.])"       # no nonzero finite value: automatic as ever
        rt.set_printoptions(sci_mode=False)
        assert str(rt.tensor([1e-10 + 1e10j, 3 + 0j])) == "tensor([0.0000+10000000000.j, 3.0000+0.j])"
        assert str(rt.tensor([1.0, 1e9])) == "tensor([         1., 1000000000.])"
        rt.set_printoptions(precision=2)        # sci_mode left out: automatic again, as torch
        assert str(rt.tensor([1.0, 1e9])) == "tensor([1.00e+00, 1.00e+09])"
    finally:
        rt.set_printoptions(profile="default")
    assert str(rt.tensor([1.0, 1e9])) == "tensor([1.0000e+00, 1.0000e+09])"


def test_real_input_of_where_and_logaddexp_refuses_a_complex_gradient():
    msg = ("Expected isFloatingType(grad.scalar_type()) || (input_is_complex == grad_is_complex) to be true, but got "
           "false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)")
    m = rt.tensor([True, False])
    for make in (lambda c, f: rt.where(m, c, f), lambda c, f: rt.where(m, f, c), lambda c, f: rt.logaddexp(c, f)):
        c = rt.tensor([1 + 2j, -3 + 0.5j], requires_grad=True)
        f = rt.tensor([0.5, 2.0], requires_grad=True)
        y = make(c, f)          # the forward is taken (complex64), the backward refused
        assert y.dtype is rt.complex64
        with raises(RuntimeError, msg):
            y.abs().sum().backward()
    c = rt.tensor([1 + 2j, -3 + 0.5j], requires_grad=True)
    rt.where(m, c, rt.tensor([0.5, 2.0])).abs().sum().backward()      # no gradient wanted for the real input
    rt.where(m, c, 1.0).abs().sum().backward()
    f = rt.tensor([0.5, 2.0], requires_grad=True)
    (rt.tensor([1j, 2j]) * f).abs().sum().backward()                   # mul takes the real part, as torch
    assert f.grad.dtype is rt.float32
