"""torch.profiler: profile (with schedule, step() and on_trace_ready), record_function, ProfilerActivity,
ProfilerAction, schedule, tensorboard_trace_handler -- on the recorder of reftorch.autograd.profiler.

    with torch.profiler.profile(record_shapes=True) as prof:
        train_step()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")      # chrome://tracing, Perfetto
"""
from __future__ import annotations

import enum
import os
import socket
import time
import warnings

from ..autograd import profiler as _recorder
from ..autograd.profiler import record_function  # noqa: F401
from ..autograd.profiler_util import EventList

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler", "supported_activities"]


class ProfilerActivity(enum.Enum):
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5

    def __repr__(self):
        return f"<ProfilerActivity.{self.name}: {self.value}>"


class ProfilerAction(enum.Enum):
    """What the profiler does at a step, as a schedule says."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def supported_activities():
    """The activities reftorch's profiler records: the host's (every op, wherever its data lives)."""
    return {ProfilerActivity.CPU}


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """skip_first steps, then cycles of wait, warmup and active steps (repeat of them; 0: until the end)."""
    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
                             f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
                             f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_):
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False, use_python_export=False):
    """An on_trace_ready that writes each trace as DIR/WORKER.TIME_NS.pt.trace.json[.gz] (TensorBoard's
    profiler plugin reads that directory)."""
    def handler_fn(prof):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, file_name))
    return handler_fn


class profile:
    """torch.profiler.profile: records the ops, backward nodes and record_function ranges run while it is
    active; with a schedule, step() moves it through wait / warmup / active steps, marking each recorded
    step as a ProfilerStep#N range and calling on_trace_ready at the end of every active cycle."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None):
        activities = set(activities) if activities else supported_activities()
        if use_cuda:
            activities.add(ProfilerActivity.CUDA)
        if len(activities) == 0:
            raise AssertionError("No valid profiler activities found")
        for device in sorted(activities - supported_activities(), key=lambda a: a.value):
            _recorder.device_dropped(device.name)
            activities.discard(device)
        _recorder._check_options(None, with_flops)
        self.activities = activities
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.schedule = schedule if schedule else _default_schedule_fn
        self.record_steps = bool(schedule)
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.step_rec_fn = None
        self.current_action = self.schedule(self.step_num)
        self.profiler = None        # the autograd profile of the cycle being (or last) recorded
        self._session = None
        self._metadata = {}

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()
        return False

    def start(self):
        self._transit(ProfilerAction.NONE, self.current_action)
        self._enter_step()

    def stop(self):
        self._exit_step()
        self._transit(self.current_action, None)

    def step(self):
        """The next step begins: the schedule's action for it takes effect."""
        self._exit_step()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        self._enter_step()

    def _enter_step(self):
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _exit_step(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None

    def _transit(self, prev, current):
        """torch's action table, in short: a recording cycle ends at RECORD_AND_SAVE (or at stop()), and is
        handed to on_trace_ready; a new one starts whenever the action is to record and none is running."""
        if prev in _RECORDING and (prev is ProfilerAction.RECORD_AND_SAVE or current not in _RECORDING):
            if prev is ProfilerAction.RECORD and current is not None:
                warnings.warn(f"Incorrect schedule: RECORD followed by {current.name}", stacklevel=3)
            self._stop_trace()
            if self.on_trace_ready:
                self.on_trace_ready(self)
        elif prev is ProfilerAction.WARMUP and current is ProfilerAction.NONE:
            warnings.warn("Incorrect schedule: WARMUP followed by NONE", stacklevel=3)
        if current in _RECORDING and self._session is None:
            self._session = _recorder._Session(self.record_shapes, self.with_stack, self.profile_memory)
            self.profiler = None
            _recorder._start(self._session)

    def _stop_trace(self):
        if self._session is not None:
            _recorder._stop(self._session)
            self.profiler = self._session
            self._session = None

    def _finished(self):
        if self.profiler is None:
            raise AssertionError("Expected profiler to be initialized")
        return self.profiler

    def events(self):
        session = self._finished()
        return EventList(session.events, profile_memory=session.profile_memory)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        return self.events().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path):
        session = self._finished()
        _recorder.write_trace(path, session, session.events, self._metadata)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        return self.events().export_stacks(path, metric)

    def add_metadata(self, key, value):
        self._metadata[key] = value

    def add_metadata_json(self, key, value):
        self._metadata[key] = value
