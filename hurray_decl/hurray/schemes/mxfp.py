"""MXFP (OCP microscaling), scheme 0x05 (Tier 2): one float8_e8m0 shared exponent per block."""

from __future__ import annotations

from functools import cache
from typing import Any, ClassVar, Final

import construct as cs

from hurray_decl.declare.schema import power_of_two
from hurray_decl.errors import RuleViolation
from hurray_decl.hurray.checks import DataChecks, TensorChecks
from hurray_decl.hurray.kernels import (
    Codes,
    Geometry,
    Part,
    Plan,
    Quantized,
    block_order,
    by_block_row,
    code_values,
    in_turn,
    part_values,
    parts,
)
from hurray_decl.hurray.schemes.quantization import AXIS, SchemeDescriptor, descriptor_struct, index_field
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.element_types import by_name
from hurray_decl.lazy_modules import numpy as np
from hurray_decl.registry import SchemeRow

TAG: Final = 0x05
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

    declaration: ClassVar[cs.Construct] = STRUCT  # the model's fields are derived from it


INVALID_SCALE_BYTES = (0x00, 0xFF)
"""float8_e8m0 bytes that make an MXFP descriptor invalid (HD-08)."""


def check_tensor(descriptor: MXFP, tensor: TensorChecks) -> None:
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


def check_data(descriptor: MXFP, data: DataChecks) -> None:
    """No scale byte is 0x00 or 0xFF (HQ-MX-10, HD-08)."""
    data.forbidden_bytes(data.raw("scale_buffer_index"), INVALID_SCALE_BYTES, "HQ-MX-10", "scale_buffer_index")



@cache
def exponent_table(storage_name: str) -> np.ndarray:
    """``table[e, q] = float32(value(q) * 2^(e - 127))`` for every exponent byte (read-only): the
    float32 product the formula computes, so folding the exponent in changes no bit."""
    powers = storage.value_table("float8_e8m0")[:, None]
    with np.errstate(over="ignore", invalid="ignore"):  # large exponents overflow to inf, as the formula does
        return storage.read_only(code_values(storage_name)[None, :] * powers)


def plan(descriptor: MXFP, shape: tuple[int, ...], params: DataChecks) -> Plan:
    """x = 2^(e - 127) * value(q) (HQ-MX-11): the block's exponent byte selects its table row."""
    geometry = Geometry(shape, descriptor.axis, descriptor.block_size)
    exponents = by_block_row(np.frombuffer(params.raw("scale_buffer_index"), dtype=np.uint8), geometry)
    name = params.known_element.name
    if params.known_element.bits == 8:  # two codes per take, then the exact power-of-two scale
        return Plan(geometry, table=code_values(name)[None], scales=storage.value_table("float8_e8m0")[exponents],
                    overflows=True)  # 2^(e - 127) * value(q) beyond float32 is an infinity (HQ-MX-11)
    return Plan(geometry, table=exponent_table(name), keys=exponents)


def quantize(x: np.ndarray, options: Any, threads: int = 1) -> Quantized:
    """Calibration: the block's exponent is that of the smallest power of two s with
    max|x| / s no larger than the element type's largest finite magnitude (127 for int8, 7 for
    int4), so nothing clips; elements round to nearest, ties to even. A block of zeros gets
    s = 1; a block so small that s would fall below 2^-126 uses 2^-126 (the smallest valid
    byte, 0x01). Refused: a block needing s above 2^127 (byte 0xFF or beyond, HQ-MX-10), and a
    block whose dequantized values would not be finite in float32 (HQ-MX-11), the first such
    block of the tensor. Two passes part by part: every block's max|x| (then the refusals),
    then the elements."""
    model = MXFP(axis=options.axis, block_size=options.block_size, scale_buffer_index=1)  # its rules first
    g = Geometry(x.shape, options.axis, options.block_size)
    kind = storage.element(options.storage)
    bounds = kind.int_range
    if bounds:
        largest = float(bounds[1])
    else:
        table = storage.value_table(options.storage)
        largest = float(table[np.isfinite(table)].max())
    chunks, aligned = parts(g, kind.bits)
    absmax = np.empty((g.before, g.blocks_per_axis, g.after))
    for part in chunks:
        absmax[part.outer, part.blocks, part.lanes] = np.abs(part_values(x, g, part)).max(axis=2, initial=0.0)
    with np.errstate(divide="ignore"):
        power = np.where(absmax > 0, np.ceil(np.log2(absmax / largest)), 0.0)
    power += absmax > np.ldexp(largest, power.astype(np.int64))  # log2 rounded down: one step up
    power -= (absmax > 0) & (absmax <= np.ldexp(largest, power.astype(np.int64) - 1))  # rounded up: one down
    _refuse(power + 127 > 254, absmax, "HQ-MX-10", "its scale would need an exponent byte above 0xFE",
            f"max |x| <= {2.0 ** 127 * largest!r}")
    exponents = np.clip(power + 127, 1, 254).astype(np.uint8)
    scales = np.exp2(exponents.astype(np.float64) - 127)
    # the largest stored magnitude of a block is its max|x| stored (rounding is monotonic and odd)
    _refuse(_stored(absmax / scales, options.storage, bounds, largest) * scales > FLOAT32_MAX, absmax,
            "HQ-MX-11", "its dequantized values would exceed float32", f"max |x| <= {FLOAT32_MAX!r}")
    data = Codes(g, options.storage, aligned)

    def one(part: Part) -> int:
        values = part_values(x, g, part) / scales[part.outer, part.blocks, part.lanes][:, :, None, :]
        if bounds:
            values = np.clip(np.rint(values), *bounds)
        return data.put(part, values)

    in_turn(iter(chunks), one, threads if aligned else 1)
    return Quantized(model, data.data, (block_order(exponents),))


def _stored(values: np.ndarray, storage_name: str, bounds: tuple[int, int] | None, largest: float) -> np.ndarray:
    """The element the encoder stores for each of ``values``, as float64: integers rounded to
    nearest even and clipped; floats clamped to the largest magnitude and rounded to the type (HE-30)."""
    stored: np.ndarray = np.clip(np.rint(values), *bounds) if bounds else np.clip(values, -largest, largest).astype(
        storage.NARROW_FLOATS[storage_name]).astype(np.float64)
    return stored


FLOAT32_MAX = (2 - 2.0 ** -23) * 2.0 ** 127  # float(np.finfo(np.float32).max), exactly, without importing NumPy


def _refuse(bad: np.ndarray, absmax: np.ndarray, code: str, why: str, expected: str) -> None:
    """Refuse the first block of ``bad`` (A, nb, B): its values are too large for MXFP."""
    if bad.any():
        a, j, i = (int(v) for v in np.argwhere(bad)[0])
        raise RuleViolation(code, f"an MXFP block cannot hold values this large: {why}",
                            path=f"array -> block (outer {a}, block {j}, inner {i})",
                            actual=float(absmax[a, j, i]), expected=expected)


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
    quantize_defaults={"axis": -1, "block_size": 32, "storage": "float8_e4m3"},
    check_data=check_data,
)
