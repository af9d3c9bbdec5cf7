"""Addresses of a dense tensor's elements (DIGEST § 5.4; HT-LAY-01..19, HT-LAY-83): the offset
term of every axis of each separable layout, Skilling's Hilbert index, and flat ranges of the
row-major order as boxes. :mod:`.access` reads the codes at these offsets.

Offsets are linear element offsets from element ``[0, ..., 0]`` (at ``byte_offset``). Every
term is checked against buffer 0's window as it is built (:class:`Terms`), so int64 arithmetic
never overflows and an address outside the buffer is refused with the rule whose size it breaks.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from math import prod
from typing import NoReturn

import numpy as np

from hurray_decl.errors import RuleViolation, UnsupportedError
from hurray_decl.hurray.tables.codes import TileOrder
from hurray_decl.hurray.tensor.context import TensorContext
from hurray_decl.hurray.tensor.layouts import (
    OUTER_ORDERS,
    ColumnMajor,
    Hilbert,
    Morton,
    RowMajor,
    Strided,
    Tiled,
)


def outside(code: str, what: str, low: int, high: int, window: tuple[int, int]) -> NoReturn:
    raise RuleViolation(code, f"{what} reach outside buffer 0", path="descriptor -> layout",
                        actual=f"element offsets {low}..{high} from byte_offset",
                        expected=f"within {window[0]}..{window[1]}")


class Terms:
    """Builds the per-axis offset terms of one tensor, refusing any term that alone already
    addresses outside buffer 0 (so that int64 arithmetic never overflows)."""

    def __init__(self, window: tuple[int, int], code: str, what: str) -> None:
        self.window = window
        self.reach = max(-window[0], window[1], 0)
        self.code = code
        self.what = what

    def scaled(self, index: np.ndarray, step: int) -> np.ndarray:
        """``index * step``: the index's top value times the step must stay within the buffer.

        The element whose other indices are all 0 sits at exactly this term, so a term beyond
        the buffer is an address beyond it.
        """
        top = int(index.max()) if index.size else 0
        if top == 0:
            return np.zeros_like(index)
        if abs(step) * top > self.reach:
            outside(self.code, self.what, min(0, step * top), max(0, step * top), self.window)
        return index * np.int64(step)


def _row_major_steps(extents: Sequence[int]) -> list[int]:
    steps, step = [], 1
    for n in reversed(extents):
        steps.append(step)
        step *= n
    return steps[::-1]


def _column_major_steps(extents: Sequence[int]) -> list[int]:
    steps, step = [], 1
    for n in extents:
        steps.append(step)
        step *= n
    return steps


def _order_steps(order: int, extents: Sequence[int], strides: Sequence[int] | None) -> list[int]:
    if order == TileOrder.ROW_MAJOR:
        return _row_major_steps(extents)
    if order == TileOrder.COLUMN_MAJOR:
        return _column_major_steps(extents)
    if order == TileOrder.STRIDED and strides is not None and len(strides) == len(extents):
        return list(strides)
    raise RuleViolation("HT-LAY-07", "a tiled level's order needs its strides, one per dimension",
                        path="descriptor -> layout", actual=TileOrder(order).title if order in OUTER_ORDERS else order,
                        expected="strides")


def _tiled_terms(level: Tiled, indices: list[np.ndarray], dims: Sequence[int], terms: Terms) -> list[np.ndarray]:
    """One tiled level (HT-LAY-07): tile number by the outer order times the tile's element count,
    plus the offset inside the tile by the inner order; a nested level addresses the tile's own
    index space (shape tile_shape) the same way. Strides are used as stored: outer strides count
    tiles, inner strides elements, so any padding between tiles is honoured (HT-LAY-15)."""
    tile = level.tile_shape
    if len(tile) != len(dims):
        raise RuleViolation("HT-LAY-07", "tile_shape has one entry per dimension",
                            path="descriptor -> layout -> tile_shape", actual=len(tile), expected=len(dims))
    grid = [-(-n // size) for n, size in zip(dims, tile)]
    per_tile = prod(tile)
    outer = _order_steps(level.outer_layout, grid, level.outer_strides)
    inside = [index % size for index, size in zip(indices, tile)]
    if level.inner_layout == TileOrder.NESTED and level.nested is not None:
        inner = _tiled_terms(level.nested, inside, tile, terms)
    else:
        steps = _order_steps(level.inner_layout, tile, level.inner_strides)
        inner = [terms.scaled(e, step) for e, step in zip(inside, steps)]
    return [terms.scaled(index // size, step * per_tile) + e
            for index, size, step, e in zip(indices, tile, outer, inner)]


def _spread(index: np.ndarray, bits: int, rank: int, axis: int, terms: Terms) -> np.ndarray:
    """Morton term of one axis: bit b of the index moves to bit b·R + axis (HT-LAY-16)."""
    used = min(bits, int(index.max()).bit_length() if index.size else 0)
    if used and 1 << ((used - 1) * rank + axis) > terms.reach:
        top = int(index.max())
        outside(terms.code, terms.what, 0, sum(((top >> b) & 1) << (b * rank + axis) for b in range(used)),
                 terms.window)
    code = np.zeros(index.shape, dtype=np.int64)
    for b in range(used):
        code |= ((index >> b) & 1) << (b * rank + axis)
    return code


def axis_terms(t: TensorContext, extents: Sequence[int], ranges: Sequence[tuple[int, int]],
                terms: Terms) -> list[np.ndarray]:
    """The offset term of every axis, evaluated at indices ``lo .. hi - 1`` of ``ranges[k]``;
    ``extents`` is the (padded, HD-12) shape the layout's addressing is computed on."""
    layout = t.layout
    indices = [np.arange(lo, hi, dtype=np.int64) for lo, hi in ranges]
    if isinstance(layout, RowMajor):
        steps = _row_major_steps(extents)
    elif isinstance(layout, ColumnMajor):
        steps = _column_major_steps(extents)
    elif isinstance(layout, Strided):
        steps = list(layout.strides)
    elif isinstance(layout, Tiled):
        return _tiled_terms(layout, indices, extents, terms)
    elif isinstance(layout, Morton):
        return [_spread(index, bits, t.rank, axis, terms)
                for axis, (index, bits) in enumerate(zip(indices, layout.morton_bits))]
    else:
        raise UnsupportedError(type(layout).rule, f"{type(layout).__name__} has no per-axis address",
                               path="descriptor -> layout_tag", actual=t.d.layout_tag)
    return [terms.scaled(index, step) for index, step in zip(indices, steps)]


