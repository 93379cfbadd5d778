"""torch.linalg beyond the registry's fuzzing: PyTorch's error classes and messages, LAPACK's info codes and
pivots, the deprecated spellings, and results checked against torch 2.13 (numbers printed by real torch,
since CI has no torch). Values, gradients and gradgradchecks of every function come from the registry tests."""
import numpy as np
import pytest

import reftorch as torch
from reftorch import _formula_helpers
from reftorch.kernels import lapack_calls
from reftorch.autograd.gradcheck import gradcheck, gradgradcheck

A = torch.tensor([[1., 2], [2, 4]])
B = torch.stack([torch.eye(2), A])
M = torch.tensor([[4., 1, 2], [1, 3, 0], [2, 0, 5]], dtype=torch.float64)

TORCH_ERRORS = {   # torch 2.13: class, message
    "inv_singular": (lambda: torch.linalg.inv(A), "_LinAlgError", "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular."),
    "inv_batch": (lambda: torch.linalg.inv(B), "_LinAlgError", "linalg.inv: (Batch element 1): The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular."),
    "inv_rect": (lambda: torch.linalg.inv(torch.ones(2, 3)), "RuntimeError", "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices"),
    "inv_1d": (lambda: torch.linalg.inv(torch.ones(3)), "RuntimeError", "linalg.inv: The input tensor A must have at least 2 dimensions."),
    "inv_int": (lambda: torch.linalg.inv(torch.eye(2, dtype=torch.long)), "RuntimeError", "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    "chol_batch": (lambda: torch.linalg.cholesky(B), "_LinAlgError", "linalg.cholesky: (Batch element 1): The factorization could not be completed because the input is not positive-definite (the leading minor of order 2 is not positive-definite)."),
    "cholesky_batch": (lambda: torch.cholesky(B), "_LinAlgError", "cholesky: (Batch element 1): The factorization could not be completed because the input is not positive-definite (the leading minor of order 2 is not positive-definite)."),
    "cholesky_rect_int": (lambda: torch.cholesky(torch.ones(2, 3, dtype=torch.long)), "RuntimeError", "cholesky: A must be batches of square matrices, but they are 2 by 3 matrices"),
    "cholesky_ex_rect": (lambda: torch.linalg.cholesky_ex(torch.ones(2, 3)), "RuntimeError", "linalg.cholesky: A must be batches of square matrices, but they are 2 by 3 matrices"),
    "inv_rect_int": (lambda: torch.linalg.inv_ex(torch.ones(2, 3, dtype=torch.long)), "RuntimeError", "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices"),
    "inv_half": (lambda: torch.linalg.inv(torch.eye(3, dtype=torch.half)), "RuntimeError", "linalg.inv: Low precision dtypes not supported. Got Half"),
    "det_half": (lambda: torch.linalg.det(torch.eye(3, dtype=torch.half)), "NotImplementedError", "\"lu_cpu\" not implemented for 'Half'"),
    "eigvalsh_int": (lambda: torch.linalg.eigvalsh(torch.eye(3, dtype=torch.long)), "NotImplementedError", "\"linalg_eigh_cpu\" not implemented for 'Long'"),
    "svdvals_1d": (lambda: torch.linalg.svdvals(torch.ones(3)), "RuntimeError", "linalg.svd: The input tensor A must have at least 2 dimensions."),
    "svd_nan_batch": (lambda: torch.linalg.svd(torch.ones(2, 3, 3) / torch.tensor([1., 0]).view(2, 1, 1) * 0), "_LinAlgError", "linalg.svd: (Batch element 1): The algorithm failed to converge because the input matrix contained non-finite values."),
    "torch_svd_1d": (lambda: torch.svd(torch.ones(3)), "RuntimeError", "linalg.svd: input should have at least 2 dimensions, but has 1 dimensions instead"),
    "eig_int": (lambda: torch.linalg.eigvals(torch.eye(2, dtype=torch.long)), "RuntimeError", "Unknown Complex ScalarType for Long"),
    "eig_nan": (lambda: torch.linalg.eig(torch.full((2, 2), float("nan"))), "RuntimeError", "torch.linalg.eig: input tensor should not contain infs or NaNs."),
    "lu_1d": (lambda: torch.linalg.lu_factor(torch.ones(3)), "RuntimeError", "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: [3] instead"),
    "lu_int": (lambda: torch.linalg.lu(torch.eye(2, dtype=torch.long)), "NotImplementedError", "\"lu_cpu\" not implemented for 'Long'"),
    "ldl_rect": (lambda: torch.linalg.ldl_factor(torch.ones(2, 3)), "RuntimeError", "torch.linalg.ldl_factor_ex: A must be batches of square matrices, but they are 2 by 3 matrices"),
    "solve_triangular_int": (lambda: torch.linalg.solve_triangular(torch.eye(2, dtype=torch.long), torch.eye(2, dtype=torch.long), upper=True), "NotImplementedError", "\"triangular_solve_cpu\" not implemented for 'Long'"),
    "matrix_rank_int": (lambda: torch.linalg.matrix_rank(torch.eye(2, dtype=torch.long)), "RuntimeError", "This function doesn't handle types other than float and double"),
    "matrix_rank_1d": (lambda: torch.linalg.matrix_rank(torch.ones(3)), "RuntimeError", "torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions."),
    "lstsq_1d": (lambda: torch.linalg.lstsq(torch.ones(3), torch.ones(3)), "RuntimeError", "torch.linalg.lstsq: input must have at least 2 dimensions."),
    "cond_1d": (lambda: torch.linalg.cond(torch.ones(3)), "RuntimeError", "linalg.cond: The input tensor must have at least 2 dimensions."),
    "cond_int": (lambda: torch.linalg.cond(torch.eye(2, dtype=torch.long)), "RuntimeError", "linalg.svd: Expected a floating point or complex tensor as input. Got Long"),
    "pinv_half": (lambda: torch.linalg.pinv(torch.eye(3, dtype=torch.half)), "RuntimeError", "linalg.pinv(Half{[3, 3]}): expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types"),
    "vander_bool": (lambda: torch.linalg.vander(torch.ones(3, dtype=torch.bool)), "RuntimeError", "linalg.vander supports floating point, complex, and integer tensors, but got Bool"),
    "vander_n1": (lambda: torch.linalg.vander(torch.ones(3), N=1), "RuntimeError", "N must be greater than 1."),
    "norm_int": (lambda: torch.linalg.norm(torch.ones(3, dtype=torch.long)), "RuntimeError", "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    "householder_int": (lambda: torch.linalg.householder_product(torch.eye(3, dtype=torch.long), torch.ones(3, dtype=torch.long)), "NotImplementedError", "\"orgqr_cpu\" not implemented for 'Long'"),
    "cholesky_inverse_singular": (lambda: torch.cholesky_inverse(torch.stack([torch.eye(2), torch.zeros(2, 2)])), "_LinAlgError", "cholesky_inverse: (Batch element 1): The diagonal element 1 is zero, the inversion could not be completed because the input matrix is singular."),
    "eigh_nan_batch": (lambda: torch.linalg.eigh(torch.stack([torch.eye(5), torch.full((5, 5), float("nan"))])), "_LinAlgError", "linalg.eigh: (Batch element 1): The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues (error code: 4)."),
    "solve_singular_batch": (lambda: torch.linalg.solve(B, torch.ones(2, 2, 1)), "_LinAlgError", "torch.linalg.solve: (Batch element 1): The solver failed because the input matrix is singular."),
    "solve_shape": (lambda: torch.linalg.solve(torch.eye(2), torch.ones(3)), "RuntimeError", "linalg.solve: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)"),
    "solve_dtype": (lambda: torch.linalg.solve(torch.eye(2, dtype=torch.float64), torch.ones(2)), "RuntimeError", "linalg.solve: Expected A and B to have the same dtype, but found A of type Double and B of type Float instead"),
    "lu_factor_singular": (lambda: torch.linalg.lu_factor(B), "RuntimeError", "torch.linalg.lu_factor: (Batch element 1): U[2,2] is zero and using it on lu_solve would result in a division by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"),
    "lu_solve_pivots": (lambda: torch.linalg.lu_solve(torch.eye(2), torch.ones(2), torch.ones(2, 1)), "RuntimeError", "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32"),
    "eigh_uplo": (lambda: torch.linalg.eigh(torch.eye(2), UPLO='X'), "RuntimeError", "Expected UPLO argument to be 'L' or 'U', but got X"),
    "qr_mode": (lambda: torch.linalg.qr(torch.eye(2), mode='x'), "RuntimeError", "qr received unrecognized mode 'x' but expected one of 'reduced' (default), 'r', or 'complete'"),
    "multi_dot_one": (lambda: torch.linalg.multi_dot([torch.ones(3)]), "RuntimeError", "multi_dot(): expected at least 2 tensors but got 1"),
    "cross_len": (lambda: torch.linalg.cross(torch.ones(2), torch.ones(2)), "RuntimeError", "linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2"),
    "matrix_norm_ord": (lambda: torch.linalg.matrix_norm(torch.ones(3, 3), ord=3), "RuntimeError", "linalg.matrix_norm: Order 3 not supported."),
    "qr_r_backward": (lambda: torch.linalg.qr(torch.eye(2, requires_grad=True), mode='r')[1].sum().backward(), "RuntimeError", "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr."),
}


@pytest.mark.parametrize("case", sorted(TORCH_ERRORS))
def test_errors_as_torch(case):
    fn, cls, message = TORCH_ERRORS[case]
    with pytest.raises((RuntimeError, NotImplementedError)) as info:
        fn()
    assert type(info.value).__name__ == cls
    assert str(info.value) == message


def test_linalg_error_is_a_runtime_error_and_importable():
    assert issubclass(torch.linalg.LinAlgError, RuntimeError)
    # torch 2.13: <class 'torch._C._LinAlgError'>, the name in a traceback
    assert (torch.linalg.LinAlgError.__module__, torch.linalg.LinAlgError.__qualname__) == ("torch._C", "_LinAlgError")
    with pytest.raises(torch.linalg.LinAlgError):
        torch.inverse(A)


def test_info_codes_and_pivots_as_lapack():
    assert torch.linalg.inv_ex(B).info.tolist() == [0, 2]
    assert torch.linalg.cholesky_ex(B).info.tolist() == [0, 2]
    f = torch.linalg.lu_factor_ex(B)
    assert f.info.tolist() == [0, 2] and f.pivots.tolist() == [[1, 2], [2, 2]]
    assert f.pivots.dtype is torch.int32 and f.info.dtype is torch.int32
    assert torch.linalg.cholesky_ex(A).L.tolist() == [[1.0, 0.0], [2.0, 0.0]]


def test_ldl_factor_as_torch():
    f = torch.linalg.ldl_factor(M)
    assert np.allclose(f.LD.numpy(), [[4.0, 0.0, 0.0], [0.25, 2.75, 0.0], [0.5, -0.18181818181818182, 3.909090909090909]])
    assert f.pivots.tolist() == [1, 2, 3]
    N = torch.tensor([[0., 1, 2], [1, 0, 3], [2, 3, 0]], dtype=torch.float64)
    g = torch.linalg.ldl_factor(N)          # a 2 x 2 pivot block with an interchange
    assert np.allclose(g.LD.numpy(), [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.5, 0.5, -3.0]])
    assert g.pivots.tolist() == [-3, -3, 3]
    b = torch.tensor([[1.], [2], [3]], dtype=torch.float64)
    assert np.allclose((N @ torch.linalg.ldl_solve(g.LD, g.pivots, b)).numpy(), b.numpy())


