"""The Python face of the registry: the op table, one wrapper function per op, array and composite bodies.

Wrappers carry each op's real Python signature, so argument parsing is Python's own (fast, and
errors like "got an unexpected keyword argument" for free); they hand the call to the runtime,
which the package binds into `_rt` at import. Generated modules never import reftorch (DESIGN §2).
"""
from __future__ import annotations

import ast
import textwrap

from .common import HEADER, kernel_scalars
from .model import ELEMENTWISE, HELPERS, Signature


BLAS_CALLS = ("np.matmul", "np.dot", "np.vdot", "np.inner", "np.tensordot", "np.einsum")


def _body_calls_blas(op):
    """An array op whose body multiplies matrices (a NumPy BLAS call or the @ operator)."""
    if op.kind != "array" or op.body is None:
        return False
    for n in ast.walk(ast.parse(textwrap.dedent(op.body))):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
            return True
        if isinstance(n, ast.Call) and (ast.unparse(n.func) in BLAS_CALLS or ast.unparse(n.func).startswith("np.linalg.")):
            return True
    return False


def _is_folded_matmul(ret):
    # `return np.matmul(a.reshape(...), b).reshape(...)`: the same product with a's leading dims folded
    v = ret.value
    return isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "reshape" and \
        isinstance(v.func.value, ast.Call) and ast.unparse(v.func.value.func) == "np.matmul"


def _body_is_matmul(op):
    """An array op whose body computes nothing but checks and `return np.matmul(a, b)` of its two Tensor args
    (or that product folded, under a condition)."""
    if op.kind != "array" or op.body is None:
        return False
    body = ast.parse(textwrap.dedent(op.body)).body
    tensors = [a.name for a in op.signature.tensor_args]
    last = body[-1] if body else None
    returns = [n for n in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(n, ast.Return)]
    if not isinstance(last, (ast.Return, ast.Expr)) or len(tensors) != 2 or \
            not all(_is_folded_matmul(r) for r in returns if r is not last):
        return False
    call = last.value
    return isinstance(call, ast.Call) and ast.unparse(call.func) == "np.matmul" and not call.keywords and \
        [ast.unparse(a) for a in call.args] == tensors and \
        all(isinstance(n, (ast.If, ast.Raise, ast.Return, ast.Expr, ast.Assign)) for n in body)


def _spec_literal(op, saves):
    args = tuple((a.name, a.type, a.default, a.kwonly) for a in op.signature.args)
    r = op.reduce
    fields = dict(
        name=op.name, kind=op.kind, args=args, dtypes=op.dtypes, result=op.result, outputs=op.outputs,
        differentiable=op.differentiable and bool(op.derivatives),
        has_backward=bool(op.derivatives), saves=saves.get(op.name, ()),
        kernel_args=tuple(kernel_scalars(op)) if op.kind in ELEMENTWISE else (),
        identity=None if r is None else r.identity, accumulate=None if r is None else r.accumulate,
        inplace=op.variants.inplace, method=op.variants.method, function=op.variants.function,
        operators=op.variants.operators, aliases=op.variants.aliases,
        # the NumPy reference and its tolerances, for reference mode (reftorch/_reference.py)
        ref=op.test.ref, atol=op.test.atol, rtol=op.test.rtol,
        rejects=op.rejects,
    )
    if op.variants.commutative:     # reflected operators call op(self, other) (reftorch/_methods.py)
        fields["commutative"] = True
    if op.variants.numpy_left:      # reflected operators take a NumPy array on the left (reftorch/_methods.py)
        fields["numpy_left"] = True
    if op.grad_fn is not None:      # PyTorch's name for the node (reftorch/autograd/graph.py OpNode.name)
        fields["grad_fn"] = op.grad_fn if isinstance(op.grad_fn, str) else dict(op.grad_fn)
    if op.autocast is not None:     # only ops with a policy carry the key (reftorch/_autocast.py): a str, or
        fields["autocast"] = op.autocast if isinstance(op.autocast, str) else dict(op.autocast)   # {device: policy}
    if _body_calls_blas(op):        # the runtime runs its small products on one BLAS thread (reftorch/_blas.py)
        fields["blas"] = True
    if _body_is_matmul(op):         # compile's step replay may run it as numpy.matmul into a planned buffer
        fields["matmul_body"] = True
    if op.kind == "foreach":        # the Tensor[] arguments its body assigns (updated in place)
        fields["updates"] = tuple(dict.fromkeys(st.targets[0].id for st in ast.parse(textwrap.dedent(op.body)).body))
    if op.cuda is not None:         # only where set: the device implementation of an array op
        fields["cuda"] = op.cuda
    if op.out:                      # only where set: out= checks other than the kind's (reftorch/_inplace.py)
        fields["out"] = dict(op.out)
    if not op.complex_grad:         # only where set: autograd refused for complex results (autograd/record.py)
        fields["complex_grad"] = False
    if not op.r2c_grad:             # only where set: a real input's complex gradient raises (autograd/engine.py)
        fields["r2c_grad"] = False
    if op.chalf is not None:        # only where set: complex32 support (reftorch/_chalf.py)
        fields["chalf"] = op.chalf
    if op.kernel_name is not None:  # only where set: PyTorch's kernel name in its dtype refusal (reftorch/_spec.py)
        fields["kernel_name"] = op.kernel_name
    if op.bits is not None:         # only where set: a view's rule for conjugate/negative bits (reftorch/_conj.py)
        fields["bits"] = op.bits
    if op.scalars_in_dtype:         # only where set: kernel scalars rounded to a 16-bit compute dtype
        fields["scalars_in_dtype"] = op.scalars_in_dtype
    return "    " + repr(op.name) + ": " + repr(fields) + ","


