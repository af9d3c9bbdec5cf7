"""The scheme-tag space: every one of the 256 tag bytes in exactly one class (DIGEST § 2.2).

The ranges are declared once in :data:`TAG_RANGES`; assigned tags are those with a built-in
registry row, private ones with a registered codec are decoded like assigned ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from hurray_decl.errors import (
    InvalidSchemeTag,
    PrivateSchemeTag,
    ReservedSchemeTag,
    SchemeTagError,
    UnassignedSchemeTag,
)


class TagClass(str, Enum):
    INVALID = "invalid"
    ASSIGNED = "assigned"
    UNASSIGNED_TIER1 = "unassigned tier 1"
    UNASSIGNED_TIER2 = "unassigned tier 2"
    RESERVED_NESTED = "reserved nested"
    RESERVED_FUTURE = "reserved future"
    PRIVATE = "private"


@dataclass(frozen=True)
class TagRange:
    first: int
    last: int
    cls: TagClass
    error: type[SchemeTagError]
    code: str
    meaning: str
    writable: bool


TAG_RANGES: tuple[TagRange, ...] = (
    TagRange(0x00, 0x00, TagClass.INVALID, InvalidSchemeTag, "HQ-HDR-07",
             "never a valid scheme tag", False),
    TagRange(0x01, 0x3F, TagClass.UNASSIGNED_TIER1, UnassignedSchemeTag, "HQ-HDR-08",
             "allocation range for Tier 1 schemes; not assigned in this version", False),
    TagRange(0x40, 0x5F, TagClass.UNASSIGNED_TIER2, UnassignedSchemeTag, "HQ-HDR-08",
             "allocation range for Tier 2 schemes; not assigned in this version", False),
    TagRange(0x60, 0x7F, TagClass.RESERVED_NESTED, ReservedSchemeTag, "HQ-HDR-09",
             "reserved for future nested/composite schemes; no implementation may use it", False),
    TagRange(0x80, 0xEF, TagClass.RESERVED_FUTURE, ReservedSchemeTag, "HQ-HDR-10",
             "reserved for future specification versions; no implementation may use it", False),
    TagRange(0xF0, 0xFE, TagClass.PRIVATE, PrivateSchemeTag, "HQ-EXT-03",
             "private scheme; meaningful only with a codec agreed out of band", True),
    TagRange(0xFF, 0xFF, TagClass.INVALID, InvalidSchemeTag, "HQ-HDR-07",
             "never a valid scheme tag", False),
)

PRIVATE_RANGE = next(r for r in TAG_RANGES if r.cls is TagClass.PRIVATE)
"""0xF0-0xFE. Every Hurray code space (scheme, element type, layout, device, memory class,
composition rule) keeps the same range for private values agreed out of band."""

PRIVATE_TAGS = range(PRIVATE_RANGE.first, PRIVATE_RANGE.last + 1)
INVALID_TAGS = tuple(tag for r in TAG_RANGES if r.cls is TagClass.INVALID for tag in range(r.first, r.last + 1))
"""0x00 and 0xFF, never valid in any Hurray code space."""


def is_private(tag: int) -> bool:
    """Whether ``tag`` lies in the private range shared by every code space."""
    return tag in PRIVATE_TAGS


def tag_range(tag: int) -> TagRange:
    """The range a tag byte falls in (the table covers 0x00-0xFF without gaps)."""
    for entry in TAG_RANGES:
        if entry.first <= tag <= entry.last:
            return entry
    raise ValueError(f"scheme tag {tag!r} is not a byte")


def classify(tag: int, assigned: frozenset[int]) -> TagClass:
    """The class of ``tag`` given the set of assigned (built-in) tags."""
    return TagClass.ASSIGNED if tag in assigned else tag_range(tag).cls


def skippable(tag: int) -> bool:
    """Whether permissive mode may skip a descriptor with this unrecognised tag (HD-33)."""
    return tag_range(tag).cls is not TagClass.INVALID


def tag_error(tag: int, *, offset: int, writing: bool = False) -> SchemeTagError:
    """The error for a tag this reader (or writer) will not handle; ``offset``: where the tag is."""
    entry = tag_range(tag)
    verb = "written" if writing else "decoded"
    # A private tag without an agreed codec is never emitted (HQ-EXT-04); reading it is
    # refused under HQ-EXT-03.
    code = "HQ-EXT-04" if writing and entry.cls is TagClass.PRIVATE else entry.code
    return entry.error(
        code,
        f"scheme_tag 0x{tag:02X} ({entry.cls.value}: {entry.meaning}) cannot be {verb}",
        path="descriptor -> scheme_tag",
        offset=offset,
        actual=f"0x{tag:02X}",
        expected="an assigned or registered scheme tag",
    )
