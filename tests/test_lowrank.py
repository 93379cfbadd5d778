"""torch.svd_lowrank, torch.pca_lowrank, torch.lobpcg and torch.norm_except_dim against NumPy (issue 21)."""
import numpy as np
import pytest

import reftorch as torch


def _low_rank(m, n, r, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, r)) @ rng.standard_normal((r, n))


@pytest.mark.parametrize("shape", [(40, 30), (30, 40), (3, 20, 16)])
def test_svd_lowrank_recovers_a_low_rank_matrix(shape):
    a = _low_rank(shape[-2], shape[-1], 4, seed=1) if len(shape) == 2 else \
        np.stack([_low_rank(20, 16, 4, seed=s) for s in range(3)])
    torch.manual_seed(0)
    U, S, V = torch.svd_lowrank(torch.tensor(a), q=6)
    m, n = shape[-2:]
    assert U.shape == shape[:-2] + (m, 6) and S.shape == shape[:-2] + (6,) and V.shape == shape[:-2] + (n, 6)
    assert np.allclose((U * S.unsqueeze(-2) @ V.mT).numpy(), a, atol=1e-10)
    assert np.allclose(S.numpy()[..., :4], np.linalg.svd(a, compute_uv=False)[..., :4], rtol=1e-10)
    u = U.numpy()
    assert np.allclose(np.swapaxes(u, -1, -2) @ u, np.eye(6), atol=1e-10)


def test_svd_lowrank_subtracts_m_and_float32():
    a = _low_rank(30, 20, 3, seed=2)
    mean = np.random.default_rng(3).standard_normal((1, 20))
    torch.manual_seed(0)
    U, S, V = torch.svd_lowrank(torch.tensor(a + mean), q=5, niter=3, M=torch.tensor(mean))
    assert np.allclose((U * S.unsqueeze(-2) @ V.mT).numpy(), a, atol=1e-9)
    U, S, V = torch.svd_lowrank(torch.tensor(a, dtype=torch.float32), q=5)
    assert S.dtype is torch.float32
    assert np.allclose(S.numpy()[:3], np.linalg.svd(a, compute_uv=False)[:3], rtol=1e-4)


def test_svd_lowrank_gradient_flows_as_through_its_ops():
    """With the sketch fixed by the seed, S is a smooth function of A: its gradient matches central
    differences (the randomized range finder is just matmul, qr and svd)."""
    a = _low_rank(12, 8, 3, seed=4) + 0.01 * np.random.default_rng(5).standard_normal((12, 8))
    x = torch.tensor(a, requires_grad=True)
    torch.manual_seed(7)
    torch.svd_lowrank(x, q=3)[1].sum().backward()
    d, eps = np.random.default_rng(6).standard_normal((12, 8)), 1e-6
    fd = []
    for sign in (1, -1):
        torch.manual_seed(7)
        fd.append(float(torch.svd_lowrank(torch.tensor(a + sign * eps * d), q=3)[1].sum()))
    assert (fd[0] - fd[1]) / (2 * eps) == pytest.approx(float((x.grad.numpy() * d).sum()), rel=1e-5)


def test_pca_lowrank_centers_and_checks_its_arguments():
    rng = np.random.default_rng(8)
    a = _low_rank(50, 10, 3, seed=9) + rng.standard_normal((1, 10)) * 5
    torch.manual_seed(0)
    U, S, V = torch.pca_lowrank(torch.tensor(a), q=4)
    c = a - a.mean(0)
    assert np.allclose((U * S.unsqueeze(-2) @ V.mT).numpy(), c, atol=1e-9)
    assert np.allclose(S.numpy()[:3] ** 2 / 49, np.linalg.eigvalsh(c.T @ c / 49)[::-1][:3])
    assert torch.pca_lowrank(torch.tensor(a))[1].shape == (6,)          # q = min(6, m, n)
    U, S, V = torch.pca_lowrank(torch.tensor(c), q=3, center=False)
    assert np.allclose((U * S.unsqueeze(-2) @ V.mT).numpy(), c, atol=1e-9)
    for sparse, dense in ((torch.tensor(a).to_sparse(), c), (torch.tensor(a.T).to_sparse(), a.T - a.T.mean(0))):
        U, S, V = torch.pca_lowrank(sparse, q=4)      # tall and wide (the sketch is of the adjoint)
        assert np.allclose((U * S.unsqueeze(-2) @ V.mT).numpy(), dense, atol=1e-9)
    with pytest.raises(ValueError, match=r"^q\(=11\) must be non-negative integer and not greater than min\(m, n\)=10$"):
        torch.pca_lowrank(torch.tensor(a), q=11)
    with pytest.raises(ValueError, match=r"^niter\(=-1\) must be non-negative integer$"):
        torch.pca_lowrank(torch.tensor(a), niter=-1)
    assert torch.functional.pca_lowrank is torch.pca_lowrank and torch.functional.svd_lowrank is torch.svd_lowrank


