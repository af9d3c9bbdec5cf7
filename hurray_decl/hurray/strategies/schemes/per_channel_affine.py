"""Per-channel affine (0x02): one float32 scale (and int32 zero point) per index along ``axis``."""

from __future__ import annotations

from hypothesis import strategies as st

from hurray_decl.hurray.schemes.per_channel_affine import ROW, PerChannelAffine
from hurray_decl.hurray.strategies.mutants import drawn, mutant, reserved_field
from hurray_decl.hurray.strategies.quantization import Quantizing
from hurray_decl.hurray.strategies.schemes import shared
from hurray_decl.hurray.strategies.schemes.shared import quant_field, quantized
from hurray_decl.hurray.strategies.values import AXES, other_than

NAME = ROW.name
"""The registry row this module belongs to (its module name is the row's name)."""
PAGED = True
"""A block-paged tensor can carry it, along axis 1 or 2 (the heads or the head dimension)."""
SCALE = "float32"


@st.composite
def descriptors(draw: st.DrawFn) -> PerChannelAffine:
    return PerChannelAffine(axis=draw(AXES), **draw(shared.affine_indices()))


def shape(draw: st.DrawFn, shape: list[int]) -> list[int]:
    return shape


def for_tensor(draw: st.DrawFn, want: Quantizing) -> tuple[PerChannelAffine, tuple[int, ...], None]:
    axis = draw(st.integers(0, len(want.shape) - 1)) if want.paged is None else draw(st.sampled_from([1, 2]))
    size = 4 * want.shape[axis]
    q, sizes = shared.parameter_buffers(draw, PerChannelAffine, want.first, size, size, axis=axis)
    return q, sizes, None


def scale_type(descriptor: PerChannelAffine) -> str:
    return SCALE


def parameters(draw: st.DrawFn, descriptor: PerChannelAffine, size: int) -> bytes:
    return shared.scale_values(draw, size // 4, SCALE)


mutant("HQ-PC-02")(shared.axis_high(NAME))
mutant("HQ-PC-03")(shared.axis_dynamic(NAME))


@mutant("HQ-PC-06")
def _pc_scale_type() -> st.SearchStrategy[bytes]:
    return quant_field(NAME, "scale_type_tag",
                       drawn(other_than(st.integers(0, 255), PerChannelAffine.model_fields["scale_type_tag"].default)))


@mutant("HQ-PC-07")
def _pc_reserved() -> st.SearchStrategy[bytes]:
    return reserved_field(quantized(NAME), "quantization.reserved")


@mutant("HQ-BUF-07")
def _pc_scale_size() -> st.SearchStrategy[bytes]:
    return shared.parameter_size(NAME, "scale_buffer_index")


@mutant("HQ-BUF-08")
def _pc_zero_size() -> st.SearchStrategy[bytes]:
    return shared.parameter_size(NAME, "zero_point_buffer_index")


shared.scale_mutant(NAME, "HQ-PC-08", shared.nonfinite)
shared.scale_mutant(NAME, "HQ-PC-09", shared.zero)
shared.zero_point_mutant(NAME, "HQ-PC-10")
