"""Regression tests for what the third pass over PyTorch's OpInfo walk (benches/opinfo.py, issue 26) found: each
expectation was read off torch 2.13 side by side, or follows from first principles as noted."""
import numpy as np
import pytest

import reftorch as torch

F64 = torch.float64
RANK_ONE = [[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]          # u v^T with u = [1, 2, 3], v = [1, 2]
G = [[1.0, 0.0, -1.0], [0.5, 2.0, 1.0]]


def test_pinv_gradient_of_a_rank_deficient_matrix_is_torchs_closed_form():
    A = torch.tensor(RANK_ONE, dtype=F64, requires_grad=True)
    P = torch.linalg.pinv(A)
    assert np.allclose(P.detach().numpy(), np.linalg.pinv(np.array(RANK_ONE)))
    (gA,) = torch.autograd.grad(P, A, torch.tensor(G, dtype=F64), create_graph=True)
    # torch 2.13's values (its pinv_backward); the SVD's backward gives NaN or other numbers here
    assert np.allclose(gA.detach().numpy(), [[-0.00428571428571428, 0.003163265306122453],
                                             [-0.008571428571428567, 0.006326530612244899],
                                             [-0.027142857142857135, -0.019081632653061214]], rtol=1e-12, atol=1e-15)
    # first principles: along a direction that keeps the rank (d(u v^T) = du v^T + u dv^T) the gradient is the
    # derivative of <G, pinv(A)>, here by central differences of NumPy's pinv
    u, v, du, dv = np.array([1.0, 2, 3]), np.array([1.0, 2]), np.array([0.3, -1, 0.5]), np.array([-0.7, 0.2])
    f = lambda t: np.sum(np.array(G) * np.linalg.pinv(np.outer(u + t * du, v + t * dv)))
    dA = np.outer(du, v) + np.outer(u, dv)
    assert np.isclose(np.sum(gA.detach().numpy() * dA), (f(1e-6) - f(-1e-6)) / 2e-6, rtol=1e-6)
    # double backward differentiates the closed form again (torch's numbers)
    (ggA,) = torch.autograd.grad(gA.sum(), A)
    assert np.allclose(ggA.numpy(), [[0.00029446064139941304, -0.004338192419825076],
                                     [0.003017492711370256, -0.0038192419825072953],
                                     [0.01369970845481048, 0.012618075801749246]], rtol=1e-10, atol=1e-15)


def test_pinv_gradient_of_a_wide_matrix_takes_the_other_grouping():
    B = torch.tensor(np.array(RANK_ONE).T.copy(), dtype=F64, requires_grad=True)     # 2 x 3: m <= n
    (gB,) = torch.autograd.grad(torch.linalg.pinv(B), B, torch.tensor(G, dtype=F64).mT)
    assert np.allclose(gB.numpy(), [[-0.004285714285714278, -0.008571428571428575, -0.027142857142857156],
                                    [0.0031632653061224557, 0.006326530612244901, -0.019081632653061224]],
                       rtol=1e-12, atol=1e-15)
    assert torch.autograd.gradgradcheck(torch.linalg.pinv, (torch.tensor([[1.0, 2.0, 0.5], [0.0, 1.0, 3.0]],
                                                                         dtype=F64, requires_grad=True),))


def test_pinv_tolerances_per_matrix_and_hermitian():
    b = np.array([[[1.0, 2.0, 0.0], [0.0, 1.0, 1.0], [3.0, 1.0, 1.0]], [[2.0, 0.0, 0.0], [0.0, 0.5, 0.0],
                                                                       [0.0, 0.0, 0.01]]])
    out = torch.linalg.pinv(torch.tensor(b), atol=torch.tensor([0.0, 0.1]), rtol=torch.tensor([0.0, 0.0]))
    keep = np.diag([0.5, 2.0, 0.0])                        # the second matrix's 0.01 is under its atol
    assert np.allclose(out[1].numpy(), keep) and np.allclose(out[0].numpy(), np.linalg.pinv(b[0]))
    assert out.dtype == F64
    s = b[0] @ b[0].T
    assert np.allclose(torch.linalg.pinv(torch.tensor(s, dtype=torch.float32), hermitian=True).numpy(),
                       np.linalg.pinv(s), rtol=1e-4, atol=1e-5)
    assert list(torch.linalg.pinv(torch.ones(0, 3)).shape) == [3, 0]
