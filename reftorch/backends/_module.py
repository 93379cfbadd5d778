"""Module attributes that are properties: `reftorch.backends.cudnn.benchmark = True` goes through a setter (which
checks the value, or keeps it in reftorch/_config.py where the tensor core reads it), as in PyTorch."""
from __future__ import annotations

import contextlib
import sys
import types


def install(name, **props):
    """Give module `name` the properties props[attr] = (getter, setter or None)."""
    module = sys.modules[name]
    cls = type(f"{name.rsplit('.', 1)[-1]}_module", (types.ModuleType,),
               {attr: property(lambda self, g=get: g(), None if put is None else (lambda self, v, s=put: s(v)))
                for attr, (get, put) in props.items()})
    module.__class__ = cls


@contextlib.contextmanager
def temporarily(module, **values):
    """Set module attributes (None: leave alone) for the duration of a with block, then restore them."""
    old = {k: getattr(module, k) for k, v in values.items() if v is not None}
    try:
        for k in old:
            setattr(module, k, values[k])
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)
