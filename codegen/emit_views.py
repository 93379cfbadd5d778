"""reftorch/kernels/views.py: one geometry function per view op, from its ops.yaml `geometry:` body, and
reftorch/kernels/geometry.py, the helpers those bodies call (codegen/templates/geometry.py copied verbatim).

A view's function takes self's layout and the op's arguments and returns the view's (shape, strides,
offset); the dispatcher's one view path applies it (OpSpec.geometry), so adding a view op is its entry."""
from __future__ import annotations

import textwrap

from .common import HEADER, template
from .model import GEOMETRY_HELPERS, geometry_params


def emit_geometry():
    return HEADER + template("geometry.py")


def emit_views(ops):
    out = [HEADER, '"""View geometry, one function per view op of ops.yaml: (self\'s shape, strides, offset, the op\'s '
                   'arguments) -> the view\'s (shape, strides, offset)."""\n',
           f"from .geometry import {', '.join(sorted(GEOMETRY_HELPERS))}  # noqa: F401\n"]
    for op in ops:
        if op.kind != "view":
            continue
        body = textwrap.indent(textwrap.dedent(op.geometry).strip("\n"), "    ")
        out.append(f"\n\ndef {op.name}({', '.join(geometry_params(op))}):\n    # ops.yaml: {op.name}\n{body}\n")
    return "".join(out)
