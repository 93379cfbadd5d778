"""ops.yaml parsed into frozen dataclasses.

Strict in the way torchgen is: every known key is popped, anything left over is an error, and every
error names the op, the field and the YAML line. The generator (and nothing else) reads this model;
the runtime reads only what the generator emits from it.
"""
from __future__ import annotations

import ast
import builtins
import os
import re
import textwrap
from dataclasses import dataclass
from typing import Optional

import yaml

KINDS = ("unary", "binary", "ternary", "reduction", "argreduction", "scan", "array", "composite", "view", "foreach")
ELEMENTWISE = ("unary", "binary", "ternary")
FAMILIES = ("bool", "int", "float", "complex")
REAL_FAMILIES = ("bool", "int", "float")    # an op's `dtypes:` when it names none (complex is opted into)
# real: complex inputs give their real dtype (abs); real_float: that, and integers the default float (angle)
RESULT_RULES = ("same", "float", "bool", "int64", "none", "real", "real_float")
# Tensor args take part in type promotion; Index (integer) and Mask (bool) args do not and get no gradient.
TENSOR_TYPES = ("Tensor", "Tensor?", "Tensor[]", "Index", "Index?", "Mask")
ARG_TYPES = ("Tensor", "Tensor?", "Tensor[]", "Index", "Index?", "Mask", "Scalar", "Scalar?", "int", "int?", "int[]", "int[]?",
             "dim", "dim?", "dim[]?", "float", "float?", "bool", "bool?", "str", "str?", "dtype?", "any")
VARIANT_KEYS = ("function", "method", "inplace", "operators", "aliases", "commutative", "numpy_left")
TEST_KEYS = ("ref", "domain", "atol", "rtol", "gradcheck", "args", "dtypes", "cuda", "shapes", "fuzz", "grad_domain",
             "hermitian", "triangular", "signs")
# `test: {shapes: <hint>}` names the rule by which the generated tests shape an op's inputs when they
# constrain each other (tests/registry_samples.py implements each; a new hint needs a rule there).
SHAPE_HINTS = ("same", "nonscalar", "matrix", "contiguous", "matmul", "mm", "bmm", "mv", "vector", "vectors",
               "cat", "stack", "gather", "scatter", "scatter_add", "index_select", "index_add", "index_copy", "take",
               "index_put", "one_hot", "bincount", "square", "spd", "invertible", "invertible_rhs_first", "lu_solve", "householder", "vectors3",
               "chain", "lstsq")
# `autocast:` what reftorch.autocast does to an op's floating Tensor args (reftorch/_autocast.py):
# lower = cast to the autocast dtype, fp32 = cast to float32, promote = cast to the widest of them,
# keep = no cast, and a composite body runs with autocast off (a native kernel in PyTorch: mean, var...,
# whose inner sum must not switch to float32 on cuda).
# One policy for every device, or per device as PyTorch's CPU and CUDA lists differ:
# `autocast: {cpu: none, cuda: fp32}` (a device left out, or `none`, leaves the op's args as they are there).
AUTOCAST_POLICIES = ("lower", "fp32", "promote", "keep")
AUTOCAST_DEVICES = ("cpu", "cuda")
REDUCE_KEYS = ("identity", "combine", "better", "accumulate")
# `cuda: <name>` on an array op: the device implementation reftorch/_cuda_dispatch.py runs instead of the body
# on a host copy (IMPLS there; a new name needs an entry in both). tiled_matmul follows matmul's shape rules,
# _2d/_3d take only 2-D/3-D operands (mm, bmm; other shapes go to the body, which raises); gather_positions /
# scatter_positions read/write `self` at the flat positions of an index tuple (advanced indexing and its put);
# select_positions / add_at_positions / gather_along / scatter_add_along build that tuple from (dim, index) as
# index_select / index_add / gather / scatter_add do; shifted_log_softmax is x - max - log(sum(exp(x - max)))
# along `dim` from the device's reductions; concat_copies is cat(tensors, dim) by one strided copy per input;
# log_softmax_backward is grad_output - exp(output) * sum(grad_output, dim) from the device's kernels.
CUDA_IMPLS = ("tiled_matmul", "tiled_matmul_2d", "tiled_matmul_3d", "gather_positions", "scatter_positions",
              "select_positions", "add_at_positions", "gather_along", "scatter_add_along", "shifted_log_softmax",
              "concat_copies", "log_softmax_backward")
# Names a derivative formula may use besides the op's own arguments and the registered ops.
FORMULA_NAMES = {"grad", "grads", "result", "results"}
# Metadata helpers the runtime provides to formulas and composite bodies (see reftorch/_formula_helpers).
HELPERS = {"invert_permutation", "unsqueeze_dims", "reduced_shape", "expand_reduced", "normalize_dims",
           "sum_to", "index_backward", "numel_of", "default_float", "scalar_tensor", "is_floating",
           "is_tensor", "lowest", "return_type", "einsum_grad_plan", "device_of", "broadcast_shapes", "common_shape",
           "warn_once", "not_implemented", "check_fill", "checked_scalar",
           # linear algebra's checks and tolerances (reftorch/_linalg_checks.py)
           "linalg_check", "linalg_check_norm_dtype", "linalg_raise", "linalg_same_dtype", "linalg_check_solve", "linalg_check_pivot",
           "linalg_check_uplo", "linalg_check_driver", "linalg_check_lstsq_driver", "linalg_check_householder",
           "linalg_check_eig", "linalg_check_lu", "linalg_tolerance", "chain_order_matmul",
           # torch.fft's argument handling (reftorch/_fft_checks.py)
           "fft_norm", "fft_promote", "fft_dim", "fft_shape_dims", "fft_c2r_shape_dims", "fft_check_real",
           "fft_check_complex",
           # creation functions of the tensor layer
           "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "tensor",
           "arange", "eye", "as_tensor", "is_grad_enabled",
           # the lazy conjugate bit (reftorch/_conj.py)
           "conj_view", "neg_view", "resolved", "resolved_conj", "resolved_neg"}
ALLOWED_BUILTINS = {"len", "range", "tuple", "list", "int", "float", "bool", "isinstance", "zip", "enumerate",
                    "sorted", "abs", "dict", "None", "True", "False", "str", "any", "all", "reversed", "slice",
                    "Ellipsis", "divmod", "round", "pow", "set", "type", "ValueError", "RuntimeError",
                    "IndexError", "TypeError", "math", "np", "UserWarning", "FutureWarning",
                    "NotImplementedError"}


# Modules an array op's NumPy body may use besides np and math: the LAPACK routines NumPy lacks
# (codegen/templates/lapack.py, copied to reftorch/kernels/lapack.py) and the C++ library's sort orders
# (codegen/templates/sorting.py), scatter-adds in index order (codegen/templates/scatter.py), the normalisations'
# row kernels (codegen/templates/rows.py).
ARRAY_BODY_NAMES = {"lapack", "sorting", "scatter", "rows"}


