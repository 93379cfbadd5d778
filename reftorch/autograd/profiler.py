"""torch.autograd.profiler: time every op the dispatcher runs, every backward node and every record_function.

Off, it costs nothing: the generated op wrappers call the dispatcher through one module attribute
(kernels.api._rt) and the engine asks one module attribute (engine._profiler) before a backward node runs.
While a profiler records, the first points at _Recording, which times each call around the real
dispatcher, and the second at _node_range; both go back when the last profiler stops. Ops are named as
torch names them ("aten::mm"), backward nodes too ("autograd::engine::evaluate_function: MmBackward0" around
"MmBackward0"), so a table reads the same as torch's.
"""
from __future__ import annotations

import gc
import gzip
import json
import os
import sys
import threading
import time
import warnings

import reftorch.cuda as _cuda
from .._tensor import Tensor
from ..kernels import api as _api
import reftorch.autograd.engine as _engine
from .profiler_util import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401

__all__ = ["profile", "record_function", "emit_nvtx", "EventList", "FunctionEvent", "FunctionEventAvg"]

_sessions = []          # the recording sessions, innermost last; every range goes to each of them
_lock = threading.Lock()
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # reftorch/
_MACHINERY = tuple(os.path.join(_HERE, p) for p in ("autograd" + os.sep + "profiler.py", "_dispatch.py",
                                                     "kernels" + os.sep))


def _shape(x):
    return list(x._shape) if isinstance(x, Tensor) else []


def _stack():
    """The Python frames that led here, innermost first ("file(line): function"), without the profiler's and
    the dispatcher's own."""
    entries, f = [], sys._getframe(2)
    while f is not None:
        code = f.f_code
        if not code.co_filename.startswith(_MACHINERY):
            entries.append(f"{code.co_filename}({f.f_lineno}): {code.co_name}")
        f = f.f_back
    return entries


def _fresh_bytes(result, operands):
    """Bytes of the storages result's tensors hold that no operand held before the call: what the op allocated."""
    results = result if isinstance(result, (tuple, list)) else (result,)
    seen = {id(x._storage) for x in operands if isinstance(x, Tensor)}
    total = 0
    for r in results:
        if isinstance(r, Tensor) and id(r._storage) not in seen:
            seen.add(id(r._storage))
            total += r.numel() * r.element_size()
    return total


class _Session:
    """What one profiler records: its events in the order they started, a stack of open ranges per thread."""

    def __init__(self, record_shapes=False, with_stack=False, profile_memory=False):
        self.record_shapes, self.with_stack, self.profile_memory = record_shapes, with_stack, profile_memory
        self.events = []
        self.open = {}
        self.t0 = time.perf_counter_ns()
        self.base_ns = time.time_ns()

    def now_us(self):
        return (time.perf_counter_ns() - self.t0) / 1000.0

    def begin(self, name, operands, user=False, args=None):
        tid = threading.get_native_id()
        shapes = [_shape(x) for x in operands] if self.record_shapes else []
        evt = FunctionEvent(len(self.events), name, tid, 0.0, 0.0, input_shapes=shapes,
                            stack=_stack() if self.with_stack else None, is_user_annotation=user, args=args)
        stack = self.open.setdefault(tid, [])
        if stack:
            evt.cpu_parent = stack[-1]
            stack[-1].cpu_children.append(evt)
        stack.append(evt)
        self.events.append(evt)
        evt.time_range.start = self.now_us()
        return evt

    def end(self, evt, result=None, operands=()):
        evt.time_range.end = self.now_us()
        stack = self.open.get(evt.thread)
        if stack and stack[-1] is evt:
            stack.pop()
        elif stack and evt in stack:
            stack.remove(evt)
        if self.profile_memory:
            evt.cpu_memory_usage = sum(c.cpu_memory_usage for c in evt.cpu_children) if evt.cpu_children \
                else _fresh_bytes(result, operands)