def test_wide_lu_and_lu_unpack():
    W = torch.tensor([[1., 2, 3], [4, 5, 6]], dtype=torch.float64)
    P, L, U = torch.linalg.lu(W)
    assert P.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert np.allclose(L.numpy(), [[1.0, 0.0], [0.25, 1.0]]) and np.allclose(U.numpy(), [[4, 5, 6], [0, 0.75, 1.5]])
    P2, L2, U2 = torch.lu_unpack(*torch.linalg.lu_factor(W))
    assert torch.equal(P, P2) if hasattr(torch, "equal") else np.array_equal(P.numpy(), P2.numpy())
    assert np.allclose((P2 @ L2 @ U2).numpy(), W.numpy())


def test_matrix_exp_and_lstsq_as_torch():
    assert np.allclose(torch.linalg.matrix_exp(M / 4).numpy(), [[3.1784378358555023, 0.6365063816718632, 1.6238201736405626], [0.6365063816718632, 2.1911240438868025, 0.17540370514841824], [1.6238201736405626, 0.17540370514841816, 3.902646070101574]], atol=1e-13)
    X = torch.tensor([[1., 0], [1, 1], [1, 2]], dtype=torch.float64)
    y = torch.tensor([[1.], [2], [2]], dtype=torch.float64)
    r = torch.linalg.lstsq(X, y, driver="gelsd")
    assert np.allclose(r.solution.numpy(), [[7 / 6], [0.5]]) and np.allclose(r.residuals.numpy(), [1 / 6])
    assert r.rank.tolist() == 2 and np.allclose(r.singular_values.numpy(), [2.6762, 0.9153], atol=1e-4)
    default = torch.linalg.lstsq(X, y)                  # gelsy: no residuals, no singular values
    assert default.residuals.numel() == 0 and default.singular_values.numel() == 0


