"""The registry parser's errors, `python -m codegen --check`, and "adding an op is one YAML entry"."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from codegen.__main__ import main as codegen_main
from codegen.generate import generate
from codegen.model import RegistryError, load

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGISTRY = os.path.join(ROOT, "reftorch", "ops.yaml")

GOOD = """\
- name: twice
  kind: unary
  signature: (Tensor self)
  scalar: self + self
  dtypes: [int, float]
  derivatives: {self: grad * 2}
  test: {ref: "lambda x: x + x"}
"""


def parse_error(text):
    with pytest.raises(RegistryError) as info:
        load("ops.yaml", text=textwrap.dedent(text))
    return str(info.value)


def line_of(text, needle):
    return next(i for i, line in enumerate(textwrap.dedent(text).splitlines(), 1) if needle in line)


def assert_names(msg, op, field, line):
    assert f"op '{op}'" in msg, msg
    assert f"field '{field}'" in msg, msg
    assert f"ops.yaml:{line}:" in msg, msg


def test_a_good_entry_parses():
    (op,) = load("ops.yaml", text=GOOD)
    assert op.name == "twice" and op.kind == "unary" and op.formula("self") == "grad * 2"
    assert op.test.ref == "lambda x: x + x" and op.line == 1


def test_unknown_key():
    text = GOOD + "  colour: red\n"
    assert_names(parse_error(text), "twice", "colour", line_of(text, "colour"))
    assert "unknown field" in parse_error(text)


def test_unknown_test_key():
    text = GOOD.replace('test: {ref: "lambda x: x + x"}', 'test:\n    ref: "lambda x: x + x"\n    tolerance: 3')
    msg = parse_error(text)
    assert_names(msg, "twice", "tolerance", line_of(text, "tolerance"))
    assert "unknown test key" in msg


def test_rejects_parse_and_a_malformed_one_is_named():
    (op,) = load("ops.yaml", text=GOOD + '  rejects: {all bool: "no bools"}\n')
    assert op.rejects == (("all", "bool", "no bools"),)
    text = GOOD + '  rejects: {some bool: "no bools"}\n'
    msg = parse_error(text)
    assert_names(msg, "twice", "rejects", line_of(text, "rejects"))
    assert "<any|all> <bool|int|float|complex>" in msg


def test_chalf_parses_and_a_misplaced_one_is_named():
    (op,) = load("ops.yaml", text=GOOD + "  chalf: true\n")
    assert op.chalf is True
    (op,) = load("ops.yaml", text=GOOD + "  chalf: exp_vml_cpu\n")
    assert op.chalf == "exp_vml_cpu"
    (op,) = load("ops.yaml", text=GOOD)
    assert op.chalf is None
    text = GOOD + "  chalf: false\n"
    assert_names(parse_error(text), "twice", "chalf", line_of(text, "chalf"))


def test_out_dtype_compute_needs_a_dtype_argument():
    sig = "  signature: (Tensor self, *, dtype? dtype=None)\n"
    (op,) = load("ops.yaml", text=GOOD.replace("  signature: (Tensor self)\n", sig) + "  out: {dtype: compute}\n")
    assert op.out == (("dtype", "compute"),)
    text = GOOD + "  out: {dtype: compute}\n"
    msg = parse_error(text)
    assert_names(msg, "twice", "out", line_of(text, "out:"))
    assert "needs a `dtype` argument" in msg


def test_kernel_name_parses_and_a_malformed_or_misplaced_one_is_named():
    (op,) = load("ops.yaml", text=GOOD + "  kernel_name: twice_cpu\n")
    assert op.kernel_name == "twice_cpu"
    (op,) = load("ops.yaml", text=GOOD)
    assert op.kernel_name is None                   # absent: the error names the op
    text = GOOD + '  kernel_name: "twice cpu"\n'
    assert_names(parse_error(text), "twice", "kernel_name", line_of(text, "kernel_name"))
    text = GOOD.replace("kind: unary", "kind: composite").replace("scalar: self + self", "body: self + self") + \
        "  kernel_name: twice_cpu\n"
    assert "no kernel of its own" in parse_error(text)


def test_numpy_left_variant_parses():
    (op,) = load("ops.yaml", text=GOOD + "  variants: {operators: [__radd__], numpy_left: true}\n")
    assert op.variants.numpy_left is True
    (op,) = load("ops.yaml", text=GOOD)
    assert op.variants.numpy_left is False          # absent: a NumPy array on the left is refused (NotImplemented)


def test_numbers_parse_and_name_only_tensor_args():
    (op,) = load("ops.yaml", text=GOOD + "  numbers: []\n")
    assert op.numbers == ()
    (op,) = load("ops.yaml", text=GOOD)
    assert op.numbers is None                       # absent: any and all may be Python numbers
    text = GOOD + "  numbers: [other]\n"
    msg = parse_error(text)
    assert_names(msg, "twice", "numbers", line_of(text, "numbers"))
    assert "'other' is not a Tensor argument" in msg


def test_checks_parse_and_an_unknown_name_is_named():
    (op,) = load("ops.yaml", text=GOOD + '  checks: {"self is None": "TypeError: no None"}\n')
    assert op.checks == (("self is None", "TypeError", "no None"),)
    (op,) = load("ops.yaml", text=GOOD + '  checks: {"self is None": "plain: message"}\n')
    assert op.checks == (("self is None", "RuntimeError", "plain: message"),)
    text = GOOD + '  checks: {"other < 0": "no"}\n'
    msg = parse_error(text)
    assert_names(msg, "twice", "checks", line_of(text, "checks"))
    assert "names other" in msg


def test_missing_field():
    text = GOOD.replace("  signature: (Tensor self)\n", "")
    msg = parse_error(text)
    assert_names(msg, "twice", "signature", 1)
    assert "missing required field" in msg


def test_unknown_dtype_family():
    text = GOOD.replace("dtypes: [int, float]", "dtypes: [int, quaternion]")
    msg = parse_error(text)
    assert_names(msg, "twice", "dtypes", line_of(text, "dtypes"))
    assert "unknown dtype family 'quaternion'" in msg


def test_unknown_kind():
    text = GOOD.replace("kind: unary", "kind: frobnicate")
    msg = parse_error(text)
    assert_names(msg, "twice", "kind", line_of(text, "kind:"))
    assert "unknown kind 'frobnicate'" in msg


def test_formula_naming_an_unknown_variable():
    text = GOOD.replace("{self: grad * 2}", "{self: grad * slope}")
    msg = parse_error(text)
    assert_names(msg, "twice", "derivatives", line_of(text, "derivatives"))
    assert "slope" in msg


def test_scalar_naming_an_unknown_variable():
    text = GOOD.replace("scalar: self + self", "scalar: self + other")
    msg = parse_error(text)
    assert_names(msg, "twice", "scalar", line_of(text, "scalar"))
    assert "other" in msg


@pytest.mark.parametrize("signature, words", [
    ("(Tensor self, Flaot alpha)", "unknown argument type 'Flaot'"),
    ("Tensor self", "must look like"),
    ("(Tensor self, Tensor self)", "appears twice"),
    ("(Tensor self, Scalar alpha=)", "cannot parse argument"),
])
def test_bad_signature(signature, words):
    text = GOOD.replace("(Tensor self)", signature)
    msg = parse_error(text)
    assert_names(msg, "twice", "signature", line_of(text, "signature"))
    assert words in msg


def test_test_args_must_name_arguments():
    text = GOOD.replace('test: {ref: "lambda x: x + x"}', 'test: {ref: "lambda x: x + x", args: {dims: (0,)}}')
    msg = parse_error(text)          # the unquoted flow value splits into keys '(0' and ')'
    assert_names(msg, "twice", "args", line_of(text, "args"))


def test_unknown_shapes_hint():
    text = GOOD.replace('test: {ref: "lambda x: x + x"}', 'test: {ref: "lambda x: x + x", shapes: blob}')
    msg = parse_error(text)
    assert_names(msg, "twice", "shapes", line_of(text, "shapes"))
    assert "unknown shapes hint 'blob'" in msg


def test_a_second_entry_reports_its_own_line():
    text = GOOD + GOOD.replace("name: twice", "name: thrice").replace("dtypes: [int, float]", "dtypes: [half]")
    msg = parse_error(text)
    assert_names(msg, "thrice", "dtypes", 12)


def test_duplicate_op():
    msg = parse_error(GOOD + GOOD)
    assert "op 'twice'" in msg and "defined twice" in msg and "ops.yaml:8:" in msg


# ------------------------------------------------------------------------------------- --check

def _generated_copy(tmp_path):
    for rel, text in generate(REGISTRY).items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_check_passes_on_fresh_output_and_names_the_stale_file(tmp_path, capsys):
    out = _generated_copy(tmp_path)
    assert codegen_main(["--check", "--out", str(out)]) == 0
    stale = out / "reftorch" / "kernels" / "api.py"
    stale.write_text(stale.read_text() + "\n# edited by hand\n")
    (out / "docs" / "ops.md").unlink()
    capsys.readouterr()
    assert codegen_main(["--check", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "reftorch/kernels/api.py is stale" in err and "docs/ops.md is stale" in err
    assert "cpu.py" not in err
    assert stale.read_text().endswith("# edited by hand\n")          # --check writes nothing


def test_check_exit_status_from_the_command_line(tmp_path):
    out = _generated_copy(tmp_path)
    (out / "reftorch" / "kernels" / "cpu.py").write_text("# stale\n")
    r = subprocess.run([sys.executable, "-m", "codegen", "--check", "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 1
    assert "reftorch/kernels/cpu.py is stale" in r.stderr


def test_a_registry_error_exits_non_zero(tmp_path, capsys):
    bad = tmp_path / "ops.yaml"
    bad.write_text(GOOD.replace("kind: unary", "kind: nope"))
    assert codegen_main(["--check", "--registry", str(bad), "--out", str(tmp_path)]) == 2
    assert "op 'twice', field 'kind'" in capsys.readouterr().err


# ------------------------------------------------------------------------------- one YAML entry

NEW_ENTRY = """
- name: cube_plus_one
  kind: unary
  signature: (Tensor self)
  scalar: self * self * self + 1
  dtypes: [int, float]
  derivatives: {self: 3 * grad * self * self}
  variants: {inplace: true}
  test: {ref: "lambda x: x ** 3 + 1"}
  doc: x**3 + 1, an op that exists only in this test.

