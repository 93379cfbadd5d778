"""Automatic mixed precision: autocast regions and the loss scaler (PyTorch's torch.amp)."""
from .autocast_mode import (autocast, is_autocast_available, is_autocast_enabled, get_autocast_dtype,  # noqa: F401
                            set_autocast_enabled, set_autocast_dtype, is_autocast_cache_enabled,
                            set_autocast_cache_enabled, clear_autocast_cache, is_autocast_cpu_enabled,
                            get_autocast_cpu_dtype, get_autocast_gpu_dtype, set_autocast_cpu_enabled,
                            set_autocast_cpu_dtype, set_autocast_gpu_dtype)
from .grad_scaler import GradScaler, OptState  # noqa: F401
import reftorch.amp.legacy as legacy  # noqa: F401,E402
from .legacy import custom_fwd, custom_bwd  # noqa: F401,E402