def _call(op):
    tensors = [a.name for a in op.signature.args if a.is_tensor]
    lists = [a.name for a in op.signature.args if a.type == "Tensor[]"]
    others = [a.name for a in op.signature.args if not a.is_tensor and a.type != "Tensor[]"]
    if lists:
        t = f"tuple({lists[0]})" if not tensors else f"({''.join(x + ', ' for x in tensors)}) + tuple({lists[0]})"
    else:
        t = f"({''.join(x + ', ' for x in tensors)})"
    return t, f"({''.join(x + ', ' for x in others)})"


# PyTorch's keyword forms, given to every op by its signature (not per op):
# - `axis=` wherever an argument is named `dim` (PyTorch's argument parser takes axis as dim's alias). A `dim`
#   without a default, and the positional arguments after it, default to _REQUIRED so that `x.cumsum(axis=0)`
#   parses; the wrapper then raises Python's "missing argument" error itself when one stays _REQUIRED.
# - `out=` on every function that computes a new tensor (not views, in-place variants, foreach updates, or the
#   internal `_` ops): the result is computed by the same wrapper and written into `out` by the runtime
#   (_rt.call_out: PyTorch's autograd, dtype and resize rules). The default path pays one `is None` test.
OUT_KINDS = ("unary", "binary", "ternary", "reduction", "argreduction", "scan", "array", "composite")


def _takes_out(op):
    return op.variants.function and op.kind in OUT_KINDS and not op.name.startswith("_") and \
        "out" not in op.signature.names


def _keyword_forms(op):
    """(python signature, prologue lines) of the op's wrapper with axis= and out= added."""
    args = op.signature.args
    names = op.signature.names
    has_axis = "dim" in names and "axis" not in names and not any(a.varargs for a in args)
    parts, star, required, after_dim = [], False, [], False
    for a in args:
        if a.varargs:
            parts.append(f"*{a.name}")
            star = True
            continue
        if a.kwonly and not star:
            parts.append("*")
            star = True
        after_dim = after_dim or (has_axis and a.name == "dim")
        default = a.default
        if default is None and after_dim and not a.kwonly:
            default = "_REQUIRED"
            required.append(a.name)
        parts.append(a.name if default is None else f"{a.name}={default}")
    extra = (["axis=_REQUIRED"] if has_axis else []) + (["out=None"] if _takes_out(op) else [])
    if extra and not star:
        parts.append("*")
    parts += extra
    lines = []
    if has_axis:
        dim_default = next(a.default for a in args if a.name == "dim")
        unset = "_REQUIRED" if dim_default is None else dim_default
        lines.append(f"    if axis is not _REQUIRED:\n        dim = _rt.dim_alias({op.name!r}, dim, {unset}, axis)")
    if required:
        test = " or ".join(f"{n} is _REQUIRED" for n in required)
        given = ", ".join(f"({n!r}, {n})" for n in required)
        lines.append(f"    if {test}:\n        _rt.missing_arguments({op.name!r}, {given})")
    return ", ".join(parts), lines