class RegistryError(ValueError):
    """A malformed ops.yaml entry; the message names the op, the field and the line."""


@dataclass(frozen=True)
class Arg:
    name: str
    type: str
    default: Optional[str]  # Python source of the default, None when required
    kwonly: bool
    varargs: bool = False   # `Tensor[] *operands`: the Python signature takes *operands (composite ops)

    @property
    def is_tensor(self) -> bool:
        return self.type in ("Tensor", "Tensor?", "Index", "Index?", "Mask")


@dataclass(frozen=True)
class Signature:
    args: tuple
    returns: tuple = ()      # `-> (Tensor values, Tensor indices)`: the fields of torch.return_types.<op>

    @property
    def tensor_args(self):
        return tuple(a for a in self.args if a.is_tensor)

    @property
    def names(self):
        return tuple(a.name for a in self.args)

    def python(self) -> str:
        """The Python parameter list, e.g. `self, other, *, alpha=1`."""
        parts, star = [], False
        for a in self.args:
            if a.varargs:
                parts.append(f"*{a.name}")
                star = True
                continue
            if a.kwonly and not star:
                parts.append("*")
                star = True
            parts.append(a.name if a.default is None else f"{a.name}={a.default}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Reduce:
    identity: Optional[str]
    combine: Optional[str]
    better: Optional[str]
    accumulate: str


@dataclass(frozen=True)
class Variants:
    function: bool
    method: bool
    inplace: bool
    operators: tuple
    aliases: tuple
    commutative: bool = False    # reflected operators (__radd__) keep the tensor first, as PyTorch's do
    numpy_left: bool = False     # its reflected operators take a NumPy array on the left (PyTorch's Python-defined
                                 # __rtruediv__); PyTorch's C-bound ones return NotImplemented for one


@dataclass(frozen=True)
class TestSpec:
    ref: Optional[str]
    domain: tuple            # ((argname, lo, hi), ...)
    atol: float
    rtol: float
    gradcheck: bool
    args: tuple              # ((name, python source), ...) extra non-tensor args used by tests
    dtypes: tuple            # families the fuzz test draws, default: all the op accepts
    cuda: bool
    shapes: Optional[str]    # "same" forces equal shapes (no broadcasting), "matrix", ...
    fuzz: bool
    grad_domain: tuple
    hermitian: tuple = ()    # args the op reads one triangle of: gradchecks perturb them symmetrically
    triangular: tuple = ()   # triangular factors (upper= picks the triangle) whose gradient PyTorch gives as a full
                             # matrix: gradchecks differentiate through tril/triu, as OpInfo's triangular wrapper
    signs: tuple = ()        # indices of outputs whose columns LAPACK fixes only up to sign (eigenvectors): the
                             # fuzz turns each column to its reference's sign before comparing


@dataclass(frozen=True)
class Op:
    name: str
    kind: str
    signature: Signature
    line: int
    scalar: Optional[str] = None
    reduce: Optional[Reduce] = None
    body: Optional[str] = None
    dtypes: tuple = ()
    result: str = "same"
    outputs: int = 1
    derivatives: tuple = ()      # ((argname, formula), ...)
    differentiable: bool = True
    variants: Variants = None
    test: TestSpec = None
    doc: str = ""
    rejects: tuple = ()          # (("any"|"all", family, message), ...): inputs PyTorch refuses by dtype
    autocast: object = None      # a policy (str) for every device, or ((device, policy), ...) per device
    cuda: Optional[str] = None   # array ops: the device implementation (CUDA_IMPLS), else the body on a host copy
    scalars_in_dtype: tuple = ()  # Scalar args PyTorch converts to the tensors' dtype first (rounded in 16 bits)
    grad_fn: object = None       # PyTorch's node name: a str, or ((input ranks "2,2" | "default", name), ...)
    geometry: Optional[str] = None  # view ops: the body computing (shape, strides, offset) of the view
    forward: Optional[str] = None  # forward-mode AD: the output tangent over inputs, <arg>_t tangents, result
    vmap: Optional[str] = None   # the op as an expression over ops vmap batches by kind (reftorch/func/_vmap.py)
    checks: tuple = ()           # ((condition, exception class, message), ...): argument values PyTorch refuses
    numbers: Optional[tuple] = None  # the Tensor args a Python number may stand for (None: any and all of them)
    chalf: object = None         # complex32 on cpu: True (computed through complex64), or the kernel name of
                                 # PyTorch's NotImplementedError; None: that error naming the op
    bits: Optional[str] = None   # view ops: what the view does with a conjugate/negative view's bits (BITS_RULES)
    out: tuple = ()              # ((rule, value), ...): PyTorch's out= checks where they are not the kind's (OUT_RULES)
    complex_grad: bool = True    # False: autograd through a complex result is refused (PyTorch's ops outside its
                                 # GRADIENT_IMPLEMENTED_FOR_COMPLEX list: silu, nan_to_num)
    r2c_grad: bool = True        # False: a real input's complex gradient raises (PyTorch's formula lacks
                                 # handle_r_to_c: where, logaddexp), where by default its real part is taken
    kernel_name: Optional[str] = None   # PyTorch's name of the cpu kernel in its '"<name>" not implemented for
                                 # <dtype>' error (bitwise_not_cpu, i0_vml_cpu); None: the op's name
    numbers_op: tuple = ()       # ((tensor arg, op), ...): the op that serves a call where that arg is a Python number

    @property
    def tensor_inputs(self):
        return self.signature.tensor_args

    def formula(self, arg):
        return dict(self.derivatives).get(arg)


# ---------------------------------------------------------------- YAML with line numbers

def _to_python(node, field=None):
    """Compose-node -> Python values, mappings becoming (dict, {key: line}) pairs. `field` is the op field the
    node sits under (for errors): a node the safe loader cannot construct (a `!!python/name:` tag, say)
    raises _BadScalar, which load() turns into a RegistryError naming the op and the field."""
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and node.tag not in _PLAIN_TAGS:
        raise _BadScalar(field, node.start_mark.line + 1, f"could not determine a constructor for the tag {node.tag!r}")
    if isinstance(node, yaml.MappingNode):
        out, lines = {}, {}
        for k, v in node.value:
            key = k.value
            out[key] = _to_python(v, key)
            lines[key] = k.start_mark.line + 1
        return _Mapping(out, lines, node.start_mark.line + 1)
    if isinstance(node, yaml.SequenceNode):
        return [_to_python(v, field) for v in node.value]
    try:
        return _SCALAR_LOADER.construct_object(node, deep=True)
    except yaml.YAMLError as err:
        raise _BadScalar(field, node.start_mark.line + 1, getattr(err, "problem", None) or str(err)) from None


_PLAIN_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")


class _BadScalar(Exception):
    def __init__(self, field, line, problem):
        super().__init__(problem)
        self.field, self.line, self.problem = field, line, problem


def _entry_name(node):
    """The `name:` of an op entry node, read without constructing anything else."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == "name" and isinstance(v, yaml.ScalarNode) \
                    and v.tag == "tag:yaml.org,2002:str":
                return v.value
    return "<unnamed>"


def _entry(node, path):
    try:
        return _to_python(node)
    except _BadScalar as err:
        where = f"field '{err.field}'" if err.field is not None else "a key"
        raise RegistryError(f"{path}:{err.line}: op '{_entry_name(node)}', {where}: {err.problem}") from None


_SCALAR_LOADER = yaml.SafeLoader("")


class _Mapping(dict):
    def __init__(self, data, lines, line):
        super().__init__(data)
        self.lines = lines
        self.line = line


class _Entry:
    """Pops fields from one op entry, raising errors that name op, field and line."""

    def __init__(self, mapping, path):
        self.m = dict(mapping)
        self.lines = getattr(mapping, "lines", {})
        self.line = getattr(mapping, "line", 0)
        self.path = path
        name = mapping.get("name") if isinstance(mapping, dict) else None
        self.name = name if isinstance(name, str) else "<unnamed>"

    def fail(self, field, msg):
        line = self.lines.get(field, self.line)
        raise RegistryError(f"{self.path}:{line}: op '{self.name}', field '{field}': {msg}")

    def pop(self, key, kind, required=False, default=None):
        if key not in self.m:
            if required:
                self.fail(key, "missing required field")
            return default
        value = self.m.pop(key)
        if kind is not None and not isinstance(value, kind):
            want = " or ".join(k.__name__ for k in kind) if isinstance(kind, tuple) else kind.__name__
            self.fail(key, f"expected {want}, got {type(value).__name__} {value!r}")
        return value

    def finish(self, what="field"):
        if self.m:
            key = sorted(self.m)[0]
            self.fail(key, f"unknown {what} (known: {', '.join(self.known)})")


OP_FIELDS = ("name", "kind", "signature", "scalar", "reduce", "body", "dtypes", "result", "outputs",
             "derivatives", "differentiable", "variants", "test", "doc", "rejects", "autocast", "cuda",
             "scalars_in_dtype", "grad_fn", "geometry", "forward", "vmap", "checks", "numbers", "chalf", "bits",
             "out", "complex_grad", "r2c_grad", "kernel_name", "numbers_op")


RETURN_TYPES = ("Tensor", "Tensor?", "Tensor[]")


def parse_returns(e: _Entry, text: str):
    """`(Tensor values, Tensor indices)` after a signature's `->`: the named tuple the op returns
    (torch.return_types.<op>, as PyTorch's schema names its results)."""
    s = text.strip()
    if not (s.startswith("(") and s.endswith(")")):
        e.fail("signature", f"named returns look like '-> (Tensor values, Tensor indices)', got {text!r}")
    fields = []
    for part in _split_top(s[1:-1]):
        m = re.fullmatch(r"\s*(\S+)\s+([A-Za-z_]\w*)\s*", part)
        if not m or m.group(1) not in RETURN_TYPES:
            e.fail("signature", f"cannot parse the named return {part.strip()!r}: expected one of "
                                f"{', '.join(RETURN_TYPES)} and a field name")
        if m.group(2) in fields:
            e.fail("signature", f"named return {m.group(2)!r} appears twice")
        fields.append(m.group(2))
    if len(fields) < 2:
        e.fail("signature", "named returns are for ops returning several results; one result needs no name")
    return tuple(fields)


def parse_signature(e: _Entry, text: str) -> Signature:
    text, arrow, returns = text.partition("->")
    s = text.strip()
    if not (s.startswith("(") and s.endswith(")")):
        e.fail("signature", f"must look like '(Tensor self, Scalar other, *, int dim=0)', got {text!r}")
    args, kwonly, seen = [], False, set()
    inner = s[1:-1].strip()
    for part in _split_top(inner):
        part = part.strip()
        if not part:
            continue
        if part == "*":
            kwonly = True
            continue
        m = re.fullmatch(r"(\S+)\s+(\*?)([A-Za-z_]\w*)\s*(?:=\s*(.+))?", part)
        if not m:
            e.fail("signature", f"cannot parse argument {part!r}: expected 'Type name[=default]'")
        typ, star, name, default = m.group(1), m.group(2), m.group(3), m.group(4)
        if star and (typ != "Tensor[]" or default is not None or kwonly):
            e.fail("signature", f"only a positional 'Tensor[] *{name}' without default may take varargs")
        if typ not in ARG_TYPES:
            e.fail("signature", f"unknown argument type {typ!r} for {name!r} (known: {', '.join(ARG_TYPES)})")
        if name in seen:
            e.fail("signature", f"argument {name!r} appears twice")
        if default is not None:
            try:
                ast.parse(default, mode="eval")
            except SyntaxError:
                e.fail("signature", f"default of {name!r} is not a Python expression: {default!r}")
        seen.add(name)
        args.append(Arg(name, typ, default, kwonly, bool(star)))
        kwonly = kwonly or bool(star)       # arguments after *operands are keyword-only
    return Signature(tuple(args), parse_returns(e, returns) if arrow else ())


def _split_top(s):
    depth, cur, out = 0, "", []
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def names_in(src: str, e: _Entry, field: str, mode="eval"):
    """Free names read by a Python expression or body (bound names and attribute tails excluded)."""
    try:
        tree = ast.parse(src.strip() if mode == "eval" else src, mode=mode)
    except SyntaxError as err:
        e.fail(field, f"not valid Python: {err.msg} in {src!r}")
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for n in ast.walk(tree):
        if isinstance(n, (ast.Lambda, ast.FunctionDef)):
            bound |= {a.arg for a in n.args.args + n.args.kwonlyargs}
        if isinstance(n, ast.comprehension):
            bound |= {t.id for t in ast.walk(n.target) if isinstance(t, ast.Name)}
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return read - bound


SCALAR_FUNCS = {"exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "floor", "ceil", "trunc", "fabs",
                "atan2", "hypot", "copysign", "fmod", "isnan", "isinf", "isfinite", "pow", "abs", "min", "max",
                "exp2", "log2", "log10", "gamma", "lgamma", "rint", "float", "int", "bool", "inf", "nan", "pi",
                "e", "nearbyint", "signbit", "sign", "fmin", "fmax", "floordiv", "pymod", "isint", "rshift",
                "lshift", "cast_like", "round_half_even", "True", "False", "None", "math", "np", "logaddexp",
                "divtrunc", "cfmod", "tpow", "round_decimals", "logit", "clamp3", "gcd", "lcm", "logaddexp2"}


def _prelude_helpers():
    """The public helper functions of codegen/templates/prelude.py: a scalar expression may call any of them."""
    with open(os.path.join(os.path.dirname(__file__), "templates", "prelude.py")) as f:
        tree = ast.parse(f.read())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}


SCALAR_FUNCS |= _prelude_helpers()


def _sub_entry(e, raw, known):
    """An _Entry over a nested mapping (reduce, variants, test): its errors name the op and the nested key."""
    s = _Entry(raw, e.path)
    s.name, s.known, s.lines, s.line = e.name, known, getattr(raw, "lines", {}), getattr(raw, "line", 0)
    return s


def parse_op(raw, path, registered_names) -> Op:
    """One ops.yaml entry -> Op. Each field has its own small parser below, run in the order the fields depend
    on one another (kind and signature first); unknown fields fail at the end."""
    e = _Entry(raw, path)
    if not isinstance(raw, dict):
        raise RegistryError(f"{path}: every entry must be a mapping, got {raw!r}")
    e.known = OP_FIELDS
    name = e.pop("name", str, required=True)
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        e.fail("name", f"must be a lower-case identifier, got {name!r}")
    kind = e.pop("kind", str, required=True)
    if kind not in KINDS:
        e.fail("kind", f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    sig = parse_signature(e, e.pop("signature", str, required=True))
    scalar = _parse_scalar(e, kind, sig)
    reduce = _parse_reduce(e, kind)
    body = _parse_body(e, kind, sig, registered_names)
    dtypes = e.pop("dtypes", list, required=kind not in ("composite", "view"), default=list(REAL_FAMILIES))
    for fam in dtypes:
        if fam not in FAMILIES:
            e.fail("dtypes", f"unknown dtype family {fam!r} (known: {', '.join(FAMILIES)})")
    result = e.pop("result", str, default="same")
    if result not in RESULT_RULES:
        e.fail("result", f"unknown result rule {result!r} (known: {', '.join(RESULT_RULES)})")
    outputs = e.pop("outputs", int, default=1)
    derivs, differentiable = _parse_derivatives(e, kind, sig, result, registered_names)
    variants = _parse_variants(e, sig)
    test = _parse_test(e, kind, sig, dtypes, differentiable)
    doc = e.pop("doc", str, default="")
    rejects = _parse_rejects(e)
    autocast = _parse_autocast(e, kind)
    cuda_impl = _parse_cuda(e, kind)
    in_dtype = _parse_scalars_in_dtype(e, kind, sig)
    grad_fn = _parse_grad_fn(e, kind, e.pop("grad_fn", (str, dict)), sig)
    geometry = _parse_geometry(e, kind, sig)
    forward = _parse_forward(e, sig, outputs, registered_names)
    vmap = _parse_vmap(e, sig, registered_names)
    checks = _parse_checks(e, e.pop("checks", dict, default={}), sig)
    numbers = _parse_numbers(e, kind, sig)
    chalf = _parse_chalf(e, kind)
    kernel_name = _parse_kernel_name(e, kind)
    bits = _parse_bits(e, kind)
    out = _parse_out(e, sig)
    complex_grad = e.pop("complex_grad", bool, default=True)
    r2c_grad = e.pop("r2c_grad", bool, default=True)
    numbers_op = _parse_numbers_op(e, kind, sig, registered_names)
    e.finish()
    return Op(name, kind, sig, e.line, scalar, reduce, body, tuple(dtypes), result, outputs, derivs,
              differentiable, variants, test, doc, rejects, autocast, cuda_impl, in_dtype, grad_fn, geometry,
              forward, vmap, checks, numbers, chalf, bits, out, complex_grad, r2c_grad,
              kernel_name, numbers_op)


def _parse_numbers_op(e, kind, sig, registered_names):
    """`numbers_op: {exponent: _pow_number_exponent}`: where that Tensor argument is a Python number, the call is
    that op's (same signature): PyTorch's overloads for a Scalar argument can compute otherwise than the Tensor one
    (pow.Tensor_Scalar's exact small powers, pow.Scalar's 1 ** x), which an elementwise kernel cannot tell apart
    from a Tensor holding the same value. Tested in order; the first argument given as a number wins."""
    value = e.pop("numbers_op", dict, default={})
    if value and kind not in ELEMENTWISE:
        e.fail("numbers_op", f"only elementwise ops take numbers_op, not kind {kind!r}")
    tensors = [a.name for a in sig.tensor_args]
    out = []
    for arg, target in value.items():
        if arg not in tensors:
            e.fail("numbers_op", f"{arg!r} is not a Tensor argument (known: {', '.join(tensors)})")
        if not isinstance(target, str) or target not in registered_names:
            e.fail("numbers_op", f"{target!r} is not an op of ops.yaml")
        out.append((arg, target))
    return tuple(out)


# a view op's `bits:` (reftorch/_conj.py view_bits): by default a view keeps its input's conjugate and negative bits,
# and a view to another dtype refuses an input with bits
BITS_RULES = ("real",           # the real parts: the conjugate bit drops, the negative bit stays
              "imag",           # the imaginary parts: the conjugate bit becomes a flip of the negative bit
              "no_conj")        # PyTorch refuses a conjugate view (view_as_real); the negative bit stays


def _parse_bits(e, kind):
    bits = e.pop("bits", str)
    if bits is not None and kind != "view":
        e.fail("bits", f"only view ops take bits:, not kind {kind!r}")
    if bits is not None and bits not in BITS_RULES:
        e.fail("bits", f"unknown bits rule {bits!r} (known: {', '.join(BITS_RULES)})")
    return bits


def _parse_chalf(e, kind):
    """`chalf:` -- what PyTorch's cpu kernels do with complex32 (torch.chalf) inputs: `true`, the op runs (reftorch
    computes it through complex64 and rounds the results back, reftorch/_chalf.py); a string, PyTorch raises
    NotImplementedError '"<that name>" not implemented for 'ComplexHalf'' ("RuntimeError: <message>": that error).
    Absent: the NotImplementedError naming the op.
    Views and composites need none (views move bytes; a composite's ops answer for themselves)."""
    chalf = e.pop("chalf", (bool, str))
    if chalf is False:
        e.fail("chalf", "give the kernel name PyTorch's error names (chalf: \"exp_vml_cpu\"), or leave it out")
    if chalf is not None and kind in ("view", "composite"):
        e.fail("chalf", f"a {kind} op needs no chalf: field (views move bytes; a composite's ops answer for it)")
    return chalf


def _parse_kernel_name(e, kind):
    """`kernel_name: bitwise_not_cpu` -- the name PyTorch's dispatch macro gives its cpu kernel in the
    NotImplementedError for a dtype it has no kernel for. There is no rule from the op's name (`_cpu`, `_vml_cpu`,
    none, or another op's: floor_divide's is div_floor_cpu), so it is declared where it is not the op's name."""
    name = e.pop("kernel_name", str)
    if name is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        e.fail("kernel_name", f"must be the C++ kernel's identifier PyTorch's error names, got {name!r}")
    if name is not None and kind in ("view", "composite"):
        e.fail("kernel_name", f"a {kind} op has no kernel of its own to name (its ops answer for it)")
    return name


def _parse_scalar(e, kind, sig):
    """`scalar:` — the elementwise op's expression over its arguments and the prelude's math functions."""
    scalar = e.pop("scalar", str)
    if kind not in ELEMENTWISE:
        if scalar is not None:
            e.fail("scalar", f"only elementwise ops take a scalar expression, not kind {kind!r}")
        return None
    if scalar is None:
        e.fail("scalar", f"a {kind} op needs a scalar expression")
    n_in = {"unary": 1, "binary": 2, "ternary": 3}[kind]
    if len(sig.tensor_args) != n_in:
        e.fail("signature", f"a {kind} op takes {n_in} Tensor argument(s), found {len(sig.tensor_args)}")
    arg_names = set(sig.names)
    unknown = names_in(scalar, e, "scalar") - arg_names - SCALAR_FUNCS
    if unknown:
        e.fail("scalar", f"names unknown variable(s) {sorted(unknown)}; it may use the op's arguments "
                         f"{sorted(arg_names)} and math functions")
    return scalar


def _parse_reduce(e, kind):
    """`reduce: {identity, combine, better, accumulate}` of reductions, argreductions and scans."""
    red = e.pop("reduce", dict)
    if kind not in ("reduction", "argreduction", "scan"):
        if red is not None:
            e.fail("reduce", f"only reduction/argreduction/scan ops take reduce, not kind {kind!r}")
        return None
    if red is None:
        e.fail("reduce", f"a {kind} op needs reduce: {{identity, combine}}")
    r = _sub_entry(e, red, REDUCE_KEYS)
    identity = r.pop("identity", (str, int, float))
    combine = r.pop("combine", str)
    better = r.pop("better", str)
    accumulate = r.pop("accumulate", str, default="same")
    r.finish("reduce key")
    if kind == "argreduction" and better is None:
        e.fail("reduce", "an argreduction needs 'better: <expression of x and best>'")
    if kind != "argreduction" and combine is None:
        e.fail("reduce", "needs 'combine: <expression of acc and x>'")
    for f, src in (("combine", combine), ("better", better)):
        if src is not None:
            unknown = names_in(src, e, "reduce") - {"acc", "x", "best"} - SCALAR_FUNCS
            if unknown:
                e.fail("reduce", f"{f} names unknown variable(s) {sorted(unknown)}; it may use acc, x, best")
    if accumulate not in ("same", "wide", "float64", "int64", "bool"):
        e.fail("reduce", f"unknown accumulate rule {accumulate!r}")
    return Reduce(None if identity is None else str(identity), combine, better, accumulate)


def _parse_body(e, kind, sig, registered_names):
    """`body:` — the Python of array, composite and foreach ops, reading only known names."""
    body = e.pop("body", str)
    needs = kind in ("array", "composite", "foreach")
    if needs and body is None:
        e.fail("body", f"a {kind} op needs a body")
    if not needs and body is not None:
        e.fail("body", f"only array, composite and foreach ops take a body, not kind {kind!r}")
    if kind == "foreach":
        _check_foreach(e, sig, body, registered_names)
    elif body is not None:
        mode = "exec" if "\n" in body.strip() else "eval"
        allowed = set(sig.names) | registered_names | HELPERS | ALLOWED_BUILTINS | set(dir(builtins))
        if kind == "array":
            allowed |= ARRAY_BODY_NAMES
        unknown = names_in(body, e, "body", mode) - allowed
        if unknown:
            e.fail("body", f"names unknown variable(s) {sorted(unknown)}")
        _check_return_types(e, body, sig)
    return body


def _check_return_types(e, body, sig):
    """A body's `return_type("<op>", ...)` builds the named tuple its signature's `-> (...)` declares: the op's own
    name, with the declared fields (positionally, or by those keywords)."""
    for node in ast.walk(ast.parse(textwrap.dedent(body))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "return_type"):
            continue
        first = node.args[0] if node.args else None
        if not (isinstance(first, ast.Constant) and first.value == e.name):
            e.fail("body", f"return_type(...) takes the op's own name first: return_type({e.name!r}, ...)")
        if not sig.returns:
            e.fail("signature", f"the body returns return_type({e.name!r}, ...): declare its fields after the "
                                "signature, e.g. '-> (Tensor values, Tensor indices)'")
        keys = tuple(k.arg for k in node.keywords)
        if keys and keys != sig.returns:
            e.fail("body", f"return_type({e.name!r}, ...) names {list(keys)}; the signature declares "
                           f"{list(sig.returns)}")


def _parse_derivatives(e, kind, sig, result, registered_names):
    """`derivatives: {arg: formula}` and `differentiable:`; returns ((arg, formula), ...), differentiable."""
    derivs = e.pop("derivatives", dict, default={})
    differentiable = e.pop("differentiable", bool, default=True)
    arg_names = set(sig.names)
    formula_ok = arg_names | FORMULA_NAMES | registered_names | HELPERS | ALLOWED_BUILTINS
    for arg, formula in derivs.items():
        if arg not in arg_names:
            e.fail("derivatives", f"derivative for {arg!r}, which is not an argument (arguments: {sorted(arg_names)})")
        if not isinstance(formula, str):
            e.fail("derivatives", f"formula for {arg!r} must be a string, got {formula!r}")
        unknown = names_in(formula, e, "derivatives") - formula_ok
        if unknown:
            e.fail("derivatives", f"formula for {arg!r} names unknown variable(s) {sorted(unknown)}")
    if derivs and not differentiable:
        e.fail("derivatives", "an op marked differentiable: false carries no derivatives")
    if kind == "foreach" and (differentiable or derivs):
        e.fail("differentiable", "a foreach op updates tensors in place: it needs differentiable: false")
    if kind in ELEMENTWISE + ("reduction", "scan", "array", "view") and differentiable and not derivs \
            and result not in ("bool", "int64"):
        e.fail("derivatives", "a differentiable op needs derivative formulas (or differentiable: false)")
    return tuple(derivs.items()), differentiable


def _parse_variants(e, sig):
    """`variants:` — which Python forms the op gets (function, method, in-place, operators, aliases)."""
    v = e.pop("variants", dict, default={})
    ve = _sub_entry(e, v, VARIANT_KEYS)
    first_is_tensor = bool(sig.args) and sig.args[0].is_tensor and sig.args[0].name == "self"
    variants = Variants(ve.pop("function", bool, default=True), ve.pop("method", bool, default=first_is_tensor),
                        ve.pop("inplace", bool, default=False), tuple(ve.pop("operators", list, default=[])),
                        tuple(ve.pop("aliases", list, default=[])), ve.pop("commutative", bool, default=False),
                        ve.pop("numpy_left", bool, default=False))
    ve.finish("variants key")
    for key, names in (("operators", variants.operators), ("aliases", variants.aliases)):
        if not all(isinstance(n, str) for n in names):
            ve.fail(key, f"expected a list of names, got {list(names)!r}")
    return variants


def _parse_domains(te, arg_names):
    """`domain:` / `grad_domain:` of `test:` — {argname: [lo, hi]} for Tensor arguments."""
    out = []
    for dname in ("domain", "grad_domain"):
        dom = te.pop(dname, dict, default={})
        for arg, rng in dom.items():
            if arg not in arg_names or not (isinstance(rng, list) and len(rng) == 2) or \
                    not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in rng):
                te.fail(dname, f"entry {arg!r}: {rng!r} must be 'argname: [lo, hi]' for a Tensor argument")
        out.append(tuple((k, float(a), float(b)) for k, (a, b) in dom.items()))
    return out


def _parse_signs(te, sig):
    """`signs: [eigenvectors]`: named returns whose columns are fixed up to sign; their output indices."""
    names = te.pop("signs", list, default=[])
    for n in names:
        if n not in sig.returns:
            te.fail("signs", f"{n!r} is not one of the op's named returns {list(sig.returns)}")
    return tuple(sig.returns.index(n) for n in names)


def _parse_test(e, kind, sig, dtypes, differentiable):
    """`test:` — how the registry's tests draw inputs and check the op."""
    te = _sub_entry(e, e.pop("test", dict, default={}), TEST_KEYS)
    arg_names = set(sig.names)
    ref = te.pop("ref", str)
    domain, grad_domain = _parse_domains(te, arg_names)
    test_args = te.pop("args", dict, default={})
    shapes_hint = te.pop("shapes", str)
    if shapes_hint is not None and shapes_hint not in SHAPE_HINTS:
        te.fail("shapes", f"unknown shapes hint {shapes_hint!r} (known: {', '.join(SHAPE_HINTS)}; a new hint needs "
                          "a shape rule in tests/registry_samples.py and its name in codegen/model.py SHAPE_HINTS)")
    for arg in test_args:
        if arg not in arg_names:
            te.fail("args", f"value for {arg!r}, which is not an argument (arguments: {sorted(arg_names)}); "
                            "quote Python values with commas in flow mappings: {dims: \"(0,)\"}")
    test = TestSpec(ref, domain,
                    float(te.pop("atol", (int, float), default=1e-5)), float(te.pop("rtol", (int, float), default=1e-5)),
                    te.pop("gradcheck", bool, default=differentiable),
                    tuple((k, str(val)) for k, val in test_args.items()),
                    tuple(te.pop("dtypes", list, default=dtypes)), te.pop("cuda", bool, default=True),
                    shapes_hint, te.pop("fuzz", bool, default=True), grad_domain,
                    tuple(te.pop("hermitian", list, default=[])), tuple(te.pop("triangular", list, default=[])),
                    _parse_signs(te, sig))
    te.finish("test key")
    if test.ref is None and kind != "view" and test.fuzz:
        e.fail("test", "every op needs a NumPy reference: test: {ref: ...} (or fuzz: false with a reason in doc)")
    return test


def _parse_rejects(e):
    """`rejects: {"any int": message}` — the error PyTorch raises for inputs of a dtype family."""
    rejects = []
    for key, msg in e.pop("rejects", dict, default={}).items():
        m = re.fullmatch(r"(any|all) (bool|int|float|complex)", str(key))
        if m is None or not isinstance(msg, str):
            e.fail("rejects", f"entry {key!r}: must be '<any|all> <bool|int|float|complex>: message' (the error "
                              "PyTorch raises when any/all tensor inputs have that dtype family; RuntimeError, or "
                              "NotImplementedError where the message starts 'NotImplementedError: '; {dtype} "
                              "reads the dtype's name, ComplexFloat ...)")
        rejects.append((m.group(1), m.group(2), msg))
    return tuple(rejects)


def _parse_autocast(e, kind):
    """`autocast:` — a policy for every device, or {device: policy}; returns str, ((device, policy), ...) or None."""
    autocast = e.pop("autocast", (str, dict))
    if isinstance(autocast, dict):
        per_device = []
        for dev, pol in autocast.items():
            if dev not in AUTOCAST_DEVICES:
                e.fail("autocast", f"unknown autocast device {dev!r} (known: {', '.join(AUTOCAST_DEVICES)})")
            if not isinstance(pol, str) or pol not in AUTOCAST_POLICIES + ("none",):
                e.fail("autocast", f"unknown autocast policy {pol!r} for {dev} (known: "
                                   f"{', '.join(AUTOCAST_POLICIES + ('none',))})")
            if pol != "none":
                per_device.append((dev, pol))
        if not autocast:
            e.fail("autocast", "an empty mapping; give a policy per device, e.g. {cpu: lower, cuda: fp32}")
        per_device.sort(key=lambda dp: AUTOCAST_DEVICES.index(dp[0]))
        autocast = tuple(per_device) or None
    elif autocast is not None and autocast not in AUTOCAST_POLICIES:
        e.fail("autocast", f"unknown autocast policy {autocast!r} (known: {', '.join(AUTOCAST_POLICIES)}, or a "
                           "mapping per device such as {cpu: lower, cuda: fp32})")
    if autocast is not None and kind == "view":
        e.fail("autocast", "a view never changes dtype; autocast applies to computing ops")
    return autocast


def _parse_cuda(e, kind):
    """`cuda:` — an array op's device implementation (else its body runs on a host copy)."""
    cuda_impl = e.pop("cuda", str)
    if cuda_impl is not None and kind != "array":
        e.fail("cuda", f"only array ops name a device implementation, not kind {kind!r}")
    if cuda_impl is not None and cuda_impl not in CUDA_IMPLS:
        e.fail("cuda", f"unknown device implementation {cuda_impl!r} (known: {', '.join(CUDA_IMPLS)}; a new one needs "
                       "its function in reftorch/_cuda_dispatch.py IMPLS)")
    return cuda_impl


def _parse_scalars_in_dtype(e, kind, sig):
    """`scalars_in_dtype: [alpha]`: Scalar arguments that PyTorch's kernel converts to the tensors' dtype before
    the math (add/sub's alpha: rounded to float16/bfloat16 for 16-bit tensors, where most kernels keep the
    number in float32)."""
    in_dtype = e.pop("scalars_in_dtype", list, default=[])
    scalar_args = {a.name for a in sig.args if a.type in ("Scalar", "Scalar?", "float", "float?")}
    for n in in_dtype:
        if kind not in ELEMENTWISE or n not in scalar_args:
            e.fail("scalars_in_dtype", f"{n!r} is not a Scalar/float argument of this elementwise op's signature")
    return tuple(in_dtype)


# what a view's `geometry:` body reads besides the op's arguments: self's layout, whether the in-place variant
# (`t_`) calls it (its errors name that variant), the length of self's storage (None from the in-place variant,
# whose caller checks the extent itself), and the helpers of codegen/templates/geometry.py
GEOMETRY_LAYOUT = ("shape", "strides", "offset", "dtype", "inplace", "storage_size")


def geometry_params(op):
    """The parameters of a view's generated geometry function: self's layout, then the op's other arguments (one
    named like a layout name -- reshape's shape, diagonal's offset -- is read as <name>_arg in the body)."""
    args = [a for a in op.signature.args if a.name != "self"]
    params = [f"{a.name}_arg" if a.name in GEOMETRY_LAYOUT else a.name for a in args]
    return ["shape", "strides", "offset"] + [p if a.default is None else f"{p}={a.default}"
                                             for p, a in zip(params, args)] + ["*", "dtype=None", "inplace=False",
                                                                               "storage_size=None"]


def _geometry_helpers():
    with open(os.path.join(os.path.dirname(__file__), "templates", "geometry.py")) as f:
        tree = ast.parse(f.read())
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}


