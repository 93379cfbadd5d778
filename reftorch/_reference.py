"""Reference mode: every kernel call is also run through its ops.yaml NumPy reference and compared.

    reftorch.set_reference_mode(True)        # or REFTORCH_REFERENCE=1 in the environment

The registry's `test: {ref, atol, rtol}` reach the runtime through the generated SPECS table (no YAML
at import). A mismatch raises ReferenceMismatchError naming the op, the inputs' shapes, dtypes and
strides, and the worst difference: a user's runtime proof that the generated kernels compute what
the registry says. Composite ops are checked through the kernels they call; views run no kernel and
are not checked (their references see values, not the storage that as_strided reads).

How a reference is called (the generated fuzz tests call references the same way):
  * tensor arguments positionally, in signature order, as NumPy arrays (a Tensor[] argument as a list
    of arrays; a Python scalar where the caller passed one; None for an absent Tensor?);
  * every other argument by keyword: to the reference's parameter of the same name, else of NumPy's
    name for it (dim/dims -> axis, keepdim -> keepdims), else to the first positional parameter that
    no other argument claims by name (`lambda x, s, dim=0` takes split_size_or_sections as s), else
    through **kwargs; an argument the reference has no room for is left out (the reference fixes it).
    A ufunc (no inspectable signature) gets the arguments that differ from their defaults positionally.
    reftorch dtypes arrive as NumPy dtypes, lists as tuples, one-element tensors as Python numbers.
  * for entries with `result: float`, integer and bool arrays arrive as float64 (NumPy would compute
    exp of a uint8 array in float16, where PyTorch computes in the default float dtype).
"""
from __future__ import annotations

import inspect
import math
import os
import warnings

import numpy as np
from .kernels.api import SPECS

NUMPY_NAMES = {"dim": ("axis",), "dims": ("axis", "axes"), "keepdim": ("keepdims",)}
# float32 results are compared at least this loosely (the entry's atol/rtol are float64 tolerances)
FLOAT32_TOL = (1e-4, 1e-4)
# 16-bit floats: a couple of bfloat16 ulps (float16 results are well inside them)
HALF_TOL = (2 ** -6, 2 ** -6)

enabled = os.environ.get("REFTORCH_REFERENCE", "").strip().lower() not in ("", "0", "false", "no", "off")
_refs = {}


class ReferenceMismatchError(RuntimeError):
    """A kernel disagreed with its NumPy reference in reference mode."""


class ReferenceWarning(RuntimeWarning):
    """A reference could not evaluate a call, so reference mode left that call unchecked."""


def set_reference_mode(mode=True):
    """Check every kernel call against its ops.yaml NumPy reference (slow; for debugging and tests)."""
    global enabled
    enabled = bool(mode)


def is_reference_mode_enabled():
    return enabled


class reference_mode:
    """Context manager: reference mode on (or off) inside the block."""

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        global enabled
        self.prev, enabled = enabled, self.mode
        return self

    def __exit__(self, *exc):
        global enabled
        enabled = self.prev


# ------------------------------------------------------------------------------ calling a reference

def compile_ref(src):
    """The callable of a `test.ref` source string (an expression; `np` and `math` are in scope)."""
    return eval(src, {"np": np, "math": math, "__builtins__": __builtins__})  # noqa: S307 -- registry text


def _ref_of(name, src):
    fn = _refs.get(name)
    if fn is None:
        fn = _refs[name] = compile_ref(src)
    return fn


def _same(a, b):
    try:
        return bool(a == b) if not isinstance(a, np.ndarray) else False
    except Exception:
        return False