def _composite_name(op):
    """The expression naming a composite's result nodes (ops.yaml `grad_fn`), as `op#Name` keys that
    reftorch/autograd/graph.py resolves to Name."""
    if isinstance(op.grad_fn, str):
        return repr(f"{op.name}#{op.grad_fn}")
    expr = repr(f"{op.name}#{dict(op.grad_fn)['default']}")
    for cond, name in reversed([kv for kv in op.grad_fn if kv[0] != "default"]):
        expr = f"{op.name + '#' + name!r} if {cond} else {expr}"
    return f"({expr})"


def _tensor_lists(op):
    """The wrapper's lines for a Tensor[] argument given positionally (not *varargs) of a public op: PyTorch's
    parser takes a list or tuple of tensors only (cat(t), cat([t, None]) are its TypeErrors)."""
    if op.name.startswith("_") or op.kind == "foreach":
        return []
    return [f"    _rt.check_tensor_list({op.name!r}, {a.name!r}, {i}, {a.name})"
            for i, a in enumerate(op.signature.args) if a.type == "Tensor[]" and not a.varargs]


def _checks(op):
    """The wrapper's lines for ops.yaml `checks`: PyTorch's refusals by argument value, before the call."""
    fields = ", ".join(f"{n}={n}" for n in op.signature.names)    # a message with {self.dtype.short} and the like
    policy = dict(op.autocast) if isinstance(op.autocast, tuple) else {}
    if isinstance(op.autocast, str) and op.autocast in ("promote", "lower"):
        policy = {"cpu": op.autocast, "cuda": op.autocast}
    promoted = tuple(d for d, p in policy.items() if p in ("promote", "lower"))
    # where autocast casts the op's args to one dtype, PyTorch's checks see them cast: mixed dtypes then pass
    args = "".join(f"{n}, " for n in op.signature.names)
    guard = f"not _rt.autocast_promotes({promoted!r}, ({args})) and " if promoted else ""
    return [f"    if {guard}{cond}:\n        raise {cls}({msg!r}" + (f".format({fields}))" if "{" in msg else ")")
            for cond, cls, msg in op.checks]


def _numbers(op):
    """The wrapper's lines for ops.yaml `numbers`: a Python number where PyTorch's parser wants a Tensor (atan2(t, 2),
    eq(2, t), pow(2, 3)) is its TypeError, tested before the call."""
    if op.numbers is None:
        return []
    tensors = [a.name for a in op.signature.tensor_args]
    refused = [f"isinstance({a}, _NUMBER)" for a in tensors if a not in op.numbers]
    if set(op.numbers) == set(tensors):
        refused.append("(" + " and ".join(f"isinstance({a}, _NUMBER)" for a in tensors) + ")")
    params = tuple("input" if a == "self" else a for a in tensors)
    return [f"    if {' or '.join(refused)}:\n        _refuse_numbers({op.name!r}, {params!r}, "
            f"{tuple(tensors.index(a) for a in op.numbers)!r}, ({''.join(a + ', ' for a in tensors)}))"]


def _numbers_op(op, call, inplace=False):
    """The wrapper's lines for ops.yaml `numbers_op`: a call with that argument a Python number is the named op's
    (after out= is handled: call_out calls the wrapper back without it). In place, self is a Tensor."""
    return [f"    if isinstance({arg}, _NUMBER):\n        return {call.format(target)}\n"
            for arg, target in op.numbers_op if not (inplace and arg == op.signature.tensor_args[0].name)]


NUMBERS_HELPER = '''
_NUMBER = (bool, int, float, complex)


def _refuse_numbers(name, params, allowed, args):
    """PyTorch's argument parser refusing a Python number for a Tensor argument (ops.yaml `numbers`)."""
    given = [isinstance(a, _NUMBER) for a in args]
    if not allowed:
        i = given.index(True)
        raise TypeError(f"{name}(): argument '{params[i]}' (position {i + 1}) must be Tensor, not {type(args[i]).__name__}")
    got = ", ".join(type(a).__name__ if g else "Tensor" for a, g in zip(args, given))
    forms = [", ".join(f"Tensor {p}" for p in params)]
    for i in allowed:
        forms.append(", ".join(("Number self" if p == "input" else f"Number {p}") if j == i else f"Tensor {p}"
                               for j, p in enumerate(params)))
    raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected one of:\\n"
                    + "".join(f" * ({form}, *, Tensor out = None)\\n" for form in forms))
'''


