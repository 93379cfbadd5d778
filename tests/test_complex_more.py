"""Issue 25's remaining complex gaps: complex32 (chalf), the negative bit, in-place ops and out= on conjugate views
under autograd, the ordering ops' refusals on complex inputs. Expected values are derived by hand or with NumPy
(float16 parts rounded by NumPy's float16 cast, nearest even)."""
import numpy as np
import pytest

import reftorch as torch


def _parts16(values):
    """The complex values a complex32 tensor holds: each part rounded to float16 by NumPy."""
    v = np.asarray(values, np.complex128)
    with np.errstate(over="ignore"):        # (beyond float16's range: inf)
        return (v.real.astype(np.float16).astype(np.float64) + 1j * v.imag.astype(np.float16).astype(np.float64)).tolist()


# ---------------------------------------------------------------------------------------------- complex32


def test_chalf_dtype_and_creation():
    assert torch.chalf is torch.complex32 and torch.complex32.is_complex and not torch.chalf.is_floating_point
    assert torch.chalf.itemsize == 4 and repr(torch.chalf) == "torch.complex32"
    assert torch.promote_types(torch.chalf, torch.float16) is torch.chalf
    assert torch.promote_types(torch.chalf, torch.float32) is torch.complex64
    assert torch.promote_types(torch.chalf, torch.bfloat16) is torch.complex64
    assert torch.promote_types(torch.chalf, torch.float64) is torch.complex128
    assert torch.promote_types(torch.chalf, torch.cfloat) is torch.complex64
    assert torch.promote_types(torch.chalf, torch.int64) is torch.chalf
    assert torch.zeros(2, dtype=torch.chalf).tolist() == [0j, 0j]
    assert torch.ones(2, dtype=torch.chalf).tolist() == [1 + 0j, 1 + 0j]
    assert torch.full((2,), 1 + 2j, dtype=torch.chalf).tolist() == [1 + 2j, 1 + 2j]
    assert torch.empty(3, dtype=torch.chalf).shape == (3,) and torch.empty(3, dtype=torch.chalf).element_size() == 4
    t = torch.tensor([0.1 + 0.2j, 70000 - 1j], dtype=torch.chalf)
    assert t.dtype is torch.complex32 and t.tolist() == _parts16([0.1 + 0.2j, 70000 - 1j])   # 70000 -> inf
    assert torch.tensor(1 + 2j, dtype=torch.chalf).item() == 1 + 2j
    assert torch.zeros_like(t).dtype is torch.chalf and torch.ones_like(t).tolist() == [1 + 0j, 1 + 0j]


def test_chalf_printing():
    t = torch.tensor([0.1 + 0.2j, 1.5], dtype=torch.chalf)
    assert repr(t) == "tensor([0.1000+0.2000j, 1.5000+0.0000j], dtype=torch.complex32)"
    assert repr(torch.tensor(1 + 2j, dtype=torch.chalf)) == "tensor(1.+2.j, dtype=torch.complex32)"


def test_chalf_conversions():
    src = [1.0005 + 0.00012j, -3.25 + 2j]
    c = torch.tensor(src, dtype=torch.cdouble).chalf()
    assert c.dtype is torch.chalf and c.tolist() == _parts16(src)      # each part rounded from float64
    assert c.to(torch.cfloat).dtype is torch.cfloat and c.to(torch.cdouble).tolist() == _parts16(src)
    assert torch.tensor([1, 2]).to(torch.chalf).tolist() == [1 + 0j, 2 + 0j]
    assert torch.tensor([True, False]).to(torch.chalf).tolist() == [1 + 0j, 0j]
    assert torch.tensor([1j, 0], dtype=torch.chalf).bool().tolist() == [True, False]       # either part nonzero
    with pytest.warns(UserWarning, match="Casting complex values to real discards the imaginary part"):
        r = c.to(torch.float32)
    assert r.tolist() == [v.real for v in _parts16(src)]
    d = torch.zeros(2, dtype=torch.chalf)
    d.copy_(torch.tensor([1.5, -2.0]))
    assert d.tolist() == [1.5 + 0j, -2 + 0j]
    e = torch.zeros(2, dtype=torch.cfloat).copy_(c)
    assert e.tolist() == _parts16(src)
    with pytest.raises(TypeError, match="Got unsupported ScalarType ComplexHalf"):
        c.numpy()
    with pytest.raises(TypeError, match="Got unsupported ScalarType ComplexHalf"):
        np.asarray(c)


