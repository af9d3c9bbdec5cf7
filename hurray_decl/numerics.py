"""Vectorised, chunked dequantization machinery shared by the scheme kernels.

A row-major tensor quantized along ``axis`` is viewed as ``(A, P, B)``: ``A`` the product of the
dimensions before the axis, ``P`` the (padded) extent of the axis, ``B`` the product of the
dimensions after it. Blocks of ``K`` elements along the axis make it ``(A, nb, K, B)``; one
"block row" ``(a, j)`` is ``K * B`` contiguous elements of the data buffer. The driver walks
the data in chunks of whole block rows, turns each chunk's bytes into float32 values through a
per-byte lookup table, hands them to the scheme's kernel together with the block rows they
cover, and writes the result into the output. Extra memory is bounded by the chunk size, not
by the tensor.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from math import gcd, prod
from typing import Any, Callable, Protocol

from .lazy_modules import numpy as np

from . import storage
from .errors import RuleViolation

CHUNK_ELEMENTS = 1 << 16
"""Elements per chunk: small enough that a chunk's temporaries stay in a core's cache."""


@dataclass(frozen=True)
class Geometry:
    """Block geometry of one quantized axis (HQ-PB-15, HD-12).

    ``block`` is ``K``; the per-tensor and per-channel schemes use one block spanning the axis.
    """

    shape: tuple[int, ...]
    axis: int
    block: int

    @property
    def before(self) -> int:
        return prod(self.shape[: self.axis])

    @property
    def extent(self) -> int:
        return self.shape[self.axis] if self.shape else 1

    @property
    def after(self) -> int:
        return prod(self.shape[self.axis + 1:])

    @property
    def blocks_per_axis(self) -> int:
        return -(-self.extent // self.block) if self.block else 0

    @property
    def padded(self) -> int:
        return self.blocks_per_axis * self.block

    @property
    def num_blocks(self) -> int:
        """Blocks in the tensor: blocks_per_axis times every other dimension."""
        return self.blocks_per_axis * self.before * self.after

    @property
    def block_rows(self) -> int:
        return self.before * self.blocks_per_axis

    @property
    def stored_elements(self) -> int:
        """Elements the data buffer holds, padding included."""
        return self.before * self.padded * self.after


@dataclass(frozen=True)
class Plan:
    """How a scheme dequantizes one tensor: its block geometry, its kernel, and (NF4) the
    table mapping codes to values before the kernel runs."""

    geometry: Geometry
    kernel: "Kernel"
    value_map: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Quantized:
    """What a scheme's ``quantize`` returns: the descriptor model, the element codes (or
    narrow-float values) in stored order, and the parameter arrays in buffer order."""

    model: Any
    elements: np.ndarray
    parameters: tuple[np.ndarray, ...]


class Kernel(Protocol):
    def __call__(self, values: np.ndarray, rows: slice, out: np.ndarray) -> None:
        """Write the dequantized ``values`` (rows, K, B), block rows ``rows``, into ``out``."""


@lru_cache(maxsize=None)
def byte_table(storage_name: str, value_map: tuple[float, ...] | None = None) -> np.ndarray:
    """The float32 values of the elements packed in every byte value, one row per byte value.

    Each row is viewed as one unsigned integer holding all its elements, so a single 1-D
    ``take`` unpacks a whole chunk. Integer codes of at most 8 bits are exact in float32;
    ``value_map`` (NF4) maps codes to their levels.
    """
    bits = storage.element(storage_name).bits
    per_byte = 8 // bits
    every_byte = np.arange(256, dtype=np.uint8)
    if value_map is not None:
        codes = storage.unpack_codes(every_byte, bits, 256 * per_byte)
        table = np.asarray(value_map, dtype=np.float32)[codes]
    else:
        table = storage.decode(every_byte, storage_name, 256 * per_byte).astype(np.float32)
    table = np.ascontiguousarray(table.reshape(256, per_byte))
    row = 4 * per_byte
    return table.view(np.dtype(f"u{row}") if row <= 8 else np.dtype(f"V{row}")).reshape(256)


def element_values(raw: np.ndarray, storage_name: str, count: int,
                   value_map: tuple[float, ...] | None = None) -> np.ndarray:
    """``count`` element values from packed bytes, as float32 (exact for every code of at most
    16 bits), or as int64 for 32-bit integers so that ``q - z`` is computed exactly (HD-13)."""
    bits = storage.element(storage_name).bits
    if bits in (1, 2, 4, 8):
        return np.take(byte_table(storage_name, value_map), raw.astype(np.intp)).view(np.float32)[:count]
    values = storage.decode(raw, storage_name, count)
    if value_map is not None:
        return np.asarray(value_map, dtype=np.float32)[values]
    if values.dtype.itemsize >= 4 and values.dtype.kind in "iu":
        return values.astype(np.int64)
    return values.astype(np.float32)


ALIGN = {1: 8, 2: 4, 4: 2, 6: 4}
"""Elements per whole packing unit, by bit width: chunks start on unit boundaries."""


def chunks(geometry: Geometry, bits: int) -> list[tuple[int, int]]:
    """Block-row ranges to process: whole outer indices when they fit a chunk, else parts of one.

    Every range starts on a packing-unit boundary, so its bytes can be read on their own. When
    one outer index is not a whole number of units (odd sizes of sub-byte types), ranges hold
    the few outer indices that are.
    """
    g = geometry
    row = g.block * g.after
    nb = g.blocks_per_axis
    unit = ALIGN.get(bits, 1)
    per_outer = nb * row
    together = unit // gcd(per_outer, unit)  # outer indices that end on a unit boundary
    if per_outer * together <= CHUNK_ELEMENTS or row % unit:
        per = max(together, CHUNK_ELEMENTS // max(per_outer, 1) // together * together) * nb
        return [(first, min(g.block_rows, first + per)) for first in range(0, g.block_rows, per)]
    budget = max(1, CHUNK_ELEMENTS // row)
    return [(a * nb + j, a * nb + min(nb, j + budget)) for a in range(g.before) for j in range(0, nb, budget)]


def workers() -> int:
    """Threads for dequantization: NumPy releases the GIL, so chunks run side by side."""
    return max(1, min(4, len(os.sched_getaffinity(0))))


def run(
    data: np.ndarray,
    storage_name: str,
    geometry: Geometry,
    kernel: Kernel,
    out: np.ndarray,
    *,
    value_map: tuple[float, ...] | None = None,
    progress: Callable[[int, int], None] | None = None,
    threads: int | None = None,
) -> np.ndarray:
    """Dequantize every block row of ``data`` (the bytes from byte_offset) into ``out``.

    ``out`` has the logical shape; padding elements of partial blocks never reach it (HQ-PB-19).
    Chunks write disjoint parts of ``out`` and run on ``threads`` threads (default: the cores).
    Extra memory: a few chunk-sized temporaries per thread.
    """
    g = geometry
    bits = storage.element(storage_name).bits
    k, b, nb = g.block, g.after, g.blocks_per_axis
    target = out.reshape(g.before, g.extent, b)
    flat = out.reshape(-1)
    row_elements = k * b
    unpadded = g.padded == g.extent

    def one(bounds: tuple[int, int]) -> int:
        first, last = bounds
        start, stop = first * row_elements, last * row_elements
        raw = data[storage.byte_size(storage_name, start): storage.byte_size(storage_name, stop)]
        values = element_values(raw, storage_name, stop - start, value_map).reshape(last - first, k, b)
        if unpadded:  # stored and logical order coincide: write straight into the output
            kernel(values, slice(first, last), flat[start:stop].reshape(last - first, k, b))
            return last
        result = np.empty((last - first, k, b), np.float32)
        kernel(values, slice(first, last), result)
        a, j = divmod(first, nb)
        if j == 0 and (last - first) % nb == 0:  # whole outer indices: drop padding at once
            whole = (last - first) // nb
            target[a:a + whole] = result.reshape(whole, g.padded, b)[:, : g.extent]
        else:  # part of one outer index
            lo, hi = j * k, min(g.extent, (last - a * nb) * k)
            target[a, lo:hi] = result.reshape(-1, b)[: hi - lo]
        return last

    ranges = chunks(g, bits)
    count = threads or workers()
    if count == 1 or len(ranges) < 2:
        done = map(one, ranges)
        for last in done:
            if progress is not None:
                progress(last, g.block_rows)
        return out
    with ThreadPoolExecutor(max_workers=count) as pool:
        for finished, _ in enumerate(pool.map(one, ranges), start=1):
            if progress is not None:
                progress(finished * g.block_rows // len(ranges), g.block_rows)
    return out


# --- arithmetic shared by the affine schemes ----------------------------------------------

def affine(values: np.ndarray, zero_points: np.ndarray | float | None, scales: np.ndarray | float,
           out: np.ndarray) -> None:
    """out = scale * (q - z): the difference exact, rounded once to float32, then one float32
    multiply (HQ-PT-08, HD-13). ``values`` are integer codes; 32-bit codes come as int64."""
    if values.dtype == np.int64:  # 32-bit storage: the difference may exceed float32's integers
        difference = values if zero_points is None else values - np.asarray(zero_points, dtype=np.int64)
        np.multiply(difference.astype(np.float32), scales, out=out)
        return
    if zero_points is None:
        np.multiply(values, scales, out=out)
        return
    # Codes and zero points of <= 16-bit storage are exact in float32, and so is their difference.
    np.subtract(values, zero_points, out=out)
    np.multiply(out, scales, out=out)


def grouped(array: np.ndarray, axis: int, block: int) -> np.ndarray:
    """``array`` as (A, nb, K, B) float64, the partial final block padded with NaN."""
    g = Geometry(tuple(array.shape), axis, block)
    x = np.asarray(array, dtype=np.float64).reshape(g.before, g.extent, g.after)
    if g.padded != g.extent:
        padded = np.full((g.before, g.padded, g.after), np.nan)
        padded[:, : g.extent] = x
        x = padded
    return x.reshape(g.before, g.blocks_per_axis, block, g.after)


def block_order(per_block: np.ndarray) -> np.ndarray:
    """(A, nb, B) per-block values in the scheme's block order b = (a * B + i_after) * nb + j."""
    return np.ascontiguousarray(per_block.transpose(0, 2, 1)).reshape(-1)


