"""reftorch.utils.benchmark: Timer, Measurement and Compare, as torch.utils.benchmark's."""
from .common import Measurement, TaskSpec, select_unit, trim_sigfig, unit_to_english  # noqa: F401
from .timer import Language, Timer, timer  # noqa: F401
from .compare import Colorize, Compare  # noqa: F401

__all__ = ["Timer", "Measurement", "Compare", "Colorize", "TaskSpec", "Language", "select_unit", "trim_sigfig"]