def _spd(m, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, m))
    return a @ a.T + np.diag(np.arange(m) * 3.0)


@pytest.mark.parametrize("method", ["ortho", "basic"])
@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_eigenpairs(method, largest):
    a = _spd(50, 10)
    want = np.linalg.eigvalsh(a)
    want = want[::-1][:3] if largest else want[:3]
    torch.manual_seed(1)
    E, X = torch.lobpcg(torch.tensor(a), k=3, largest=largest, method=method)
    assert E.shape == (3,) and X.shape == (50, 3)
    assert np.allclose(E.numpy(), want, rtol=1e-10)
    x = X.numpy()
    assert np.allclose(a @ x, x * E.numpy(), atol=1e-4 * np.abs(want).max())
    assert np.allclose(x.T @ x, np.eye(3), atol=1e-8)


def test_lobpcg_generalized_batched_float32_and_tracker():
    a, b = _spd(40, 11), _spd(40, 12) / 40 + np.eye(40)
    w = np.linalg.eigvals(np.linalg.solve(b, a)).real
    torch.manual_seed(2)
    X0 = torch.randn(40, 4, dtype=torch.float64)
    steps = []
    E, X = torch.lobpcg(torch.tensor(a), k=2, B=torch.tensor(b), X=X0, tracker=lambda w: steps.append(
        (w.ivars["istep"], w.ivars["converged_count"])))
    assert np.allclose(E.numpy(), np.sort(w)[::-1][:2], rtol=1e-9) and X.shape == (40, 2)
    assert steps[0] == (1, steps[0][1]) and steps[-1][1] >= 2 and len(steps) > 1
    stop = torch.lobpcg(torch.tensor(a), k=2, X=X0, tracker=lambda w: w.bvars.update(force_stop=True))
    assert stop[0].shape == (2,)            # one step, then stopped
    batch = np.stack([_spd(30, s) for s in (13, 14)]).astype(np.float32)
    E, X = torch.lobpcg(torch.tensor(batch), k=2)
    assert E.dtype is torch.float32 and E.shape == (2, 2) and X.shape == (2, 30, 2)
    assert np.allclose(E.numpy(), np.linalg.eigvalsh(batch.astype(np.float64))[:, ::-1][:, :2], rtol=1e-4)


def test_lobpcg_gradient_is_the_eigenpairs_derivative():
    """E's and the (sign-free) projector's gradient equal those through linalg.eigh's top pairs."""
    a = _spd(30, 15)
    weights = np.random.default_rng(16).standard_normal((30, 30))

    def loss(E, X):
        return E.sum() * 0.1 + ((X @ X.mT) * torch.tensor(weights)).sum()
    x = torch.tensor(a, requires_grad=True)
    torch.manual_seed(3)
    loss(*torch.lobpcg(x, k=2, tol=1e-12)).backward()
    y = torch.tensor(a, requires_grad=True)
    L, V = torch.linalg.eigh((y + y.mT) / 2)
    loss(L.flip(-1)[:2], V.flip(-1)[:, :2]).backward()
    assert np.allclose(x.grad.numpy(), y.grad.numpy(), atol=1e-6)
    b = torch.tensor(np.eye(30))
    E, X = torch.lobpcg(torch.tensor(a, requires_grad=True), k=2, B=b)
    with pytest.raises(ValueError, match="^lobpcg.backward does not support backward with B != I yet.$"):
        E.sum().backward()


