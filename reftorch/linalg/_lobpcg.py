"""torch.lobpcg: the k largest (or smallest) eigenpairs of the symmetric (generalized) problem A x = lambda B x by
the locally optimal block preconditioned conjugate gradient method, on reftorch's tensor ops.

method="basic" is Knyazev's LOBPCG (SIAM J. Sci. Comput. 23(2), 2001): each step a Rayleigh-Ritz over the
search basis [X, P, W] (iterates, conjugate directions, preconditioned residuals), made B-orthonormal by a
Cholesky factor of its Gram matrix, which fails where the basis turns singular. method="ortho" (the default)
keeps the basis B-orthonormal instead: P and W are orthogonalized against X and among themselves by repeated
projection and SVQB (Stathopoulos and Wu, SIAM J. Sci. Comput. 23(6), 2002), which drops or lifts the
directions that have become dependent. Converged leading pairs are locked (no longer updated); convergence is
the backward-stable test of Duersch et al. (SIAM J. Sci. Comput. 40(5), 2018, sec. 4.3), as torch's.

Gradients (A only, as torch; B must be None) are those of the eigenpairs of A's symmetric part: dE_i = u_i^T dA
u_i and du_i = sum_j v_j (v_j^T dA u_i) / (E_i - L_j) over A's other eigenpairs (L_j, v_j), which the
backward takes from one eigh of A."""
from __future__ import annotations

import reftorch as torch

_EPS = {"float32": 1.2e-07, "float64": 2.23e-16}


def _mm(A, X):
    """A @ X, with A = None meaning the identity (B, iK absent)."""
    return X if A is None else torch.matmul(A, X)


def _eigh(M, largest):
    """Eigenpairs of symmetric M, ordered by descending (largest) or ascending eigenvalue."""
    E, Z = torch.linalg.eigh(M)
    return (E.flip(-1), Z.flip(-1)) if largest else (E, Z)


