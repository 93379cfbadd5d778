"""What the runtime knows of each op: the ops.yaml entry (generated SPECS table) as an OpSpec, built once.

Everything per-op the dispatcher uses comes from here: argument kinds, dtype families, the result-dtype
rule, kernel scalars, what the derivative formulas save (save_plan, read by autograd/record.py) and the
op's compiled kernels by suffix (kernel(), a dtype variant of which lives in _cpu.py for 16-bit floats).
"""
from __future__ import annotations

import reftorch._cpu as _cpu
import reftorch._dtype as D
import reftorch.kernels.api as _api
import reftorch.kernels.derivatives as _derivatives
import reftorch.kernels.views as _views

TENSOR_TYPES = ("Tensor", "Tensor?", "Tensor[]", "Index", "Index?", "Mask")
PROMOTED = ("Tensor", "Tensor?", "Tensor[]")


def _save_plan(spec):
    """How record() finds each value the op's formulas read, worked out once per op: ("result",),
    ("scalar", index), ("input", index) or ("attr", index or None for the result, attribute).
    None where the general lookup is needed (a Tensor[] argument)."""
    if spec.list_arg is not None:
        return None
    plan = []
    for key in spec.saves:
        if key in ("result", "results"):
            plan.append((key, None))
        elif "." in key:
            base, attr = key.split(".")
            if base == "result":
                plan.append(("attr", (None, attr)))
            elif base in spec.tensor_args:
                plan.append(("attr", (spec.tensor_args.index(base), attr)))
            else:
                return None
        elif key in spec.scalar_names:
            plan.append(("scalar", spec.scalar_names.index(key)))
        elif key in spec.tensor_args:
            plan.append(("input", spec.tensor_args.index(key)))
        else:
            return None
    return tuple(zip(spec.saves, plan))


class _KernelCache(dict):
    """An op's kernels by suffix. Replacing one (tests do, to check reference mode) also drops the entry
    points the op's plans took from the old one."""
    __slots__ = ("spec",)

    def __init__(self, spec):
        super().__init__()
        self.spec = spec

    def _forget(self):
        plans = self.spec.plans
        if plans:
            for plan in plans.values():
                if plan:        # (False: a 16-bit signature, which has no plan)
                    plan.entries.clear()

    def __setitem__(self, key, value):
        replaced = key in self      # a new suffix: no plan holds an entry point of it yet
        dict.__setitem__(self, key, value)
        if replaced:
            self._forget()

    def __delitem__(self, key):
        dict.__delitem__(self, key)
        self._forget()


def _rejection(msg, dtype):
    """The exception of an ops.yaml `rejects:` message: RuntimeError, or the class its "NotImplementedError: "
    prefix names; {dtype} reads the refused dtype's PyTorch name (ComplexFloat ...)."""
    cls = RuntimeError
    if msg.startswith("NotImplementedError: "):
        cls, msg = NotImplementedError, msg[len("NotImplementedError: "):]
    return cls(msg.replace("{dtype}", dtype.short))


