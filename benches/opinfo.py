"""PyTorch's own operator samples (OpInfo's op_db) run on reftorch and torch side by side.

    PYTHONPATH=$PWD /work/benchvenv/bin/python benches/opinfo.py [--only NAME[,NAME]] [--dtypes ...]
        [--reference] [--errors | --errors-only] [--no-grad] [--complex] [--show N] [--start NAME [--count N]]
        [--json out.json]

For every OpInfo entry whose function reftorch has, each sample input (per dtype) is run through
both libraries: the results must agree in shape, dtype and value (torch.testing.assert_close's
default tolerances), or both must raise. In float64 the samples that require grad are also
differentiated (a fixed random weighting of every floating output, summed) and the gradients of
every input compared. `--errors` also runs OpInfo's error_inputs: reftorch must raise the same
exception class with a message that matches torch's regex. Prints one row per op (agreeing /
disagreeing rows) and a summary percentage; `--show N` prints the first N disagreements per op.

torch is never a dependency of reftorch: this is a bench-venv script, not a test. Samples with
complex tensors are left out unless `--complex` is given: then complex inputs, dtypes and scalars travel
(conjugate views resolved), complex results are compared by value, and complex128 samples are differentiated
too (a complex weighting of complex outputs, the loss the real part of the weighted sum: torch's conjugate
Wirtinger gradients). Add complex64,complex128 to --dtypes to walk those samples. An op whose samples differ
from run to run under torch (a random op: two seeds give two results) is compared on shape and
dtype only, as are OpInfo's seeded random ops (wrapper_set_seed: values only torch's generator gives) and
the `empty` factories (uninitialised memory).
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import os
import signal
import sys
import types
import unittest
import warnings

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

try:
    import expecttest  # noqa: F401,E402  (op_db's test-harness import)
except ImportError:       # a stand-in is all op_db needs from it
    _stub = types.ModuleType("expecttest")
    _stub.TestCase = type("TestCase", (), {})
    sys.modules["expecttest"] = _stub

from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

import reftorch  # noqa: E402

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
          "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool,
          "complex64": torch.complex64, "complex128": torch.complex128}
COMPLEX = False     # --complex: complex samples travel and are compared (main sets it)


class Skip(Exception):
    """A sample this walk does not compare (complex tensors, torch-only objects)."""


class Missing(Exception):
    """reftorch lacks a name the sample reaches."""


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


# ---------------------------------------------------------------- torch -> reftorch

def _ref_dtype(dt):
    return getattr(reftorch, str(dt).split(".")[1])


def _to_ref(obj, memo):
    """torch values in a sample (tensors, dtypes, devices, sizes, nested) to reftorch's."""
    if isinstance(obj, torch.Tensor):
        key = id(obj)
        if key in memo:
            return memo[key]
        if (obj.is_complex() and not COMPLEX) or obj.layout != torch.strided or obj.is_quantized \
                or obj.device.type != "cpu":
            raise Skip("complex/sparse/meta")
        src = obj.detach().resolve_conj().resolve_neg()
        whole = src.untyped_storage().nbytes() // max(src.element_size(), 1)
        skey = ("storage", src.untyped_storage().data_ptr(), src.dtype)
        if src.numel() > 0 and (whole > src.numel() or skey in memo) and src.is_contiguous():
            # a view into a larger storage (base[5:15]): as_strided reads the whole storage, so it travels too,
            # once per storage, so that two views of one tensor share memory in reftorch as well (out= overlaps)
            if skey not in memo:
                flat = torch.empty(0, dtype=src.dtype).set_(src.untyped_storage(), 0, (whole,), (1,))
                memo[skey] = _to_ref(flat.clone(), {})
            data = memo[skey].as_strided(tuple(src.shape), tuple(src.stride()), src.storage_offset())
            if obj.requires_grad:
                data.requires_grad_(True)
            memo[key] = data
            return data
        arr = (src.float() if src.dtype == torch.bfloat16 else src).contiguous().numpy().copy()
        data = reftorch.from_numpy(arr)
        if src.dtype == torch.bfloat16:
            data = data.to(reftorch.bfloat16)
        if src.dim() > 0 and not src.is_contiguous() and src.numel() > 0:
            strided = reftorch.empty_strided(tuple(src.shape), tuple(src.stride()), dtype=data.dtype)
            strided.copy_(data)
            data = strided
        if src.numel() == whole and src.is_contiguous() and src.storage_offset() == 0 and src.numel():
            memo[skey] = data.reshape(-1)       # the whole storage: a later view of it (z[:2]) shares data's
        if obj.requires_grad:
            data.requires_grad_(True)
        memo[key] = data
        return data
    if isinstance(obj, torch.dtype):
        if obj.is_complex and not COMPLEX:
            raise Skip("complex dtype")
        return _ref_dtype(obj)
    if isinstance(obj, torch.device):
        return reftorch.device(str(obj))
    if isinstance(obj, torch.Size):
        return reftorch.Size(obj)
    if isinstance(obj, torch.memory_format):
        return getattr(reftorch, str(obj).split(".")[1])
    if isinstance(obj, torch.layout):
        return getattr(reftorch, str(obj).split(".")[1])
    if isinstance(obj, torch.nn.Module) and not list(obj.parameters()):
        cls = getattr(reftorch.nn, type(obj).__name__, None)     # PairwiseDistance() and the like
        if cls is None:
            raise Missing(f"nn.{type(obj).__name__}")
        module = cls()
        for key in getattr(obj, "__constants__", ()):
            setattr(module, key, getattr(obj, key))
        return module
    if isinstance(obj, torch.Generator):
        raise Skip("generator")
    if isinstance(obj, complex) and not COMPLEX:
        raise Skip("complex scalar")
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*[_to_ref(v, memo) for v in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_ref(v, memo) for v in obj)
    if isinstance(obj, dict):
        return {k: _to_ref(v, memo) for k, v in obj.items()}
    if callable(obj) and getattr(obj, "__module__", "") and obj.__module__.startswith("torch"):
        return _resolve(obj)
    return obj