class LOBPCG:
    """The iteration's state, as torch's tracker sees it: iparams, fparams, bparams (inputs), ivars, fvars, bvars,
    tvars (iteration variables), A, B, iK, and E, X, S, R (eigenvalues, eigenvectors, search basis, residual)."""

    def __init__(self, A, B, X, iK, iparams, fparams, bparams, method, tracker):
        self.A, self.B, self.iK = A, B, iK
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.method, self.tracker = method, tracker
        self.ivars = {"istep": 0, "converged_count": 0, "converged_end": 0}
        self.fvars, self.bvars, self.tvars = {"_": 0.0}, {"_": False}, {}
        self.X, self.E = X, torch.zeros(X.shape[-1], dtype=X.dtype, device=X.device)
        self.P = X[:, :0]
        self.R = self.S = None

    def run(self):
        self.update()
        if self.tracker is not None:
            self.tracker(self)
        while not self.stop_iteration():
            self.update()
            if self.tracker is not None:
                self.tracker(self)

    def stop_iteration(self):
        return (self.bvars.get("force_stop", False) or self.ivars["iterations_left"] == 0
                or self.ivars["converged_count"] >= self.iparams["k"])

    def update(self):
        if self.ivars["istep"] == 0:
            x_norm = float(torch.linalg.norm(self.X))
            self.fvars["X_norm"] = x_norm
            self.fvars["A_norm"] = float(torch.linalg.norm(_mm(self.A, self.X))) / x_norm
            self.fvars["B_norm"] = float(torch.linalg.norm(_mm(self.B, self.X))) / x_norm
            self.ivars["iterations_left"] = self.iparams["niter"]
            self._first_step()
        else:
            self._step()
        self.ivars["iterations_left"] -= 1
        self.ivars["istep"] += 1

    def _first_step(self):
        """Rayleigh-Ritz on the initial X alone."""
        C = None if self.method == "ortho" else self._rayleigh_ritz_basis(self.X)
        S = self.X if C is not None else self._ortho(self.X, self.X[:, :0])
        E, Z = _eigh(self._projected(S, C), self.bparams["largest"])
        self.X = torch.matmul(S, Z if C is None else torch.matmul(C, Z))
        self.E = E
        self._residual_and_basis()

    def _step(self):
        """Rayleigh-Ritz over the unlocked part of the basis S = [X, P, W]: new X, and P the part of the new
        iterates that came from the previous P and W."""
        n, nc, largest = self.iparams["n"], self.ivars["converged_count"], self.bparams["largest"]
        S = self.S[:, nc:]
        C = None if self.method == "ortho" else self._rayleigh_ritz_basis(S)
        E, Z = _eigh(self._projected(S, C), largest)
        Y = Z[:, :n - nc] if C is None else torch.matmul(C, Z[:, :n - nc])
        Xn = torch.matmul(S, Y)
        self.P = torch.matmul(S[:, n - nc:], Y[n - nc:])
        self.X = torch.cat([self.X[:, :nc], Xn], 1)
        self.E = torch.cat([self.E[:nc], E[:n - nc]])
        self._residual_and_basis()

    def _residual_and_basis(self):
        """R = A X - B X E, the converged count, and the next basis [X, P, W] with W = iK R (unconverged)."""
        self.R = _mm(self.A, self.X) - _mm(self.B, self.X) * self.E
        nc = self.update_converged_count()
        W = _mm(self.iK, self.R[:, nc:])
        PW = torch.cat([self.P, W], 1)
        if self.method == "ortho":
            PW = self._ortho(PW, self.X)
        elif nc:        # the locked pairs projected out, so that the unlocked ones do not find them again
            locked = self.X[:, :nc]
            PW = PW - torch.matmul(locked, torch.matmul(locked.mT, _mm(self.B, PW)))
        self.S = torch.cat([self.X, PW], 1)
        self.ivars["converged_end"] = self.S.shape[-1]

    def update_converged_count(self):
        """The leading eigenpairs whose relative residual ||r_i|| / (||x_i|| (|A| + |e_i| |B|)) is below tol."""
        rerr = torch.linalg.norm(self.R, 2, (0,)) / (torch.linalg.norm(self.X, 2, (0,)) * (
            self.fvars["A_norm"] + self.E.abs() * self.fvars["B_norm"]))
        count = 0
        for ok in (rerr < self.fparams["tol"]).tolist():
            if not ok:
                break
            count += 1
        self.ivars["converged_count"] = max(count, self.ivars["converged_count"])
        self.tvars["rerr"] = rerr
        return self.ivars["converged_count"]

    def _projected(self, S, C):
        """S^T A S, or C^T S^T A S C for the basic method's B-orthonormalizing C."""
        M = torch.matmul(S.mT, _mm(self.A, S))
        M = M if C is None else torch.matmul(C.mT, torch.matmul(M, C))
        return (M + M.mT) / 2

    def _rayleigh_ritz_basis(self, S):
        """C upper-triangular with C^T (S^T B S) C = I: the Cholesky factor of the diagonally scaled Gram
        matrix, inverted (a singular basis makes cholesky raise, as torch's basic method does)."""
        G = torch.matmul(S.mT, _mm(self.B, S))
        d = G.diagonal().rsqrt()
        U = torch.linalg.cholesky((G * d.unsqueeze(0) * d.unsqueeze(1)), upper=True)
        eye = torch.eye(U.shape[-1], dtype=U.dtype, device=U.device)
        return torch.linalg.solve_triangular(U, eye, upper=True) * d.unsqueeze(1)

    def _ortho(self, U, V):
        """U made B-orthonormal and B-orthogonal to V (B-orthonormal): up to ortho_i_max rounds of projecting V
        out (each up to ortho_j_max times, until U's part in V's span is below ortho_tol) and SVQB, until
        |U^T B U - I| and |V^T B U| are below ortho_tol, relative to U's and V's norms."""
        tol = self.fparams["ortho_tol"]
        for _ in range(self.iparams["ortho_i_max"]):
            for _ in range(self.iparams["ortho_j_max"]):
                if V.shape[-1] == 0:
                    break
                VBU = torch.matmul(V.mT, _mm(self.B, U))
                U = U - torch.matmul(V, VBU)
                if float(torch.linalg.norm(VBU)) <= tol * float(torch.linalg.norm(U)):
                    break
            U = self._svqb(U)
            BU = _mm(self.B, U)
            eye = torch.eye(U.shape[-1], dtype=U.dtype, device=U.device)
            err_u = float(torch.linalg.norm(torch.matmul(U.mT, BU) - eye))
            err_v = float(torch.linalg.norm(torch.matmul(V.mT, BU))) if V.shape[-1] else 0.0
            if err_u < tol and err_v < tol:
                break
        return U

    def _svqb(self, U):
        """U B-orthonormalized through the eigendecomposition of its diagonally scaled Gram matrix: directions
        with an eigenvalue below ortho_tol_drop times the largest are dropped (ortho_use_drop), or their
        eigenvalues lifted to ortho_tol_replace times the largest."""
        G = torch.matmul(U.mT, _mm(self.B, U))
        d = G.diagonal()
        keep = d > 0                            # zero columns carry no direction
        U, G, d = U[:, keep], G[keep][:, keep], d[keep].rsqrt()
        theta, Z = torch.linalg.eigh(G * d.unsqueeze(0) * d.unsqueeze(1))
        top = float(theta.abs().max()) if theta.numel() else 0.0
        if self.bparams["ortho_use_drop"]:
            big = theta > self.fparams["ortho_tol_drop"] * top
            theta, Z = theta[big], Z[:, big]
        else:
            theta = theta.clamp(min=self.fparams["ortho_tol_replace"] * top)
        return torch.matmul(U * d.unsqueeze(0), Z * theta.rsqrt().unsqueeze(0))


def _iterate(A, B, X, iK, iparams, fparams, bparams, method, tracker):
    """(E[:k], X[:, :k]) of one matrix's LOBPCG run."""
    worker = LOBPCG(A, B, X, iK, iparams, fparams, bparams, method, tracker)
    worker.run()
    k = iparams["k"]
    return worker.E[:k], worker.X[:, :k]