def test_deprecated_spellings():
    x = torch.tensor([[3., 1], [1, 2]], dtype=torch.float64)
    _formula_helpers._warned.clear()      # warned once per process: another test of this worker may have
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated"):
        L = torch.cholesky(x)
    assert np.allclose((L @ L.T).numpy(), x.numpy())
    U, S, V = torch.svd(x)
    assert np.allclose((U * S) @ V.T, x.numpy())
    Q, R = torch.qr(x)
    assert np.allclose((Q @ R).numpy(), x.numpy())
    b = torch.ones(2, 1, dtype=torch.float64)
    assert np.allclose((x @ torch.lu_solve(b, *torch.lu(x))).numpy(), b.numpy())
    sol, coeff = torch.triangular_solve(b, x.triu())
    assert np.allclose((x.triu() @ sol).numpy(), b.numpy()) and coeff.tolist() == x.triu().tolist()
    assert x.det().item() == pytest.approx(5.0) and x.inverse().shape == (2, 2)


@pytest.mark.parametrize("fn", [
    lambda a: torch.linalg.svd(a, full_matrices=False)[0].abs().sum() + torch.linalg.svd(a)[1].sum(),
    lambda a: torch.linalg.qr(a)[0].sum() + torch.linalg.qr(a)[1].sum(),
    lambda a: torch.linalg.lu(a)[1].sum() + torch.linalg.lu(a)[2].sum(),
    lambda a: torch.linalg.pinv(a).sum(),
], ids=["svd", "qr", "lu", "pinv"])
def test_gradients_of_rectangular_factorizations(fn):
    """Tall and wide inputs: the registry's samples are square for these ops' hints."""
    rng = np.random.default_rng(0)
    for shape in ((4, 2), (2, 4)):
        a = torch.tensor(rng.standard_normal(shape), requires_grad=True)
        assert gradcheck(fn, [a])
        assert gradgradcheck(fn, [a])


