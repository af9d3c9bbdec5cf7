"""Vectorised, chunked dequantization machinery shared by the scheme kernels.

A tensor quantized along ``axis`` is viewed, in its padded row-major order (HD-12), as
``(A, P, B)``: ``A`` the product of the dimensions before the axis, ``P`` the padded extent of
the axis, ``B`` the product of the dimensions after it. Blocks of ``K`` elements along the axis
make it ``(A, nb, K, B)``; one *block row* ``(a, j)`` is ``L = K * B`` consecutive elements.

A scheme's :class:`Plan` states its formula declaratively: ``out = table[key, q] * scale``,
with ``table`` the float32 value of every code under every key (the zero point or the
exponent folded in), ``key`` and ``scale`` given per block row and lane (the index along
``B``), or, for storage wider than a byte, ``out = float32(value(q) - zero) * scale``. The
driver walks the stored order in chunks of at most :data:`CHUNK_ELEMENTS` elements (whole
block rows, part of one block row, or part of one row of it), picks the cheapest evaluation of
the formula for the chunk (one ``take`` of a per-byte table of packed values when every byte
of a chunk shares its key, else one ``take`` per element), and writes into the output. Extra
memory is a few chunk-sized temporaries per thread (RULES.md HX-02), whatever the tensor.

This module holds the driver (chunks, evaluation, quantization part by part); the plan, its
geometry and its value tables are :mod:`.plan`, the affine schemes' shared arithmetic
:mod:`.affine`, and every name of both is re-exported here.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, overload

from hurray_decl.errors import ArgumentError
from hurray_decl.hurray.kernels.affine import (
    affine_calibration as affine_calibration,
    affine_codes as affine_codes,
    block_order as block_order,
    by_block_row as by_block_row,
    cast_up as cast_up,
    code_type as code_type,
    integer_range as integer_range,
    padded_codes as padded_codes,
    refuse_unsigned_negatives as refuse_unsigned_negatives,
)
from hurray_decl.hurray.kernels.plan import (
    Box as Box,
    Geometry as Geometry,
    Kernel as Kernel,
    Plan as Plan,
    Quantized as Quantized,
    affine_plan as affine_plan,
    affine_table as affine_table,
    byte_codes as byte_codes,
    code_values as code_values,
    fold_zero_points as fold_zero_points,
    packed_table as packed_table,
    pair_table as pair_table,
    storage_bits as storage_bits,
)
from hurray_decl.hurray.tables import storage
from hurray_decl.lazy_modules import numpy as np

CHUNK_ELEMENTS = 1 << 17
"""Elements per chunk (4K blocks of 32): a chunk's output (512 KiB) and its temporaries stay
within one core's 2 MiB L2 (measured 3-15% faster single-threaded than 8K blocks). Tests
lower it (``monkeypatch.setattr(kernels, "CHUNK_ELEMENTS", 5)``) to cross chunk edges; it is
read at every call."""

LARGE_CHUNKS = 2
"""Several threads, and layouts other than row-major (codes read chunk by chunk through the
layout's reader), take chunks this many times larger: fewer hand-offs between threads and fewer
reads (measured on 2 cores: threads 20-25% faster, tiled and column-major 3-10%; one thread on
row-major data is faster with the smaller chunks)."""


# --- chunks --------------------------------------------------------------------------------

def boxes(geometry: Geometry, bits: int, scale: int = 1) -> Iterator[Box]:
    """The chunks of a tensor, in stored order, each at most about ``scale`` times
    :data:`CHUNK_ELEMENTS` elements: whole outer indices when they fit, else whole block rows of one outer index, else
    part of one block row (``ks``), else part of one row of it (``lanes``). Row counts are
    multiples of whole packing units where that keeps the bound, so chunks start on a byte."""
    g = geometry
    budget = max(1, CHUNK_ELEMENTS * scale)
    k, b, nb = g.block, g.after, g.blocks_per_axis
    length = g.row_elements
    unit = storage.packing(bits).elements
    full = slice(0, b)
    per_outer = nb * length
    if per_outer <= budget:
        together = unit // np.gcd(per_outer, unit)  # outer indices that end on a unit boundary
        step = max(together, budget // per_outer // together * together) * nb
        for first in range(0, g.block_rows, step):
            last = min(g.block_rows, first + step)
            yield Box(slice(first, last), slice(0, k), full, first * length, last * length)
    elif length <= budget:
        step = budget // length
        for a in range(g.before):
            for j in range(0, nb, step):
                first, last = a * nb + j, a * nb + min(nb, j + step)
                yield Box(slice(first, last), slice(0, k), full, first * length, last * length)
    elif b <= budget:
        step = budget // b
        for r in range(g.block_rows):
            for first in range(0, k, step):
                last = min(k, first + step)
                yield Box(slice(r, r + 1), slice(first, last), full, r * length + first * b, r * length + last * b)
    else:
        for r in range(g.block_rows):
            for i in range(k):
                at = r * length + i * b
                for first in range(0, b, budget):
                    last = min(b, first + budget)
                    yield Box(slice(r, r + 1), slice(i, i + 1), slice(first, last), at + first, at + last)


def workers() -> int:
    """Threads for dequantization: the usable cores (NumPy releases the GIL), at most 4."""
    count = getattr(os, "process_cpu_count", os.cpu_count)() or 1
    return max(1, min(4, count))


def thread_count(threads: Any) -> int:
    """``threads`` checked (a positive integer), or the default :func:`workers`."""
    if threads is None:
        return workers()
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ArgumentError("threads", "threads is a positive integer", actual=threads, expected=">= 1")
    return int(threads)


# --- evaluation ----------------------------------------------------------------------------

@overload
def _at(array: np.ndarray, box: Box) -> np.ndarray: ...


@overload
def _at(array: None, box: Box) -> None: ...


@overload
def _at(array: np.ndarray | None, box: Box) -> np.ndarray | None: ...


def _at(array: np.ndarray | None, box: Box) -> np.ndarray | None:
    """A parameter array over the chunk's rows and lanes: (rows, 1, lanes), or (1, 1, lanes)."""
    if array is None:
        return None
    n = array.shape[0]
    lanes = box.lanes if array.shape[2] > 1 else slice(None)
    if n == 1:
        return array[:, :, lanes]
    rows = box.rows
    if rows.stop <= n:
        return array[rows, :, lanes]
    picked: np.ndarray = array[np.arange(rows.start, rows.stop) % n]
    return picked[:, :, lanes]


Repeat = Callable[["np.ndarray", int], "np.ndarray"]
"""``np.repeat`` of a 1-D array, or :func:`broadcast_repeat` (the same values) on threads."""


def broadcast_repeat(values: np.ndarray, count: int) -> np.ndarray:
    """``np.repeat(values, count)`` of a 1-D array by a broadcast copy: ``np.repeat`` holds the
    GIL throughout (NumPy's PyArray_Repeat never releases it), a copy releases it, so threads
    expand their chunks' parameters at the same time (single-threaded, ``np.repeat`` is faster)."""
    result = np.empty(values.size * count, dtype=values.dtype)
    np.copyto(result.reshape(values.size, count), values[:, None])
    return result


def _spread(values: np.ndarray, shape: tuple[int, int, int], repeat: Repeat) -> np.ndarray:
    """Row parameters (rows, 1, 1) repeated into a contiguous chunk when rows are short (a
    broadcast multiply over short rows costs twice a contiguous one)."""
    if values.shape[0] > 1 and values.shape[2] == 1 and shape[1] * shape[2] < 256:
        return repeat(values.ravel(), shape[1] * shape[2]).reshape(shape)
    return values


def _scale(plan: Plan, box: Box, out: np.ndarray, repeat: Repeat) -> None:
    scales = _at(plan.scales, box)
    if scales is not None:
        if scales.dtype.itemsize == 2:  # float16 / bfloat16 widen exactly (HQ-PB-21), chunk by chunk
            scales = scales.astype(np.float32)
        if plan.overflows:  # an infinity is the specified result, not a fault to warn about
            with np.errstate(over="ignore"):
                np.multiply(out, _spread(scales, out.shape, repeat), out=out)
        else:
            np.multiply(out, _spread(scales, out.shape, repeat), out=out)


def _keyed_index(base: np.ndarray, raw: np.ndarray, repeat: Repeat) -> np.ndarray:
    """``base[r] | byte`` for every byte of row ``r`` (uint16; ``base`` holds ``key * 256``, so OR
    adds, and costs less). Rows of a multiple of four bytes repeat four keys packed in one uint64:
    a quarter of the items to copy."""
    per = raw.size // base.size
    if per % 4 == 0:
        index = repeat(base.astype(np.uint64) * np.uint64(0x0001_0001_0001_0001), per // 4).view(np.uint16)
    else:
        index = repeat(base, per)
    np.bitwise_or(index, raw, out=index)
    return index


def _from_bytes(plan: Plan, table: np.ndarray, raw: np.ndarray, box: Box, out: np.ndarray, repeat: Repeat) -> None:
    """One take of the per-byte ``table`` (``plan.table``): every byte's elements share their key
    (checked by the caller)."""
    if (plan.key_base is None and table.shape[1] == 256 and not table.flags.writeable
            and raw.size % 2 == 0 and box.start % 2 == 0):  # two bytes per take, from a shared table (built once)
        pairs = plan.pairs
        pairs.take(raw.view(np.uint16), out=out.ravel().view(pairs.dtype), mode="wrap")
        _scale(plan, box, out, repeat)
        return
    packed = plan.packed
    target = out.ravel().view(packed.dtype)
    key_base = plan.key_base
    if key_base is None:
        packed.take(raw, out=target, mode="wrap")
    else:
        packed.take(_keyed_index(_at(key_base, box).ravel(), raw, repeat), out=target, mode="wrap")
    _scale(plan, box, out, repeat)


def _from_codes(plan: Plan, codes: np.ndarray, box: Box, out: np.ndarray, storage_name: str, repeat: Repeat) -> None:
    """One take per element: ``table[key, q]``, or the wide-storage formula."""
    shape = box.shape
    codes = codes.reshape(shape)
    if plan.kernel is not None:
        plan.kernel(_decoded(codes, storage_name, plan.value_map), box, out)
        return
    if plan.table is not None:
        table = plan.table.ravel()
        keys = _at(plan.keys, box)
        if keys is None:
            table.take(codes, out=out, mode="wrap")
        else:
            index = (_spread(keys, shape, repeat).astype(np.uint16) << np.uint16(storage_bits(plan.table))) + codes
            table.take(index, out=out, mode="wrap")
        _scale(plan, box, out, repeat)
        return
    values = _decoded(codes, storage_name, None)
    zeros = _at(plan.zeros, box)
    if values.dtype == np.int64:  # 32-bit storage: the difference may exceed float32's integers
        np.copyto(out, values if zeros is None else values - zeros, casting="unsafe")
    else:  # codes up to 16 bits and their zero points are exact in float32, so is the difference
        np.copyto(out, values, casting="unsafe")
        if zeros is not None:
            np.subtract(out, _spread(zeros, shape, repeat), out=out)
    _scale(plan, box, out, repeat)


def _decoded(codes: np.ndarray, storage_name: str, value_map: tuple[float, ...] | None) -> np.ndarray:
    """Codes as numbers: float32 through the code table up to 8 bits, else the storage dtype
    (32-bit integers as int64, so that ``q - z`` is exact, HD-13)."""
    bits = storage.element(storage_name).bits
    if bits < 8 or value_map is not None or storage_name in storage.NARROW_FLOATS:
        return np.take(code_values(storage_name, value_map), codes)
    values = storage.decode(np.ascontiguousarray(codes).view(np.uint8), storage_name, codes.size).reshape(codes.shape)
    integral = np.issubdtype(values.dtype, np.integer)
    if integral and values.dtype.itemsize >= 4:
        return values.astype(np.int64)
    return values if integral else values.astype(np.float32)


def row_major_codes(data: np.ndarray, bits: int) -> Callable[[int, int], np.ndarray]:
    """Codes of stored elements ``start .. stop`` of contiguous packed ``data``."""
    return lambda start, stop: storage.codes_at(data, bits, start, stop - start)


def _writer(g: Geometry, out: np.ndarray) -> Callable[[Box], tuple[np.ndarray, Callable[[np.ndarray], None] | None]]:
    """Where a chunk's values go: straight into ``out`` when stored and logical order coincide,
    else a temporary whose logical part is copied (padding of partial blocks dropped, HQ-PB-19)."""
    flat = out.ravel()
    if g.padded == g.extent:
        return lambda box: (flat[box.start: box.stop].reshape(box.shape), None)
    target = out.reshape(g.before, g.extent, g.after)
    k, nb = g.block, g.blocks_per_axis

    def place(box: Box) -> tuple[np.ndarray, Callable[[np.ndarray], None]]:
        def copy(result: np.ndarray) -> None:
            first, last = box.rows.start, box.rows.stop
            a, j = divmod(first, nb)
            if j == 0 and last % nb == 0:  # whole outer indices
                whole = (last - first) // nb
                target[a:a + whole] = result.reshape(whole, g.padded, g.after)[:, : g.extent]
                return
            lo = j * k + box.ks.start
            hi = min(g.extent, (last - 1 - a * nb) * k + box.ks.stop)
            if hi > lo:
                n, m, width = result.shape
                target[a, lo:hi, box.lanes] = result.reshape(n * m, width)[: hi - lo]

        return np.empty(box.shape, np.float32), copy

    return place


def run(plan: Plan, storage_name: str, out: np.ndarray, *, data: np.ndarray | None = None,
        codes: Callable[[int, int], np.ndarray] | None = None,
        packed: Callable[[int, int], np.ndarray | None] | None = None,
        progress: Callable[[int, int], None] | None = None, threads: int | None = None) -> np.ndarray:
    """Dequantize into ``out`` (the logical shape, C order): from ``data``, the packed bytes of
    the padded row-major order, or from ``codes(start, stop)``, the codes of any other layout in
    that order (and ``packed(start, stop)``, the same as packed bytes when the layout can give
    them cheaply, else None). Chunks write disjoint parts of ``out`` on ``threads`` threads (default: the
    cores), each thread taking the next chunk, one at a time; ``progress(done, total)`` counts elements.
    """
    g = plan.geometry
    bits = storage.element(storage_name).bits
    count = thread_count(threads)
    unit = storage.packing(bits)
    large = count > 1 or codes is not None
    if codes is None:
        if data is None:
            raise ArgumentError("data", "dequantization reads data bytes or a codes function", expected="one of them")
        codes = row_major_codes(data, bits)
        packed = lambda start, stop: data[unit.byte_of(start): unit.bytes(stop)]  # noqa: E731
    by_bytes = (packed is not None and plan.table is not None and plan.kernel is None and bits in (1, 2, 4, 8)
                and (plan.keys is None or (plan.keys.shape[2] == 1 and g.row_elements % unit.elements == 0)))
    place = _writer(g, out)
    total = g.stored_elements
    repeat = np.repeat if count == 1 else broadcast_repeat

    def one(box: Box) -> int:
        target, copy = place(box)
        aligned = box.start % unit.elements == 0 and box.stop % unit.elements == 0
        raw = None
        if by_bytes and packed is not None and aligned and box.lanes.stop - box.lanes.start == g.after and (
                plan.keys is None or box.ks.stop - box.ks.start == g.block):
            raw = packed(box.start, box.stop)
        if raw is not None and plan.table is not None:  # by_bytes: there is a table
            _from_bytes(plan, plan.table, raw, box, target, repeat)
        else:
            _from_codes(plan, codes(box.start, box.stop), box, target, storage_name, repeat)
        if copy is not None:
            copy(target)
        return box.stop - box.start

    in_turn(boxes(g, bits, LARGE_CHUNKS if large else 1), one, count, progress, total)
    return out


def in_turn(work: Iterator[Any], one: Callable[[Any], int], count: int,
            progress: Callable[[int, int], None] | None = None, total: int = 0) -> None:
    """``one(chunk)`` for every chunk of ``work`` on ``count`` threads (the calling thread one of
    them), each thread taking the next chunk, one at a time; ``one`` returns the elements it
    finished, passed on as ``progress(done, total)``. The first failure stops every thread after
    its chunk and is raised in the calling thread. Chunks must touch disjoint memory."""
    done = 0
    lock = threading.Lock()
    failures: list[BaseException] = []

    def worker() -> None:  # each thread takes the next chunk until none is left or one failed
        nonlocal done
        while True:
            with lock:
                chunk = None if failures else next(work, None)
            if chunk is None:
                return
            try:
                finished = one(chunk)
                with lock:
                    done += finished
                    if progress is not None:
                        progress(done, total)
            except BaseException as exc:  # re-raised in the calling thread below
                with lock:
                    failures.append(exc)
                return

    helpers = [threading.Thread(target=worker, daemon=True) for _ in range(count - 1)]
    for thread in helpers:
        thread.start()
    try:
        worker()  # the calling thread works too
        for thread in helpers:
            thread.join()
    except BaseException as exc:  # e.g. Ctrl-C while waiting: the helpers stop after their chunk
        with lock:
            failures.append(exc)
        for thread in helpers:
            thread.join()
        raise
    if failures:
        raise failures[0]


# --- quantization, part by part ------------------------------------------------------------

@dataclass(frozen=True)
class Part:
    """Whole blocks quantized together: outer indices ``outer``, blocks ``blocks`` along the
    axis, lanes ``lanes`` (indices along ``B``); every element of each block, so that a part
    calibrates its blocks on its own."""

    outer: slice
    blocks: slice
    lanes: slice

    @property
    def shape(self) -> tuple[int, int, int]:
        """(outer indices, blocks, lanes): the shape of the part's per-block values."""
        return (self.outer.stop - self.outer.start, self.blocks.stop - self.blocks.start,
                self.lanes.stop - self.lanes.start)


def parts(geometry: Geometry, bits: int) -> tuple[list[Part], bool]:
    """The parts of a tensor, in stored order, each of about :data:`CHUNK_ELEMENTS` elements (at
    least one block): whole outer indices when they fit, else whole block rows of one outer index,
    else one block over a range of lanes. And whether every part's codes start and end on a whole
    packing unit (a multiple of bytes), so that parts never share a byte of the data buffer."""
    g = geometry
    if g.stored_elements == 0:
        return [], True
    budget = max(1, CHUNK_ELEMENTS)
    k, b, nb, length = g.block, g.after, g.blocks_per_axis, g.row_elements
    unit = storage.packing(bits).elements
    full = slice(0, b)
    per_outer = nb * length
    if per_outer <= budget:
        together = unit // np.gcd(per_outer, unit)  # outer indices that end on a unit boundary
        step = max(together, budget // per_outer // together * together)
        return [Part(slice(a, min(g.before, a + step)), slice(0, nb), full) for a in range(0, g.before, step)], True
    if length <= budget:
        step = budget // length
        return [Part(slice(a, a + 1), slice(j, min(nb, j + step)), full)
                for a in range(g.before) for j in range(0, nb, step)], length % unit == 0
    width = max(1, budget // k)
    if b % unit == 0:
        width = max(unit, width // unit * unit)
    return [Part(slice(a, a + 1), slice(j, j + 1), slice(i, min(b, i + width)))
            for a in range(g.before) for j in range(nb) for i in range(0, b, width)], b % unit == 0


def part_values(x: np.ndarray, geometry: Geometry, part: Part) -> np.ndarray:
    """The part's elements of ``x`` (the logical array, C order) as (outer, blocks, K, lanes),
    in ``x``'s dtype: a view, or a copy with the partial final block padded with zeros (which
    change no block's minimum or maximum once 0 is in the range, and get code 0 after)."""
    g = geometry
    x3 = x.reshape(g.before, g.extent, g.after)
    na, nj, nl = part.shape
    first, last = part.blocks.start * g.block, part.blocks.stop * g.block
    values = x3[part.outer, first: min(last, g.extent), part.lanes]
    if last > g.extent:
        padded = np.zeros((na, last - first, nl), dtype=x.dtype)
        padded[:, : g.extent - first] = values
        values = padded
    return values.reshape(na, nj, g.block, nl)


@lru_cache(maxsize=8)
def row_starts(rows: int, length: int) -> np.ndarray:
    """``arange(rows) * length`` (read-only): the first element of each row, for every part of a size."""
    return storage.read_only(np.arange(rows, dtype=np.intp) * length)


def block_extreme(values: np.ndarray, largest: bool) -> np.ndarray:
    """The largest (or smallest) element of every block of ``values`` (outer, blocks, K, lanes),
    as (outer, blocks, lanes), 0 included as the initial value; NaN-free input. Found by
    ``argmax`` and a gather: NumPy's arg-reductions run vectorised along a row of K elements,
    where ``max(axis=2)`` makes one inner-loop call per block (about twice as long)."""
    na, nj, k, nl = values.shape
    if nl == 1 and values.flags.c_contiguous:  # blocks of one lane, one after another: a flat gather
        rows = values.reshape(na * nj, k)
        at = (rows.argmax if largest else rows.argmin)(axis=1)
        found = rows.ravel().take(row_starts(rows.shape[0], k) + at).reshape(na, nj, 1)
    else:
        where = (values.argmax if largest else values.argmin)(axis=2)[:, :, None, :]
        found = np.take_along_axis(values, where, axis=2)[:, :, 0, :]
    extreme: np.ndarray = np.maximum(found, 0) if largest else np.minimum(found, 0)
    return extreme


def clear_padding(codes: np.ndarray, geometry: Geometry, part: Part) -> np.ndarray:
    """``codes`` (outer, blocks, K, lanes) of ``part`` with its padding elements set to code 0 (HQ-PB-18)."""
    g = geometry
    if part.blocks.stop == g.blocks_per_axis and g.padded != g.extent:
        codes[:, -1, g.extent - (g.blocks_per_axis - 1) * g.block:, :] = 0
    return codes


def per_block(values: np.ndarray, part: Part) -> tuple[slice, slice, slice]:
    """Where a part's per-block values (outer, blocks, lanes) go in an (A, B, nb) array: the
    scheme's block order b = (a * B + i_after) * nb + j, as ``values.transpose(0, 2, 1)``."""
    return part.outer, part.lanes, part.blocks


class Codes:
    """The data buffer of a tensor in its padded row-major order, filled part by part.

    ``put`` takes a part's element codes (integers, or the values of a float storage type) as
    (outer, blocks, K, lanes) and packs them in place. When parts start and end on whole units
    (:func:`parts`) each writes its own bytes; otherwise bits are merged into the zeroed buffer
    (one thread: neighbouring parts share a byte).
    """

    def __init__(self, geometry: Geometry, storage_name: str, aligned: bool) -> None:
        self.geometry = geometry
        self.storage_name = storage_name
        self.bits = storage.element(storage_name).bits
        self.unit = storage.packing(self.bits)
        self.aligned = aligned
        self.integer = code_type(storage_name) if storage.element(storage_name).int_range else None
        self.data = np.zeros(self.unit.bytes(geometry.stored_elements), dtype=np.uint8)

    def put(self, part: Part, codes: np.ndarray) -> int:
        """Pack ``codes`` of ``part``; the number of elements written."""
        g = self.geometry
        start = ((part.outer.start * g.blocks_per_axis + part.blocks.start) * g.block) * g.after + part.lanes.start
        if part.lanes.stop - part.lanes.start == g.after:
            self._run(start, codes.ravel())
        else:  # one block over some lanes: one run per position in the block
            for i in range(g.block):
                self._run(start + i * g.after, codes[0, 0, i])
        return codes.size

    def _run(self, start: int, codes: np.ndarray) -> None:
        unit = self.unit
        first = unit.byte_of(start)
        if self.aligned:
            self._encode(codes, self.data[first: first + unit.bytes(codes.size)])
            return
        skip = start % unit.elements  # leading zero codes (zero bits) put the run on its unit's bits
        if skip:
            codes = np.concatenate([np.zeros(skip, dtype=codes.dtype), codes])
        raw = np.empty(unit.bytes(codes.size), dtype=np.uint8)
        self._encode(codes, raw)
        self.data[first: first + raw.size] |= raw

    def _encode(self, codes: np.ndarray, target: np.ndarray) -> None:
        """``storage.encode`` of ``codes`` into ``target``; 8-bit and 4-bit integer codes (integral
        floats, or integers, in range) directly."""
        integer = self.integer
        if integer is not None and self.bits == 8:
            np.copyto(target.view(integer), codes, casting="unsafe")  # integral values convert exactly
        elif integer is not None and self.bits == 4 and codes.size % 2 == 0:
            pairs = codes.astype(integer).view("<u2")  # element 0 in the low byte, LSB first
            nibbles = pairs & np.uint16(0x0F0F)
            nibbles |= nibbles >> np.uint16(4)
            np.copyto(target, nibbles, casting="unsafe")  # the low byte: element 1's nibble above element 0's
        else:
            target[...] = np.frombuffer(storage.encode(codes, self.storage_name), dtype=np.uint8)