def _begin(name, operands, user=False, args=None):
    return [(s, s.begin(name, operands, user, args)) for s in _sessions]


def _end(opened, result=None, operands=()):
    for session, evt in reversed(opened):
        session.end(evt, result, operands)


def _timed(label, operands, fn, *args, **kwargs):
    opened = _begin(label, operands)
    result = None
    try:
        result = fn(*args, **kwargs)
        return result
    finally:
        _end(opened, result, operands)


class _Recording:
    """The dispatcher as the op wrappers see it while a profiler records: each entry point timed."""

    def __init__(self, rt):
        self._rt = rt

    def __getattr__(self, name):        # everything not timed (dim_alias, call_out ...) is the dispatcher's own
        return getattr(self._rt, name)

    def call(self, name, tensors, scalars):
        return _timed("aten::" + name, (*tensors, *scalars), self._rt.call, name, tensors, scalars)

    def composite(self, name, *args, **kwargs):
        return _timed("aten::" + name, (*args, *kwargs.values()), self._rt.composite, name, *args, **kwargs)

    def call_inplace(self, name, tensors, scalars):
        return _timed("aten::" + name + "_", (*tensors, *scalars), self._rt.call_inplace, name, tensors, scalars)

    def view_inplace(self, name, tensors, scalars):
        return _timed("aten::" + name + "_", (*tensors, *scalars), self._rt.view_inplace, name, tensors, scalars)

    def composite_inplace(self, name, self_, *args, **kwargs):
        return _timed("aten::" + name + "_", (self_, *args, *kwargs.values()), self._rt.composite_inplace, name,
                      self_, *args, **kwargs)

    def call_foreach(self, name, lists, scalars):
        return _timed("aten::" + name, (*lists, *scalars), self._rt.call_foreach, name, lists, scalars)


class _node_range:
    """engine._profiler while recording: a backward node's evaluation, named as torch names it."""
    __slots__ = ("outer", "inner")

    def __init__(self, node, grads):
        name = node.name()
        self.outer = _begin("autograd::engine::evaluate_function: " + name, ())
        self.inner = _begin(name, grads)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _end(self.inner)
        _end(self.outer)


def _start(session):
    with _lock:
        if not _sessions:
            _api._rt = _Recording(_api._rt)
            _engine._profiler = _node_range
            # the events are Python objects: their allocations would set off full collections of everything the
            # program holds (Numba's objects included, ~100 ms here) inside whichever op is timed then. What
            # exists now is set aside until the profile ends, so a collection walks only what is new.
            gc.freeze()
        _sessions.append(session)


def _stop(session):
    with _lock:
        if session in _sessions:
            _sessions.remove(session)
        if not _sessions and isinstance(_api._rt, _Recording):
            _api._rt = _api._rt._rt
            _engine._profiler = None
            gc.unfreeze()


class record_function:
    """A named range in the profile (a context manager or a decorator); nothing while no profiler records."""

    def __init__(self, name, args=None):
        self.name, self.args = name, args
        self._opened = None

    def __enter__(self):
        self._opened = _begin(self.name, (), user=True, args=self.args) if _sessions else None
        return self

    def __exit__(self, *exc):
        if self._opened:
            _end(self._opened)
        self._opened = None
        return False

    def __call__(self, fn):
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        wrapped.__name__, wrapped.__doc__, wrapped.__wrapped__ = fn.__name__, fn.__doc__, fn
        return wrapped


def device_dropped(name):
    """torch, where a device is missing, warns and profiles the host alone; reftorch's profiler never times a
    device, so it does the same, saying why."""
    available = name == "CUDA" and _cuda.is_available()
    warnings.warn(f"reftorch's profiler times the host only, disabling {name} profiling" if available else
                  f"{name} is not available, disabling {name} profiling", UserWarning, stacklevel=3)


