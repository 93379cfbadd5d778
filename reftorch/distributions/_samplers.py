"""Samplers that need rejection methods, on reftorch's generator (so `manual_seed` replays them, on any
device): Marsaglia and Tsang's gamma sampler, whose pathwise gradient is the implicit reparameterisation
dx/dalpha = -(dF/dalpha) / f(x) of the gamma CDF F (Figurnov et al., 2018), as PyTorch's Gamma.rsample."""
from __future__ import annotations

import reftorch as torch

__all__ = ["standard_gamma", "standard_gamma_grad"]


def _marsaglia_tsang(alpha):
    """Gamma(alpha, 1) draws of alpha's shape (float64); alpha < 1 is boosted: G(alpha + 1) * U^(1/alpha)."""
    a = alpha.double()
    boost = a < 1
    d = torch.where(boost, a + 1, a) - 1.0 / 3.0
    c = 1.0 / torch.sqrt(9.0 * d)
    out = torch.zeros_like(a)
    todo = torch.ones_like(a, dtype=torch.bool)
    while bool(todo.any()):
        x = torch.randn(a.shape, dtype=torch.float64, device=a.device)
        v = (1 + c * x) ** 3
        u = torch.rand(a.shape, dtype=torch.float64, device=a.device)
        safe_v = torch.where(v > 0, v, torch.ones_like(v))
        ok = (v > 0) & (torch.log(u) < 0.5 * x * x + d - d * safe_v + d * torch.log(safe_v))
        out = torch.where(todo & ok, d * safe_v, out)
        todo = todo & ~ok
    u = torch.rand(a.shape, dtype=torch.float64, device=a.device)
    out = torch.where(boost, out * u ** (1.0 / torch.where(boost, a, torch.ones_like(a))), out)
    return out.clamp(min=torch.finfo(alpha.dtype).tiny if hasattr(torch, "finfo") else 1e-38)


def standard_gamma_grad(alpha, x):
    """d x / d alpha at fixed CDF value: -(dP(alpha, x)/dalpha) / density(x; alpha), P the regularised lower
    incomplete gamma function (a central difference in float64) and the density from lgamma."""
    a, xd = alpha.double(), x.double()
    h = 1e-5 * torch.clamp(a, min=1.0)
    dP = (torch.special.gammainc(a + h, xd) - torch.special.gammainc(a - h, xd)) / (2 * h)
    log_density = (a - 1) * torch.log(xd) - xd - torch.lgamma(a)
    return (-dP / torch.exp(log_density)).to(alpha.dtype)


class _StandardGamma(torch.autograd.Function):
    @staticmethod
    def forward(ctx, alpha):
        x = _marsaglia_tsang(alpha).to(alpha.dtype)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * standard_gamma_grad(alpha, x)


def standard_gamma(alpha):
    """Gamma(alpha, 1) samples, differentiable with respect to alpha."""
    return _StandardGamma.apply(alpha)