def by_block_row(block_values: np.ndarray, geometry: Geometry) -> np.ndarray:
    """Per-block values (block order) rearranged as (A * nb, 1, B): one row per block row."""
    g = geometry
    return np.ascontiguousarray(
        np.asarray(block_values).reshape(g.before, g.after, g.blocks_per_axis).transpose(0, 2, 1)
    ).reshape(g.block_rows, 1, g.after)


def integer_range(storage_name: str) -> tuple[int, int]:
    bounds = storage.element(storage_name).int_range
    if bounds is None:
        raise ValueError(f"{storage_name} is not an integer type")
    return bounds


def affine_calibration(low: np.ndarray, high: np.ndarray, storage_name: str, symmetric: bool,
                       scale_dtype: Any = "float32") -> tuple[np.ndarray, np.ndarray]:
    """Scales and zero points from each group's minimum and maximum.

    Symmetric: ``s = max|x| / qmax``, ``z = 0``. Asymmetric: the range [min(x, 0), max(x, 0)]
    spread over ``qmax - qmin - 1`` steps, ``z = qmin - floor(lo / s)``: one spare step keeps
    every code of the group inside the storage range whatever the rounding. Scales are cast to
    the scale type first (rounding up, :func:`cast_up`) and the codes are computed with the cast
    scale; an all-zero group gets scale 1.
    """
    qmin, qmax = integer_range(storage_name)
    if symmetric and qmin == 0 and np.nanmin(low, initial=0.0) < 0:
        raise RuleViolation(
            "HQ-ZP-02", "symmetric quantization subtracts no zero point, so unsigned codes cannot hold "
            "negative values; use a signed storage type or symmetric=False",
            path="symmetric", actual=f"{storage_name}, minimum {float(np.nanmin(low))!r}", expected="signed storage")
    low = np.minimum(np.nan_to_num(low, nan=0.0), 0.0)
    high = np.maximum(np.nan_to_num(high, nan=0.0), 0.0)
    if symmetric:
        span = np.maximum(-low, high) / qmax
    else:
        span = (high - low) / (qmax - qmin - 1)
    scales = cast_up(np.where(span > 0, span, 1.0), scale_dtype)
    if symmetric:
        return scales, np.zeros(scales.shape, dtype=np.int64)
    zero_points = qmin - np.floor(low / np.asarray(scales, dtype=np.float64))
    return scales, np.clip(zero_points, qmin, qmax).astype(np.int64)