class OpSpec:
    """Runtime view of one ops.yaml entry (from the generated SPECS table)."""
    __slots__ = ("name", "kind", "args", "tensor_args", "scalar_names", "dtypes", "families", "result", "outputs",
                 "differentiable", "saves", "identity", "accumulate", "backward", "handler", "promote_idx",
                 "list_arg", "arg_types", "_kernel_cache", "tensor_types", "kernel_idx", "plans", "save_plan",
                 "rejects", "autocast", "cuda", "round_idx", "matmul_body", "blas", "in_dtype_pos", "geometry", "chalf", "bits",
                 "out_dtype", "out_overlap", "out_fname", "out_exact",
                 "complex_grad", "kernel_name")

    def __init__(self, d):
        self.name = d["name"]
        self.kind = d["kind"]
        self.args = d["args"]
        self.tensor_args = tuple(a[0] for a in self.args if a[1] in TENSOR_TYPES)
        self.tensor_types = tuple(a[1] for a in self.args if a[1] in TENSOR_TYPES)
        self.arg_types = {a[0]: a[1] for a in self.args}
        self.list_arg = next((a[0] for a in self.args if a[1] == "Tensor[]"), None)
        self.scalar_names = tuple(a[0] for a in self.args if a[1] not in TENSOR_TYPES)
        self.dtypes = d["dtypes"]
        self.families = {f: True for f in d["dtypes"]}
        self.result = d["result"]
        self.outputs = d["outputs"]
        self.differentiable = d["differentiable"]
        self.saves = d["saves"]
        self.identity = d["identity"]
        self.accumulate = d["accumulate"]
        self.backward = getattr(_derivatives, f"{self.name}_backward", None)
        self.geometry = getattr(_views, self.name, None)      # view ops: their ops.yaml `geometry:` body
        kernel_args = d.get("kernel_args", ())
        self.kernel_idx = tuple(i for i, n in enumerate(self.scalar_names) if n in kernel_args) \
            if d["kind"] != "fused" else None
        self._kernel_cache = _KernelCache(self)
        # elementwise plans (reftorch/_elementwise.py): one per argument signature, for ops whose tensor
        # arguments are all plain promoted Tensors
        self.plans = {} if (self.kind in ("unary", "binary", "ternary", "fused")
                            and all(ty == "Tensor" for ty in self.tensor_types)) else None
        self.save_plan = _save_plan(self)
        self.rejects = d.get("rejects", ())
        self.complex_grad = d.get("complex_grad", True)     # False: no autograd through complex results
        self.autocast = d.get("autocast")     # ops.yaml `autocast:` policy (reftorch/_autocast.py), or None
        self.bits = d.get("bits")      # view ops: their rule for conjugate/negative bits (reftorch/_conj.py)
        self.chalf = d.get("chalf")    # complex32 on cpu (ops.yaml `chalf:`, reftorch/_chalf.py)
        # PyTorch's name of its cpu kernel, which its NotImplementedError for a dtype without one names
        self.kernel_name = d.get("kernel_name", self.name)
        self.cuda = d.get("cuda")      # array ops: the device implementation (reftorch/_cuda_dispatch.py IMPLS)
        # out=: ops.yaml `out:` (reftorch/_inplace.py call_out); TensorIterator's overlap rule for elementwise ops
        # and scans by default
        out = d.get("out", {})
        self.out_dtype = out.get("dtype")
        self.out_fname = out.get("fname")       # torch.fft's name in its complex/floating out= messages
        self.out_exact = out.get("exact")       # "real": a real input's result must be out's dtype exactly
        self.out_overlap = out.get("overlap", "partial" if self.kind in ("unary", "binary", "ternary", "scan")
                                   else "none")
        self.matmul_body = d.get("matmul_body", False)   # array ops whose body is checks + np.matmul(a, b)
        self.blas = d.get("blas", False)     # array ops whose body calls BLAS (small products: one thread, _blas.py)
        # positions among the kernel scalars of ops.yaml `scalars_in_dtype` (rounded for a 16-bit compute dtype)
        self.round_idx = tuple(i for i, n in enumerate(kernel_args) if n in d.get("scalars_in_dtype", ()))
        # their positions among the scalar arguments: PyTorch checks these against the result dtype (alpha_check)
        self.in_dtype_pos = tuple(i for i, n in enumerate(self.scalar_names) if n in d.get("scalars_in_dtype", ()))

    def check_inputs(self, ts, common=None):
        """PyTorch's refusals by input dtype (ops.yaml `rejects`), checked before any cast. The message names the
        common dtype (`common`, the promoted one) where it is of the refused family, as TensorIterator's dispatch
        does (lt of complex64 and complex128: ComplexDouble), else the first refused input's."""
        fams = [D.FAMILIES[t.dtype.category] for t in ts]
        for quant, fam, msg in self.rejects:
            if (any if quant == "any" else all)(f == fam for f in fams):
                named = common if common is not None and D.FAMILIES[common.category] == fam else \
                    next(t.dtype for t, f in zip(ts, fams) if f == fam)
                raise _rejection(msg, named)

    def check_dtype(self, dtype):
        fam = D.FAMILIES[dtype.category]
        if fam not in self.families:
            for _, rejected, msg in self.rejects:      # the op's own words for that family, where it has them
                if rejected == fam:
                    raise _rejection(msg, dtype)
            # PyTorch's dispatch macros raise NotImplementedError (a RuntimeError) for a dtype with no kernel
            raise NotImplementedError(f"\"{self.kernel_name}\" not implemented for '{dtype.short}'")

    def kernel(self, suffix):
        k = self._kernel_cache.get(suffix)
        if k is None:
            k = getattr(_cpu.kernels(), f"{self.name}_{suffix}")
            self._kernel_cache[suffix] = k
        return k


SPECS = {name: OpSpec(d) for name, d in _api.SPECS.items()}
_fused_specs = {}


def fused_spec(name, n):
    """The spec of a fused backward kernel (an elementwise op generated from a derivative formula) of n operands."""
    spec = _fused_specs.get(name)
    if spec is None:
        spec = OpSpec(dict(name=name, kind="fused", args=tuple((f"t{i}", "Tensor", None, False) for i in range(n)),
                           dtypes=D.FAMILIES, result="same", outputs=1, differentiable=False,
                           saves=(), identity=None, accumulate=None))
        _fused_specs[name] = spec
    return spec


def all_specs():
    """Every spec, the fused ones included (for caches that hold per-spec state)."""
    return list(SPECS.values()) + list(_fused_specs.values())