def emit_api(ops, saves):
    out = [HEADER, '"""One function per op of ops.yaml with its real signature; the runtime does the rest."""\n',
           "_rt = None  # the dispatcher, bound by reftorch/__init__.py\n",
           "_REQUIRED = object()  # an argument not given (axis= forms, see codegen/emit_api.py)\n", NUMBERS_HELPER,
           "SPECS = {"]
    out += [_spec_literal(op, saves) for op in ops]
    out.append("}\n")
    for op in ops:
        sig, prologue = _keyword_forms(op)
        doc = (op.doc or f"{op.kind} op").strip().replace('"""', "'''")
        names = ", ".join(f"*{a.name}" if a.varargs else f"{a.name}={a.name}" if a.kwonly else a.name
                          for a in op.signature.args)
        prologue += _tensor_lists(op) + _numbers(op) + _checks(op)
        if _takes_out(op):
            prologue.append(f"    if out is not None:\n        return _rt.call_out({op.name!r}, out, {op.name}, {names})")
        if op.kind == "composite" and op.grad_fn is not None:     # PyTorch names the node of its results
            body = f"    return _rt.named_composite({_composite_name(op)}, {op.name!r}, {names})"
        elif op.kind == "composite":
            body = f"    return _rt.composite({op.name!r}, {names})"
        elif op.kind == "foreach":     # every tensor argument a list: the runtime takes them as they are
            lists = [a.name for a in op.signature.args if a.type == "Tensor[]"]
            others = [a.name for a in op.signature.args if a.type != "Tensor[]"]
            body = f"    return _rt.call_foreach({op.name!r}, ({''.join(x + ', ' for x in lists)}), " \
                   f"({''.join(x + ', ' for x in others)}))"
        else:
            t, s = _call(op)
            body = "".join(_numbers_op(op, f"_rt.call({{!r}}, {t}, {s})")) + f"    return _rt.call({op.name!r}, {t}, {s})"
        body = "\n".join(prologue + [body])
        out.append(f"def {op.name}({sig}):\n    \"\"\"{doc}\n\n    ops.yaml: {op.name}\"\"\"\n{body}\n")
        sig = op.signature.python()
        if op.variants.inplace:
            if op.kind in ("composite", "array"):   # computed out of place, then written into self (copy_ semantics)
                first = op.signature.tensor_args[0]
                if op.signature.args[0] is not first:   # polygamma(n, self): its in-place form is the method
                    moved = Signature((first,) + tuple(a for a in op.signature.args if a is not first))
                    sig = moved.python()     # Tensor.polygamma_(n), self first
                    names = ", ".join(a.name for a in moved.args)
                call = f"_rt.composite_inplace({op.name!r}, {names})"
                redirect = ""
            elif op.kind == "view":     # self's own geometry becomes the view's (unsqueeze_, t_, transpose_)
                t, s = _call(op)
                call = f"_rt.view_inplace({op.name!r}, {t}, {s})"
                redirect = ""
            else:
                t, s = _call(op)
                call = f"_rt.call_inplace({op.name!r}, {t}, {s})"
                redirect = "".join(_numbers_op(op, f"_rt.call_inplace({{!r}}, {t}, {s})", inplace=True))
            out.append(f"def {op.name}_({sig}):\n    \"\"\"In-place {op.name}: writes the result into self.\"\"\"\n"
                       + "".join(line + "\n" for line in _numbers(op) + _checks(op)) + redirect
                       + f"    return {call}\n")
        for alias in op.variants.aliases:
            out.append(f"{alias} = {op.name}" + (f"\n{alias}_ = {op.name}_" if op.variants.inplace else "") + "\n")
    return "\n\n".join(out)


# creation functions that take device=: in a composite body, one called without it gets the device of the
# op's tensor arguments (a cuda input makes its helper tensors on cuda, as the body's other ops would)
CREATORS = ("zeros", "ones", "full", "empty", "eye", "arange", "tensor", "as_tensor", "scalar_tensor")


