"""Element storage: packing and unpacking every storage type a scheme admits, in NumPy.

Integer types unpack to their integer codes, narrow floats to float32 values through
``ml_dtypes`` lookup tables. Sub-byte types follow DIGEST § 4.4: element ``2k`` in the low
nibble, four 2-bit elements per byte from the least significant bits, four 6-bit elements per
3-byte little-endian group. No per-element Python runs here.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache
from math import prod
from typing import Any

from hurray_decl.errors import RuleViolation
from hurray_decl.hurray.tables.element_types import BY_NAME, ElementType, Kind
from hurray_decl.lazy_modules import LazyAttributes, ml_dtypes, numpy as np

INDEX_LIMIT = sys.maxsize
"""The largest byte size NumPy can index on this platform (HX-01)."""

NARROW_FLOATS: LazyAttributes = LazyAttributes(ml_dtypes, {
    "float8_e4m3": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float8_e8m0": "float8_e8m0fnu",
    "float4_e2m1": "float4_e2m1fn",
    "float6_e2m3": "float6_e2m3fn",
    "float6_e3m2": "float6_e3m2fn",
    "bfloat16": "bfloat16",
})
"""The ml_dtypes type behind each narrow float (OCP value maps; DIGEST § 4.5); they decode to float32."""

WHOLE_BYTE: dict[str, str] = {
    "int8": "<i1", "uint8": "<u1", "int16": "<i2", "uint16": "<u2", "int32": "<i4", "uint32": "<u4",
    "int64": "<i8", "uint64": "<u8", "float16": "<f2", "float32": "<f4", "float64": "<f8",
    "complex64": "<c8", "complex128": "<c16",
}
"""Whole-byte types NumPy reads directly, little-endian (HE-01)."""


def dtype(name: str) -> np.dtype:
    """The NumPy dtype holding one element of a whole-byte type (scale types included)."""
    return np.dtype(NARROW_FLOATS[name]) if name in NARROW_FLOATS else np.dtype(WHOLE_BYTE[name])


def element(name: str) -> ElementType:
    return BY_NAME[name]


@dataclass(frozen=True)
class Packing:
    """The packing unit of one element width (DIGEST § 4.4, HD-10, HE-20): ``elements`` elements
    share ``size`` bytes (eight 1-bit, four 2-bit, two 4-bit elements per byte; four 6-bit
    elements per 3-byte group; one element per ``bits / 8`` bytes otherwise). The one source of
    this geometry: storage, numerics, element access and validation derive from it."""

    elements: int
    size: int

    def units(self, count: int) -> int:
        """Whole units covering ``count`` contiguous elements."""
        return -(-count // self.elements)

    def bytes(self, count: int) -> int:
        """Contiguous storage size of ``count`` elements: whole units, the last one padded."""
        return self.units(count) * self.size

    def byte_of(self, element: int) -> int:
        """The first byte of the unit holding ``element`` (an element offset, may be negative)."""
        return element // self.elements * self.size


@cache
def packing(bits: int) -> Packing:
    """The packing unit of ``bits``-wide elements."""
    if bits == 6:
        return Packing(4, 3)
    if bits < 8:
        return Packing(8 // bits, 1)
    return Packing(1, bits // 8)


def byte_size(name: str, count: int) -> int:
    """Contiguous storage size of ``count`` elements (DIGEST § 4.4; 6-bit types per HD-10)."""
    return packing(element(name).bits).bytes(count)


@cache
def value_table(name: str) -> np.ndarray:
    """float32 value of every code of a float type of at most 8 bits, indexed by code."""
    codes = np.arange(1 << element(name).bits, dtype=np.uint8)
    return read_only(codes.view(NARROW_FLOATS[name]).astype(np.float32))


HALF_EXPONENTS = {"float16": 0x7C00, "bfloat16": 0x7F80}
"""The 16-bit scale types and their exponent masks: their values are checked on the bits, which
NumPy does many times faster than it converts them to float32."""


def not_finite(values: np.ndarray) -> np.ndarray:
    """Mask of the NaN and infinite entries of a float16, bfloat16 or float32 array."""
    mask = HALF_EXPONENTS.get(values.dtype.name)
    if mask is None:
        return ~np.isfinite(np.asarray(values, dtype=np.float32))
    exponent = np.uint16(mask)
    return (values.view(np.uint16) & exponent) == exponent


def is_zero(values: np.ndarray) -> np.ndarray:
    """Mask of the zero entries (either sign) of a float16, bfloat16 or float32 array."""
    if values.dtype.name not in HALF_EXPONENTS:
        return np.asarray(values, dtype=np.float32) == 0
    return (values.view(np.uint16) & np.uint16(0x7FFF)) == 0


def read_only(array: np.ndarray) -> np.ndarray:
    """``array`` made unwriteable: cached tables are shared by every caller and thread."""
    array.flags.writeable = False
    return array


def unpack_codes(raw: np.ndarray, bits: int, count: int) -> np.ndarray:
    """Raw ``bits``-wide codes (uint8) of the first ``count`` elements of packed bytes."""
    raw = np.asarray(raw, dtype=np.uint8)
    if bits == 8:
        return raw[:count]
    if bits == 6:
        groups = raw[: packing(6).bytes(count)].reshape(-1, 3).astype(np.uint32)
        word = groups[:, 0] | (groups[:, 1] << 8) | (groups[:, 2] << 16)
        shifts = np.arange(0, 24, 6, dtype=np.uint32)
        return ((word[:, None] >> shifts) & 0x3F).astype(np.uint8).reshape(-1)[:count]
    used = raw[: packing(bits).bytes(count)]
    shifts = np.arange(0, 8, bits, dtype=np.uint8)
    return ((used[:, None] >> shifts) & ((1 << bits) - 1)).reshape(-1)[:count]


def code_dtype(bits: int) -> np.dtype:
    """The NumPy type of one raw code: uint8 up to 8 bits, then the unsigned type of the width
    (16-byte types as ``V16`` raw bytes)."""
    if bits <= 8:
        return np.dtype(np.uint8)
    if bits == 128:
        return np.dtype("V16")
    return np.dtype(f"u{bits // 8}")


def codes_at(raw: np.ndarray, bits: int, start: int, count: int) -> np.ndarray:
    """Raw codes of contiguous elements ``start .. start + count`` of packed ``raw`` (element 0
    at byte 0), read from the packing unit holding ``start``: only those bytes are touched."""
    unit = packing(bits)
    skip = start % unit.elements
    first = unit.byte_of(start)
    used = raw[first: first + unit.bytes(count + skip)]
    if bits <= 8:
        return unpack_codes(used, bits, count + skip)[skip:]
    stored = np.dtype("V16") if bits == 128 else np.dtype(f"<u{bits // 8}")
    return np.frombuffer(used, dtype=stored, count=count).astype(code_dtype(bits), copy=False)


def pack_codes(codes: np.ndarray, bits: int) -> bytes:
    """Pack ``bits``-wide codes LSB-first; unused bits of the last unit are zero. Codes wider than
    a byte (unsigned integers, or 16-byte void values) are written little-endian as they are."""
    if bits > 8:  # one copy: the bytes (astype copies only on a big-endian host)
        flat = np.ascontiguousarray(codes).reshape(-1)
        return flat.tobytes() if flat.dtype.kind == "V" else \
            flat.astype(flat.dtype.newbyteorder("<"), copy=False).tobytes()
    if bits == 8:  # every bit of a byte is the code's: nothing to mask
        return np.asarray(codes, dtype=np.uint8).tobytes()
    codes = np.asarray(codes, dtype=np.uint8).reshape(-1) & ((1 << bits) - 1)
    unit = packing(bits).elements
    if bits == 6:
        padded = np.zeros(packing(6).units(codes.size) * unit, dtype=np.uint32)
        padded[: codes.size] = codes
        word = (padded.reshape(-1, 4) << np.arange(0, 24, 6, dtype=np.uint32)).sum(axis=1, dtype=np.uint32)
        return np.stack([word & 0xFF, (word >> 8) & 0xFF, word >> 16], axis=1).astype(np.uint8).tobytes()
    padded = np.zeros(packing(bits).units(codes.size) * unit, dtype=np.uint8)
    padded[: codes.size] = codes
    shifts = np.arange(0, 8, bits, dtype=np.uint8)
    return np.bitwise_or.reduce(padded.reshape(-1, unit) << shifts, axis=1).astype(np.uint8).tobytes()


def decode(raw: np.ndarray, name: str, count: int) -> np.ndarray:
    """The first ``count`` elements of packed ``raw`` bytes as numbers.

    Integers keep an integer dtype wide enough for them (int8 for int4 and int2), floats narrower
    than 32 bits become float32 (exactly), the others keep their own dtype.
    """
    kind = element(name)
    raw = np.asarray(raw, dtype=np.uint8)
    if kind.bits < 8:
        codes = unpack_codes(raw, kind.bits, count)
        if name in NARROW_FLOATS:
            return codes.view(NARROW_FLOATS[name]).astype(np.float32)
        if kind.kind is Kind.SIGNED:
            sign = np.uint8(1 << (kind.bits - 1))
            return (codes ^ sign).view(np.int8) - np.int8(sign)
        return codes
    used = raw[: byte_size(name, count)]
    if name in NARROW_FLOATS:
        return used.view(NARROW_FLOATS[name]).astype(np.float32)
    if name == "float16":
        return used.view("<f2").astype(np.float32)
    return used.view(WHOLE_BYTE[name])


def encode(values: np.ndarray, name: str) -> bytes:
    """Storage bytes of integer codes or (narrow float) values; values must already be in range."""
    kind = element(name)
    values = np.asarray(values).reshape(-1)
    if name in NARROW_FLOATS:
        values = values.astype(np.float32)
        if kind.bits < 8:  # no infinity or NaN to overflow into: clamp to the largest magnitude (HE-30)
            largest = np.float32(value_table(name).max())
            values = np.clip(values, -largest, largest)
        codes = values.astype(NARROW_FLOATS[name])
        return codes.tobytes() if kind.bits >= 8 else pack_codes(codes.view(np.uint8), kind.bits)
    if name in WHOLE_BYTE:
        return values.astype(WHOLE_BYTE[name]).tobytes()
    return pack_codes(values.astype(np.int64) & ((1 << kind.bits) - 1), kind.bits)


def check_output_size(shape: tuple[int, ...], itemsize: int, purpose: str) -> None:
    """Refuse (HX-01), before anything is allocated, an output of ``shape`` that NumPy cannot
    represent: a dimension, an element count or a byte size past the platform's index range
    (a zero dimension does not make the others representable)."""
    need = itemsize
    for size in shape:
        need *= size or 1  # NumPy sizes an array by its non-zero dimensions
    if need > INDEX_LIMIT:
        raise RuleViolation(
            "HX-01", f"{purpose} cannot represent an array of shape {list(shape)}: its non-zero dimensions "
            f"times {itemsize} byte(s) exceed this platform's index range",
            path="descriptor -> shape", actual=f"{need} bytes", expected=f"at most {INDEX_LIMIT} bytes")


def allocate(shape: tuple[int, ...], dtype: Any = "float32", purpose: str = "dequantize") -> np.ndarray:
    """``np.empty`` that refuses, with HX-01, what the system cannot allocate."""
    check_output_size(shape, np.dtype(dtype).itemsize, purpose)
    try:
        return np.empty(shape, dtype=dtype)
    except (MemoryError, ValueError) as exc:
        raise RuleViolation("HX-01", f"{purpose} could not allocate its output of shape {list(shape)}",
                            path="descriptor -> shape", actual=f"{prod(shape) * np.dtype(dtype).itemsize} bytes",
                            expected="an allocation the system grants") from exc


# ---------------------------------------------------------------- logical values (exact)

SUB_BYTE_INTEGERS: LazyAttributes = LazyAttributes(ml_dtypes, {"int4": "int4", "uint4": "uint4", "int2": "int2",
                                                                "uint2": "uint2"})
"""The ml_dtypes types a caller may hand for the sub-byte integers (values come back as int8 / uint8)."""


def value_dtype(name: str) -> np.dtype:
    """The NumPy dtype of the logical values of element type ``name``, same bits as stored: the
    whole-byte types as themselves, bfloat16 and the float8/6/4 types as their ``ml_dtypes``
    type, sub-byte integers as the smallest NumPy integer holding them (int8 / uint8), bool as
    ``bool``. float128 has no NumPy type (``longdouble`` is not IEEE binary128), refused (HE-11)."""
    kind = element(name)
    if name in NARROW_FLOATS:
        return np.dtype(NARROW_FLOATS[name])
    if name in WHOLE_BYTE:
        return np.dtype(WHOLE_BYTE[name])
    if kind.kind is Kind.BOOL:
        return np.dtype(np.bool_)
    if kind.kind in (Kind.SIGNED, Kind.UNSIGNED):
        return np.dtype(np.int8 if kind.kind is Kind.SIGNED else np.uint8)
    from hurray_decl.errors import UnsupportedError

    raise UnsupportedError("HE-11", f"{name} has no NumPy type holding its values (numpy.longdouble is not IEEE "
                           "binary128); read its bit patterns as codes instead", path="descriptor -> type_tag",
                           actual=name, expected="an element type NumPy or ml_dtypes represents")


def values_of_codes(codes: np.ndarray, name: str) -> np.ndarray:
    """The logical values of raw codes (:func:`code_dtype`), the same bits reinterpreted: a view
    where the widths agree, sign-extended sub-byte integers (in place), bool from its bit."""
    kind = element(name)
    target = value_dtype(name)
    if kind.kind is Kind.SIGNED and kind.bits < 8:
        sign = np.uint8(1 << (kind.bits - 1))
        np.bitwise_xor(codes, sign, out=codes)
        values = codes.view(np.int8)
        np.subtract(values, np.int8(sign), out=values)
        return values
    if codes.dtype.kind == "V" or codes.dtype.itemsize != target.itemsize:
        return np.require(codes, requirements="C").view(target)  # np.ascontiguousarray makes a 0-d array 1-d
    return codes.view(target)


def element_of_dtype(dtype: Any) -> str | None:
    """The element type whose values ``dtype`` holds exactly (ml_dtypes types included), or None."""
    return _element_of_dtype(np.dtype(dtype))


@cache
def _element_of_dtype(dtype: np.dtype[Any]) -> str | None:
    """:func:`element_of_dtype` of one dtype, looked up once (the tables do not change)."""
    for name in BY_NAME:
        if name in NARROW_FLOATS and dtype == np.dtype(NARROW_FLOATS[name]):
            return name
        if name in SUB_BYTE_INTEGERS and dtype == np.dtype(SUB_BYTE_INTEGERS[name]):
            return name
    if dtype == np.dtype(np.bool_):
        return "bool"
    for name, code in WHOLE_BYTE.items():
        if dtype == np.dtype(code):
            return name
    return None


def codes_of_values(values: np.ndarray, name: str) -> np.ndarray:
    """Raw codes (:func:`code_dtype`) of values held exactly in ``value_dtype(name)`` (or in an
    ml_dtypes sub-byte integer type): the same bits, masked to the element width. A bool is its
    truth value (any non-zero byte is true, as NumPy and C read it), never its low bit."""
    kind = element(name)
    values = np.ascontiguousarray(values)
    if kind.kind is Kind.BOOL:
        return np.not_equal(values.view(np.uint8), 0).view(np.uint8)
    if kind.bits >= 8 and kind.bits != 128:
        return values.view(code_dtype(kind.bits)).astype(code_dtype(kind.bits).newbyteorder("="), copy=False)
    if kind.bits == 128:
        return values.view("V16")
    raw = values.view(np.uint8) if values.dtype.itemsize == 1 else values.astype(np.int8).view(np.uint8)
    return raw & np.uint8((1 << kind.bits) - 1)
