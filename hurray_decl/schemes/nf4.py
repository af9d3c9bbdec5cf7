"""NF4 (NormalFloat4), scheme 0x04 (Tier 2): 4-bit codes into a fixed table, one absmax per block."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

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


def check_tensor(descriptor: NF4, tensor: Any) -> None:
    """uint4 storage, axis, static axis, block_size against S, then one f32 absmax per block."""
    tensor.storage_type(ROW.storage_types, "HQ-NF4-10")
    extent = tensor.axis_extent(descriptor.axis, "HQ-NF4-02", "HQ-NF4-07")
    if tensor.block_paged is not None:
        tensor.fail("HQ-BUF-13", "NF4 has no defined composition with block-paged storage (HD-17)",
                    "descriptor -> quantization -> scheme_tag", actual="NF4", expected="0x01-0x03")
    if extent > 0 and descriptor.block_size > extent:
        tensor.fail("HQ-NF4-05", "block_size is larger than shape[axis]",
                    "descriptor -> quantization -> block_size", actual=descriptor.block_size,
                    expected=f"<= {extent}")
    count = tensor.blocks(descriptor.axis, descriptor.block_size)
    tensor.pad_axis(descriptor.axis, descriptor.block_size)
    tensor.parameter("scale_buffer_index", descriptor.scale_buffer_index,
                     None if count is None else 4 * count, "HQ-BUF-11")


def check_data(descriptor: NF4, data: Any) -> None:
    """absmax finite (HQ-NF4-08) and not negative (HQ-NF4-09; -0.0 allowed); padding zero."""
    scales = data.array("scale_buffer_index", "<f4")
    data.finite(scales, "HQ-NF4-08", "scale_buffer_index")
    data.not_negative(scales, "HQ-NF4-09", "scale_buffer_index")
    data.padding_zero(descriptor.axis, descriptor.block_size, "HQ-PB-18")


ROW = SchemeRow(
    tag=TAG,
    name="nf4",
    title="NF4",
    tier=2,
    struct=STRUCT,
    model=NF4,
    storage_types=("uint4",),
    layout_rule="HQ-NF4-01",
    check_tensor=check_tensor,
    check_data=check_data,
)