def _to_torch(obj):
    """reftorch results back to torch values, for assert_close."""
    if isinstance(obj, reftorch.Tensor):
        t = obj.detach()
        if t.is_complex():
            t = t.resolve_conj().resolve_neg()
        if t.layout != reftorch.strided:
            t = t.to_dense()        # a sparse result: its values (the shape and dtype checks still apply)
        if t.dtype == reftorch.bfloat16:
            return torch.from_numpy(t.float().numpy().copy()).to(torch.bfloat16)
        if t.dtype == reftorch.complex32:       # (NumPy has no complex32: through complex64, exact)
            return torch.from_numpy(t.to(reftorch.complex64).numpy().copy()).to(torch.complex32)
        return torch.from_numpy(np.array(t.numpy(), copy=True))
    if isinstance(obj, reftorch.dtype):
        return getattr(torch, str(obj).split(".")[1])
    if isinstance(obj, reftorch.Size):
        return torch.Size(obj)
    if isinstance(obj, (list, tuple)):
        return [_to_torch(v) for v in obj]
    return obj


# ---------------------------------------------------------------- which reftorch callable

def _getattr_path(root, path):
    for part in path.split("."):
        root = getattr(root, part)
    return root


def _method_caller(name):
    def call(self, *args, **kwargs):
        if not isinstance(self, reftorch.Tensor):
            raise Missing(f"{name} on a non-tensor")
        if not hasattr(self, name):
            raise Missing(f"Tensor.{name}")
        return getattr(self, name)(*args, **kwargs)
    return call


ALIASES = {"log_sigmoid": "logsigmoid", "_threshold": "threshold"}   # torch's private spelling: public one


def _resolve(fn):
    """The reftorch counterpart of torch callable `fn` (raises Missing when there is none)."""
    name = getattr(fn, "__name__", None)
    if isinstance(fn, (types.MethodDescriptorType, types.WrapperDescriptorType)) or (
            isinstance(fn, types.FunctionType) and fn.__qualname__.startswith("Tensor.")):
        return _method_caller(name)
    if isinstance(fn, types.BuiltinFunctionType):
        module = {"torch": "", "torch._C._nn": "nn.functional", "torch._C._special": "special",
                  "torch._C._linalg": "linalg", "torch._C._fft": "fft"}.get(fn.__module__ or "torch")
        if module is None:
            raise Missing(f"{fn.__module__}.{name}")
        for prefix in ("special_", "linalg_", "fft_"):
            if module and name.startswith(prefix):
                name = name[len(prefix):]
        name = ALIASES.get(name, name)
        path = f"{module}.{name}" if module else name
    elif isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch.testing"):
        return _rebound(fn)
    elif isinstance(fn, types.FunctionType):
        module = fn.__module__[len("torch"):].lstrip(".")
        module = {"functional": "", "_tensor": ""}.get(module, module)
        qual = fn.__name__ if "<locals>" in fn.__qualname__ else fn.__qualname__  # boolean_dispatch's fn
        qual = ALIASES.get(qual, qual)
        path = f"{module}.{qual}" if module else qual
    else:
        raise Missing(repr(fn))
    try:
        return _getattr_path(reftorch, path)
    except AttributeError:
        raise Missing(path) from None


