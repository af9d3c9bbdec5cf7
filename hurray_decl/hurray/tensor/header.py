"""The fixed 20-byte header, shape and byte_offset (DIGEST § 5.2, § 5.3)."""

from __future__ import annotations

from functools import cache
from typing import Any

import construct as cs

from hurray_decl.declare.schema import Bytes, Rule
from hurray_decl.hurray.tables.codes import (
    NOT_INVALID,
    PRIVATE_SPAN,
    Flag as Flag,  # re-exported: the header's code space
    bit_legend,
    clear_above,
    runs,
)
from hurray_decl.hurray.tables.element_types import BY_TAG, RESERVED_TYPE_TAGS, TypeTagClass, type_tag_range
from hurray_decl.hurray.tables.tags import INVALID_TAGS, is_private
from hurray_decl.hurray.tensor.common import MAX_RANK, SUPPORTED_MAJOR, permissive
from hurray_decl.hurray.tensor.layouts import LAYOUTS

MAGIC = b"HRRY"


DEFINED_FLAGS = int(sum(Flag))


def _type_not_invalid(v: int, _: Any) -> bool:
    return type_tag_range(v).cls is not TypeTagClass.INVALID


def _type_not_reserved(v: int, _: Any) -> bool:
    return type_tag_range(v).cls is not TypeTagClass.RESERVED


def _type_known(v: int, ctx: Any) -> bool:
    return v in BY_TAG or type_tag_range(v).cls is TypeTagClass.PRIVATE or permissive(ctx)


def _layout_known(v: int, ctx: Any) -> bool:
    return v in LAYOUTS or is_private(v) or permissive(ctx)


TYPE_TAG = Rule(Rule(Rule(Rule(
    cs.Int8ul, _type_not_invalid, "HE-02", f"a type tag other than {NOT_INVALID}", "invalid type tag"),
    _type_not_reserved, "HE-05", "not 0x80-0xEF", "type tags 0x80-0xEF are reserved"),
    lambda v, _: v not in RESERVED_TYPE_TAGS, "HE-06", "not 0x47", "type tag 0x47 is reserved"),
    _type_known, "HE-03", "an assigned or private type tag", "unrecognised type tag")

LAYOUT_TAG = Rule(Rule(
    cs.Int8ul, lambda v, _: v not in INVALID_TAGS, "HT-HDR-15", f"a layout tag other than {NOT_INVALID}",
    "invalid layout tag"),
    _layout_known, "HT-HDR-16", f"{runs(LAYOUTS.keys())} or private {PRIVATE_SPAN}", "unrecognised layout tag")

_LEADING = (
    "magic" / Rule(Bytes(4), lambda v, _: v == MAGIC, "HT-HDR-04", MAGIC, "not a Hurray descriptor")
    * "48 52 52 59 (\"HRRY\")",
    "version_major" / cs.Default(Rule(
        Rule(cs.Int8ul, lambda v, _: v >= SUPPORTED_MAJOR, "HT-HDR-06", SUPPORTED_MAJOR,
             "no migration path from an older major version"),
        lambda v, _: v <= SUPPORTED_MAJOR, "HT-HDR-05", SUPPORTED_MAJOR,
        "newer major version than this reader supports"), SUPPORTED_MAJOR)
    * "format major version; 1",
    "version_minor" / cs.Default(cs.Int8ul, 0)
    * "format minor version; newer minors are read, their extra bytes skipped",
)
_LENGTH = cs.Int32ul
_TRAILING = (
    "flags" / Rule(cs.Int32ul, lambda v, _: v & ~DEFINED_FLAGS == 0, "HT-HDR-12", clear_above(Flag),
                   "a reserved flags bit is set")
    * bit_legend(Flag),
    "type_tag" / TYPE_TAG * "element (storage) type of the tensor",
    "layout_tag" / LAYOUT_TAG * "memory layout; selects the layout-specific fields",
    "rank" / Rule(cs.Int32ul, lambda v, _: v <= MAX_RANK, "HT-HDR-13", f"<= {MAX_RANK}", "rank above 64")
    * "number of dimensions; 0 for a scalar, at most 64",
)

HEADER_LENGTH = sum(field.sizeof() for field in (*_LEADING, _LENGTH, *_TRAILING))
"""Bytes of the fixed header, from its fields (descriptor_length's own rule needs the number)."""

HEADER = cs.Struct(
    *_LEADING,
    "descriptor_length" / Rule(_LENGTH, lambda v, _: v >= HEADER_LENGTH, "HT-HDR-07",
                               f">= {HEADER_LENGTH}", "descriptor_length cannot hold the fixed header")
    * "total bytes of this descriptor, header included",
    *_TRAILING,
)
"""The fixed header (HT-HDR-03)."""

PREAMBLE = cs.Struct(*HEADER.subcons[:len(_LEADING) + 1])
"""magic, versions and descriptor_length: what a reader needs to skip the descriptor."""
PREAMBLE_LENGTH = PREAMBLE.sizeof()  # enough to skip a whole descriptor (HT-HDR-10)


def core_fields(rank: Any) -> tuple[cs.Construct, ...]:
    """shape and byte_offset for ``rank`` dimensions (a number, or ``this.rank``)."""
    return (
        "shape" / cs.Default(cs.Array(rank, cs.Int64ul), ())
        * "u64[rank], dimension 0 first; 0xFFFFFFFFFFFFFFFF is DYNAMIC",
        "byte_offset" / cs.Default(cs.Int64ul, 0) * "bytes from the start of buffer 0 to element [0, ..., 0]",
    )


@cache
def core(rank: int) -> cs.Struct:
    """shape and byte_offset for ``rank`` dimensions."""
    return cs.Struct(*core_fields(rank))
