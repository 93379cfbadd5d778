"""reftorch.onnx: importable, so programs that mention ONNX export start; the export itself is not
supported (reftorch has no graph exporter) and says so."""
from __future__ import annotations

__all__ = ["export", "is_in_onnx_export", "OnnxExporterError"]


class OnnxExporterError(RuntimeError):
    """Raised by reftorch.onnx.export."""


def export(model, args=(), f=None, **kwargs):
    raise OnnxExporterError("reftorch.onnx.export is not supported: reftorch cannot export models to ONNX. "
                            "Export with PyTorch (the state_dict saved by reftorch.save loads into a torch module).")


def is_in_onnx_export():
    """False: no ONNX export ever runs in reftorch."""
    return False