class _RefNamespace(types.ModuleType):
    """`torch` as seen by a rebound OpInfo lambda: reftorch, with Missing for absent names."""

    def __init__(self, target, name):
        super().__init__(name)
        self._target = target

    def __getattr__(self, attr):
        try:
            value = getattr(self._target, attr)
        except AttributeError:
            raise Missing(f"{self.__name__}.{attr}") from None
        if isinstance(value, types.ModuleType):
            return _RefNamespace(value, f"{self.__name__}.{attr}")
        return value


def _rebound(fn):
    """An OpInfo wrapper (lambda) with `torch` (and `F`) in its globals pointing at reftorch."""
    scope = dict(fn.__globals__)
    scope["torch"] = _RefNamespace(reftorch, "torch")
    scope["F"] = _RefNamespace(reftorch.nn.functional, "F")
    closure = fn.__closure__
    new = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


# ---------------------------------------------------------------- comparing

def _flat_tensors(obj, cls):
    if isinstance(obj, cls):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _flat_tensors(v, cls)]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _flat_tensors(v, cls)]
    return []


def _compare(ref, tor, shape_only=False):
    """None when `ref` (reftorch's, converted) agrees with `tor` (torch's); else the reason."""
    if isinstance(tor, torch.Tensor):
        if not isinstance(ref, torch.Tensor):
            return f"got {type(ref).__name__}, torch a Tensor"
        if ref.dtype != tor.dtype:
            return f"dtype {ref.dtype} vs torch {tor.dtype}"
        if ref.shape != tor.shape:
            return f"shape {tuple(ref.shape)} vs torch {tuple(tor.shape)}"
        if shape_only or (tor.dtype.is_complex and not COMPLEX):
            return None
        try:
            torch.testing.assert_close(ref, tor, equal_nan=True, check_stride=False)
        except AssertionError as e:
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            return "values: " + "; ".join(lines[:4])
        return None
    if isinstance(tor, (list, tuple)):
        if not isinstance(ref, (list, tuple)) or len(ref) != len(tor):
            return f"got {type(ref).__name__} of {len(ref) if hasattr(ref, '__len__') else '?'}" \
                   f", torch {type(tor).__name__} of {len(tor)}"
        for i, (r, t) in enumerate(zip(ref, tor)):
            why = _compare(r, t, shape_only)
            if why:
                return f"[{i}] {why}"
        return None
    if isinstance(tor, float) and isinstance(ref, (int, float)):
        return None if (math.isclose(ref, tor, rel_tol=1e-6, abs_tol=1e-9)
                        or (math.isnan(ref) and math.isnan(tor))) else f"{ref!r} vs torch {tor!r}"
    if isinstance(tor, torch.Size):
        tor, ref = list(tor), list(ref) if isinstance(ref, (list, tuple)) else ref
    elif type(ref) is not type(tor):
        return f"got {type(ref).__name__} {ref!r}, torch {type(tor).__name__} {tor!r}"
    return None if ref == tor else f"{ref!r} vs torch {tor!r}"


def _weights(outputs, seed=1234):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(tuple(o.shape)) + (1j * rng.standard_normal(tuple(o.shape)) if o.dtype.is_complex
                                                   else 0) for o in outputs]


def _differentiable(o):
    return o.requires_grad and (o.dtype.is_floating_point or (COMPLEX and o.dtype.is_complex))


def _weighted(o, w, lib):
    p = (o * lib.from_numpy(w).to(o.dtype)).sum()
    return p.real if o.dtype.is_complex else p      # a real loss: torch's conjugate Wirtinger gradients