- name: every_other
  kind: view
  signature: (Tensor self, dim dim=0)
  geometry: |
    d = wrap_dim(dim, len(shape))
    return shape[:d] + ((shape[d] + 1) // 2,) + shape[d + 1:], strides[:d] + (2 * strides[d],) + strides[d + 1:], offset
  derivatives: {self: "slice_backward(grad, self.shape, dim, 0, None, 2)"}
  test: {ref: "lambda x, dim=0: x[(slice(None),) * (dim % x.ndim) + (slice(None, None, 2),)]", shapes: nonscalar}
  doc: Every other element along dim, a view that exists only in this test.
"""

USE_NEW_OP = """
import numpy as np
import reftorch as torch
assert torch.__file__.startswith({tmp!r}), torch.__file__
x = torch.tensor([1.0, 2.0, -3.0], requires_grad=True)
y = torch.cube_plus_one(x)
assert y.tolist() == [2.0, 9.0, -26.0], y
y.sum().backward()
assert x.grad.tolist() == [3.0, 12.0, 27.0], x.grad
assert x.detach().cube_plus_one().tolist() == [2.0, 9.0, -26.0]
i = torch.arange(4)
assert torch.cube_plus_one(i).tolist() == [1, 2, 9, 28] and torch.cube_plus_one(i).dtype == torch.int64
w = torch.tensor([1.0, 2.0])
assert w.cube_plus_one_() is w and w.tolist() == [2.0, 9.0], w
with torch.reference_mode():
    torch.cube_plus_one(torch.tensor([0.5, -2.0]))
m = torch.arange(6.0).reshape(3, 2).requires_grad_()
v = m.every_other()
assert v.tolist() == [[0.0, 1.0], [4.0, 5.0]] and v.stride() == (4, 1) and v._base is not None, v
v.sum().backward()
assert m.grad.tolist() == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]], m.grad
with torch.no_grad():
    m[2, 0] = 7.0
