"""MXFP (0x05): one float8_e8m0 shared exponent per block of 16 or 32 along axis 0."""

from __future__ import annotations

from hypothesis import strategies as st

from hurray_decl.hurray.schemes.mxfp import MXFP, ROW
from hurray_decl.hurray.strategies.mutants import data_mutant, field_mutant, mutant
from hurray_decl.hurray.strategies.quantization import Quantizing
from hurray_decl.hurray.strategies.schemes import shared
from hurray_decl.hurray.strategies.tensor import buffers_for, scheme_of
from hurray_decl.hurray.strategies.values import AXES, INDICES, non_pow2, pow2, powers_of_two, product
from hurray_decl.hurray.tensor import write_tensor_descriptor

NAME = ROW.name
"""The registry row this module belongs to (its module name is the row's name)."""
PAGED = False
"""No defined composition with block-paged storage (HD-17)."""
MIN_BLOCK, MAX_BLOCK = 16, 2048
SCALE = "float8_e8m0"
EXPONENTS = st.integers(0x01, 0xFE)
"""Shared exponents that are neither zero-only nor NaN (HQ-MX-10)."""


@st.composite
def descriptors(draw: st.DrawFn) -> MXFP:
    return MXFP(axis=draw(AXES), block_size=draw(powers_of_two(MIN_BLOCK, MAX_BLOCK)), scale_buffer_index=draw(INDICES))


def shape(draw: st.DrawFn, shape: list[int]) -> list[int]:
    return [draw(st.sampled_from([MIN_BLOCK, 2 * MIN_BLOCK])), *shape[1:]]  # axis 0 holds whole blocks (HQ-MX-08)


def scale_type(descriptor: MXFP) -> str:
    return SCALE


def for_tensor(draw: st.DrawFn, want: Quantizing) -> tuple[MXFP, tuple[int, ...], None]:
    axis = 0  # shape() sized it
    extent = want.shape[axis]
    block = draw(st.sampled_from([MIN_BLOCK, 2 * MIN_BLOCK] if extent % (2 * MIN_BLOCK) == 0 else [MIN_BLOCK]))
    count = (extent // block) * product(want.shape[1:])
    return MXFP(axis=axis, block_size=block, scale_buffer_index=want.first), (count,), None


def parameters(draw: st.DrawFn, descriptor: MXFP, size: int) -> bytes:
    return bytes(draw(st.lists(EXPONENTS, min_size=size, max_size=size)))


mutant("HQ-MX-02")(shared.axis_high(NAME))
mutant("HQ-MX-06")(shared.axis_dynamic(NAME))
mutant("HQ-MX-03")(shared.block(NAME, non_pow2(MIN_BLOCK + 1, MAX_BLOCK - 1)))
mutant("HQ-MX-04")(shared.block(NAME, st.integers(0, MIN_BLOCK - 1)))
mutant("HQ-MX-05")(shared.block(NAME, pow2(MAX_BLOCK.bit_length(), 31)))


@mutant("HQ-MX-07")
def _mx_axis_empty() -> st.SearchStrategy[bytes]:
    return field_mutant(shared.quantized(NAME, shard=False), lambda draw, d: f"shape[{scheme_of(d).axis}]",
                        lambda draw, d: 0)


@mutant("HQ-MX-08")
def _mx_partial() -> st.SearchStrategy[bytes]:
    return field_mutant(shared.quantized(NAME, shard=False), lambda draw, d: f"shape[{scheme_of(d).axis}]",
                        lambda draw, d: draw(st.integers(1, 4096).filter(lambda n: n % scheme_of(d).block_size)))


@mutant("HQ-BUF-12")
def _mx_scale_size() -> st.SearchStrategy[bytes]:
    return shared.parameter_size(NAME, "scale_buffer_index", layout=shared.unpaged())


@st.composite
def _mx_scale_byte(draw: st.DrawFn) -> tuple[bytes, tuple[bytes, ...]]:
    d = draw(shared.quantized(NAME).filter(lambda d: d.buffers[scheme_of(d).scale_buffer_index].byte_size))
    contents = list(draw(buffers_for(d)))
    index = scheme_of(d).scale_buffer_index
    raw = bytearray(contents[index])
    raw[draw(st.integers(0, len(raw) - 1))] = draw(st.sampled_from([0x00, 0xFF]))  # the two exponents refused
    contents[index] = bytes(raw)
    return write_tensor_descriptor(d), tuple(contents)


data_mutant("HQ-MX-10", _mx_scale_byte)
