"""reftorch.utils: data loading (reftorch.utils.data)."""
import reftorch.utils.data as data  # noqa: F401
import reftorch.utils.hooks as hooks  # noqa: F401
import reftorch.utils.checkpoint as checkpoint  # noqa: F401  (torch imports it with torch.utils)
from ._swap import swap_tensors  # noqa: F401
