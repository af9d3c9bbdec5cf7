"""Per-channel affine, scheme 0x02 (Tier 1): one scale and zero point per index along ``axis``."""

from __future__ import annotations

from typing import ClassVar, Literal

import construct as cs

from ..registry import SchemeRow
from ..schema import equals, zero_bytes
from .per_tensor_affine import ROW as PER_TENSOR
from .quantization import SYMMETRIC, U8, U32, SymmetricZeroPoint, descriptor_struct, index_field

TAG = 0x02
LENGTH = 4 + 4 + 4 + 4 + 1 + 3  # header, axis, scale index, zero-point index, scale type, reserved
FLOAT32 = 0x03

STRUCT = descriptor_struct(
    TAG,
    SYMMETRIC,
    "axis" / cs.Int32ul * "index of the quantized axis; < rank",
    "scale_buffer_index" / index_field() * "buffer holding shape[axis] float32 scales",
    "zero_point_buffer_index" / cs.Int32ul
    * "buffer holding shape[axis] int32 zero points; 0xFFFFFFFF when SYMMETRIC",
    "scale_type_tag" / equals(FLOAT32, "HQ-PC-06", "version 1 scales are float32 (0x03)", cs.Int8ul)
    * "scale element type; 0x03 (float32) in version 1",
    "reserved" / zero_bytes(3, "HQ-PC-07") * "_reserved: three zero bytes",
)


class PerChannelAffine(SymmetricZeroPoint):
    """x = scale[c] * (q - zero_point[c]) with c = i_axis."""

    layout_rule: ClassVar[str] = "HQ-PC-01"
    symmetric_code: ClassVar[str] = "HQ-PC-04"
    asymmetric_code: ClassVar[str] = "HQ-PC-05"

    scheme_tag: Literal[0x02] = TAG
    axis: U32
    scale_buffer_index: U32
    zero_point_buffer_index: U32 | None = None
    scale_type_tag: U8 = FLOAT32


ROW = SchemeRow(
    tag=TAG,
    name="per_channel_affine",
    title="per-channel affine",
    tier=1,
    struct=STRUCT,
    model=PerChannelAffine,
    storage_types=PER_TENSOR.storage_types,
    flags_defined={0: "SYMMETRIC"},
    layout_rule="HQ-PC-01",
)
