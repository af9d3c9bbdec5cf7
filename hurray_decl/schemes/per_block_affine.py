"""Per-block affine, scheme 0x03 (Tier 1): one scale (and zero point) per block along ``axis``."""

from __future__ import annotations

from typing import ClassVar, Literal

import construct as cs

from ..element_types import by_name
from ..registry import SchemeRow
from ..schema import Rule, power_of_two, zero_bytes
from .quantization import SYMMETRIC, U8, U32, SymmetricZeroPoint, descriptor_struct, index_field

TAG = 0x03
LENGTH = 4 + 4 + 4 + 4 + 4 + 1 + 3  # header, axis, block_size, two indices, scale type, reserved

SCALE_TYPES = {0x01: "float16", 0x02: "bfloat16", 0x03: "float32"}
"""scale_type_tag values and the element type each names."""

STRUCT = descriptor_struct(
    TAG,
    SYMMETRIC,
    "axis" / cs.Int32ul * "index of the quantized axis; < rank",
    "block_size" / power_of_two(2, None, ("HQ-PB-04", "HQ-PB-03", None))
    * "elements per block along axis; a power of two >= 2",
    "scale_buffer_index" / index_field() * "buffer holding one scale per block",
    "zero_point_buffer_index" / cs.Int32ul
    * "buffer holding one int32 zero point per block; 0xFFFFFFFF when SYMMETRIC",
    "scale_type_tag" / Rule(cs.Int8ul, lambda v, _: v in SCALE_TYPES, "HQ-PB-08",
                            "0x01 (float16), 0x02 (bfloat16) or 0x03 (float32)",
                            "unknown scale type")
    * "scale element type: 0x01 float16, 0x02 bfloat16, 0x03 float32",
    "reserved" / zero_bytes(3, "HQ-PB-09") * "_reserved: three zero bytes",
)


class PerBlockAffine(SymmetricZeroPoint):
    """x = scale[b] * (q - zero_point[b]) with b the element's block (HQ-PB-15)."""

    layout_rule: ClassVar[str] = "HQ-PB-01"
    symmetric_code: ClassVar[str] = "HQ-PB-10"
    asymmetric_code: ClassVar[str] = "HQ-PB-11"

    scheme_tag: Literal[0x03] = TAG
    axis: U32
    block_size: U32
    scale_buffer_index: U32
    zero_point_buffer_index: U32 | None = None
    scale_type_tag: U8 = 0x03


ROW = SchemeRow(
    tag=TAG,
    name="per_block_affine",
    title="per-block affine",
    tier=1,
    struct=STRUCT,
    model=PerBlockAffine,
    storage_types=tuple(t.name for t in by_name("int8", "uint8", "int4", "uint4", "int2", "uint2")),
    flags_defined={0: "SYMMETRIC"},
    layout_rule="HQ-PB-01",
)
