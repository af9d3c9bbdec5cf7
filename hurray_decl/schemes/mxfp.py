"""MXFP (OCP microscaling), scheme 0x05 (Tier 2): one float8_e8m0 shared exponent per block."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import construct as cs
from ..lazy_modules import numpy as np

from ..element_types import by_name
from .. import storage
from ..numerics import Geometry, Plan, Quantized, block_order, by_block_row, grouped
from ..registry import SchemeRow
from ..schema import power_of_two
from ..model import U32
from .quantization import AXIS, SchemeDescriptor, descriptor_struct, index_field

TAG = 0x05
LENGTH = 4 + 4 + 4 + 4  # header, axis, block_size, scale index

STRUCT = descriptor_struct(
    TAG,
    0x0000,
    AXIS,
    "block_size" / power_of_two(16, 2048, ("HQ-MX-04", "HQ-MX-03", "HQ-MX-05"))
    * "elements per block along axis; a power of two in [16, 2048]",
    "scale_buffer_index" / index_field() * "buffer holding one float8_e8m0 exponent per block",
)


class MXFP(SchemeDescriptor):
    """x = 2^(e - 127) * value(q)."""

    rule: ClassVar[str] = "HQ-MX-01"

    scheme_tag: Literal[0x05] = TAG
    declaration: ClassVar[cs.Construct] = STRUCT
    axis: U32
    block_size: U32
    scale_buffer_index: U32


INVALID_SCALE_BYTES = (0x00, 0xFF)
"""float8_e8m0 bytes that make an MXFP descriptor invalid (HD-08)."""


def check_tensor(descriptor: MXFP, tensor: Any) -> None:
    """Storage type, axis, static axis, S a positive multiple of K, then one byte per block."""
    tensor.storage_type(ROW.storage_types, ROW.storage_rule)
    extent = tensor.axis_extent(descriptor.axis, "HQ-MX-02", "HQ-MX-06")
    if tensor.block_paged is not None:
        tensor.fail("HQ-BUF-13", "MXFP has no defined composition with block-paged storage (HD-17)",
                    "descriptor -> quantization -> scheme_tag", actual="MXFP", expected="0x01-0x03")
    if extent == 0:
        tensor.fail("HQ-MX-07", "an MXFP axis holds at least one block", f"descriptor -> shape -> {descriptor.axis}",
                    actual=0, expected=f"a positive multiple of {descriptor.block_size}")
    if extent % descriptor.block_size:
        tensor.fail("HQ-MX-08", "MXFP has no partial blocks", f"descriptor -> shape -> {descriptor.axis}",
                    actual=extent, expected=f"a multiple of {descriptor.block_size}")
    count = tensor.blocks(descriptor.axis, descriptor.block_size)
    tensor.parameter("scale_buffer_index", descriptor.scale_buffer_index, count, "HQ-BUF-12")


def check_data(descriptor: MXFP, data: Any) -> None:
    """No scale byte is 0x00 or 0xFF (HQ-MX-10, HD-08)."""
    data.forbidden_bytes(data.raw("scale_buffer_index"), INVALID_SCALE_BYTES, "HQ-MX-10", "scale_buffer_index")



def plan(descriptor: MXFP, shape: tuple[int, ...], params: Any) -> Plan:
    """x = 2^(e - 127) * value(q) (HQ-MX-11): one exact power of two per block."""
    geometry = Geometry(shape, descriptor.axis, descriptor.block_size)
    exponents = np.frombuffer(params.raw("scale_buffer_index"), dtype=np.uint8)
    scales = by_block_row(storage.value_table("float8_e8m0")[exponents], geometry)

    def kernel(values: np.ndarray, rows: slice, out: np.ndarray) -> None:
        np.multiply(values, scales[rows], out=out, dtype=np.float32)

    return Plan(geometry, kernel)


def quantize(x: np.ndarray, options: Any) -> Quantized:
    """Calibration: the block's exponent is that of the smallest power of two s with
    max|x| / s no larger than the element type's largest finite magnitude (127 for int8, 7 for
    int4), so nothing clips; elements round to nearest, ties to even."""
    blocks = grouped(x, options.axis, options.block_size)
    kind = storage.element(options.storage)
    bounds = kind.int_range
    if bounds:
        largest = float(bounds[1])
    else:
        table = storage.value_table(options.storage)
        largest = float(table[np.isfinite(table)].max())
    absmax = np.nanmax(np.abs(blocks), axis=2, initial=0.0)
    with np.errstate(divide="ignore"):
        power = np.where(absmax > 0, np.ceil(np.log2(absmax / largest)), 0.0)
    exponents = np.clip(power + 127, 1, 254).astype(np.uint8)
    values = blocks / np.exp2(exponents.astype(np.float64) - 127)[:, :, None, :]
    if bounds:
        values = np.clip(np.rint(values), *bounds)
    model = MXFP(axis=options.axis, block_size=options.block_size, scale_buffer_index=1)
    return Quantized(model, values.reshape(-1), (block_order(exponents),))


ROW = SchemeRow(
    tag=TAG,
    name="mxfp",
    title="MXFP",
    tier=2,
    struct=STRUCT,
    model=MXFP,
    storage_rule="HQ-MX-09",
    storage_types=tuple(t.name for t in by_name(
        "float8_e4m3", "float8_e5m2", "float4_e2m1", "float6_e2m3", "float6_e3m2", "int8", "int4")),
    check_tensor=check_tensor,
    kernel=plan,
    quantize=quantize,
    check_data=check_data,
)