def bind_ref(ref, positional, named, defaults=None):
    """(args, kwargs) calling `ref` with tensor arrays `positional` and non-tensor `named` args.

    Each named arg goes to the reference parameter of its own name, else of its NumPy name, else to
    the first free positional parameter no other arg claims by name, else into **kwargs; an arg the
    reference has no room for is left out (the reference then fixes that value itself)."""
    try:
        params = inspect.signature(ref).parameters
    except (TypeError, ValueError):     # a ufunc or builtin: tensors, then args that differ from defaults
        defaults = defaults or {}
        extra = [v for n, v in named.items() if not (n in defaults and _same(v, defaults[n]))]
        return list(positional) + extra, {}
    plist = list(params.values())
    takes_pos = [p for p in plist if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in plist):
        takes_pos = []
    free_pos = [p.name for p in takes_pos[len(positional):] if p.kind is p.POSITIONAL_OR_KEYWORD]
    keywordable = {p.name for p in plist[len(positional):] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    var_kw = any(p.kind is p.VAR_KEYWORD for p in plist)

    def by_name(name):
        for cand in (name,) + NUMPY_NAMES.get(name, ()):
            if cand in keywordable:
                return cand
        return None

    claimed = {by_name(n) for n in named} - {None}
    kwargs = {}
    for name, value in named.items():
        target = by_name(name)
        if target is None:
            spare = [p for p in free_pos if p not in claimed and p not in kwargs]
            target = spare[0] if spare else (name if var_kw else None)
        if target is not None and target not in kwargs:
            kwargs[target] = value
    return list(positional), kwargs


def to_numpy_arg(value):
    """A non-tensor argument as a reference sees it: dtypes as NumPy dtypes, lists as tuples."""
    np_dtype = getattr(value, "np", None)
    if isinstance(np_dtype, np.dtype):
        return np_dtype
    if isinstance(value, list):
        return tuple(to_numpy_arg(v) for v in value)
    if hasattr(value, "_array") and hasattr(value, "item") and value.numel() == 1:
        return value.item()
    return value


def float_inputs(positional):
    """Integer and bool arrays as float64 (for entries with `result: float`: NumPy would compute exp of a
    uint8 array in float16)."""
    def conv(x):
        if isinstance(x, list):
            return [conv(v) for v in x]
        if isinstance(x, np.ndarray) and x.dtype.kind in "biu":
            return x.astype(np.float64)
        return x
    return [conv(p) for p in positional]


def run_ref(ref, positional, named, defaults=None):
    args, kwargs = bind_ref(ref, positional, named, defaults)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ref(*args, **kwargs)


# ------------------------------------------------------------------------------ comparing results

def tolerances(atol, rtol, dtypes):
    """The entry's tolerances, loosened to FLOAT32_TOL when a float32 takes part."""
    if any(np.dtype(d).itemsize == 2 and np.dtype(d).kind not in "iu" for d in dtypes):
        return max(atol, HALF_TOL[0]), max(rtol, HALF_TOL[1])      # float16 / bfloat16
    if any(np.dtype(d) == np.float32 for d in dtypes):
        return max(atol, FLOAT32_TOL[0]), max(rtol, FLOAT32_TOL[1])
    return atol, rtol


def compare(actual, expected, atol, rtol):
    """None when `actual` (an ndarray) matches `expected`, else a sentence naming the worst difference.

    Floating results must agree within atol + rtol * |expected| (NaN matches NaN, infinities must be
    equal; a complex number with an infinite part is compared part by part); integer and bool results must
    agree exactly."""
    try:
        expected = np.asarray(expected)
    except Exception as err:
        return f"the reference returned something that is not an array ({type(err).__name__}: {err})"
    actual = np.asarray(actual)
    if actual.dtype.kind == "V" and actual.dtype.itemsize == 2:     # ml_dtypes.bfloat16 (NumPy calls it 'V')
        actual = actual.astype(np.float32)
    if expected.dtype.kind == "V" and expected.dtype.itemsize == 2:
        expected = expected.astype(np.float32)
    if actual.shape != expected.shape:
        return f"shape {tuple(actual.shape)} but the reference gives shape {tuple(expected.shape)}"
    if actual.size == 0:
        return None
    floating = actual.dtype.kind in "fc" or expected.dtype.kind in "fc"
    if floating:
        wide = np.complex128 if actual.dtype.kind == "c" or expected.dtype.kind == "c" else np.float64
        a = actual.astype(wide)
        e = expected.astype(wide)
        with np.errstate(all="ignore"):
            close = np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
            if wide is np.complex128:   # an infinite part: each part on its own (inf - inf has no modulus)
                parts = np.isclose(a.real, e.real, rtol=rtol, atol=atol, equal_nan=True) & \
                    np.isclose(a.imag, e.imag, rtol=rtol, atol=atol, equal_nan=True)
                close = np.where(np.isinf(a) | np.isinf(e), parts, close)
            diff = np.where(close, 0.0, np.abs(a - e))
        diff = np.where(np.isnan(diff), np.inf, diff)
    else:
        close = actual.astype(np.int64) == expected.astype(np.int64) if expected.dtype.kind in "biu" else \
            actual == expected
        diff = np.where(close, 0, 1).astype(np.float64)
        if expected.dtype.kind in "biu" and actual.dtype.kind in "biu":
            diff = np.where(close, 0.0, np.abs(actual.astype(np.float64) - expected.astype(np.float64)))
    if bool(np.all(close)):
        return None
    flat = int(np.argmax(diff))
    idx = np.unravel_index(flat, actual.shape) if actual.shape else ()
    bad = int(np.size(close) - np.count_nonzero(close))
    tol = f" (atol={atol:g}, rtol={rtol:g})" if floating else " (exact match required)"
    where = tuple(int(i) for i in idx)
    return (f"{bad} of {actual.size} elements differ; worst difference {diff[idx]:.6g} at index {where}: "
            f"got {actual[idx]!r}, expected {expected[idx]!r}{tol}")


def align_signs(actual, expected):
    """actual with each column (last-but-one axis runs down it) negated where its inner product with expected's
    is negative: eigenvectors are fixed only up to sign, and which one LAPACK returns is its build's choice."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    if a.shape != e.shape or a.ndim < 2 or a.dtype.kind not in "fc":
        return a
    dots = np.sum(np.conj(e) * a, axis=-2, keepdims=True).real
    return np.where(dots < 0, -a, a)


def check_outputs(outs, expected, atol, rtol, input_dtypes=(), signs=()):
    """None when the op's outputs (ndarrays, a tuple for several) match the reference's result, else why not;
    the outputs at indices `signs` are compared column by column up to sign (align_signs)."""
    if isinstance(outs, tuple):
        if not isinstance(expected, (tuple, list)):
            return f"the op returned {len(outs)} outputs but the reference returned one array"
        if len(expected) != len(outs):
            return f"the op returned {len(outs)} outputs but the reference returned {len(expected)}"
        pairs = list(zip(outs, expected))
    else:
        pairs = [(outs, expected)]
    for i, (a, e) in enumerate(pairs):
        a = align_signs(a, e) if i in signs else np.asarray(a)
        at, rt = tolerances(atol, rtol, [a.dtype] + list(input_dtypes))
        problem = compare(a, e, at, rt)
        if problem is not None:
            return (f"output {i}: " if len(pairs) > 1 else "") + problem
    return None


def describe(name, value):
    """`name: float32 shape (2, 3) strides (1, 2) offset 0` for a tensor argument."""
    if isinstance(value, (list, tuple)):
        return f"{name}: [" + "; ".join(describe(f"{name}[{i}]", v) for i, v in enumerate(value)) + "]"
    if hasattr(value, "_strides"):
        return (f"{name}: {value.dtype.name} shape {tuple(value._shape)} strides {tuple(value._strides)} "
                f"offset {value._offset}")
    return f"{name}: {value!r}"


# ------------------------------------------------------------------------------ the dispatcher's hook

def _entry(name):
    d = SPECS[name]
    return d.get("ref"), d.get("atol", 1e-5), d.get("rtol", 1e-5)


def checked_call(spec, handler, tensors, scalars):
    """Run handler(spec, tensors, scalars) and check its result against the entry's reference."""
    ref_src, atol, rtol = _entry(spec.name)
    if ref_src is None or spec.kind == "view":      # views run no kernel: they only compute geometry
        return handler(spec, tensors, scalars)
    arrays = _snapshot(tensors, spec)
    out = handler(spec, tensors, scalars)
    try:
        expected = _evaluate(spec, ref_src, arrays, scalars)
    except Exception as err:
        # NumPy rejects a call that PyTorch accepts (flip of a 0-d tensor...): nothing to compare against
        warnings.warn(f"reference mode: the NumPy reference of op '{spec.name}' (`{ref_src}`) could not evaluate "
                      f"this call ({type(err).__name__}: {err}); its result is unchecked. Inputs: "
                      f"{_inputs(spec, tensors, scalars)}", ReferenceWarning, stacklevel=3)
        return out
    arrays_out = tuple(o._array() for o in out) if isinstance(out, tuple) else out._array()
    problem = check_outputs(arrays_out, expected, atol, rtol, [x.dtype for x in arrays if isinstance(x, np.ndarray)])
    if problem is not None:
        raise ReferenceMismatchError(
            f"reference mode: op '{spec.name}' disagrees with its NumPy reference `{ref_src}`: "
            f"{problem}\n  inputs: {_inputs(spec, tensors, scalars)}")
    return out


def _snapshot(tensors, spec):
    out = []
    for t in tensors:
        if hasattr(t, "_array"):
            out.append(np.array(t._array()))
        else:
            out.append(t)
    return out


def _evaluate(spec, ref_src, arrays, scalars):
    ref = _ref_of(spec.name, ref_src)
    positional, i = [], 0
    n_list = len(arrays) - (len(spec.tensor_args) - 1) if spec.list_arg is not None else 0
    for name in spec.tensor_args:
        if name == spec.list_arg:
            positional.append(list(arrays[i:i + n_list]))
            i += n_list
        else:
            positional.append(arrays[i])
            i += 1
    named = {n: to_numpy_arg(v) for n, v in zip(spec.scalar_names, scalars)}
    defaults = {a[0]: _default(a[2]) for a in spec.args if a[2] is not None}
    if spec.result == "float":
        positional = float_inputs(positional)
    return run_ref(ref, positional, named, defaults)


def _default(src):
    try:
        return to_numpy_arg(eval(src, {"__builtins__": {}}))  # noqa: S307 -- signature defaults
    except Exception:
        return object()


def _inputs(spec, tensors, scalars):
    parts, i = [], 0
    names = list(spec.tensor_args)
    if spec.list_arg is not None:
        n_list = len(tensors) - (len(names) - 1)
        expanded = []
        for n in names:
            expanded += [n] * (n_list if n == spec.list_arg else 1)
        names = expanded
    for n, t in zip(names, tensors):
        parts.append(describe(n, t))
    for n, v in zip(spec.scalar_names, scalars):
        parts.append(f"{n}={v!r}")
    return "; ".join(parts)
