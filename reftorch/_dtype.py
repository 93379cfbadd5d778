"""dtypes and PyTorch's type promotion.

Promotion follows PyTorch: categories bool < integer < floating < complex; within the category of the highest
dimensioned tensor the usual lattice applies; 0-d tensors and Python scalars take part only when
their category is higher than every dimensioned operand's (a 0-d tensor then gives its own dtype, a
Python scalar the default dtype of its category), except that a complex operand of a lower tier keeps the
floating operand's width (float64 tensor * 1j is complex128, PyTorch's combine_categories).
"""
from __future__ import annotations

import os
import sys
import warnings

import ml_dtypes
import numpy as np

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class dtype:
    __slots__ = ("name", "np", "category", "itemsize", "short", "half", "host", "__weakref__")

    def __init__(self, name, np_dtype, category, short):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category          # 0 bool, 1 integer, 2 floating, 3 complex
        self.itemsize = self.np.itemsize
        self.short = short                # PyTorch's scalar-type name used in error messages
        self.half = None                  # "f16" / "bf16": a 16-bit float whose kernels are in kernels/cpu_half.py
        self.host = self.np               # the NumPy dtype values are made in (complex32's: complex64)

    @property
    def cpp(self):
        """The C++ name PyTorch's messages print (c10::complex<float>)."""
        return CPP_NAMES[self.name]

    @property
    def is_floating_point(self):
        return self.category == 2

    @property
    def differentiable(self):
        """Floating and complex tensors take part in autograd."""
        return self.category >= 2

    @property
    def is_signed(self):
        return self.name not in ("bool", "uint8", "uint64")

    @property
    def is_complex(self):
        return self.category == 3

    def to_real(self):
        return _TO_REAL.get(self, self)

    def to_complex(self):
        if self.category == 3:
            return self
        if self.category != 2:
            raise RuntimeError(f"to_complex is only supported for floating point dtypes, got {self!r}")
        if self is float16:         # half * 1j, view_as_complex of half: complex32 (its first appearance)
            note_chalf()
            return complex32
        return complex128 if self is float64 else complex64

    def __repr__(self):
        return f"torch.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


bool_ = dtype("bool", np.bool_, 0, "Bool")
uint8 = dtype("uint8", np.uint8, 1, "Byte")
int8 = dtype("int8", np.int8, 1, "Char")
int16 = dtype("int16", np.int16, 1, "Short")
int32 = dtype("int32", np.int32, 1, "Int")
int64 = dtype("int64", np.int64, 1, "Long")
float32 = dtype("float32", np.float32, 2, "Float")
float64 = dtype("float64", np.float64, 2, "Double")
# 16-bit floats (DESIGN §5): storage is NumPy float16 / ml_dtypes bfloat16, kernels compute in float32
float16 = dtype("float16", np.float16, 2, "Half")
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, 2, "BFloat16")
HALF = (float16, bfloat16)
float16.half, bfloat16.half = "f16", "bf16"
# complex: NumPy's interleaved (real, imag) pairs; a real/imag view reads the same bytes as float32/64
complex64 = dtype("complex64", np.complex64, 3, "ComplexFloat")
complex128 = dtype("complex128", np.complex128, 3, "ComplexDouble")
# complex32 (chalf): pairs of float16 as a NumPy structured dtype (NumPy has no complex32), so storage, views,
# indexing and concatenation move its bytes as they are; every op that computes reads it as complex64 and rounds
# its results back (reftorch/_chalf.py), as PyTorch's complex<Half> does through complex<float>
CHALF_NP = np.dtype([("real", np.float16), ("imag", np.float16)])
complex32 = dtype("complex32", CHALF_NP, 3, "ComplexHalf")
complex32.host = np.dtype(np.complex64)
_TO_REAL = {complex64: float32, complex128: float64, complex32: float16}

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128,
       complex32)
