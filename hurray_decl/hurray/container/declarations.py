"""The ``.hrry`` container declared once (FILE-FORMAT.md § 3, § 5-7; RULES.md HF-*).

File header, trailer, index entry and KV entry are Construct declarations whose fields carry
their documentation and the rules (HF codes) that refuse bad values, on parse and build
alike. The reader, the writer, the hex dump, the Kaitai agreement test and the mutants all
take offsets, sizes and paths from these declarations.

Checks that need the file around a field (its size, the header's flags and minor version, the
index checksum) read them from the parse keywords: ``file_size``, ``file_flags``, ``minor`` and
``index_crc`` (the CRC-32C of the index bytes, computed only when the flag asks for it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import construct as cs
from construct.core import evaluate, stream_size, stream_tell

from hurray_decl.declare.schema import Rule, construct_path
from hurray_decl.errors import TruncatedError
from hurray_decl.hurray.tables.codes import (
    NOT_INVALID,
    FileFlag as FileFlag,  # re-exported: the container's code spaces
    KVTag as KVTag,
    clear_above,
    legend,
    span,
)
from hurray_decl.hurray.tables.tags import INVALID_TAGS, PRIVATE_RANGE, PRIVATE_TAGS

FILE_MAGIC = b"HRRYFILE"
TRAILER_MAGIC = b"HRRY"
SUPPORTED_MAJOR = 1
UNKNOWN_COUNT = 0xFFFF_FFFF_FFFF_FFFF
"""tensor_count_hint meaning "not known when the header was written"."""
MIN_ALIGNMENT = 4096
MAX_ALIGNMENT = 2 * 1024 * 1024
DESCRIPTOR_ALIGNMENT = 8
MAX_COMPOSITE_DEPTH = 8  # HF-DATA-17, HF-D23
U16_MAX = 0xFFFF
U32_MAX = 0xFFFF_FFFF


DEFINED_FILE_FLAGS = int(sum(FileFlag))

PRIVATE_KV_TAGS = PRIVATE_TAGS
RESERVED_KV_TAGS = range(max(KVTag) + 1, PRIVATE_RANGE.first)
"""The KV value tags after the assigned ones, up to the private range (HF-META-16)."""


def _params(ctx: Any) -> dict[str, Any]:
    return getattr(ctx, "_params", None) or {}


def _minor(ctx: Any) -> int:
    """The container minor version: a sibling field in the header, a parse keyword elsewhere."""
    if "container_version_minor" in ctx:
        return ctx.container_version_minor
    return _params(ctx).get("minor", 0)


def _flags(ctx: Any) -> int:
    return _params(ctx).get("file_flags", 0)


def utf8(value: bytes) -> bool:
    """Well-formed UTF-8: Python's strict decoder refuses overlongs, surrogates and > U+10FFFF."""
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class CountWithin(cs.Subconstruct):
    """A count whose items (each at least ``item_size`` bytes) must fit in the rest of the
    section: a count claimed in the input never drives allocation (HF-IDX-03-S, DIFF-16)."""

    def __init__(self, subcon: cs.Construct, item_size: int | Callable[[Any], int], code: str, what: str) -> None:
        super().__init__(subcon)
        self.item_size = item_size
        self.code = code
        self.what = what

    def _parse(self, stream, context, path):
        offset = stream_tell(stream, path)
        count = self.subcon._parsereport(stream, context, path)
        left = stream_size(stream) - stream_tell(stream, path)
        size = evaluate(self.item_size, context)
        if count * size > left:
            raise TruncatedError(
                self.code, f"{self.what} cannot fit in the bytes left in its section",
                path=construct_path(path), offset=offset, actual=count,
                expected=f"<= {left // size} ({left} bytes left)")
        return count

    def _build(self, obj, stream, context, path):
        return self.subcon._build(obj, stream, context, path)


def reserved(count: int, code: str, what: str) -> cs.Construct:
    """Reserved bytes: 0x00 at minor 0, ignored at a higher minor (HF-D06); built as zeros."""
    zeros = bytes(count)
    return cs.Default(Rule(cs.Bytes(count), lambda v, ctx: v == zeros or _minor(ctx) > 0, code, zeros,
                           f"{what} must be zero (minor-0 strict)"), zeros)


def _pow2(v: int, _: Any) -> bool:
    return v != 0 and v & (v - 1) == 0


MAJOR = Rule(Rule(cs.Int8ul, lambda v, _: v <= SUPPORTED_MAJOR, "HF-HDR-04", SUPPORTED_MAJOR,
                  "newer container major version than this reader supports"),
             lambda v, _: v >= SUPPORTED_MAJOR, "HF-HDR-05", SUPPORTED_MAJOR,
             "container major version 0: no migration path (pre-1.0)")


