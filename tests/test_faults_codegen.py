"""The generator under faults (issue 20, point 6): YAML tags the safe loader refuses are reported with the op
and the field, and `python -m codegen` writes every generated file or none."""
from __future__ import annotations

import os

import pytest

from codegen.__main__ import main as codegen_main
from codegen.model import RegistryError, load

GOOD = """\
- name: twice
  kind: unary
  signature: (Tensor self)
  scalar: self + self
  dtypes: [int, float]
  derivatives: {self: grad * 2}
  test: {ref: "lambda x: x + x"}
"""


def registry_error(text):
    with pytest.raises(RegistryError) as info:
        load("ops.yaml", text=text)
    return str(info.value)


@pytest.mark.parametrize("old, new, field, line", [
    ("scalar: self + self", "scalar: !!python/name:os.system", "scalar", 4),
    ('test: {ref: "lambda x: x + x"}', "test:\n    ref: !!python/name:builtins.eval", "ref", 8),
    ("dtypes: [int, float]", "dtypes: [int, !!python/object/apply:os.getcwd []]", "dtypes", 5),
    ("derivatives: {self: grad * 2}", "derivatives: !!python/object:argparse.Namespace {self: x}",
     "derivatives", 6),
])
def test_an_unsafe_tag_names_the_op_and_the_field(old, new, field, line):
    msg = registry_error(GOOD.replace(old, new))
    assert f"ops.yaml:{line}: op 'twice', field '{field}':" in msg, msg
    assert "could not determine a constructor for the tag" in msg and "python/" in msg, msg


def test_an_unsafe_tag_in_a_second_entry_names_that_entry():
    text = GOOD + GOOD.replace("name: twice", "name: thrice").replace("scalar: self + self",
                                                                      "scalar: !!python/name:os.system")
    assert "ops.yaml:11: op 'thrice', field 'scalar':" in registry_error(text)


def test_the_command_line_reports_an_unsafe_tag(tmp_path, capsys):
    bad = tmp_path / "ops.yaml"
    bad.write_text(GOOD.replace("scalar: self + self", "scalar: !!python/name:os.system"))
    assert codegen_main(["--registry", str(bad), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "op 'twice', field 'scalar'" in err and "Traceback" not in err
    assert not (tmp_path / "reftorch").exists()


def _tree(root):
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            with open(p) as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def test_an_unwritable_destination_leaves_every_file_as_it_was(tmp_path, capsys):
    out = tmp_path / "out"
    assert codegen_main(["--out", str(out)]) == 0
    for rel in ("reftorch/kernels/cpu.py", "reftorch/kernels/api.py", "docs/ops.md"):
        (out / rel).write_text("# stale\n")
    blocked = out / "reftorch" / "kernels" / "derivatives.py"     # mid-way in the generator's order
    blocked.unlink()
    blocked.mkdir()                                               # not writable as a file, even for root
    before = _tree(out)
    capsys.readouterr()
    assert codegen_main(["--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "reftorch/kernels/derivatives.py" in err and "no file was written" in err
    assert _tree(out) == before                                   # nothing rewritten, no temporary left
    blocked.rmdir()
    assert codegen_main(["--out", str(out)]) == 0
    assert codegen_main(["--check", "--out", str(out)]) == 0


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes read-only files")
def test_a_read_only_generated_file_fails_the_run_before_any_write(tmp_path, capsys):
    out = tmp_path / "out"
    assert codegen_main(["--out", str(out)]) == 0
    (out / "reftorch/kernels/cpu.py").write_text("# stale\n")
    ro = out / "docs" / "ops.md"
    ro.write_text("# stale\n")
    ro.chmod(0o444)
    assert codegen_main(["--out", str(out)]) == 1
    assert (out / "reftorch/kernels/cpu.py").read_text() == "# stale\n"


def test_written_files_keep_their_mode(tmp_path):
    out = tmp_path / "out"
    assert codegen_main(["--out", str(out)]) == 0
    path = out / "reftorch/kernels/api.py"
    path.write_text("# stale\n")
    path.chmod(0o640)
    assert codegen_main(["--out", str(out)]) == 0
    assert path.stat().st_mode & 0o777 == 0o640 and "# stale" not in path.read_text()