GEOMETRY_HELPERS = _geometry_helpers()


def _parse_geometry(e, kind, sig):
    """`geometry:` — a view op's Python body over self's layout (shape, strides, offset, dtype) and its arguments,
    returning the view's (shape, strides, offset); strides None asks for a contiguous copy (reshape). A view that
    reads the same bytes as another dtype (real, view_as_complex) returns that dtype fourth, strides and offset in
    its elements."""
    body = e.pop("geometry", str)
    if kind != "view":
        if body is not None:
            e.fail("geometry", f"only view ops take a geometry body, not kind {kind!r}")
        return None
    if body is None:
        e.fail("geometry", "a view op needs a geometry body returning (shape, strides, offset)")
    if [a.name for a in sig.tensor_args] != ["self"]:
        e.fail("signature", "a view op takes one Tensor argument, self")
    params = {p.split("=")[0] for p in geometry_params(Op("", kind, sig, 0))} - {"*"}
    unknown = names_in(body, e, "geometry", "exec") - params - GEOMETRY_HELPERS - set(dir(builtins))
    if unknown:
        e.fail("geometry", f"names unknown variable(s) {sorted(unknown)}; it may use shape, strides, offset, "
                           f"inplace, the op's arguments and {', '.join(sorted(GEOMETRY_HELPERS))}")
    return body


