"""Backward functions from the derivative formulas of ops.yaml (tinygrad's table, as data).

Each formula is a Tensor expression. The generator rewrites it once:
  * calls of registered ops become `F.<op>(...)`, F being the runtime's functional namespace, so
    the backward is made of recorded ops and `create_graph=True` differentiates it again;
  * `x.shape` / `x.dtype` / `x.ndim` of an input used for nothing else becomes a saved metadata
    value (`x_shape`), so the node keeps the shape and releases the tensor (torchgen's inference);
  * an elementwise formula (arithmetic, comparisons and elementwise ops only) also becomes a fused
    kernel -- one pass instead of one temporary per sub-expression -- used when create_graph is off.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from .common import HEADER, kernel_scalars
from .model import ELEMENTWISE, HELPERS

META_ATTRS = ("shape", "dtype", "ndim", "device")


@dataclass(frozen=True)
class Fused:
    name: str          # kernel name, e.g. _bw_tanh_self
    tensors: tuple     # tensor inputs in kernel order (grad first)
    scalars: tuple     # non-tensor args
    expr: str          # scalar expression over those names
    comment: str


def _tensor_names(op):
    return {a.name for a in op.signature.args if a.is_tensor or a.type == "Tensor[]"}


def analyse(op, formula, registry):
    """Rewrite one formula. Returns (python source, names saved)."""
    tree = ast.parse(formula.strip(), mode="eval")
    tensors = _tensor_names(op) | {"result"}
    # which tensors are used only through metadata attributes
    meta_only = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in tensors:
            meta_only.setdefault(node.id, True)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in tensors:
            node.value._meta = node.attr in META_ATTRS
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in tensors and not getattr(node, "_meta", False):
            meta_only[node.id] = False
    saves = set()

    class Rewrite(ast.NodeTransformer):
        def visit_Attribute(self, node):
            if isinstance(node.value, ast.Name) and meta_only.get(node.value.id) and node.attr in META_ATTRS:
                saves.add(f"{node.value.id}.{node.attr}")
                return ast.copy_location(ast.Name(f"{node.value.id}_{node.attr}", ast.Load()), node)
            return self.generic_visit(node)

        def visit_Call(self, node):
            self.generic_visit(node)
            _same_device(node, op.outputs > 1)
            if isinstance(node.func, ast.Name) and (node.func.id in registry or node.func.id in HELPERS):
                node.func = ast.copy_location(ast.Attribute(ast.Name("F", ast.Load()), node.func.id, ast.Load()),
                                              node.func)
            return node

        def visit_Name(self, node):
            if node.id in tensors or node.id in {a.name for a in op.signature.args} or node.id == "results":
                saves.add(node.id)
            return node

    new = ast.fix_missing_locations(Rewrite().visit(tree))
    return ast.unparse(new), saves


CREATORS = ("zeros", "ones", "full", "empty", "eye", "arange", "tensor", "as_tensor", "scalar_tensor")


def _same_device(call, multi_output=False):
    """zeros(shape, dtype=...) in a formula also takes the gradient's device (a gradient of a cuda tensor is on
    cuda): that of the grad it names in dtype=grad.dtype / grads[i].dtype, else of grad (grads[0]); the output
    gradients are always at hand (materialized, never saved)."""
    if not (isinstance(call.func, ast.Name) and call.func.id in CREATORS):
        return
    kws = {k.arg: k.value for k in call.keywords}
    if "device" in kws or None in kws:
        return
    dt = kws.get("dtype")
    owner = None
    if isinstance(dt, ast.Attribute) and dt.attr == "dtype":
        name = dt.value.value if isinstance(dt.value, ast.Subscript) else dt.value
        if isinstance(name, ast.Name) and name.id in ("grad", "grads"):
            owner = dt.value
    if owner is None:
        owner = ast.parse("grads[0]" if multi_output else "grad", mode="eval").body
    call.keywords.append(ast.keyword("device", ast.Attribute(owner, "device", ast.Load())))


SCALAR_OPS = {ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.Mod, ast.FloorDiv}


def fusable(op, formula, registry):
    """The scalar expression of an elementwise formula, or None when the formula is not elementwise."""
    if op.kind not in ELEMENTWISE:
        return None
    tensors = [a.name for a in op.signature.tensor_args]
    scalars = kernel_scalars(op)
    tree = ast.parse(formula.strip(), mode="eval")
    used_t, used_s = [], []

    def ok(node):
        if isinstance(node, ast.Expression):
            return ok(node.body)
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (int, float, bool))
        if isinstance(node, ast.Name):
            if node.id in ("grad", "result") or node.id in tensors:
                if node.id not in used_t:
                    used_t.append(node.id)
                return True
            if node.id in scalars:
                if node.id not in used_s:
                    used_s.append(node.id)
                return True
            return False
        if isinstance(node, ast.BinOp):
            return type(node.op) in SCALAR_OPS and ok(node.left) and ok(node.right)
        if isinstance(node, ast.UnaryOp):
            return isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)) and ok(node.operand)
        if isinstance(node, ast.Compare):
            return ok(node.left) and all(ok(c) for c in node.comparators)
        if isinstance(node, ast.Call):
            f = node.func
            if not (isinstance(f, ast.Name) and f.id in registry and registry[f.id].kind in ELEMENTWISE):
                return False
            callee = registry[f.id]
            if node.keywords or len(node.args) > len(callee.signature.args):
                return False
            return all(ok(a) for a in node.args)
        return False

    if not ok(tree):
        return None
    if "grad" not in used_t:
        return None

    class Inline(ast.NodeTransformer):
        def visit_BinOp(self, node):
            # a formula's `/` is the _div op, whose kernel divides through cdiv (a complex zero divisor gives inf or
            # nan, as PyTorch, where Numba's complex division raises ZeroDivisionError)
            self.generic_visit(node)
            if isinstance(node.op, ast.Div):
                return ast.copy_location(ast.Call(ast.Name("cdiv", ast.Load()), [node.left, node.right], []), node)
            return node

        def visit_Call(self, node):
            self.generic_visit(node)
            callee = registry[node.func.id]
            args = list(node.args)
            # fill defaults of the callee's trailing arguments
            for a in callee.signature.args[len(args):]:
                args.append(ast.parse(a.default, mode="eval").body)
            node.func = ast.Name(f"_s_{callee.name}", ast.Load())
            node.args = args
            return node

    expr = ast.unparse(ast.fix_missing_locations(Inline().visit(tree)))
    ordered = ["grad"] + [t for t in used_t if t != "grad"]
    return ordered, used_s, expr


def _fused_or(op, arg, fz, src):
    """The source of one input's gradient: its fused kernel when create_graph is off, else the Tensor formula."""
    if fz is None:
        return src
    tnames, snames, _ = fz
    return (f"F._fused({f'_bw_{op.name}_{arg}'!r}, ({', '.join(tnames)},), ({''.join(s + ', ' for s in snames)})) "
            f"if fused else {src}")


