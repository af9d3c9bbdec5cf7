"""ggml super-block, private scheme 0xF0 of this project: GGUF's K-quants, and Q4_1 / Q5_1 exactly.

Not a Hurray scheme: its meaning is this module, agreed out of band (HQ-EXT-03), and a writer
emits it only when asked (HQ-EXT-04; ``convert --private-schemes``). This package reads it wherever
it reads Hurray (:func:`hurray_decl.hurray.quantization.register_project_schemes`); a reader
without the agreement (pyhurray, the engine before registration) refuses the tag as an
unrecognised private one.

Along the last axis the elements run in super-blocks of ``super_block`` elements, each split
into sub-blocks of ``sub_block``. Every super-block s has a float16 scale ``d[s]`` and, with
minimums, a float16 ``dmin[s]``; every sub-block j (of super-block s) an int8 scale code
``sc[j]`` and, with minimums, a uint8 code ``mn[j]``. An element's value, in float32 as gguf
computes it::

    x = (f32(d[s]) * f32(sc[j])) * f32(q)  -  f32(dmin[s]) * f32(mn[j])

(the difference only with minimums; each product and the difference rounded to float32 once,
NaNs included: a difference, not the sum with a negated minimum, whose NaN would differ in sign).
With flags bit 0 (ADDED_MINIMUM) the minimum is added instead, ``... * f32(q) + f32(dmin[s]) *
f32(mn[j])``: Q4_1 and Q5_1 (``d * q + m``) are super-blocks of one 32-element sub-block with
``sc = 1``, ``dmin = m`` and ``mn = 1``, whatever their ``m`` (per-block affine holds only the ``m``
that are ``-z * d``). Q2_K (uint2
codes, sub-blocks of 16, minimums), Q3_K (int4, 16), Q4_K (uint4, 32, minimums), Q5_K (uint8,
32, minimums) and Q6_K (int8, 16) are this formula with their own codes and scale ranges, so
each converts exactly, float16 bits kept as they are, and back byte for byte.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import construct as cs

from hurray_decl.hurray.checks import DataChecks, TensorChecks
from hurray_decl.hurray.kernels import Geometry, Plan
from hurray_decl.hurray.schemes.quantization import AXIS, SchemeDescriptor, descriptor_struct, index_field
from hurray_decl.lazy_modules import numpy as np
from hurray_decl.registry import SchemeRow

TAG: Final = 0xF0
LENGTH = 4 + 4 * 7  # header, axis, two sizes, four indices
ADDED_MINIMUM: Final = 0x0001
"""flags bit 0: the minimum is added (Q4_1, Q5_1), not subtracted (the K-quants)."""

STRUCT = descriptor_struct(
    TAG,
    ADDED_MINIMUM,
    AXIS,
    "super_block" / cs.Int32ul * "elements per super-block along axis (256 for the K-quants)",
    "sub_block" / cs.Int32ul * "elements per sub-block; divides super_block",
    "d_buffer_index" / index_field() * "buffer holding one float16 scale d per super-block",
    "scale_buffer_index" / index_field() * "buffer holding one int8 scale code per sub-block",
    "dmin_buffer_index" / cs.Int32ul * "buffer holding one float16 dmin per super-block; 0xFFFFFFFF: no minimums",
    "min_buffer_index" / cs.Int32ul * "buffer holding one uint8 minimum code per sub-block; 0xFFFFFFFF: none",
)


class GgmlSuperBlock(SchemeDescriptor):
    """x = (d[s] * sc[j]) * q - dmin[s] * mn[j], in float32 (see the module)."""

    rule: ClassVar[str] = "HQ-EXT-03"
    optional_indices: ClassVar[tuple[str, ...]] = ("dmin_buffer_index", "min_buffer_index")

    declaration: ClassVar[cs.Construct] = STRUCT  # the model's fields are derived from it

    @property
    def minimums(self) -> bool:
        return self.dmin_buffer_index is not None

    @property
    def added(self) -> bool:
        """Flags bit 0: the minimum is added, not subtracted."""
        return bool(self.flags & ADDED_MINIMUM)


def check_tensor(descriptor: GgmlSuperBlock, tensor: TensorChecks) -> None:
    """Storage type; the super-blocks (:func:`check_blocks`); both minimum buffers or neither,
    and their sizes. Every refusal is HQ-EXT-03: the payload breaks the format agreed for this tag."""
    tensor.storage_type(ROW.storage_types, ROW.storage_rule)
    check_blocks(descriptor, tensor, descriptor.super_block, descriptor.sub_block)
    where = "descriptor -> quantization"
    if (descriptor.min_buffer_index is None) != (descriptor.dmin_buffer_index is None):
        tensor.fail("HQ-EXT-03", "dmin and the minimum codes come together", f"{where} -> min_buffer_index",
                    actual=descriptor.min_buffer_index, expected="both buffers or neither")
    if descriptor.added and not descriptor.minimums:
        tensor.fail("HQ-EXT-03", "ADDED_MINIMUM says how the minimum is applied: there is none",
                    f"{where} -> flags", actual=descriptor.flags, expected="bit 0 clear")
    count = tensor.element_count()
    if descriptor.dmin_buffer_index is not None and descriptor.min_buffer_index is not None:
        k, s = descriptor.super_block, descriptor.sub_block
        tensor.parameter("dmin_buffer_index", descriptor.dmin_buffer_index, None if count is None else 2 * (count // k),
                         "HQ-EXT-03")
        tensor.parameter("min_buffer_index", descriptor.min_buffer_index, None if count is None else count // s,
                         "HQ-EXT-03")


def check_blocks(descriptor: Any, tensor: TensorChecks, k: int, s: int) -> None:
    """The checks a ggml block scheme (this one, :mod:`.ggml_codebook`) shares: the last axis, a
    whole number of super-blocks of ``k`` elements, each of whole sub-blocks of ``s``; then the
    sizes of the float16 ``d`` (one per super-block) and the int8 scale codes (one per
    sub-block). Every refusal is HQ-EXT-03."""
    rank = len(tensor.shape)
    extent = tensor.axis_extent(descriptor.axis, "HQ-EXT-03", "HQ-EXT-03")
    where = "descriptor -> quantization"
    if descriptor.axis != rank - 1:
        tensor.fail("HQ-EXT-03", "ggml super-blocks run along the last axis", f"{where} -> axis",
                    actual=descriptor.axis, expected=rank - 1)
    if s < 1 or k < s or k % s:
        tensor.fail("HQ-EXT-03", "a super-block is a whole number of sub-blocks", f"{where} -> sub_block",
                    actual=(k, s), expected="sub_block >= 1 dividing super_block")
    if extent % k:
        tensor.fail("HQ-EXT-03", "the last axis holds whole super-blocks", f"descriptor -> shape -> {descriptor.axis}",
                    actual=extent, expected=f"a multiple of {k}")
    count = tensor.element_count()
    tensor.parameter("d_buffer_index", descriptor.d_buffer_index, None if count is None else 2 * (count // k),
                     "HQ-EXT-03")
    tensor.parameter("scale_buffer_index", descriptor.scale_buffer_index, None if count is None else count // s,
                     "HQ-EXT-03")


def sub_block_parameters(descriptor: GgmlSuperBlock, params: DataChecks) -> tuple[np.ndarray, np.ndarray | None]:
    """Every sub-block's effective scale ``f32(d) * f32(sc)`` and minimum ``f32(dmin) * f32(mn)``
    (None without minimums), float32, in element order."""
    per = descriptor.super_block // descriptor.sub_block
    d = params.array("d_buffer_index", "float16").astype(np.float32)
    sc = params.array("scale_buffer_index", "int8").astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):  # gguf's float32 products, infinities and NaNs included
        scales = (np.repeat(d, per) * sc).astype(np.float32)
        if not descriptor.minimums:
            return scales, None
        dmin = params.array("dmin_buffer_index", "float16").astype(np.float32)
        mn = params.array("min_buffer_index", "uint8").astype(np.float32)
        return scales, (np.repeat(dmin, per) * mn).astype(np.float32)


def plan(descriptor: GgmlSuperBlock, shape: tuple[int, ...], params: DataChecks) -> Plan:
    """Blocks of ``sub_block`` along the last axis, one block row per sub-block; the kernel
    multiplies each sub-block's codes by its scale, then subtracts its minimum, in float32."""
    geometry = Geometry(shape, descriptor.axis, descriptor.sub_block)
    scales, minimums = sub_block_parameters(descriptor, params)
    apply = np.add if descriptor.added else np.subtract

    def kernel(values: np.ndarray, box: Any, out: np.ndarray) -> None:
        with np.errstate(over="ignore", invalid="ignore"):
            np.multiply(values, scales[box.rows][:, None, None], out=out)
            if minimums is not None:
                apply(out, minimums[box.rows][:, None, None], out=out)

    return Plan(geometry, kernel=kernel)


ROW = SchemeRow(
    tag=TAG,
    name="ggml_super_block",
    title="ggml super-block (private)",
    tier=None,
    struct=STRUCT,
    model=GgmlSuperBlock,
    storage_rule="HQ-EXT-03",
    storage_types=("uint2", "int4", "uint4", "uint8", "int8"),
    private=True,
    flags_defined={0: "ADDED_MINIMUM"},
    check_tensor=check_tensor,
    kernel=plan,
)