# ---------------------------------------------------------------- forward: and vmap: (issue 24: function transforms)

def _parse_forward(e, sig, outputs, registered_names):
    """`forward:` -- the tangent of the (single) output as a Tensor expression over the inputs, their tangents
    `<arg>_t` and `result`, for ops whose JVP is not derived from `derivatives:` (an absent tangent is zeros)."""
    formula = e.pop("forward", str)
    if formula is None:
        return None
    if outputs != 1:
        e.fail("forward", "a forward formula gives the tangent of one output; this op has several")
    names = {a.name for a in sig.args}
    tangents = {f"{a.name}_t" for a in sig.args if a.is_tensor}
    unknown = names_in(formula, e, "forward") - (names | tangents | {"result"} | registered_names | HELPERS
                                                  | ALLOWED_BUILTINS)
    if unknown:
        e.fail("forward", f"names unknown variable(s) {sorted(unknown)}")
    if not (names_in(formula, e, "forward") & tangents):
        e.fail("forward", f"names no tangent (one of {sorted(tangents)})")
    return formula


def _parse_vmap(e, sig, registered_names):
    """`vmap:` -- the op as a Tensor expression over its arguments and registered ops that vmap batches by
    kind, used under vmap in place of a loop over the samples (an array op no kind rule covers)."""
    formula = e.pop("vmap", str)
    if formula is None:
        return None
    unknown = names_in(formula, e, "vmap") - ({a.name for a in sig.args} | registered_names | HELPERS
                                              | ALLOWED_BUILTINS)
    if unknown:
        e.fail("vmap", f"names unknown variable(s) {sorted(unknown)}")
    return formula


