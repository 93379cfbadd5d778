"""torch.finfo / torch.iinfo: the numerical limits of a floating and an integer dtype (read from NumPy and
ml_dtypes, which describe the same IEEE formats)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

import reftorch._dtype as D

_PY_TYPES = {float: D.float64, int: D.int64, bool: D.bool_}


def _dtype_of(fname, type, required):
    if type is None and required:
        raise TypeError(f'{fname}() missing 1 required positional arguments: "type"')
    if isinstance(type, D.dtype):
        return type
    if type in (float, int, bool):
        return _PY_TYPES[type]
    raise TypeError(f"{fname}(): argument 'type' (position 1) must be torch.dtype, not {_type_name(type)}")


def _type_name(x):
    return x.__class__.__name__


def _g(x):
    return f"{x:g}"


class finfo:
    """finfo(dtype=default dtype): bits, eps, max, min, tiny (= smallest_normal), resolution, dtype (its name)."""

    __module__ = "reftorch"

    def __init__(self, type=None):
        dt = D.get_default_dtype() if type is None else _dtype_of("finfo", type, True)
        dt = dt.to_real()       # a complex dtype: its parts' (as PyTorch's)
        if not dt.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = ml_dtypes.finfo(dt.np) if dt is D.bfloat16 else np.finfo(dt.np)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = dt.name

    def __eq__(self, other):
        return isinstance(other, finfo) and other.dtype == self.dtype

    __hash__ = None         # as torch's

    def __getattr__(self, name):
        raise AttributeError(f"'torch.finfo' object has no attribute '{name}'")

    def __repr__(self):
        return (f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, max={_g(self.max)}, eps={_g(self.eps)}, "
                f"smallest_normal={_g(self.smallest_normal)}, tiny={_g(self.tiny)}, dtype={self.dtype})")

    __str__ = __repr__


class iinfo:
    """iinfo(dtype): bits, max, min and dtype (its name) of an integer dtype."""

    __module__ = "reftorch"

    def __init__(self, type=None):
        dt = _dtype_of("iinfo", type, True)
        if dt is D.bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if dt.category != 1:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        info = np.iinfo(dt.np)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = dt.name

    def __eq__(self, other):
        return isinstance(other, iinfo) and other.dtype == self.dtype

    __hash__ = None

    def __getattr__(self, name):
        raise AttributeError(f"'torch.iinfo' object has no attribute '{name}'")

    def __repr__(self):
        return f"iinfo(min={_g(self.min)}, max={_g(self.max)}, dtype={self.dtype})"

    __str__ = __repr__