def _file_header(length: int) -> cs.Struct:
    """The file header; ``length`` (its own size) bounds first_descriptor_offset (HF-HDR-13)."""
    return cs.Struct(
        "magic" / Rule(cs.Bytes(8), lambda v, _: v == FILE_MAGIC, "HF-HDR-03",
                       FILE_MAGIC, "not a Hurray container")
        * '48 52 52 59 46 49 4C 45 ("HRRYFILE")',
        "container_version_major" / MAJOR * "container major version; 1",
        "container_version_minor" / cs.Int8ul * "container minor version; higher minors relax only HF-D06",
        "reserved" / reserved(2, "HF-HDR-08", "header bytes 10-11") * "_reserved u8[2]",
        "file_flags" / Rule(cs.Int32ul, lambda v, _: v & ~DEFINED_FILE_FLAGS == 0, "HF-HDR-10", clear_above(FileFlag),
                            "a reserved file_flags bit is set")
        * "bit 0 HAS_KV_METADATA, 1 SORTED_INDEX, 2 HAS_INDEX_CRC32C",
        "data_buffer_alignment" / Rule(
            Rule(cs.Int32ul, _pow2, "HF-HDR-11", "a power of two", "data_buffer_alignment is not a power of two"),
            lambda v, _: MIN_ALIGNMENT <= v <= MAX_ALIGNMENT, "HF-HDR-12", f"[{MIN_ALIGNMENT}, {MAX_ALIGNMENT}]",
            "data_buffer_alignment is out of range")
        * "A: every data buffer starts on a multiple of A",
        "first_descriptor_offset" / Rule(
            Rule(cs.Int64ul, lambda v, _: v >= length, "HF-HDR-13", f">= {length}",
                 "first_descriptor_offset points into the header"),
            lambda v, _: v % DESCRIPTOR_ALIGNMENT == 0, "HF-HDR-14", "a multiple of 8",
            "first_descriptor_offset is not 8-aligned")
        * "offset of the first descriptor (or of the KV/index section when there are no tensors)",
        "tensor_count_hint" / cs.Int64ul * "0xFFFFFFFFFFFFFFFF (unknown) or exactly index_entry_count",
        "reserved_header" / reserved(28, "HF-HDR-09", "header bytes 36-63") * "_reserved_header u8[28]",
    )


HEADER_LENGTH = _file_header(0).sizeof()  # 64 (HF-HDR-02)
FILE_HEADER = _file_header(HEADER_LENGTH)
"""The 64-byte file header (HF-HDR-02)."""

FILE_PREAMBLE = cs.Struct(*FILE_HEADER.subcons[:2])
"""magic and major version: what decides whether the rest is read at all."""


INDEX_ENTRY = cs.Struct(
    "name_length" / Rule(cs.Int16ul, lambda v, _: v >= 1, "HF-IDX-11", ">= 1", "a tensor name is empty")
    * "bytes of name",
    "name" / Rule(cs.Bytes(cs.this.name_length), lambda v, _: utf8(v), "HF-IDX-12", "well-formed UTF-8",
                  "a tensor name is not well-formed UTF-8")
    * "tensor name, UTF-8, unique",
    "descriptor_offset" / cs.Int64ul * "absolute offset of the descriptor; 8-aligned",
    "descriptor_length" / cs.Int32ul * "= the descriptor's own descriptor_length",
    "data_offset" / cs.Int64ul * "absolute offset of buffer 0 (alignA(descriptor end))",
    "data_length" / cs.Int64ul * "end of the last buffer - data_offset",
    "flags" / Rule(cs.Int32ul, lambda v, _: v == 0, "HF-IDX-14", "0x00000000", "an index entry flags bit is set")
    * "0x00000000",
)
"""One index entry, ``34 + name_length`` bytes (HF-IDX-08)."""

ENTRY_FIXED = sum(sub.sizeof() for sub in INDEX_ENTRY.subcons if sub.name != "name")
"""An index entry without its name: 34 + name_length (HF-IDX-08)."""

INDEX_COUNT = cs.Struct(
    "index_entry_count" / CountWithin(cs.Int64ul, ENTRY_FIXED, "HF-IDX-09", "index_entry_count entries")
    * "number of index entries = number of tensors",
)
INDEX_COUNT_LENGTH = INDEX_COUNT.sizeof()

KV_COUNT = cs.Struct(
    "kv_count" / CountWithin(cs.Int32ul, 2 + 1 + 1 + 1, "HF-META-07", "kv_count entries")
    * "number of KV entries",
)
KV_COUNT_LENGTH = KV_COUNT.sizeof()