CHECK_ERRORS = ("RuntimeError", "ValueError", "TypeError", "IndexError", "NotImplementedError")


def _parse_checks(e, checks, sig):
    """`checks: {"<condition>": "[ErrorClass: ]message"}`: refusals by argument value that the wrapper tests
    before the call (PyTorch's `int_tensor ** -1`), a condition being a Python expression over the signature's
    arguments as the caller gave them (a Python number is still a number); the message may name them in
    str.format fields ({self.dtype.short})."""
    out = []
    for cond, msg in checks.items():
        try:
            tree = ast.parse(str(cond), mode="eval")
        except SyntaxError:
            e.fail("checks", f"condition {cond!r} is not a Python expression")
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        unknown = names - set(sig.names) - {"isinstance", "bool", "int", "float", "tuple", "list", "getattr",
                                            "hasattr", "len", "not", "None", "True", "False"}
        if unknown:
            e.fail("checks", f"condition {cond!r} names {', '.join(sorted(unknown))}, not arguments of the signature")
        if not isinstance(msg, str):
            e.fail("checks", f"message of {cond!r} must be a string")
        m = re.fullmatch(r"(\w+): (.*)", msg, re.S)
        cls, text = (m.group(1), m.group(2)) if m and m.group(1) in CHECK_ERRORS else ("RuntimeError", msg)
        out.append((str(cond), cls, text))
    return tuple(out)


