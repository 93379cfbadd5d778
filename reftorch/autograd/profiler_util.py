"""The profiler's results, as torch.autograd.profiler_util has them: FunctionEvent (one timed range: an op, a
backward node, a record_function), FunctionEventAvg (events grouped by key), EventList with table(),
key_averages(), total_average(), export_chrome_trace() and export_stacks().

Times are in microseconds, relative to the profiler's start; the table is torch's, column for column.
"""
from __future__ import annotations

import json
from collections import defaultdict

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval", "DeviceType"]


class DeviceType:
    """torch.autograd.DeviceType's members that a CPU profile shows."""
    CPU = "DeviceType.CPU"
    CUDA = "DeviceType.CUDA"


class Interval:
    def __init__(self, start, end):
        self.start, self.end = start, end

    def elapsed_us(self):
        return self.end - self.start


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_time_us):
    if total_time_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes):
    KB, MB, GB = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= GB:
        return f"{nbytes * 1.0 / GB:.2f} GB"
    if abs(nbytes) >= MB:
        return f"{nbytes * 1.0 / MB:.2f} MB"
    if abs(nbytes) >= KB:
        return f"{nbytes * 1.0 / KB:.2f} KB"
    return str(nbytes) + " B"


class _FormattedTimes:
    """The *_str forms of the times (FormattedTimesMixin)."""
    cpu_time_str = property(lambda self: _format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: _format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: _format_time(self.self_cpu_time_total))
    device_time_str = property(lambda self: _format_time(self.device_time))
    device_time_total_str = property(lambda self: _format_time(self.device_time_total))
    self_device_time_total_str = property(lambda self: _format_time(self.self_device_time_total))

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    cuda_time = device_time


class FunctionEvent(_FormattedTimes):
    """One profiled range on one thread: its children are the ranges that opened inside it."""

    def __init__(self, id, name, thread, start_us, end_us, input_shapes=None, stack=None, is_user_annotation=False,
                 sequence_nr=-1, cpu_memory_usage=0, args=None):
        self.id, self.name, self.key, self.trace_name = id, name, name, name
        self.thread, self.fwd_thread = thread, thread
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.is_user_annotation = is_user_annotation
        self.sequence_nr = sequence_nr
        self.cpu_children, self.cpu_parent = [], None
        self.cpu_memory_usage = cpu_memory_usage      # bytes its outputs allocated, its own and its children's
        self.args = args
        self.count, self.node_id, self.overload_name = 1, -1, ""
        self.device_type, self.use_device = DeviceType.CPU, None
        self.is_async = self.is_remote = self.is_legacy = False
        self.device_time_total = self.self_device_time_total = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.flops, self.kernels = 0, []

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(child.cpu_time_total for child in self.cpu_children)

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(child.cpu_memory_usage for child in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} device_type={self.device_type} node_id={self.node_id} "
                f"cpu_time={self.cpu_time_str} start_us={self.time_range.start:.3f} "
                f"end_us={self.time_range.end:.3f} cpu_children={[c.id for c in self.cpu_children]} "
                f"thread={self.thread} input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg(_FormattedTimes):
    """The events of one key, summed (key_averages)."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = self.is_remote = self.is_legacy = False
        self.use_device = None
        self.device_type = DeviceType.CPU
        self.is_user_annotation = False
        self.cpu_time_total = self.self_cpu_time_total = 0
        self.device_time_total = self.self_device_time_total = 0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0
        self.input_shapes, self.overload_name, self.stack = None, None, None
        self.cpu_parent, self.cpu_children = None, None
        self.flops = 0

    def add(self, other):
        if self.key is None:
            self.key, self.node_id, self.is_async, self.is_remote = other.key, other.node_id, other.is_async, \
                other.is_remote
            self.cpu_parent, self.cpu_children = other.cpu_parent, other.cpu_children
            self.input_shapes, self.overload_name, self.stack = other.input_shapes, other.overload_name, other.stack
            self.device_type, self.is_user_annotation = other.device_type, other.is_user_annotation
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {self.key} vs {other.key}")
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.count += other.count
        return self

    __iadd__ = add

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of FunctionEvent or FunctionEventAvg, with torch's table and exports."""

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False):
        super().__init__(*args)
        self._use_device, self._profile_memory, self._with_flops = use_device, profile_memory, with_flops

    def __str__(self):
        return self.table()

    @property
    def self_cpu_time_total(self):
        return sum(event.self_cpu_time_total for event in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        return _build_table(self, sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width, header=header,
                            profile_memory=self._profile_memory, top_level_events_only=top_level_events_only,
                            time_unit=time_unit)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False):
        stats = defaultdict(FunctionEventAvg)
        for evt in self:
            key = [str(evt.key), str(evt.node_id), str(evt.device_type), str(evt.is_legacy),
                   str(evt.is_user_annotation)]
            if group_by_overload_name:
                key.append(evt.overload_name)
            if group_by_input_shapes:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += evt.stack[:group_by_stack_n]
            stats[tuple(key)].add(evt)
        avg_list = EventList(stats.values(), use_device=self._use_device, profile_memory=self._profile_memory,
                             with_flops=self._with_flops)
        for evt in avg_list:
            evt.stack = evt.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                evt.input_shapes = ""
            if not group_by_overload_name:
                evt.overload_name = ""
        return avg_list

    def total_average(self):
        total = FunctionEventAvg()
        for evt in self:
            total += evt
            total.key = None
        total.key = "Total"
        return total

    def export_chrome_trace(self, path):
        """The events as chrome://tracing's JSON array format: one complete ('X') event per range."""
        events = [{"name": evt.trace_name, "ph": "X", "ts": evt.time_range.start, "dur": evt.time_range.elapsed_us(),
                   "tid": evt.thread, "pid": "CPU functions", "args": {}} for evt in self]
        with open(path, "w") as f:
            json.dump(events, f)

    def supported_export_stacks_metrics(self):
        return ["self_cpu_time_total", "self_cuda_time_total", "self_xpu_time_total", "self_privateuse1_time_total"]

    def export_stacks(self, path, metric):
        """One line per event with a stack: its frames outermost first, ';'-joined, then the metric (flame graphs)."""
        if metric not in self.supported_export_stacks_metrics():
            raise ValueError("metric should be one of: " + str(self.supported_export_stacks_metrics()))
        translate = str.maketrans(" ;\t\n", "____")
        attr = metric.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")
        with open(path, "w") as f:
            for evt in self:
                if evt.stack and int(getattr(evt, attr)) > 0:
                    frames = ";".join(entry.translate(translate) for entry in reversed(evt.stack))
                    f.write(f"{frames} {int(getattr(evt, attr))}\n")


