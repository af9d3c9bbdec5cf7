"""Per-block affine, scheme 0x03 (Tier 1): one scale (and zero point) per block along ``axis``."""

from __future__ import annotations

from typing import Any, ClassVar, Final

import construct as cs

from hurray_decl.declare.schema import Rule, power_of_two, zero_bytes
from hurray_decl.hurray.checks import DataChecks, TensorChecks
from hurray_decl.hurray.kernels import (
    Codes,
    Geometry,
    Part,
    Plan,
    Quantized,
    affine_calibration,
    affine_codes,
    affine_plan,
    block_extreme,
    by_block_row,
    clear_padding,
    in_turn,
    integer_range,
    part_values,
    parts,
    per_block,
    refuse_unsigned_negatives,
)
from hurray_decl.hurray.schemes.quantization import AXIS, SYMMETRIC, SymmetricZeroPoint, descriptor_struct, index_field
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.codes import ScaleType, alternatives, legend
from hurray_decl.hurray.tables.element_types import by_name
from hurray_decl.lazy_modules import numpy as np
from hurray_decl.registry import SchemeRow

TAG: Final = 0x03
LENGTH = 4 + 4 + 4 + 4 + 4 + 1 + 3  # header, axis, block_size, two indices, scale type, reserved

STRUCT = descriptor_struct(
    TAG,
    SYMMETRIC,
    AXIS,
    "block_size" / power_of_two(2, None, ("HQ-PB-04", "HQ-PB-03", None))
    * "elements per block along axis; a power of two >= 2",
    "scale_buffer_index" / index_field() * "buffer holding one scale per block",
    "zero_point_buffer_index" / cs.Int32ul
    * "buffer holding one int32 zero point per block; 0xFFFFFFFF when SYMMETRIC",
    "scale_type_tag" / cs.Default(Rule(cs.Int8ul, lambda v, _: ScaleType.has(v), "HQ-PB-08",
                                       alternatives(ScaleType, form="{hex} ({title})"), "unknown scale type"),
                                  int(ScaleType.FLOAT32))
    * f"scale element type: {legend(ScaleType)}",
    "reserved" / zero_bytes(3, "HQ-PB-09") * "_reserved: three zero bytes",
    order=("HQ-PB-04", "HQ-PB-03", "HQ-PB-08", "HQ-PB-09", "HQ-BUF-01"),  # Appendix A: index NONE32 last
)


class PerBlockAffine(SymmetricZeroPoint):
    """x = scale[b] * (q - zero_point[b]) with b the element's block (HQ-PB-15)."""

    rule: ClassVar[str] = "HQ-PB-01"
    symmetric_code: ClassVar[str] = "HQ-PB-10"
    asymmetric_code: ClassVar[str] = "HQ-PB-11"

    declaration: ClassVar[cs.Construct] = STRUCT  # the model's fields are derived from it




def check_tensor(descriptor: PerBlockAffine, tensor: TensorChecks) -> None:
    """Storage type, axis, static axis, block_size against S (or the page, HD-17), then the
    per-block (or per-page-slot) parameter buffers."""
    tensor.storage_type(ROW.storage_types, ROW.storage_rule)
    extent = tensor.axis_extent(descriptor.axis, "HQ-PB-02", "HQ-PB-07")
    paged = tensor.block_paged
    if paged is not None:
        if descriptor.axis != 0:
            tensor.fail("HT-LAY-63", "per-block affine on a block-paged tensor runs along axis 0",
                        "descriptor -> quantization -> axis", actual=descriptor.axis, expected=0)
        if descriptor.block_size != paged.page_size:
            tensor.fail("HT-LAY-64", "per-block affine on a block-paged tensor has block_size = page_size",
                        "descriptor -> quantization -> block_size", actual=descriptor.block_size,
                        expected=paged.page_size)
        count: int | None = paged.num_pages * paged.page_size
        scale_code = zero_code = "HQ-BUF-13"
    else:
        if extent > 0 and descriptor.block_size > extent:
            tensor.fail("HQ-PB-05", "block_size is larger than shape[axis]",
                        "descriptor -> quantization -> block_size", actual=descriptor.block_size,
                        expected=f"<= {extent}")
        count = tensor.blocks(descriptor.axis, descriptor.block_size)
        tensor.pad_axis(descriptor.axis, descriptor.block_size)
        scale_code, zero_code = "HQ-BUF-09", "HQ-BUF-10"
    width = storage.element(ScaleType(descriptor.scale_type_tag).title).bits // 8
    tensor.parameter("scale_buffer_index", descriptor.scale_buffer_index,
                     None if count is None else count * width, scale_code)
    if not descriptor.symmetric:
        tensor.parameter("zero_point_buffer_index", descriptor.zero_point_buffer_index,
                         None if count is None else 4 * count, zero_code)


