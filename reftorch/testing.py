"""reftorch.testing: assert_close with PyTorch's default tolerances and messages; gradcheck, gradgradcheck.

    reftorch.testing.assert_close(actual, expected)          # tolerances chosen by dtype
    reftorch.testing.assert_close(actual, expected, rtol=0, atol=0)

Tensors, NumPy arrays, Python numbers and bools, None, and (nested) sequences and mappings of
them are compared as torch.testing.assert_close compares them, and mismatches are reported in its words.
"""
from __future__ import annotations

import collections.abc
import math

import numpy as np

import reftorch._dtype as D
from ._tensor import Tensor
from .autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: F401

__all__ = ["assert_close", "gradcheck", "gradgradcheck", "GradcheckError", "make_tensor"]

# {dtype name: (rtol, atol)}, PyTorch's table; every other dtype compares exactly
_DTYPE_PRECISIONS = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
                     "float64": (1e-7, 1e-7)}
_NUMBER_DTYPES = {bool: D.bool_, int: D.int64, float: D.float64}


class _Mismatch(Exception):
    """A comparison failure on its way out: exception type, message and the item it occurred for."""

    def __init__(self, type_, msg, id_=()):
        super().__init__(msg)
        self.type, self.msg, self.id = type_, msg, id_

    def to_error(self, user_msg=None):
        msg = self.msg
        if user_msg is not None and self.type is AssertionError:
            msg = user_msg(msg) if callable(user_msg) else user_msg
        if self.id:
            msg += f"\n\nThe failure occurred for item {''.join(str([i]) for i in self.id)}"
        return self.type(msg)


