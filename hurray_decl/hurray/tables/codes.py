"""Hurray's small code spaces, one enum each: devices, sync modes, memory classes (DIGEST § 5.6),
scale types, tile orders, KV roles, block-table index types, composition rules, combine ops,
member roles (§ 5.4, § 5.12), the header flags and the statistics mask (§ 5.2, § 5.10), and the
container's file flags and KV value tags (FILE-FORMAT.md § 3.1, § 5.3).

Each member carries its title, the name the spec and the dump give it. The field
documentation, the expected values of the rules, the dump's names, the strategies' pools and
the per-device matrix are all read from these enums (:func:`legend`, :func:`alternatives`,
:func:`span`); nothing else lists these codes.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum, IntFlag

from hurray_decl.errors import RuleViolation
from hurray_decl.hurray.tables.element_types import BY_NAME
from hurray_decl.hurray.tables.tags import INVALID_TAGS, PRIVATE_RANGE

PRIVATE_SPAN = f"0x{PRIVATE_RANGE.first:02X}-0x{PRIVATE_RANGE.last:02X}"
"""The private range every Hurray code space shares, as the rules write it."""
NOT_INVALID = " and ".join(f"0x{tag:02X}" for tag in INVALID_TAGS)
"""``0x00 and 0xFF``: the two bytes no Hurray code space uses."""


class Code(IntEnum):
    """A one-byte code whose members carry their title: ``CPU = 0x00, "CPU"``."""

    title: str

    def __new__(cls, value: int, title: str = "") -> Code:
        member = int.__new__(cls, value)
        member._value_ = value
        member.title = title
        return member

    @classmethod
    def codes(cls) -> list[int]:
        """The codes as plain ints, in order (what strategies draw and models hold)."""
        return [int(member) for member in cls]

    @classmethod
    def has(cls, value: int) -> bool:
        """Whether ``value`` is one of the codes (``value in cls`` refuses plain ints before 3.12)."""
        return value in cls._value2member_map_

    @property
    def hex(self) -> str:
        """``0x03``: the code as the rules and the dump write it."""
        return f"0x{int(self):02X}"


class CodeFlag(IntFlag):
    """A bit of a flags word whose members carry their title."""

    title: str

    def __new__(cls, value: int, title: str = "") -> CodeFlag:
        member = int.__new__(cls, value)
        member._value_ = value
        member.title = title
        return member


def _shown(code: int, form: str) -> str:
    return form.format(hex=f"0x{int(code):02X}", title=getattr(code, "title", ""))


def alternatives(codes: Iterable[int], conjunction: str = "or", form: str = "{hex}") -> str:
    """``0x00, 0x01 or 0x02``; ``form`` may add the titles: ``"{hex} ({title})"`` gives
    ``0x01 (float16), 0x02 (bfloat16) or 0x03 (float32)``."""
    shown = [_shown(c, form) for c in codes]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} {conjunction} {shown[-1]}"


def legend(codes: Iterable[int], form: str = "{hex} {title}") -> str:
    """``0x00 CPU, 0x01 CUDA, ...``: every code with its title."""
    return ", ".join(_shown(c, form) for c in codes)


def span(codes: Iterable[int]) -> str:
    """``0x00-0x08``: the codes, which must be contiguous, as one range."""
    values = sorted(int(c) for c in codes)
    if values != list(range(values[0], values[-1] + 1)):
        raise ValueError(f"codes {values} are not contiguous")
    return f"0x{values[0]:02X}-0x{values[-1]:02X}"


def runs(codes: Iterable[int]) -> str:
    """``0x01-0x0B, 0x40``: the codes as their contiguous runs, in order."""
    values = sorted(int(c) for c in codes)
    parts, start = [], 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[i - 1] + 1:
            first, last = values[start], values[i - 1]
            parts.append(f"0x{first:02X}" if first == last else f"0x{first:02X}-0x{last:02X}")
            start = i
    return ", ".join(parts)


def bit_legend(flags: Iterable[CodeFlag]) -> str:
    """``bit 0 nnz, 1 sparsity, ...``: each flag's bit number with its title."""
    return "bit " + ", ".join(f"{int(f).bit_length() - 1} {f.title}" for f in flags)


def clear_above(flags: type[CodeFlag], width: int = 32) -> str:
    """``bits 5-31 clear``: the bits above the defined ones, which must be zero."""
    return f"bits {int(sum(flags)).bit_length()}-{width - 1} clear"


def title_of(enum: type[Code], value: int) -> str | None:
    """The title of ``value`` in ``enum``, None when it is not a member."""
    try:
        return enum(value).title
    except ValueError:
        return None


# ---------------------------------------------------------------- the buffer handle (§ 5.6)

class MemoryClass(Code):
    """memory_class: where a buffer's bytes live."""

    STANDARD = 0x00, "STANDARD"
    HOST_PINNED = 0x01, "HOST_PINNED"
    UNIFIED = 0x02, "UNIFIED"
    PEER = 0x03, "PEER"


class SyncMode(Code):
    """sync_mode: what a consumer waits for before reading a buffer."""

    PRODUCER_SYNCED = 0x00, "producer-synced"
    EVENT = 0x01, "event"
    CONSUMER_STREAM = 0x02, "consumer-stream"


_ALL = frozenset(MemoryClass)
_NO_PEER = _ALL - {MemoryClass.PEER}