def _grads_torch(result, inputs):
    outs = [o for o in _flat_tensors(result, torch.Tensor) if _differentiable(o)]
    if not outs:
        return None
    loss = sum(_weighted(o, w, torch) for o, w in zip(outs, _weights(outs)))
    grads = torch.autograd.grad(loss, inputs, allow_unused=True)
    return [torch.zeros_like(x) if g is None else g for x, g in zip(inputs, grads)]


def _grads_ref(result, inputs):
    outs = [o for o in _flat_tensors(result, reftorch.Tensor) if _differentiable(o)]
    if not outs:
        return None
    loss = sum(_weighted(o, w, reftorch) for o, w in zip(outs, _weights(outs)))
    grads = reftorch.autograd.grad(loss, inputs, allow_unused=True)
    return [reftorch.zeros_like(x) if g is None else g for x, g in zip(inputs, grads)]


# ---------------------------------------------------------------- one sample

def _err(e):
    return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"


def _run_torch(op, sample):
    return op.op(sample.input, *sample.args, **sample.kwargs)


UNSPECIFIED = ("empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided")


def _is_random(op, sample):
    if op.name in UNSPECIFIED:
        return True                 # uninitialised memory: only shape and dtype are defined
    code = getattr(op.op, "__code__", None)
    if code is not None and "wrapper_set_seed" in code.co_names:
        return True                 # OpInfo seeds torch's generator itself: values only torch's RNG gives
    outs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        try:
            outs.append(_run_torch(op, sample))
        except Exception:
            return False
    a, b = (_flat_tensors(o, torch.Tensor) for o in outs)
    return any(x.shape != y.shape or not torch.equal(x.detach(), y.detach())
               for x, y in zip(a, b) if not x.is_complex() and x.layout == torch.strided)


def _closer_to_float64(op, sample, r_out):
    """Whether reftorch's low-precision result agrees with torch's computed in float64 and rounded
    (torch's own float32 rounding error is not a disagreement)."""
    def up(v):
        if isinstance(v, torch.Tensor) and v.dtype in (torch.float32, torch.float16, torch.bfloat16):
            return v.detach().double()
        if isinstance(v, torch.Tensor) and v.dtype == torch.complex64:
            return v.detach().cdouble()
        if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
            return type(v)(up(x) for x in v)
        return v
    try:
        exact = _process_fns(sample)[0](op.op(up(sample.input), *up(list(sample.args)),
                                              **{k: up(v) for k, v in sample.kwargs.items()}))
        ref = _to_torch(r_out)
        ref_t, exact_t = _flat_tensors(ref, torch.Tensor), _flat_tensors(exact, torch.Tensor)
        if len(ref_t) != len(exact_t):
            return False
        return _compare(ref_t, [e.to(r.dtype) for r, e in zip(ref_t, exact_t)]) is None
    except Exception:
        return False


def _process_fns(sample):
    """Both results through the sample's output_process_fn_grad, as OpInfo's own gradient tests
    do: it keeps what is well defined (svd: |U|, S, |Vh| and U @ Vh, not the signs of the singular
    vectors, which the two LAPACKs choose differently)."""
    fn = sample.output_process_fn_grad
    if getattr(fn, "__qualname__", "").startswith("SampleInput.__init__"):
        return fn, fn                                     # the default, lambda x: x
    return fn, _rebound(fn)


