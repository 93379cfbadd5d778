"""torch.sym_*: SymInt-aware helpers of PyTorch, on the plain Python numbers (and tensors) reftorch has; reftorch
traces no symbolic shapes, so each is its non-symbolic branch in torch 2.13 (same results, types and errors)."""
from __future__ import annotations

import builtins
import math

import numpy as np

_NUMBER_TYPES = (np.integer, np.floating, int, float)       # what sym_max / sym_min accept
_FLOAT_TYPES = (np.floating, float)


def sym_float(a):
    """float(a), or a's own __sym_float__."""
    if hasattr(a, "__sym_float__"):
        return a.__sym_float__()
    return builtins.float(a)


def sym_int(a):
    """int(a): a float truncates toward zero."""
    return builtins.int(a)


def _check_numbers(a, b):
    for x in (a, b):
        if not isinstance(x, _NUMBER_TYPES):
            raise AssertionError(f"expected {_NUMBER_TYPES}, got {type(x)}")
    return isinstance(a, _FLOAT_TYPES) or isinstance(b, _FLOAT_TYPES)


def sym_max(a, b):
    """max(a, b) of two numbers; a float if either is one (sym_max(1, 1.0) == sym_max(1.0, 1) == 1.0)."""
    if _check_numbers(a, b):
        return builtins.float(builtins.max(a, b))
    return builtins.max(a, b)


def sym_min(a, b):
    """min(a, b) of two numbers; a float if either is one."""
    if _check_numbers(a, b):
        return builtins.float(builtins.min(a, b))
    return builtins.min(a, b)


def sym_not(a):
    """not a (a's own __sym_not__ where it has one)."""
    if hasattr(a, "__sym_not__"):
        return a.__sym_not__()
    return not a


def sym_sqrt(a):
    """math.sqrt(a) (a's own __sym_sqrt__ where it has one)."""
    if hasattr(a, "__sym_sqrt__"):
        return a.__sym_sqrt__()
    return math.sqrt(a)


def sym_sum(*args):
    """sum of sym_sum([a, b, c]) or sym_sum(a, b, c)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_ite(b, t, f):
    """t if b else f: b a bool, t and f of one type."""
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


FUNCTIONS = {f.__name__: f for f in (sym_float, sym_int, sym_max, sym_min, sym_not, sym_sqrt, sym_sum, sym_ite)}
