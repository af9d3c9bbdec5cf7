"""Hurray element types: the one table of assigned type tags (DIGEST § 4.2, § 4.3).

Storage types of quantized tensors, zero-point ranges and sub-byte widths are all read from
:data:`ELEMENT_TYPES`; nothing else lists type tags.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import cache

from hurray_decl.hurray.tables.tags import PRIVATE_RANGE


class Kind(str, Enum):
    FLOAT = "float"
    SIGNED = "signed"
    UNSIGNED = "unsigned"
    BOOL = "bool"
    COMPLEX = "complex"


@dataclass(frozen=True)
class ElementType:
    tag: int
    name: str
    tier: int
    bits: int
    kind: Kind

    @property
    def sub_byte(self) -> bool:
        return self.bits < 8

    @property
    def int_range(self) -> tuple[int, int] | None:
        """Inclusive value range of an integer type, None for the others."""
        if self.kind is Kind.SIGNED:
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        if self.kind is Kind.UNSIGNED:
            return 0, (1 << self.bits) - 1
        return None

    @property
    def zero_point_range(self) -> tuple[int, int] | None:
        """The storage range clipped to int32, where zero points live (DIGEST § 4.3)."""
        bounds = self.int_range
        if bounds is None:
            return None
        return max(bounds[0], -(1 << 31)), min(bounds[1], (1 << 31) - 1)


_F, _S, _U = Kind.FLOAT, Kind.SIGNED, Kind.UNSIGNED

ELEMENT_TYPES: tuple[ElementType, ...] = (
    ElementType(0x01, "float16", 1, 16, _F),
    ElementType(0x02, "bfloat16", 1, 16, _F),
    ElementType(0x03, "float32", 1, 32, _F),
    ElementType(0x04, "float64", 1, 64, _F),
    ElementType(0x10, "int8", 1, 8, _S),
    ElementType(0x11, "uint8", 1, 8, _U),
    ElementType(0x12, "int16", 1, 16, _S),
    ElementType(0x13, "uint16", 1, 16, _U),
    ElementType(0x14, "int32", 1, 32, _S),
    ElementType(0x15, "uint32", 1, 32, _U),
    ElementType(0x16, "int64", 1, 64, _S),
    ElementType(0x17, "uint64", 1, 64, _U),
    ElementType(0x20, "bool", 1, 1, Kind.BOOL),
    ElementType(0x40, "float8_e4m3", 2, 8, _F),
    ElementType(0x41, "float8_e5m2", 2, 8, _F),
    ElementType(0x42, "float8_e8m0", 2, 8, _F),
    ElementType(0x43, "float4_e2m1", 2, 4, _F),
    ElementType(0x44, "float6_e2m3", 2, 6, _F),
    ElementType(0x45, "float6_e3m2", 2, 6, _F),
    ElementType(0x46, "float128", 2, 128, _F),
    ElementType(0x48, "int4", 2, 4, _S),
    ElementType(0x49, "uint4", 2, 4, _U),
    ElementType(0x4A, "int2", 2, 2, _S),
    ElementType(0x4B, "uint2", 2, 2, _U),
    ElementType(0x50, "complex64", 2, 64, Kind.COMPLEX),
    ElementType(0x51, "complex128", 2, 128, Kind.COMPLEX),
)

BY_TAG: dict[int, ElementType] = {t.tag: t for t in ELEMENT_TYPES}
BY_NAME: dict[str, ElementType] = {t.name: t for t in ELEMENT_TYPES}


def by_name(*names: str) -> tuple[ElementType, ...]:
    """The element types with these names, in the order given (a KeyError is a typo here)."""
    return tuple(BY_NAME[n] for n in names)


class TypeTagClass(str, Enum):
    """Where a type_tag byte sits in the type-tag space (DIGEST § 4.1)."""

    INVALID = "invalid"
    UNASSIGNED = "unassigned"
    RESERVED = "reserved"
    PRIVATE = "private"


@dataclass(frozen=True)
class TypeTagRange:
    first: int
    last: int
    cls: TypeTagClass
    meaning: str


TYPE_TAG_RANGES: tuple[TypeTagRange, ...] = (
    TypeTagRange(0x00, 0x00, TypeTagClass.INVALID, "never a valid type tag"),
    TypeTagRange(0x01, 0x7F, TypeTagClass.UNASSIGNED,
                 "Tier 1 (0x01-0x3F) or Tier 2 (0x40-0x7F) range; not assigned in this version"),
    TypeTagRange(0x80, 0xEF, TypeTagClass.RESERVED, "reserved for future versions"),
    TypeTagRange(PRIVATE_RANGE.first, PRIVATE_RANGE.last, TypeTagClass.PRIVATE,
                 "private extension type, sized from the extension-type section"),
    TypeTagRange(0xFF, 0xFF, TypeTagClass.INVALID, "never a valid type tag"),
)
"""Every one of the 256 type_tag bytes falls in exactly one range; assigned tags are those of
:data:`ELEMENT_TYPES`, and 0x47 is reserved on its own (:data:`RESERVED_TYPE_TAGS`)."""

RESERVED_TYPE_TAGS = frozenset({0x47})
"""Single reserved tags inside an otherwise unassigned range (refused under HE-06)."""


@cache
def type_tag_range(tag: int) -> TypeTagRange:
    for entry in TYPE_TAG_RANGES:
        if entry.first <= tag <= entry.last:
            return entry
    raise ValueError(f"type tag {tag!r} is not a byte")