def test_chalf_views_share_storage():
    c = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.chalf)
    r = torch.view_as_real(c)
    assert r.dtype is torch.float16 and r.shape == (2, 2) and r.tolist() == [[1, 2], [3, -4]]
    assert c.real.dtype is torch.float16 and c.real.tolist() == [1, 3] and c.imag.tolist() == [2, -4]
    r[0, 1] = 5
    c.imag[1] = 0.5
    assert c.tolist() == [1 + 5j, 3 + 0.5j]
    h = torch.tensor([[1.0, 2.0], [3.0, 4.0]]).half()
    z = torch.view_as_complex(h)
    assert z.dtype is torch.chalf and z.tolist() == [1 + 2j, 3 + 4j]
    assert c[1].shape == () and c[1].item() == 3 + 0.5j and c.reshape(2, 1).t().tolist() == [[1 + 5j, 3 + 0.5j]]


def test_chalf_ops_torch_runs_on_cpu():
    a = torch.tensor([0.7373 + 0.5j, 0.2766, -0.6821 - 1j], dtype=torch.chalf)
    av = np.array(_parts16([0.7373 + 0.5j, 0.2766, -0.6821 - 1j]))
    # computed in complex64 then rounded to float16 parts (PyTorch's complex<Half> arithmetic)
    assert (a + 1).dtype is torch.chalf and (a + 1).tolist() == _parts16((av + 1).astype(np.complex64))
    assert (a * a).tolist() == _parts16((av * av).astype(np.complex64))
    assert (a - a).tolist() == [0j] * 3 and (-a).tolist() == _parts16(-av)
    assert (a * 1j).tolist() == _parts16(av * 1j)
    ab = a.abs()
    assert ab.dtype is torch.float16 and ab.tolist() == np.abs(av.astype(np.complex64)).astype(np.float16).tolist()
    assert (a == a).tolist() == [True] * 3 and (a != a).tolist() == [False] * 3
    assert torch.cat([a, a]).tolist() == av.tolist() * 2 and torch.cat([a, a]).dtype is torch.chalf
    assert a[[0, 2]].tolist() == [av[0], av[2]] and a.clone().tolist() == av.tolist()
    assert a.clone().fill_(2j).tolist() == [2j] * 3 and a.clone().zero_().tolist() == [0j] * 3
    assert torch.where(torch.tensor([True, False, True]), a, 0).tolist() == [av[0], 0j, av[2]]
    assert a.conj().tolist() == np.conj(av).tolist() and a.conj().resolve_conj().tolist() == np.conj(av).tolist()
    assert a.roll(1).tolist() == np.roll(av, 1).tolist() and a.repeat(2).tolist() == av.tolist() * 2
    b = a.clone()
    b.add_(a)
    b[0] = 3 + 4j
    assert b.dtype is torch.chalf and b.tolist() == [3 + 4j] + _parts16((2 * av[1:]).astype(np.complex64))
    assert (a + torch.ones(3)).dtype is torch.cfloat          # complex32 beside float32: complex64, as PyTorch
    h = torch.tensor([1.0, 2.5]).half()
    assert (h * 1j).dtype is torch.chalf and (h * 1j).tolist() == [1j, 2.5j]
    assert (h + a[:2]).dtype is torch.chalf