def test_eigh_gradient_is_symmetric_and_torch_like():
    x = torch.tensor([[2., 1], [1, 3]], dtype=torch.float64, requires_grad=True)
    L, V = torch.linalg.eigh(x)
    (L.sum() + V.abs().sum()).backward()
    assert np.allclose(x.grad.numpy(), x.grad.numpy().T)


def test_norm_nuc_is_the_matrix_norm():
    x = torch.tensor([[3., 0], [0, 4]])
    assert torch.norm(x, 'nuc').item() == pytest.approx(7.0) and x.norm(p='nuc').item() == pytest.approx(7.0)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: dim must be a 2-tuple. Got 0 1 2"):
        torch.norm(torch.ones(2, 2, 2), 'nuc')


# the direct LAPACK calls of reftorch/kernels/lapack_calls.py (potrf, gesv, syevd, gesdd)
S = [[4., 99, -7], [1, 3, 55], [2, 0, 5]]       # lower triangle: M's; upper: garbage the factorizations never read
TORCH_S = {   # torch 2.13 on S, in float64 and float32
    "float64": {"L": [[2.0, 0.0, 0.0], [0.5, 1.6583123951777, 0.0], [1.0, -0.30151134457776363, 1.9771421064483223]],
                "eig": [1.854897308799577, 3.4760236029181337, 6.669079088282288],
                "sv": [99.33341253957852, 55.310241846874376, 1.9105758509313575],
                "x": [1.4692769362675049, -0.04839477946079832, 0.012289225492998001]},
    "float32": {"L": [[2.0, 0.0, 0.0], [0.5, 1.658312439918518, 0.0], [1.0, -0.30151134729385376, 1.977142095565796]],
                "eig": [1.8548976182937622, 3.4760234355926514, 6.669078826904297],
                "sv": [99.33341217041016, 55.310237884521484, 1.9105757474899292],
                "x": [1.469277024269104, -0.04839478060603142, 0.012289225123822689]},
}


