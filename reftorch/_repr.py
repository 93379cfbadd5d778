"""PyTorch's tensor printing: `tensor([1., 2.])`, `tensor([[1, 2]], dtype=torch.int32)`, grad_fn suffix.

Floats use 4 digits after the point, scientific notation when the magnitudes span too widely,
and a shared width so that columns line up; long tensors summarise with `...`."""
from __future__ import annotations

import math

import numpy as np

import reftorch._dtype as D

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
SCI_MODE = None         # None: chosen per tensor by _Formatter; True / False: forced (set_printoptions(sci_mode=))
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """PyTorch's print options; as there, sci_mode is set on every call (left out: back to automatic)."""
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH, SCI_MODE
    if profile in _PROFILES:
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = _PROFILES[profile]
    if precision is not None:
        PRECISION = precision
    if threshold is not None:
        THRESHOLD = threshold
    if edgeitems is not None:
        EDGEITEMS = edgeitems
    if linewidth is not None:
        LINEWIDTH = linewidth
    SCI_MODE = sci_mode


class _Formatter:
    """PyTorch's _tensor_str._Formatter: integer mode, scientific mode and the column width are read off the
    nonzero finite values only (zeros, inf and nan neither widen the column nor choose the notation)."""

    def __init__(self, values, dtype):
        self.floating = dtype.is_floating_point
        self.bool = dtype is D.bool_
        self.int_mode, self.sci, self.width = True, False, 1
        if not self.floating:
            self.width = max((len(self.format(v)) for v in values), default=1)
            return
        vals = np.asarray(values, dtype=np.float64).reshape(-1)
        nz = vals[np.isfinite(vals) & (vals != 0)]
        if nz.size == 0:
            return
        absv = np.abs(nz)
        mn, mx = absv.min(), absv.max()
        self.int_mode = bool(np.all(nz == np.ceil(nz)))
        self.sci = bool(mx / mn > 1000.0 or mx > 1.0e8 or mn < 1.0e-4) if SCI_MODE is None else bool(SCI_MODE)
        if self.sci:
            self.width = max(1, max(len(f"{v:.{PRECISION}e}") for v in nz.tolist()))
        elif self.int_mode:
            self.width = max(1, max(len(f"{v:.0f}") + 1 for v in nz.tolist()))
        else:
            self.width = max(1, max(len(f"{v:.{PRECISION}f}") for v in nz.tolist()))

    def format(self, v):
        if self.bool:
            return str(bool(v))
        if not self.floating:
            return str(int(v))
        v = float(v)
        if self.sci:
            return f"{v:.{PRECISION}e}"
        if self.int_mode:
            return f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        return f"{v:.{PRECISION}f}"

    def cell(self, v):
        return self.format(v).rjust(self.width)


class _ComplexFormatter:
    """PyTorch's complex printing: one formatter for the real parts, one for the imaginary parts, each cell
    `<real, padded><sign><imag>j` (the imaginary part's padding stripped)."""

    def __init__(self, values, dtype):
        real = dtype.to_real()
        self.re, self.im = _Formatter(values.real.copy(), real), _Formatter(values.imag.copy(), real)
        self.width = self.re.width + self.im.width + 1     # PyTorch's element length, less the ", "

    @staticmethod
    def _join(real_str, imag_str):
        return real_str + imag_str if imag_str[0] in "+-" else real_str + "+" + imag_str

    def format(self, v):
        return self._join(self.re.format(v.real), (self.im.format(v.imag) + "j").lstrip())

    def cell(self, v):
        return self._join(self.re.cell(v.real), (self.im.cell(v.imag) + "j").lstrip())


def _summarized(arr):
    return arr.size > THRESHOLD


def _edge_values(arr, summarize):
    if not summarize or arr.ndim == 0:
        return arr.reshape(-1)
    parts = []

    def walk(a):
        if a.ndim == 1:
            parts.append(a[:EDGEITEMS] if a.shape[0] > 2 * EDGEITEMS else a)
            if a.shape[0] > 2 * EDGEITEMS:
                parts.append(a[-EDGEITEMS:])
            return
        idx = range(a.shape[0]) if a.shape[0] <= 2 * EDGEITEMS else list(range(EDGEITEMS)) + list(
            range(a.shape[0] - EDGEITEMS, a.shape[0]))
        for i in idx:
            walk(a[i])

    walk(arr)
    return np.concatenate(parts) if parts else arr.reshape(-1)


def _render(arr, fmt, indent, summarize):
    if arr.ndim == 0:
        return fmt.format(arr.item()).strip()
    if arr.ndim == 1:
        n = arr.shape[0]
        if summarize and n > 2 * EDGEITEMS:
            items = [fmt.cell(v) for v in arr[:EDGEITEMS]] + [" ..."] + [fmt.cell(v) for v in arr[-EDGEITEMS:]]
        else:
            items = [fmt.cell(v) for v in arr]
        per_line = max(1, (LINEWIDTH - indent) // (fmt.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    n = arr.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        rows = [_render(arr[i], fmt, indent + 1, summarize) for i in range(EDGEITEMS)] + ["..."] + \
               [_render(arr[i], fmt, indent + 1, summarize) for i in range(n - EDGEITEMS, n)]
    else:
        rows = [_render(arr[i], fmt, indent + 1, summarize) for i in range(n)]
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(rows) + "]"


def tensor_repr(t):
    if t.device.type == "meta":     # no values to show: PyTorch prints the geometry
        return _meta_repr(t)
    arr = t._array()
    prefix = "tensor("
    summarize = _summarized(arr)
    if arr.size == 0:
        body = "[]" if arr.ndim <= 1 else "[]"
    else:
        fmt = (_ComplexFormatter if t.dtype.is_complex else _Formatter)(_edge_values(arr, summarize), t.dtype)
        body = _render(arr, fmt, len(prefix), summarize)
    suffixes = []
    if arr.size == 0 and arr.ndim > 1:
        suffixes.append(f"size={tuple(arr.shape)}")
    default_dtypes = (D.defaults.float, D.default_complex(), D.int64, D.bool_)
    if t.dtype not in default_dtypes or (arr.size == 0 and t.dtype is not D.defaults.float):
        suffixes.append(f"dtype={t.dtype!r}")
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, len(prefix))


def _add_suffixes(text, suffixes, indent):
    """PyTorch's: a suffix that would pass the line width starts a new line."""
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last + len(s) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            parts.append(", " + s)
            last += len(s) + 2
    return "".join(parts) + ")"


def _meta_repr(t):
    suffixes = ["device='meta'", f"size={tuple(t._shape)}"]
    if t.dtype is not D.defaults.float:
        suffixes.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return "tensor(..., " + ", ".join(suffixes) + ")"
