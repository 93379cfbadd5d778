"""reftorch.utils: data loading (reftorch.utils.data)."""
from . import data  # noqa: F401