class Device(Code):
    """device_tag: the device a buffer lives on, with the memory classes it offers (the
    per-device matrix of § 5.6)."""

    memory_classes: frozenset[MemoryClass]

    def __new__(cls, value: int, title: str = "", memory_classes: frozenset[MemoryClass] = _ALL) -> Device:
        member = int.__new__(cls, value)
        member._value_ = value
        member.title = title
        member.memory_classes = memory_classes
        return member

    CPU = 0x00, "CPU", _NO_PEER
    CUDA = 0x01, "CUDA", _ALL
    ROCM = 0x02, "ROCm", _ALL
    METAL = 0x03, "Metal", _NO_PEER
    VULKAN = 0x04, "Vulkan", _ALL
    WEBGPU = 0x05, "WebGPU", frozenset({MemoryClass.STANDARD})
    HEXAGON = 0x06, "Hexagon", _NO_PEER
    LEVEL_ZERO = 0x07, "Level Zero", _ALL
    OPENCL = 0x08, "OpenCL", _NO_PEER


# ---------------------------------------------------------------- scale types (§ 3.5)

def _element(name: str) -> tuple[int, str]:
    return BY_NAME[name].tag, name


class ScaleType(Code):
    """scale_type_tag: the element type of a scheme's scales, by its type tag (the title is
    the element type's name)."""

    FLOAT16 = _element("float16")
    BFLOAT16 = _element("bfloat16")
    FLOAT32 = _element("float32")

    @classmethod
    def named(cls, name: str) -> ScaleType:
        """The scale type whose element type is ``name``; HQ-PB-08 for any other name."""
        found = next((member for member in cls if member.title == name), None)
        if found is None:
            raise RuleViolation("HQ-PB-08", f"unknown scale type {name!r}", path="scale_type",
                                actual=name, expected=", ".join(member.title for member in cls))
        return found


# ---------------------------------------------------------------- layout fields (§ 5.4)

class TileOrder(Code):
    """outer_layout / inner_layout: the order of the tile grid and of the elements in a tile."""

    ROW_MAJOR = 0x01, "row-major"
    COLUMN_MAJOR = 0x02, "column-major"
    STRIDED = 0x03, "strided"
    NESTED = 0x04, "nested tiling"
    """inner_layout only: the tile holds another tiled level."""


class KVRole(Code):
    """kv_role of a block-paged cache (``_CACHE`` as in the .ksy, where ``value`` would clash)."""

    KEY_CACHE = 0x00, "key"
    VALUE_CACHE = 0x01, "value"
    FUSED = 0x02, "fused or generic"


class BlockTableIndexType(Code):
    """block_table_index_type: the entries of the block table and seq_ptr buffers."""

    width: int

    def __new__(cls, value: int, title: str = "", width: int = 0) -> BlockTableIndexType:
        member = int.__new__(cls, value)
        member._value_ = value
        member.title = title
        member.width = width
        return member

    U32 = 0x00, "u32", 4
    U64 = 0x01, "u64", 8


class CompositionRule(Code):
    """composition_rule of a composite head."""

    PARTITION = 0x01, "partition"
    OVERLAY = 0x02, "overlay"
    GROUP = 0x03, "group"


class CombineOp(Code):
    """combine_op of a composite head: none for partition and group, replace or add for an overlay."""

    NONE = 0x00, "none"
    REPLACE = 0x01, "replace"
    ADD = 0x02, "add"


OVERLAY_OPS = (CombineOp.REPLACE, CombineOp.ADD)
"""The combine ops of an overlay."""


# ---------------------------------------------------------------- sections (§ 5.10, § 5.12)

class MemberRole(Code):
    """member_role of a composite member."""

    CORRECTION = 0x00, "correction"
    BASE = 0x01, "base"


class Flag(CodeFlag):
    """Fixed-header flags; each gates one optional section."""

    HAS_QUANTIZATION = 1 << 0, "quantization"
    HAS_SHARD = 1 << 1, "shard"
    HAS_EXTENSION_TYPE = 1 << 2, "extension type"
    HAS_STATISTICS = 1 << 3, "statistics"
    HAS_COMPOSITE_MEMBER = 1 << 4, "composite member"


class Statistic(CodeFlag):
    """computed_mask bits of the statistics section: which statistics are known."""

    NNZ_VALID = 1 << 0, "nnz"
    SPARSITY_VALID = 1 << 1, "sparsity"
    VALUE_RANGE_VALID = 1 << 2, "value range"
    VALUE_STATS_VALID = 1 << 3, "mean/stddev"
    NM_SPARSITY_VALID = 1 << 4, "N:M"
    NAN_INF_VALID = 1 << 5, "NaN/inf"



# ---------------------------------------------------------------- the container (FILE-FORMAT.md)

class FileFlag(CodeFlag):
    """``file_flags`` bits (FILE-FORMAT.md § 3.1)."""

    HAS_KV_METADATA = 1 << 0, "KV metadata"
    SORTED_INDEX = 1 << 1, "sorted index"
    HAS_INDEX_CRC32C = 1 << 2, "index CRC-32C"


class KVTag(Code):
    """KV value tags (§ 5.3); the tags after the last one up to the private range are reserved,
    0x00 and 0xFF are invalid."""

    STRING = 0x01, "string"
    INT64 = 0x02, "int64"
    UINT64 = 0x03, "uint64"
    FLOAT64 = 0x04, "float64"
    BOOL = 0x05, "bool"
    BYTES = 0x06, "bytes"
    ARRAY = 0x07, "array"
