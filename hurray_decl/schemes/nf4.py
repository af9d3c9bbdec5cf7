"""NF4 (NormalFloat4), scheme 0x04 (Tier 2): 4-bit codes into a fixed table, one absmax per block."""

from __future__ import annotations

from typing import ClassVar, Literal

import construct as cs

from ..registry import SchemeRow
from ..schema import power_of_two
from .quantization import U32, SchemeDescriptor, descriptor_struct, index_field

TAG = 0x04
LENGTH = 4 + 4 + 4 + 4  # header, axis, block_size, scale index

STRUCT = descriptor_struct(
    TAG,
    0x0000,
    "axis" / cs.Int32ul * "index of the quantized axis; < rank",
    "block_size" / power_of_two(8, None, ("HQ-NF4-04", "HQ-NF4-03", None))
    * "elements per block along axis; a power of two >= 8",
    "scale_buffer_index" / index_field() * "buffer holding one float32 absmax per block",
)


class NF4(SchemeDescriptor):
    """x = scale[b] * NF4[q]."""

    layout_rule: ClassVar[str] = "HQ-NF4-01"

    scheme_tag: Literal[0x04] = TAG
    axis: U32
    block_size: U32
    scale_buffer_index: U32


ROW = SchemeRow(
    tag=TAG,
    name="nf4",
    title="NF4",
    tier=2,
    struct=STRUCT,
    model=NF4,
    storage_types=("uint4",),
    layout_rule="HQ-NF4-01",
)