def _rewrite_calls(src, params, registry, mode, tensor_params=()):
    tree = ast.parse(src, mode=mode)

    class Rewrite(ast.NodeTransformer):
        def visit_Call(self, node):
            self.generic_visit(node)
            f = node.func
            if isinstance(f, ast.Name) and f.id in CREATORS and f.id not in params and tensor_params and \
                    not any(k.arg in ("device", None) for k in node.keywords):
                where = ast.Call(ast.Name("device_of", ast.Load()), [ast.Name(n, ast.Load()) for n in tensor_params], [])
                node.keywords.append(ast.keyword("device", self.visit_Call(where)))
            if isinstance(f, ast.Name) and f.id not in params and (f.id in registry or f.id in HELPERS):
                node.func = ast.copy_location(ast.Attribute(ast.Name("F", ast.Load()), f.id, ast.Load()), f)
            return node

    return ast.unparse(ast.fix_missing_locations(Rewrite().visit(tree)))


def _body(src, params, registry, rewrite, tensor_params=()):
    src = textwrap.dedent(src).strip()
    mode = "exec" if "\n" in src or src.startswith(("return ", "return(")) else "eval"
    if rewrite:
        src = _rewrite_calls(src, params, registry, mode, tensor_params)
    if mode == "eval":
        return f"    return {src}"
    return textwrap.indent(src, "    ")


def emit_composites(ops):
    registry = {op.name for op in ops} | {a for op in ops for a in op.variants.aliases}
    out = [HEADER, '"""Composite ops of ops.yaml: defined by other ops, differentiated through them.\n\n'
           'Each takes F (the functional namespace) first; calls of registered ops go through it."""\n',
           "import math\n"]
    for op in ops:
        if op.kind != "composite":
            continue
        params = {a.name for a in op.signature.args}
        tensor_params = [a.name for a in op.signature.args if a.is_tensor or a.type == "Tensor[]"]
        out.append(f"def {op.name}(F, {op.signature.python()}):\n    # ops.yaml: {op.name}\n"
                   f"{_body(op.body, params, registry, True, tensor_params)}\n")
    return "\n\n".join(out)


def emit_array_ops(ops):
    out = [HEADER, '"""Forward bodies of the array ops of ops.yaml (data movement, sorting, matmul...).\n\n'
           'They run on NumPy arrays (strided views of the tensors\' storage) and return new arrays."""\n',
           "import math\n\nimport numpy as np\n\nfrom . import lapack\nfrom . import rows\nfrom . import scatter\nfrom . import sorting\n"]
    for op in ops:
        if op.kind != "array":
            continue
        params = {a.name for a in op.signature.args}
        out.append(f"def {op.name}_forward({op.signature.python()}):\n    # ops.yaml: {op.name}\n"
                   f"{_body(op.body, params, set(), False)}\n")
        if _body_is_matmul(op):     # its checks alone: the meta device's geometry (reftorch/_meta.py) needs no product
            tree = ast.parse(textwrap.dedent(op.body))
            checks = ast.unparse(ast.Module(body=tree.body[:-1], type_ignores=[])) + "\nreturn None"
            out.append(f"def {op.name}_checks({op.signature.python()}):\n    # ops.yaml: {op.name}, its checks\n"
                       f"{_body(checks, params, set(), False)}\n")
    return "\n\n".join(out)


RETURN_TYPES_FRAME = '''"""torch.return_types: the named tuples of the ops whose ops.yaml signature names its results
(`-> (Tensor values, Tensor indices)`), one class per op, printed as PyTorch prints them."""
from collections import namedtuple


def _named(name, fields):
    def __repr__(self):
        body = ",\\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"torch.return_types.{name}(\\n{body})"

    cls = type(name, (namedtuple(name, fields),), {"__slots__": (), "__repr__": __repr__,
                                                    "__module__": __name__})
    cls.__qualname__ = name
    return cls
'''


def emit_return_types(ops):
    out = [HEADER, RETURN_TYPES_FRAME]
    for op in ops:
        if op.signature.returns:
            out.append(f"{op.name} = _named({op.name!r}, {op.signature.returns!r})  # ops.yaml: {op.name}\n")
    return "\n".join(out)
