"""Row-major, column-major (0x01, 0x02) and strided (0x03) layouts."""

from __future__ import annotations

from hypothesis import strategies as st

from hurray_decl.hurray.strategies.mutants import mutant
from hurray_decl.hurray.strategies.patching import patched
from hurray_decl.hurray.strategies.tensor import (
    LAYOUT_ROWS,
    LayoutStrategy,
    Part,
    Request,
    layout_as,
    register_layout,
    shapes,
    tensor_descriptors,
)
from hurray_decl.hurray.strategies.values import product
from hurray_decl.hurray.tables.storage import packing
from hurray_decl.hurray.tensor import Strided, write_tensor_descriptor
from hurray_decl.hurray.tensor.context import TensorContext


def _contiguous(name: str, rank_low: int):
    def part(draw: st.DrawFn, want: Request) -> Part:
        if want.scheme:
            shape = want.shape(draw, 1, 3)
            q, params, pad = want.quantization(draw, shape, 1)
        else:
            shape, q, params, pad = draw(shapes(rank_low, 3)), None, (), None
        offset = draw(st.integers(0, 8))
        padded = list(shape)
        if pad is not None:  # a partial last block is stored padded to a whole block
            axis, block = pad
            padded[axis] = -(-shape[axis] // block) * block
        size = offset + want.size_of(product(padded)) + draw(st.integers(0, 3))
        return Part(shape, LAYOUT_ROWS[name].model(), (size,) + params, offset, q)
    return part


register_layout(LayoutStrategy("row_major", _contiguous("row_major", 0), quantizable=True))
register_layout(LayoutStrategy("column_major", _contiguous("column_major", 1), quantizable=True))


def _extent(strides: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, int]:
    """The lowest and highest element offsets the strides address (0, 0 for an empty tensor)."""
    if 0 in shape:
        return 0, 0
    return (sum(min(0, s * (n - 1)) for s, n in zip(strides, shape)),
            sum(max(0, s * (n - 1)) for s, n in zip(strides, shape)))


def _strided(draw: st.DrawFn, want: Request) -> Part:
    shape = draw(shapes(1, 3, 4))
    strides = tuple(draw(st.lists(st.integers(-3, 3), min_size=len(shape), max_size=len(shape))))
    lo, hi = _extent(strides, shape)
    offset = -packing(want.bits).byte_of(lo)  # element [0, ..., 0] sits where the lowest address starts
    return Part(shape, Strided(strides=strides), (offset + want.size_of(hi + 1),), offset)


register_layout(LayoutStrategy("strided", _strided))


@mutant("HT-LAY-05")
@st.composite
def _strided_outside(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout="strided").filter(lambda d: 0 not in d.shape))
    _, hi = _extent(layout_as(d, Strided).strides, d.shape)
    size = TensorContext(d).packed(hi + 1)
    if size is None:  # a public type is always sized
        raise ValueError("a strided tensor of a sized type was drawn")
    end = d.byte_offset + size
    return patched(write_tensor_descriptor(d), "buffers[0].byte_size", draw(st.integers(d.byte_offset, end - 1)))