@pytest.mark.parametrize("call, msg", [
    (lambda a: a.sum(), '"sum_cpu" not implemented for \'ComplexHalf\''),
    (lambda a: a / a, '"div_cpu" not implemented for \'ComplexHalf\''),
    (lambda a: a.exp(), '"exp_vml_cpu" not implemented for \'ComplexHalf\''),
    (lambda a: a.reshape(3, 1) @ a.reshape(1, 3), '"addmm_impl_cpu_" not implemented for \'ComplexHalf\''),
    (lambda a: a.flip(0), '"flip_cpu" not implemented for \'ComplexHalf\''),
    (lambda a: a.cumsum(0), '"cumsum_out_cpu" not implemented for \'ComplexHalf\''),
    (lambda a: torch.arange(2, dtype=torch.chalf), '"arange_cpu" not implemented for \'ComplexHalf\''),
    (lambda a: torch.eye(2, dtype=torch.chalf), '"eye" not implemented for \'ComplexHalf\''),
])
def test_chalf_ops_torch_refuses_on_cpu(call, msg):
    a = torch.tensor([1 + 2j, 0.5, -1j], dtype=torch.chalf)
    with pytest.raises(NotImplementedError, match=msg):
        call(a)


def test_chalf_fft_refused_and_autograd():
    with pytest.raises(RuntimeError, match="MKL FFT doesn't support tensors of type: Half"):
        torch.fft.fft(torch.zeros(4, dtype=torch.chalf))
    z = torch.tensor([1 + 2j, 3.5 - 1j], requires_grad=True)
    w = z.chalf()
    (g,) = torch.autograd.grad((w * w).real.float().sum(), z)
    # d/dz Re(z^2) -> the conjugate Wirtinger gradient 2 * conj(z)
    assert g.dtype is torch.cfloat and g.tolist() == [2 - 4j, 7 + 2j]


# ---------------------------------------------------------------------------------------------- the negative bit


def test_neg_view_semantics():
    a = torch.tensor([1 + 2j, 3 - 1j])
    n = torch._neg_view(a)
    assert n.is_neg() and torch.is_neg(n) and not a.is_neg() and n._base is a and n.data_ptr() == a.data_ptr()
    assert n.tolist() == [-1 - 2j, -3 + 1j] and not torch._neg_view(n).is_neg()
    assert torch._neg_view(torch.tensor([1.0, 2.0])).is_neg() and torch._neg_view(torch.tensor([1, 2])).tolist() == [-1, -2]
    r = n.resolve_neg()
    assert not r.is_neg() and r.tolist() == [-1 - 2j, -3 + 1j] and r.data_ptr() != a.data_ptr()
    assert a.resolve_neg() is a and torch.resolve_neg(n).tolist() == r.tolist() and n.resolve_conj() is n
    assert (n + 1).tolist() == [-2j, -2 + 1j] and not (n + 1).is_neg() and not n.clone().is_neg()
    assert n.reshape(2, 1).T.is_neg() and n.real.is_neg() and n.real.tolist() == [-1, -3]
    assert torch.view_as_real(n).tolist() == [[-1, -2], [-3, 1]]
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that has negative bit set. Use "
                                           "tensor.resolve_neg\\(\\).numpy\\(\\) instead."):
        n.numpy()
    with pytest.raises(RuntimeError, match="torch.Tensor.view is not supported for tensors with negative bit set "
                                           "when converting to a different dtype."):
        n.view(torch.float64)


def test_conj_imag_is_a_negative_view_and_bits_combine():
    b = torch.tensor([1 + 2j, 3 - 1j])
    ci = b.conj().imag
    assert ci.is_neg() and ci._base is b and ci.tolist() == [-2, 1]
    ci[0] = 5.0                 # stored as -5 in the imaginary part of b
    assert b.tolist() == [1 - 5j, 3 - 1j]
    both = torch._neg_view(b.conj())
    assert both.is_neg() and both.is_conj() and both.tolist() == [-1 - 5j, -3 - 1j]
    assert not both.imag.is_neg() and both.imag.tolist() == [-5, -1]
    for r in (both.resolve_conj(), both.resolve_neg()):     # either resolves both bits, as PyTorch's
        assert not r.is_neg() and not r.is_conj() and r.tolist() == [-1 - 5j, -3 - 1j]


