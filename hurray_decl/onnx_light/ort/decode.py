"""ORT decoding: the checks of a value's descriptor and payload, its values and its plan
(OL-ORT-07, -08, -14, -23 .. -29).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hurray_decl.onnx_light.numerics import LOGICAL_DTYPES
from hurray_decl.onnx_light.ort.descriptor import ort_type, read_ort_type
from hurray_decl.onnx_light.ort.geometry import (
    IMPLICIT,
    PACKED,
    SOURCE_CODES,
    SOURCE_DTYPES,
    SOURCE_NAMES,
    OrtGeometry,
    make_matmul_nbits_plan,
    ort_error,
)
from hurray_decl.onnx_light.packing import decode_bytes, unpack_bits
from hurray_decl.onnx_light.plan import QuantizationPlan
from hurray_decl.onnx_light.profiles import QuantizationFormat
from hurray_decl.onnx_light.wire import pb, same_message

__all__ = [
    "OrtValue",
    "decode_ort",
    "ort_plan",
    "read_ort",
]


@dataclass
class OrtValue:
    """A validated ORT value split into its parts."""

    geometry: OrtGeometry
    weights: np.ndarray        # uint8 [N, G, blob]
    scales: np.ndarray         # source dtype [N, G]
    zero_points: np.ndarray    # float64 [N, G], the effective zero points
    zp_stored: np.ndarray | None  # the stored zero_points tensor, or None when implicit

    @property
    def codes(self) -> np.ndarray:
        """The codes, uint8 ``[N * G, block]`` (unpacked on request)."""
        g = self.geometry
        return unpack_bits(self.weights.reshape(g.n * g.groups, g.blob), g.block_size, g.bits, "value -> B")


def read_ort(resolved: pb.StructTypeProto, fmt: QuantizationFormat, dtype: int, shape: tuple[int, ...],
             raw: bytes, path: str = "value") -> OrtValue:
    """Validate an ORT value's descriptor and payload (OL-ORT-07, -08, -14, -23 .. -28)."""
    if dtype not in SOURCE_DTYPES:
        raise ort_error("OL-ORT-08", f"an ORT logical type is {SOURCE_NAMES}", f"{path} -> logical_type",
                    dtype, SOURCE_CODES)
    if len(shape) != 2 or min(shape) <= 0:
        raise ort_error("OL-ORT-07", "an ORT logical type is a [K, N] matrix with K, N > 0",
                    f"{path} -> logical_type", list(shape), "[K, N]")
    info = read_ort_type(resolved, fmt, f"{path} -> struct_type")
    geometry = OrtGeometry(fmt, shape[0], shape[1], info.block_size, dtype, info.zero_points)
    if not same_message(ort_type(geometry), resolved):
        raise ort_error("OL-ORT-27", "the descriptor is not the canonical ORT schema of its logical matrix",
                    f"{path} -> struct_type")
    if len(raw) != geometry.size:
        raise ort_error("OL-ORT-28", "raw_data differs from the size of B, scales and zero_points",
                    f"{path} -> raw_data", len(raw), geometry.size)
    n, g, bits = geometry.n, geometry.groups, geometry.bits
    target = LOGICAL_DTYPES[dtype]
    data = np.frombuffer(raw, dtype=np.uint8)
    at = geometry.b_bytes
    weights = data[:at].reshape(n, g, geometry.blob)
    scales = data[at:at + n * g * geometry.width].view(target.newbyteorder("<")).astype(target).reshape(n, g)
    at += n * g * geometry.width
    wide = scales.astype(np.float64)
    if not np.isfinite(wide).all():
        j = int(np.flatnonzero(~np.isfinite(wide.ravel()))[0])
        raise ort_error("OL-ORT-14", "a stored scale is not finite", f"{path} -> scales[{j}]",
                    repr(float(wide.ravel()[j])), "finite").located(geometry.b_bytes + j * geometry.width)
    stored = None
    if geometry.zero_points == IMPLICIT:
        zp = np.full((n, g), float(1 << (bits - 1)))
    elif geometry.zero_points == PACKED:
        stored = data[at:].reshape(n, geometry.zp_row)
        used = g * bits
        if used % 8 and (stored[:, -1] >> (used % 8)).any():
            j = int(np.flatnonzero(stored[:, -1] >> (used % 8))[0])
            raise ort_error("OL-ORT-24", "non-zero unused zero-point bits", f"{path} -> zero_points[{j}]",
                        f"0x{int(stored[j, -1]):02X}", f"bits {used % 8}..7 clear").located(
                            at + (j + 1) * geometry.zp_row - 1)
        zp = unpack_bits(stored, g, bits, f"{path} -> zero_points").astype(np.float64)
    else:
        stored = data[at:].view(target.newbyteorder("<")).astype(target).reshape(n, g)
        zp = stored.astype(np.float64)
        if not np.isfinite(zp).all():
            j = int(np.flatnonzero(~np.isfinite(zp.ravel()))[0])
            raise ort_error("OL-ORT-14", "a stored zero point is not finite", f"{path} -> zero_points[{j}]",
                        repr(float(zp.ravel()[j])), "finite").located(at + j * geometry.width)
    tail = geometry.k - (g - 1) * geometry.block_size   # real rows in each column's last group
    if tail < geometry.block_size:
        last = unpack_bits(np.ascontiguousarray(weights[:, -1]), geometry.block_size, bits, f"{path} -> B")
        bad = last[:, tail:] != 0
        if bad.any():
            column, w = (int(i) for i in np.argwhere(bad)[0])
            block = column * g + g - 1
            raise ort_error("OL-ORT-23", "nonzero weight padding after the K real rows of a column's last group",
                        f"{path} -> B[{column}][{g - 1}] -> row {(g - 1) * geometry.block_size + tail + w}",
                        int(last[column, tail + w]), 0).located(block * geometry.blob + (tail + w) * bits // 8)
    return OrtValue(geometry, weights, scales, zp, stored)


def decode_ort(value: OrtValue) -> np.ndarray:
    """value[row, col] = (code - zero_point) x scale, as float64 [K, N] (OL-ORT-29)."""
    geometry = value.geometry
    g = geometry
    data = value.weights.reshape(g.n * g.groups, g.blob)
    values = decode_bytes(data, g.block_size, g.bits, False)
    values -= value.zero_points.reshape(-1, 1)
    values *= value.scales.astype(np.float64).reshape(-1, 1)
    columns = values.reshape(geometry.n, geometry.groups * geometry.block_size)[:, :geometry.k]
    return np.ascontiguousarray(columns.T)


def ort_plan(value: OrtValue) -> QuantizationPlan:
    """The ORT plan a value was encoded with (its rounded parameters)."""
    g = value.geometry
    plan = make_matmul_nbits_plan(g.format, g.k, g.n, g.block_size)
    run = plan._runs[0]
    run._scale = value.scales.astype(np.float64).ravel()
    run._zero_point = value.zero_points.astype(np.float64).ravel()
    return plan
