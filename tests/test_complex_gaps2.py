"""Issue 25, continued: complex logcumsumexp (its scan accumulates in complex128, its gradient conjugated as
torch's FunctionsManual logcumsumexp_backward), complex linear algebra and the small leftovers. Expected values
are derived by hand or with NumPy."""
import numpy as np
import pytest

import reftorch as torch

nan, inf = float("nan"), float("inf")
RNG = np.random.default_rng(25)


def crandn(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def same_angle(a, b, tol):
    """Complex logs agree up to a multiple of 2 pi in the imaginary part."""
    d = np.asarray(a) - np.asarray(b)
    return np.allclose(d.real, 0, atol=tol) and np.allclose(np.angle(np.exp(1j * d.imag)), 0, atol=tol)


@pytest.mark.parametrize("dt, tol", [(torch.complex64, 1e-4), (torch.complex128, 1e-10)])
@pytest.mark.parametrize("dim", [0, 1])
def test_logcumsumexp_complex_values_and_gradient(dt, tol, dim):
    a = crandn(3, 4) * 2
    g = crandn(3, 4)
    x = torch.tensor(a, dtype=dt, requires_grad=True)
    y = torch.logcumsumexp(x, dim)
    assert y.dtype == dt
    ref = np.log(np.cumsum(np.exp(a), axis=dim))
    assert same_angle(y.detach().numpy(), ref, tol)
    gx, = torch.autograd.grad(y, x, torch.tensor(g, dtype=dt))
    # holomorphic: grad_i = sum_{j >= i} g_j conj(exp(x_i - y_j)) along dim
    am, gm, rm = (np.moveaxis(t, dim, -1) for t in (a, g, ref))
    want = np.zeros_like(am)
    for i in range(am.shape[-1]):
        want[..., i] = (gm[..., i:] * np.conj(np.exp(am[..., i:i + 1] - rm[..., i:]))).sum(-1)
    assert gx.dtype == dt
    assert gx.is_conj()     # as torch: the formula ends in conj()
    np.testing.assert_allclose(gx.resolve_conj().numpy(), np.moveaxis(want, -1, dim), rtol=tol * 10, atol=tol * 10)


def test_logcumsumexp_complex_stable_and_infinite():
    # exp(800) overflows float64: the scan stays in log space
    y = torch.logcumsumexp(torch.tensor([800 + 1j, 800 + 1j, complex(-inf, 0)], dtype=torch.complex64), 0)
    np.testing.assert_allclose(y.numpy(), [800 + 1j, 800 + np.log(2) + 1j, 800 + np.log(2) + 1j], rtol=1e-6)
    z = torch.logcumsumexp(torch.tensor([complex(-inf, 0), 1 + 1j, complex(inf, 1)]), 0).tolist()
    assert z[0] == complex(-inf, 0) and abs(z[1] - (1 + 1j)) < 1e-6 and z[2].real == inf
    assert torch.logcumsumexp(torch.tensor(1 + 2j), 0).item() == 1 + 2j
    x = torch.tensor(crandn(2, 3), requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch.logcumsumexp(t, 1), (x,))


def test_reflected_division_is_reciprocal_times_number():
    # torch's Tensor.__rtruediv__: reciprocal(x) * n, so 1 / 0j is (inf + nanj) * 1 = nan + nanj while
    # reciprocal(0j) and div(1, 0j) stay inf + nanj
    z = torch.tensor([0j, 2j], dtype=torch.complex64)
    assert np.isnan((1 / z)[0].item().real) and np.isnan((1 / z)[0].item().imag)
    assert (1 / z)[1].item() == -0.5j
    r = torch.reciprocal(torch.tensor(0j)).item()
    assert r.real == inf and np.isnan(r.imag)
    assert torch.div(1, torch.tensor(0j)).item().real == inf
    # two roundings: 3 / x equals reciprocal(x) * 3, not NumPy's 3 / x, wherever those differ
    a = np.arange(1, 2000, dtype=np.float64)
    got = (3 / torch.tensor(a)).numpy()
    assert np.array_equal(got, (1 / a) * 3) and not np.array_equal(got, 3 / a)
    x = torch.tensor([2.0, 4.0], requires_grad=True)
    y = 3 / x
    assert y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-0.75, -0.1875])
    assert (3 / torch.tensor([2])).dtype == torch.float32 and (3 / torch.tensor([True])).tolist() == [3.0]


