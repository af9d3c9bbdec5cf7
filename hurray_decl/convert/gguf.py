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

from hurray_decl.convert.gguf_file import GGUF_MAGIC as GGUF_MAGIC, GgufTensorInfo, open_gguf  # the magic: re-exported
from hurray_decl.convert.parts import BlockParts
from hurray_decl.errors import ArgumentError, RuleViolation, UnsupportedError

__all__ = [
    "FLOAT_TYPES",
    "GGUF_BLOCK",
    "GGUF_MAGIC",
    "GGUF_TYPES",
    "GgufTensor",
    "GgufTensors",
    "GgufType",
    "SubBlocks",
    "gguf_parts",
    "gguf_tensors",
    "gguf_type",
    "read_gguf",
    "sub_blocks",
]

GGUF_BLOCK = 32
"""Elements per block of the single-level types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0)."""
QK_K = 256
"""Elements per super-block of the K-quants."""


FLOAT_TYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
"""Unquantized GGML types and their Hurray element types."""

F16 = "<f2"


def _bits(data: np.ndarray, index: np.ndarray, shift: np.ndarray, width: int) -> np.ndarray:
    """``width``-bit fields: element e is ``(data[:, index[e]] >> shift[e]) & mask``, as int16 (2 bytes a code)."""
    return (data[:, index].astype(np.int16) >> shift.astype(np.int16)) & ((1 << width) - 1)


