"""Interceptors: what may see an op call before (or instead of) the dispatcher's plan, behind one check.

  autocast     reftorch/_autocast.py (thread-local state): casts floating inputs by the op's ops.yaml policy
  tracer       reftorch.compile's Tracer while it records a call (compile/tracer.py sets and restores it)
  reference    reftorch/_reference.py: also runs the entry's NumPy reference and compares
  profiler     a hook called as profiler(spec, run, tensors, scalars) -> result, wrapping the call (None: off)
  anomaly      autograd/anomaly_mode.py: read by record(), which stores the forward trace on each node

active() is the one check the dispatcher makes before its cheapest path (_dispatch.call inlines it); intercept()
applies them in order. A new interceptor is one slot here, one test in active() and one step in intercept().
"""
from __future__ import annotations

import reftorch._autocast as _autocast
import reftorch._reference as _reference

tracer = None       # reftorch.compile's Tracer while it records a call (every op then goes through it)
profiler = None     # profiler(spec, run, tensors, scalars): the hook of a profiler, when one is recording


def active():
    return tracer is not None or profiler is not None or _autocast.state.any or _reference.enabled


def intercept(spec, run, tensors, scalars):
    """run(spec, tensors, scalars) for an out-of-place op, through the interceptors that are on."""
    if _autocast.state.any and spec.autocast is not None:
        tensors = _autocast.cast(spec.autocast, tensors)
    if tracer is not None:      # reftorch.compile is recording this call (reftorch/compile/tracer.py)
        return tracer.call(spec, tensors, scalars)
    if profiler is not None:
        return profiler(spec, _reference_or(run), tensors, scalars)
    return _reference_or(run)(spec, tensors, scalars)


def _reference_or(run):
    if _reference.enabled:      # reference mode: also run the entry's NumPy reference and compare
        return lambda spec, tensors, scalars: _reference.checked_call(spec, run, tensors, scalars)
    return run


def inplace(name, spec, run, tensors, scalars):
    """run(spec, tensors, scalars) for an in-place op: the tracer ends its captured region, reference mode checks."""
    if tracer is not None:
        tracer.inplace(name)
    return _reference_or(run)(spec, tensors, scalars)


def note_inplace(name):
    """An in-place write the tracer cannot capture (view_, foreach, composite in-place ops) ends its region."""
    if tracer is not None:
        tracer.inplace(name)