@pytest.mark.parametrize("dt", [torch.float64, torch.complex128])
def test_vector_norm_ord0_has_no_gradient(dt):
    # torch's linalg_vector_norm_backward returns an undefined gradient for ord=0 (a count): grad stays None
    x = torch.tensor([1, 0, 2], dtype=dt, requires_grad=True)
    y = torch.linalg.vector_norm(x, ord=0)
    assert y.item() == 2 and y.dtype == torch.float64
    y.backward()
    assert x.grad is None
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        torch.autograd.grad(torch.linalg.vector_norm(x, ord=0, dim=0), x)
    g, = torch.autograd.grad(torch.linalg.vector_norm(x, ord=0) + x.sum().real, x)
    assert g.tolist() == [1, 1, 1]


# ---------------------------------------------------------------------------- complex linear algebra

A3 = crandn(3, 3) + 3 * np.eye(3)
H3 = A3 @ A3.conj().T + np.eye(3)
R43 = crandn(4, 3)
B32 = crandn(3, 2)
X42 = crandn(4, 2)
TAU2 = crandn(2)


def gradcheck(fn, a):
    x = torch.tensor(a, dtype=torch.complex128, requires_grad=True)
    assert torch.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-5)


@pytest.mark.parametrize("dt, real", [(torch.complex64, torch.float32), (torch.complex128, torch.float64)])
def test_linalg_complex_values_and_dtypes(dt, real):
    L = torch.linalg
    A, H, R, B = (torch.tensor(t, dtype=dt) for t in (A3, H3, R43, B32))
    tol = dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(L.det(A).numpy(), np.linalg.det(A3), **tol)
    sign, logabsdet = L.slogdet(A)
    assert sign.dtype == dt and logabsdet.dtype == real
    s, la = np.linalg.slogdet(A3)
    np.testing.assert_allclose(sign.numpy(), s, **tol)
    np.testing.assert_allclose(logabsdet.numpy(), la, **tol)
    np.testing.assert_allclose(torch.logdet(A).numpy(), np.log(np.linalg.det(A3)), **tol)
    np.testing.assert_allclose(L.inv(A).numpy(), np.linalg.inv(A3), **tol)
    np.testing.assert_allclose(L.solve(A, B).numpy(), np.linalg.solve(A3, B32), **tol)
    np.testing.assert_allclose(L.cholesky(H).numpy(), np.linalg.cholesky(H3), **tol)
    np.testing.assert_allclose(L.cholesky(H, upper=True).numpy(), np.linalg.cholesky(H3).conj().T, **tol)
    Q, Rr = L.qr(R)
    q, r = np.linalg.qr(R43)
    np.testing.assert_allclose(Q.numpy(), q, **tol)
    np.testing.assert_allclose(Rr.numpy(), r, **tol)
    S = L.svdvals(R)
    assert S.dtype == real
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(R43, compute_uv=False), **tol)
    U, S, Vh = L.svd(R, full_matrices=False)
    assert U.dtype == dt and S.dtype == real and Vh.dtype == dt
    np.testing.assert_allclose((U @ torch.diag(S).to(dt) @ Vh).numpy(), R43, **tol)
    np.testing.assert_allclose(torch.svd(R).V.resolve_conj().numpy(), Vh.mH.resolve_conj().numpy(), **tol)
    w = L.eigvalsh(H)
    assert w.dtype == real and L.eigh(H).eigenvectors.dtype == dt
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(H3), **tol)
    np.testing.assert_allclose(L.pinv(R).numpy(), np.linalg.pinv(R43), **tol)
    for ord in ("fro", "nuc", 2, -2, 1, float("inf")):
        n = L.matrix_norm(A, ord)
        assert n.dtype == real
        np.testing.assert_allclose(n.numpy(), np.linalg.norm(A3, ord), **tol)
    X = crandn(4, 2)
    np.testing.assert_allclose(L.lstsq(R, torch.tensor(X, dtype=dt)).solution.numpy(),
                               np.linalg.lstsq(R43, X, rcond=None)[0], **tol)
    LU, piv = L.lu_factor(A)
    P, Lo, U = L.lu(A)
    np.testing.assert_allclose((P @ Lo @ U).numpy(), A3, **tol)
    np.testing.assert_allclose(L.lu_solve(LU, piv, B).numpy(), np.linalg.solve(A3, B32), **tol)
    np.testing.assert_allclose(L.lu_solve(LU, piv, B, adjoint=True).numpy(), np.linalg.solve(A3.conj().T, B32), **tol)
    U3 = torch.triu(A)
    np.testing.assert_allclose(L.solve_triangular(U3, B, upper=True).numpy(), np.linalg.solve(np.triu(A3), B32), **tol)
    np.testing.assert_allclose(L.vecdot(A, A.flip(0)).numpy(), (A3.conj() * A3[::-1]).sum(-1), **tol)
    np.testing.assert_allclose(torch.cholesky_inverse(L.cholesky(H)).numpy(), np.linalg.inv(H3), **tol)
    np.testing.assert_allclose(torch.cholesky_solve(B, L.cholesky(H)).numpy(), np.linalg.solve(H3, B32), **tol)