def _row_format(widths, left_last=False):
    """torch's row format: right-aligned columns two spaces apart (a source column is left-aligned)."""
    fmt = "".join("{: " + ("<" if left_last and i == len(widths) - 1 else ">") + str(w) + "}  "
                  for i, w in enumerate(widths))
    return fmt, "".join("-" * w + "  " for w in widths), sum(widths) + 2 * len(widths) - 2


def _headers(events, profile_memory, has_shapes, has_stack, name_width, shapes_width, src_width):
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    widths = [name_width] + [12] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
    if has_stack:
        headers.append("Source Location")
        widths.append(src_width)
    return headers, widths


def _time(time_us, time_unit):
    if time_unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if time_unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if time_unit == "us":
        return f"{time_us:.3f}us"
    return _format_time(time_us)


def _trim_path(path, width):
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def _row(evt, total, profile_memory, has_shapes, has_stack, max_name, shapes_width, src_width, time_unit):
    name = evt.key
    if max_name is not None and len(name) >= max_name - 3:
        name = name[:max_name - 3] + "..."
    row = [name, _format_time_share(evt.self_cpu_time_total, total), _time(evt.self_cpu_time_total, time_unit),
           _format_time_share(evt.cpu_time_total, total) if not evt.is_async else 0,
           _time(evt.cpu_time_total, time_unit), _time(evt.cpu_time, time_unit)]
    if profile_memory:
        row += [_format_memory(evt.cpu_memory_usage), _format_memory(evt.self_cpu_memory_usage)]
    row.append(evt.count)
    if has_shapes:
        row.append(str(evt.input_shapes)[:shapes_width])
    if has_stack:
        row.append(_trim_path(evt.stack[0], src_width) if evt.stack else "")
    return row


def _build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                 max_name_column_width=55, max_shapes_column_width=80, profile_memory=False,
                 top_level_events_only=False, time_unit=None):
    """torch.autograd.profiler_util._build_table for CPU events."""
    if len(events) == 0:
        return ""
    has_shapes = any(evt.input_shapes is not None and len(evt.input_shapes) > 0 for evt in events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device").replace("privateuse1", "device")
        events = sorted(events, key=lambda evt: getattr(evt, attr), reverse=True)
    name_width = max(len(evt.key) for evt in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(evt.input_shapes)) for evt in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    stacks = [evt.stack for evt in events if evt.stack]
    src_width = None
    if stacks:
        src_width = max(len(entry) for stack in stacks for entry in stack) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)
    headers, widths = _headers(events, profile_memory, has_shapes, bool(stacks), name_width, shapes_width,
                               src_width)
    row_format, sep, line_length = _row_format(widths, left_last=bool(stacks))
    total = sum(evt.self_cpu_time_total for evt in events)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [sep, row_format.format(*headers), sep]
    shown = 0
    for evt in events:
        if shown == row_limit:
            break
        if top_level_events_only and evt.cpu_parent is not None:
            continue
        shown += 1
        lines.append(row_format.format(*_row(evt, total, profile_memory, has_shapes, bool(stacks),
                                             max_name_column_width, shapes_width, src_width, time_unit)))
        if stacks:
            blank = [""] * (len(headers) - 1)
            lines += [row_format.format(*blank, _trim_path(entry, src_width)) for entry in evt.stack[1:]]
            lines.append(row_format.format(*blank, ""))
    lines += [sep, f"Self CPU time total: {_time(total, time_unit)}"]
    return "\n".join(lines) + "\n"

