"""Issue 25's last complex gaps: predicates and boolean reductions, std/var and norms, addcmul/addcdiv, random
factories, division by zero, complex32 odds (torch.complex of halves, sum(dtype=), the experimental warning),
checkpoints (complex32, conjugate/negative bits; tests/fixtures/torch_ckpt/complex.pt is torch's) and out= resizes.
Expected values are derived by hand or with NumPy."""
import io
import pathlib
import subprocess
import sys
import warnings

import numpy as np
import pytest

import reftorch as torch

nan, inf = float("nan"), float("inf")
VALUES = [1 + 2j, complex(nan, 0), complex(0, nan), complex(inf, 0), complex(0, -inf), 0j, 3 + 0j]
FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "torch_ckpt"


@pytest.mark.parametrize("dt", [torch.cfloat, torch.cdouble, torch.chalf])
def test_predicates_and_boolean_reductions(dt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (complex32's experimental warning)
        x = torch.tensor(VALUES, dtype=dt)
    v = np.array(VALUES)
    assert torch.isnan(x).tolist() == np.isnan(v).tolist()
    assert torch.isinf(x).tolist() == np.isinf(v).tolist()
    assert torch.isfinite(x).tolist() == np.isfinite(v).tolist()
    assert torch.isreal(x).tolist() == [False, True, False, True, False, True, True]
    assert torch.isnan(x.conj()).tolist() == np.isnan(v).tolist()
    assert torch.nonzero(x).tolist() == [[0], [1], [2], [3], [4], [6]]
    assert torch.where(x)[0].tolist() == [0, 1, 2, 3, 4, 6]
    assert torch.any(x).item() is True and torch.all(x).item() is False
    assert torch.count_nonzero(x).item() == 6 and torch.count_nonzero(x.reshape(7, 1), dim=0).tolist() == [6]
    assert torch.any(x.reshape(7, 1), dim=1).tolist() == [True] * 5 + [False, True]
    assert torch.isclose(x, x, equal_nan=True).all().item()
    for name in ("isposinf", "isneginf"):
        with pytest.raises(RuntimeError, match=f"^{name} does not support complex inputs.$"):
            getattr(torch, name)(x)
    with pytest.raises(NotImplementedError, match="^signbit is not implemented for complex tensors.$"):
        torch.signbit(x)


def test_logical_ops_and_nan_to_num():
    x = torch.tensor(VALUES)
    assert torch.logical_not(x).tolist() == [False] * 5 + [True, False]
    assert torch.logical_and(x, x).tolist() == [True] * 5 + [False, True]
    big = float(np.finfo(np.float32).max)
    assert torch.nan_to_num(x).tolist() == [1 + 2j, 0j, 0j, big + 0j, complex(0, -big), 0j, 3 + 0j]
    assert torch.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0).tolist() == [1 + 2j, 1 + 0j, 1j, 2 + 0j, -2j, 0j,
                                                                              3 + 0j]
    a = torch.tensor([complex(nan, 1), 2 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="nan_to_num does not support automatic differentiation for outputs "
                                           "with complex dtype."):     # torch 2.13 refuses it
        torch.nan_to_num(a)
    h = torch.tensor([1j], dtype=torch.chalf)
    with pytest.raises(NotImplementedError, match="\"logical_not_cpu\" not implemented for 'ComplexHalf'"):
        torch.logical_not(h)
    with pytest.raises(NotImplementedError, match="\"nan_to_num\" not implemented for 'ComplexHalf'"):
        torch.nan_to_num(h)
    with pytest.raises(RuntimeError, match="^nansum on CPU does not support complex inputs$"):
        torch.nansum(x)


Z = [[1 + 2j, -3 + 0.5j, 0.25 - 1j], [2 - 2j, 0j, 1 + 1j]]


@pytest.mark.parametrize("dt, real", [("complex64", "float32"), ("complex128", "float64")])
def test_std_var_real_results_and_gradients(dt, real):
    x = torch.tensor(Z, dtype=getattr(torch, dt))
    z = np.array(Z)
    assert torch.var(x).dtype is getattr(torch, real)
    np.testing.assert_allclose(torch.var(x).item(), np.var(z, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(torch.std(x, dim=1, correction=0).numpy(), np.std(z, axis=1), rtol=1e-6)
    s, m = torch.std_mean(x, dim=0)
    np.testing.assert_allclose(s.numpy(), np.std(z, axis=0, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(m.numpy(), z.mean(0), rtol=1e-6)
    a = x.clone().requires_grad_()
    torch.var(a, dim=0).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * (z - z.mean(0)), rtol=1e-6)      # 2 (x - mean) / (n - 1)


@pytest.mark.parametrize("ord", [1, 2, 3, inf, 0.5])
def test_vector_norm_complex_values_and_gradients(ord):
    x = torch.tensor(Z, dtype=torch.cdouble, requires_grad=True)
    z, m = np.array(Z), np.abs(np.array(Z))
    n = torch.linalg.vector_norm(x, ord=ord)
    expected = m.max() if ord == inf else (m ** ord).sum() ** (1 / ord)
    assert n.dtype is torch.float64
    np.testing.assert_allclose(n.item(), expected, rtol=1e-12)
    n.backward()
    phase = np.where(m == 0, 0, z / np.where(m == 0, 1, m))
    if ord == inf:
        grad = phase * (m == m.max())
    else:
        with np.errstate(divide="ignore"):
            grad = phase * np.where(m == 0, 0, m ** (ord - 1)) / expected ** (ord - 1)
    np.testing.assert_allclose(x.grad.numpy(), grad, rtol=1e-9, atol=1e-12)


def test_norm_forms_on_complex():
    x = torch.tensor(Z)
    fro = np.sqrt((np.abs(np.array(Z)) ** 2).sum())
    for n in (torch.norm(x), torch.linalg.norm(x), torch.linalg.matrix_norm(x), x.norm()):
        assert n.dtype is torch.float32
        np.testing.assert_allclose(n.item(), fro, rtol=1e-6)
    np.testing.assert_allclose(torch.norm(x, p=1, dim=0).numpy(), np.abs(np.array(Z)).sum(0), rtol=1e-6)
    assert torch.linalg.vector_norm(x, dtype=torch.cdouble).dtype is torch.float64


def test_addcmul_addcdiv_complex():
    s = torch.tensor([1 + 1j, 2 + 0j], requires_grad=True)
    a = torch.tensor([2 - 1j, 1j], requires_grad=True)
    b = torch.tensor([1 + 2j, 4 + 0j], requires_grad=True)
    v = 2 - 1j
    out = torch.addcmul(s, a, b, value=v)
    sv, av, bv = np.array([1 + 1j, 2]), np.array([2 - 1j, 1j]), np.array([1 + 2j, 4])
    np.testing.assert_allclose(out.detach().numpy(), sv + v * av * bv)
    out.abs().sum().backward()
    g = np.conj(out.detach().numpy()) / np.abs(out.detach().numpy())
    g = np.conj(g)      # the gradient of |out| is out / |out|; each input's is that times the conjugated partial
    np.testing.assert_allclose(a.grad.numpy(), g * np.conj(v * bv), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), g * np.conj(v * av), rtol=1e-6)
    d = torch.addcdiv(s.detach(), a.detach(), b.detach(), value=0.5j)
    np.testing.assert_allclose(d.numpy(), sv + 0.5j * av / bv, rtol=1e-6)
    h = torch.tensor([1j], dtype=torch.chalf)
    assert torch.addcmul(h, h, h).tolist() == [1j - 1]
    with pytest.raises(NotImplementedError, match="\"addcdiv_cpu_out\" not implemented for 'ComplexHalf'"):
        torch.addcdiv(h, h, h)


def test_complex_division_by_zero_as_torch():
    a = torch.tensor([1 + 1j, 2j, 0j, 1 + 0j], dtype=torch.cdouble)
    r = (a / torch.tensor([0.0], dtype=torch.float64)).tolist()
    assert [(np.isnan(c.real) or c.real, np.isnan(c.imag) or c.imag) for c in r] == \
        [(inf, inf), (True, inf), (True, True), (inf, True)]        # True: NaN (each part over zero)
    assert (a / (2 - 1j)).tolist() == pytest.approx((a.numpy() / (2 - 1j)).tolist())


@pytest.mark.parametrize("dt", [torch.cfloat, torch.cdouble])
def test_random_complex_factories(dt):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(40000, dtype=dt, generator=g)
    assert x.dtype is dt
    assert abs(x.real.var().item() - 0.5) < 0.03 and abs(x.imag.var().item() - 0.5) < 0.03   # each N(0, 1/2)
    g.manual_seed(3)
    pairs = torch.randn(40000, 2, dtype=x.real.dtype, generator=g) * np.sqrt(0.5)
    np.testing.assert_allclose(torch.view_as_real(x).numpy(), pairs.numpy(), rtol=1e-6)   # interleaved draws
    u = torch.rand(40000, dtype=dt, generator=g)
    assert 0 <= u.real.min().item() and u.real.max().item() < 1 and 0 <= u.imag.min().item()
    assert abs(u.imag.mean().item() - 0.5) < 0.02
    assert torch.randn_like(u).dtype is dt and torch.rand_like(u).dtype is dt
    e = torch.empty(40000, dtype=dt).uniform_(1, 2)
    assert 1 <= e.real.min().item() and e.imag.max().item() < 2
    n = torch.empty(40000, dtype=dt).normal_(1, 2)
    assert abs(n.imag.mean().item() - 1) < 0.05 and abs(n.real.std().item() - 2 ** 0.5) < 0.05
    with pytest.raises(RuntimeError, match="check_random_bounds handles only integral, floating-point and boolean"):
        torch.randint(3, (2,), dtype=dt)


def test_chalf_complex_of_halves_and_sum_dtype():
    h = torch.tensor([1.5, -2.0], dtype=torch.half, requires_grad=True)
    z = torch.complex(h, h * 0 + 0.25)
    assert z.dtype is torch.chalf and z.tolist() == [1.5 + 0.25j, -2 + 0.25j]
    z.real.sum().backward()
    assert h.grad.dtype is torch.half and h.grad.tolist() == [1.0, 1.0]
    f = torch.ones(1)
    with pytest.raises(RuntimeError, match="^Expected object of scalar type Float but got scalar type Double for "
                                           "second argument$"):
        torch.complex(f, f.double())
    with pytest.raises(RuntimeError, match="^Expected both inputs to be Half, Float or Double tensors but got "
                                           "BFloat16 and BFloat16$"):
        torch.complex(f.bfloat16(), f.bfloat16())
    c = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.chalf)
    s = c.sum(dtype=torch.cfloat)
    assert s.dtype is torch.cfloat and s.item() == 4 + 1j
    assert c.sum(dtype=torch.cdouble).dtype is torch.cdouble and c.mean(dtype=torch.cfloat).item() == 2 + 0.5j
    with pytest.raises(NotImplementedError, match="\"sum_cpu\" not implemented for 'ComplexHalf'"):
        c.sum()


def test_chalf_experimental_warning_once_at_first_allocation():
    code = ("import warnings, reftorch as torch\nwarnings.simplefilter('always')\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    torch.empty(2, 2, dtype=torch.half).view(torch.chalf)\n"     # a view allocates nothing
            "    a = len(w)\n"
            "    torch.zeros(2, dtype=torch.chalf)\n"
            "    torch.ones(3).to(torch.chalf)\n"
            "print(a, [str(x.message) for x in w], w[-1].filename)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ("0 [\"ComplexHalf support is experimental and many operators don't support it yet.\"] "
                           "<string>")


def _roundtrip(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    return torch.load(io.BytesIO(buf.getvalue()))


def test_checkpoints_keep_complex32_and_the_bits():
    z = torch.tensor([1 + 2j, -0.5 + 0.25j])
    # z.conj() and z.conj().imag view one storage as two dtypes, which torch.save refuses (as torch): the
    # negative view comes from a storage of its own
    w = torch.tensor([1 + 2j, -0.5 + 0.25j])
    d = _roundtrip({"c32": z.chalf(), "conj": z.conj(), "neg": w.conj().imag, "both": torch._neg_view(z.conj())})
    assert d["c32"].dtype is torch.chalf and d["c32"].tolist() == [1 + 2j, -0.5 + 0.25j]
    assert d["conj"].is_conj() and d["conj"].tolist() == [1 - 2j, -0.5 - 0.25j]
    assert d["neg"].is_neg() and d["neg"].tolist() == [-2.0, -0.25]
    assert d["both"].is_conj() and d["both"].is_neg() and d["both"].tolist() == [-1 + 2j, 0.5 + 0.25j]


def test_reads_torchs_complex_checkpoint():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = torch.load(FIXTURES / "complex.pt")
    z = [[1 + 2j, -0.5 + 0.25j, 3j], [-4 + 0j, 0.125 - 8j, 2 - 2j]]
    zc = np.conj(np.array(z)).tolist()
    assert d["c64"].dtype is torch.cfloat and d["c64"].tolist() == z
    assert d["c128"].dtype is torch.cdouble and d["c128"].tolist() == z
    assert d["c32"].dtype is torch.chalf and d["c32"].tolist() == z
    assert d["conj"].is_conj() and d["conj"].tolist() == zc
    assert d["c32_conj"].is_conj() and d["c32_conj"].dtype is torch.chalf and d["c32_conj"].tolist() == zc
    assert d["neg_imag"].is_neg() and d["neg_imag"].tolist() == np.imag(zc).tolist()


def test_out_resize_into_a_conjugate_view_grows_its_storage_in_place():
    a = torch.tensor([1 + 1j, 2 - 1j, 3j])
    base = torch.zeros(2, dtype=torch.cfloat)
    o = base.conj()
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        torch.add(a, a, out=o)
    assert o.shape == (3,) and o.is_conj() and o.tolist() == [2 + 2j, 4 - 2j, 6j]
    assert base.tolist() == [2 - 2j, 4 + 2j]           # the same storage, grown: base reads the stored values
    whole = torch.zeros(2, dtype=torch.cfloat).conj()
    with pytest.warns(UserWarning):
        torch.sum(a.reshape(3, 1).expand(3, 2), 0, out=whole[:1])     # fits the storage: written in place
    assert whole.tolist() == [3 + 3j, 3 + 3j]
    r = torch.zeros(4)
    with pytest.warns(UserWarning):
        torch.add(a.real[:2], a.real[:2], out=r[1:2])  # contiguous at the view's offset
    assert r.tolist() == [0.0, 2.0, 4.0, 0.0]


def _numeric_grad(f, arrays, k, h=1e-6):
    """d f / d re + i d f / d im of input k (PyTorch's convention for a real f), by central differences."""
    g = np.zeros_like(arrays[k])
    for idx in np.ndindex(arrays[k].shape):
        for unit in (1, 1j):
            hi, lo = [a.copy() for a in arrays], [a.copy() for a in arrays]
            hi[k][idx] += h * unit
            lo[k][idx] -= h * unit
            d = (f(*[torch.tensor(a) for a in hi]).item() - f(*[torch.tensor(a) for a in lo]).item()) / (2 * h)
            g[idx] += d * unit
    return g


A = np.array([[1 + 2j, -3 + 0.5j, 0.25 - 1j], [2 - 2j, 0.5j, 1 + 1j]])
B = np.array([[0.5 + 1j, 2 - 1j], [-1 + 0.5j, 1 + 0j], [3j, -2 - 1j]])
PRODUCTS = {
    "mm": lambda a, b: torch.mm(a, b), "bmm": lambda a, b: torch.bmm(a[None], b[None]),
    "mv": lambda a, b: torch.mv(a, b[:, 0]), "dot": lambda a, b: torch.dot(a[0], b[:, 0]),
    "vdot": lambda a, b: torch.vdot(a[0], b[:, 0]), "outer": lambda a, b: torch.outer(a[0], b[0]),
    "einsum": lambda a, b: torch.einsum("ij,jk->ik", a, b), "lerp": lambda a, b: torch.lerp(a, b.t(), b.t() * 0.3),
    "inner": lambda a, b: torch.inner(a, b.t()), "cov": lambda a, b: torch.cov(a) * b.sum(),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_products_on_complex_and_their_conjugate_wirtinger_gradients(name):
    f = PRODUCTS[name]
    loss = lambda a, b: f(a, b).abs().sum()      # noqa: E731
    a, b = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
    loss(a, b).backward()
    for k, t in enumerate((a, b)):
        np.testing.assert_allclose(t.grad.numpy(), _numeric_grad(loss, [A, B], k), rtol=1e-6, atol=1e-6)


def test_product_values_and_vdot_conjugates():
    a, b = torch.tensor(A), torch.tensor(B)
    np.testing.assert_allclose(torch.mm(a, b).numpy(), A @ B)
    np.testing.assert_allclose(torch.vdot(a[0], b[:, 0]).item(), np.vdot(A[0], B[:, 0]))
    np.testing.assert_allclose(torch.dot(a[0], b[:, 0]).item(), np.dot(A[0], B[:, 0]))
    np.testing.assert_allclose(torch.cov(a).numpy(), np.cov(A))
    np.testing.assert_allclose(torch.corrcoef(a).numpy(), np.corrcoef(A), rtol=1e-12)


def test_scalars_dlpack_and_factories():
    x = torch.tensor([1 + 2j, 3j])
    assert (x == (1 + 2j)).tolist() == [True, False] and (x != 3j).tolist() == [True, False]
    assert float(torch.tensor(1.5 + 0j)) == 1.5 and int(torch.tensor(2 + 0j)) == 2
    with pytest.raises(RuntimeError, match="^value cannot be converted to type double without overflow$"):
        float(torch.tensor(1 + 1j))
    with pytest.raises(RuntimeError, match="^value cannot be converted to type int64_t without overflow$"):
        int(torch.tensor(1 + 1j))
    y = torch.from_dlpack(x)
    y[0] = 5j
    assert x.tolist() == [5j, 3j] and torch.from_dlpack(np.arange(3.0)).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(BufferError, match="^Can't export tensors with the conjugate bit set$"):
        np.from_dlpack(x.conj())
    z = torch.linspace(0, 1 + 1j, 3)
    assert z.dtype is torch.cfloat and z.tolist() == [0j, 0.5 + 0.5j, 1 + 1j]
    assert torch.linspace(0, 1, 3, dtype=torch.cdouble).tolist() == [0j, 0.5 + 0j, 1 + 0j]
    with pytest.raises(NotImplementedError, match="\"arange_cpu\" not implemented for 'ComplexFloat'"):
        torch.arange(3, dtype=torch.cfloat)


@pytest.mark.parametrize("name, kernel", [("erf", "erf_vml_cpu"), ("atan2", "atan2_cpu"), ("hypot", "hypot_cpu"),
                                          ("digamma", "digamma")])
def test_refusals_name_torchs_kernels(name, kernel):
    x = torch.tensor([1j])
    args = (x,) if name in ("erf", "digamma") else (x, x)
    with pytest.raises(NotImplementedError, match=f"\"{kernel}\" not implemented for 'ComplexFloat'"):
        getattr(torch, name)(*args)
    with pytest.raises(NotImplementedError, match="^clamp is not supported for complex types$"):
        torch.relu(x)


# torch 2.13's kernel names (ops.yaml kernel_name): no rule derives them from the op's name
@pytest.mark.parametrize("call, kernel", [
    (lambda x: torch.i0(x), "i0_vml_cpu"), (lambda x: torch.bitwise_not(x), "bitwise_not_cpu"),
    (lambda x: torch.floor_divide(x, x), "div_floor_cpu"), (lambda x: torch.div(x, 2, rounding_mode="trunc"),
                                                            "div_trunc_cpu"),
    (lambda x: torch.bitwise_and(x, x), "bitwise_and_cpu"), (lambda x: torch.special.xlog1py(x, x), "xlog1py_cpu"),
    (lambda x: torch.special.zeta(x, 1.0), "zeta_cpu"), (lambda x: torch.nextafter(x, x), "nextafter_cpu"),
    (lambda x: torch.unique_consecutive(x), "unique"), (lambda x: torch.nn.functional.elu(x), "elu_cpu"),
    (lambda x: torch.nn.functional.selu(x), "elu_cpu"), (lambda x: torch.nn.functional.logsigmoid(x),
                                                         "log_sigmoid_cpu"),
    (lambda x: torch.nn.functional.prelu(x, torch.ones(1, dtype=x.dtype)), "prelu_cpu")])
def test_dtype_refusals_name_torchs_kernel(call, kernel):
    with pytest.raises(NotImplementedError, match=f"^\"{kernel}\" not implemented for 'ComplexFloat'$"):
        call(torch.ones(2, dtype=torch.complex64))


def test_nextafter_refusal_names_the_common_dtype():
    for a, b, named in ((torch.int64, torch.complex64, "ComplexFloat"), (torch.bool, torch.complex128, "ComplexDouble"),
                        (torch.int32, torch.int64, "Long"), (torch.bool, torch.bool, "Bool")):
        with pytest.raises(NotImplementedError, match=f"^\"nextafter_cpu\" not implemented for '{named}'$"):
            torch.nextafter(torch.ones(2, dtype=a), torch.ones(2, dtype=b))
    assert torch.nextafter(torch.ones(2, dtype=torch.int64), torch.tensor(2.0)).tolist() == [1.0000001192092896] * 2


def test_complex32_refusal_names_the_same_kernel():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (complex32's experimental warning)
        x = torch.ones(2, dtype=torch.chalf)
    with pytest.raises(NotImplementedError, match="^\"bitwise_not_cpu\" not implemented for 'ComplexHalf'$"):
        x.bitwise_not()


def test_logsumexp_keeps_complex():
    x = torch.tensor(A, requires_grad=True)
    r = torch.logsumexp(x, 0)
    assert r.dtype is torch.cdouble
    np.testing.assert_allclose(r.detach().numpy(), np.log(np.exp(A).sum(0)), rtol=1e-12)
    loss = lambda a: torch.logsumexp(a, 0).abs().sum()      # noqa: E731
    loss(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), _numeric_grad(loss, [A], 0), rtol=1e-6, atol=1e-6)


GRADCHECKED = {
    "exp": lambda a, b: torch.exp(a), "div": lambda a, b: a / b, "abs": lambda a, b: torch.abs(a),
    "addcmul": lambda a, b: torch.addcmul(a, a, b, value=2 - 1j),
    "addcdiv": lambda a, b: torch.addcdiv(a, a, b, value=1j),
    "var": lambda a, b: torch.var(a), "vector_norm3": lambda a, b: torch.linalg.vector_norm(a, 3),
    "vdot": lambda a, b: torch.vdot(a, b), "outer": lambda a, b: torch.outer(a, b),
    "lerp": lambda a, b: torch.lerp(a, b, 0.25 + 0.5j), "logsumexp": lambda a, b: torch.logsumexp(a, 0),
}


@pytest.mark.parametrize("name", sorted(GRADCHECKED))
def test_gradcheck_and_gradgradcheck_on_complex_inputs(name):
    from reftorch.autograd import gradcheck, gradgradcheck
    a = torch.tensor([1 + 2j, -0.5 + 1j, 0.25 - 0.75j], dtype=torch.cdouble, requires_grad=True)
    b = torch.tensor([2 - 1j, 0.5 + 0.5j, -1 + 0.25j], dtype=torch.cdouble, requires_grad=True)
    assert gradcheck(GRADCHECKED[name], (a, b))
    assert gradgradcheck(GRADCHECKED[name], (a, b))


def test_gradcheck_catches_a_missing_conjugate():
    from reftorch.autograd import gradcheck

    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x            # the conjugate Wirtinger gradient is g * conj(2 x)

    a = torch.tensor([1 + 2j, -0.5 + 1j], dtype=torch.cdouble, requires_grad=True)
    assert gradcheck(Square.apply, (a,), raise_exception=False) is False


def test_logaddexp_on_complex_follows_c10():
    # values from torch 2.13: log1p(exp(min - max)) + max with min the operand of the smaller real part (the imaginary
    # part not wrapped), -inf with -inf gives that operand, a NaN part gives nan+nanj
    a = torch.tensor([1 + 2j, -1 + 0.5j, complex("-inf"), complex("nan")])
    b = torch.tensor([0.5 - 1j, 2 + 0j, complex("-inf"), 1 + 0j])
    got = torch.logaddexp(a, b).numpy()
    np.testing.assert_allclose(got[:2], [0.1050 + 1.7890j, 2.0430 + 0.0229j], atol=1e-4)
    assert got[2] == complex("-inf") and np.isnan(got[3].real) and np.isnan(got[3].imag)
    x = torch.tensor([2.7 - 4.6j], dtype=torch.complex128)
    np.testing.assert_allclose(torch.logaddexp(x, x).numpy(), x.numpy() + np.log(2))     # not wrapped by 2 pi
    ad = torch.tensor([1 + 2j, -1 + 0.5j], dtype=torch.complex128, requires_grad=True)
    bd = torch.tensor([0.5 - 1j, 2 + 0j], dtype=torch.complex128, requires_grad=True)
    assert torch.autograd.gradcheck(torch.logaddexp, (ad, bd))
    torch.logaddexp(ad, bd).abs().sum().backward()      # torch 2.13's gradients
    np.testing.assert_allclose(ad.grad.numpy(), [0.6520 + 2.3589j, 0.0426 - 0.0214j], atol=1e-4)
    np.testing.assert_allclose(bd.grad.numpy(), [-0.5934 - 1.3606j, 0.9573 + 0.0326j], atol=1e-4)
    with pytest.raises(NotImplementedError, match="\"logaddexp2_cpu\" not implemented for 'ComplexFloat'"):
        torch.logaddexp2(a, b)


def test_view_as_complex_backward_reads_a_conjugate_gradient_resolved():
    x = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=torch.float64, requires_grad=True)
    z = torch.view_as_complex(x)
    (z.conj() * torch.tensor([1 + 1j, 2 - 1j], dtype=torch.complex128)).real.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1.0, 1.0], [2.0, -1.0]])
    assert torch.autograd.gradcheck(lambda t: torch.view_as_complex(t).conj() * 2, (x.detach().requires_grad_(),))


@pytest.mark.parametrize("dt", [torch.float16, torch.float32, torch.float64])
def test_complex_node_is_complexbackward0(dt):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # (complex32's experimental warning)
        z = torch.complex(x.to(dt), x.to(dt) * 2)
    assert z.grad_fn.name() == "ComplexBackward0"


def test_reductions_take_their_dtype_from_out():
    # torch 2.13 (infer_dtype_from_optional): with out= and no dtype=, the input is cast to out's dtype first, so a
    # complex input into a real out keeps real parts (with the cast's warning) and a float one into int64 truncates
    c = torch.tensor([[1 + 2j, 3 - 1j], [2 + 0j, 1j]], dtype=torch.complex64)
    f = torch.tensor([[1.5, 2.5], [3.5, -1.0]])
    cases = [(torch.sum, c, torch.float32, [4.0, 2.0]), (torch.mean, c, torch.float32, [2.0, 1.0]),
             (torch.prod, c, torch.float32, [3.0, 0.0]), (torch.sum, c, torch.int64, [4, 2]),
             (torch.sum, c, torch.float64, [4.0, 2.0]), (torch.cumsum, c, torch.float32, [[1.0, 4.0], [2.0, 2.0]]),
             (torch.sum, f, torch.int64, [3, 2]), (torch.prod, f, torch.int64, [2, -3]),
             (torch.sum, f, torch.bool, [True, True]), (torch.cumprod, f, torch.int64, [[1, 2], [3, -3]]),
             (torch.mean, f, torch.complex64, [2 + 0j, 1.25 + 0j]), (torch.nansum, f, torch.float64, [4.0, 2.5])]
    for fn, x, dt, expected in cases:
        out = torch.empty(0, dtype=dt)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            assert fn(x, 1, out=out) is out
        assert out.dtype is dt and out.tolist() == expected, (fn, dt)
        if x.dtype.is_complex:
            assert [str(w.message) for w in seen] == ["Casting complex values to real discards the imaginary part"]
            assert seen[0].category is UserWarning
    with pytest.raises(RuntimeError, match="^Expected out tensor to have dtype float, but got c10::complex<float> "
                                           "instead$"):
        torch.sum(c, 1, dtype=torch.float32, out=torch.empty(0, dtype=torch.complex64))
    with pytest.raises(RuntimeError, match="^Expected out tensor to have dtype double, but got float instead$"):
        torch.cumsum(f, 1, dtype=torch.float64, out=torch.empty(0))
    with pytest.raises(RuntimeError, match="^mean\\(\\): could not infer output dtype. Input dtype must be either a "
                                           "floating point or complex dtype. Got: Long$"):
        torch.mean(torch.tensor([[1, 2]]), 1, out=torch.empty(0))


def test_a_complex_cast_to_a_real_dtype_warns_as_torch():
    c = torch.tensor([1 + 2j, 3 - 1j])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert torch.sum(c, dtype=torch.float32).item() == 4.0
        assert torch.sum(c, dtype=torch.bool).item() is True        # into bool: no warning, either part counts
    assert [(w.category, str(w.message)) for w in seen] == [
        (UserWarning, "Casting complex values to real discards the imaginary part")]


def test_refusals_in_torchs_order_and_words():
    # torch 2.13: heaviside's complex check comes before its same-dtype one; softmax's kernel along the last dim
    # (or of a 1-d input) has its own name; hardtanh refuses bool and complex in clamp's words
    c, f = torch.ones(2, 3, dtype=torch.complex64), torch.ones(2, 3)
    for a, b in ((c, f), (f, c), (c, c)):
        with pytest.raises(RuntimeError, match="^heaviside is not yet implemented for complex tensors.$"):
            torch.heaviside(a, b)
    for fn, name in ((torch.nn.functional.softmax, "softmax"), (torch.nn.functional.log_softmax, "log_softmax")):
        for x, dim, kernel in ((c, 0, f"{name}_kernel_impl"), (c, 1, f"{name}_lastdim_kernel_impl"),
                               (torch.ones(2, 3, dtype=torch.int64), -1, f"{name}_lastdim_kernel_impl"),
                               (torch.tensor(1), 0, f"{name}_lastdim_kernel_impl")):
            with pytest.raises(NotImplementedError, match=f"^\"{kernel}\" not implemented for '{x.dtype.short}'$"):
                fn(x, dim)
    with pytest.raises(RuntimeError, match="^Bool inputs not supported for hardtanh$"):
        torch.nn.functional.hardtanh(torch.ones(2, dtype=torch.bool))
    with pytest.raises(NotImplementedError, match="^clamp is not supported for complex types$"):
        torch.nn.functional.relu6(c)


def test_lerp_number_weight_with_an_imaginary_part_is_refused_for_a_real_input():
    # torch 2.13's lerp.Scalar converts the weight to self's opmath type, checked (float for 16-bit inputs)
    for dt, ctype in ((torch.float32, "float"), (torch.float64, "double"), (torch.float16, "float")):
        x = torch.ones(2, dtype=dt)
        with pytest.raises(RuntimeError, match=f"^value cannot be converted to type {ctype} without overflow$"):
            torch.lerp(x, x, 1j)
        with pytest.raises(RuntimeError, match=f"^value cannot be converted to type {ctype} without overflow$"):
            x.clone().lerp_(x, 1j)
    c = torch.ones(2, dtype=torch.complex64)
    assert torch.lerp(c, c * 3, 1j).tolist() == [1 + 2j, 1 + 2j]
    assert torch.lerp(torch.ones(2), torch.ones(2) * 3, 0.5).tolist() == [2.0, 2.0]