def test_lobpcg_argument_errors_as_torch():
    a = torch.tensor(_spd(8, 17))
    with pytest.raises(ValueError, match=r"^LOBPCG algorithm is not applicable when the number of A rows \(=8\) is "
                                         r"smaller than 3 x the number of requested eigenpairs \(=3\)$"):
        torch.lobpcg(a, k=3)
    with pytest.raises(AssertionError, match=r"^A must be square, got shape torch.Size\(\[8, 7\]\)$"):
        torch.lobpcg(a[:, :7])
    with pytest.raises(AssertionError, match=r"^A and B must have same shape"):
        torch.lobpcg(a, B=a[:7, :7])


def test_norm_except_dim():
    v = np.random.default_rng(18).standard_normal((2, 3, 4))
    t = torch.tensor(v)
    assert np.allclose(torch.norm_except_dim(t).numpy(), np.sqrt((v ** 2).sum((1, 2), keepdims=True)))
    assert np.allclose(torch.norm_except_dim(t, 1, 1).numpy(), np.abs(v).sum((0, 2), keepdims=True))
    assert np.allclose(torch.norm_except_dim(t, 3, 2).numpy(), (np.abs(v) ** 3).sum((0, 1), keepdims=True) ** (1 / 3))
    assert np.allclose(torch.norm_except_dim(t, 2, -2).numpy(), np.sqrt((v ** 2).sum((0, 2), keepdims=True)))
    assert torch.norm_except_dim(t, 2, -1).item() == pytest.approx(np.linalg.norm(v))
    g = torch.tensor(v, requires_grad=True)
    torch.norm_except_dim(g, 2, 0).sum().backward()
    assert np.allclose(g.grad.numpy(), v / np.sqrt((v ** 2).sum((1, 2), keepdims=True)))
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-3, 2\], but got 5\)$"):
        torch.norm_except_dim(t, 2, 5)
    with pytest.raises(IndexError, match="^Dimension specified as 0 but tensor has no dimensions$"):
        torch.norm_except_dim(torch.tensor(3.0), 2, 0)
    with pytest.raises(TypeError, match=r"^norm_except_dim\(\): argument 'pow' \(position 2\) must be int, not float$"):
        torch.norm_except_dim(t, 2.5, 0)
    with pytest.raises(RuntimeError, match="^norm\\(\\): input dtype should be either floating point or complex. Got "
                                           "Long instead.$"):
        torch.norm_except_dim(torch.arange(6).reshape(2, 3), 2, 0)


def test_lobpcg_preconditioned_sparse_and_unbounded_niter():
    a = _spd(45, 19)
    want = np.linalg.eigvalsh(a)[:2]
    torch.manual_seed(4)
    iK = torch.tensor(np.diag(1 / np.diag(a)))          # a Jacobi preconditioner for the smallest pairs
    E, X = torch.lobpcg(torch.tensor(a), k=2, iK=iK, largest=False, niter=-1)
    assert np.allclose(E.numpy(), want, rtol=1e-10)
    torch.manual_seed(4)
    E, X = torch.lobpcg(torch.tensor(a).to_sparse(), k=2, largest=False)
    assert np.allclose(E.numpy(), want, rtol=1e-10)


def test_lobpcg_sparse_a_needing_a_gradient_as_torch():
    """torch's forward runs on (A + A^T) / 2 of the sparse A and records the function; its backward refuses."""
    a = _spd(30, 20)
    want = np.linalg.eigvalsh(a)[::-1][:2]
    idx = np.nonzero(a)
    values = torch.tensor(a[idx], requires_grad=True)
    sparse = torch.sparse_coo_tensor(torch.tensor(np.stack(idx)), values, a.shape)
    torch.manual_seed(5)
    E, X = torch.lobpcg(sparse, k=2, tol=1e-12)
    assert np.allclose(E.detach().numpy(), want, rtol=1e-10)
    assert E.requires_grad and type(E.grad_fn).__name__ == "LOBPCGAutogradFunctionBackward"
    with pytest.raises(ValueError, match="^lobpcg.backward does not support sparse input yet. Note that "
                                         "lobpcg.forward does though.$"):
        E.sum().backward()
    assert values.grad is None
