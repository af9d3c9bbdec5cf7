"""Space-filling curve layouts: Morton (0x05) and Hilbert (0x40)."""

from __future__ import annotations

from hypothesis import strategies as st

from hurray_decl.hurray.strategies.mutants import data_too_small, layout_entry, layout_field, mutant
from hurray_decl.hurray.strategies.patching import patched
from hurray_decl.hurray.strategies.tensor import (
    LayoutStrategy,
    Part,
    Request,
    layout_as,
    register_layout,
    shapes,
    tensor_descriptors,
)
from hurray_decl.hurray.strategies.values import other_than
from hurray_decl.hurray.tensor import Hilbert, Morton, write_tensor_descriptor

U32 = st.integers(0, 2**32 - 1)


def _morton(draw: st.DrawFn, want: Request) -> Part:
    shape = draw(shapes(1, 3, 5))
    bits = tuple(max(1, (n - 1).bit_length()) + draw(st.integers(0, 1)) for n in shape)
    return Part(shape, Morton(morton_bits=bits), (want.size_of(1 << sum(bits)),))


def _hilbert(draw: st.DrawFn, want: Request) -> Part:
    rank, order = draw(st.integers(2, 3)), draw(st.integers(1, 2))
    return Part((1 << order,) * rank, Hilbert(hilbert_order=order, hilbert_rank=rank),
                (want.size_of(1 << (rank * order)),))


register_layout(LayoutStrategy("morton", _morton))
register_layout(LayoutStrategy("hilbert", _hilbert))


def _buffer_short(kind: str) -> st.SearchStrategy[bytes]:
    return data_too_small(tensor_descriptors(layout=kind, private_type=False))


@mutant("HT-LAY-17")
def _morton_zero() -> st.SearchStrategy[bytes]:
    return layout_entry("morton", "morton_bits", lambda draw, d: 0)


@mutant("HT-LAY-18")
@st.composite
def _morton_short(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="morton").filter(lambda d: max(d.shape) >= 3))
    k = draw(st.sampled_from([k for k, n in enumerate(d.shape) if n >= 3]))
    bits = draw(st.integers(1, (d.shape[k] - 1).bit_length() - 1))  # too few to index shape[k]
    return patched(write_tensor_descriptor(d), f"layout.morton_bits[{k}]", bits)


@mutant("HT-LAY-19")
def _morton_small() -> st.SearchStrategy[bytes]:
    return _buffer_short("morton")


@mutant("HT-LAY-78")
def _hilbert_order() -> st.SearchStrategy[bytes]:
    return layout_field("hilbert", "hilbert_order", st.just(0))


@mutant("HT-LAY-79")
def _hilbert_rank_other() -> st.SearchStrategy[bytes]:
    return layout_field("hilbert", "hilbert_rank", lambda d: other_than(st.integers(2, 2**32 - 1), d.rank))


@mutant("HT-LAY-80")
def _hilbert_rank_low() -> st.SearchStrategy[bytes]:
    return layout_field("hilbert", "hilbert_rank", st.integers(0, 1))


@mutant("HT-LAY-81")
@st.composite
def _hilbert_shape(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="hilbert", shard=False))
    k = draw(st.integers(0, d.rank - 1))
    side = 1 << layout_as(d, Hilbert).hilbert_order
    return patched(write_tensor_descriptor(d), f"shape[{k}]", draw(other_than(st.integers(0, 2**64 - 1), side)))


@mutant("HT-LAY-82")
def _hilbert_small() -> st.SearchStrategy[bytes]:
    return _buffer_short("hilbert")
