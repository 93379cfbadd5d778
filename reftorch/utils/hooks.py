"""torch.utils.hooks: RemovableHandle (what every register_*_hook returns) and the hook-serialization markers."""
from __future__ import annotations

import abc
import warnings
import weakref
from collections import OrderedDict

from ..autograd import graph as _graph

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def _ref(d):
    """A weak reference where the dict allows one (OrderedDict does, dict does not), else a strong one."""
    try:
        return weakref.ref(d)
    except TypeError:
        return lambda: d


class RemovableHandle(metaclass=abc.ABCMeta):
    """A handle whose remove() deletes its hook: the entry `id` of hooks_dict, and of each extra dict.

    RemovableHandle(hooks_dict, *, extra_dict=None) as in PyTorch; further positional dicts are extra ones.
    A tensor's register_hook returns reftorch.autograd's list-based handle, an instance of this class too."""

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict, *more_dicts, extra_dict=None):
        self.hooks_dict_ref = _ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        extras = list(more_dicts)
        if isinstance(extra_dict, dict):
            extras.append(extra_dict)
        elif isinstance(extra_dict, list):
            extras.extend(extra_dict)
        self.extra_dict_ref = tuple(_ref(d) for d in extras)

    def remove(self):
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state):
        self.hooks_dict_ref = _ref(OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = () if len(state) < 3 or state[2] is None else tuple(_ref(d) for d in state[2])

    def __enter__(self):
        return self

    def __exit__(self, type, value, tb):
        self.remove()


RemovableHandle.register(_graph.RemovableHandle)


def unserializable_hook(f):
    """Mark f as a hook that is not serialized (silences warn_if_has_hooks)."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor):
    """Warn about each backward hook of tensor that serialization drops (unless marked unserializable)."""
    for hook in list(getattr(tensor, "_hooks", None) or ()):
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this is expected, you can "
                          "decorate the function with @torch.utils.hooks.unserializable_hook to suppress this "
                          "warning", stacklevel=2)
