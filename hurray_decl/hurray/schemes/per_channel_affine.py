"""Per-channel affine, scheme 0x02 (Tier 1): one scale and zero point per index along ``axis``."""

from __future__ import annotations

from typing import Any, ClassVar, Final

import construct as cs

from hurray_decl.declare.schema import equals, zero_bytes
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
    in_turn,
    part_values,
    parts,
)
from hurray_decl.hurray.schemes.per_tensor_affine import ROW as PER_TENSOR
from hurray_decl.hurray.schemes.quantization import AXIS, SYMMETRIC, SymmetricZeroPoint, descriptor_struct, index_field
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.codes import ScaleType
from hurray_decl.lazy_modules import numpy as np
from hurray_decl.registry import SchemeRow

TAG: Final = 0x02
LENGTH = 4 + 4 + 4 + 4 + 1 + 3  # header, axis, scale index, zero-point index, scale type, reserved
FLOAT32 = ScaleType.FLOAT32

STRUCT = descriptor_struct(
    TAG,
    SYMMETRIC,
    AXIS,
    "scale_buffer_index" / index_field() * "buffer holding shape[axis] float32 scales",
    "zero_point_buffer_index" / cs.Int32ul
    * "buffer holding shape[axis] int32 zero points; 0xFFFFFFFF when SYMMETRIC",
    "scale_type_tag" / cs.Default(equals(int(FLOAT32), "HQ-PC-06",
                                         f"version 1 scales are {FLOAT32.title} ({FLOAT32.hex})", cs.Int8ul),
                                  int(FLOAT32))
    * f"scale element type; {FLOAT32.hex} ({FLOAT32.title}) in version 1",
    "reserved" / zero_bytes(3, "HQ-PC-07") * "_reserved: three zero bytes",
)


class PerChannelAffine(SymmetricZeroPoint):
    """x = scale[c] * (q - zero_point[c]) with c = i_axis."""

    rule: ClassVar[str] = "HQ-PC-01"
    symmetric_code: ClassVar[str] = "HQ-PC-04"
    asymmetric_code: ClassVar[str] = "HQ-PC-05"

    declaration: ClassVar[cs.Construct] = STRUCT  # the model's fields are derived from it


def check_tensor(descriptor: PerChannelAffine, tensor: TensorChecks) -> None:
    """Storage type, axis, static axis, block-paged axis, then S-entry parameter buffers."""
    tensor.storage_type(ROW.storage_types, ROW.storage_rule)
    extent = tensor.axis_extent(descriptor.axis, "HQ-PC-02", "HQ-PC-03")
    if tensor.block_paged is not None and descriptor.axis == 0:
        tensor.fail("HT-LAY-65", "per-channel affine never runs along the paged axis 0",
                    "descriptor -> quantization -> axis", actual=0, expected="1 or 2")
    tensor.parameter("scale_buffer_index", descriptor.scale_buffer_index, 4 * extent, "HQ-BUF-07")
    if not descriptor.symmetric:
        tensor.parameter("zero_point_buffer_index", descriptor.zero_point_buffer_index, 4 * extent, "HQ-BUF-08")


def check_data(descriptor: PerChannelAffine, data: DataChecks) -> None:
    """Each scale finite (HQ-PC-08) and non-zero (HQ-PC-09); zero points in range (HQ-PC-10)."""
    scales = data.array("scale_buffer_index", "<f4")
    data.finite(scales, "HQ-PC-08", "scale_buffer_index")
    data.nonzero(scales, "HQ-PC-09", "scale_buffer_index")
    if not descriptor.symmetric:
        data.zero_points(data.array("zero_point_buffer_index", "<i4"), "HQ-PC-10")



def plan(descriptor: PerChannelAffine, shape: tuple[int, ...], params: DataChecks) -> Plan:
    """x = scale[c] * (q - zero_point[c]) with c = i_axis (HQ-PC-12). Along the last axis the
    parameters are one row broadcast over every row of the data (lanes); along another axis each
    block row of one element holds one channel, ``c = r mod S``."""
    full = Geometry(shape, descriptor.axis, 1)
    channels = full.extent
    if full.after == 1:  # the last axis: rows of S contiguous elements, one channel per lane
        geometry, grid = Geometry((full.before, channels), 0, 1), (1, 1, channels)
    else:
        geometry, grid = full, (channels, 1, 1)
    scales = params.array("scale_buffer_index", "float32").reshape(grid)
    zeros = None if descriptor.symmetric else params.array("zero_point_buffer_index", "<i4").reshape(grid)
    return affine_plan(geometry, params.known_element.name, scales, zeros)


def quantize(x: np.ndarray, options: Any, threads: int = 1) -> Quantized:
    """Calibration: one group per index along the axis (:func:`~hurray_decl.hurray.kernels.affine_calibration`),
    from the minimum and maximum of each (NumPy reductions, no temporaries); then the codes part
    by part (:func:`~hurray_decl.hurray.kernels.parts`)."""
    g = Geometry(x.shape, options.axis, 1)
    x3 = x.reshape(g.before, g.extent, g.after)
    scales, zeros = affine_calibration(x3.min(axis=(0, 2), initial=0.0), x3.max(axis=(0, 2), initial=0.0),
                                       options.storage, options.symmetric)
    model = PerChannelAffine(axis=options.axis, scale_buffer_index=1, symmetric=options.symmetric,
                             zero_point_buffer_index=None if options.symmetric else 2)
    chunks, aligned = parts(g, storage.element(options.storage).bits)
    data = Codes(g, options.storage, aligned)

    def one(part: Part) -> int:
        lanes = (None, part.blocks, None, None)
        return data.put(part, affine_codes(part_values(x, g, part), scales[lanes],
                                           None if options.symmetric else zeros[lanes], options.storage))

    in_turn(iter(chunks), one, threads if aligned else 1)
    parameters = (scales.astype("<f4"),) + (() if options.symmetric else (zeros.astype("<i4"),))
    return Quantized(model, data.data, parameters)


ROW = SchemeRow(
    tag=TAG,
    name="per_channel_affine",
    title="per-channel affine",
    tier=1,
    struct=STRUCT,
    model=PerChannelAffine,
    storage_rule="HQ-PC-11",
    storage_types=PER_TENSOR.storage_types,
    flags_defined={0: "SYMMETRIC"},
    check_tensor=check_tensor,
    kernel=plan,
    quantize=quantize,
    quantize_defaults={"axis": 0},
    check_data=check_data,
)
