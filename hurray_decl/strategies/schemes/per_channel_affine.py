"""Per-channel affine (0x02): one float32 scale (and int32 zero point) per index along ``axis``."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from ...schemes.per_channel_affine import PerChannelAffine
from ..mutants import drawn, mutant, reserved_field
from ..quantization import Quantizing
from ..values import AXES, INDICES, other_than
from . import shared
from .shared import quant_field, quantized

PAGED = True
"""A block-paged tensor can carry it, along axis 1 or 2 (the heads or the head dimension)."""
SCALE = "float32"


@st.composite
def affine_indices(draw: st.DrawFn) -> dict:
    symmetric = draw(st.booleans())
    return {"symmetric": symmetric, "scale_buffer_index": draw(INDICES),
            "zero_point_buffer_index": None if symmetric else draw(INDICES)}


@st.composite
def descriptors(draw: st.DrawFn) -> PerChannelAffine:
    return PerChannelAffine(axis=draw(AXES), **draw(affine_indices()))


def shape(draw: st.DrawFn, shape: list[int]) -> list[int]:
    return shape


def parameter_buffers(draw: st.DrawFn, model: Any, first: int, scale_size: int, zero_size: int, **fields: Any
                      ) -> tuple[Any, tuple[int, ...]]:
    """A model with its scales at buffer ``first``, and zero points unless symmetric: in the
    same entry (HQ-BUF-04) or the next one. Returns the model and the parameter buffer sizes."""
    if draw(st.booleans()):
        return model(scale_buffer_index=first, symmetric=True, **fields), (scale_size,)
    if draw(st.booleans()):
        return model(scale_buffer_index=first, zero_point_buffer_index=first, **fields), (scale_size + zero_size,)
    return model(scale_buffer_index=first, zero_point_buffer_index=first + 1, **fields), (scale_size, zero_size)


def for_tensor(draw: st.DrawFn, want: Quantizing) -> tuple[PerChannelAffine, tuple[int, ...], None]:
    axis = draw(st.integers(0, len(want.shape) - 1)) if want.paged is None else draw(st.sampled_from([1, 2]))
    size = 4 * want.shape[axis]
    q, sizes = parameter_buffers(draw, PerChannelAffine, want.first, size, size, axis=axis)
    return q, sizes, None


def scale_type(descriptor: PerChannelAffine) -> str:
    return SCALE


def parameters(draw: st.DrawFn, descriptor: PerChannelAffine, size: int) -> bytes:
    return shared.scale_values(draw, size // 4, SCALE)


mutant("HQ-PC-02")(shared.axis_high("per_channel_affine"))
mutant("HQ-PC-03")(shared.axis_dynamic("per_channel_affine"))


@mutant("HQ-PC-06")
def _pc_scale_type() -> st.SearchStrategy[bytes]:
    return quant_field("per_channel_affine", "scale_type_tag",
                       drawn(other_than(st.integers(0, 255), PerChannelAffine.model_fields["scale_type_tag"].default)))


@mutant("HQ-PC-07")
def _pc_reserved() -> st.SearchStrategy[bytes]:
    return reserved_field(quantized("per_channel_affine"), "quantization.reserved")


@mutant("HQ-BUF-07")
def _pc_scale_size() -> st.SearchStrategy[bytes]:
    return shared.parameter_size("per_channel_affine", "scale_buffer_index")


@mutant("HQ-BUF-08")
def _pc_zero_size() -> st.SearchStrategy[bytes]:
    return shared.parameter_size("per_channel_affine", "zero_point_buffer_index")


shared.scale_mutant("per_channel_affine", "HQ-PC-08", shared.nonfinite)
shared.scale_mutant("per_channel_affine", "HQ-PC-09", shared.zero)
shared.zero_point_mutant("per_channel_affine", "HQ-PC-10")