def test_lu_pivots_by_re_plus_im():
    # LAPACK's izamax picks the pivot of the largest |re| + |im| (here 3 + 3j's 6 over 5j's 5, though |5j| > |3+3j|)
    A = torch.tensor([[5j, 1], [3 + 3j, 2]])
    LU, piv = torch.linalg.lu_factor(A)
    assert piv.tolist() == [2, 2]
    np.testing.assert_allclose(LU[0].numpy(), [3 + 3j, 2])


@pytest.mark.parametrize("name, fn, a", [
    ("det", lambda x: torch.linalg.det(x), A3),
    ("slogdet", lambda x: torch.linalg.slogdet(x), A3),
    ("inv", lambda x: torch.linalg.inv(x), A3),
    ("solve", lambda x: torch.linalg.solve(x, torch.tensor(B32)), A3),
    ("solve_B", lambda x: torch.linalg.solve(torch.tensor(A3), x), B32),
    ("cholesky", lambda x: torch.linalg.cholesky(x @ x.mH + torch.eye(3)), A3),
    ("cholesky_upper", lambda x: torch.linalg.cholesky(x @ x.mH + torch.eye(3), upper=True), A3),
    ("qr", lambda x: torch.linalg.qr(x), R43),
    ("svdvals", lambda x: torch.linalg.svdvals(x), R43),
    ("svd_invariant", lambda x: (lambda u, s, vh: (u @ vh, s))(*torch.linalg.svd(x, full_matrices=False)), R43),
    ("eigh", lambda x: (lambda w, v: (w, v @ v.mH * w.sum()))(*torch.linalg.eigh(x @ x.mH)), A3),
    ("eigvalsh", lambda x: torch.linalg.eigvalsh(x @ x.mH), A3),
    ("pinv", lambda x: torch.linalg.pinv(x), R43),
    ("matrix_norm_nuc", lambda x: torch.linalg.matrix_norm(x, "nuc"), A3),
    ("lstsq", lambda x: torch.linalg.lstsq(x, torch.tensor(X42)).solution, R43),
    ("lu", lambda x: torch.linalg.lu(x)[1:], A3),
    ("lu_factor", lambda x: torch.linalg.lu_factor(x)[0], A3),
    ("lu_solve", lambda x: (lambda lu, p: torch.linalg.lu_solve(lu, p, torch.tensor(B32), adjoint=True))(
        *torch.linalg.lu_factor(x)), A3),
    ("solve_triangular", lambda x: torch.linalg.solve_triangular(torch.triu(x), torch.tensor(B32), upper=True), A3),
    ("logdet", lambda x: torch.logdet(x), A3),
    ("vecdot", lambda x: torch.linalg.vecdot(x, x.flip(0)), A3),
    ("householder", lambda x: torch.linalg.householder_product(x, torch.tensor(TAU2)), R43),
    ("matrix_exp", lambda x: torch.linalg.matrix_exp(x * 0.3), A3),
])
def test_linalg_complex_gradcheck(name, fn, a):
    gradcheck(fn, a)


