"""Per-tensor affine (0x01): one scale and one zero point in the payload itself."""

from __future__ import annotations

from hypothesis import strategies as st

from hurray_decl.hurray.schemes.per_tensor_affine import ROW, PerTensorAffine
from hurray_decl.hurray.strategies.mutants import drawn, field_mutant, mutant
from hurray_decl.hurray.strategies.quantization import Quantizing
from hurray_decl.hurray.strategies.schemes.shared import INT32, quant_field, quantized, storage_range
from hurray_decl.hurray.strategies.values import float32s, outside
from hurray_decl.hurray.tables.element_types import BY_NAME

NAME = ROW.name
"""The registry row this module belongs to (its module name is the row's name)."""
PAGED = True
"""A block-paged tensor can carry it."""

FLOAT32_EXPONENT = 0xFF << 23
"""An all-ones float32 exponent: infinity or NaN."""


def descriptors() -> st.SearchStrategy[PerTensorAffine]:
    return st.builds(PerTensorAffine, scale=float32s(), zero_point=st.integers(*INT32))


def shape(draw: st.DrawFn, shape: list[int]) -> list[int]:
    return shape


def for_tensor(draw: st.DrawFn, want: Quantizing) -> tuple[PerTensorAffine, tuple[int, ...], None]:
    bounds = BY_NAME[want.type_name].zero_point_range
    if bounds is None:
        raise ValueError(f"{want.type_name} holds no integer codes")
    low, high = bounds
    return PerTensorAffine(scale=draw(float32s()), zero_point=draw(st.integers(low, high)),
                           padding=draw(st.binary(max_size=4))), (), None


def scale_type(descriptor: PerTensorAffine) -> str:
    return "float32"


@mutant("HQ-PT-02")
def _pt_zero() -> st.SearchStrategy[bytes]:
    return quant_field(NAME, "scale", drawn(st.sampled_from([0.0, -0.0])))


@mutant("HQ-PT-03")
def _pt_nonfinite() -> st.SearchStrategy[bytes]:
    bits = st.builds(lambda sign, mantissa: (sign << 31 | FLOAT32_EXPONENT | mantissa).to_bytes(4, "little"),
                     st.integers(0, 1), st.integers(0, (1 << 23) - 1))
    return quant_field(NAME, "scale", drawn(bits))


@mutant("HQ-PT-04")
def _pt_zero_point() -> st.SearchStrategy[bytes]:
    base = quantized(NAME).filter(lambda d: storage_range(d) != INT32)
    return field_mutant(base, "quantization.zero_point", lambda draw, d: draw(outside(storage_range(d))))


@mutant("HQ-PT-05")
def _pt_reserved() -> st.SearchStrategy[bytes]:
    from hurray_decl.hurray.strategies.mutants import reserved_field

    return reserved_field(quantized(NAME), "quantization.reserved")
