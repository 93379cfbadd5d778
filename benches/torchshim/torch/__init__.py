"""`import torch` resolved to reftorch, for running unmodified PyTorch programs.

Put the directory that holds this package first on the path:

    PYTHONPATH=/path/to/benches/torchshim python train.py

Importing `torch` then gives the `reftorch` module itself, and every `torch.X.Y` gives `reftorch.X.Y`
(`import torch.nn.functional as F`, `from torch.utils.data import DataLoader`, `import torch.optim`):
one module object under two names, so `torch.nn is sys.modules['torch.nn']` and `isinstance` checks
against `torch.Tensor` hold. A name reftorch does not have fails as `import` fails for a missing
module (ModuleNotFoundError), which is what a program sees on a torch without that module.
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

_PREFIX = "torch."
_REAL = "reftorch"


class _AliasLoader(importlib.abc.Loader):
    """Hands the import system the already-imported reftorch module for a torch.* name."""

    def __init__(self, module):
        self._module = module
        self._spec = module.__spec__

    def create_module(self, spec):
        return self._module

    def exec_module(self, module):
        # the import system stamps the alias spec onto the module; the module keeps its own
        module.__spec__ = self._spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds `torch.X` as `reftorch.X`; first on sys.meta_path so reftorch's files are never
    imported a second time under the torch name."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(_PREFIX):
            return None
        real = _REAL + fullname[len("torch"):]
        if importlib.util.find_spec(real) is None:
            return None
        module = importlib.import_module(real)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module),
                                              is_package=hasattr(module, "__path__"))


def _install():
    reftorch = importlib.import_module(_REAL)
    sys.meta_path.insert(0, _AliasFinder())
    for name, module in list(sys.modules.items()):      # submodules reftorch imported itself
        if name.startswith(_REAL + "."):
            sys.modules.setdefault("torch" + name[len(_REAL):], module)
    sys.modules["torch"] = reftorch


_install()
