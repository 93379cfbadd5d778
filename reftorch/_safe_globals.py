"""The registry of globals a weights-only load may use (torch.serialization.add_safe_globals & co).

An entry is a class or function, or a (class-or-function, "module.qualname") pair naming it as a
checkpoint spells it. The weights-only unpickler of reftorch.load asks `lookup(module, name)`."""
from __future__ import annotations

_marked = set()     # the user's entries, as given


def add_safe_globals(safe_globals):
    """Mark the given globals as safe for weights_only loads (a list of objects or (object, path) pairs)."""
    global _marked
    _marked = _marked.union(set(safe_globals))


def get_safe_globals():
    """The user-added globals that are safe for weights_only loads."""
    return list(_marked)


def clear_safe_globals():
    """Forget every user-added safe global."""
    global _marked
    _marked = set()


def _remove_safe_globals(safe_globals):
    global _marked
    _marked = _marked - set(safe_globals)


class safe_globals:
    """with safe_globals([MyClass]): the globals are safe for weights_only loads inside the block."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, type, value, tb):
        _remove_safe_globals(self.safe_globals)


def _path(entry):
    if isinstance(entry, tuple):
        return entry[1]
    return f"{entry.__module__}.{entry.__qualname__}"


def lookup(module, name):
    """The marked global a checkpoint names as module.name, or None when it is not marked safe."""
    full = f"{module}.{name}"
    for entry in _marked:
        if _path(entry) == full:
            return entry[0] if isinstance(entry, tuple) else entry
    return None
