"""reftorch.utils: data loading (reftorch.utils.data)."""
from . import data  # noqa: F401
from . import hooks  # noqa: F401
from ._swap import swap_tensors  # noqa: F401