# ops.yaml `out:`, what PyTorch checks of an out= tensor before writing it (reftorch/_inplace.py call_out):
# - dtype: exact - a structured kernel's "Expected out tensor to have dtype X, but got Y instead" (no cast);
#   input - "Expected the dtype for input and out to match" (amax, amin); absent - the result casts to out's
#   dtype within its category (TensorIterator's rule)
# - overlap: any - out may share no memory with an input (assert_no_overlap: gather, cat...); partial - it may
#   be an input but not overlap one partly (TensorIterator's assert_no_partial_overlap: elementwise and scan
#   ops, their default); none - no check (reductions, matmul)
# - dtype: complex / floating - torch.fft's "<fname> expects a complex (floating point) output tensor", fname
#   the name PyTorch's message gives (fft2 and ifftn say fftn); exact: real - a real input's result must be
#   out's dtype exactly ("Found dtype X but expected Y": ifft and ihfft of a real input, conjugated into out)
OUT_RULES = {"dtype": ("exact", "input", "complex", "floating", "compute"), "overlap": ("any", "partial", "none"),
             "exact": ("real",), "fname": None}


def _parse_out(e, sig):
    """`out: {dtype: exact, overlap: any}`: the op's out= checks where they are not its kind's default.
    `dtype: compute`: out's dtype is the computation's, the op's `dtype=` argument when that is not given (the
    input cast to it first, as PyTorch's reductions infer their dtype from out); given, out must be of it."""
    value = e.pop("out", dict, default={})
    if value.get("dtype") == "compute" and "dtype" not in sig.names:
        e.fail("out", "dtype: compute needs a `dtype` argument in the signature (out's dtype stands for it)")
    for rule, choice in value.items():
        if rule not in OUT_RULES:
            e.fail("out", f"unknown rule {rule!r} (known: {', '.join(OUT_RULES)})")
        if OUT_RULES[rule] is None:
            if not isinstance(choice, str):
                e.fail("out", f"{rule}: {choice!r} must be a string")
        elif choice not in OUT_RULES[rule]:
            e.fail("out", f"{rule}: {choice!r} is none of {', '.join(OUT_RULES[rule])}")
    if value.get("dtype") in ("complex", "floating") and "fname" not in value:
        e.fail("out", f"dtype: {value['dtype']} needs fname (the name PyTorch's message gives)")
    return tuple(value.items())