def check_data(descriptor: PerBlockAffine, data: DataChecks) -> None:
    """Scales finite (HQ-PB-12) and non-zero (HQ-PB-13); zero points in the storage range
    (HQ-PB-22: the subtracted z must be a storage value); padding codes zero (HQ-PB-18)."""
    scales = data.array("scale_buffer_index", ScaleType(descriptor.scale_type_tag).title)
    data.finite(scales, "HQ-PB-12", "scale_buffer_index")
    data.nonzero(scales, "HQ-PB-13", "scale_buffer_index")
    if not descriptor.symmetric:
        data.zero_points(data.array("zero_point_buffer_index", "<i4"), "HQ-PB-22")
    data.padding_zero(descriptor.axis, descriptor.block_size, "HQ-PB-18")



def plan(descriptor: PerBlockAffine, shape: tuple[int, ...], params: DataChecks) -> Plan:
    """One scale (and zero point, folded into the code table) per block; float16/bfloat16 scales
    widen exactly (HQ-PB-21), chunk by chunk in the kernel; ``float32(q - z) * s`` (HQ-PB-15)."""
    geometry = Geometry(shape, descriptor.axis, descriptor.block_size)
    scale_type = ScaleType(descriptor.scale_type_tag).title
    scales = by_block_row(params.array("scale_buffer_index", scale_type), geometry)
    zeros = None if descriptor.symmetric else by_block_row(params.array("zero_point_buffer_index", "<i4"), geometry)
    return affine_plan(geometry, params.known_element.name, scales, zeros)


def quantize(x: np.ndarray, options: Any, threads: int = 1) -> Quantized:
    """Calibration: one group per block (:func:`~hurray_decl.hurray.kernels.affine_calibration`), scales
    rounded up into the scale type; padding elements are code 0 (HQ-PB-18). Part by part
    (:func:`~hurray_decl.hurray.kernels.parts`): each part's blocks calibrated, then encoded."""
    g = Geometry(x.shape, options.axis, options.block_size)
    if options.symmetric and integer_range(options.storage)[0] == 0:  # with the tensor's minimum (HQ-ZP-02)
        refuse_unsigned_negatives(np.min(x, initial=0.0), options.storage, options.symmetric)
    model = PerBlockAffine(axis=options.axis, block_size=options.block_size, scale_buffer_index=1,
                           symmetric=options.symmetric, zero_point_buffer_index=None if options.symmetric else 2,
                           scale_type_tag=int(ScaleType.named(options.scale_type)))
    chunks, aligned = parts(g, storage.element(options.storage).bits)
    data = Codes(g, options.storage, aligned)
    scales = np.empty((g.before, g.after, g.blocks_per_axis), dtype=storage.dtype(options.scale_type))
    zeros = None if options.symmetric else np.empty(scales.shape, dtype="<i4")

    def one(part: Part) -> int:
        values = part_values(x, g, part)
        if options.symmetric:  # max(-min, max) over the block and 0 is its largest magnitude; unsigned: no
            high = block_extreme(np.abs(values), largest=True)  # negatives (refused above), so min 0
            low = np.zeros_like(high)
        else:
            low, high = block_extreme(values, largest=False), block_extreme(values, largest=True)
        s, z = affine_calibration(low, high, options.storage, options.symmetric, scales.dtype)
        codes = affine_codes(values, s[:, :, None, :], None if zeros is None else z[:, :, None, :], options.storage)
        scales[per_block(s, part)] = s.transpose(0, 2, 1)
        if zeros is not None:
            zeros[per_block(z, part)] = z.transpose(0, 2, 1)
        return data.put(part, clear_padding(codes, g, part))

    in_turn(iter(chunks), one, threads if aligned else 1)
    return Quantized(model, data.data, (scales.reshape(-1),) + (() if zeros is None else (zeros.reshape(-1),)))


ROW = SchemeRow(
    tag=TAG,
    name="per_block_affine",
    title="per-block affine",
    tier=1,
    struct=STRUCT,
    model=PerBlockAffine,
    storage_rule="HQ-PB-14",
    storage_types=tuple(t.name for t in by_name("int8", "uint8", "int4", "uint4", "int2", "uint2")),
    flags_defined={0: "SYMMETRIC"},
    check_tensor=check_tensor,
    kernel=plan,
    quantize=quantize,
    quantize_defaults={"axis": -1, "block_size": 32},
    check_data=check_data,
)
