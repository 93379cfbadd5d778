"""torch.profiler and torch.autograd.profiler: every dispatched op and backward node timed, named as torch
names them, torch's table and chrome://tracing's JSON; nothing left installed once a profile ends."""
import gzip
import json
import os
import warnings

import pytest

import reftorch as torch
from reftorch.autograd import engine
from reftorch.kernels import api
from reftorch.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule

HEADERS = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]


def _step(model, x):
    loss = model(x).relu().sum()
    loss.backward()


def _names(prof):
    return {e.key for e in prof.key_averages()}


def test_forward_and_backward_ops_are_named_as_torch_names_them():
    model, x = torch.nn.Linear(4, 3), torch.randn(2, 4)
    rt = api._rt
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("step"):
            _step(model, x)
    assert api._rt is rt and engine._profiler is None     # off again: the dispatcher itself, no engine hook
    names = _names(prof)
    assert {"step", "aten::relu", "aten::sum", "ReluBackward0", "SumBackward0", "torch::autograd::AccumulateGrad",
            "autograd::engine::evaluate_function: ReluBackward0",
            "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"} <= names
    step = next(e for e in prof.events() if e.name == "step")
    assert step.cpu_parent is None and step.cpu_children
    inner = [e for e in prof.events() if e.name == "ReluBackward0"][0]
    assert inner.cpu_parent.name == "autograd::engine::evaluate_function: ReluBackward0"
    for e in prof.events():     # a range holds its children: self time is never negative
        assert e.self_cpu_time_total >= 0 and e.cpu_time_total >= e.self_cpu_time_total
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["torch::autograd::AccumulateGrad"].count == 2       # weight and bias


def test_table_is_torchs_layout_with_input_shapes():
    a, b = torch.ones(2, 3), torch.ones(3, 5)
    with torch.autograd.profiler.profile(record_shapes=True) as prof:
        torch.mm(a, b)
        torch.mm(a, b)
    table = prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total", row_limit=5)
    lines = table.splitlines()
    assert lines[0].startswith("-") and lines[2].startswith("-") and lines[-1].startswith("Self CPU time total: ")
    assert lines[1].split("  ")[-2].strip() == "Input Shapes"
    assert [h for h in (c.strip() for c in lines[1].split("  ")) if h][:7] == HEADERS
    row = next(line for line in lines if "aten::mm" in line)
    assert row.rstrip().endswith("[[2, 3], [3, 5]]") and " 2  " in row     # two calls, one shape
    assert len(row) == len(lines[0])
    plain = prof.key_averages().table(row_limit=1)
    assert "Input Shapes" not in plain and len(plain.splitlines()) == 6     # sep, header, sep, 1 row, sep, total


def test_names_longer_than_the_column_are_cut_as_torch_cuts_them():
    with profile() as prof:
        with record_function("x" * 80):
            pass
    row = prof.key_averages().table().splitlines()[3]
    assert row.startswith("x" * 52 + "...")


def test_export_chrome_trace_is_trace_event_json(tmp_path):
    with profile(record_shapes=True) as prof:
        with record_function("outer"):
            torch.ones(3) * 2
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert complete and all({"name", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e) for e in complete)
    outer = next(e for e in complete if e["name"] == "outer")
    mul = next(e for e in complete if e["name"] == "aten::mul")
    assert outer["ts"] <= mul["ts"] and mul["ts"] + mul["dur"] <= outer["ts"] + outer["dur"]
    assert mul["args"]["Input Dims"] == [[3], []]
    prof.events().export_chrome_trace(str(tmp_path / "list.json"))       # EventList's: the JSON array form
    assert all(e["ph"] == "X" for e in json.loads((tmp_path / "list.json").read_text()))


def test_schedule_records_active_steps_and_hands_each_cycle_over(tmp_path):
    ready = []
    sched = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [sched(i) for i in range(5)] == [ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
                                           ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE]
    handler = torch.profiler.tensorboard_trace_handler(str(tmp_path), worker_name="w", use_gzip=True)
    with profile(schedule=sched, on_trace_ready=lambda p: (ready.append(sorted(
            e.name for e in p.events() if e.name.startswith("ProfilerStep"))), handler(p))) as prof:
        for _ in range(5):
            torch.ones(2) + 1
            prof.step()
    assert ready == [["ProfilerStep#2", "ProfilerStep#3"]]
    (written,) = os.listdir(tmp_path)
    assert written.startswith("w.") and written.endswith(".pt.trace.json.gz")
    with gzip.open(tmp_path / written, "rt") as f:
        assert any(e["name"] == "aten::add" for e in json.load(f)["traceEvents"])
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=0, active=0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        schedule(wait=0, warmup=0, active=1)
    assert "won't be using warmup" in str(w[0].message)


def test_stack_memory_and_off_state(tmp_path):
    with profile(with_stack=True, profile_memory=True) as prof:
        torch.zeros(1000, dtype=torch.float64) + 1
    add = next(e for e in prof.events() if e.name == "aten::add")
    assert add.stack and "test_profiler.py" in add.stack[0]
    assert add.cpu_memory_usage == 8000 and add.self_cpu_memory_usage == 8000
    table = prof.key_averages(group_by_stack_n=5).table()
    assert "CPU Mem" in table and "Self CPU Mem" in table and "Source Location" in table and "7.81 KB" in table
    prof.export_stacks(str(tmp_path / "stacks.txt"))
    with record_function("nothing recording"):      # a no-op without a profiler
        pass
    with torch.autograd.profiler.profile(enabled=False) as off:
        torch.ones(1)
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        with torch.autograd.profiler.emit_nvtx():
            pass
    with torch.autograd.profiler.emit_nvtx(enabled=False):
        pass
    assert off.enabled is False
    with pytest.warns(UserWarning, match="disabling CUDA profiling"):       # host time only, as torch without CUDA
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as both:
            torch.ones(2) + 1
    assert "aten::add" in _names(both)
    unfinished = torch.autograd.profiler.profile()
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        unfinished.key_averages()
