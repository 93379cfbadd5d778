"""Function transforms: the JVP of each op, and its vmap form where it has one, from ops.yaml
(reftorch/kernels/transforms.py).

Where each op's JVP comes from, in order:
  * `forward:` -- an explicit formula over the inputs, their tangents `<arg>_t` and `result` (matmul, sum...);
    absent tangents are zeros (the runtime materializes them);
  * elementwise ops (unary/binary/ternary): their Jacobian is diagonal, so the JVP is the backward formula of
    each input with `grad` replaced by that input's tangent, summed over the inputs that have one
    (broadcast to the output's shape by the runtime); for ops taking complex inputs the formula is the adjoint
    (PyTorch's conjugate Wirtinger gradient), so the term is conj(formula(grad = conj(tangent))) -- t * f'(z)
    for a holomorphic f -- and a real output keeps its real part (the runtime's _fit);
  * views whose values do not depend on the input's layout: linear, so their own JVP -- the same view of the
    tangent (the runtime first gives the tangent the primal's strides, so a `view` that works on the primal
    works on it);
  * anything else: no entry, and the runtime's generic fallback (the transpose of the VJP, differentiating
    the backward with create_graph) computes it (reftorch/autograd/forward_ad.py).

Each generated function takes (F, a, t, result): F the functional namespace, a the arguments by name
(tensors and the other arguments), t the tangents by tensor argument name (None where absent), result
the primal output. It returns the list of terms whose sum is the output's tangent.

An op's `vmap:` expression becomes <op>_vmap(F, a): the op in terms of ops that vmap batches by kind,
evaluated on the logical (per-sample) arguments (reftorch/func/_vmap.py), in place of a loop.
"""
from __future__ import annotations

import ast

from .emit_autograd import _same_device
from .emit_cpu import HEADER
from .model import ELEMENTWISE, HELPERS

LAYOUT_READS = ("stride", "storage_offset")     # a view formula reading these depends on the input's layout


def _rewrite(formula, registry, names):
    """The formula as Python over F.<op>, with the names in `names` renamed (grad -> self_t ...)."""
    tree = ast.parse(formula.strip(), mode="eval")

    class Rewrite(ast.NodeTransformer):
        def visit_Call(self, node):
            _same_device(node)
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and (node.func.id in registry or node.func.id in HELPERS):
                node.func = ast.copy_location(ast.Attribute(ast.Name("F", ast.Load()), node.func.id, ast.Load()),
                                              node.func)
            return node

        def visit_Name(self, node):
            if node.id in names:
                return ast.copy_location(ast.Name(names[node.id], node.ctx), node)
            return node

    return ast.unparse(ast.fix_missing_locations(Rewrite().visit(tree)))


def _reads_layout(formula):
    tree = ast.parse(formula.strip(), mode="eval")
    return any(isinstance(n, ast.Attribute) and n.attr in LAYOUT_READS for n in ast.walk(tree))


def how(op):
    """'forward', 'derived', 'view' or None (the runtime's fallback) for one op."""
    if op.forward is not None:
        return "forward"
    if not op.derivatives or op.outputs != 1 or any(a.type == "Tensor[]" for a in op.signature.args):
        return None
    if op.kind in ELEMENTWISE:
        return "derived"
    if op.kind == "view" and not any(_reads_layout(f) for _, f in op.derivatives):
        return "view"
    return None


def _function(op, registry):
    kind = how(op)
    if kind is None:
        return None
    tensors = [a.name for a in op.signature.args if a.is_tensor]
    head = [f"def {op.name}_jvp(F, a, t, result):"]
    head += [f"    {a.name} = a[{a.name!r}]" for a in op.signature.args]
    head += [f"    {n}_t = t[{n!r}]" for n in tensors]
    if kind == "forward":
        body = [f"    # forward: {op.forward}", f"    return [{_rewrite(op.forward, registry, {})}]"]
    elif kind == "view":
        args = ", ".join(a.name for a in op.signature.args[1:])
        call = f"F.{op.name}({tensors[0]}_t{', ' if args else ''}{args})"
        body = ["    # a view: linear, its own JVP", f"    return [{call}]"]
    else:
        body = ["    terms = []"]
        for arg, formula in op.derivatives:
            body.append(f"    # {arg}: {formula}")
            body.append(f"    if {arg}_t is not None:")
            if "complex" in op.dtypes:      # the formula is the adjoint (conjugate Wirtinger): conj(vjp(conj(t)))
                body.append(f"        terms.append(F.conj_physical("
                            f"{_rewrite(formula, registry, {'grad': f'F.conj_physical({arg}_t)'})}))")
            else:
                body.append(f"        terms.append({_rewrite(formula, registry, {'grad': f'{arg}_t'})})")
        body.append("    return terms")
    return "\n".join(head + body) + "\n", kind


def _vmap_function(op, registry):
    head = [f"def {op.name}_vmap(F, a):", f"    # vmap: {op.vmap}"]
    head += [f"    {a.name} = a[{a.name!r}]" for a in op.signature.args]
    return "\n".join(head + [f"    return {_rewrite(op.vmap, registry, {})}"]) + "\n"


def emit(ops):
    """The text of reftorch/kernels/transforms.py."""
    registry = {op.name: op for op in ops}
    for op in ops:
        for alias in op.variants.aliases:
            registry.setdefault(alias, op)
    out = [HEADER, '"""JVP and vmap functions generated from ops.yaml (codegen/emit_forward.py says where each comes\n'
           'from).\n\n'
           'JVPS maps an op to (function, how): how is "forward" (an explicit formula; absent tangents are\n'
           'zeros), "derived" (elementwise: its backward formulas applied to the tangents) or "view" (its own\n'
           'JVP). Ops not listed take the generic fallback of reftorch/autograd/forward_ad.py. VMAPS maps an op\n'
           'to its form under vmap (ops.yaml `vmap:`).\n"""\n',
           "import math  # formulas may name math (codegen/model.py ALLOWED_BUILTINS)\n"]
    table = []
    for op in ops:
        made = _function(op, registry)
        if made is None:
            continue
        src, kind = made
        out.append(src)
        table.append(f"    {op.name!r}: ({op.name}_jvp, {kind!r}),")
    out.append("JVPS = {\n" + "\n".join(table) + "\n}\n")
    vmaps = [op for op in ops if op.vmap is not None]
    out += [_vmap_function(op, registry) for op in vmaps]
    out.append("VMAPS = {\n" + "".join(f"    {op.name!r}: {op.name}_vmap,\n" for op in vmaps) + "}\n")
    return "\n\n".join(out)