# uint64: a result dtype only (torch.hash_tensor's), as PyTorch's own support of it is limited: tensors of it are
# made, printed, compared and converted; no op of ops.yaml lists it among its dtypes
uint64 = dtype("uint64", np.uint64, 1, "UInt64")
_FROM_NP = {d.np: d for d in ALL + (uint64,)}
_BY_NAME = {d.name: d for d in ALL + (uint64,)}
ALIASES = {"float": float32, "double": float64, "long": int64, "int": int32, "short": int16, "half": float16,
           "bool": bool_, "cfloat": complex64, "cdouble": complex128, "chalf": complex32}
_BY_NAME["half"] = float16
# the C++ names of the dtypes (caffe2's TypeMeta), as PyTorch's messages that print a TensorOptions' dtype word them
CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
             "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
             "bool": "bool", "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
             "complex32": "c10::complex<c10::Half>", "uint64": "unsigned long"}
FAMILY = {"bool": (bool_,), "int": (uint8, int8, int16, int32, int64), "float": (float16, bfloat16, float32, float64),
          "complex": (complex64, complex128)}
FAMILIES = ("bool", "int", "float", "complex")     # by category: FAMILIES[dtype.category]


def _by_name(name):
    return _BY_NAME[name]


_on_chalf = []      # callbacks run when complex32 is first used (reftorch/_conj.py: the dispatcher's slow path)
chalf_warning_due = False   # complex32 named and PyTorch's experimental warning not yet given (Storage reads it)


def _arm_chalf_warning():
    global chalf_warning_due
    chalf_warning_due = True


_on_chalf.append(_arm_chalf_warning)


def chalf_allocated():
    """PyTorch's UserWarning (TORCH_WARN_ONCE in its empty_generic) at the process's first complex32 allocation; the
    warning names the first caller outside reftorch."""
    global chalf_warning_due
    chalf_warning_due = False
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn("ComplexHalf support is experimental and many operators don't support it yet.", UserWarning,
                  stacklevel=level)


def note_chalf():
    """complex32 is about to be used: until then no call pays for its checks."""
    while _on_chalf:
        _on_chalf.pop()()


def chalf_values(a):
    """A complex32 (structured) array's values as complex64 (exact)."""
    a = np.asarray(a)
    # contiguous first: a strided 1-D view (a column) reshapes to itself, and a strided array cannot be reviewed
    return np.ascontiguousarray(a).reshape(-1).view(np.float16).astype(np.float32).view(np.complex64).reshape(a.shape)


def to_chalf(a):
    """Values of any dtype as a complex32 array (each part rounded to float16 from its own precision, nearest
    even; real values get imaginary parts 0)."""
    a = np.asarray(a)
    if a.dtype == CHALF_NP:
        return a.copy()
    parts = np.empty(a.shape + (2,), np.float16)
    with np.errstate(over="ignore", invalid="ignore"):
        if a.dtype.kind == "c":
            parts[..., 0], parts[..., 1] = a.real, a.imag
        else:
            parts[..., 0], parts[..., 1] = a.astype(np.float64) if a.dtype.kind in "biu" else a, 0
    return parts.reshape(-1).view(CHALF_NP).reshape(a.shape)


class _Defaults:
    float = float32


defaults = _Defaults()


def get_default_dtype():
    return defaults.float


def default_complex():
    """PyTorch's default complex dtype follows the default float dtype."""
    return complex128 if defaults.float is float64 else complex64


_on_default_change = []     # callbacks of the layers that cache result dtypes (the dispatcher's plans)