def test_writes_through_a_negative_view():
    b = torch.tensor([1 + 2j, 3 - 1j])
    nb = torch._neg_view(b)
    nb.add_(1)
    assert b.tolist() == [-0.0 + 2j, 2 - 1j] and nb.tolist() == [-2j, -2 + 1j]
    nb[0] = 10
    assert b[0].item() == -10 and np.signbit(b.imag[0].item())        # -(10+0j) = -10-0j
    out = torch.zeros(2, dtype=torch.cfloat)
    torch.mul(torch.tensor([1 + 2j, 3j]), torch.tensor([1j, 1]), out=torch._neg_view(out))
    assert out.tolist() == [2 - 1j, -3j]


def test_neg_view_gradient():
    x = torch.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    y = torch._neg_view(x)
    assert y.grad_fn.name() == "NegViewBackward0"
    w = torch.tensor([1 + 2j, 3j])
    (g,) = torch.autograd.grad((y * w).sum().abs(), x)
    # L = |s|, s = -sum(x w): dL/dconj(x) = -conj(w) * s / |s|
    s = -((1 + 1j) * (1 + 2j) + (2 - 1j) * 3j)
    np.testing.assert_allclose(g.numpy(), -np.conj([1 + 2j, 3j]) * s / abs(s), rtol=1e-6)
    assert torch._neg_view(x).resolve_neg().grad_fn.name() == "CloneBackward0"


# ---------------------------------------------------------------------------------------------- conj views written in place


def test_inplace_on_conj_view_under_autograd():
    a0 = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    bb = torch.tensor([2 - 1j, 1 + 1j], requires_grad=True)
    w = np.array([1 + 1j, 2j])
    a = a0 * 1
    x = a.conj()
    x.mul_(bb)
    # x reads conj(a0) * b, so a holds a0 * conj(b)
    a_val = np.array([1 + 2j, 3 - 1j]) * np.conj([2 - 1j, 1 + 1j])
    np.testing.assert_allclose(a.detach().numpy(), a_val)
    assert x.is_conj() and a.grad_fn.name() == "CopySlices" and x.grad_fn.name() == "ConjBackward0"
    ga, gb = torch.autograd.grad((a * torch.tensor(w)).sum().abs(), (a0, bb))
    # L = |s|, s = sum(a0 conj(b) w): dL/dconj(a0) = conj(conj(b) w) s/|s|, dL/dconj(b) = a0 w conj(s/|s|)
    s = (a_val * w).sum()
    u = s / abs(s)
    np.testing.assert_allclose(ga.numpy(), np.conj(np.conj([2 - 1j, 1 + 1j]) * w) * u, rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), np.array([1 + 2j, 3 - 1j]) * w * np.conj(u), rtol=1e-6)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation."):
        a0.conj().mul_(bb)


def test_out_into_conj_view_writes_the_conjugate():
    base = torch.zeros(2, dtype=torch.cfloat)
    torch.mul(torch.tensor([1 + 2j, 3j]), torch.tensor([1j, 1]), out=base.conj())
    assert base.tolist() == [-2 - 1j, -3j]
    m = torch.zeros(2, 2, dtype=torch.cfloat)
    torch.matmul(torch.tensor([[1 + 2j, 3j], [1, 1]]), torch.eye(2, dtype=torch.cfloat), out=m.conj())
    assert m.tolist() == [[1 - 2j, -3j], [1, 1]]
    a = torch.tensor([1 + 2j], requires_grad=True) * 1
    with pytest.raises(RuntimeError, match="mul\\(\\): functions with out=... arguments don't support automatic "
                                           "differentiation, but one of the arguments requires grad."):
        torch.mul(a, a, out=a.conj())