_E32 = np.arange(GGUF_BLOCK)
_E = np.arange(QK_K)
_S16 = np.arange(QK_K // 16)


def _nibbles32(qs: np.ndarray) -> np.ndarray:
    """Q4_0 .. Q5_1: element e < 16 is the low nibble of byte e, element e >= 16 the high nibble of e - 16."""
    return _bits(qs, _E32 % 16, 4 * (_E32 // 16), 4)


def _k_low2(qs: np.ndarray) -> np.ndarray:
    """Q2_K / Q3_K: 2-bit fields; element e in byte 32 * (e // 128) + e % 32, at bit 2 * ((e % 128) // 32)."""
    return _bits(qs, 32 * (_E // 128) + _E % 32, 2 * ((_E % 128) // 32), 2)


def _k_nibbles(qs: np.ndarray) -> np.ndarray:
    """Q4_K / Q5_K: element e in byte 32 * (e // 64) + e % 32, low nibble when (e % 64) < 32."""
    return _bits(qs, 32 * (_E // 64) + _E % 32, 4 * ((_E % 64) // 32), 4)


def _k_high_bit(mask: np.ndarray) -> np.ndarray:
    """Q3_K hmask / Q5_K qh: element e is bit e // 32 of byte e % 32."""
    return _bits(mask, _E % 32, _E // 32, 1)


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


def _f32(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float32)


Unpacked = tuple[np.ndarray, np.ndarray, "np.ndarray | None"]
"""(codes per block, S per sub-block, O per sub-block or None)."""


def _q4_0(b: np.ndarray) -> Unpacked:
    return _nibbles32(b["qs"]) - 8, _f32(b["d"])[:, None], None


def _q4_1(b: np.ndarray) -> Unpacked:
    return _nibbles32(b["qs"]), _f32(b["d"])[:, None], _f32(b["m"])[:, None]


def _high_bit32(qh: np.ndarray) -> np.ndarray:
    """Q5_0 / Q5_1: element e's fifth bit is bit e of the little-endian 32-bit qh, bit e % 8 of byte e // 8."""
    return _bits(qh, _E32 // 8, _E32 % 8, 1)


def _q5_0(b: np.ndarray) -> Unpacked:
    return (_nibbles32(b["qs"]) | (_high_bit32(b["qh"]) << 4)) - 16, _f32(b["d"])[:, None], None


def _q5_1(b: np.ndarray) -> Unpacked:
    return _nibbles32(b["qs"]) | (_high_bit32(b["qh"]) << 4), _f32(b["d"])[:, None], _f32(b["m"])[:, None]


def _q8_0(b: np.ndarray) -> Unpacked:
    return b["qs"].astype(np.int16), _f32(b["d"])[:, None], None


def _q2_k(b: np.ndarray) -> Unpacked:
    s = b["scales"].astype(np.int64)
    return _k_low2(b["qs"]), _f32(b["d"])[:, None] * _f32(s & 15), -(_f32(b["dmin"])[:, None] * _f32(s >> 4))


def _q3_k(b: np.ndarray) -> Unpacked:
    s = b["scales"]
    low = _bits(s, _S16 % 8, 4 * (_S16 // 8), 4)
    high = _bits(s, 8 + _S16 % 4, 2 * (_S16 // 4), 2)
    q = _k_low2(b["qs"]) - 4 * (1 - _k_high_bit(b["hmask"]))  # a clear hmask bit subtracts 4
    return q, _f32(b["d"])[:, None] * _f32((low | (high << 4)) - 32), None


def _q4_k(b: np.ndarray) -> Unpacked:
    sc, mn = _k_scale_min(b["scales"])
    return _k_nibbles(b["qs"]), _f32(b["d"])[:, None] * _f32(sc), -(_f32(b["dmin"])[:, None] * _f32(mn))


def _q5_k(b: np.ndarray) -> Unpacked:
    sc, mn = _k_scale_min(b["scales"])
    q = _k_nibbles(b["qs"]) | (_k_high_bit(b["qh"]) << 4)
    return q, _f32(b["d"])[:, None] * _f32(sc), -(_f32(b["dmin"])[:, None] * _f32(mn))


def _q6_k(b: np.ndarray) -> Unpacked:
    low = _bits(b["ql"], 64 * (_E // 128) + _E % 64, 4 * ((_E % 128) // 64), 4)
    high = _bits(b["qh"], 32 * (_E // 128) + _E % 32, 2 * ((_E % 128) // 32), 2)
    return (low | (high << 4)) - 32, _f32(b["d"])[:, None] * _f32(b["scales"]), None


@dataclass(frozen=True)
class GgufType:
    """One GGML block type: its record, sub-blocks and codes."""

    name: str
    elements: int            # per block
    record: np.dtype         # the block's bytes, field by field
    sub_block: int           # elements per effective scale
    bits: int                # code width
    low: int                 # the smallest code q
    unpack: Callable[[np.ndarray], Unpacked]

    @property
    def two_level(self) -> bool:
        return self.elements != self.sub_block

    @property
    def high(self) -> int:
        return self.low + (1 << self.bits) - 1

    @property
    def storage(self) -> str:
        """The narrowest per-block affine storage holding the codes (5-bit codes in 8 bits)."""
        width = next(w for w in (2, 4, 8) if w >= self.bits)
        return ("int" if self.low < 0 else "uint") + str(width)


def _record(*fields: tuple) -> np.dtype:
    return np.dtype(list(fields))


GGUF_TYPES: dict[str, GgufType] = {t.name: t for t in (
    GgufType("Q4_0", 32, _record(("d", F16), ("qs", "u1", (16,))), 32, 4, -8, _q4_0),  # 2 + 16 = 18
    GgufType("Q4_1", 32, _record(("d", F16), ("m", F16), ("qs", "u1", (16,))), 32, 4, 0, _q4_1),  # 2 + 2 + 16 = 20
    GgufType("Q5_0", 32, _record(("d", F16), ("qh", "u1", (4,)), ("qs", "u1", (16,))), 32, 5, -16,
             _q5_0),  # 2 + 4 + 16 = 22
    GgufType("Q5_1", 32, _record(("d", F16), ("m", F16), ("qh", "u1", (4,)), ("qs", "u1", (16,))), 32, 5, 0,
             _q5_1),  # 2 + 2 + 4 + 16 = 24
    GgufType("Q8_0", 32, _record(("d", F16), ("qs", "i1", (32,))), 32, 8, -128, _q8_0),  # 2 + 32 = 34
    GgufType("Q2_K", QK_K, _record(("scales", "u1", (16,)), ("qs", "u1", (64,)), ("d", F16), ("dmin", F16)),
             16, 2, 0, _q2_k),  # 16 + 64 + 2 + 2 = 84
    GgufType("Q3_K", QK_K, _record(("hmask", "u1", (32,)), ("qs", "u1", (64,)), ("scales", "u1", (12,)), ("d", F16)),
             16, 3, -4, _q3_k),  # 32 + 64 + 12 + 2 = 110
    GgufType("Q4_K", QK_K, _record(("d", F16), ("dmin", F16), ("scales", "u1", (12,)), ("qs", "u1", (128,))),
             32, 4, 0, _q4_k),  # 2 + 2 + 12 + 128 = 144
    GgufType("Q5_K", QK_K, _record(("d", F16), ("dmin", F16), ("scales", "u1", (12,)), ("qh", "u1", (32,)),
                                   ("qs", "u1", (128,))), 32, 5, 0, _q5_k),  # 2 + 2 + 12 + 32 + 128 = 176
    GgufType("Q6_K", QK_K, _record(("ql", "u1", (128,)), ("qh", "u1", (64,)), ("scales", "i1", (16,)), ("d", F16)),
             16, 6, -32, _q6_k),  # 128 + 64 + 16 + 2 = 210
)}
"""The supported GGML block types, by name."""


def gguf_type(ggml_type: Any) -> GgufType:
    """The table row of a GGML type given by name or by ``gguf.GGMLQuantizationType``."""
    name = getattr(ggml_type, "name", ggml_type)
    if not isinstance(name, str) or name not in GGUF_TYPES:
        raise ArgumentError("ggml_type", "no converter for this GGML type", actual=name if isinstance(name, str)
                            else repr(ggml_type), expected=", ".join(GGUF_TYPES))
    return GGUF_TYPES[name]


@dataclass(frozen=True)
class SubBlocks:
    """A tensor's values as ``S[j] * q[j, i] (+ O[j])``, one row j per sub-block, in element order."""

    type: GgufType
    shape: tuple[int, ...]
    codes: np.ndarray          # int16 (sub-blocks, sub_block)
    scales: np.ndarray         # float32 (sub-blocks,): S
    offsets: np.ndarray | None  # float32 (sub-blocks,): O, or None when the type adds nothing

    def reference(self) -> np.ndarray:
        """The values as gguf computes them, in float32: ``S * q``, then ``+ O`` (flat)."""
        values = self.scales[:, None] * self.codes.astype(np.float32)
        if self.offsets is not None:
            values = values + self.offsets[:, None]
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
    reference = sb.reference()
    d = sb.scales
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
        values = reference.reshape(codes.shape)[constant]
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
    steps = codes.astype(np.float32)  # q - z in float32, as the per-block kernel computes it (exact)
    if zeros is not None:
        steps -= zeros[:, None].astype(np.float32)
    got = scales[:, None] * steps
    same = _same_bits(got.reshape(-1), reference)
    if not same.all():
        j = int(np.flatnonzero(~same)[0])
        raise RuleViolation("HQ-PB-22", f"{row.name} element {j} has no exact per-block affine form "
                            "(x = scale * (q - z) gives another float32)", path=f"raw -> blocks[{j // row.elements}]",
                            actual=float(got.reshape(-1)[j]), expected=float(reference[j]))
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


class GgufTensors(Sequence[GgufTensor]):
    """The tensors of a ``.gguf`` file, as views of one read-only memory map.

    The whole layout is checked when this is made (:func:`~hurray_decl.convert.gguf_file.open_gguf`:
    counts, lengths and sizes against the file, with RULES.md codes), so nothing is returned from a
    file that would be refused. Iterating gives the pages of each tensor's data back to the system
    when the next tensor is asked for, so a caller converting tensor by tensor holds one tensor's
    data at a time. A missing or unreadable file raises ``OSError``.
    """

    def __init__(self, path: Any) -> None:
        self.layout = open_gguf(path)

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
