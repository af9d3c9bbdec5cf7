"""The tiled layout (0x04): a tile grid and tile interiors, each with its order, nested up to
MAX_TILED_DEPTH levels."""

from __future__ import annotations

from hypothesis import strategies as st

from hurray_decl.hurray.strategies.mutants import data_too_small, layout_entry, layout_field, mutant, reserved_field
from hurray_decl.hurray.strategies.patching import patched
from hurray_decl.hurray.strategies.tensor import (
    LayoutStrategy,
    Part,
    Request,
    register_layout,
    shapes,
    tensor_descriptors,
)
from hurray_decl.hurray.strategies.values import other_than, product
from hurray_decl.hurray.tables.codes import TileOrder
from hurray_decl.hurray.tensor import Tiled, write_tensor_descriptor
from hurray_decl.hurray.tensor.layouts import INNER_ORDERS, MAX_TILED_DEPTH, OUTER_ORDERS

BYTE = st.integers(0, 255)


def _strides(draw: st.DrawFn, order: int, rank: int) -> tuple[int, ...] | None:
    if order != TileOrder.STRIDED:
        return None
    return tuple(draw(st.lists(st.integers(-4, 4), min_size=rank, max_size=rank)))


def _tiled(draw: st.DrawFn, want: Request) -> Part:
    shape = draw(shapes(1, 3, 5))
    rank = len(shape)
    depth = draw(st.integers(1, 3)) if want.tiled_depth is None else want.tiled_depth
    level: Tiled | None = None
    for _ in range(depth):  # built from the innermost level out
        outer = draw(st.sampled_from(OUTER_ORDERS))
        inner = draw(st.sampled_from(OUTER_ORDERS)) if level is None else TileOrder.NESTED
        tile = tuple(draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank)))
        level = Tiled(tile_shape=tile, outer_layout=outer, inner_layout=inner,
                      outer_strides=_strides(draw, outer, rank),
                      inner_strides=_strides(draw, inner, rank), nested=level)
    if level is None:
        raise ValueError(f"a tiled layout has at least one level, not {depth}")
    tiles = product(-(-n // t) for n, t in zip(shape, level.tile_shape))
    return Part(shape, level, (want.size_of(tiles * product(level.tile_shape)),))


register_layout(LayoutStrategy("tiled", _tiled))


@mutant("HT-LAY-08")
def _tile_zero() -> st.SearchStrategy[bytes]:
    return layout_entry("tiled", "tile_shape", lambda draw, d: 0)


@mutant("HT-LAY-09")
def _outer_layout() -> st.SearchStrategy[bytes]:
    return layout_field("tiled", "outer_layout", other_than(BYTE, *OUTER_ORDERS))


@mutant("HT-LAY-10")
def _inner_layout() -> st.SearchStrategy[bytes]:
    return layout_field("tiled", "inner_layout", other_than(BYTE, *INNER_ORDERS))


@mutant("HT-LAY-11")
def _tiled_reserved() -> st.SearchStrategy[bytes]:
    return reserved_field(tensor_descriptors(layout="tiled"), "layout.reserved")


@mutant("HT-LAY-12")
@st.composite
def _tiled_deep(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="tiled", tiled_depth=MAX_TILED_DEPTH))
    deepest = "layout" + ".nested" * (MAX_TILED_DEPTH - 1)  # its inner_layout nests one level too many
    return patched(write_tensor_descriptor(d), f"{deepest}.inner_layout", TileOrder.NESTED)


@mutant("HT-LAY-13")
def _tiled_small() -> st.SearchStrategy[bytes]:
    return data_too_small(tensor_descriptors(layout="tiled", private_type=False).filter(lambda d: 0 not in d.shape))