def _check_options(use_device, with_flops):
    if use_device not in (None, "cpu"):
        device_dropped(str(use_device).split(":")[0].upper())
    if with_flops:
        raise RuntimeError("reftorch's profiler does not count FLOPs (with_flops=True)")


def _events_of(session, use_device=None):
    return EventList(session.events, use_device=use_device, profile_memory=session.profile_memory)


def write_trace(path, session, events, metadata=None):
    """The events as chrome://tracing's JSON object format (Kineto's layout): complete ('X') events in
    microseconds on one process, one track per thread."""
    pid = os.getpid()
    base_us = session.base_ns / 1000.0
    out = [{"ph": "M", "name": "process_name", "ts": base_us, "pid": pid, "tid": 0, "args": {"name": "python"}},
           {"ph": "M", "name": "process_labels", "ts": base_us, "pid": pid, "tid": 0, "args": {"labels": "CPU"}}]
    for tid in sorted({evt.thread for evt in events}):
        out.append({"ph": "M", "name": "thread_name", "ts": base_us, "pid": pid, "tid": tid,
                    "args": {"name": f"thread {tid} (python)"}})
    for i, evt in enumerate(events):
        args = {"External id": evt.id + 1, "Ev Idx": i}
        if session.record_shapes:
            args["Input Dims"] = evt.input_shapes
        if evt.args is not None:
            args["Args"] = evt.args
        out.append({"ph": "X", "cat": "user_annotation" if evt.is_user_annotation else "cpu_op", "name": evt.name,
                    "pid": pid, "tid": evt.thread, "ts": base_us + evt.time_range.start,
                    "dur": evt.time_range.elapsed_us(), "args": args})
    trace = {"schemaVersion": 1, "deviceProperties": [], "record_shapes": int(session.record_shapes),
             "displayTimeUnit": "ms", "baseTimeNanoseconds": session.base_ns, "traceEvents": out,
             "traceName": str(path), **(metadata or {})}
    with (gzip.open if str(path).endswith(".gz") else open)(path, "wt") as f:
        json.dump(trace, f)


class profile:
    """torch.autograd.profiler.profile: records while the context is open; the results afterwards."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        self.enabled = enabled
        self.entered, self.function_events, self._session = False, None, None
        if not enabled:
            return
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use ``use_device = 'cuda'`` "
                          "instead.", FutureWarning, stacklevel=2)
            use_device = "cuda"
        _check_options(use_device, with_flops)
        self.use_device = None
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._session = _Session(self.record_shapes, self.with_stack, self.profile_memory)
        _start(self._session)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return False
        _stop(self._session)
        self.function_events = _events_of(self._session)
        return False

    def _check_finish(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def __repr__(self):
        return "<unfinished torch.autograd.profile>" if self.function_events is None else repr(self.function_events)

    def __str__(self):
        return "<unfinished torch.autograd.profile>" if self.function_events is None else str(self.function_events)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        self._check_finish()
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit,
                                          max_src_column_width=max_src_column_width,
                                          max_name_column_width=max_name_column_width,
                                          max_shapes_column_width=max_shapes_column_width, header=header,
                                          top_level_events_only=top_level_events_only, time_unit=time_unit)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def total_average(self):
        self._check_finish()
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self):
        self._check_finish()
        return self.function_events.self_cpu_time_total

    def export_chrome_trace(self, path):
        self._check_finish()
        write_trace(path, self._session, self.function_events)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        self._check_finish()
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return self.function_events.export_stacks(path, metric)


class emit_nvtx:
    """torch.autograd.profiler.emit_nvtx: ranges for NVIDIA's profilers. enabled=False is a no-op, as in torch;
    enabled=True needs CUDA (and NVTX, which reftorch's numba.cuda back end does not emit)."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled, self.record_shapes = enabled, record_shapes

    def __enter__(self):
        if self.enabled:
            raise AssertionError("Torch not compiled with CUDA enabled")
        return self

    def __exit__(self, *exc):
        return False