def set_default_dtype(d):
    if not isinstance(d, dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the default type")
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if d is not defaults.float:
        defaults.float = d
        for forget in _on_default_change:
            forget()


def from_numpy(np_dtype):
    d = _FROM_NP.get(np.dtype(np_dtype))
    if d is None:
        raise TypeError(f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
                        "float64, float32, float16, complex64, complex128, bfloat16, int64, int32, int16, int8, uint8, and bool.")
    return d


def as_dtype(x):
    """dtype from a reftorch dtype, a NumPy dtype, a Python type or a name."""
    if isinstance(x, dtype):
        if x is complex32:
            note_chalf()
        return x
    if x is float:
        return defaults.float
    if x is int:
        return int64
    if x is bool:
        return bool_
    if x is complex:
        return default_complex()
    if isinstance(x, str) and x in _BY_NAME:
        return _BY_NAME[x]
    try:
        return from_numpy(x)
    except TypeError:
        raise TypeError(f"expected a dtype, got {x!r}") from None


def can_cast(from_, to):
    """Whether PyTorch's casting rules let from_ convert to `to`: never to a lower category (bool < integer <
    floating < complex); within one category any width goes."""
    for name, pos, v in (("from_", 1, from_), ("to", 2, to)):
        if not isinstance(v, dtype):
            raise TypeError(f"can_cast(): argument '{name}' (position {pos}) must be torch.dtype, not "
                            f"{type(v).__name__}")
    return from_.category <= to.category


def promote_types(a, b):
    """The smallest dtype both a and b convert to without loss (PyTorch's table)."""
    if a is b:
        return a
    if (a is uint64 or b is uint64) and a.category < 2 and b.category < 2:
        raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                           f"{a.short} and {b.short}")
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.category == 3 and lo is float64:
            return complex128
        if hi is complex32 and lo.category == 2 and lo is not float16:
            return complex64        # (float32 or bfloat16 beside complex32)
        return hi
    if a.category == 3:
        return complex128 if complex128 in (a, b) else complex64 if complex64 in (a, b) else complex32
    if a.category == 2 and (a in HALF or b in HALF):
        if a.itemsize != b.itemsize:
            return a if a.itemsize > b.itemsize else b
        return float32          # float16 with bfloat16: neither holds the other
    r = np.promote_types(a.np, b.np)
    return _FROM_NP[r]


def scalar_category(v):
    if isinstance(v, (bool, np.bool_)):
        return 0
    if isinstance(v, (int, np.integer)):
        return 1
    if isinstance(v, (float, np.floating)):
        return 2
    if isinstance(v, (complex, np.complexfloating)):
        return 3
    raise TypeError(f"unsupported scalar type {type(v).__name__}")


def scalar_default(category):
    return (bool_, int64, defaults.float)[category] if category < 3 else default_complex()


def result_type(dim_dtypes, zero_dim_dtypes=(), scalar_categories=()):
    """PyTorch's three-tier promotion: dimensioned tensors, then 0-d tensors, then Python scalars."""
    result = None
    for d in dim_dtypes:
        result = d if result is None else promote_types(result, d)
    zd = None
    for d in zero_dim_dtypes:
        zd = d if zd is None else promote_types(zd, d)
    if zd is not None and (result is None or zd.category > result.category):
        result = result.to_complex() if zd.category == 3 and result is not None and result.category == 2 else zd
    sc = max(scalar_categories, default=None)
    if sc is not None and (result is None or sc > result.category):
        result = result.to_complex() if sc == 3 and result is not None and result.category == 2 else \
            scalar_default(sc)
    return result


# C++ names PyTorch's checked scalar conversion uses in its overflow message
_C_NAMES = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
            "int64": "int64_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
            "float64": "double"}


def fill_value(value, dt):
    """A Python number written into a tensor of dtype dt (full, fill_, masked_fill, t[i] = v) as PyTorch's
    checked conversion takes it: a complex one into a real dtype only without an imaginary part (then as its
    real part; bool takes any, as value != 0), else `value cannot be converted to type float without overflow`."""
    if not isinstance(value, (complex, np.complexfloating)) or dt.category == 3:
        return value
    if dt.category == 0:
        return value != 0
    if value.imag != 0:
        raise RuntimeError(f"value cannot be converted to type {_C_NAMES[dt.name]} without overflow")
    return value.real


def check_scalar_fits(value, dt):
    """A Python number passed as a Scalar argument (alpha, a threshold...) must fit the integer dtype it is
    converted to, as PyTorch's checked conversion demands; floating dtypes take anything (overflow -> inf)."""
    if dt.category >= 2 or isinstance(value, bool):
        return
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        raise RuntimeError(f"value cannot be converted to type {_C_NAMES[dt.name]} without overflow")
    lo, hi = (0, 1) if dt.category == 0 else (int(np.iinfo(dt.np).min), int(np.iinfo(dt.np).max))
    if not lo - 1 < value < hi + 1:
        raise RuntimeError(f"value cannot be converted to type {_C_NAMES[dt.name]} without overflow")
