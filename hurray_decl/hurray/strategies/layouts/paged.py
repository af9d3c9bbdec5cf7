"""The block-paged layout (0x0A): a paged KV cache with its page pool, block table and
sequence pointers."""

from __future__ import annotations

from hypothesis import strategies as st

from hurray_decl.hurray.strategies.layouts.sparse import (
    can,
    layout_data,
    packed_pointers,
    pointer_change,
    pointers,
    undersized,
)
from hurray_decl.hurray.strategies.mutants import data_mutant, layout_field, mutant, reserved_field
from hurray_decl.hurray.strategies.tensor import (
    LayoutStrategy,
    Part,
    Request,
    layout_as,
    register_layout,
    tensor_descriptors,
)
from hurray_decl.hurray.strategies.values import other_than
from hurray_decl.hurray.tables.codes import BlockTableIndexType, KVRole
from hurray_decl.hurray.tensor import BlockPaged, TensorDescriptor

PAGE_SIZES = st.integers(1, 5)
"""Page sizes drawn when the scheme (if any) asks for nothing narrower (its ``PAGE_SIZES``)."""


def _paged(draw: st.DrawFn, want: Request) -> Part:
    shape = (draw(st.integers(0, 9)), draw(st.integers(0, 3)), draw(st.integers(0, 3)))
    page = draw(want.scheme_attribute("PAGE_SIZES", PAGE_SIZES))
    pages, seqs = draw(st.integers(0, 3)), draw(st.integers(0, 2))
    layout = BlockPaged(page_size=page, num_pages=pages, num_seqs=seqs, kv_role=draw(st.sampled_from(KVRole.codes())),
                        layer_index=draw(st.integers(0, 2**32 - 1)),
                        block_table_index_type=draw(st.sampled_from(BlockTableIndexType.codes())))
    width = layout.index_width
    entries = draw(st.integers(0, 4)) if pages and seqs else 0  # seq_ptr[num_seqs] = entries (HT-LAY-58)
    sizes = (want.size_of(pages * page * shape[1] * shape[2]), width * entries, width * (seqs + 1))
    q, params, _ = want.quantization(draw, shape, len(sizes), layout)
    return Part(shape, layout, sizes + params, 0, q)


def _paged_contents(draw: st.DrawFn, d: TensorDescriptor, contents: list) -> None:
    layout = layout_as(d, BlockPaged)
    if len(d.buffers) < 3:
        return
    entries = d.buffers[1].byte_size // layout.index_width
    table = draw(st.lists(st.integers(0, max(layout.num_pages - 1, 0)), min_size=entries, max_size=entries))
    cuts = sorted(draw(st.lists(st.integers(0, entries), min_size=layout.num_seqs - 1,
                                max_size=layout.num_seqs - 1))) if layout.num_seqs else []
    contents[1] = packed_pointers(d, table)
    contents[2] = packed_pointers(d, ([0] + cuts + [entries]) if layout.num_seqs else [entries])


register_layout(LayoutStrategy("block_paged", _paged, quantizable=True, paged=True, contents=_paged_contents))


@mutant("HT-LAY-53")
def _kv_role() -> st.SearchStrategy[bytes]:
    return layout_field("block_paged", "kv_role", other_than(st.integers(0, 255), *KVRole.codes()))


@mutant("HT-LAY-54")
def _paged_reserved() -> st.SearchStrategy[bytes]:
    return reserved_field(tensor_descriptors(layout="block_paged"), "layout.reserved")


@mutant("HT-LAY-55")
def _page_zero() -> st.SearchStrategy[bytes]:
    return layout_field("block_paged", "page_size", st.just(0))


@mutant("HT-LAY-56")
def _paged_axis() -> st.SearchStrategy[bytes]:
    return layout_field("block_paged", "paged_axis", st.integers(1, 2**32 - 1))


@mutant("HT-LAY-91")
def _paged_sizes() -> st.SearchStrategy[bytes]:
    return undersized("block_paged", lambda d: [0, 2])


data_mutant("HT-LAY-57", layout_data("block_paged", can("start"), pointer_change(2, "start")))
data_mutant("HT-LAY-58", layout_data("block_paged", can("end"), pointer_change(2, "end")))
data_mutant("HT-LAY-59", layout_data("block_paged", can("step"), pointer_change(2, "step")))


def _page_beyond(draw: st.DrawFn, d: TensorDescriptor, out: list[bytes]) -> None:
    table = pointers(d, out[1])
    layout = layout_as(d, BlockPaged)
    top = (1 << (8 * layout.index_width)) - 1
    table[draw(st.integers(0, len(table) - 1))] = draw(st.integers(layout.num_pages, top))
    out[1] = packed_pointers(d, table)


data_mutant("HT-LAY-60", layout_data("block_paged", lambda d, c: d.buffers[1].byte_size > 0, _page_beyond))
