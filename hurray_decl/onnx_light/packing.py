"""Code packing for whole runs at once: LSB-first bitstreams of 1..16 bits and base-3 bytes.

Every function takes or returns a ``[blocks, C]`` uint8 array (one row per block's code bytes)
and a ``[blocks, codes]`` integer array, and works without a Python loop over blocks or codes.
"""

from __future__ import annotations

import functools

import numpy as np

from hurray_decl.errors import OnnxLightError

__all__ = [
    "check_padding",
    "code_table",
    "decode_bytes",
    "pack_base3",
    "pack_bits",
    "sign_extend",
    "unpack_base3",
    "unpack_bits",
]

_POW3 = np.array([1, 3, 9, 27, 81], dtype=np.uint16)


def pack_bits(codes: np.ndarray, bits: int) -> np.ndarray:
    """Pack unsigned codes (< 2^bits) into one LSB-first bitstream per row (OL-WIRE-33)."""
    blocks, count = codes.shape
    size = -(-count * bits // 8)
    if bits == 8:
        return codes.astype(np.uint8)
    if bits in (1, 2, 4):
        per = 8 // bits
        if count % per:
            padded = np.zeros((blocks, size * per), dtype=np.uint8)
            padded[:, :count] = codes
        else:
            padded = codes.astype(np.uint8)
        lanes = padded.reshape(blocks, size, per)
        out = lanes[:, :, 0].copy()
        for i in range(1, per):
            out |= lanes[:, :, i] << (i * bits)
        return out
    if bits == 16:
        return codes.astype("<u2").view(np.uint8).reshape(blocks, size)
    stream = ((codes.astype(np.uint32)[:, :, None] >> np.arange(bits, dtype=np.uint32)) & 1).astype(np.uint8)
    stream = stream.reshape(blocks, count * bits)
    out = np.zeros((blocks, size * 8), dtype=np.uint8)
    out[:, : count * bits] = stream
    return np.packbits(out, axis=1, bitorder="little")


def unpack_bits(data: np.ndarray, count: int, bits: int, path: str) -> np.ndarray:
    """Unpack ``count`` unsigned codes per row; refuse non-zero padding bits (OL-WIRE-34).

    Widths of 8 bits or fewer come back as uint8, wider ones as uint32.
    """
    blocks, size = data.shape
    check_padding(data, count, bits, path)
    if bits == 8:
        return data
    if bits in (1, 2, 4):
        per = 8 // bits
        lanes = (data[:, :, None] >> (np.arange(per, dtype=np.uint8) * bits)) & np.uint8((1 << bits) - 1)
        return lanes.reshape(blocks, size * per)[:, :count]
    if bits == 16:
        return np.ascontiguousarray(data).view("<u2").astype(np.uint32)
    padded = np.zeros((blocks, size + 2), dtype=np.uint32)
    padded[:, :size] = data
    position = np.arange(count, dtype=np.int64) * bits
    first = position >> 3
    shift = (position & 7).astype(np.uint32)
    word = padded[:, first] | (padded[:, first + 1] << 8) | (padded[:, first + 2] << 16)
    return (word >> shift) & np.uint32((1 << bits) - 1)


def check_padding(data: np.ndarray, count: int, bits: int, path: str) -> None:
    """Refuse non-zero unused high bits in each row's last code byte (OL-WIRE-34)."""
    used = count * bits
    if used % 8 and data.shape[1]:
        spare = data[:, -1] >> (used % 8)
        if spare.any():
            j = int(np.flatnonzero(spare)[0])
            raise OnnxLightError("OL-WIRE-34", "non-zero unused high bits in the last code byte",
                                 path=f"{path}[{j}] -> codes", actual=f"0x{int(data[j, -1]):02X}",
                                 expected=f"bits {used % 8}..7 clear")


@functools.cache
def code_table(bits: int, signed: bool) -> np.ndarray:
    """float64 ``[256, 8 // bits]``: the codes a byte holds, LSB first, sign-extended when
    ``signed`` (for widths that divide 8). Read-only."""
    per = 8 // bits
    byte = np.arange(256, dtype=np.int64)[:, None]
    codes = (byte >> (np.arange(per) * bits)) & ((1 << bits) - 1)
    if signed:
        codes = codes - ((codes >> (bits - 1)) & 1) * (1 << bits)
    table = codes.astype(np.float64)
    table.flags.writeable = False
    return table


_LANES = {1: np.dtype(np.float64), 2: np.dtype(np.complex128)}


@functools.cache
def _byte_table(bits: int, signed: bool) -> np.ndarray:
    """:func:`code_table` with each row as one element (a float64, complex128 or void of the
    row's bytes), so that ``numpy.take`` gathers a byte's codes in one copy."""
    table = code_table(bits, signed)
    lane = _LANES.get(table.shape[1], np.dtype((np.void, table.itemsize * table.shape[1])))
    view = np.ascontiguousarray(table).view(lane).ravel()
    view.flags.writeable = False
    return view


def decode_bytes(data: np.ndarray, count: int, bits: int, signed: bool) -> np.ndarray:
    """float64 ``[blocks, count]``: the codes of ``[blocks, C]`` bytes for a width dividing 8
    (padding is checked separately, :func:`check_padding`)."""
    gathered = np.take(_byte_table(bits, signed), data)
    return gathered.view(np.float64).reshape(data.shape[0], -1)[:, :count]


def sign_extend(codes: np.ndarray, bits: int) -> np.ndarray:
    """Two's complement codes masked to ``bits`` back to signed integers."""
    if bits <= 8:
        table = np.arange(256, dtype=np.int16)
        table = (table - ((table >> (bits - 1)) & 1) * (1 << bits)).astype(np.int8)
        return table[codes.astype(np.uint8, copy=False)]
    values = codes.astype(np.int32)
    return values - ((values >> (bits - 1)) & 1) * (1 << bits)


def pack_base3(indices: np.ndarray) -> np.ndarray:
    """Five trits per byte, the first index least significant; missing trits are 0 (OL-WIRE-35)."""
    blocks, count = indices.shape
    size = -(-count // 5)
    trits = np.zeros((blocks, size * 5), dtype=np.uint16)
    trits[:, :count] = indices
    return (trits.reshape(blocks, size, 5) * _POW3).sum(axis=2).astype(np.uint8)


def unpack_base3(data: np.ndarray, count: int, path: str) -> np.ndarray:
    """Unpack ``count`` trits per row; refuse bytes >= 243 (OL-WIRE-36) and non-zero spare trits
    (OL-WIRE-37)."""
    blocks, size = data.shape
    if (data >= 243).any():
        j = int(np.flatnonzero((data >= 243).any(axis=1))[0])
        k = int(np.flatnonzero(data[j] >= 243)[0])
        raise OnnxLightError("OL-WIRE-36", "a base-3 byte is 243 or more",
                             path=f"{path}[{j}] -> codes[{k}]", actual=f"0x{int(data[j, k]):02X}",
                             expected="< 243")
    trits = (data.astype(np.uint16)[:, :, None] // _POW3) % 3
    trits = trits.reshape(blocks, size * 5)
    if (trits[:, count:] != 0).any():
        j = int(np.flatnonzero((trits[:, count:] != 0).any(axis=1))[0])
        raise OnnxLightError("OL-WIRE-37", "a base-3 byte has a non-zero trit after the real ones",
                             path=f"{path}[{j}] -> codes[{size - 1}]", actual=f"0x{int(data[j, -1]):02X}",
                             expected="unused trits 0")
    return trits[:, :count].astype(np.uint32)
