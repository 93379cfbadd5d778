"""utils.benchmark: Measurement statistics/reprs and Compare tables equal torch 2.13's on fixed times
(tests/test_toolbox_benchmark_expected.txt is torch's output of _report); Timer's measuring loops."""
import pathlib
import re

import pytest

import reftorch as torch
import reftorch.utils.benchmark as b
from reftorch.utils.benchmark import TaskSpec

EXPECTED = pathlib.Path(__file__).with_name("test_toolbox_benchmark_expected.txt")


def _m(stmt, times, number, **kw):
    return b.Measurement(number_per_run=number, raw_times=times, task_spec=TaskSpec(stmt=stmt, setup="pass", **kw))


def _report():
    ms = [
        _m("x+x", [2.6e-4], 100, label="add", sub_label="ones(10)", description="d1"),
        _m("x+x", [1.1e-2, 1.2e-2, 1.0e-2, 1.5e-2, 1.05e-2, 1.3e-2], 1000, label="add", sub_label="ones(10)",
           description="d2"),
        _m("x*x", [1.7e-3, 1.71e-3, 1.69e-3, 1.7e-3], 1000, label="add", sub_label="ones(20)", description="d1"),
        _m("x*x", [1.2e-3, 3.0e-3, 1.0e-3, 1.1e-3, 5e-3], 1000, label="add", sub_label="ones(20)", description="d2",
           num_threads=2),
        _m("y=1\nx*x", [3e-6, 3.1e-6, 2.9e-6], 1, sub_label="s", description="multi"),
    ]
    out = []
    for x in ms:
        out.append(re.sub(r"<.*object at 0x[0-9a-f]+>", "<M>", repr(x)))
        out.append(f"{x.mean} {x.median} {x.iqr} {x.significant_figures} {x.has_warnings}")
    c = b.Compare(ms[:4])
    out.append(str(c))
    c.trim_significant_figures()
    out.append(str(c))
    c.colorize()
    out.append(repr(str(c)))
    c.highlight_warnings()
    out.append(repr(str(c)))
    c.colorize(rowwise=True)
    out.append(repr(str(c)))
    out.append(str(b.Compare(ms[2:] + [_m("z", [1e-7] * 5, 10, label="other", description="d1")])))
    out.append(str(b.Compare(ms[:1] + ms[:1])))
    return "\n".join(out) + "\n"


def test_reprs_and_tables_match_torch():
    assert _report() == EXPECTED.read_text()


def test_timer_measures(capsys):
    x = torch.ones(4)
    t = b.Timer("y = x + x", setup="z = 1", globals={"x": x}, label="add", sub_label="ones(4)", description="plus")
    m = t.timeit(20)
    assert m.number_per_run == 20 and len(m.times) == 1 and m.median > 0
    assert "add: ones(4)\nplus\nsetup: z = 1\n" in repr(m) and "1 measurement, 20 runs , 1 thread" in repr(m)
    m = t.blocked_autorange(min_run_time=0.01)
    assert sum(m.raw_times) >= 0.01 and m.number_per_run >= 1
    assert m.mean == pytest.approx(sum(m.times) / len(m.times))
    calls = []
    m = t.adaptive_autorange(threshold=0.5, max_run_time=0.2, callback=lambda n, s: calls.append(n))
    assert len(m.times) == len(calls) and len(calls) >= 4 or sum(m.raw_times) > 0.2
    assert b.Timer("torch.zeros(2)").timeit(3).task_spec.stmt == "torch.zeros(2)"   # torch is in globals
    b.Compare([m]).print()
    assert "[" in capsys.readouterr().out


def test_timer_errors():
    with pytest.raises(ValueError, match="Currently only a `str` stmt is supported."):
        b.Timer(lambda: 1)
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        b.Timer("pass", global_setup="x")
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        b.Compare([1])
    with pytest.raises(NotImplementedError, match="See `Timer.blocked_autorange.`"):
        b.Timer().repeat()
