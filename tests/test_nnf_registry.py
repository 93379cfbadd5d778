"""ops.yaml's grad_fn: (PyTorch's node names) and variants.commutative, and what they do at run time."""
import textwrap

import pytest

import reftorch as torch
from codegen.model import RegistryError, load

GOOD = """\
- name: twice
  kind: binary
  signature: (Tensor self, Tensor other, *, Scalar alpha=1)
  scalar: self + alpha * other
  dtypes: [int, float]
  derivatives: {self: grad, other: grad * alpha}
  test: {ref: "lambda a, b, alpha=1: a + alpha * b"}
"""


def parse(extra):
    return load("ops.yaml", text=textwrap.dedent(GOOD + extra))


def parse_error(extra):
    with pytest.raises(RegistryError) as info:
        parse(extra)
    return str(info.value)


def test_grad_fn_forms_parse():
    assert parse("  grad_fn: TwiceBackward1\n")[0].grad_fn == "TwiceBackward1"
    (op,) = parse('  grad_fn: {"2,2": MmBackward0, "1,_": DotBackward0, alpha: AddBackward1, default: X1Backward0}\n')
    assert dict(op.grad_fn) == {"2,2": "MmBackward0", "1,_": "DotBackward0", "alpha": "AddBackward1",
                                "default": "X1Backward0"}
    assert parse("  variants: {commutative: true}\n")[0].variants.commutative


def test_grad_fn_errors_name_the_field():
    msg = parse_error("  grad_fn: mm_backward\n")
    assert "field 'grad_fn'" in msg and "expected a PyTorch node name" in msg
    msg = parse_error('  grad_fn: {"2;2": MmBackward0}\n')
    assert "field 'grad_fn'" in msg and "input ranks" in msg
    msg = parse_error('  grad_fn: {self: MmBackward0}\n')          # a tensor argument is not a key
    assert "field 'grad_fn'" in msg
    composite = GOOD.replace("kind: binary", "kind: composite").replace("  scalar: self + alpha * other\n",
                                                                        "  body: self + other\n")
    # a composite names the nodes its body records for its results (codegen/model.py _parse_composite_grad_fn)
    (op,) = load("ops.yaml", text=composite + "  grad_fn: TwiceBackward0\n")
    assert op.grad_fn == "TwiceBackward0"
    (op,) = load("ops.yaml", text=composite + '  grad_fn: {alpha: AddBackward1, default: AddBackward0}\n')
    assert op.grad_fn == (("alpha is not None", "AddBackward1"), ("default", "AddBackward0"))
    with pytest.raises(RegistryError, match="need a default"):
        load("ops.yaml", text=composite + "  grad_fn: {alpha: AddBackward1}\n")
    with pytest.raises(RegistryError, match="names beta, not arguments"):
        load("ops.yaml", text=composite + '  grad_fn: {"beta > 1": AddBackward1, default: AddBackward0}\n')


def test_reflected_commutative_operators_keep_the_tensor_first():
    x = torch.ones(2, requires_grad=True)
    for y in (2 * x, 1 + x, True * x):
        nodes = [n if n is None else n.name() for n, _ in y.grad_fn.next_functions]
        assert nodes == ["torch::autograd::AccumulateGrad", None], nodes
    (2 * x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert (3 - x).tolist() == [2.0, 2.0] and (2 ** torch.tensor([3])).tolist() == [8]     # order kept
