"""MatMulNBits initializers from a validated ORT value: the bytes copied, never dequantized
(OL-ORT-30).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hurray_decl.onnx_light.numerics import LOGICAL_DTYPES, DataType
from hurray_decl.onnx_light.ort.decode import OrtValue
from hurray_decl.onnx_light.ort.geometry import FLOATING, PACKED
from hurray_decl.onnx_light.wire import pb

__all__ = [
    "MatMulNBitsInputs",
    "export_inputs",
]


@dataclass(frozen=True)
class MatMulNBitsInputs:
    """The MatMulNBits initializers of an ORT value and the node's attributes (OL-ORT-30)."""

    weights: Any
    scales: Any
    zero_points: Any
    k: int
    n: int
    bits: int
    block_size: int


def _tensor_class():
    try:
        import onnx
    except ImportError:  # onnx is optional at run time: fall back to this package's message
        return pb.TensorProto
    return onnx.TensorProto


def _tensor(cls, name: str, data_type: int, dims: Sequence[int], raw: bytes):
    tensor = cls()
    tensor.name = name
    tensor.data_type = data_type
    tensor.dims.extend(int(d) for d in dims)
    tensor.raw_data = raw
    return tensor


def export_inputs(value: OrtValue) -> MatMulNBitsInputs:
    g = value.geometry
    cls = _tensor_class()
    target = LOGICAL_DTYPES[g.dtype]
    weights = _tensor(cls, "B", DataType.UINT8, [g.n, g.groups, g.blob], value.weights.tobytes())
    scales = _tensor(cls, "scales", g.dtype, [g.n, g.groups], value.scales.astype(target.newbyteorder("<")).tobytes())
    zero_points = None
    stored = value.zp_stored  # None exactly when the zero points are implicit
    if g.zero_points == PACKED and stored is not None:
        zero_points = _tensor(cls, "zero_points", DataType.UINT8, g.zp_dims, stored.tobytes())
    elif g.zero_points == FLOATING and stored is not None:
        zero_points = _tensor(cls, "zero_points", g.dtype, g.zp_dims,
                              stored.astype(target.newbyteorder("<")).tobytes())
    return MatMulNBitsInputs(weights, scales, zero_points, g.k, g.n, g.bits, g.block_size)