def default_tolerances(*dtypes):
    """(rtol, atol): the loosest of PyTorch's defaults for the given dtypes."""
    rtols, atols = zip(*[_DTYPE_PRECISIONS.get(getattr(d, "name", str(d)), (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _tolerances(dtypes, rtol, atol, id_):
    if (rtol is None) ^ (atol is None):
        raise _Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                    f"but got no {'rtol' if rtol is None else 'atol'}.", id_)
    if rtol is not None:
        return rtol, atol
    return default_tolerances(*dtypes)


def _diff_msg(kind, diff, idx, tol, equality):
    msg = f"{kind.title()} difference: {diff}" if idx is None else f"Greatest {kind} difference: {diff} at index {idx}"
    if not equality:
        msg += f" (up to {tol} allowed)"
    return msg + "\n"


def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    equality = rtol == 0 and atol == 0
    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += extra.strip() + "\n"
    msg += _diff_msg("absolute", abs_diff, abs_idx, atol, equality)
    msg += _diff_msg("relative", rel_diff, rel_idx, rtol, equality)
    return msg.strip()


def _scalar_msg(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff, None,
                         rtol)


def _compare_numbers(actual, expected, rtol, atol, equal_nan, check_dtype, id_):
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.", id_)
    rtol, atol = _tolerances([_NUMBER_DTYPES.get(type(x), D.float64) for x in (actual, expected)], rtol, atol, id_)
    if actual == expected:
        return
    if equal_nan and math.isnan(actual) and math.isnan(expected):
        return
    abs_diff = abs(actual - expected)
    if math.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return
    raise _Mismatch(AssertionError, _scalar_msg(actual, expected, rtol, atol), id_)


def _as_tensor(x, id_):
    if isinstance(x, Tensor):
        return x
    from ._creation import as_tensor
    try:
        return as_tensor(x)
    except Exception as err:
        raise _Mismatch(ValueError, f"Constructing a tensor from {type(x)} failed with \n{err}.", id_) from err


def _compare_tensors(actual, expected, *, rtol, atol, equal_nan, check_device, check_dtype, check_stride, id_):
    a, e = _as_tensor(actual, id_), _as_tensor(expected, id_)

    def attr(name, x, y):
        raise _Mismatch(AssertionError, f"The values for attribute '{name}' do not match: {x} != {y}.", id_)

    if a.shape != e.shape:
        attr("shape", a.shape, e.shape)
    if check_stride and a.stride() != e.stride():
        attr("stride()", a.stride(), e.stride())
    if check_device and str(a.device) != str(e.device):
        attr("device", a.device, e.device)
    if check_dtype and a.dtype is not e.dtype:
        attr("dtype", a.dtype, e.dtype)
    rtol, atol = _tolerances([a.dtype, e.dtype], rtol, atol, id_)
    common = D.promote_types(a.dtype, e.dtype)
    wide = np.float64 if common.is_floating_point else np.int64
    av = np.asarray(a.detach()._array(), dtype=wide)
    ev = np.asarray(e.detach()._array(), dtype=wide)
    with np.errstate(all="ignore"):
        mismatches = ~np.isclose(av, ev, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not mismatches.any():
        return
    if av.shape == ():
        raise _Mismatch(AssertionError, _scalar_msg(av.item(), ev.item(), rtol, atol), id_)
    total = int(mismatches.sum())
    n = mismatches.size
    extra = f"Mismatched elements: {total} / {n} ({total / n:.1%})"
    af, ef, bad = av.reshape(-1), ev.reshape(-1), mismatches.reshape(-1)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(af - ef)
        abs_diff[~bad] = 0
        rel_diff = abs_diff / np.abs(ef)
    rel_diff[~bad] = 0
    ai = int(np.argmax(np.where(np.isnan(abs_diff), np.inf, abs_diff)))
    ri = int(np.argmax(np.where(np.isnan(rel_diff), np.inf, rel_diff)))
    unravel = lambda i: tuple(int(k) for k in np.unravel_index(i, mismatches.shape))  # noqa: E731
    raise _Mismatch(AssertionError, _mismatch_msg("Tensor-likes", extra, abs_diff[ai].item(), unravel(ai), atol,
                                                  rel_diff[ri].item(), unravel(ri), rtol), id_)


def _tensor_like(x):
    return isinstance(x, (Tensor, np.ndarray))


def _compare(actual, expected, id_, opts):
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and not isinstance(actual, str) and isinstance(expected, seq) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                            id_)
        for i in range(len(actual)):
            _compare(actual[i], expected[i], id_ + (i,), opts)
        return
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        ak, ek = set(actual), set(expected)
        if ak != ek:
            raise _Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                                            f"Missing keys in the actual mapping: {sorted(ek - ak)}\n"
                                            f"Additional keys in the actual mapping: {sorted(ak - ek)}", id_)
        for k in sorted(ak):
            _compare(actual[k], expected[k], id_ + (k,), opts)
        return
    if actual is None or expected is None:
        if not (actual is None and expected is None):
            raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", id_)
        return
    bools = (bool, np.bool_)
    if isinstance(actual, bools) and isinstance(expected, bools):
        if bool(actual) is not bool(expected):
            raise _Mismatch(AssertionError, f"Booleans mismatch: {bool(actual)} is not {bool(expected)}", id_)
        return
    numbers = (int, float, np.number)
    if isinstance(actual, numbers) and isinstance(expected, numbers) and not isinstance(actual, bool) \
            and not isinstance(expected, bool):
        a = actual.item() if isinstance(actual, np.number) else actual
        e = expected.item() if isinstance(expected, np.number) else expected
        _compare_numbers(a, e, opts["rtol"], opts["atol"], opts["equal_nan"], opts["check_dtype"], id_)
        return
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if _tensor_like(actual) and _tensor_like(expected) and related and \
            (opts["allow_subclasses"] or type(actual) is type(expected)):
        _compare_tensors(actual, expected, rtol=opts["rtol"], atol=opts["atol"], equal_nan=opts["equal_nan"],
                         check_device=opts["check_device"], check_dtype=opts["check_dtype"],
                         check_stride=opts["check_stride"], id_=id_)
        return
    raise _Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                               f"{type(expected)}.", id_)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Assert that actual and expected are close: |actual - expected| <= atol + rtol * |expected|.

    Without rtol/atol, PyTorch's defaults for the dtypes apply (float32: 1.3e-6/1e-5, float64:
    1e-7/1e-7, integers and bool: exact). Raises AssertionError with PyTorch's message otherwise."""
    __tracebackhide__ = True
    opts = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                check_device=check_device, check_dtype=check_dtype, check_stride=check_stride)
    try:
        _compare(actual, expected, (), opts)
    except _Mismatch as m:
        raise m.to_error(msg) from None


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False):
    """A tensor of the given shape and dtype filled with uniform values in [low, high) (PyTorch's helper)."""
    from ._creation import from_numpy
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    dt = D.as_dtype(dtype)
    rng = np.random.default_rng()
    if dt is D.bool_:
        arr = rng.integers(0, 2, shape).astype(bool)
    elif dt.is_floating_point:
        lo = -9.0 if low is None else low
        hi = 9.0 if high is None else high
        arr = rng.uniform(lo, hi, shape).astype(dt.np)
        if exclude_zero:
            arr[arr == 0] = np.finfo(dt.np).tiny
    else:
        info = np.iinfo(dt.np)
        lo = max(-9 if low is None else int(low), int(info.min))
        hi = min(10 if high is None else int(high), int(info.max) + 1)
        arr = rng.integers(lo, hi, shape).astype(dt.np)
        if exclude_zero:
            arr[arr == 0] = 1
    if noncontiguous and arr.size > 1:
        arr = np.repeat(arr[..., None], 2, axis=-1)[..., 0]
    t = from_numpy(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t
