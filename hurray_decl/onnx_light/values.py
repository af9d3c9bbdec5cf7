"""Self-contained values, portable or ORT: open once, then decode, rebuild the plan, validate or
export with the layout's own code. Compact values are materialized above, in :mod:`.codec`."""

from __future__ import annotations

import numpy as np

from hurray_decl.errors import OnnxLightError
from hurray_decl.onnx_light.numerics import to_logical
from hurray_decl.onnx_light.ort import (
    ORT_FORMATS,
    MatMulNBitsInputs,
    decode_ort,
    export_inputs,
    ort_plan,
    read_ort,
)
from hurray_decl.onnx_light.ort.decode import OrtValue
from hurray_decl.onnx_light.plan import QuantizationPlan
from hurray_decl.onnx_light.portable import (
    Opened,
    dequantize_portable,
    open_value,
    portable_plan,
    read_portable,
    requested_code,
)
from hurray_decl.onnx_light.profiles import QuantizationFormat

__all__ = ["decode_plan_full", "dequantize_full", "export_full", "validate_full"]


def _ort_value(opened: Opened, fmt: QuantizationFormat) -> OrtValue:
    return read_ort(opened.resolved, fmt, opened.dtype, opened.shape, opened.value.raw_data)


def _ort_format(opened: Opened) -> QuantizationFormat | None:
    """The value's ORT profile; None for a portable one."""
    return opened.format if opened.format is not None and not opened.format.portable else None


def dequantize_full(value, model=None, dtype=None) -> np.ndarray:
    """Decode a self-contained portable or ORT value (OL-NUM-24)."""
    opened = open_value(value, model)
    fmt = _ort_format(opened)
    if fmt is not None:
        values = decode_ort(_ort_value(opened, fmt))
        return to_logical(values, requested_code(dtype, opened.dtype), "OL-NUM-25", "value")
    return dequantize_portable(opened, model, dtype)


def decode_plan_full(value, model=None) -> QuantizationPlan:
    """The plan a self-contained value was encoded with."""
    opened = open_value(value, model)
    fmt = _ort_format(opened)
    if fmt is not None:
        return ort_plan(_ort_value(opened, fmt))
    return portable_plan(opened, model)


def validate_full(value, model=None) -> None:
    """Every decoder check on a self-contained portable or ORT value, without decoding."""
    opened = open_value(value, model)
    fmt = _ort_format(opened)
    if fmt is not None:
        _ort_value(opened, fmt)
    else:
        read_portable(opened.value, model, opened)


def export_full(value, model=None) -> MatMulNBitsInputs:
    """Validate a self-contained ORT value and copy its bytes into MatMulNBits inputs (OL-ORT-30);
    a portable value, the portable ``matmulnbits`` profile included, is refused (OL-ORT-31)."""
    opened = open_value(value, model)
    if opened.format is None or opened.format not in ORT_FORMATS:
        name = opened.format.wire_name if opened.format is not None else "this value"
        raise OnnxLightError("OL-ORT-31", "only ORT MatMulNBits values export as MatMulNBits inputs; "
                             f"{name} is a portable layout", path="value -> struct_type -> name",
                             actual=opened.resolved.name, expected="onnx_light.quantization.v1/ort_matmulnbits_*")
    return export_inputs(_ort_value(opened, opened.format))