def _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams, ortho_fparams, ortho_bparams):
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype = A.dtype if A.dtype.is_floating_point else torch.get_default_dtype()
    tol = _EPS[dtype.name] ** 0.5 if tol is None else tol
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 "
                         f"x the number of requested eigenpairs (={n})")
    method = "ortho" if method is None else method       # any other name runs the basic method, as in torch
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        iparams.update(ortho_iparams or {})
        fparams.update(ortho_fparams or {})
        bparams.update(ortho_bparams or {})
        iparams.setdefault("ortho_i_max", 3)
        iparams.setdefault("ortho_j_max", 3)
        for key in ("ortho_tol", "ortho_tol_drop", "ortho_tol_replace"):
            fparams.setdefault(key, tol)
        bparams.setdefault("ortho_use_drop", False)
    lead = A.shape[:-2]
    if not lead:            # (a sparse A is 2-D, and is only multiplied)
        return _iterate(A, B, _start(X, m, n, dtype, A.device), iK, iparams, fparams, bparams, method, tracker)
    count = 1
    for s in lead:
        count *= s
    bA = A.reshape((count, m, m))
    bB = None if B is None else B.reshape((count, m, m))
    bX = None if X is None else X.reshape((count,) + X.shape[-2:])
    Es, Xs = [], []
    for i in range(count):
        iparams["batch_index"] = i
        E_, V_ = _iterate(bA[i], None if bB is None else bB[i], _start(None if bX is None else bX[i], m, n, dtype,
                                                                      A.device), iK, iparams, fparams, bparams,
                          method, tracker)
        Es.append(E_)
        Xs.append(V_)
    return torch.stack(Es).reshape(lead + (k,)), torch.stack(Xs).reshape(lead + (m, k))


def _start(X, m, n, dtype, device):
    """The starting vectors: X (checked to be m x n), or n random ones."""
    X = torch.randn((m, n), dtype=dtype, device=device) if X is None else X
    if not (len(X.shape) == 2 and tuple(X.shape) == (m, n)):
        raise AssertionError(f"X shape mismatch: got {X.shape}, expected {(m, n)}")
    return X.to(dtype)


class LOBPCGAutogradFunction(torch.autograd.Function):
    """lobpcg with A's gradient (the eigenpairs' derivative, module docstring)."""

    @staticmethod
    def forward(ctx, A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams, ortho_fparams,
                ortho_bparams):
        D, U = _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams, ortho_fparams,
                       ortho_bparams)
        ctx.sparse = A.is_sparse          # (the forward takes a sparse A; the backward refuses it, as torch's)
        ctx.save_for_backward(*(() if ctx.sparse else (A,)), D, U)
        ctx.has_b = B is not None
        return D, U

    @staticmethod
    def backward(ctx, D_grad, U_grad):
        if ctx.sparse:
            raise ValueError("lobpcg.backward does not support sparse input yet. Note that lobpcg.forward does "
                             "though.")
        if ctx.has_b:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        A, D, U = ctx.saved_tensors
        grad = torch.zeros_like(A)
        if D_grad is not None:
            grad = grad + torch.matmul(U * D_grad.unsqueeze(-2), U.mT)
        if U_grad is not None:
            L, V = torch.linalg.eigh(A)
            gap = D.unsqueeze(-2) - L.unsqueeze(-1)                       # (m, k): E_i - L_j
            own = (gap.abs().argmin(-2, keepdim=True) == torch.arange(L.shape[-1]).unsqueeze(-1))
            inv = torch.where(own, torch.zeros_like(gap), 1 / torch.where(own, torch.ones_like(gap), gap))
            grad = grad + torch.matmul(torch.matmul(V, inv * torch.matmul(V.mT, U_grad)), U.mT)
        return (grad,) + (None,) * 13


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """torch.lobpcg: (E, X), the k largest (largest=True, the default) or smallest eigenvalues of the symmetric
    positive-definite (generalized) problem A x = lambda B x and their eigenvectors, from n starting vectors
    (X, or n random ones); A of size (*, m, m) with m >= 3 n, dense or sparse. niter (default 1000, -1: until
    converged), tol (default sqrt of the dtype's eps), method ("ortho" or "basic"), tracker (called with the
    iteration's state after each step; bvars["force_stop"] = True stops it) and the ortho_* parameters as torch's.
    A needing a gradient is symmetrized first, (A + A^T) / 2, so that its gradient is symmetric."""
    if A.requires_grad or (B is not None and B.requires_grad):
        A_sym = (A + A.mT) / 2
        B_sym = (B + B.mT) / 2 if B is not None else None
        return LOBPCGAutogradFunction.apply(A_sym, k, B_sym, X, n, iK, niter, tol, largest, method, tracker,
                                     ortho_iparams, ortho_fparams, ortho_bparams)
    return _lobpcg(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams, ortho_fparams,
                   ortho_bparams)
