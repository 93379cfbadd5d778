"""torch.signal: the window functions of torch.signal.windows."""
import reftorch.signal.windows as windows  # noqa: F401