def run_sample(op, rfn, sample, grad):
    """('ok' | 'bad' | 'missing' | 'skip', reason) for one sample (values, then gradients)."""
    memo = {}
    try:
        r_in = _to_ref(sample.input, memo)
        r_args = _to_ref(list(sample.args), memo)
        r_kwargs = _to_ref(dict(sample.kwargs), memo)
    except Skip as e:
        return "skip", str(e)
    except Missing as e:
        return "missing", str(e)
    except Exception as e:
        return "skip", f"unconvertible: {_err(e)}"
    random_op = _is_random(op, sample)
    torch.manual_seed(0)
    try:
        t_out = _run_torch(op, sample)
        t_err = None
    except Exception as e:
        t_out, t_err = None, e
    reftorch.manual_seed(0)
    try:
        r_out = rfn(r_in, *r_args, **r_kwargs)
        r_err = None
    except (Missing, Timeout):
        raise
    except Exception as e:
        r_out, r_err = None, e
    if t_err is not None or r_err is not None:
        if t_err is not None and r_err is not None:
            return "ok", None
        if t_err is not None:
            return "bad", f"torch raises {_err(t_err)}; reftorch returns"
        if isinstance(r_err, AttributeError) and "has no attribute" in str(r_err):
            return "missing", _err(r_err)
        return "bad", f"reftorch raises {_err(r_err)}"
    if not COMPLEX and any(isinstance(t, torch.Tensor) and t.is_complex() for t in _flat_tensors(t_out, torch.Tensor)):
        return "skip", "complex result"
    try:
        why = _compare(_to_torch(r_out), t_out, shape_only=True)
        if not why:
            t_fn, r_fn = _process_fns(sample)
            t_out, r_out = t_fn(t_out), r_fn(r_out)
            why = _compare(_to_torch(r_out), t_out, shape_only=random_op)
    except Exception as e:
        why = f"comparing: {_err(e)}"
    if why and why.startswith("values") and _closer_to_float64(op, sample, r_out):
        why = None
    if why:
        return "bad", why
    if not grad:
        return "ok", None
    t_inputs = [t for t in _flat_tensors([sample.input, list(sample.args), sample.kwargs], torch.Tensor)
                if t.requires_grad]
    t_inputs = list({id(t): t for t in t_inputs}.values())
    if not t_inputs:
        return "ok", None
    r_inputs = [memo[id(t)] for t in t_inputs]
    t_out, r_out = _wrapped_for_grad(op, rfn, sample, (r_in, r_args, r_kwargs), t_out, r_out)
    try:
        t_grads, tg_err = _grads_torch(t_out, t_inputs), None
    except Exception as e:
        t_grads, tg_err = None, e
    try:
        r_grads, rg_err = _grads_ref(r_out, r_inputs), None
    except Timeout:
        raise
    except Exception as e:
        r_grads, rg_err = None, e
    if tg_err is not None or rg_err is not None:
        if tg_err is not None and rg_err is not None:
            return "ok", None
        if tg_err is not None:
            return "bad", f"grad: torch raises {_err(tg_err)}; reftorch differentiates"
        return "bad", f"grad: reftorch raises {_err(rg_err)}"
    if (t_grads is None) != (r_grads is None):
        return "bad", f"grad: requires_grad of the result: reftorch {r_grads is not None}, " \
                      f"torch {t_grads is not None}"
    if t_grads is None or random_op:
        return "ok", None
    why = _compare(_to_torch(r_grads), list(t_grads))
    if why and _torch_grad_fails(op):
        # torch's gradient is no reference here: central differences are (at a kink, where they are not
        # either, agreeing with torch's subgradient above is enough)
        fd = _fd_grads(rfn, sample, t_inputs)
        fd_why = "inputs too large to perturb" if fd is None else _compare(_to_torch(r_grads), fd)
        why = f"{why}; vs finite differences: {fd_why}" if fd_why else None
    return ("bad", f"grad {why}") if why else ("ok", None)


def _wrapped_for_grad(op, rfn, sample, r_call, t_out, r_out):
    """The results to differentiate: through OpInfo's gradcheck_wrapper where the op has one (a Hermitian
    input is A + A^H, a triangular one its triangle, as torch's own gradient tests), else the plain ones."""
    wrapper = op.gradcheck_wrapper
    if getattr(wrapper, "__qualname__", "").startswith("OpInfo."):
        return t_out, r_out                                   # the default: op(*args, **kwargs)
    t_fn, r_fn = _process_fns(sample)
    r_in, r_args, r_kwargs = r_call
    try:
        r_new = r_fn(_rebound(wrapper)(rfn, r_in, *r_args, **r_kwargs))
    except Exception:
        return t_out, r_out                                   # a wrapper reftorch cannot run (masked ops)
    return t_fn(wrapper(op.op, sample.input, *sample.args, **sample.kwargs)), r_new


def _torch_grad_fails(op):
    """OpInfo marks torch's own gradcheck of this op an expected failure (as_strided_scatter's
    backward with respect to self, ...): torch's gradient is no reference there."""
    return any(getattr(d, "cls_name", None) == "TestBwdGradients" and d.test_name == "test_fn_grad"
               and unittest.expectedFailure in d.decorators and d.device_type in (None, "cpu")
               and (d.dtypes is None or torch.float64 in d.dtypes) and d.active_if
               for d in op.decorators)


