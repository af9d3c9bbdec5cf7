"""GGUF block formats as sub-blocks of ``value = S * q + O``, and their exact Hurray form.

Every supported GGML type decodes, per *sub-block* (the elements sharing one effective scale),
to integer codes ``q``, an effective scale ``S`` and, for the types with a minimum, an offset
``O``; gguf computes each value in float32 as ``S * q`` (exact: at most 23 significant bits)
plus ``O`` (one rounding). :data:`GGUF_TYPES` is the one table of the supported types: block
record (sizes written as sums of their fields), sub-block size, code range and unpacking.

Hurray per-block affine (``x = scale * (q - z)``, HQ-PB-22) holds the single-level types
exactly: Q4_0, Q5_0 and Q8_0 always (a block whose ``d`` is 0 and whose values are all the
same zero or constant gets scale +-1 or that constant; 5-bit codes are stored in 8 bits),
Q4_1 and Q5_1 when ``m = -z * d`` for an integer ``z`` in the code range. The K-quants have
two-level scales, for which Hurray reserves tags 0x60-0x7F (HQ-HDR-09, DIGEST HD-05): they are
refused here and converted to onnx-light instead
(:mod:`hurray_decl.convert.onnx_light`). Every result is checked against the source formula,
bit for bit (signed zeros included), before it is returned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from hurray_decl.convert.gguf_file import (  # the magic: re-exported
    GGUF_MAGIC as GGUF_MAGIC,
    GgufFile,
    GgufTensorInfo,
    open_gguf,
)
from hurray_decl.convert.gguf_splits import SPLIT_KEYS, Chained, find_splits
from hurray_decl.convert.parts import BlockParts
from hurray_decl.errors import ArgumentError, RuleViolation, UnsupportedError

__all__ = [
    "FLOAT_TYPES",
    "GGUF_BLOCK",
    "GGUF_MAGIC",
    "GGUF_TYPES",
    "MXFP4_NEGATIVE_ZERO",
    "MXFP4_RECORD",
    "GgufModel",
    "GgufTensor",
    "GgufTensors",
    "GgufType",
    "SubBlocks",
    "block_data",
    "gguf_parts",
    "gguf_tensors",
    "gguf_type",
    "mxfp4_blocks",
    "mxfp4_codes",
    "pack_blocks",
    "parts_blocks",
    "read_gguf",
    "read_gguf_model",
    "sub_blocks",
]

GGUF_BLOCK = 32
"""Elements per block of the single-level types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0)."""
QK_K = 256
"""Elements per super-block of the K-quants."""


FLOAT_TYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64", "I8": "int8",
               "I16": "int16", "I32": "int32", "I64": "int64"}
"""Unquantized GGML types and their Hurray element types (one-to-one, so each converts both ways)."""

F16 = "<f2"


def _bits(data: np.ndarray, index: np.ndarray, shift: np.ndarray, width: int) -> np.ndarray:
    """``width``-bit fields: element e is ``(data[:, index[e]] >> shift[e]) & mask``, as int16 (2 bytes a code)."""
    return (data[:, index].astype(np.int16) >> shift.astype(np.int16)) & ((1 << width) - 1)


def _put_bits(out: np.ndarray, index: np.ndarray, shift: np.ndarray, width: int, values: np.ndarray) -> None:
    """The inverse of :func:`_bits`: OR ``values[:, e] & mask`` into ``out[:, index[e]]`` at bit ``shift[e]``.

    For one shift the indices are distinct (no two elements share a field), so each shift is one
    vectorised store.
    """
    masked = (values.astype(np.int64) & ((1 << width) - 1)).astype(np.uint8)
    for s in np.unique(shift).tolist():
        sel = shift == s
        out[:, index[sel]] |= (masked[:, sel] << np.uint8(s)).astype(np.uint8)


_E32 = np.arange(GGUF_BLOCK)
_E = np.arange(QK_K)
_S16 = np.arange(QK_K // 16)


@dataclass(frozen=True)
class BitField:
    """Bits ``position ..`` of every element's code: element e is ``width`` bits of byte ``index[e]``
    of the record field ``field``, at bit ``shift[e]``."""

    field: str
    index: np.ndarray
    shift: np.ndarray
    width: int
    position: int = 0

    def read(self, blocks: np.ndarray) -> np.ndarray:
        return _bits(blocks[self.field], self.index, self.shift, self.width) << self.position

    def write(self, blocks: np.ndarray, values: np.ndarray) -> None:
        _put_bits(blocks[self.field], self.index, self.shift, self.width, values >> self.position)


_NIBBLES32 = BitField("qs", _E32 % 16, 4 * (_E32 // 16), 4)
"""Q4_0 .. Q5_1: element e < 16 is the low nibble of byte e, element e >= 16 the high nibble of e - 16."""
_HIGH_BIT32 = BitField("qh", _E32 // 8, _E32 % 8, 1, 4)
"""Q5_0 / Q5_1: element e's fifth bit is bit e of the little-endian 32-bit qh, bit e % 8 of byte e // 8."""
_K_LOW2 = BitField("qs", 32 * (_E // 128) + _E % 32, 2 * ((_E % 128) // 32), 2)
"""Q2_K / Q3_K: 2-bit fields; element e in byte 32 * (e // 128) + e % 32, at bit 2 * ((e % 128) // 32)."""
_K_NIBBLES = BitField("qs", 32 * (_E // 64) + _E % 32, 4 * ((_E % 64) // 32), 4)
"""Q4_K / Q5_K: element e in byte 32 * (e // 64) + e % 32, low nibble when (e % 64) < 32."""


def _k_high_bit(field: str, position: int) -> BitField:
    """Q3_K hmask / Q5_K qh: element e is bit e // 32 of byte e % 32."""
    return BitField(field, _E % 32, _E // 32, 1, position)


_Q6_LOW = BitField("ql", 64 * (_E // 128) + _E % 64, 4 * ((_E % 128) // 64), 4)
_Q6_HIGH = BitField("qh", 32 * (_E // 128) + _E % 32, 2 * ((_E % 128) // 32), 2, 4)
_Q3_SCALE_LOW = BitField("scales", _S16 % 8, 4 * (_S16 // 8), 4)
_Q3_SCALE_HIGH = BitField("scales", 8 + _S16 % 4, 2 * (_S16 // 4), 2, 4)
"""Q3_K: sixteen 6-bit sub-block scales (stored + 32): low four bits, then the top two."""


def _k_scale_min(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K / Q5_K: eight 6-bit scales and mins packed in 12 bytes.

    j < 4: scale = byte j & 63, min = byte j + 4 & 63. j >= 4: the low four bits come from byte
    j + 4 (scale: low nibble, min: high nibble), the top two from bits 6-7 of byte j - 4 (scale)
    or byte j (min).
    """
    j = np.arange(4)
    s = scales.astype(np.int64)
    sc = np.concatenate([s[:, j] & 63, (s[:, j + 8] & 15) | ((s[:, j] >> 6) << 4)], axis=1)
    mn = np.concatenate([s[:, j + 4] & 63, (s[:, j + 8] >> 4) | ((s[:, j + 4] >> 6) << 4)], axis=1)
    return sc, mn


def _k_put_scale_min(sc: np.ndarray, mn: np.ndarray) -> np.ndarray:
    """The inverse of :func:`_k_scale_min`: twelve bytes from eight scales and eight mins (0 .. 63)."""
    j = np.arange(4)
    out = np.zeros((sc.shape[0], 12), np.int64)
    out[:, j] = (sc[:, j] & 63) | ((sc[:, j + 4] >> 4) << 6)
    out[:, j + 4] = (mn[:, j] & 63) | ((mn[:, j + 4] >> 4) << 6)
    out[:, j + 8] = (sc[:, j + 4] & 15) | ((mn[:, j + 4] & 15) << 4)
    return out.astype(np.uint8)


def _f32(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float32)


Levels = dict[str, np.ndarray]
"""A block's scale fields as integers and float32: ``d`` (and ``m``) for the single-level types;
``d``, ``sc`` (and ``dmin``, ``mn``) for the K-quants, ``sc`` and ``mn`` per sub-block."""


def _single(b: np.ndarray) -> Levels:
    return {"d": _f32(b["d"])} | ({"m": _f32(b["m"])} if "m" in (b.dtype.names or ()) else {})


def _put_single(b: np.ndarray, levels: Levels) -> None:
    b["d"] = levels["d"].astype(np.float16)
    if "m" in (b.dtype.names or ()):
        b["m"] = levels["m"].astype(np.float16)


def _q2_levels(b: np.ndarray) -> Levels:
    s = b["scales"].astype(np.int64)
    return {"d": _f32(b["d"]), "sc": s & 15, "dmin": _f32(b["dmin"]), "mn": s >> 4}


def _q2_put(b: np.ndarray, levels: Levels) -> None:
    b["d"], b["dmin"] = levels["d"].astype(np.float16), levels["dmin"].astype(np.float16)
    b["scales"] = (levels["sc"] | (levels["mn"] << 4)).astype(np.uint8)


def _q3_levels(b: np.ndarray) -> Levels:
    return {"d": _f32(b["d"]), "sc": (_Q3_SCALE_LOW.read(b) | _Q3_SCALE_HIGH.read(b)).astype(np.int64) - 32}


def _q3_put(b: np.ndarray, levels: Levels) -> None:
    b["d"] = levels["d"].astype(np.float16)
    stored = levels["sc"] + 32
    _Q3_SCALE_LOW.write(b, stored)
    _Q3_SCALE_HIGH.write(b, stored)


def _k_levels(b: np.ndarray) -> Levels:
    sc, mn = _k_scale_min(b["scales"])
    return {"d": _f32(b["d"]), "sc": sc, "dmin": _f32(b["dmin"]), "mn": mn}


def _k_put(b: np.ndarray, levels: Levels) -> None:
    b["d"], b["dmin"] = levels["d"].astype(np.float16), levels["dmin"].astype(np.float16)
    b["scales"] = _k_put_scale_min(levels["sc"], levels["mn"])


def _q6_levels(b: np.ndarray) -> Levels:
    return {"d": _f32(b["d"]), "sc": b["scales"].astype(np.int64)}


def _q6_put(b: np.ndarray, levels: Levels) -> None:
    b["d"] = levels["d"].astype(np.float16)
    b["scales"] = levels["sc"].astype(np.int8)


@dataclass(frozen=True)
class GgufType:
    """One GGML block type: its record, sub-blocks, codes (declared as bit fields) and scale levels.

    A sub-block's values are ``S * q (+ O)``: single-level types ``S = d`` and ``O = m``;
    K-quants ``S = d * sc`` and ``O = -(dmin * mn)`` (float32 products, as gguf computes them).
    ``read_levels`` and ``write_levels`` are each other's inverse, as are the code fields'
    ``read`` and ``write``: every type is read and written from the same declaration.
    """

    name: str
    elements: int            # per block
    record: np.dtype         # the block's bytes, field by field
    sub_block: int           # elements per effective scale
    bits: int                # code width
    low: int                 # the smallest code q
    fields: tuple[BitField, ...]   # the code bits, stored as q - low (Q8_0: two's complement)
    read_levels: Callable[[np.ndarray], Levels]
    write_levels: Callable[[np.ndarray, Levels], None]
    scale_codes: tuple[int, int] = (0, 0)   # K-quants: the range of sc
    min_codes: tuple[int, int] = (0, 0)     # K-quants with mins: the range of mn (else (0, 0))
    top_scale: int = 0                      # the sc (and mn) llama.cpp gives the sub-block of largest |S|
    twos: bool = False                      # codes stored in two's complement rather than as q - low

    @property
    def two_level(self) -> bool:
        return self.elements != self.sub_block

    @property
    def high(self) -> int:
        return self.low + (1 << self.bits) - 1

    @property
    def has_offset(self) -> bool:
        return bool({"m", "dmin"} & set(self.record.names or ()))

    @property
    def storage(self) -> str:
        """The narrowest per-block affine storage holding the codes (5-bit codes in 8 bits)."""
        width = next(w for w in (2, 4, 8) if w >= self.bits)
        return ("int" if self.low < 0 else "uint") + str(width)

    def codes(self, blocks: np.ndarray) -> np.ndarray:
        """Every block's codes q (int16, blocks x elements)."""
        stored = sum((f.read(blocks) for f in self.fields), np.zeros((blocks.shape[0], self.elements), np.int16))
        if self.twos:
            return stored - ((stored >> (self.bits - 1)) << self.bits)
        return stored + self.low

    def write_codes(self, blocks: np.ndarray, q: np.ndarray) -> None:
        stored = (q & ((1 << self.bits) - 1)) if self.twos else q - self.low
        for f in self.fields:
            f.write(blocks, stored)

    def unpack(self, blocks: np.ndarray) -> Unpacked:
        """(codes, S, O): per block (codes) and per sub-block (S, O)."""
        lv = self.read_levels(blocks)
        if not self.two_level:
            return self.codes(blocks), lv["d"][:, None], lv["m"][:, None] if "m" in lv else None
        with np.errstate(invalid="ignore"):  # an infinite d times a zero sc is NaN, as in gguf; refused by the rules
            scales = lv["d"][:, None] * _f32(lv["sc"])
            offsets = -(lv["dmin"][:, None] * _f32(lv["mn"])) if "dmin" in lv else None
        return self.codes(blocks), scales, offsets


Unpacked = tuple[np.ndarray, np.ndarray, "np.ndarray | None"]
"""(codes per block, S per sub-block, O per sub-block or None)."""


def _record(*fields: tuple) -> np.dtype:
    return np.dtype(list(fields))


GGUF_TYPES: dict[str, GgufType] = {t.name: t for t in (
    GgufType("Q4_0", 32, _record(("d", F16), ("qs", "u1", (16,))), 32, 4, -8, (_NIBBLES32,), _single,
             _put_single),  # 2 + 16 = 18
    GgufType("Q4_1", 32, _record(("d", F16), ("m", F16), ("qs", "u1", (16,))), 32, 4, 0, (_NIBBLES32,), _single,
             _put_single),  # 2 + 2 + 16 = 20
    GgufType("Q5_0", 32, _record(("d", F16), ("qh", "u1", (4,)), ("qs", "u1", (16,))), 32, 5, -16,
             (_NIBBLES32, _HIGH_BIT32), _single, _put_single),  # 2 + 4 + 16 = 22
    GgufType("Q5_1", 32, _record(("d", F16), ("m", F16), ("qh", "u1", (4,)), ("qs", "u1", (16,))), 32, 5, 0,
             (_NIBBLES32, _HIGH_BIT32), _single, _put_single),  # 2 + 2 + 4 + 16 = 24
    GgufType("Q8_0", 32, _record(("d", F16), ("qs", "u1", (32,))), 32, 8, -128, (BitField("qs", _E32, 0 * _E32, 8),),
             _single, _put_single, twos=True),  # 2 + 32 = 34
    GgufType("Q2_K", QK_K, _record(("scales", "u1", (16,)), ("qs", "u1", (64,)), ("d", F16), ("dmin", F16)),
             16, 2, 0, (_K_LOW2,), _q2_levels, _q2_put, (0, 15), (0, 15), 15),  # 16 + 64 + 2 + 2 = 84
    GgufType("Q3_K", QK_K, _record(("hmask", "u1", (32,)), ("qs", "u1", (64,)), ("scales", "u1", (12,)), ("d", F16)),
             16, 3, -4, (_K_LOW2, _k_high_bit("hmask", 2)), _q3_levels, _q3_put, (-32, 31), top_scale=-32),
    # 32 + 64 + 12 + 2 = 110
    GgufType("Q4_K", QK_K, _record(("d", F16), ("dmin", F16), ("scales", "u1", (12,)), ("qs", "u1", (128,))),
             32, 4, 0, (_K_NIBBLES,), _k_levels, _k_put, (0, 63), (0, 63), 63),  # 2 + 2 + 12 + 128 = 144
    GgufType("Q5_K", QK_K, _record(("d", F16), ("dmin", F16), ("scales", "u1", (12,)), ("qh", "u1", (32,)),
                                   ("qs", "u1", (128,))), 32, 5, 0, (_K_NIBBLES, _k_high_bit("qh", 4)), _k_levels,
             _k_put, (0, 63), (0, 63), 63),  # 2 + 2 + 12 + 32 + 128 = 176
    GgufType("Q6_K", QK_K, _record(("ql", "u1", (128,)), ("qh", "u1", (64,)), ("scales", "i1", (16,)), ("d", F16)),
             16, 6, -32, (_Q6_LOW, _Q6_HIGH), _q6_levels, _q6_put, (-128, 127), top_scale=-128),
    # 128 + 64 + 16 + 2 = 210
)}
"""The supported GGML block types, by name."""


MXFP4_RECORD = np.dtype([("e", "u1"), ("qs", "u1", (16,))])
"""A GGUF MXFP4 block: 32 elements, 1 + 16 = 17 bytes: the float8_e8m0 exponent byte ``e``, then
the 4-bit E2M1 codes in the nibbles of ``qs`` as Q4_0 holds its codes (element j < 16 the low
nibble of byte j, element j >= 16 the high nibble of byte j - 16). gguf's value is
``2^(e - 128) * k[code]`` with ``k`` the E2M1 values doubled, and ``k[8] = 0`` (+0): Hurray MXFP's
``2^(e - 127) * E2M1(code)`` (HQ-MX-11) is the same float32 for every code but 8, whose E2M1 value
is -0."""
MXFP4_NEGATIVE_ZERO = 0x8
"""The E2M1 code of -0, which gguf's MXFP4 decodes as +0."""


def block_data(raw: Any, name: str, shape: Sequence[int], elements: int,
                size: int) -> tuple[tuple[int, ...], np.ndarray]:
    """(shape, bytes as uint8) of GGUF blocks of ``elements`` elements in ``size`` bytes, the shape
    whole blocks along its last axis and the bytes that many blocks (else ArgumentError)."""
    shape = tuple(int(n) for n in shape)
    if not shape or shape[-1] % elements:
        raise ArgumentError("shape", f"{name} rows hold whole blocks of {elements}", actual=list(shape),
                            expected=f"a last dimension that is a multiple of {elements}")
    data = np.frombuffer(memoryview(raw).cast("B"), dtype=np.uint8)
    blocks = int(np.prod(shape)) // elements
    if data.size != blocks * size:
        raise ArgumentError("raw", f"{name} data of {blocks * elements} elements is {blocks} blocks of {size} bytes",
                            actual=data.size, expected=blocks * size)
    return shape, data


def mxfp4_codes(raw: Any, shape: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """GGUF MXFP4 data of a tensor of ``shape`` as (exponent bytes, uint8 per block; E2M1 codes,
    uint8 blocks x 32 in element order)."""
    records = block_data(raw, "MXFP4", shape, GGUF_BLOCK, MXFP4_RECORD.itemsize)[1].view(MXFP4_RECORD)
    return records["e"].copy(), _NIBBLES32.read(records).astype(np.uint8)


def mxfp4_blocks(exponents: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The inverse of :func:`mxfp4_codes`: GGUF MXFP4 bytes (uint8, flat) of exponent bytes and codes."""
    records = np.zeros(exponents.size, MXFP4_RECORD)
    records["e"] = exponents
    _NIBBLES32.write(records, codes.reshape(exponents.size, GGUF_BLOCK).astype(np.int64))
    return records.view(np.uint8)


def gguf_type(ggml_type: Any) -> GgufType:
    """The table row of a GGML type given by name or by ``gguf.GGMLQuantizationType``; a type
    without one is refused as a type the converter does not support (HE-03, as a ``.hrry``
    reader refuses an element type it does not implement)."""
    name = getattr(ggml_type, "name", ggml_type)
    if not isinstance(name, str):
        raise ArgumentError("ggml_type", "a GGML type name", actual=repr(ggml_type), expected=", ".join(GGUF_TYPES))
    if name not in GGUF_TYPES:
        raise UnsupportedError("HE-03", f"no block converter for the GGML type {name}", path="ggml_type",
                               actual=name, expected=", ".join(GGUF_TYPES))
    return GGUF_TYPES[name]


@dataclass(frozen=True)
class SubBlocks:
    """A tensor's values as ``S[j] * q[j, i] (+ O[j])``, one row j per sub-block, in element order.

    ``S`` and ``O`` are what gguf computes, NaN and infinities included (an infinite d times a zero
    sub-block scale is NaN, silently); the converters refuse non-finite ones by their rules
    (HQ-PB-12, OL-PLAN-10, OL-PLAN-13) and no NumPy warning is printed on the way."""

    type: GgufType
    shape: tuple[int, ...]
    codes: np.ndarray          # int16 (sub-blocks, sub_block)
    scales: np.ndarray         # float32 (sub-blocks,): S
    offsets: np.ndarray | None  # float32 (sub-blocks,): O, or None when the type adds nothing

    def reference(self, rows: np.ndarray | None = None) -> np.ndarray:
        """The values as gguf computes them, in float32: ``S * q``, then ``+ O`` (flat); for the
        K-quants ``- (dmin * mn)`` as gguf subtracts it (the same float32 but for a NaN's sign).
        Only those of the sub-blocks ``rows`` (indices, in order) when given."""
        pick = slice(None) if rows is None else rows
        offsets = None if self.offsets is None else self.offsets[pick]
        with np.errstate(over="ignore", invalid="ignore"):
            values = self.scales[pick, None] * self.codes[pick].astype(np.float32)
            if offsets is not None and self.type.two_level:
                values = values - (-offsets)[:, None]
            elif offsets is not None:
                values = values + offsets[:, None]
        return values.reshape(-1)


def sub_blocks(raw: Any, ggml_type: Any, shape: Sequence[int]) -> SubBlocks:
    """Split GGUF blocks of a tensor of ``shape`` (NumPy order: blocks along the last axis)."""
    row = gguf_type(ggml_type)
    shape = tuple(int(n) for n in shape)
    if not shape or shape[-1] % row.elements:  # a GGUF property, not a Hurray rule
        raise ArgumentError("shape", f"{row.name} rows hold whole blocks of {row.elements}", actual=list(shape),
                            expected=f"a last dimension that is a multiple of {row.elements}")
    try:
        data = np.frombuffer(memoryview(raw).cast("B"), dtype=np.uint8)
    except TypeError as exc:
        raise ArgumentError("raw", "the block bytes are a bytes-like object", actual=type(raw).__name__) from exc
    blocks = int(np.prod(shape)) // row.elements
    if data.size != blocks * row.record.itemsize:
        raise ArgumentError("raw", f"{row.name} data of {blocks * row.elements} elements is {blocks} blocks of "
                            f"{row.record.itemsize} bytes", actual=data.size, expected=blocks * row.record.itemsize)
    codes, scales, offsets = row.unpack(data.view(row.record))
    per = row.sub_block
    return SubBlocks(row, shape, codes.reshape(-1, per), np.ascontiguousarray(scales, np.float32).reshape(-1),
                     None if offsets is None else np.ascontiguousarray(offsets, np.float32).reshape(-1))


def _same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float32).view(np.uint32) == b.astype(np.float32).view(np.uint32)


def gguf_parts(raw: Any, ggml_type: Any, shape: Sequence[int]) -> BlockParts:
    """GGUF Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 blocks as per-block affine parts whose values are gguf's, bit for bit."""
    row = gguf_type(ggml_type)
    if row.two_level:
        raise UnsupportedError(
            "HQ-HDR-09", f"{row.name} has two-level scales (a super-block scale times a {row.sub_block}-element "
            "sub-block scale); Hurray reserves tags 0x60-0x7F for such schemes and per-block affine does not "
            "hold them (HD-05): convert it to onnx-light instead", path="ggml_type", actual=row.name,
            expected=", ".join(t.name for t in GGUF_TYPES.values() if not t.two_level))
    sb = sub_blocks(raw, row.name, shape)
    d = sb.scales
    if not np.isfinite(d).all():  # refused before any arithmetic on it (HQ-PB-12 would refuse the scale anyway)
        j = int(np.flatnonzero(~np.isfinite(d))[0])
        raise RuleViolation("HQ-PB-12", f"{row.name} block {j} has a non-finite d; a per-block scale is finite",
                            path=f"raw -> blocks[{j}] -> d", actual=repr(float(d[j])), expected="finite")
    # Without offsets, a block keeps d and q unless d = 0, and its values are d * q as gguf computes
    # them: only the blocks of d = 0 need gguf's values, and the check (all of them with offsets).
    check = None if sb.offsets is not None else np.flatnonzero(d == 0)
    reference = sb.reference(check)
    codes = sb.codes.copy()
    scales = d.copy()
    zeros = None
    top = row.high
    if sb.offsets is not None:  # Q4_1 / Q5_1: d * q + m = d * (q - z) when m = -z * d
        m = sb.offsets
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(d != 0, np.rint(-m / d), 0)
        bad = (d != 0) & ~((z >= 0) & (z <= top) & (-z.astype(np.float32) * d == m))
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise RuleViolation(
                "HQ-PB-22", f"{row.name} block {j}: its offset m = {float(m[j])!r} is not -z * d for an integer z in "
                f"0..{top} (d = {float(d[j])!r}); per-block affine has integer zero points, so this block has no "
                "exact form", path=f"raw -> blocks[{j}] -> m", actual=float(m[j]),
                expected=f"-z * d, z an integer in 0..{top}")
        z = z.astype(np.int64)
        # With d < 0, q = z gives -0 in d * (q - z) but +0 in d * q + m, unless z = 0 and m = -0:
        # mirror those blocks (codes top - q, zero point top - z, scale -d) to get +0.
        flip = (d < 0) & ~((z == 0) & np.signbit(m))
        codes[flip] = top - codes[flip]
        z[flip] = top - z[flip]
        scales[flip] = -d[flip]
        zeros = z
    constant = d == 0  # HQ-PB-13 refuses a zero scale: a block of one value c gets scale c (or +-1 for zeros)
    if constant.any():
        values = reference.reshape(-1, row.elements)
        values = values[constant] if check is None else values  # with ``check``: the blocks of d = 0, in order
        uniform = np.all(_same_bits(values, values[:, :1]), axis=1)
        if not uniform.all():
            j = int(np.flatnonzero(constant)[np.flatnonzero(~uniform)[0]])
            raise RuleViolation("HQ-PB-13", f"{row.name} block {j} has d = 0 and values of two signs of zero; a "
                                "per-block scale is never zero, and one non-zero scale gives one sign",
                                path=f"raw -> blocks[{j}] -> d", actual=0.0, expected="a non-zero d")
        c = values[:, 0]
        nonzero = c != 0
        scales[constant] = np.where(nonzero, c if zeros is None else -c, np.copysign(np.float32(1), c))
        if zeros is None:  # c = c * 1
            codes[constant] = nonzero[:, None]
        else:  # c = -c * (0 - 1)
            codes[constant] = 0
            zeros[constant] = nonzero
    parts = BlockParts.from_block_order(codes.reshape(sb.shape), row.storage, len(sb.shape) - 1, row.sub_block,
                                        scales.astype(np.float16), "float16", zeros)
    pick = slice(None) if check is None else check
    steps = codes[pick].astype(np.float32)  # q - z in float32, as the per-block kernel computes it (exact)
    if zeros is not None:
        steps -= zeros[:, None].astype(np.float32)
    got = scales[pick, None] * steps
    same = _same_bits(got.reshape(-1), reference)
    if not same.all():
        k = int(np.flatnonzero(~same)[0])
        j = k if check is None else int(check[k // row.elements]) * row.elements + k % row.elements
        raise RuleViolation("HQ-PB-22", f"{row.name} element {j} has no exact per-block affine form "
                            "(x = scale * (q - z) gives another float32)", path=f"raw -> blocks[{j // row.elements}]",
                            actual=float(got.reshape(-1)[k]), expected=float(reference[k]))
    return parts


@dataclass(frozen=True)
class GgufTensor:
    """One tensor of a ``.gguf`` file: its name, GGML type name, NumPy-order shape and raw bytes."""

    name: str
    type_name: str
    shape: tuple[int, ...]
    data: np.ndarray  # uint8, memory-mapped from the file

    @property
    def elements(self) -> int:
        return int(np.prod(self.shape))

    @property
    def byte_shape(self) -> tuple[int, ...]:
        """The shape of :attr:`data` as rows of bytes (the shape gguf's writer takes for raw
        blocks): the last dimension in bytes, from the type's block size, so that an empty
        tensor has one too."""
        import gguf

        elements, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[self.type_name]]
        return (*self.shape[:-1], self.shape[-1] // elements * size) if self.shape else (self.data.size,)


class GgufTensors(Sequence[GgufTensor]):
    """The tensors of a ``.gguf`` file, as views of one read-only memory map.

    The whole layout is checked when this is made (:func:`~hurray_decl.convert.gguf_file.open_gguf`:
    counts, lengths and sizes against the file, with RULES.md codes), so nothing is returned from a
    file that would be refused. Iterating gives the pages of each tensor's data back to the system
    when the next tensor is asked for, so a caller converting tensor by tensor holds one tensor's
    data at a time. A missing or unreadable file raises ``OSError``.
    """

    def __init__(self, path: Any) -> None:  # a path, the file's bytes, or a layout opened already
        self.layout = path if isinstance(path, GgufFile) else open_gguf(path)

    def __len__(self) -> int:
        return len(self.layout.tensors)

    @overload
    def __getitem__(self, index: int) -> GgufTensor: ...

    @overload
    def __getitem__(self, index: slice) -> list[GgufTensor]: ...

    def __getitem__(self, index: int | slice) -> GgufTensor | list[GgufTensor]:
        if isinstance(index, slice):
            return [self._tensor(info) for info in self.layout.tensors[index]]
        return self._tensor(self.layout.tensors[index])

    def _tensor(self, info: GgufTensorInfo) -> GgufTensor:
        return GgufTensor(info.name, info.type_name, info.shape, self.layout.tensor_data(info))

    def __iter__(self) -> Iterator[GgufTensor]:
        for info in self.layout.tensors:
            yield self._tensor(info)
            self.layout.release(info)


def gguf_tensors(path: Any) -> GgufTensors:
    """The tensors of a ``.gguf`` file, checked, read one by one (see :class:`GgufTensors`)."""
    return GgufTensors(path)


def read_gguf(path: Any) -> list[GgufTensor]:
    """The tensors of a ``.gguf`` file (see :class:`GgufTensors`), checked, as memory-mapped views."""
    return list(GgufTensors(path))


@dataclass(frozen=True)
class GgufModel:
    """A ``.gguf`` file's tensors (:class:`GgufTensors`, read one by one; of every split in
    turn for a split model) and its KV entries (:class:`hurray_decl.convert.metadata.GgufEntry`),
    in file order."""

    tensors: Sequence[GgufTensor]
    kv: list[Any]


def read_gguf_model(path: Any) -> GgufModel:
    """The tensors and KV entries of a ``.gguf`` file, both from one checked layout
    (:func:`~hurray_decl.convert.gguf_file.open_gguf`; gguf's own reader never sees the file).
    A split of a model (``split.count`` above 1) gives the whole model, every split checked
    first (:func:`~hurray_decl.convert.gguf_splits.find_splits`): the first split's KV entries
    but the split keys, the splits' tensors in order."""
    from hurray_decl.convert.metadata import gguf_file_entries

    layouts = find_splits(path)
    kv = gguf_file_entries(layouts[0])
    if len(layouts) == 1:
        return GgufModel(GgufTensors(layouts[0]), kv)
    return GgufModel(Chained([GgufTensors(layout) for layout in layouts]), [e for e in kv if e.key not in SPLIT_KEYS])


# --- writing GGUF blocks ---------------------------------------------------------------------------

def no_gguf_form(type_name: str, why: str, path: str = "tensor", actual: Any = None,
                 expected: Any = None) -> ArgumentError:
    """The refusal of a tensor that has no exact form in a GGML type (GGUF has no rules in RULES.md)."""
    return ArgumentError(path, f"no exact {type_name} form: {why}", actual=actual, expected=expected)


def pack_blocks(ggml_type: Any, codes: np.ndarray, levels: Levels) -> np.ndarray:
    """GGUF blocks (uint8, flat) from every block's codes q (blocks x elements) and its scale levels."""
    row = gguf_type(ggml_type)
    blocks = np.zeros(codes.shape[0], row.record)
    row.write_codes(blocks, codes.astype(np.int64))
    row.write_levels(blocks, levels)
    return blocks.view(np.uint8)


def _factor(values: np.ndarray, codes: tuple[int, int], top: int, row: GgufType, what: str) -> tuple[np.ndarray,
                                                                                                    np.ndarray]:
    """``values[i, j] = f32(f16 d[i]) * c[i, j]`` with integer ``c`` in ``codes``: the super-block scale and codes.

    Several factorizations may exist (``2d`` and ``c / 2`` ...): the one llama.cpp's quantizer
    writes is taken, where the sub-block of largest ``|value|`` has code ``top`` (63 for Q4_K and
    Q5_K, 15 for Q2_K, -32 for Q3_K, -128 for Q6_K), then the other codes by falling ``|c|``. An
    all-zero super-block is ``d = 0``, codes 0.
    """
    lo, hi = codes
    n = values.shape[0]
    d = np.zeros(n, np.float32)
    c = np.zeros(values.shape, np.int64)
    done = np.all(values == 0, axis=1)
    reference = values[np.arange(n), np.argmax(np.abs(values), axis=1)].astype(np.float64)
    order = [top] + sorted((k for k in range(lo, hi + 1) if k not in (0, top)), key=lambda k: (-abs(k), k))
    for k in order:
        todo = np.flatnonzero(~done)
        if not todo.size:
            break
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            dd = (reference[todo] / k).astype(np.float16).astype(np.float32)
            kk = np.rint(values[todo].astype(np.float64) / dd[:, None].astype(np.float64))
            ok = (np.isfinite(kk) & (kk >= lo) & (kk <= hi)).all(axis=1) & (dd != 0) & np.isfinite(dd)
            kk = np.where(np.isfinite(kk), kk, 0)
            ok &= (dd[:, None] * kk.astype(np.float32) == values[todo]).all(axis=1)
        d[todo[ok]] = dd[ok]
        c[todo[ok]] = kk[ok].astype(np.int64)
        done[todo[ok]] = True
    if not done.all():
        i = int(np.flatnonzero(~done)[0])
        raise no_gguf_form(row.name, f"super-block {i}'s sub-block {what} are not one float16 times integers in "
                           f"{lo} .. {hi}", f"blocks[{i}] -> {what}", actual=values[i, :4].tolist())
    return d, c


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.astype(np.float32).view(np.uint32) == b.astype(np.float32).view(np.uint32)


def zero_codes(row: GgufType, q: np.ndarray, S: np.ndarray, O: np.ndarray | None,  # noqa: E741 - GGUF's names
               target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes for the sub-blocks whose ``S`` is zero, where every code gives the same value but for the sign of zero.

    A code 0 keeps the sign of ``S``; the most negative code flips it. gguf's and llama.cpp's
    quantizers write these blocks so (Q4_0: ``d = -0``, q = 0; Q6_K: ``d = 0``, q = -32), and the
    choice gives their bytes back.
    """
    zero = S == 0
    if not zero.any():
        return q, S
    q, S = q.copy(), S.copy()
    if not row.two_level:  # d is the sub-block's own: the sign of a block of one signed zero
        S[zero] = np.where(np.all(np.signbit(target[zero]), axis=1), np.float32(-0.0), np.float32(0.0))
    zero_code = 0 if row.low <= 0 <= row.high else row.low
    flip = np.signbit(target[zero]) != np.signbit(S[zero])[:, None]
    if O is not None:
        flip &= (O[zero] == 0)[:, None]
    q[zero] = np.where(flip, row.low, zero_code)
    return q, S


def sub_block_blocks(row: GgufType, shape: tuple[int, ...], q: np.ndarray, S: np.ndarray,
                     O: np.ndarray | None, target: np.ndarray) -> np.ndarray:  # noqa: E741
    """GGUF blocks of ``row`` whose values are ``target`` (float32, flat), bit for bit, from sub-blocks
    ``S * q (+ O)``: the single-level types take ``d = S`` and ``m = O`` (float16 values), the
    K-quants factor ``S`` and ``-O`` by :func:`_factor`. The result is decoded again and compared
    with ``target``, signed zeros included; anything else is refused."""
    if not shape or shape[-1] % row.elements:
        raise no_gguf_form(row.name, f"GGUF rows hold whole blocks of {row.elements}", "shape", list(shape),
                           f"a last dimension that is a multiple of {row.elements}")
    if O is not None and not row.has_offset:
        if (O != 0).any():
            j = int(np.flatnonzero(O != 0)[0])
            raise no_gguf_form(row.name, "the type adds no offset", f"sub_blocks[{j}] -> offset", float(O[j]), 0.0)
        O = None  # noqa: E741
    if ((q < row.low) | (q > row.high)).any():
        j = int(np.flatnonzero(((q < row.low) | (q > row.high)).ravel())[0])
        raise no_gguf_form(row.name, "a code is outside the type's range", f"elements[{j}]", int(q.ravel()[j]),
                           f"{row.low} .. {row.high}")
    blocks = q.size // row.elements
    offsets = np.zeros_like(S) if O is None else O
    levels: Levels
    if not row.two_level:
        for name, values in (("d", S), ("m", offsets)):
            with np.errstate(over="ignore"):
                exact = _same(values.astype(np.float16), values)
            if not exact.all():
                j = int(np.flatnonzero(~exact)[0])
                raise no_gguf_form(row.name, f"{name} is a float16", f"blocks[{j}] -> {name}", repr(float(values[j])),
                                   "a float16 value")
        levels = {"d": S} | ({"m": offsets} if row.has_offset else {})
    else:
        per = row.elements // row.sub_block
        d, sc = _factor(S.reshape(blocks, per), row.scale_codes, row.top_scale, row, "scales")
        levels = {"d": d, "sc": sc}
        if row.has_offset:
            dmin, mn = _factor(-offsets.reshape(blocks, per), row.min_codes, row.top_scale, row, "mins")
            levels |= {"dmin": dmin, "mn": mn}
    packed = pack_blocks(row.name, q.reshape(blocks, row.elements), levels)
    got = sub_blocks(packed, row.name, shape).reference()
    same = _same(got, target)
    if not same.all():
        j = int(np.flatnonzero(~same)[0])
        raise no_gguf_form(row.name, "its values differ from the source's (a signed zero or a rounding)",
                           f"elements[{j}]", repr(float(got[j])), repr(float(target[j])))
    return packed


SINGLE_LEVEL = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0")
"""The types a per-block affine tensor may take, tried in this order (the narrowest codes first)."""


def parts_blocks(parts: BlockParts, ggml_type: str | None = None) -> tuple[str, np.ndarray]:
    """A per-block affine tensor (blocks of 32 along the last axis, float16-exact scales) as GGUF blocks.

    ``ggml_type`` (the type the tensor came from, when known) is the only one tried; otherwise
    the first of :data:`SINGLE_LEVEL` that holds every value exactly: ``d = scale``, ``q = code - z``
    (Q4_0, Q5_0, Q8_0), or ``q = code - low`` and ``m = -(z - low) * d`` (Q4_1, Q5_1). A block of
    one value is written as gguf's quantizer writes it: ``d = 0`` (the sign of its zeros for
    Q4_0/Q5_0/Q8_0), ``q = 0`` and, for Q4_1/Q5_1, ``m`` the value. Returns the type and bytes.
    """
    shape = tuple(parts.codes.shape)
    where = "per-block affine"
    if parts.axis != len(shape) - 1 or parts.block_size != GGUF_BLOCK:
        raise no_gguf_form(ggml_type or "GGUF block", f"GGUF blocks are 32 elements along the last axis; this {where} "
                           f"tensor has blocks of {parts.block_size} along axis {parts.axis}", "block_size",
                           (parts.block_size, parts.axis), (GGUF_BLOCK, len(shape) - 1))
    codes = parts.codes.astype(np.int64).reshape(-1, GGUF_BLOCK)
    scale = parts.scales.astype(np.float32)
    z = np.zeros(scale.size, np.int64) if parts.zero_points is None else parts.zero_points.astype(np.int64)
    target = (scale[:, None] * (codes - z[:, None]).astype(np.float32)).reshape(-1)
    low = -(1 << (int(parts.storage[-1]) - 1)) if parts.storage.startswith("int") else 0
    names = [ggml_type] if ggml_type else [n for n in SINGLE_LEVEL if GGUF_TYPES[n].bits >= _bits_of(parts.storage)
                                           or _fits(codes - (0 if GGUF_TYPES[n].has_offset else z[:, None]), n, low)]
    error: ArgumentError | None = None
    for name in names:
        row = gguf_type(name)
        if row.two_level:
            raise no_gguf_form(name, "per-block affine has one scale level", "ggml_type", name, ", ".join(SINGLE_LEVEL))
        if row.has_offset:
            q, S, O = codes - low, scale.copy(), -((z - low).astype(np.float32) * scale)  # noqa: E741
            constant = np.all(_same(target.reshape(codes.shape), target.reshape(codes.shape)[:, :1]), axis=1)
            S[constant], q[constant], O[constant] = 0, 0, target.reshape(codes.shape)[constant, 0]
        else:
            q, S, O = codes - z[:, None], scale.copy(), None  # noqa: E741
            S[np.all(q == 0, axis=1)] *= 0  # a block of zeros: d = +-0, the sign of its zeros
        try:
            return name, sub_block_blocks(row, shape, q, S, O, target)
        except ArgumentError as err:
            error = err
    if error is None:
        raise no_gguf_form("GGUF", f"{parts.storage} codes fit none of {', '.join(SINGLE_LEVEL)}", "storage",
                           parts.storage)
    raise error


def _bits_of(storage: str) -> int:
    return int(storage.lstrip("uint"))


def _fits(q: np.ndarray, name: str, low: int) -> bool:
    row = GGUF_TYPES[name]
    shifted = q - low if row.has_offset else q
    return bool(((shifted >= row.low) & (shifted <= row.high)).all())