@pytest.mark.parametrize("dt", [torch.float64, torch.complex128])
def test_pinv_hermitian_gradient_is_the_general_one(dt):
    # torch's pinv has its own node (LinalgPinvBackward0, pinv_backward) whatever hermitian says: at a Hermitian
    # A the gradient is the general pseudo-inverse's, not the symmetric one an eigh path would give
    a = H3 if dt.is_complex else H3.real
    g = torch.tensor(crandn(3, 3) if dt.is_complex else RNG.standard_normal((3, 3)), dtype=dt)
    grads = []
    for hermitian in (True, False):
        x = torch.tensor(a, dtype=dt, requires_grad=True)
        y = torch.linalg.pinv(x, hermitian=hermitian)
        assert y.grad_fn.name() == "LinalgPinvBackward0"
        np.testing.assert_allclose(y.detach().numpy(), np.linalg.pinv(a), rtol=1e-8, atol=1e-10)
        grads.append(torch.autograd.grad(y, x, g)[0].numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-8, atol=1e-10)
    assert not np.allclose(grads[0], grads[0].conj().T)        # not symmetrised
    for shape in ((4, 3), (3, 4)):
        x = torch.tensor(crandn(*shape) if dt.is_complex else RNG.standard_normal(shape), dtype=dt,
                         requires_grad=True)
        assert torch.autograd.gradcheck(torch.linalg.pinv, (x,))
        assert torch.autograd.gradgradcheck(torch.linalg.pinv, (x,))


def test_complex_cross_renorm_normalize_lstsq_lu_solve_right():
    a, b = crandn(4, 3), crandn(4, 3)
    x = torch.tensor(a, requires_grad=True)
    y = torch.tensor(b, requires_grad=True)
    np.testing.assert_allclose(torch.linalg.cross(x, y).detach().numpy(), np.cross(a, b))
    assert torch.autograd.gradcheck(lambda u, v: torch.linalg.cross(u, v), (x, y))
    m = torch.tensor(crandn(3, 4) * 2)
    r = torch.renorm(m, 2, 0, 1.0)
    norms = np.linalg.norm(m.numpy(), axis=1, keepdims=True)
    np.testing.assert_allclose(r.numpy(), m.numpy() * np.where(norms > 1, 1 / (norms + 1e-7), 1.0))
    n = torch.nn.functional.normalize(m, dim=1)
    assert n.dtype == torch.complex128
    np.testing.assert_allclose(n.numpy(), m.numpy() / norms)
    tall, rhs = torch.tensor(R43, dtype=torch.complex64), torch.tensor(X42, dtype=torch.complex64)
    for driver in ("gels", "gelsy", "gelsd"):
        sol = torch.linalg.lstsq(tall, rhs, driver=driver)
        assert sol.residuals.dtype == torch.float32 and sol.singular_values.dtype == torch.float32
        np.testing.assert_allclose(sol.solution.numpy(), np.linalg.lstsq(R43, X42, rcond=None)[0], rtol=1e-4,
                                   atol=1e-5)
    A, B = torch.tensor(A3), torch.tensor(crandn(2, 3))
    LU, piv = torch.linalg.lu_factor(A)
    np.testing.assert_allclose(torch.linalg.lu_solve(LU, piv, B, left=False).numpy(), B.numpy() @ np.linalg.inv(A3))
    np.testing.assert_allclose(torch.linalg.lu_solve(LU, piv, B, left=False, adjoint=True).numpy(),
                               B.numpy() @ np.linalg.inv(A3.conj().T))
    e = torch.empty(0, 0, dtype=torch.complex128, requires_grad=True)
    assert torch.cholesky(e).requires_grad and torch.cholesky_inverse(e).shape == (0, 0)