assert v[1, 0].item() == 7.0 and torch.every_other(m, 1).tolist() == [[0.0], [2.0], [7.0]]
print("new op works")
"""


def test_adding_an_op_is_one_yaml_entry(tmp_path):
    """Copy the package, append one entry to its registry, regenerate, and use the op in a fresh process."""
    pkg = tmp_path / "reftorch"
    shutil.copytree(os.path.join(ROOT, "reftorch"), pkg, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    registry = pkg / "ops.yaml"
    registry.write_text(registry.read_text() + NEW_ENTRY)
    r = subprocess.run([sys.executable, "-m", "codegen", "--registry", str(registry), "--out", str(tmp_path)],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "cube_plus_one" in (tmp_path / "reftorch" / "kernels" / "cpu.py").read_text()
    assert "cube_plus_one" in (tmp_path / "docs" / "ops.md").read_text()
    env = dict(os.environ, PYTHONPATH=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path / "numba-cache"))
    run = subprocess.run([sys.executable, "-c", USE_NEW_OP.format(tmp=str(tmp_path))], cwd=str(tmp_path), env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "new op works" in run.stdout


# ------------------------------------------------------------------------------- device of helper tensors

def test_helper_tensors_of_bodies_and_formulas_take_the_inputs_device():
    """zeros/eye/arange... called without device= in a composite body get the device of the op's tensor
    arguments; in a derivative formula, the gradient's (a cuda input's helpers are made on cuda)."""
    from codegen import emit_api, emit_autograd
    ops = load("ops.yaml", text=textwrap.dedent("""\
        - name: with_eye
          kind: composite
          signature: (Tensor self, Tensor[] others, int n=2)
          body: |
            k = n
            return self + eye(k) + zeros(k, dtype=self.dtype) + full((k,), 1.0, device=self.device)
          test: {ref: "lambda x, o: x"}
        - name: dbl
          kind: unary
          signature: (Tensor self)
          scalar: self + self
          dtypes: [float]
          derivatives: {self: "grad * 2 + zeros(self.shape) + ones((), dtype=grad.dtype)"}
          test: {ref: "lambda x: x + x"}
        """))
    src = emit_api.emit_composites(ops)
    assert "F.eye(k, device=F.device_of(self, others))" in src, src
    assert "F.zeros(k, dtype=self.dtype, device=F.device_of(self, others))" in src, src
    assert "F.full((k,), 1.0, device=self.device)" in src, src
    deriv, _, _ = emit_autograd.emit(ops)
    assert "F.zeros(self_shape, device=grad.device)" in deriv, deriv
    assert "F.ones((), dtype=grad.dtype, device=grad.device)" in deriv, deriv


def test_cuda_implementation_field_is_checked():
    base = """\
        - name: mat
          kind: array
          signature: (Tensor self, Tensor other)
          body: np.matmul(self, other)
          dtypes: [float]
          cuda: {impl}
          differentiable: false
          test: {{ref: np.matmul}}
        """
    (op,) = load("ops.yaml", text=textwrap.dedent(base.format(impl="tiled_matmul")))
    assert op.cuda == "tiled_matmul"
    msg = parse_error(base.format(impl="fast_matmul"))
    assert_names(msg, "mat", "cuda", 6)
    assert "unknown device implementation 'fast_matmul'" in msg and "tiled_matmul" in msg
    msg = parse_error(GOOD.replace("  dtypes:", "  cuda: tiled_matmul\n  dtypes:"))
    assert_names(msg, "twice", "cuda", 5)
    assert "only array ops" in msg


# ------------------------------------------------------------------------------- view geometry

VIEW = """\
- name: swap01
  kind: view
  signature: (Tensor self)
  geometry: |
    return shape[1::-1] + shape[2:], {strides}[1::-1] + strides[2:], offset
  derivatives: {{self: "grad.transpose(0, 1)"}}
  test: {{ref: "lambda x: np.swapaxes(x, 0, 1)", shapes: matrix}}
