"""MXFP (OCP microscaling), scheme 0x05 (Tier 2): one float8_e8m0 shared exponent per block."""

from __future__ import annotations

from typing import ClassVar, Literal

import construct as cs

from ..element_types import by_name
from ..registry import SchemeRow
from ..schema import power_of_two
from .quantization import U32, SchemeDescriptor, descriptor_struct, index_field

TAG = 0x05
LENGTH = 4 + 4 + 4 + 4  # header, axis, block_size, scale index

STRUCT = descriptor_struct(
    TAG,
    0x0000,
    "axis" / cs.Int32ul * "index of the quantized axis; < rank",
    "block_size" / power_of_two(16, 2048, ("HQ-MX-04", "HQ-MX-03", "HQ-MX-05"))
    * "elements per block along axis; a power of two in [16, 2048]",
    "scale_buffer_index" / index_field() * "buffer holding one float8_e8m0 exponent per block",
)


class MXFP(SchemeDescriptor):
    """x = 2^(e - 127) * value(q)."""

    layout_rule: ClassVar[str] = "HQ-MX-01"

    scheme_tag: Literal[0x05] = TAG
    axis: U32
    block_size: U32
    scale_buffer_index: U32


ROW = SchemeRow(
    tag=TAG,
    name="mxfp",
    title="MXFP",
    tier=2,
    struct=STRUCT,
    model=MXFP,
    storage_types=tuple(t.name for t in by_name(
        "float8_e4m3", "float8_e5m2", "float4_e2m1", "float6_e2m3", "float6_e3m2", "int8", "int4")),
    layout_rule="HQ-MX-01",
)
