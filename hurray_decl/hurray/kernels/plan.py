"""What a scheme's kernel states and the tables it is evaluated with: the block
:class:`Geometry` of one quantized axis, the :class:`Plan` (``out = table[key, q] * scale``), the
:class:`Box` of one chunk, and the per-code, per-byte and per-pair value tables (cached, read-only).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from math import prod
from typing import Any, Protocol

from hurray_decl.errors import ArgumentError
from hurray_decl.hurray.tables import storage
from hurray_decl.lazy_modules import numpy as np


@dataclass(frozen=True)
class Geometry:
    """Block geometry of one quantized axis (HQ-PB-15, HD-12).

    ``block`` is ``K``; the per-tensor and per-channel schemes use blocks of one element.
    """

    shape: tuple[int, ...]
    axis: int
    block: int

    @cached_property
    def before(self) -> int:
        return prod(self.shape[: self.axis])

    @cached_property
    def extent(self) -> int:
        return self.shape[self.axis] if self.shape else 1

    @cached_property
    def after(self) -> int:
        return prod(self.shape[self.axis + 1:])

    @cached_property
    def blocks_per_axis(self) -> int:
        return -(-self.extent // self.block) if self.block else 0

    @cached_property
    def padded(self) -> int:
        return self.blocks_per_axis * self.block

    @cached_property
    def num_blocks(self) -> int:
        """Blocks in the tensor: blocks_per_axis times every other dimension."""
        return self.blocks_per_axis * self.before * self.after

    @cached_property
    def block_rows(self) -> int:
        return self.before * self.blocks_per_axis

    @cached_property
    def row_elements(self) -> int:
        """``L = K * B``: the elements of one block row."""
        return self.block * self.after

    @cached_property
    def stored_elements(self) -> int:
        """Elements the data buffer holds, padding included."""
        return self.before * self.padded * self.after


class Kernel(Protocol):
    def __call__(self, values: np.ndarray, box: Box, out: np.ndarray) -> None:
        """Write the dequantized ``values`` (rows, k, b) of ``box`` into ``out`` (same shape)."""


@dataclass(frozen=True)
class Plan:
    """How a scheme dequantizes one tensor: ``out = table[key, q] * scale``.

    ``table`` is float32 ``(keys, 2**bits)`` for storage of at most 8 bits (None above: then
    ``out = float32(value(q) - zeros) * scale``, the difference exact). ``scales`` are float32,
    or float16 / bfloat16 widened to float32 chunk by chunk. ``keys``, ``scales``
    and ``zeros`` are None or arrays of shape ``(n, 1, B)``, ``(n, 1, 1)`` or ``(1, 1, B)``,
    read at block row ``r mod n`` (n is ``block_rows``, or the period of a per-channel
    pattern). A private scheme may give ``kernel`` instead: it receives the decoded values.
    ``overflows``: the scheme specifies that the scaled product may overflow float32 to an
    infinity (MXFP, HQ-MX-11); it is then computed without NumPy's overflow warning.
    """

    geometry: Geometry
    table: np.ndarray | None = None
    keys: np.ndarray | None = None
    scales: np.ndarray | None = None
    zeros: np.ndarray | None = None
    kernel: Kernel | None = None
    value_map: tuple[float, ...] | None = None
    overflows: bool = False

    @cached_property
    def packed(self) -> np.ndarray:
        """``table`` per byte value: row ``key * 256 + byte`` holds the values of the byte's
        elements, viewed as one unsigned integer (or raw bytes), for one ``take`` per byte."""
        table = self._table()
        return packed_table(table, storage_bits(table))

    @cached_property
    def pairs(self) -> np.ndarray:
        """A one-key table of 8-bit codes for every pair of bytes (a uint16 index): one ``take``
        per two elements."""
        return pair_table(self._table())

    def _table(self) -> np.ndarray:
        if self.table is None:
            raise ArgumentError("plan", "byte tables are made from a plan's table", actual=None,
                                expected="a table of at most 8-bit codes")
        return self.table

    @cached_property
    def key_base(self) -> np.ndarray | None:
        """``keys * 256`` as uint16, the first packed row of each key (None: key 0)."""
        if self.keys is None:
            return None
        return (self.keys.astype(np.uint16) << np.uint16(8)).astype(np.uint16)


@dataclass(frozen=True)
class Quantized:
    """What a scheme's ``quantize`` returns: the descriptor model, the data buffer (the codes
    packed in stored order, :class:`Codes`), and the parameter arrays in buffer order."""

    model: Any
    data: np.ndarray
    parameters: tuple[np.ndarray, ...]


@dataclass(frozen=True)
class Box:
    """One chunk: block rows ``rows``, positions ``ks`` inside them, lanes ``lanes``; the
    elements ``start .. stop`` of the padded row-major order, consecutive."""

    rows: slice
    ks: slice
    lanes: slice
    start: int
    stop: int

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.rows.stop - self.rows.start, self.ks.stop - self.ks.start, self.lanes.stop - self.lanes.start)


# --- tables --------------------------------------------------------------------------------

def storage_bits(table: np.ndarray) -> int:
    return int(table.shape[1]).bit_length() - 1


@cache
def byte_codes(bits: int) -> np.ndarray:
    """(256, elements per byte): the codes packed in every byte value, LSB first (read-only)."""
    per = storage.packing(bits).elements
    return storage.read_only(storage.unpack_codes(np.arange(256, dtype=np.uint8), bits, 256 * per).reshape(256, per))


@cache
def code_values(storage_name: str, value_map: tuple[float, ...] | None = None) -> np.ndarray:
    """float32 value of every code of a storage type of at most 8 bits (read-only); ``value_map``
    (NF4) gives the value of each code instead. Integer codes are exact in float32."""
    bits = storage.element(storage_name).bits
    if value_map is not None:
        return storage.read_only(np.asarray(value_map, dtype=np.float32).copy())
    codes = np.arange(1 << bits, dtype=np.uint8)
    raw = np.frombuffer(storage.pack_codes(codes, bits), dtype=np.uint8)
    return storage.read_only(storage.decode(raw, storage_name, 1 << bits).astype(np.float32))


def packed_table(table: np.ndarray, bits: int) -> np.ndarray:
    """(keys * 256,) rows of the values of every byte's elements under every key."""
    per = storage.packing(bits).elements
    rows = np.ascontiguousarray(table[:, byte_codes(bits)])  # (keys, 256, per) float32
    width = 4 * per
    kind = np.dtype(f"u{width}") if width <= 8 else np.dtype(f"V{width}")
    return storage.read_only(rows.reshape(rows.shape[0] * 256, per).view(kind).ravel())