@pytest.mark.parametrize("lapack", ["openblas", "mkl", "numpy-fallback"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_hot_four_read_one_triangle_in_their_dtype(dtype, lapack, monkeypatch):
    """cholesky, eigh, svd and solve as torch computes them, float32 in float32, from C-ordered and transposed
    (Fortran-ordered) inputs, every routine from the LAPACK NumPy ships, from MKL's (where the optional wheel is
    installed), and with neither (NumPy's own path then runs)."""
    fns, itype = None, None
    if lapack != "numpy-fallback":
        fns, itype, _ = lapack_calls._find_lapack(lapack_calls._openblas() if lapack == "openblas" else lapack_calls._mkl())
        if fns is None:
            pytest.skip(f"no {lapack} LAPACK here")
    monkeypatch.setattr(lapack_calls, "_FNS", fns)
    monkeypatch.setattr(lapack_calls, "_INT", itype)
    monkeypatch.setattr(lapack_calls, "_WORK", {})     # workspace sizes are each library's
    dt, tol = getattr(torch, dtype), (1e-12 if dtype == "float64" else 2e-6)
    want = TORCH_S[dtype]
    s = torch.tensor(S, dtype=dt)
    for L in (torch.linalg.cholesky(s), torch.linalg.cholesky(s.mT.contiguous().mT), torch.linalg.cholesky(s.mT, upper=True).mT):
        assert L.dtype is dt and np.allclose(L.numpy(), want["L"], rtol=tol, atol=tol)
    for w in (torch.linalg.eigh(s)[0], torch.linalg.eigvalsh(s.mT, UPLO="U")):
        assert w.dtype is dt and np.allclose(w.numpy(), want["eig"], rtol=tol * 4)
    w, V = torch.linalg.eigh(s)
    sym = np.tril(S) + np.tril(S, -1).T
    assert np.allclose((V @ torch.diag(w) @ V.mT).numpy(), sym, atol=tol * 40)
    U, sv, Vh = torch.linalg.svd(s)
    assert sv.dtype is dt and np.allclose(sv.numpy(), want["sv"], rtol=tol * 4)
    assert np.allclose((U * sv.unsqueeze(-2) @ Vh).numpy(), S, atol=tol * 400)
    x = torch.linalg.solve(s, torch.tensor([[1.], [2], [3]], dtype=dt))
    assert x.dtype is dt and np.allclose(x.numpy()[:, 0], want["x"], rtol=tol * 10, atol=tol)


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5), (3, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_svd_of_tall_and_wide_batches(shape, full):
    a = np.random.default_rng(3).standard_normal(shape)
    U, S, Vh = torch.linalg.svd(torch.tensor(a), full_matrices=full)
    m, n = shape[-2:]
    k = min(m, n)
    assert U.shape == shape[:-2] + ((m, m) if full else (m, k)) and Vh.shape == shape[:-2] + ((n, n) if full else (k, n))
    assert np.allclose(S.numpy(), np.linalg.svd(a, compute_uv=False))
    u, vh = U.numpy(), Vh.numpy()
    assert np.allclose(u[..., :k] * S.numpy()[..., None, :] @ vh[..., :k, :], a)
    assert np.allclose(np.swapaxes(u, -1, -2) @ u, np.eye(u.shape[-1])) and np.allclose(vh @ np.swapaxes(vh, -1, -2), np.eye(vh.shape[-2]))


def test_solve_broadcasts_and_solves_from_the_right():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((3, 4, 2))
    A, Bt = torch.tensor(a), torch.tensor(b)
    assert np.allclose(torch.linalg.solve(A, Bt).numpy(), np.linalg.solve(a, b))
    assert np.allclose(torch.linalg.solve(A, Bt.mT, left=False).numpy(), np.swapaxes(np.linalg.solve(a.T, b), -1, -2))
    assert np.allclose(torch.linalg.solve(A.mT, Bt[0, :, 0]).numpy(), np.linalg.solve(a.T, b[0, :, 0]))
    assert torch.linalg.solve_ex(A.expand(3, 4, 4), Bt).info.tolist() == [0, 0, 0]


def test_non_finite_inputs_as_torch():
    """OpenBLAS's potrf takes a NaN pivot as positive (torch's LAPACK stops there), and its eigen and singular
    value drivers are not given inf or NaN: torch 2.13's results."""
    nan = float("nan")
    for dt in (torch.float64, torch.float32):
        L, info = torch.linalg.cholesky_ex(torch.tensor([[1., nan], [nan, 2]], dtype=dt))
        assert info.item() == 2 and L[0].tolist() == [1.0, 0.0] and bool(L[1].isnan().all())
        L, info = torch.linalg.cholesky_ex(torch.tensor([[1., float("inf")], [float("inf"), 2]], dtype=dt))
        assert info.item() == 2 and L.tolist() == [[1.0, 0.0], [float("inf"), -float("inf")]]
        w, V = torch.linalg.eigh(torch.tensor([[1., nan], [nan, 2]], dtype=dt))
        assert bool(w.isnan().all()) and bool(V.isnan().all())
        assert bool(torch.linalg.svdvals(torch.tensor([[1., float("inf")], [0, 2]], dtype=dt)).isnan().all())


def test_factors_come_back_column_major_as_torch():
    """eigh's eigenvectors, svd's U and Vh and solve's X keep the column-major matrices LAPACK leaves (torch
    2.13's strides, recorded); solve factors a C-ordered A as A^T (getrs 'T') and a column-major one as it lies
    ('N'): both against NumPy, broadcast batches included."""
    rng = np.random.default_rng(21)
    a = rng.standard_normal((5, 4, 4))
    s = a @ np.swapaxes(a, -1, -2) + 4 * np.eye(4)
    b = rng.standard_normal((5, 4, 2))
    S, A, B = torch.tensor(s), torch.tensor(a), torch.tensor(b)
    assert torch.linalg.eigh(S)[1].stride() == (16, 1, 4)
    U, _, Vh = torch.linalg.svd(A, full_matrices=False)
    assert U.stride() == (16, 1, 4) and Vh.stride() == (16, 1, 4)
    U, _, Vh = torch.linalg.svd(torch.tensor(rng.standard_normal((5, 4, 3))), full_matrices=False)
    assert U.stride() == (12, 1, 4) and Vh.stride() == (9, 1, 3)
    X = torch.linalg.solve(S, B)
    assert X.stride() == (8, 1, 4) and np.allclose(X.numpy(), np.linalg.solve(s, b))
    assert torch.linalg.solve(S, B.mT, left=False).stride() == (8, 4, 1)
    for upper in (False, True):                         # cholesky's factor too, from either triangle
        L = torch.linalg.cholesky(S, upper=upper)
        assert L.stride() == (16, 1, 4) and torch.linalg.cholesky_ex(S[0], upper=upper).L.stride() == (1, 4)
        want = np.linalg.cholesky(s, upper=upper)
        assert np.allclose(L.numpy(), want) and np.allclose(torch.linalg.cholesky(S.mT, upper=upper).numpy(), want)
    assert torch.cholesky(torch.zeros(0, 4, 4)).stride() == (16, 4, 1)     # torch's empty_like
    with pytest.raises(NotImplementedError, match="^\"cholesky_cpu\" not implemented for 'Long'$"):
        torch.cholesky(torch.eye(3, dtype=torch.long))
    for dt, tol in ((torch.float64, 1e-12), (torch.float32, 1e-5)):
        M = torch.tensor(a + 4 * np.eye(4), dtype=dt)
        want = np.linalg.solve(a + 4 * np.eye(4), b)
        for m in (M, M.mT.contiguous().mT):             # C-ordered and column-major matrices
            assert np.allclose(torch.linalg.solve(m, B.to(dt)).numpy(), want, rtol=tol, atol=tol)
        assert np.allclose(torch.linalg.solve(M[0], B.to(dt)).numpy(), np.linalg.solve(a[0] + 4 * np.eye(4), b),
                           rtol=tol, atol=tol)
    with pytest.raises(torch.linalg.LinAlgError, match="singular"):
        torch.linalg.solve(torch.zeros(3, 3), torch.ones(3, 1))