"""


def test_a_view_geometry_parses_and_names_its_unknown_variables():
    assert load("ops.yaml", text=VIEW.format(strides="strides"))[0].geometry.startswith("return shape")
    msg = parse_error(VIEW.format(strides="stride"))
    assert_names(msg, "swap01", "geometry", 4)
    assert "['stride']" in msg, msg


def test_a_view_needs_a_geometry_and_only_a_view_takes_one():
    no_geometry = "\n".join(line for line in VIEW.format(strides="strides").splitlines()
                            if "geometry" not in line and "return shape" not in line)
    assert "a view op needs a geometry body" in parse_error(no_geometry)
    assert "only view ops take a geometry body" in parse_error(GOOD + "  geometry: return shape, strides, offset\n")


def test_a_views_bits_rule_parses_and_a_misplaced_or_unknown_one_is_named():
    assert load("ops.yaml", text=VIEW.format(strides="strides"))[0].bits is None
    assert load("ops.yaml", text=VIEW.format(strides="strides") + "  bits: imag\n")[0].bits == "imag"
    text = VIEW.format(strides="strides") + "  bits: flip\n"
    msg = parse_error(text)
    assert_names(msg, "swap01", "bits", line_of(text, "bits"))
    assert "unknown bits rule 'flip'" in msg, msg
    assert "only view ops take bits:" in parse_error(GOOD + "  bits: real\n")


# ------------------------------------------------------------------------------- named returns

PAIR = """\
- name: pair
  kind: composite
  signature: (Tensor self){returns}
  body: return_type("pair", self, self)
  test: {{ref: "lambda x: (x, x)"}}