@pytest.mark.parametrize("hermitian", [True, False])
def test_complex_ldl_factor_and_solve(hermitian):
    # zhetrf (hermitian, L D L^H) or zsytrf (complex symmetric, L D L^T), Bunch-Kaufman with |re| + |im| pivots
    a = crandn(5, 5)
    m = a + (a.conj().T if hermitian else a.T)
    for zero_diagonal in (False, True):
        if zero_diagonal:
            m = m - np.diag(np.diag(m))         # forces 2 x 2 pivots
        b = crandn(5, 2)
        for dt, tol in ((torch.complex128, 1e-10), (torch.complex64, 1e-4)):
            LD, piv, info = torch.linalg.ldl_factor_ex(torch.tensor(m, dtype=dt), hermitian=hermitian)
            assert LD.dtype == dt and piv.dtype == torch.int32 and info.item() == 0
            assert np.allclose(np.triu(LD.numpy(), 1), 0)
            if hermitian:
                assert np.allclose(np.diag(LD.numpy()).imag[piv.numpy() > 0], 0)
            if zero_diagonal:
                assert (piv.numpy() < 0).any()
            X = torch.linalg.ldl_solve(LD, piv, torch.tensor(b, dtype=dt), hermitian=hermitian)
            np.testing.assert_allclose(X.numpy(), np.linalg.solve(m, b), rtol=tol * 10, atol=tol * 10)


def test_baddbmm_complex_scalars():
    s, b1, b2 = crandn(2, 3, 4), crandn(2, 3, 5), crandn(2, 5, 4)
    r = torch.baddbmm(torch.tensor(s), torch.tensor(b1), torch.tensor(b2), beta=1 + 2j, alpha=2 + 3j)
    np.testing.assert_allclose(r.numpy(), (1 + 2j) * s + (2 + 3j) * (b1 @ b2))


def test_complex_float_power_ldexp_gradient_nonzero_static():
    z = crandn(4)
    assert torch.float_power(torch.tensor(z, dtype=torch.complex64), 2).dtype == torch.complex128
    assert torch.float_power(torch.ones(2), 1j).dtype == torch.complex128
    assert torch.float_power(torch.ones(2, dtype=torch.int64), 2).dtype == torch.float64
    np.testing.assert_allclose(torch.float_power(torch.tensor(z, dtype=torch.complex64), 2).numpy(),
                               z.astype(np.complex64).astype(np.complex128) ** 2)
    with pytest.raises(RuntimeError, match="has dtype Double but the operation's result requires dtype ComplexDouble"):
        torch.ones(2, dtype=torch.float64).float_power_(1j)
    with pytest.raises(RuntimeError, match="has dtype ComplexFloat but the operation's result requires dtype "
                                           "ComplexDouble"):
        torch.ones(2, dtype=torch.complex64).float_power_(2)
    e = torch.ldexp(torch.tensor(z, dtype=torch.complex64), torch.tensor([1 + 0j, 2, 0, -1], dtype=torch.complex64))
    assert e.dtype == torch.complex64
    np.testing.assert_allclose(e.numpy(), z * np.array([2, 4, 1, 0.5]), rtol=1e-6)
    g, = torch.gradient(torch.tensor(z))
    assert g.dtype == torch.complex128
    np.testing.assert_allclose(g.numpy(), np.gradient(z))
    nz = torch.nonzero_static(torch.tensor([0j, 1j, 0, 2 + 0j]), size=3)
    assert nz.tolist() == [[1], [3], [-1]]


