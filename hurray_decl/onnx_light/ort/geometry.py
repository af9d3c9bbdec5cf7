"""ORT geometry: the three profiles, block sizes, K/N/G and the payload sizes, and the plan factory
(OL-ORT-01 .. -08).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hurray_decl.errors import OnnxLightError
from hurray_decl.onnx_light.numerics import LOGICAL_DTYPES, DataType, spelled
from hurray_decl.onnx_light.plan import (
    U32_MAX,
    QuantizationBlockLayout,
    QuantizationBlockParameters,
    QuantizationPlan,
    QuantizationRun,
)
from hurray_decl.onnx_light.profiles import QuantizationFormat, require_format

__all__ = [
    "FIELDS",
    "FLOATING",
    "IMPLICIT",
    "ORT_FORMATS",
    "PACKED",
    "SOURCE_CODES",
    "SOURCE_DTYPES",
    "SOURCE_DTYPE_NAMES",
    "SOURCE_NAMES",
    "OrtGeometry",
    "check_block_size",
    "group_rows",
    "is_int",
    "make_matmul_nbits_plan",
    "ort_bits",
    "ort_error",
    "ort_header",
    "real_rows",
]


ORT_FORMATS: dict[QuantizationFormat, int] = {
    QuantizationFormat.ORT_MATMULNBITS_INT2: 2,
    QuantizationFormat.ORT_MATMULNBITS_INT4: 4,
    QuantizationFormat.ORT_MATMULNBITS_INT8: 8,
}
"""The three ORT profiles and their code widths."""


SOURCE_DTYPES = (DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16)
"""Source and logical dtypes of an ORT value; DOUBLE is not one of them (OL-ORT-08)."""
SOURCE_NAMES = spelled([code.name for code in SOURCE_DTYPES])
"""``FLOAT, FLOAT16 or BFLOAT16``, as the OL-ORT-08 messages write them."""
SOURCE_CODES = spelled([str(int(code)) for code in SOURCE_DTYPES])
SOURCE_DTYPE_NAMES = spelled([code.dtype.name for code in SOURCE_DTYPES])


FIELDS = ("parameters", "B", "scales", "zero_points")
IMPLICIT, PACKED, FLOATING = "implicit", "packed", "float"


def ort_error(code: str, message: str, path: str, actual: Any = None, expected: Any = None) -> OnnxLightError:
    return OnnxLightError(code, message, path=path, actual=actual, expected=expected)


def is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_block_size(block_size: Any, path: str = "block_size") -> int:
    """A power of two in [16, 2^32 - 1] (OL-ORT-02 .. -04)."""
    if not is_int(block_size) or int(block_size) < 16:
        raise ort_error("OL-ORT-03", "block_size must be at least 16", path, block_size, ">= 16")
    size = int(block_size)
    if size > U32_MAX:
        raise ort_error("OL-ORT-04", "block_size is above 2^32 - 1", path, size, "<= 4294967295")
    if size & (size - 1):
        raise ort_error("OL-ORT-02", "block_size is not a power of two", path, size, "16, 32, 64, 128, ...")
    return size


def ort_bits(fmt: QuantizationFormat, path: str = "format") -> int:
    bits = ORT_FORMATS.get(fmt)
    if bits is None:
        raise ort_error("OL-ORT-05", "this is not an ORT MatMulNBits profile", path, fmt.wire_name,
                    "ort_matmulnbits_int2, _int4 or _int8")
    return bits


def ort_header(block_size: int, bits: int) -> tuple[int, ...]:
    """The only run header an ORT plan may have (OL-ORT-05)."""
    return (block_size, 0, bits, 0, 1, 0, 1, 0, 10)


@dataclass(frozen=True)
class OrtGeometry:
    """What an ORT descriptor fixes: profile, K, N, block size, dtype and zero-point storage."""

    format: QuantizationFormat
    k: int
    n: int
    block_size: int
    dtype: int
    zero_points: str  # IMPLICIT, PACKED or FLOATING

    @property
    def bits(self) -> int:
        return ORT_FORMATS[self.format]

    @property
    def groups(self) -> int:
        return -(-self.k // self.block_size)

    @property
    def blob(self) -> int:
        return self.block_size * self.bits // 8

    @property
    def b_bytes(self) -> int:
        return self.n * self.groups * self.blob

    @property
    def width(self) -> int:
        return LOGICAL_DTYPES[self.dtype].itemsize

    @property
    def zp_row(self) -> int:
        """Bytes of one column's packed zero points."""
        return -(-self.groups * self.bits // 8)

    @property
    def zp_dims(self) -> list[int]:
        if self.zero_points == PACKED:
            return [self.n, self.zp_row]
        return [self.n, self.groups]

    @property
    def zp_bytes(self) -> int:
        if self.zero_points == IMPLICIT:
            return 0
        if self.zero_points == PACKED:
            return self.n * self.zp_row
        return self.n * self.groups * self.width

    @property
    def size(self) -> int:
        """The payload length: B, then scales, then any zero points (OL-ORT-20)."""
        return self.b_bytes + self.n * self.groups * self.width + self.zp_bytes


def make_matmul_nbits_plan(format: QuantizationFormat, k: int, n: int, block_size: int = 128) -> QuantizationPlan:
    """The plan of a ``[k, n]`` MatMulNBits weight (OL-ORT-01 .. -06)."""
    fmt = require_format(format)
    bits = ort_bits(fmt)
    for name, value in (("k", k), ("n", n)):
        if not is_int(value) or int(value) <= 0:
            raise ort_error("OL-ORT-01", f"{name} must be a positive integer", name, value, "> 0")
    size = check_block_size(block_size)
    k, n = int(k), int(n)
    groups = -(-k // size)
    layout = QuantizationBlockLayout.from_header(ort_header(size, bits))
    run = QuantizationRun.uniform(layout, QuantizationBlockParameters(1.0, float(1 << (bits - 1)), 0.0, []),
                                  n * groups)
    plan = QuantizationPlan(fmt, matrix_shape=[k, n])
    plan._runs = [run]   # a fresh run: no defensive copy needed
    return plan


def group_rows(values: np.ndarray, geometry: OrtGeometry) -> np.ndarray:
    """``[K, N]`` values as ``[N * G, block]`` rows, padded with zeros past K."""
    g, size = geometry.groups, geometry.block_size
    columns = np.zeros((geometry.n, g * size), dtype=np.float64)
    columns[:, :geometry.k] = values.T
    return columns.reshape(geometry.n * g, size)


def real_rows(geometry: OrtGeometry) -> np.ndarray:
    """``[N * G, block]`` mask of the rows below K."""
    rows = np.arange(geometry.groups * geometry.block_size).reshape(geometry.groups, geometry.block_size)
    return np.broadcast_to(rows < geometry.k, (geometry.n, geometry.groups, geometry.block_size)).reshape(
        geometry.n * geometry.groups, geometry.block_size)
