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


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH
    if profile == "default":
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 4, 1000, 3, 80
    if precision is not None:
        PRECISION = precision
    if threshold is not None:
        THRESHOLD = threshold
    if edgeitems is not None:
        EDGEITEMS = edgeitems
    if linewidth is not None:
        LINEWIDTH = linewidth


class _Formatter:
    def __init__(self, values, dtype):
        self.floating = dtype.is_floating_point
        self.bool = dtype is D.bool_
        vals = values[np.isfinite(values)] if self.floating else values
        self.int_mode = True
        self.sci = False
        if self.bool:
            self.width = max((len(str(bool(v))) for v in values), default=4)
            return
        if not self.floating:
            self.width = max((len(str(int(v))) for v in values), default=1)
            return
        if vals.size == 0:
            self.width = max((len(self._fmt_special(v)) for v in values), default=1)
            self.int_mode = True
            return
        absv = np.abs(vals.astype(np.float64))
        self.int_mode = bool(np.all(vals == np.round(vals)))
        nonzero = absv[absv != 0]
        if nonzero.size:
            mx, mn = nonzero.max(), nonzero.min()
            if self.int_mode:
                self.sci = mx > 1e8
            else:
                self.sci = mx / mn > 1000 or mx > 1e8 or mn < 1e-4
        self.width = max(len(self.format(v)) for v in values)

    @staticmethod
    def _fmt_special(v):
        if math.isnan(v):
            return "nan"
        return "inf" if v > 0 else "-inf"

    def format(self, v):
        if self.bool:
            return str(bool(v))
        if not self.floating:
            return str(int(v))
        v = float(v)
        if not math.isfinite(v):
            return self._fmt_special(v)
        if self.sci:
            return f"{v:.{PRECISION}e}"
        if self.int_mode:
            return f"{v:.0f}."
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
            items = [fmt.cell(v) for v in arr[:EDGEITEMS]] + ["..."] + [fmt.cell(v) for v in arr[-EDGEITEMS:]]
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