def hilbert_index(coordinates: Sequence[np.ndarray], order: int) -> np.ndarray:
    """Skilling's CoordsToHilbert (HT-LAY-83) on arrays of coordinates, one array per axis.

    The inverse-undo and Gray-encode passes turn the coordinates into the transposed index,
    then bit b of the transposed X[d] goes to bit b·r + (r − 1 − d) of the index. Every step
    works on whole arrays, in place.
    """
    r = len(coordinates)
    kind = np.uint32 if order <= 32 else np.uint64
    x: list[np.ndarray] = [np.array(c, dtype=kind) for c in coordinates]
    has = np.empty(x[0].shape, dtype=bool)
    swap = np.empty_like(x[0])
    q = 1 << (order - 1)
    while q > 1:  # inverse undo, from the top bit down
        low = kind(q - 1)
        for i in range(r):
            np.not_equal(x[i] & kind(q), 0, out=has)
            if i:  # bit clear: exchange the low bits of X[0] and X[i]
                np.bitwise_xor(x[0], x[i], out=swap)
                swap &= low
                swap[has] = 0
                x[0] ^= swap
                x[i] ^= swap
            np.bitwise_xor(x[0], low, out=x[0], where=has)  # bit set: invert the low bits of X[0]
        q >>= 1
    for i in range(1, r):  # Gray encode
        x[i] ^= x[i - 1]
    flip = np.zeros_like(x[0])
    q = 1 << (order - 1)
    while q > 1:
        np.bitwise_xor(flip, kind(q - 1), out=flip, where=(x[r - 1] & kind(q)) != 0)
        q >>= 1
    index = np.zeros(x[0].shape, dtype=np.uint64)
    table = _spread_table(r)
    for d in range(r):
        x[d] ^= flip
        for chunk in range(0, order, 8):  # eight coordinate bits per table lookup
            part = table[(x[d] >> kind(chunk)) & kind(0xFF)]
            part <<= np.uint64(chunk * r + (r - 1 - d))
            index |= part
    return index.view(np.int64)


@cache
def _spread_table(r: int) -> np.ndarray:
    """Every byte value with its bit b moved to bit b·r."""
    value = np.arange(256, dtype=np.uint64)
    spread = np.zeros(256, dtype=np.uint64)
    for b in range(8):
        spread |= ((value >> np.uint64(b)) & np.uint64(1)) << np.uint64(b * r)
    return spread


def size_code(t: TensorContext) -> str:
    """The rule whose buffer size an out-of-buffer address breaks."""
    if t.padded:
        return "HQ-PB-17"
    return {Strided: "HT-LAY-05", Tiled: "HT-LAY-13", Morton: "HT-LAY-19", Hilbert: "HT-LAY-82"}.get(
        type(t.layout), "HE-21")


def flat_boxes(shape: Sequence[int], start: int, stop: int) -> list[list[tuple[int, int]]]:
    """The flat range ``start .. stop`` of the row-major order over ``shape`` as at most
    ``2 * rank`` boxes (one ``(lo, hi)`` per axis), in order."""
    found: list[list[tuple[int, int]]] = []

    def walk(axis: int, prefix: list[tuple[int, int]], lo: int, hi: int) -> None:
        if lo >= hi:
            return
        rest = [(0, n) for n in shape[axis + 1:]]
        inner = prod(shape[axis + 1:])
        first, head = divmod(lo, inner)
        last, tail = divmod(hi, inner)
        if first == last:  # inside one index of this axis
            walk(axis + 1, prefix + [(first, first + 1)], head, tail)
            return
        if head:
            walk(axis + 1, prefix + [(first, first + 1)], head, inner)
            first += 1
        if last > first:
            found.append(prefix + [(first, last)] + rest)
        if tail:
            walk(axis + 1, prefix + [(last, last + 1)], 0, tail)

    if not shape:
        return [[]] if start < stop else []
    walk(0, [], start, stop)
    return found
