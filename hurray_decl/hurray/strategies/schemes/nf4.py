"""NF4 (0x04): 4-bit codes into a fixed table, one float32 absmax per block along axis 0."""

from __future__ import annotations

from hypothesis import strategies as st

from hurray_decl.hurray.schemes.nf4 import NF4, ROW
from hurray_decl.hurray.strategies.mutants import mutant
from hurray_decl.hurray.strategies.quantization import Quantizing
from hurray_decl.hurray.strategies.schemes import shared
from hurray_decl.hurray.strategies.values import AXES, INDICES, non_pow2, pow2, powers_of_two, product

NAME = ROW.name
"""The registry row this module belongs to (its module name is the row's name)."""
PAGED = False
"""No defined composition with block-paged storage (HD-17)."""
PADDED = True
"""A partial last block is stored padded (HQ-PB-17)."""
MIN_BLOCK = 8
SCALE = "float32"


@st.composite
def descriptors(draw: st.DrawFn) -> NF4:
    return NF4(axis=draw(AXES), block_size=draw(powers_of_two(MIN_BLOCK, 1 << 31)), scale_buffer_index=draw(INDICES))


def shape(draw: st.DrawFn, shape: list[int]) -> list[int]:
    return [draw(st.sampled_from([0, MIN_BLOCK, 12, 2 * MIN_BLOCK])), *shape[1:]]  # axis 0 holds whole or part blocks


def scale_type(descriptor: NF4) -> str:
    return SCALE


def for_tensor(draw: st.DrawFn, want: Quantizing) -> tuple[NF4, tuple[int, ...], tuple[int, int]]:
    axis = 0  # shape() sized it
    extent = want.shape[axis]
    low = MIN_BLOCK.bit_length() - 1
    block = draw(pow2(low, max(low, extent.bit_length() - 1))) if extent else draw(pow2(low, 10))
    count = -(-extent // block) * product(want.shape[1:])
    return NF4(axis=axis, block_size=block, scale_buffer_index=want.first), (4 * count,), (axis, block)


def parameters(draw: st.DrawFn, descriptor: NF4, size: int) -> bytes:
    return shared.scale_values(draw, size // 4, SCALE, negative=False, zero=True)  # absmax: >= 0


mutant("HQ-NF4-02")(shared.axis_high(NAME))
mutant("HQ-NF4-07")(shared.axis_dynamic(NAME))
mutant("HQ-NF4-03")(shared.block(NAME, non_pow2(MIN_BLOCK + 1, 2**32 - 1)))
mutant("HQ-NF4-04")(shared.block(NAME, st.integers(0, MIN_BLOCK - 1)))
mutant("HQ-NF4-05")(shared.block_beyond(NAME))


@mutant("HQ-BUF-11")
def _nf4_scale_size() -> st.SearchStrategy[bytes]:
    return shared.parameter_size(NAME, "scale_buffer_index", layout=shared.unpaged())


shared.scale_mutant(NAME, "HQ-NF4-08", shared.nonfinite)
shared.scale_mutant(NAME, "HQ-NF4-09", shared.negative)
