"""NF4 (NormalFloat4), scheme 0x04 (Tier 2): 4-bit codes into a fixed table, one absmax per block."""

from __future__ import annotations

from typing import Any, ClassVar, Final

import construct as cs

from hurray_decl.declare.schema import power_of_two
from hurray_decl.hurray.checks import DataChecks, TensorChecks
from hurray_decl.hurray.kernels import (
    Codes,
    Geometry,
    Part,
    Plan,
    Quantized,
    by_block_row,
    cast_up,
    clear_padding,
    code_values,
    in_turn,
    part_values,
    parts,
    per_block,
)
from hurray_decl.hurray.schemes.quantization import AXIS, SchemeDescriptor, descriptor_struct, index_field
from hurray_decl.lazy_modules import numpy as np
from hurray_decl.registry import SchemeRow

TAG: Final = 0x04
LENGTH = 4 + 4 + 4 + 4  # header, axis, block_size, scale index

STRUCT = descriptor_struct(
    TAG,
    0x0000,
    AXIS,
    "block_size" / power_of_two(8, None, ("HQ-NF4-04", "HQ-NF4-03", None))
    * "elements per block along axis; a power of two >= 8",
    "scale_buffer_index" / index_field() * "buffer holding one float32 absmax per block",
)


class NF4(SchemeDescriptor):
    """x = scale[b] * NF4[q]."""

    rule: ClassVar[str] = "HQ-NF4-01"

    declaration: ClassVar[cs.Construct] = STRUCT  # the model's fields are derived from it


def check_tensor(descriptor: NF4, tensor: TensorChecks) -> None:
    """uint4 storage, axis, static axis, block_size against S, then one f32 absmax per block."""
    tensor.storage_type(ROW.storage_types, ROW.storage_rule)
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


def check_data(descriptor: NF4, data: DataChecks) -> None:
    """absmax finite (HQ-NF4-08) and not negative (HQ-NF4-09; -0.0 allowed); padding zero."""
    scales = data.array("scale_buffer_index", "<f4")
    data.finite(scales, "HQ-NF4-08", "scale_buffer_index")
    data.not_negative(scales, "HQ-NF4-09", "scale_buffer_index")
    data.padding_zero(descriptor.axis, descriptor.block_size, "HQ-PB-18")



LEVELS = (
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
)
"""The NF4 levels of codes 0-15, exact float32 values, verbatim (HQ-NF4-11)."""


def plan(descriptor: NF4, shape: tuple[int, ...], params: DataChecks) -> Plan:
    """x = scale[b] * NF4[q] (HQ-NF4-12): the levels are the code table."""
    geometry = Geometry(shape, descriptor.axis, descriptor.block_size)
    scales = by_block_row(params.array("scale_buffer_index", "float32"), geometry)
    return Plan(geometry, table=code_values("uint4", LEVELS)[None], scales=scales)


def quantize(x: np.ndarray, options: Any, threads: int = 1) -> Quantized:
    """Calibration: the block's absmax is its scale (float32, rounded up); each element takes the
    nearest level of x / absmax (in float64), the lower one on a tie; padding elements are code
    0. Part by part (:func:`~hurray_decl.hurray.kernels.parts`)."""
    g = Geometry(x.shape, options.axis, options.block_size)
    model = NF4(axis=options.axis, block_size=options.block_size, scale_buffer_index=1)
    chunks, aligned = parts(g, 4)
    data = Codes(g, options.storage, aligned)
    scales = np.empty((g.before, g.after, g.blocks_per_axis), dtype=np.float32)
    levels = np.asarray(LEVELS)
    middles = (levels[1:] + levels[:-1]) / 2

    def one(part: Part) -> int:
        values = part_values(x, g, part)
        absmax = cast_up(np.abs(values).max(axis=2, initial=0.0), np.float32)
        divisor = absmax[:, :, None, :].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(divisor > 0, values / divisor, 0.0)
        codes = np.searchsorted(middles, ratio, side="left").astype(np.uint8)
        scales[per_block(absmax, part)] = absmax.transpose(0, 2, 1)
        return data.put(part, clear_padding(codes, g, part))

    in_turn(iter(chunks), one, threads if aligned else 1)
    return Quantized(model, data.data, (scales.reshape(-1),))


ROW = SchemeRow(
    tag=TAG,
    name="nf4",
    title="NF4",
    tier=2,
    struct=STRUCT,
    model=NF4,
    storage_rule="HQ-NF4-10",
    storage_types=("uint4",),
    check_tensor=check_tensor,
    kernel=plan,
    quantize=quantize,
    quantize_defaults={"axis": -1, "block_size": 64, "storage": "uint4"},
    check_data=check_data,
)