def _fd_grads(rfn, sample, t_inputs, eps=1e-6, most=400):
    """Central differences of the walk's weighted loss of reftorch's (processed) result, with
    respect to each input that requires grad; None when the inputs are too large to perturb. A complex
    input is perturbed along its real and imaginary parts: dL/dx + i dL/dy, torch's gradient of a real loss."""
    if sum(t.numel() for t in t_inputs) > most:
        return None
    r_fn = _process_fns(sample)[1]

    def loss(values):
        memo = {id(t): _to_ref(v, {}) for t, v in zip(t_inputs, values)}
        out = r_fn(rfn(_to_ref(sample.input, memo), *_to_ref(list(sample.args), memo),
                       **_to_ref(dict(sample.kwargs), memo)))
        outs = [o for o in _flat_tensors(out, reftorch.Tensor)
                if o.dtype.is_floating_point or (COMPLEX and o.dtype.is_complex)]
        return sum(float(np.real(o.detach().resolve_conj().numpy().astype(np.complex128 if o.dtype.is_complex
                                                                            else np.float64) * w).sum())
                   for o, w in zip(outs, _weights(outs)))

    base = [t.detach().clone() for t in t_inputs]
    grads = []
    for k, t in enumerate(base):
        g = torch.zeros_like(t)
        for i in range(t.numel()):
            for step in ((1, 1j) if t.is_complex() else (1,)):
                vals = [b.clone() for b in base]
                vals[k].view(-1)[i] += eps * step
                up = loss(vals)
                vals[k].view(-1)[i] -= 2 * eps * step
                g.view(-1)[i] += (up - loss(vals)) / (2 * eps) * step
        grads.append(g)
    return grads


def run_error_input(rfn, err_input):
    sample = err_input.sample_input
    try:
        memo = {}
        r_in = _to_ref(sample.input, memo)
        r_args = _to_ref(list(sample.args), memo)
        r_kwargs = _to_ref(dict(sample.kwargs), memo)
    except Skip as e:
        return "skip", str(e)
    except Exception as e:
        return "skip", f"unconvertible: {_err(e)}"
    try:
        rfn(r_in, *r_args, **r_kwargs)
    except (Missing, Timeout):
        raise
    except Exception as e:
        import re
        if not isinstance(e, err_input.error_type):
            return "bad", f"error: reftorch raises {_err(e)}, torch {err_input.error_type.__name__}" \
                          f" /{err_input.error_regex}/"
        if not re.search(err_input.error_regex, str(e)):
            return "bad", f"error message: {_err(e)} !~ /{err_input.error_regex}/"
        return "ok", None
    return "bad", f"error: reftorch returns, torch raises {err_input.error_type.__name__}" \
                  f" /{err_input.error_regex}/"


# ---------------------------------------------------------------- the walk

def _samples(op, dtype, grad, reference):
    gen = op.reference_inputs if reference else op.sample_inputs
    return list(gen("cpu", dtype, requires_grad=grad))


def walk_op(op, dtypes, args):
    """Counter of outcomes and a list of disagreement reasons for one OpInfo entry."""
    counts, reasons = collections.Counter(), []
    try:
        rfn = _resolve(op.op)
    except Missing as e:
        counts["missing"] += 1
        return counts, [f"missing {e}"]
    supported = op.supported_dtypes("cpu")
    plan = []
    for dt in dtypes:
        if dt not in supported:
            continue
        grad = (dt in (torch.float64, torch.complex128) and not args.no_grad and op.supports_autograd
                and dt in op.supported_backward_dtypes("cpu"))
        plan.append((dt, grad))
    for dt, grad in [] if args.errors_only else plan:
        try:
            samples = _samples(op, dt, grad, args.reference)
        except Exception as e:
            reasons.append(f"{dt}: sample generator failed: {_err(e)}")
            continue
        for i, sample in enumerate(samples):
            signal.alarm(args.timeout)
            try:
                status, why = run_sample(op, rfn, sample, grad)
            except Timeout:
                status, why = "bad", "timeout"
            except Missing as e:
                status, why = "missing", str(e)
            except Exception as e:
                status, why = "bad", f"walk error {_err(e)}"
            finally:
                signal.alarm(0)
            counts[status] += 1
            if status in ("bad", "missing"):
                reasons.append(f"{str(dt)[6:]}#{i}: {why}  <- {_describe(sample)}")
    if args.errors:
        try:
            err_inputs = list(op.error_inputs("cpu"))
        except Exception:
            err_inputs = []
        for e_in in err_inputs:
            signal.alarm(args.timeout)
            try:
                status, why = run_error_input(rfn, e_in)
            except Timeout:
                status, why = "bad", "timeout"
            except Missing as e:
                status, why = "missing", str(e)
            finally:
                signal.alarm(0)
            counts["err_" + status] += 1
            if status == "bad":
                reasons.append(f"errors: {why}  <- {_describe(e_in.sample_input)}")
    return counts, reasons