def test_detach_keeps_the_bits():
    a = torch.tensor([1 + 2j])
    assert a.conj().detach().is_conj() and a.conj().detach().tolist() == [1 - 2j]
    assert torch._neg_view(a).detach().is_neg() and torch._neg_view(a).detach().tolist() == [-1 - 2j]


# ---------------------------------------------------------------------------------------------- forward-mode AD


_P = np.array([1 + 2j, 0.5 - 1j, -2 + 0.25j])
_T = np.array([0.3 - 1j, 2 + 0.5j, -1j])
_Q = np.array([2 - 1j, 1 + 1j, 0.5j])
_M = np.array([[1 + 1j, 2], [0.5j, -1], [3, 1 - 1j]])


def _tangent(f):
    fwAD = torch.autograd.forward_ad
    with fwAD.dual_level():
        out = f(fwAD.make_dual(torch.tensor(_P), torch.tensor(_T)))
        return fwAD.unpack_dual(out).tangent.numpy()


@pytest.mark.parametrize("f, expected", [
    # holomorphic: f'(z) t
    (lambda x: x.exp(), np.exp(_P) * _T),
    (lambda x: x * torch.tensor(_Q), _Q * _T),
    (lambda x: x * x, 2 * _P * _T),
    (lambda x: x / torch.tensor(_Q), _T / _Q),
    (lambda x: torch.tensor(_Q) / x, -_Q / _P ** 2 * _T),
    (lambda x: x.sin(), np.cos(_P) * _T),
    (lambda x: x.log(), _T / _P),
    (lambda x: x.sqrt(), _T / (2 * np.sqrt(_P))),
    (lambda x: x.tanh(), (1 - np.tanh(_P) ** 2) * _T),
    (lambda x: x.reciprocal(), -_T / _P ** 2),
    (lambda x: x.sum(), _T.sum()),
    (lambda x: x.prod(), np.prod(_P) * (_T / _P).sum()),
    (lambda x: x @ torch.tensor(_M), _T @ _M),
    (lambda x: torch.tensor(_M).T @ x, _M.T @ _T),
    # not holomorphic: the real-linear map of the tangent
    (lambda x: x.conj_physical(), np.conj(_T)),
    (lambda x: x.conj() * 1, np.conj(_T)),
    (lambda x: x.abs(), np.real(np.conj(_P / abs(_P)) * _T)),
    (lambda x: x.angle(), np.imag(_T * np.conj(_P)) / abs(_P) ** 2),
    (lambda x: x.real * 1, _T.real),
    (lambda x: x.imag * 1, _T.imag),
    (lambda x: torch.view_as_real(x) * 1, np.stack([_T.real, _T.imag], -1)),
    (lambda x: x.sgn(), (_T - np.real(_T * np.conj(_P / abs(_P))) * _P / abs(_P)) / abs(_P)),
    (lambda x: torch._neg_view(x) * 1, -_T),
])
def test_forward_ad_complex_tangents(f, expected):
    np.testing.assert_allclose(_tangent(f), expected, rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------------------------------- ordering complex numbers


_C = [1 + 2j, 3]
_ORDERING_REFUSALS = [
    (lambda c: c >= c, NotImplementedError, "\"ge_cpu\" not implemented for '{}'"),
    (lambda c: c > 1, NotImplementedError, "\"gt_cpu\" not implemented for '{}'"),
    (lambda c: c <= c, NotImplementedError, "\"le_cpu\" not implemented for '{}'"),
    (lambda c: c.lt(c), NotImplementedError, "\"lt_cpu\" not implemented for '{}'"),
    (lambda c: c.max(), NotImplementedError, "\"max_all\" not implemented for '{}'"),
    (lambda c: c.min(), NotImplementedError, "\"min_all\" not implemented for '{}'"),
    (lambda c: c.max(0), RuntimeError, "max(): does not support complex input"),
    (lambda c: c.amax(), NotImplementedError, "\"max_values_cpu\" not implemented for '{}'"),
    (lambda c: c.amin(), NotImplementedError, "\"min_values_cpu\" not implemented for '{}'"),
    (lambda c: c.aminmax(), NotImplementedError, "\"aminmax_cpu\" not implemented for '{}'"),
    (lambda c: c.sort(), RuntimeError, " Sort does not support complex dtypes on CPU"),
    (lambda c: c.argsort(), RuntimeError, " Sort does not support complex dtypes on CPU"),
    (lambda c: c.topk(1), RuntimeError, " topk does not support complex dtypes on CPU"),
    (lambda c: torch.maximum(c, c), RuntimeError, "maximum not implemented for complex tensors."),
    (lambda c: torch.max(c, c), RuntimeError, "maximum not implemented for complex tensors."),
    (lambda c: torch.fmin(c, c), RuntimeError, "fmin not implemented for complex tensors."),
    (lambda c: c.clamp(0, 1), NotImplementedError, "clamp is not supported for complex types"),
    (lambda c: c.clamp(min=0), NotImplementedError, "clamp is not supported for complex types"),
    (lambda c: c.argmax(), RuntimeError, "argmax(): does not support complex input"),
    (lambda c: c.cummax(0), NotImplementedError, "\"cummax_cpu\" not implemented for '{}'"),
    (lambda c: c.kthvalue(1), NotImplementedError, "\"kthvalue_cpu\" not implemented for '{}'"),
    (lambda c: c.median(), NotImplementedError, "\"median_cpu\" not implemented for '{}'"),
    (lambda c: c.floor(), NotImplementedError, "floor is not supported for complex inputs"),
    (lambda c: c.sign(), NotImplementedError, "Unlike NumPy, torch.sign is not intended to support complex numbers. "
                                              "Please use torch.sgn instead."),
    (lambda c: c.unique(), NotImplementedError, "\"unique\" not implemented for '{}'"),
]


@pytest.mark.parametrize("call, cls, msg", _ORDERING_REFUSALS)
@pytest.mark.parametrize("dtype", [torch.cfloat, torch.cdouble])
def test_ordering_complex_numbers_is_refused(call, cls, msg, dtype):
    with pytest.raises(cls) as err:
        call(torch.tensor(_C, dtype=dtype))
    assert str(err.value) == msg.format(dtype.short)


def test_ordering_complex32_is_refused_alike():
    c = torch.tensor(_C, dtype=torch.chalf)
    with pytest.raises(NotImplementedError, match="\"ge_cpu\" not implemented for 'ComplexHalf'"):
        c >= c
    with pytest.raises(RuntimeError, match=" Sort does not support complex dtypes on CPU"):
        c.sort()


def test_view_as_real_and_complex_copies():
    x = torch.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    r = torch.view_as_real_copy(x)
    assert r.tolist() == [[1, 2], [3, -1]] and r._base is None and r.is_contiguous()
    assert r.grad_fn.name() == "ViewAsRealBackward0_copy"
    (g,) = torch.autograd.grad((r * torch.tensor([[1.0, 2.0], [3.0, 4.0]])).sum(), x)
    assert g.tolist() == [1 + 2j, 3 + 4j]          # d/dRe + i d/dIm
    assert torch.view_as_real_copy(x.detach().conj()).tolist() == [[1, -2], [3, 1]]
    assert torch.view_as_real_copy(torch.zeros(2, dtype=torch.chalf)).dtype is torch.float16
    f = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    c = torch.view_as_complex_copy(f)
    assert c.tolist() == [1 + 2j, 3 + 4j] and c._base is None
    c[0] = 0
    assert f.tolist() == [[1, 2], [3, 4]]
    with pytest.raises(RuntimeError, match="view_as_complex_copy does not support automatic differentiation for "
                                           "outputs with complex dtype."):
        torch.view_as_complex_copy(f.requires_grad_())
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex tensors"):
        torch.view_as_real_copy(torch.ones(2))