def test_complex_silu_pairwise_distance_as_strided_grad():
    z = crandn(5)
    x = torch.tensor(z, requires_grad=True)
    np.testing.assert_allclose(torch.nn.functional.silu(x.detach()).numpy(), z / (1 + np.exp(-z)))
    with pytest.raises(RuntimeError, match="silu does not support automatic differentiation for outputs with "
                                           "complex dtype."):          # torch 2.13 refuses it
        torch.nn.functional.silu(x)
    a, b = crandn(2, 3), crandn(2, 3)
    d = torch.nn.functional.pairwise_distance(torch.tensor(a), torch.tensor(b))
    assert d.dtype == torch.float64
    np.testing.assert_allclose(d.numpy(), np.linalg.norm(a - b + 1e-6, axis=-1))
    y = torch.tensor(crandn(3, 3), requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch.as_strided(t, (2, 2), (1, 2)), (y,))


def test_complex_conv_and_unfold():
    x, w = crandn(1, 2, 5, 5), crandn(3, 2, 3, 3)
    got = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1)
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    want = np.zeros((1, 3, 5, 5), complex)
    for o in range(3):
        for i in range(5):
            for j in range(5):
                want[0, o, i, j] = (xp[0, :, i:i + 3, j:j + 3] * w[o]).sum()     # correlation, no conjugate
    np.testing.assert_allclose(got.numpy(), want)
    u = torch.nn.functional.unfold(torch.tensor(x), 2)
    assert u.dtype == torch.complex128 and u.shape == (1, 8, 16)
    xs = torch.tensor(x[..., :3, :3], requires_grad=True)
    ws = torch.tensor(w[:, :, :2, :2], requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: torch.nn.functional.conv2d(a, b, stride=1), (xs, ws))
    assert torch.autograd.gradcheck(lambda a, b: torch.nn.functional.conv_transpose2d(a, b.transpose(0, 1)), (xs, ws))


def test_istft_two_sided_input_goes_through_irfft():
    # torch's istft without return_complex keeps a two-sided spectrum's first n_fft // 2 + 1 bins (taken as
    # Hermitian), so a non-Hermitian input gives the onesided result, not the real part of the full inverse
    x = torch.tensor(crandn(10, 4), dtype=torch.complex64)
    two = torch.istft(x, n_fft=10, window=torch.hann_window(10))
    one = torch.istft(x[:6], n_fft=10, window=torch.hann_window(10), onesided=True)
    assert two.dtype == torch.float32
    np.testing.assert_allclose(two.numpy(), one.numpy(), rtol=1e-5, atol=1e-6)
    full = torch.istft(x, n_fft=10, window=torch.hann_window(10), return_complex=True)
    assert not np.allclose(two.numpy(), full.real.numpy(), atol=1e-3)


def test_complex32_refusals_name_torchs_kernels():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = torch.eye(3).to(torch.complex32)
    with pytest.raises(NotImplementedError, match="^\"logcumsumexp_out_cpu\" not implemented for 'ComplexHalf'$"):
        torch.logcumsumexp(h, 0)
    with pytest.raises(NotImplementedError, match="^\"cross\" not implemented for 'ComplexHalf'$"):
        torch.linalg.cross(h, h)
    with pytest.raises(NotImplementedError, match="^\"linalg_svd_cpu\" not implemented for 'ComplexHalf'$"):
        torch.linalg.svdvals(h)
    with pytest.raises(RuntimeError, match="^linalg.inv: Low precision dtypes not supported. Got ComplexHalf$"):
        torch.linalg.inv(h)


def test_complex32_strided_views_compute():
    # a column of a complex32 matrix (a strided 1-D view) reads through its complex64 values
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = (torch.eye(3) * (1 + 2j)).to(torch.complex32)
    assert (h[:, 0] + 1).tolist() == [2 + 2j, 1, 1]
    assert (h[:, 0] * h[:, 0]).tolist() == [(1 + 2j) ** 2, 0, 0]