def _describe(sample):
    def d(v):
        if isinstance(v, torch.Tensor):
            return f"T{list(v.shape)}{str(v.dtype)[6:]}{'' if v.is_contiguous() else 'nc'}" \
                   f"{'g' if v.requires_grad else ''}"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(d(x) for x in v) + "]"
        return repr(v)
    kw = ", ".join(f"{k}={d(v)}" for k, v in sample.kwargs.items())
    return f"({d(sample.input)}, {', '.join(d(a) for a in sample.args)}{', ' if kw else ''}{kw})"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", help="comma-separated OpInfo names (name or name.variant)")
    p.add_argument("--dtypes", default="float32,float64,int64,bool",
                   help=f"from {','.join(DTYPES)}")
    p.add_argument("--reference", action="store_true", help="reference_inputs, not sample_inputs")
    p.add_argument("--errors", action="store_true", help="also error_inputs")
    p.add_argument("--errors-only", action="store_true", help="only error_inputs (the whole op_db in a minute)")
    p.add_argument("--no-grad", action="store_true")
    p.add_argument("--complex", action="store_true", help="complex samples too (see the docstring)")
    p.add_argument("--show", type=int, default=3, help="disagreements printed per op")
    p.add_argument("--timeout", type=int, default=30, help="seconds per sample")
    p.add_argument("--start", help="begin the walk at this OpInfo name (op_db's order)")
    p.add_argument("--count", type=int, help="walk at most this many entries from --start")
    p.add_argument("--json")
    args = p.parse_args(argv)
    args.errors = args.errors or args.errors_only
    global COMPLEX
    COMPLEX = args.complex
    warnings.simplefilter("ignore")
    signal.signal(signal.SIGALRM, _alarm)
    dtypes = [DTYPES[d] for d in args.dtypes.split(",")]
    only = set(args.only.split(",")) if args.only else None
    total, report = collections.Counter(), {}
    print(f"{'op':40s} {'agree':>6s} {'differ':>6s} {'missing':>7s} {'skip':>5s}")
    started = args.start is None
    for op in op_db:
        started = started or op.name == args.start
        if not started:
            continue
        if args.count is not None:
            if args.count <= 0:
                break
            args.count -= 1
        full = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
        if only and op.name not in only and full not in only:
            continue
        counts, reasons = walk_op(op, dtypes, args)
        total.update(counts)
        report[full] = {"counts": dict(counts), "reasons": reasons}
        if counts.get("ok", 0) == 0 and counts.get("bad", 0) == 0 and not counts.get("err_bad"):
            continue                                   # reftorch does not have it
        bad = counts["bad"] + counts["err_bad"]
        print(f"{full:40s} {counts['ok'] + counts['err_ok']:6d} {bad:6d} "
              f"{counts['missing'] + counts['err_missing']:7d} {counts['skip'] + counts['err_skip']:5d}",
              flush=True)
        for why in reasons[:args.show if bad else 0]:
            print(f"    {why[:300]}")
    have = total["ok"] + total["bad"]
    print(f"\nsamples: {have} compared, {total['ok']} agree ({100.0 * total['ok'] / max(have, 1):.1f}%),"
          f" {total['bad']} differ; {total['missing']} reach a missing name; {total['skip']} skipped")
    if args.errors:
        have_e = total["err_ok"] + total["err_bad"]
        print(f"error inputs: {have_e} compared, {total['err_ok']} agree "
              f"({100.0 * total['err_ok'] / max(have_e, 1):.1f}%)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"total": dict(total), "ops": report}, f, indent=1)


if __name__ == "__main__":
    main()
