"""reftorch.backends.mps: reftorch has no Metal back end."""
from __future__ import annotations


def is_available():
    return False


def is_built():
    return False


def is_macos_or_newer(major, minor):
    return False