def _parse_numbers(e, kind, sig):
    """`numbers: [other]`: the Tensor args of an elementwise (or composite) op that PyTorch's argument parser also takes as a
    Python number (its Scalar overloads: eq(t, 2) but not eq(2, t)); a number for any other is a TypeError,
    as is every one of them a number (pow(2, 3)). Absent: any and all may be numbers (add(2, 3))."""
    value = e.pop("numbers", list)
    if value is None:
        return None
    if kind not in ELEMENTWISE + ("composite",):
        e.fail("numbers", f"only elementwise and composite ops take numbers, not kind {kind!r}")
    tensors = [a.name for a in sig.tensor_args]
    for name in value:
        if name not in tensors:
            e.fail("numbers", f"{name!r} is not a Tensor argument (known: {', '.join(tensors)})")
    return tuple(value)


def _parse_grad_fn(e, kind, value, sig):
    """`grad_fn: MmBackward0`, or by the ranks of the tensor inputs (`_` for an absent Tensor?):
    `grad_fn: {"2,2": MmBackward0, "1,1": DotBackward0, default: MatmulBackward0}`, or by a non-tensor
    argument given (not None; its formulas must read it, so the node saves it): `{dim: SumBackward1, ...}`."""
    if value is None:
        return None
    names = [value] if isinstance(value, str) else list(value.values())
    for n in names:
        if not isinstance(n, str) or not re.fullmatch(r"[A-Z]\w*Backward\d+(_copy)?", n):
            e.fail("grad_fn", f"expected a PyTorch node name such as MmBackward0, got {n!r}")
    if isinstance(value, str):
        return value
    if kind == "composite":
        return _parse_composite_grad_fn(e, value, sig)
    for key in value:
        scalars = [a.name for a in sig.args if not a.is_tensor]
        if key != "default" and key not in scalars and not re.fullmatch(r"(\d+|_)(,(\d+|_))*", str(key)):
            e.fail("grad_fn", f"key {key!r}: input ranks such as \"2,2\" (\"_\" for None), a non-tensor argument "
                              "name, or default")
    return tuple((str(k), v) for k, v in value.items())