def pair_table(table: np.ndarray) -> np.ndarray:
    """(65536,) uint64: the two float32 values of every little-endian byte pair under a one-key
    table of 8-bit codes (read-only); cached by content, so every plan over a shared table reuses
    one (512 KiB) instead of building its own."""
    return _pairs_of(table.tobytes())


@lru_cache(maxsize=16)
def _pairs_of(values: bytes) -> np.ndarray:
    codes = np.frombuffer(values, dtype=np.float32)
    pairs = np.empty((256, 256, 2), dtype=np.float32)  # [high byte, low byte]: element 0 is the low byte
    pairs[:, :, 0] = codes[None, :]
    pairs[:, :, 1] = codes[:, None]
    return storage.read_only(pairs.reshape(65536, 2).view(np.uint64).ravel())


def affine_plan(geometry: Geometry, storage_name: str, scales: np.ndarray | None,
                zeros: np.ndarray | None, keys: np.ndarray | None = None) -> Plan:
    """``float32(q - z) * s`` (HQ-PT-08, HQ-PC-12, HQ-PB-15). Sub-byte codes go through a code
    table with the zero point folded in (one ``take`` per byte); whole-byte integer codes are
    converted exactly, then the zero point subtracted (exact in float32 up to 16 bits, in int64
    for 32-bit codes, HD-13) and the scale applied."""
    bits = storage.element(storage_name).bits
    if bits >= 8:
        if zeros is not None:
            zeros = zeros.astype(np.int64 if bits > 16 else np.float32)
        return Plan(geometry, zeros=zeros, scales=scales)
    if zeros is None:
        return Plan(geometry, table=code_values(storage_name)[None], scales=scales)
    table, folded = fold_zero_points(storage_name, zeros)
    return Plan(geometry, table=table, keys=folded, scales=scales)


@cache
def affine_table(storage_name: str, low: int, high: int) -> np.ndarray:
    """``table[z - low, q] = float32(value(q) - z)`` for zero points ``low..high`` (read-only):
    the difference is exact for codes of at most 8 bits (HQ-PT-08)."""
    values = code_values(storage_name)
    zeros = np.arange(low, high + 1, dtype=np.float32)[:, None]
    return storage.read_only(values[None, :] - zeros)


def fold_zero_points(storage_name: str, zeros: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The table and keys that fold per-block integer zero points (in the storage range,
    HQ-PB-22 / HQ-PC-10) into the code values."""
    low, high = (int(zeros.min()), int(zeros.max())) if zeros.size else (0, 0)
    return affine_table(storage_name, low, high), (zeros - low).astype(np.uint8)