"""


def test_named_returns_are_declared_in_the_signature():
    op = load("ops.yaml", text=PAIR.format(returns=" -> (Tensor first, Tensor second)"))[0]
    assert op.signature.returns == ("first", "second")
    assert "declare its fields after the signature" in parse_error(PAIR.format(returns=""))
    assert "cannot parse the named return 'int first'" in parse_error(PAIR.format(returns=" -> (int first, Tensor b)"))
    assert "appears twice" in parse_error(PAIR.format(returns=" -> (Tensor a, Tensor a)"))
    wrong_name = PAIR.format(returns=" -> (Tensor a, Tensor b)").replace('return_type("pair"', 'return_type("max"')
    assert "the op's own name first" in parse_error(wrong_name)
    keywords = PAIR.format(returns=" -> (Tensor a, Tensor b)").replace("self, self)", "b=self, a=self)")
    assert "names ['b', 'a']; the signature declares ['a', 'b']" in parse_error(keywords)


def test_return_types_come_from_the_registry():
    import reftorch
    from reftorch.kernels import return_types
    named = {op.name: op.signature.returns for op in load(REGISTRY) if op.signature.returns}
    assert {n for n in dir(return_types) if not n.startswith("_") and n != "namedtuple"} == set(named)
    assert reftorch.return_types.sort._fields == named["sort"] == ("values", "indices")


def test_signs_name_returns_and_compare_columns_up_to_sign():
    """`test: {signs: [...]}` names the returns whose columns are fixed only up to sign (eigenvectors); the fuzz
    compares them after turning each column to the reference's sign, and nothing else is forgiven."""
    import numpy as np
    from reftorch._reference import check_outputs
    two = GOOD.replace("signature: (Tensor self)", "signature: (Tensor self) -> (Tensor values, Tensor vectors)")
    (op,) = load("ops.yaml", text=two.replace('test: {ref: "lambda x: x + x"}',
                                               'test: {ref: "lambda x: x + x", signs: [vectors]}'))
    assert op.test.signs == (1,)
    text = two.replace('test: {ref: "lambda x: x + x"}', 'test: {ref: "lambda x: x + x", signs: [vecs]}')
    assert "'vecs' is not one of the op's named returns" in parse_error(text)
    V = np.array([[0.6, 0.8], [0.8, -0.6]])
    flipped = V * np.array([1.0, -1.0])         # the second eigenvector with the other sign
    assert check_outputs((np.ones(2), flipped), (np.ones(2), V), 1e-6, 1e-6, signs=(1,)) is None
    assert check_outputs((np.ones(2), flipped), (np.ones(2), V), 1e-6, 1e-6) is not None
    assert check_outputs((np.ones(2), flipped[::-1]), (np.ones(2), V), 1e-6, 1e-6, signs=(1,)) is not None


def test_complex_outputs_with_an_infinite_part_compare_part_by_part():
    """inf - inf has no modulus: the fuzz compares a complex number with an infinite part part by part (an fftn of a
    -inf input is inf - 20.794168300148705j against NumPy's inf - 20.79416830014871j), and still tells a wrong part."""
    import numpy as np
    from reftorch._reference import check_outputs
    got, want = np.array([np.inf - 20.794168300148705j, 1 + 1j]), np.array([np.inf - 20.79416830014871j, 1 + 1j])
    assert check_outputs((got,), (want,), 1e-5, 1e-5) is None
    assert check_outputs((np.array([np.inf - 3j, 1 + 1j]),), (want,), 1e-5, 1e-5) is not None
    assert check_outputs((np.array([-np.inf - 20.8j, 1 + 1j]),), (want,), 1e-5, 1e-5) is not None


def test_a_matmul_body_is_known_with_its_folded_return_and_not_with_another():
    # matmul_body (meta geometry without a temporary, compile's planned np.matmul) survives matmul's fold
    from codegen.emit_api import _body_is_matmul
    entry = """\
    - name: prod
      kind: array
      signature: (Tensor self, Tensor other)
      body: |
        if self.ndim > 2:
            return np.matmul(self.reshape(-1, self.shape[-1]), other).reshape(self.shape[:-1] + other.shape[-1:])
        return np.matmul(self, other)
      dtypes: [float]
      differentiable: false
      test: {ref: np.matmul}
    """
    (op,) = load("ops.yaml", text=textwrap.dedent(entry))
    assert _body_is_matmul(op)
    (other,) = load("ops.yaml", text=textwrap.dedent(entry).replace("np.matmul(self.reshape", "np.dot(self.reshape"))
    assert not _body_is_matmul(other)
