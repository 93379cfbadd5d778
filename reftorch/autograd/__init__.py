"""reftorch.autograd: the engine's public face (backward, grad, Function, grad modes, anomaly mode)."""
from __future__ import annotations

from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,  # noqa: F401
                        is_inference_mode_enabled)
from .anomaly_mode import (detect_anomaly, set_detect_anomaly, is_anomaly_enabled,  # noqa: F401
                           is_anomaly_check_nan_enabled)
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from .graph import Node  # noqa: F401
import reftorch.autograd.function as function
import reftorch.autograd.graph as graph  # noqa: F401
import reftorch.autograd.profiler as profiler
import reftorch.autograd.profiler_util as profiler_util  # noqa: F401  (torch.autograd.profiler)
from .gradcheck import gradcheck, gradgradcheck, GradcheckError  # noqa: F401
from .variable import Variable, variable  # noqa: F401
from ._grad import backward, grad  # noqa: F401
import reftorch.autograd.forward_ad as forward_ad  # noqa: E402,F401
import reftorch.autograd.functional as functional  # noqa: E402,F401  -- torch.autograd.functional
