"""torch.special: the special functions, under torch's names.

Every function is an op of ops.yaml (reftorch/ops.yaml, the section of branch special): the ones torch also has
at the top level are bound from there (torch.special.erf is torch.erf), the others are the registry's
`special_<name>` entries. This module only binds names."""
from __future__ import annotations

import reftorch as _torch
from reftorch import _functional as _F

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
    "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e",
    "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit",
    "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0",
    "xlog1py", "xlogy", "zeta",
]

# torch.special names of top-level functions
erf, erfc, erfinv, exp2, expm1, log1p, logit, round = (_torch.erf, _torch.erfc, _torch.erfinv, _torch.exp2,  # noqa: A001
                                                      _torch.expm1, _torch.log1p, _torch.logit, _torch.round)
digamma = psi = _torch.digamma
gammaln = _torch.lgamma
polygamma = _torch.polygamma
multigammaln = _torch.mvlgamma
gammainc = _torch.igamma
gammaincc = _torch.igammac
expit = _torch.sigmoid
i0 = _torch.i0
sinc = _torch.sinc
xlogy = _torch.xlogy
softmax = _torch.softmax
log_softmax = _torch.log_softmax
logsumexp = _torch.logsumexp

# the rest are the registry's special_<name> entries
for _n in __all__:
    if _n not in globals():
        globals()[_n] = getattr(_F, "special_" + _n)
del _n
