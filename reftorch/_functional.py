"""The functional namespace F: every op of ops.yaml, the creation functions and the formula helpers.

Derivative formulas and composite bodies of ops.yaml are generated as calls into F, and
`reftorch.<op>` re-exports it."""
from __future__ import annotations

import sys as _sys

from .kernels.api import *  # noqa: F401,F403  -- one wrapper per op of ops.yaml
from .kernels.api import SPECS as _SPECS
from ._creation import (tensor, as_tensor, zeros, ones, full, empty, zeros_like, ones_like, full_like,  # noqa
                        empty_like, arange, eye, scalar_tensor)
from ._formula_helpers import *  # noqa: F401,F403
from ._linalg_checks import *  # noqa: F401,F403
from ._fft_checks import *  # noqa: F401,F403
from ._conj import conj_view, neg_view, resolved, resolved_conj, resolved_neg  # noqa: F401
from .autograd.grad_mode import is_grad_enabled  # noqa: F401
from ._elementwise import fused as _fused  # noqa: F401
import reftorch.autograd.graph as _graph

_OPS = tuple(_SPECS)

# internal ops of ops.yaml (names starting with `_`, e.g. `_sort`) are skipped by the star import above
import reftorch.kernels.api as _api  # noqa: E402
globals().update({_n: getattr(_api, _n) for _n in _SPECS if _n.startswith("_")})

_graph.bind_functional(_sys.modules[__name__])     # the F that backward formulas call (autograd/graph.py)
