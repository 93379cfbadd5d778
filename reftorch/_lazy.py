"""Modules imported at the top of their importer but executed on first use.

`import reftorch` stays free of Numba's JIT and of numba.cuda: the modules that import them (the Philox
generator, the CUDA random and indexing kernels) are declared where they are used, at module level, and
loaded by the first attribute read -- the first draw, the first cuda index -- through the standard library's
importlib.util.LazyLoader. A name already imported is returned as it is."""
from __future__ import annotations

import importlib.util
import sys


def lazy_module(name):
    """The module `name`, whose code runs when one of its attributes is first read."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)     # as a real import binds the submodule on its package
    return module