def _index_fits(v: int, ctx: Any) -> bool:
    end = _params(ctx).get("file_size", 0) - TRAILER_LENGTH
    return ctx.index_offset <= end and v <= end - ctx.index_offset  # no overflow (HF-IDX-04)


def _kv_present(ctx: Any, length: int) -> bool:
    return ctx.kv_offset != 0 and length != 0


def _crc_ok(v: int, ctx: Any) -> bool:
    if not _flags(ctx) & FileFlag.HAS_INDEX_CRC32C:
        return True
    return v == _params(ctx)["index_crc"](ctx.index_offset, ctx.index_length)


TRAILER_MAGIC_FIELD = "trailer_magic" / Rule(cs.Bytes(4), lambda v, _: v == TRAILER_MAGIC, "HF-IDX-02",
                                             TRAILER_MAGIC, "the trailer magic is missing") * '48 52 52 59 ("HRRY")'

TRAILER = cs.Struct(
    "index_offset" / Rule(cs.Int64ul, lambda v, _: v % 8 == 0, "HF-IDX-05", "a multiple of 8",
                          "index_offset is not 8-aligned")
    * "absolute offset of the index section",
    "index_length" / Rule(
        Rule(cs.Int64ul, _index_fits, "HF-IDX-04", "index_offset + index_length <= file_size - 40",
             "the index overruns the trailer"),
        lambda v, _: v >= INDEX_COUNT_LENGTH, "HF-IDX-09", f">= {INDEX_COUNT_LENGTH}",
        "the index cannot hold its entry count")
    * "bytes of the index section",
    "kv_offset" / Rule(cs.Int64ul, lambda v, _: v % 8 == 0, "HF-META-05", "a multiple of 8",
                       "kv_offset is not 8-aligned")
    * "absolute offset of the KV section; 0 = none",
    "kv_length" / Rule(Rule(Rule(Rule(
        cs.Int32ul, lambda v, ctx: (ctx.kv_offset == 0) == (v == 0), "HF-META-02",
        "kv_offset and kv_length both 0 or both non-zero", "kv_offset and kv_length disagree on KV presence"),
        lambda v, ctx: not _flags(ctx) & FileFlag.HAS_KV_METADATA or _kv_present(ctx, v), "HF-META-03",
        "a KV section", "HAS_KV_METADATA is set but the trailer records no KV section"),
        lambda v, ctx: not _kv_present(ctx, v) or v >= KV_COUNT_LENGTH, "HF-META-07", f">= {KV_COUNT_LENGTH}",
        "the KV section cannot hold its entry count"),
        lambda v, ctx: not _kv_present(ctx, v) or ctx.kv_offset + v <= ctx.index_offset, "HF-META-06",
        "kv_offset + kv_length <= index_offset", "the KV section overlaps the index")
    * "bytes of the KV section; 0 = none",
    "index_crc32c" / Rule(Rule(
        cs.Int32ul, lambda v, ctx: bool(_flags(ctx) & FileFlag.HAS_INDEX_CRC32C) or v == 0, "HF-DATA-21",
        "0 while HAS_INDEX_CRC32C is clear", "index_crc32c is set although HAS_INDEX_CRC32C is clear"),
        _crc_ok, "HF-DATA-20", "the CRC-32C of the index bytes", "index CRC-32C mismatch")
    * "CRC-32C (Castagnoli) of the index_length bytes at index_offset",
    "reserved" / reserved(4, "HF-IDX-03", "trailer bytes 32-35") * "_reserved u8[4]",
    TRAILER_MAGIC_FIELD,
)
"""The 40-byte trailer (HF-IDX-01); its magic is parsed first, on its own (HF-IDX-02)."""

TRAILER_LENGTH = TRAILER.sizeof()
MIN_FILE_SIZE = HEADER_LENGTH + INDEX_COUNT_LENGTH + TRAILER_LENGTH  # 112 (HF-HDR-18)

TRAILER_MAGIC_STRUCT = cs.Struct(TRAILER_MAGIC_FIELD)


# ---------------------------------------------------------------- KV section


def _string(code: str) -> cs.Struct:
    return cs.Struct(
        "length" / CountWithin(cs.Int32ul, 1, "HF-META-07", "a string length") * "u32 byte length",
        "bytes" / Rule(cs.Bytes(cs.this.length), lambda v, _: utf8(v), code, "well-formed UTF-8",
                       "a KV string is not well-formed UTF-8") * "UTF-8 bytes",
    )


