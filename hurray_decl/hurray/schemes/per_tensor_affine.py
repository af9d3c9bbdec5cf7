"""Per-tensor affine, scheme 0x01 (Tier 1): one inline scale and zero point for the tensor."""

from __future__ import annotations

from math import prod
from typing import Any, ClassVar, Final

import construct as cs
from pydantic import computed_field, field_validator, model_validator

from hurray_decl.declare.schema import zero_bytes
from hurray_decl.errors import RuleViolation
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
    code_values,
    in_turn,
    part_values,
    parts,
)
from hurray_decl.hurray.schemes.quantization import SchemeDescriptor, check_float32, descriptor_struct, f32_field
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.element_types import by_name
from hurray_decl.lazy_modules import numpy as np
from hurray_decl.registry import SchemeRow

TAG: Final = 0x01
LENGTH = 4 + 4 + 4 + 4  # header, scale, zero_point, reserved

STRUCT = descriptor_struct(
    TAG,
    0x0000,
    "scale" / f32_field("HQ-PT-03", "HQ-PT-02") * "float32 scale; finite and non-zero",
    "zero_point" / cs.Default(cs.Int32sl, 0) * "int32 zero point, subtracted as stored; 0 when symmetric",
    "reserved" / zero_bytes(4, "HQ-PT-05") * "_reserved: four zero bytes",
    order=("HQ-PT-05", "HQ-PT-03", "HQ-PT-02"),  # reserved bytes, then the scale (Appendix A)
)


class PerTensorAffine(SchemeDescriptor):
    """x = scale * (q - zero_point). ``symmetric=True`` asks for zero_point 0 (HQ-PT-06)."""

    rule: ClassVar[str] = "HQ-PT-01"

    declaration: ClassVar[cs.Construct] = STRUCT  # the model's fields are derived from it

    @computed_field  # type: ignore[prop-decorator]
    @property
    def symmetric(self) -> bool:
        """No flag records symmetry here: a zero point of 0 is what makes it symmetric."""
        return bool(self.zero_point == 0)

    @model_validator(mode="before")
    @classmethod
    def _symmetric_means_zero(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "symmetric" not in data:
            return data
        data = dict(data)
        if data.pop("symmetric"):
            if data.get("zero_point", 0) != 0:
                raise RuleViolation(
                    "HQ-PT-06", "a symmetric per-tensor descriptor is written with zero_point 0",
                    path="descriptor -> zero_point", actual=data["zero_point"], expected=0,
                )
            data["zero_point"] = 0
        return data

    @field_validator("scale")
    @classmethod
    def _float32(cls, value: float) -> float:
        return check_float32(value, "HQ-PT-01", "scale")


def check_tensor(descriptor: PerTensorAffine, tensor: TensorChecks) -> None:
    """Storage type (HQ-PT-07) and zero_point within its range (HQ-PT-04); no buffers (B = L)."""
    tensor.storage_type(ROW.storage_types, ROW.storage_rule)
    bounds = tensor.known_element.zero_point_range
    if bounds is None:  # storage_type refused it: every storage type of the scheme is an integer type
        return
    low, high = bounds
    if not low <= descriptor.zero_point <= high:
        tensor.fail("HQ-PT-04", "zero_point is outside the storage type's range",
                    "descriptor -> quantization -> zero_point", actual=descriptor.zero_point,
                    expected=f"[{low}, {high}]")


STORAGE_TYPES = tuple(t.name for t in by_name(
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "int4", "uint4", "int2", "uint2"))


def plan(descriptor: PerTensorAffine, shape: tuple[int, ...], params: DataChecks) -> Plan:
    """One scale and zero point for every element (HQ-PT-08): up to 8 bits, one table of
    ``float32(float32(q - z) * s)``; wider codes compute the difference exactly, then scale."""
    scale, zero = np.float32(descriptor.scale), descriptor.zero_point
    geometry = Geometry((prod(shape),), 0, 1)
    if params.known_element.bits < 8:
        values = code_values(params.known_element.name) - np.float32(zero)
        return Plan(geometry, table=(values * scale)[None])
    zeros = np.full((1, 1, 1), zero) if zero else None
    return affine_plan(geometry, params.known_element.name, np.full((1, 1, 1), scale, dtype=np.float32), zeros)


def quantize(x: np.ndarray, options: Any, threads: int = 1) -> Quantized:
    """Calibration: the whole tensor is one group (:func:`~hurray_decl.hurray.kernels.affine_calibration`),
    from its minimum and maximum; then the codes part by part (:func:`~hurray_decl.hurray.kernels.parts`)."""
    scales, zeros = affine_calibration(np.min(x, initial=0.0), np.max(x, initial=0.0),
                                       options.storage, options.symmetric)
    model = PerTensorAffine(scale=float(scales), zero_point=int(zeros))
    g = Geometry((x.size,), 0, 1)
    chunks, aligned = parts(g, storage.element(options.storage).bits)
    data = Codes(g, options.storage, aligned)
    flat = x.reshape(-1)

    def one(part: Part) -> int:
        return data.put(part, affine_codes(part_values(flat, g, part), scales,
                                           None if options.symmetric else zeros, options.storage))

    in_turn(iter(chunks), one, threads if aligned else 1)
    return Quantized(model, data.data, ())


ROW = SchemeRow(
    tag=TAG,
    name="per_tensor_affine",
    title="per-tensor affine",
    tier=1,
    struct=STRUCT,
    model=PerTensorAffine,
    storage_rule="HQ-PT-07",
    storage_types=STORAGE_TYPES,
    check_tensor=check_tensor,
    kernel=plan,
    quantize=quantize,
)