def affine_codes(x: np.ndarray, scales: np.ndarray, zero_points: np.ndarray, storage_name: str) -> np.ndarray:
    """Codes ``round(x / s) + z`` clipped to the storage range; NaN (padding) becomes code 0."""
    qmin, qmax = integer_range(storage_name)
    q = np.rint(x / np.asarray(scales, dtype=np.float64)) + zero_points
    q = np.clip(np.nan_to_num(q, nan=0.0), qmin, qmax).astype(np.int64)
    return np.where(np.isnan(x), 0, q)


def cast_up(values: np.ndarray, dtype: Any) -> np.ndarray:
    """Positive ``values`` in ``dtype`` (float16, bfloat16, float32), rounded up, never down.

    A scale rounded down could push the extreme value of its group one code past the storage
    range; rounding up keeps every code inside it.
    """
    wanted = np.asarray(values, dtype=np.float64)
    cast = wanted.astype(dtype)
    low = cast.astype(np.float64) < wanted
    if low.any():
        bits = cast.view(np.dtype(f"u{cast.dtype.itemsize}"))
        cast = np.where(low, (bits + 1).view(cast.dtype), cast)
    return cast


def padded_codes(codes: np.ndarray, geometry: Geometry) -> np.ndarray:
    """Logical codes in stored order, each partial final block padded with code 0 (HQ-PB-18)."""
    g = geometry
    x = np.asarray(codes).reshape(g.before, g.extent, g.after)
    if g.padded == g.extent:
        return x.reshape(-1)
    stored = np.zeros((g.before, g.padded, g.after), dtype=x.dtype)
    stored[:, : g.extent] = x
    return stored.reshape(-1)
