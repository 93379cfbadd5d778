"""reftorch.utils.tensorboard: SummaryWriter on the tensorboard package's event-file writer.

An optional extra: `pip install 'reftorch[tensorboard]'`. Importing this module without the
tensorboard package raises ImportError, as torch's does.
"""
try:
    import tensorboard
except ImportError as e:        # torch's module needs the package too; say how to get it
    raise ImportError("TensorBoard logging requires the tensorboard package: pip install 'reftorch[tensorboard]'") from e

if not hasattr(tensorboard, "__version__") or tuple(int(p) for p in tensorboard.__version__.split(".")[:2]) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")
del tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
