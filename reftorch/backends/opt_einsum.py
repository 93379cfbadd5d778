"""reftorch.backends.opt_einsum: reftorch's einsum takes NumPy's contraction path (numpy.einsum's optimize), not
the opt_einsum package's, so it is not available. `enabled` and `strategy` are plain attributes, as in PyTorch
(whose properties for them are shadowed by module globals); set_flags / flags() refuse True and a strategy
with PyTorch's errors for a missing opt_einsum."""
from __future__ import annotations

import contextlib
import sys

enabled = False
strategy = None


def is_available():
    return False


def get_opt_einsum():
    return None


def set_flags(_enabled=None, _strategy=None):
    module = sys.modules[__name__]
    orig = (module.enabled, None)
    if _enabled is not None:
        if _enabled:
            raise ValueError(f"opt_einsum is not available, so setting `enabled` to {_enabled} will not reap the "
                             "benefits of calculating an optimal path for einsum. torch.einsum will fall back to "
                             "contracting from left to right. To enable this optimal path calculation, please install "
                             "opt-einsum.")
        module.enabled = _enabled
    if _strategy is not None:
        raise ValueError(f"opt_einsum is not available, so setting `strategy` to {_strategy} will not be meaningful. "
                         "torch.einsum will bypass path calculation and simply contract from left to right. Please "
                         "install opt_einsum or unset `strategy`.")
    return orig


@contextlib.contextmanager
def flags(enabled=None, strategy=None):
    orig = set_flags(enabled, strategy)
    try:
        yield
    finally:
        set_flags(*orig)
