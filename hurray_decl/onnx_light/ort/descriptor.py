"""The canonical ORT descriptor and its interpretation (OL-ORT-18, -19, -25 .. -27).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hurray_decl.onnx_light.numerics import DataType
from hurray_decl.onnx_light.ort.geometry import (
    FIELDS,
    FLOATING,
    IMPLICIT,
    ORT_FORMATS,
    PACKED,
    OrtGeometry,
    check_block_size,
    ort_error,
)
from hurray_decl.onnx_light.profiles import WIRE_PREFIX, QuantizationFormat
from hurray_decl.onnx_light.wire import add_tensor, int64_constant, pb

__all__ = [
    "OrtTypeInfo",
    "ort_type",
    "read_ort_type",
]


def ort_type(geometry: OrtGeometry) -> pb.StructTypeProto:
    """The canonical ORT descriptor (OL-ORT-18, -19)."""
    root = pb.StructTypeProto()
    root.name = WIRE_PREFIX + geometry.format.wire_name
    s = root.structure
    s.SetInParent()
    parameters = s.field.add()
    parameters.name = FIELDS[0]
    parameters.constant.CopyFrom(int64_constant([geometry.bits, geometry.block_size], [2]))
    add_tensor(s, FIELDS[1], DataType.UINT8, [geometry.n, geometry.groups, geometry.blob])
    add_tensor(s, FIELDS[2], geometry.dtype, [geometry.n, geometry.groups])
    if geometry.zero_points != IMPLICIT:
        add_tensor(s, FIELDS[3], DataType.UINT8 if geometry.zero_points == PACKED else geometry.dtype, geometry.zp_dims)
    return root


@dataclass(frozen=True)
class OrtTypeInfo:
    """What can be read from an ORT descriptor alone (K is only bounded by G)."""

    format: QuantizationFormat
    block_size: int
    n: int
    groups: int
    dtype: int
    zero_points: str


def _tensor_field(field, path: str) -> tuple[int, list[int]]:
    if field.WhichOneof("content") != "type" or field.type.WhichOneof("value") != "tensor_type":
        raise ort_error("OL-ORT-27", "expected a tensor field", path, field.name, "a tensor type")
    tensor = field.type.tensor_type
    dims = [d.dim_value if d.WhichOneof("value") == "dim_value" else -1 for d in tensor.shape.dim]
    return tensor.elem_type, dims


def read_ort_type(root: pb.StructTypeProto, fmt: QuantizationFormat, path: str) -> OrtTypeInfo:
    """Interpret an ORT descriptor (OL-ORT-25 .. -27); the caller compares it canonically."""
    bits = ORT_FORMATS[fmt]
    fields: Sequence[pb.StructTypeProto.Structure.Field] = (
        root.structure.field if root.WhichOneof("kind") == "structure" else ())
    if len(fields) not in (3, 4):
        raise ort_error("OL-ORT-27", "an ORT descriptor is a structure of 3 or 4 fields", path, len(fields), "3 or 4")
    first = fields[0]
    constant = first.constant
    if (first.name != FIELDS[0] or first.WhichOneof("content") != "constant" or constant.data_type != DataType.INT64
            or list(constant.dims) != [2] or len(constant.int64_data) != 2 or constant.HasField("raw_data")):
        raise ort_error("OL-ORT-27", "the first field must be the constant INT64 [2] parameters",
                    f"{path} -> parameters", first.name, "parameters = [bits, block_size]")
    if constant.int64_data[0] != bits:
        raise ort_error("OL-ORT-25", "parameters[0] differs from the profile's bits", f"{path} -> parameters[0]",
                    int(constant.int64_data[0]), bits)
    block_size = check_block_size(int(constant.int64_data[1]), f"{path} -> parameters[1]")
    if len(fields) == 4 and fields[3].name != FIELDS[3]:
        raise ort_error("OL-ORT-26", "the fourth field must be named zero_points", f"{path} -> field[3]",
                    fields[3].name, FIELDS[3])
    dtype, scale_dims = _tensor_field(fields[2], f"{path} -> scales")
    if len(scale_dims) != 2 or min(scale_dims) < 0:
        raise ort_error("OL-ORT-27", "scales must be [N, G]", f"{path} -> scales", scale_dims, "[N, G]")
    kind = IMPLICIT
    if len(fields) == 4:
        zp_type, _ = _tensor_field(fields[3], f"{path} -> zero_points")
        kind = PACKED if zp_type == DataType.UINT8 else FLOATING
    return OrtTypeInfo(fmt, block_size, scale_dims[0], scale_dims[1], dtype, kind)
