"""Per-block affine (0x03): one scale (and zero point) per block along ``axis``; on a
block-paged tensor, one per page slot (HD-17)."""

from __future__ import annotations

from hypothesis import strategies as st

from hurray_decl.hurray.schemes.per_block_affine import ROW, PerBlockAffine
from hurray_decl.hurray.strategies.mutants import drawn, mutant, reserved_field
from hurray_decl.hurray.strategies.patching import patched
from hurray_decl.hurray.strategies.quantization import Quantizing
from hurray_decl.hurray.strategies.schemes import shared
from hurray_decl.hurray.strategies.schemes.shared import quant_field, quantized
from hurray_decl.hurray.strategies.tensor import layout_as, tensor_descriptors
from hurray_decl.hurray.strategies.values import AXES, non_pow2, other_than, pow2, powers_of_two, product
from hurray_decl.hurray.tables.codes import ScaleType
from hurray_decl.hurray.tables.storage import dtype
from hurray_decl.hurray.tensor import BlockPaged, write_tensor_descriptor

NAME = ROW.name
"""The registry row this module belongs to (its module name is the row's name)."""
PAGED = True
"""A block-paged tensor can carry it: block_size = page_size along axis 0 (HT-LAY-63/64)."""
PAGE_SIZES = st.sampled_from([2, 4])
"""Page sizes that are valid block sizes."""
PADDED = True
"""A partial last block is stored padded (HQ-PB-17)."""
MIN_BLOCK = 2


@st.composite
def descriptors(draw: st.DrawFn) -> PerBlockAffine:
    return PerBlockAffine(axis=draw(AXES), block_size=draw(powers_of_two(MIN_BLOCK, 1 << 31)),
                          scale_type_tag=draw(st.sampled_from(ScaleType.codes())), **draw(shared.affine_indices()))


def shape(draw: st.DrawFn, shape: list[int]) -> list[int]:
    return [MIN_BLOCK if n == 1 else n for n in shape]  # a block holds >= 2 elements: no axis of 1 (HQ-PB-05)


def scale_type(descriptor: PerBlockAffine) -> str:
    return ScaleType(descriptor.scale_type_tag).title


def for_tensor(draw: st.DrawFn, want: Quantizing) -> tuple[PerBlockAffine, tuple[int, ...], tuple[int, int]]:
    scale_type_tag = draw(st.sampled_from(ScaleType.codes()))
    width = dtype(ScaleType(scale_type_tag).title).itemsize
    if want.paged is not None:
        axis, block = 0, want.paged.page_size
        count = want.paged.num_pages * want.paged.page_size
    else:
        axis = draw(st.integers(0, len(want.shape) - 1))
        extent = want.shape[axis]
        block = draw(pow2(1, max(1, extent.bit_length() - 1) if extent >= MIN_BLOCK else 6))
        count = -(-extent // block) * product(s for k, s in enumerate(want.shape) if k != axis)
    q, sizes = shared.parameter_buffers(draw, PerBlockAffine, want.first, count * width, 4 * count, axis=axis,
                                 block_size=block, scale_type_tag=scale_type_tag)
    return q, sizes, (axis, block)


def parameters(draw: st.DrawFn, descriptor: PerBlockAffine, size: int) -> bytes:
    name = scale_type(descriptor)
    return shared.scale_values(draw, size // dtype(name).itemsize, name)


mutant("HQ-PB-02")(shared.axis_high(NAME))
mutant("HQ-PB-07")(shared.axis_dynamic(NAME))
mutant("HQ-PB-03")(shared.block(NAME, non_pow2(3, 2**32 - 1)))
mutant("HQ-PB-04")(shared.block(NAME, st.integers(0, MIN_BLOCK - 1)))
mutant("HQ-PB-05")(shared.block_beyond(NAME))


@mutant("HQ-PB-08")
def _pb_scale_type() -> st.SearchStrategy[bytes]:
    return quant_field(NAME, "scale_type_tag", drawn(other_than(st.integers(0, 255), *ScaleType.codes())))


@mutant("HQ-PB-09")
def _pb_reserved() -> st.SearchStrategy[bytes]:
    return reserved_field(quantized(NAME), "quantization.reserved")


@mutant("HQ-BUF-09")
def _pb_scale_size() -> st.SearchStrategy[bytes]:
    return shared.parameter_size(NAME, "scale_buffer_index", layout=shared.unpaged())


@mutant("HQ-BUF-10")
def _pb_zero_size() -> st.SearchStrategy[bytes]:
    return shared.parameter_size(NAME, "zero_point_buffer_index", layout=shared.unpaged())


@mutant("HQ-BUF-13")
@st.composite
def _paged_parameter_size(draw: st.DrawFn) -> bytes:
    field = draw(st.sampled_from(["scale_buffer_index", "zero_point_buffer_index"]))
    return draw(shared.parameter_size(NAME, field, layout="block_paged"))


_PAGED = tensor_descriptors(layout="block_paged", scheme=NAME)


@mutant("HT-LAY-63")
@st.composite
def _paged_axis(draw: st.DrawFn) -> bytes:
    d = draw(_PAGED)
    return patched(write_tensor_descriptor(d), "quantization.axis", draw(st.integers(1, 2)))


@mutant("HT-LAY-64")
@st.composite
def _paged_block(draw: st.DrawFn) -> bytes:
    d = draw(_PAGED)
    return patched(write_tensor_descriptor(d), "quantization.block_size",
                   draw(other_than(pow2(1, 31), layout_as(d, BlockPaged).page_size)))


shared.scale_mutant(NAME, "HQ-PB-12", shared.nonfinite)
shared.scale_mutant(NAME, "HQ-PB-13", shared.zero)