def _shared_calls(op, arg_order, registry):
    """Formulas `f(...)[k]` of several inputs over one call f(...) (a backward op returning every input's
    gradient, as _lstm_cell_backward): the call runs once per node, not once per input. Returns
    {local name: (rewritten call source, {input index: k}, (input indices))}."""
    calls = {}
    for i, arg in enumerate(arg_order):
        formula = op.formula(arg)
        if formula is None:
            continue
        tree = ast.parse(formula.strip(), mode="eval").body
        if isinstance(tree, ast.Subscript) and isinstance(tree.value, ast.Call) and \
                isinstance(tree.slice, ast.Constant) and isinstance(tree.slice.value, int):
            call_src = analyse(op, ast.unparse(tree.value), registry)[0]
            calls.setdefault(call_src, {})[i] = tree.slice.value
    shared = [(c, idx) for c, idx in calls.items() if len(idx) > 1]
    return {f"_once{n}": (c, idx, tuple(idx)) for n, (c, idx) in enumerate(shared)}


def emit(ops):
    """reftorch/kernels/derivatives.py and the list of fused kernels for the CPU module."""
    registry = {op.name: op for op in ops}
    for op in ops:
        for alias in op.variants.aliases:
            registry.setdefault(alias, op)
    out = [HEADER, '"""Backward functions generated from the derivative formulas of ops.yaml.\n\n'
           'Each takes (F, grads, saved, needs, fused): F is the functional namespace, grads the output\n'
           'gradients, saved the values the node kept, needs which inputs want a gradient, and fused whether\n'
           'the fused elementwise kernels may replace the Tensor formulas (create_graph is off).\n"""\n',
           "import math  # formulas may name math (codegen/model.py ALLOWED_BUILTINS)\n"]
    fused, saves_table, users_table = [], {}, {}
    for op in ops:
        if not op.derivatives:
            continue
        arg_order = [a.name for a in op.signature.args if a.is_tensor or a.type == "Tensor[]"]
        saves, users, formulas = set(), {}, set()
        body, shared, same = [], _shared_calls(op, arg_order, registry), {}
        for i, arg in enumerate(arg_order):
            formula = op.formula(arg)
            if formula is None:
                continue
            src, s = analyse(op, formula, registry)
            for name, (call_src, index, users_of) in shared.items():
                if i in users_of and src == f"{call_src}[{index[i]}]":
                    src = f"{name}[{index[i]}]"
            saves |= s
            for n in s:
                users.setdefault(n, set()).add(i)
            formulas.add(i)
            fz = fusable(op, formula, registry)
            body.append(f"    # {arg}: {formula}")
            if formula in same:     # an earlier input's formula, word for word: its gradient, computed once
                j = same[formula]
                body.append(f"    if needs[{i}]:")
                # (the earlier input's fused kernel: the same formula, and the only one generated)
                body.append(f"        g[{i}] = g[{j}] if needs[{j}] else {_fused_or(op, arg_order[j], fz, src)}")
                continue
            same[formula] = i
            slot = f"g[{i}]"
            if fz is not None:
                tnames, snames, expr = fz
                kname = f"_bw_{op.name}_{arg}"
                fused.append(Fused(kname, tuple(tnames), tuple(snames), expr, f"{op.name} backward for {arg} -- {formula}"))
            body.append(f"    if needs[{i}]:")
            body.append(f"        {slot} = {_fused_or(op, arg, fz, src)}")
        saved_names = sorted(n for n in saves)
        unpack = [f"    {n.replace('.', '_')} = saved[{n!r}]" for n in saved_names]
        grad_line = ["    grad = grads[0]"] if op.outputs == 1 else []
        once = [f"    {name} = {call_src} if {' or '.join(f'needs[{u}]' for u in users_of)} else None"
                for name, (call_src, _, users_of) in shared.items()]
        src = [f"def {op.name}_backward(F, grads, saved, needs, fused):",
               f"    # ops.yaml: {op.name}",
               *grad_line, *unpack, f"    g = [None] * {len(arg_order)}", *once, *body, "    return g", ""]
        out.append("\n".join(src))
        saves_table[op.name] = tuple(saved_names)
        partial = {n: tuple(sorted(u)) for n, u in sorted(users.items()) if "." not in n and u != formulas}
        if partial:
            users_table[op.name] = partial
    # the saved tensors only some formulas read, by the arguments whose formulas read them: the engine leaves
    # them packed when none of those arguments wants a gradient (PyTorch does not save them then), so an
    # in-place change to such a tensor after the op is not an error (reftorch/autograd/graph.py OpNode.apply)
    out.append("SAVE_USERS = {\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in users_table.items()) + "}\n")
    return "\n\n".join(out), fused, saves_table
