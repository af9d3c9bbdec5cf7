"""Element access: the raw codes of a tensor in logical order, for every dense layout, and the
per-sequence lookup of block-paged storage (DIGEST § 4.4, § 5.4; HD-12, HD-17).

Codes are the stored bit patterns as unsigned integers of the element width (uint8 up to 8 bits,
then uint16, uint32, uint64; 16-byte types as ``V16`` raw bytes). Nothing is converted, so NaN
payloads and subnormals come back exactly as stored (HE-10).

Addressing works in *linear element offsets* relative to element ``[0, ..., 0]`` (which sits at
``byte_offset``); the packing rule then turns an offset into a byte and a bit (HT-LAY-06, HE-20).
Every dense layout but Hilbert is separable: the offset of ``[i_0, ..., i_(R-1)]`` is a sum of
one term per axis, ``f_0(i_0) + ... + f_(R-1)(i_(R-1))``. Each term is a 1-D array, so the
exact lowest and highest address are known before anything is read, and the full offset array
is one broadcast sum followed by one gather. Hilbert (HT-LAY-83) runs Skilling's algorithm on
all coordinates at once. The per-axis terms and the Hilbert index are :mod:`.addressing`; this
module reads the codes at them.

A tensor quantized per block (0x03) or with NF4 (0x04) whose axis ends in a partial block is
addressed with the padded extent ``ceil(S/K)·K`` along that axis (HD-12): :func:`logical_codes`
returns the logical elements only, :func:`stored_codes_row_major` the padded grid, padding as
stored, which is what the dequantization kernels consume.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

import numpy as np

from hurray_decl.errors import ArgumentError, RuleViolation, UnsupportedError
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.codes import TileOrder
from hurray_decl.hurray.tables.element_types import ElementType
from hurray_decl.hurray.tensor.addressing import Terms, axis_terms, flat_boxes, hilbert_index, outside, size_code
from hurray_decl.hurray.tensor.common import DYNAMIC
from hurray_decl.hurray.tensor.context import TensorContext
from hurray_decl.hurray.tensor.layouts import (
    BlockPaged,
    ColumnMajor,
    Hilbert,
    Layout,
    PrivateLayout,
    RowMajor,
    Tiled,
    row_of,
)
from hurray_decl.hurray.tensor.model import TensorDescriptor
from hurray_decl.hurray.tensor.validate import DataContext, validate_buffers

__all__ = ["PagedCodes", "block_paged_codes", "code_dtype", "dense_codes", "flat_boxes", "hilbert_index",
           "logical_codes", "padded_extents", "read_codes", "refuse_unaddressable", "stored_codes_row_major",
           "window_bytes", "window_codes"]

code_dtype = storage.code_dtype


# ---------------------------------------------------------------- refusals


_WHY = {
    "sparse": "stores only its nnz values, with their coordinates in separate index buffers; "
              "element access reads layouts where every element has a place in buffer 0",
    "indirect": "is addressed per sequence through its block table; read one sequence with "
                "block_paged_codes(descriptor, buffers, seq)",
    "virtual": "owns no data: its values live in the member descriptors that follow it",
    "private": "has addressing agreed out of band, which hurray_decl does not know",
}


def refuse_unaddressable(layout: Layout, purpose: str) -> None:
    """Refuse, with the layout's defining rule, a layout whose elements have no dense address.

    Unrecognised (opaque) and unregistered private layouts are left to :func:`validate_buffers`,
    which refuses to dereference them (HT-HDR-17).
    """
    row = row_of(layout)
    if row.category == "dense" or row.category == "opaque":
        return
    if isinstance(layout, PrivateLayout) and not layout.registered:
        return
    raise UnsupportedError(
        type(layout).rule, f"{purpose} reads dense layouts; a {row.title} tensor {_WHY[row.category]}",
        path="descriptor -> layout_tag", actual=row.title,
        expected="row-major, column-major, strided, tiled, Morton or Hilbert")


def _static(t: TensorContext, axes: Sequence[int]) -> None:
    for k in axes:
        if t.shape[k] == DYNAMIC:
            raise UnsupportedError("HT-HDR-18", "a dynamic dimension has no size to address elements through",
                                   path=f"descriptor -> shape -> {k}", actual="DYNAMIC", expected="a static size")


def _checked(descriptor: Any, buffers: Sequence[Any], purpose: str) -> DataContext:
    if not isinstance(descriptor, TensorDescriptor):
        raise RuleViolation("HT-HDR-02", f"{purpose} takes a TensorDescriptor", path="descriptor",
                            actual=type(descriptor).__name__, expected="TensorDescriptor")
    refuse_unaddressable(descriptor.layout, purpose)
    return validate_buffers(descriptor, buffers, padding=False)


def _known_element(t: TensorContext) -> ElementType:
    return t.known_element


# ---------------------------------------------------------------- buffer 0 as codes


class _Source:
    """Buffer 0 read as codes at linear element offsets from ``byte_offset``."""

    def __init__(self, content: Any, byte_offset: int, bits: int) -> None:
        self.raw = np.frombuffer(content, dtype=np.uint8)
        self.start = byte_offset
        self.bits = bits

    def window(self) -> tuple[int, int]:
        """The lowest and highest offset whose element lies wholly inside the buffer: whole
        packing units before and after ``byte_offset`` (HE-20)."""
        unit = storage.packing(self.bits)
        n, s = self.raw.size, self.start
        return -unit.elements * (s // unit.size), unit.elements * ((n - s) // unit.size) - 1

    def contiguous(self, start: int, count: int) -> np.ndarray:
        """``count`` codes stored one after the other from element offset ``start`` (>= 0)."""
        return storage.codes_at(self.raw[self.start:], self.bits, start, count)

    def gather(self, offsets: np.ndarray) -> np.ndarray:
        """Codes at ``offsets`` (int64, any shape); the caller has checked them against the window."""
        bits = self.bits
        if bits == 6:
            group = self.start + 3 * (offsets >> 2)
            word = (self.raw[group].astype(np.uint32) | (self.raw[group + 1].astype(np.uint32) << 8)
                    | (self.raw[group + 2].astype(np.uint32) << 16))
            return ((word >> (6 * (offsets & 3)).astype(np.uint32)) & 0x3F).astype(np.uint8)
        if bits < 8:
            position = self.start * 8 + offsets * bits
            shift = (position & 7).astype(np.uint8)
            return (self.raw[position >> 3] >> shift) & np.uint8((1 << bits) - 1)
        width = bits // 8
        stored = np.dtype("V16") if bits == 128 else np.dtype(f"<u{width}")
        skew = self.start % width
        whole = np.frombuffer(self.raw[skew:], dtype=stored, count=(self.raw.size - skew) // width)
        return whole[self.start // width + offsets].astype(code_dtype(bits), copy=False)


class _Reader:
    """Codes of any box of a dense tensor's (padded) index space, read with temporaries the size
    of the box: no array of the tensor's size is ever built (HX-02). Row-major, column-major and
    plain tiled layouts read whole runs of bytes; the others gather through chunk-sized offsets,
    an axis whose offsets are all zero (stride 0) read once and broadcast."""

    def __init__(self, t: TensorContext, contents: Sequence[Any]) -> None:
        self.t = t
        self.extents = [t.padded.get(k, n) for k, n in enumerate(t.shape)]
        self.source = _Source(contents[0], t.d.byte_offset, _known_element(t).bits)
        self.dtype = code_dtype(_known_element(t).bits)
        self.code, self.what = size_code(t), f"{row_of(t.layout).title} addresses"
        layout = t.layout
        plain = (isinstance(layout, Tiled) and layout.nested is None and layout.outer_layout == TileOrder.ROW_MAJOR
                 and layout.inner_layout == TileOrder.ROW_MAJOR and len(layout.tile_shape) == t.rank)
        self.plain_tiles: Tiled | None = layout if plain and isinstance(layout, Tiled) else None
        if not isinstance(layout, (RowMajor, ColumnMajor)) and 0 not in self.extents:
            self._check_extremes()

    def _check_extremes(self) -> None:
        """The lowest and highest address of the whole tensor, before anything is read: each
        axis's term is evaluated in pieces (separable layouts), so this needs no large array."""
        window = self.source.window()
        if isinstance(self.t.layout, Hilbert):  # a 2^order cube, sized by HT-LAY-82
            low, high = 0, (1 << (self.t.layout.hilbert_order * self.t.rank)) - 1
        else:
            low = high = 0
            terms = Terms(window, self.code, self.what)
            piece = max(1, CHUNK)
            for k, n in enumerate(self.extents):
                lows, highs = [], []
                for first in range(0, n, piece):
                    ranges = [(0, 1)] * self.t.rank
                    ranges[k] = (first, min(n, first + piece))
                    term = axis_terms(self.t, self.extents, ranges, terms)[k]
                    lows.append(int(term.min()))
                    highs.append(int(term.max()))
                low, high = low + min(lows), high + max(highs)
        if low < window[0] or high > window[1]:
            outside(self.code, self.what, low, high, window)

    def box(self, box: Sequence[tuple[int, int]]) -> np.ndarray:
        """Codes of ``box`` (one ``(lo, hi)`` per axis), in row-major order of the box."""
        shape = tuple(hi - lo for lo, hi in box)
        if 0 in shape:
            return np.empty(shape, dtype=self.dtype)
        layout, e = self.t.layout, self.extents
        trailing = all(box[k] == (0, n) for k, n in enumerate(e) if k > 0)
        if isinstance(layout, (RowMajor, ColumnMajor)) and not e:  # a scalar: its one element
            return self.source.contiguous(0, 1).reshape(())
        if isinstance(layout, RowMajor) and trailing:
            inner = prod(e[1:])
            return self.source.contiguous(box[0][0] * inner, prod(shape)).reshape(shape)
        if isinstance(layout, RowMajor) and all(box[k] == (0, e[k]) for k in range(1, len(e) - 1)):
            runs = prod(e[1:-1])  # a window of the last axis in each of these stored rows: sliced bytes
            found = self._bytes(box[0][0] * runs * e[-1], (box[0][1] - box[0][0]) * runs, e[-1], *box[-1])
            if found is not None:
                return found.reshape(shape)
        if isinstance(layout, ColumnMajor) and trailing:  # stored row-major over the reversed shape
            slab = self._column_slab(box[0])
            if slab is not None:
                return np.ascontiguousarray(slab.reshape(tuple(e[1:][::-1]) + (shape[0],)).transpose())
        if self.plain_tiles is not None and trailing:
            return self._tile_rows(self.plain_tiles, box[0])
        return self._gathered(box, shape)

    def packed_box(self, box: Sequence[tuple[int, int]]) -> np.ndarray | None:
        """The codes of ``box`` packed as row-major bytes, when whole bytes can be moved to get
        them: 8-bit codes always; sub-byte codes for boxes of whole rows of whole bytes, from
        plain tiles whose rows are whole bytes, or (4-bit) column-major pairs of rows."""
        bits = _known_element(self.t).bits
        if bits == 8:
            return self.box(box)
        unit = storage.packing(bits)
        layout, e = self.t.layout, self.extents
        if bits == 6 or len(e) < 2 or e[-1] % unit.elements or any(box[k] != (0, n) for k, n in enumerate(e) if k):
            return None
        lo, hi = box[0]
        if self.plain_tiles is not None and self.plain_tiles.tile_shape[-1] % unit.elements == 0:
            return self._tile_rows(self.plain_tiles, box[0], unit)
        if isinstance(layout, ColumnMajor) and bits == 4 and e[0] % 2 == 0 and lo % 2 == 0 and hi % 2 == 0:
            return self._column_pairs(lo, hi)
        return None

    def _column_pairs(self, lo: int, hi: int) -> np.ndarray:
        """Rows ``lo .. hi`` (even) of a 4-bit column-major tensor as row-major bytes: each stored
        byte holds rows (2i, 2i + 1) of one column; nibbles of neighbouring columns pair up."""
        e = self.extents
        columns = prod(e[1:])
        at = self.source.start
        stored = self.source.raw[at: at + columns * e[0] // 2].reshape(tuple(e[1:][::-1]) + (e[0] // 2,))
        slab = np.ascontiguousarray(stored[..., lo // 2: hi // 2])  # first gathered run by run (page by page)
        part = np.ascontiguousarray(slab.transpose()).reshape(-1, columns)  # then transposed within the cache
        pairs = part.view(np.uint16)  # the bytes of columns 2j (low byte) and 2j + 1 of each row pair
        shifted = pairs >> 4
        result = np.empty((part.shape[0], 2, columns // 2), dtype=np.uint8)
        np.copyto(result[:, 0], (pairs & 0x000F) | (shifted & 0x00F0), casting="unsafe")  # rows 2i: low nibbles
        np.copyto(result[:, 1], (shifted & 0x000F) | ((pairs >> 8) & 0x00F0), casting="unsafe")  # 2i + 1: high
        return result.reshape(hi - lo, columns // 2)

    def _bytes(self, start: int, rows: int, length: int, lo: int, hi: int) -> np.ndarray | None:
        """Elements ``lo .. hi`` of ``rows`` stored runs of ``length`` elements from element
        ``start``: whole bytes sliced, then unpacked; None when runs do not start on a unit."""
        unit = storage.packing(_known_element(self.t).bits)
        if length % unit.elements or start % unit.elements:
            return None
        first, last = lo // unit.elements, -(-hi // unit.elements)
        per_run = length // unit.elements * unit.size
        at = self.source.start + start // unit.elements * unit.size
        raw = self.source.raw[at: at + rows * per_run].reshape(rows, per_run)
        part = np.ascontiguousarray(raw[:, first * unit.size: last * unit.size]).reshape(-1)
        width = (last - first) * unit.elements
        codes = storage.codes_at(part, _known_element(self.t).bits, 0, rows * width).reshape(rows, width)
        skip = lo - first * unit.elements
        return codes[:, skip: skip + hi - lo]

    def _column_slab(self, rows: tuple[int, int]) -> np.ndarray | None:
        """Rows ``rows`` of axis 0 of a column-major tensor: a slice of every stored run."""
        e = self.extents
        return self._bytes(0, prod(e[1:]), e[0], *rows)

    def _tile_rows(self, layout: Tiled, rows: tuple[int, int], unit: storage.Packing | None = None) -> np.ndarray:
        """Rows ``rows`` of axis 0, every other axis whole, of a tiled layout with row-major tile
        grid and interior: per tile row, the wanted rows of each tile, put side by side. With
        ``unit``, as packed bytes (each tile row a whole number of bytes, checked by the caller)."""
        e = list(self.extents)
        tile = list(layout.tile_shape)
        grid = [-(-n // size) for n, size in zip(e, tile)]
        per_tile, others = prod(tile), prod(grid[1:])
        r = len(tile)
        if unit is not None:  # the last axis counted in bytes
            tile[-1], e[-1] = tile[-1] // unit.elements * unit.size, e[-1] // unit.elements * unit.size
        inner = prod(tile[1:])
        order = [r - 1] + [x for k in range(r - 1) for x in (k, r + k)]  # (t0, g1, t1, g2, t2, ...)
        pieces = []
        lo, hi = rows
        for g in range(lo // layout.tile_shape[0], -(-hi // layout.tile_shape[0])):
            first = max(lo, g * tile[0]) - g * tile[0]
            last = min(hi, (g + 1) * tile[0]) - g * tile[0]
            if unit is None:
                codes = self.source.contiguous(g * others * per_tile, others * per_tile)
            else:
                at = self.source.start + g * others * per_tile // unit.elements * unit.size
                codes = self.source.raw[at: at + others * tile[0] * inner]
            codes = codes.reshape(others, tile[0], inner)[:, first:last]
            codes = codes.reshape(tuple(grid[1:]) + (last - first,) + tuple(tile[1:]))
            item = codes.dtype.itemsize
            rest_tile, rest_e = list(tile[1:]), list(e[1:])
            wide, unit_type = (max(1, 8 // item), np.dtype(np.uint64)) if codes.dtype.kind == "u" else (1, codes.dtype)
            if r > 1 and wide > 1 and rest_tile[-1] * item >= 64 and rest_e[-1] % rest_tile[-1] == 0:
                # a whole tile row at a time: NumPy copies raw elements of 64 bytes and more by memcpy,
                # faster than 8-byte words (16-32 byte raw elements are slower than words)
                wide, unit_type = rest_tile[-1], np.dtype(f"V{rest_tile[-1] * item}")
            if r > 1 and wide > 1 and rest_tile[-1] % wide == 0 and rest_e[-1] % wide == 0:  # 8 bytes or more at a time
                if codes.strides[-1] != item:  # a view of another width needs its last axis contiguous
                    codes = np.ascontiguousarray(codes)
                codes = codes.view(unit_type)  # no copy of part of a tile row: the transpose below copies once
                rest_tile[-1] //= wide
                rest_e[-1] //= wide
            sides = tuple(gk * tk for gk, tk in zip(grid[1:], rest_tile))
            laid = codes.transpose(order).reshape((last - first,) + sides)
            laid = np.ascontiguousarray(laid[(slice(None),) + tuple(slice(0, n) for n in rest_e)])
            pieces.append(laid.view(np.dtype(self.dtype) if unit is None else np.uint8))
        return np.ascontiguousarray(pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=0))

    def _gathered(self, box: Sequence[tuple[int, int]], shape: tuple[int, ...]) -> np.ndarray:
        layout = self.t.layout
        if isinstance(layout, Hilbert):
            grid = np.indices(shape, dtype=np.int64)
            offsets = hilbert_index([grid[k] + lo for k, (lo, _) in enumerate(box)], layout.hilbert_order)
            return self.source.gather(offsets)
        window = self.source.window()
        terms = axis_terms(self.t, self.extents, box, Terms(window, self.code, self.what))
        still = [not term.any() for term in terms]  # stride 0: one read, broadcast
        rank = len(terms)
        summed = sum(term[:1 if still[k] else None].reshape((1,) * k + (-1,) + (1,) * (rank - k - 1))
                     for k, term in enumerate(terms))
        codes = self.source.gather(np.asarray(summed, dtype=np.int64))
        return np.ascontiguousarray(np.broadcast_to(codes, shape)) if any(still) else codes


CHUNK = 1 << 18
"""Codes read at once by :func:`read_codes` (element access has no scale arrays to keep small)."""


Reading = Callable[[int, int], np.ndarray]


def dense_codes(data: DataContext) -> tuple[Reading, Callable[[int, int], np.ndarray | None]]:
    """``codes(start, stop)``: the codes at positions ``start .. stop`` of the padded row-major
    order (HD-12) of an already validated dense tensor, whatever its layout, and
    ``packed(start, stop)``: the same elements packed as row-major bytes when the layout gives
    them by moving whole bytes (else None); what the dequantization driver reads chunk by chunk."""
    t = data.t
    _known_element(t)
    _static(t, range(t.rank))
    reader = _Reader(t, data.buffers)
    codes = _window(reader, [0] * t.rank, reader.extents)

    def packed(start: int, stop: int) -> np.ndarray | None:
        found = []
        for box in flat_boxes(reader.extents, start, stop):
            part = reader.packed_box(box)
            if part is None:
                return None
            found.append(part.reshape(-1))
        return found[0] if len(found) == 1 else np.concatenate(found)

    return codes, packed


def _window(reader: _Reader, origin: Sequence[int], extents: Sequence[int]) -> Reading:
    def codes(start: int, stop: int) -> np.ndarray:
        found = [reader.box([(o + lo, o + hi) for o, (lo, hi) in zip(origin, box)]).reshape(-1)
                 for box in flat_boxes(extents, start, stop)]
        return found[0] if len(found) == 1 else np.concatenate(found)

    return codes


def padded_extents(data: DataContext) -> list[int]:
    """The index space element access reads: the logical shape, with the padded extent
    ``ceil(S/K)·K`` along a per-block or NF4 axis that ends in a partial block (HD-12)."""
    return [data.t.padded.get(k, n) for k, n in enumerate(data.t.shape)]


def window_codes(data: DataContext, origin: Sequence[int], extents: Sequence[int]) -> Reading:
    """``codes(start, stop)``: positions ``start .. stop`` of the row-major order of the box of
    ``extents`` at ``origin`` of the padded index space (:func:`padded_extents`) of an already
    validated dense tensor. Only the bytes of the box are read (whole runs for row-major,
    column-major and plain tiles, chunk-sized gathers for the others): what a window of a
    tensor dequantizes from."""
    t = data.t
    _known_element(t)
    _static(t, range(t.rank))
    reader = _Reader(t, data.buffers)
    if len(origin) != t.rank or len(extents) != t.rank or any(
            o < 0 or n < 0 or o + n > e for o, n, e in zip(origin, extents, reader.extents)):
        raise ArgumentError("window", "a window lies inside the tensor's index space",
                            actual=f"origin {list(origin)}, extents {list(extents)}",
                            expected=f"within {reader.extents}")
    return _window(reader, origin, extents)


def window_bytes(data: DataContext, origin: Sequence[int], extents: Sequence[int]) -> np.ndarray | None:
    """The codes of the box :func:`window_codes` reads, packed as the row-major bytes of a tensor
    of shape ``extents``, when whole bytes can be moved to get them: a row-major tensor whose
    stored rows and box edges along the last axis fall on packing units (every width of a
    byte or more; 1-, 2- and 4-bit codes on even units). A strided copy of the box's rows: only
    their bytes are touched. None otherwise (read the codes instead)."""
    t = data.t
    bits = _known_element(t).bits
    _static(t, range(t.rank))
    if not isinstance(t.layout, RowMajor) or not t.rank or 0 in extents:
        return None
    unit = storage.packing(bits)
    e = [t.padded.get(k, n) for k, n in enumerate(t.shape)]
    lo, hi = origin[-1], origin[-1] + extents[-1]
    if e[-1] % unit.elements or lo % unit.elements or (hi % unit.elements and hi != e[-1]):
        return None
    row_bytes = unit.bytes(e[-1])
    raw = np.frombuffer(data.buffers[0], dtype=np.uint8)[t.d.byte_offset: t.d.byte_offset + prod(e[:-1]) * row_bytes]
    grid = raw.reshape(tuple(e[:-1]) + (row_bytes,))
    box = tuple(slice(o, o + n) for o, n in zip(origin[:-1], extents[:-1])) + (
        slice(unit.byte_of(lo), unit.bytes(hi)),)
    return np.ascontiguousarray(grid[box]).reshape(-1)


# ---------------------------------------------------------------- public API


def read_codes(data: DataContext, *, padded: bool) -> np.ndarray:
    """Codes of an already validated dense tensor in row-major order: the logical shape, or the
    padded extent along a quantized axis with a partial block when ``padded`` (HD-12)."""
    t = data.t
    _known_element(t)
    _static(t, range(t.rank))
    limits = [t.padded.get(k, n) if padded else n for k, n in enumerate(t.shape)]
    result = storage.allocate(tuple(limits), code_dtype(_known_element(t).bits), "element access")  # HX-01
    if result.size == 0:
        return result
    reader = _Reader(t, data.buffers)
    flat = result.reshape(-1)
    for start in range(0, result.size, CHUNK):
        stop = min(result.size, start + CHUNK)
        at = start
        for box in flat_boxes(limits, start, stop):
            codes = reader.box(box).reshape(-1)
            flat[at: at + codes.size] = codes
            at += codes.size
    return result


def logical_codes(descriptor: TensorDescriptor, buffers: Sequence[Any]) -> np.ndarray:
    """The raw codes of a dense tensor in logical row-major order, shaped like the tensor.

    Row-major, column-major, strided (negative and zero strides), tiled (nested, tile padding
    never read, HT-LAY-14), Morton and Hilbert. The buffers are validated first (every data rule
    but the zero padding of partial blocks, which is never read here either). Sparse, block-paged,
    composite and private layouts are refused with their defining rule.
    """
    return read_codes(_checked(descriptor, buffers, "logical_codes"), padded=False)


def stored_codes_row_major(descriptor: TensorDescriptor, buffers: Sequence[Any]) -> np.ndarray:
    """Like :func:`logical_codes`, but with the padded extent ``ceil(S/K)·K`` along a per-block or
    NF4 axis that ends in a partial block (HD-12), padding codes as stored: the row-major stored
    form of the same tensor, which the dequantization kernels read."""
    return read_codes(_checked(descriptor, buffers, "stored_codes_row_major"), padded=True)


@dataclass(frozen=True)
class PagedCodes:
    """One sequence of a block-paged tensor.

    ``codes`` is ``(tokens, num_heads, head_dim)``; ``slots[t]`` is the page slot of token ``t``,
    ``p × page_size + t mod page_size``: the index of its scale and zero point under per-block
    affine (HT-LAY-67, HD-17).
    """

    codes: np.ndarray
    slots: np.ndarray


def block_paged_codes(descriptor: TensorDescriptor, buffers: Sequence[Any], seq: int, *,
                      tokens: int | None = None) -> PagedCodes:
    """The valid tokens of sequence ``seq`` by the block-paged lookup (HT-LAY-67).

    A sequence's token count is not stored in the descriptor: pass ``tokens``, or leave it out
    when the page counts and ``shape[0]`` (the total) pin it down, every sequence filling its
    pages but the last one partly. Slots past the token count are never read (HT-LAY-66).
    """
    d = descriptor
    if not isinstance(d, TensorDescriptor):
        raise RuleViolation("HT-HDR-02", "block_paged_codes takes a TensorDescriptor", path="descriptor",
                            actual=type(d).__name__, expected="TensorDescriptor")
    layout = d.layout
    if not isinstance(layout, BlockPaged):
        raise UnsupportedError("HT-LAY-53", "block_paged_codes reads block-paged tensors; use logical_codes "
                               "for dense layouts", path="descriptor -> layout_tag",
                               actual=row_of(layout).title, expected="block-paged")
    data = validate_buffers(d, buffers)
    t = data.t
    _known_element(t)
    _static(t, (1, 2))
    if not 0 <= seq < layout.num_seqs:
        raise RuleViolation("HT-LAY-67", "no such sequence", path="seq", actual=seq,
                            expected=f"0 <= seq < num_seqs {layout.num_seqs}")
    index = "<u4" if layout.index_width == 4 else "<u8"
    table = np.frombuffer(data.buffers[1], dtype=index)
    starts = np.frombuffer(data.buffers[2], dtype=index).astype(np.int64)
    pages = table[starts[seq]:starts[seq + 1]].astype(np.int64)
    room = pages.size * layout.page_size
    if tokens is None:
        tokens = _sequence_tokens(t, layout, np.diff(starts), seq)
    if not 0 <= tokens <= room:
        raise RuleViolation("HT-LAY-66", "a sequence holds no more tokens than its pages have slots",
                            path="tokens", actual=tokens, expected=f"0..{room} ({pages.size} pages)")
    heads, dim = t.shape[1], t.shape[2]
    token = np.arange(tokens, dtype=np.int64)
    slots = pages[token // layout.page_size] * layout.page_size + token % layout.page_size
    offsets = ((slots[:, None, None] * heads + np.arange(heads, dtype=np.int64)[None, :, None]) * dim
               + np.arange(dim, dtype=np.int64)[None, None, :])
    codes = _Source(data.buffers[0], 0, _known_element(t).bits).gather(offsets)
    return PagedCodes(codes, slots)


def _sequence_tokens(t: TensorContext, layout: BlockPaged, pages: np.ndarray, seq: int) -> int:
    """The token count of ``seq`` when shape[0] and the page counts leave one choice.

    Sequence s holds between (pages_s − 1)·page_size + 1 and pages_s·page_size tokens (0 with no
    page); the others' bounds narrow that range given the total.
    """
    total: int = t.shape[0]
    high = pages * layout.page_size
    low = np.where(pages > 0, high - layout.page_size + 1, 0)
    if total != DYNAMIC:
        all_low, all_high = int(low.sum()), int(high.sum())
        least = max(int(low[seq]), total - (all_high - int(high[seq])))
        most = min(int(high[seq]), total - (all_low - int(low[seq])))
        if least == most:
            return least
        if least > most:
            raise RuleViolation("HT-LAY-66", "shape[0] does not fit the sequences' pages",
                                path="descriptor -> shape -> 0", actual=total,
                                expected=f"{all_low}..{all_high} tokens for these page counts")
    raise UnsupportedError("HT-LAY-66", f"the token count of sequence {seq} is not recorded in the descriptor; "
                           "pass tokens=", path="tokens", actual=None,
                           expected=f"{low[seq]}..{high[seq]}")
