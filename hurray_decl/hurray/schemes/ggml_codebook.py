"""ggml codebook blocks, private scheme 0xF1 of this project: GGUF's IQ, TQ and NVFP4 types exactly.

Not a Hurray scheme: its meaning is this module, agreed out of band (HQ-EXT-03); a writer emits
it only when asked (HQ-EXT-04; ``convert --private-schemes``). This package reads it wherever it
reads Hurray (:func:`hurray_decl.hurray.quantization.register_project_schemes`).

Along the last axis the elements run in super-blocks of ``super_block`` elements, each split
into sub-blocks of ``sub_block``. Every super-block s has a float16 scale ``d[s]``, every
sub-block j (of super-block s) an int8 scale code ``sc[j]``. The stored codes ``q`` are the
element's codebook values themselves (an IQ grid value times its sign, an IQ4 non-linear value,
a ternary digit, a doubled E2M1 value), not indices into a codebook, so a reader needs no table.
An element's value, in float32::

    x = ((f32(d[s]) * f32(sc[j])) * 2^exponent) * f32(q)

each product rounded to float32 once. For every type of :data:`TYPES` every product is exact
(at most 24 significant bits, far from overflow and underflow), so the order of the factors is
that of gguf-py's ``dequantize`` value for value, signed zeros, infinities and NaNs included.

``ggml_type`` is the GGML type id the codes come from (:data:`TYPES`): it fixes the codebook the
codes are drawn from, and with it ``super_block``, ``sub_block`` and ``exponent``, which are
checked against it; a writer back to GGUF packs the type's blocks from it. Its Kaitai twin is
``schemas/hurray/ggml_codebook.ksy``, its rule beside HQ-EXT-03 CV-GGML-01 (PROJECT_RULES.md), its
vectors ``tests/convert/vectors/ggml_codebook.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Final

import construct as cs

from hurray_decl.hurray.checks import DataChecks, TensorChecks
from hurray_decl.hurray.kernels import Geometry, Plan
from hurray_decl.hurray.schemes.ggml_super_block import check_blocks
from hurray_decl.hurray.schemes.quantization import AXIS, SchemeDescriptor, descriptor_struct, index_field
from hurray_decl.lazy_modules import numpy as np
from hurray_decl.registry import SchemeRow

TAG: Final = 0xF1
LENGTH = 4 + 4 * 7  # header, axis, type, two sizes, exponent, two indices

STRUCT = descriptor_struct(
    TAG,
    0,
    AXIS,
    "ggml_type" / cs.Int32ul * "the GGML type id the codes come from (GGUF's ggml_type)",
    "super_block" / cs.Int32ul * "elements per super-block along axis (one float16 d each)",
    "sub_block" / cs.Int32ul * "elements per sub-block (one int8 scale code each); divides super_block",
    "exponent" / cs.Int32sl * "the power of two every value is multiplied by",
    "d_buffer_index" / index_field() * "buffer holding one float16 scale d per super-block",
    "scale_buffer_index" / index_field() * "buffer holding one int8 scale code per sub-block",
)


@dataclass(frozen=True)
class CodebookType:
    """One GGML type this scheme holds: its id, block sizes, power of two and code storage."""

    name: str
    ggml_type: int
    super_block: int
    sub_block: int
    exponent: int
    storage: str


TYPES: dict[str, CodebookType] = {t.name: t for t in (
    CodebookType("IQ2_XXS", 16, 256, 32, -3, "int8"),  # d * (0.5 + ls) * 0.25 * grid * sign
    CodebookType("IQ2_XS", 17, 256, 16, -3, "int8"),
    CodebookType("IQ3_XXS", 18, 256, 32, -2, "int8"),  # d * (0.5 + ls) * 0.5 * grid * sign
    CodebookType("IQ1_S", 19, 256, 32, -3, "int8"),  # d * (2 ls + 1) * (grid +- 1/8)
    CodebookType("IQ4_NL", 20, 32, 32, 0, "int8"),  # d * kvalues[q]
    CodebookType("IQ3_S", 21, 256, 32, 0, "int8"),  # d * (1 + 2 ls) * grid * sign
    CodebookType("IQ2_S", 22, 256, 16, -3, "int8"),
    CodebookType("IQ4_XS", 23, 256, 32, 0, "int8"),  # d * (ls - 32) * kvalues[q]
    CodebookType("IQ1_M", 29, 256, 16, -3, "int8"),
    CodebookType("TQ1_0", 34, 256, 256, 0, "int4"),  # d * (q - 1), q a ternary digit
    CodebookType("TQ2_0", 35, 256, 256, 0, "int4"),
    CodebookType("NVFP4", 40, 16, 16, 0, "int8"),  # ue4m3 / 2 * doubled E2M1
)}
"""The GGML types this scheme holds, by name (GGML type ids as GGUF writes them)."""
BY_ID = {t.ggml_type: t for t in TYPES.values()}


class GgmlCodebook(SchemeDescriptor):
    """x = ((d[s] * sc[j]) * 2^exponent) * q, in float32 (see the module)."""

    rule: ClassVar[str] = "HQ-EXT-03"

    declaration: ClassVar[cs.Construct] = STRUCT  # the model's fields are derived from it


def check_tensor(descriptor: GgmlCodebook, tensor: TensorChecks) -> None:
    """The GGML type and its sizes, exponent and storage; then the super-blocks and parameter
    sizes as ggml super-blocks check them (without minimums). Every refusal is HQ-EXT-03."""
    where = "descriptor -> quantization"
    kind = BY_ID.get(descriptor.ggml_type)
    if kind is None:
        tensor.fail("HQ-EXT-03", "ggml_type names no GGML type this scheme holds", f"{where} -> ggml_type",
                    actual=descriptor.ggml_type,
                    expected=", ".join(f"{t.ggml_type} ({t.name})" for t in TYPES.values()))
        return  # fail raises
    for field in ("super_block", "sub_block", "exponent"):
        if getattr(descriptor, field) != getattr(kind, field):
            tensor.fail("HQ-EXT-03", f"{kind.name} has a {field} of its own", f"{where} -> {field}",
                        actual=getattr(descriptor, field), expected=getattr(kind, field))
    tensor.storage_type((kind.storage,), "HQ-EXT-03")
    check_blocks(descriptor, tensor, descriptor.super_block, descriptor.sub_block)


def sub_block_scales(descriptor: GgmlCodebook, params: DataChecks) -> np.ndarray:
    """Every sub-block's effective scale ``(f32(d) * f32(sc)) * 2^exponent``, float32, in element order."""
    per = descriptor.super_block // descriptor.sub_block
    d = params.array("d_buffer_index", "float16").astype(np.float32)
    sc = params.array("scale_buffer_index", "int8").astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):  # infinities and NaNs as gguf computes them
        scales = (np.repeat(d, per) * sc).astype(np.float32)
        out: np.ndarray = (scales * np.float32(2.0 ** descriptor.exponent)).astype(np.float32)
    return out


def plan(descriptor: GgmlCodebook, shape: tuple[int, ...], params: DataChecks) -> Plan:
    """Blocks of ``sub_block`` along the last axis, one block row per sub-block; the kernel
    multiplies each sub-block's codes by its effective scale, in float32."""
    geometry = Geometry(shape, descriptor.axis, descriptor.sub_block)
    scales = sub_block_scales(descriptor, params)

    def kernel(values: np.ndarray, box: Any, out: np.ndarray) -> None:
        with np.errstate(over="ignore", invalid="ignore"):
            np.multiply(scales[box.rows][:, None, None], values, out=out)

    return Plan(geometry, kernel=kernel)


ROW = SchemeRow(
    tag=TAG,
    name="ggml_codebook",
    title="ggml codebook blocks (private)",
    tier=None,
    struct=STRUCT,
    model=GgmlCodebook,
    storage_rule="HQ-EXT-03",
    storage_types=("int4", "int8"),
    private=True,
    check_tensor=check_tensor,
    kernel=plan,
)