def _parse_composite_grad_fn(e, value, sig):
    """A composite's names, first match wins: keys are Python conditions over the call's arguments (an argument
    name alone: given, not None), and `default`. The nodes its body records for its results take the name."""
    if "default" not in value:
        e.fail("grad_fn", "a composite's names by condition need a default")
    out = []
    for key, name in value.items():
        key = str(key)
        if key != "default":
            try:
                tree = ast.parse(key, mode="eval")
            except SyntaxError:
                e.fail("grad_fn", f"condition {key!r} is not a Python expression")
            unknown = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(sig.names) - \
                {"isinstance", "bool", "int", "float", "list", "tuple", "len", "hasattr", "None", "True", "False"}
            if unknown:
                e.fail("grad_fn", f"condition {key!r} names {', '.join(sorted(unknown))}, not arguments")
            if key in sig.names:
                key = f"{key} is not None"
        out.append((key, name))
    return tuple(out)


def _check_foreach(e, sig, body, registered_names):
    """A foreach op: every tensor argument is a Tensor[] (the same number of tensors in each, element for element
    of equal size), other arguments reach the kernel as scalars; the body is assignments `<Tensor[] arg> = <scalar
    expression>`, run in order per element, over the arguments' elements, math functions and the scalar functions of
    elementwise ops (called by op name). Assigned arguments are updated in place."""
    lists = [a.name for a in sig.args if a.type == "Tensor[]"]
    others = [a for a in sig.args if a.type != "Tensor[]"]
    if not lists or any(a.is_tensor or a.varargs for a in sig.args):
        e.fail("signature", "a foreach op takes Tensor[] arguments (no single Tensor, no varargs)")
    for a in others:
        if a.type not in ("Scalar", "int", "float", "bool"):
            e.fail("signature", f"a foreach op's non-tensor arguments reach the kernel: {a.name!r} is {a.type}")
    try:
        tree = ast.parse(textwrap_dedent(body), mode="exec")
    except SyntaxError as err:
        e.fail("body", f"not valid Python: {err.msg}")
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id in lists):
            e.fail("body", "every line of a foreach body is '<Tensor[] argument> = <scalar expression>'")
        unknown = names_in(ast.unparse(stmt.value), e, "body") - set(sig.names) - SCALAR_FUNCS - registered_names
        if unknown:
            e.fail("body", f"names unknown variable(s) {sorted(unknown)}")


def textwrap_dedent(src):
    return textwrap.dedent(src).strip()


def load(path="reftorch/ops.yaml", text=None):
    """Parse the registry; returns a tuple of Op in file order."""
    if text is None:
        with open(path) as f:
            text = f.read()
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as err:
        raise RegistryError(f"{path}: not valid YAML: {err}") from None
    if root is None:
        return ()
    if not isinstance(root, yaml.SequenceNode):
        raise RegistryError(f"{path}: the registry must be a list of op entries")
    raws = [_entry(n, path) for n in root.value]
    # only well-formed names count here: a malformed one is reported by parse_op with its op and field
    names = {r.get("name") for r in raws if isinstance(r, dict) and isinstance(r.get("name"), str)}
    aliases = set()
    for r in raws:
        if isinstance(r, dict) and isinstance(r.get("variants"), dict) and \
                isinstance(r["variants"].get("aliases"), list):
            aliases |= {a for a in r["variants"]["aliases"] if isinstance(a, str)}
    ops, seen = [], {}
    for raw in raws:
        op = parse_op(raw, path, names | aliases)
        if op.name in seen:
            raise RegistryError(f"{path}:{op.line}: op '{op.name}', field 'name': defined twice "
                                f"(first at line {seen[op.name]})")
        seen[op.name] = op.line
        ops.append(op)
    return tuple(ops)