SCALAR_PAYLOADS: dict[int, cs.Construct] = {
    KVTag.STRING: _string("HF-META-13"),
    KVTag.INT64: cs.Int64sl * "int64, two's complement",
    KVTag.UINT64: cs.Int64ul * "uint64",
    KVTag.FLOAT64: cs.Float64l * "float64, IEEE 754 binary64",
    KVTag.BOOL: Rule(cs.Int8ul, lambda v, _: v in (0, 1), "HF-META-14", "0x00 or 0x01", "a KV bool is not 0 or 1")
    * "bool: 0x00 false, 0x01 true",
    KVTag.BYTES: cs.Struct(
        "length" / CountWithin(cs.Int32ul, 1, "HF-META-07", "a byte-sequence length") * "u32 byte length",
        "bytes" / cs.Bytes(cs.this.length) * "opaque bytes",
    ),
}
"""Bare payloads of the scalar tags: the elements of an array too (HF-META-12)."""

MIN_PAYLOAD = {KVTag.STRING: 4, KVTag.INT64: 8, KVTag.UINT64: 8, KVTag.FLOAT64: 8, KVTag.BOOL: 1, KVTag.BYTES: 4}
"""The smallest payload of each scalar tag: bounds array counts by the bytes left."""


class _Refuse(cs.Construct):
    """The default of a Switch whose key a Rule already refused: never reached, never silent."""

    def _parse(self, stream, context, path):
        raise cs.SwitchError("no payload declared for this tag", path=path)

    def _build(self, obj, stream, context, path):
        raise cs.SwitchError("no payload declared for this tag", path=path)


ELEMENT_TAG = Rule(cs.Int8ul, lambda v, _: v in SCALAR_PAYLOADS, "HF-META-15", span(SCALAR_PAYLOADS),
                   "an array element tag must be a scalar tag")

ARRAY_PAYLOAD = cs.Struct(
    "element_tag" / ELEMENT_TAG * f"element tag {span(SCALAR_PAYLOADS)} (no nesting)",
    "count" / CountWithin(cs.Int32ul, lambda ctx: MIN_PAYLOAD.get(ctx.element_tag, 1), "HF-META-07",
                          "an array count") * "u32 element count",
    "items" / cs.Array(cs.this.count, cs.Switch(cs.this.element_tag, SCALAR_PAYLOADS, _Refuse()))
    * "count bare payloads of the element type",
)

VALUE_TAG = Rule(Rule(Rule(
    cs.Int8ul, lambda v, _: v not in INVALID_TAGS, "HF-META-17", f"a tag other than {NOT_INVALID}",
    "invalid KV value tag"),
    lambda v, _: v not in RESERVED_KV_TAGS, "HF-META-16", f"not {span(RESERVED_KV_TAGS)}", "reserved KV value tag"),
    lambda v, _: v not in PRIVATE_KV_TAGS, "HF-META-18", f"{span(KVTag)} (no private tag is registered)",
    "private KV value tag without an agreement")

KV_ENTRY = cs.Struct(
    "key_length" / Rule(cs.Int16ul, lambda v, _: v >= 1, "HF-META-09", ">= 1", "a KV key is empty")
    * "bytes of key",
    "key" / Rule(cs.Bytes(cs.this.key_length), lambda v, _: utf8(v), "HF-META-10", "well-formed UTF-8",
                 "a KV key is not well-formed UTF-8") * "key, UTF-8, unique",
    "value_tag" / VALUE_TAG * legend(KVTag),
    "value" / cs.Switch(cs.this.value_tag, {**SCALAR_PAYLOADS, KVTag.ARRAY: ARRAY_PAYLOAD}, _Refuse())
    * "payload of value_tag",
)
"""One KV entry (HF-META-01, HF-META-12)."""


def payload_size(tag: int, value: Any) -> int:
    """Encoded size of one bare payload, computed without building it (HF-META-19 checks)."""
    if tag in (KVTag.STRING, KVTag.BYTES):
        return 4 + len(value)
    if tag == KVTag.BOOL:
        return 1
    if tag in (KVTag.INT64, KVTag.UINT64, KVTag.FLOAT64):
        return 8
    raise ValueError(f"no scalar payload for tag {tag}")  # arrays are sized by the model


__all__ = [
    "ARRAY_PAYLOAD",
    "FILE_HEADER",
    "FILE_MAGIC",
    "FILE_PREAMBLE",
    "HEADER_LENGTH",
    "INDEX_COUNT",
    "INDEX_ENTRY",
    "KV_COUNT",
    "KV_ENTRY",
    "MIN_FILE_SIZE",
    "SCALAR_PAYLOADS",
    "TRAILER",
    "TRAILER_LENGTH",
    "UNKNOWN_COUNT",
    "CountWithin",
    "FileFlag",
    "KVTag",
    "payload_size",
]
