"""Immutable models of the container's parts: file header, trailer, index entry, KV value.

Field names are the declaration's (declarations.py); ``from_wire`` takes a parsed Construct
container, ``to_wire`` gives what the declaration builds. :class:`KVValue` holds the rules a
writer needs beyond one field: element types of an array, and lengths that must fit their
fields (HF-META-19), checked before any value is converted or copied.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, Self

from pydantic import model_validator

from hurray_decl.declare.model import U8, U32, U64, FrozenModel, trusted
from hurray_decl.errors import ArgumentError, RuleViolation
from hurray_decl.hurray.container.declarations import (
    SCALAR_PAYLOADS,
    U32_MAX,
    UNKNOWN_COUNT,
    FileFlag,
    KVTag,
    payload_size,
)


class ContainerPart(FrozenModel):
    """Base of the container models: errors name the part, under ``file -> wire_name``."""

    rule: ClassVar[str] = "HF-HDR-02"
    wire_name: ClassVar[str] = ""

    @classmethod
    def from_wire(cls, wire: Any) -> Self:
        return cls(**{name: wire[name] for name in cls.model_fields})

    def to_wire(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in type(self).model_fields}


class FileHeader(ContainerPart):
    """The 64-byte file header (reserved bytes are zeros on write)."""

    wire_name: ClassVar[str] = "header"

    container_version_major: U8 = 1
    container_version_minor: U8 = 0
    file_flags: U32 = FileFlag.HAS_INDEX_CRC32C
    data_buffer_alignment: U32 = 4096
    first_descriptor_offset: U64 = 64
    tensor_count_hint: U64 = UNKNOWN_COUNT

    def has(self, flag: FileFlag) -> bool:
        return bool(self.file_flags & flag)

    def to_wire(self) -> dict[str, Any]:
        return {"magic": b"HRRYFILE", **super().to_wire()}


class Trailer(ContainerPart):
    """The 40-byte trailer."""

    rule: ClassVar[str] = "HF-IDX-01"
    wire_name: ClassVar[str] = "trailer"

    index_offset: U64
    index_length: U64
    kv_offset: U64 = 0
    kv_length: U32 = 0
    index_crc32c: U32 = 0

    @property
    def has_kv(self) -> bool:
        """KV presence is decided by the trailer alone (HF-D01)."""
        return self.kv_offset != 0 and self.kv_length != 0

    def to_wire(self) -> dict[str, Any]:
        return {**super().to_wire(), "trailer_magic": b"HRRY"}


class IndexEntry(ContainerPart):
    """One index entry; ``name`` decoded from its UTF-8 bytes."""

    rule: ClassVar[str] = "HF-IDX-08"
    wire_name: ClassVar[str] = "index"

    name: str
    descriptor_offset: U64
    descriptor_length: U32
    data_offset: U64
    data_length: U64
    flags: U32 = 0

    @classmethod
    def from_wire(cls, wire: Any) -> IndexEntry:
        return cls(name=wire.name.decode("utf-8"), descriptor_offset=wire.descriptor_offset,
                   descriptor_length=wire.descriptor_length, data_offset=wire.data_offset,
                   data_length=wire.data_length, flags=wire.flags)

    def to_wire(self) -> dict[str, Any]:
        raw = self.name.encode("utf-8")
        return {**super().to_wire(), "name_length": len(raw), "name": raw}


_SCALAR_TYPES: dict[int, tuple[type, ...]] = {
    KVTag.STRING: (str,), KVTag.INT64: (int,), KVTag.UINT64: (int,), KVTag.FLOAT64: (float,),
    KVTag.BOOL: (bool,), KVTag.BYTES: (bytes, bytearray, memoryview),
}
_RANGES: dict[int, tuple[int, int]] = {KVTag.INT64: (-(1 << 63), (1 << 63) - 1), KVTag.UINT64: (0, (1 << 64) - 1)}


def _length_ok(tag: int, value: Any, where: str) -> None:
    """Strings and byte sequences fit their u32 length (HF-META-19), checked on len() alone."""
    if tag in (KVTag.STRING, KVTag.BYTES):
        size = len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else len(value)
        if size > U32_MAX:
            raise RuleViolation("HF-META-19", "a KV string or byte sequence longer than its u32 length",
                                path=where, actual=size, expected=f"<= {U32_MAX}")


def _scalar_ok(tag: int, value: Any, where: str) -> None:
    kinds: tuple[type[Any], ...] = _SCALAR_TYPES[tag]
    if not isinstance(value, kinds) or (tag != KVTag.BOOL and isinstance(value, bool)):
        raise ArgumentError(where, f"a value of tag 0x{tag:02X} is {kinds[0].__name__}",
                            actual=type(value).__name__, expected=kinds[0].__name__)
    if tag in _RANGES and not _RANGES[tag][0] <= value <= _RANGES[tag][1]:
        raise ArgumentError(where, "the integer does not fit the tag's type", actual=value,
                            expected=f"[{_RANGES[tag][0]}, {_RANGES[tag][1]}]")
    if tag == KVTag.STRING and isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise RuleViolation("HF-META-13", "a KV string is not well-formed UTF-8", path=where) from None
    _length_ok(tag, value, where)


_TAGS_OF_TYPES: dict[type, int] = {bool: KVTag.BOOL, int: KVTag.INT64, float: KVTag.FLOAT64, str: KVTag.STRING,
                                   bytes: KVTag.BYTES, bytearray: KVTag.BYTES, memoryview: KVTag.BYTES}
"""The tag of an array whose elements are all of one builtin type (:meth:`KVValue.of`)."""


def _array_ok(tag: int, values: Sequence[Any], where: str) -> None:
    """:func:`_scalar_ok` of every element, as passes over the whole array (the element types as a
    set, the integer range by min and max, UTF-8 by one encode of the joined text, lengths by their
    maximum); when a pass fails, the elements are judged one by one, so the first bad one is
    refused with its own error and index."""
    kinds: tuple[type[Any], ...] = _SCALAR_TYPES[tag]
    types = set(map(type, values))
    fine = all(issubclass(t, kinds) for t in types) and (tag == KVTag.BOOL or not any(issubclass(t, bool)
                                                                                       for t in types))
    if fine and values and tag in _RANGES:
        fine = _RANGES[tag][0] <= min(values) and max(values) <= _RANGES[tag][1]
    if fine and tag == KVTag.STRING:
        try:
            fine = len("".join(values).encode("utf-8")) <= U32_MAX  # then no element's can be longer
        except UnicodeEncodeError:
            fine = False
    if fine and tag == KVTag.BYTES and values:
        fine = max(map(len, values)) <= U32_MAX
    if not fine:
        for i, item in enumerate(values):
            _scalar_ok(tag, item, f"{where} -> {i}")


def _array_size(tag: int, values: Sequence[Any]) -> int:
    """The encoded size of an array's items (its elements valid, :func:`_array_ok`), from lengths."""
    if tag == KVTag.STRING:
        return 4 * len(values) + len("".join(values).encode("utf-8"))
    if tag == KVTag.BYTES:
        return 4 * len(values) + sum(map(len, values))
    return len(values) * payload_size(tag, 0)


class KVValue(FrozenModel):
    """A typed KV value: ``tag`` (KVTag), ``value`` and, for arrays, ``element_tag``.

    Values keep their exact wire meaning: a float64 keeps its bits (NaN payloads included), an
    int64 and a uint64 of the same number stay distinct, and an empty array keeps its element
    tag (HF-D15).
    """

    rule: ClassVar[str] = "HF-META-12"
    wire_name: ClassVar[str] = "kv"

    tag: U8
    value: Any
    element_tag: U8 | None = None

    @model_validator(mode="before")
    @classmethod
    def _check(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        value: Any
        tag, value, element = data.get("tag"), data.get("value"), data.get("element_tag")
        where = "kv -> value"
        if tag == KVTag.ARRAY:
            if element not in SCALAR_PAYLOADS:
                raise RuleViolation("HF-META-15", "an array's element tag is a scalar tag 0x01-0x06",
                                    path="kv -> element_tag", actual=element, expected="0x01-0x06")
            if not hasattr(value, "__len__"):
                raise ArgumentError(where, "an array value is a sequence", actual=type(value).__name__)
            if len(value) > U32_MAX:
                raise RuleViolation("HF-META-19", "an array with more elements than its u32 count",
                                    path=where, actual=len(value), expected=f"<= {U32_MAX}")
            items = tuple(value)
            _array_ok(element, items, where)
            return {**data, "value": items}
        if tag not in SCALAR_PAYLOADS:
            raise RuleViolation("HF-META-16", "a KV value tag is 0x01-0x07", path="kv -> tag", actual=tag,
                                expected="0x01-0x07")
        if element is not None:
            raise ArgumentError("kv -> element_tag", "only arrays have an element tag", actual=element)
        _scalar_ok(tag, value, where)
        return data

    @classmethod
    def scalar(cls, tag: int, value: Any) -> KVValue:
        """``KVValue(tag=tag, value=value)`` for a scalar tag, with the same checks (the tag, the
        value's type, range, UTF-8 and length) and none of the model's per-instance validation
        machinery: for the many small entries of a large KV section."""
        if tag not in SCALAR_PAYLOADS or isinstance(tag, bool) or not isinstance(tag, int):
            return cls(tag=tag, value=value)  # the model's own refusal
        _scalar_ok(tag, value, "kv -> value")
        return trusted(cls, {"tag": int(tag), "value": value, "element_tag": None})

    @classmethod
    def of(cls, value: Any) -> KVValue:
        """The KVValue of a plain Python value: str, bool, int (int64, or uint64 above int64),
        float, bytes, or a non-empty list of one of those (an empty array needs an explicit
        element tag: ``KVValue(tag=KVTag.ARRAY, element_tag=..., value=())``)."""
        if isinstance(value, KVValue):
            return value
        if isinstance(value, (list, tuple)):
            if not value:
                raise ArgumentError("kv", "an empty list has no element type; pass a KVValue with element_tag")
            types = set(map(type, value))
            exact = _TAGS_OF_TYPES.get(types.pop()) if len(types) == 1 else None
            if exact is not None:  # one builtin type: its tag (an int64 array holding a uint64 is uint64)
                big = exact == KVTag.INT64 and max(value) >= 1 << 63
                return cls(tag=KVTag.ARRAY, element_tag=KVTag.UINT64 if big else exact, value=tuple(value))
            tags = {cls._tag_of(v) for v in value}
            if len(tags) != 1 and tags != {KVTag.INT64, KVTag.UINT64}:
                raise ArgumentError("kv", "an array holds values of one type", actual=sorted(tags))
            return cls(tag=KVTag.ARRAY, element_tag=max(tags), value=tuple(value))
        return cls.scalar(cls._tag_of(value), value)

    @staticmethod
    def _tag_of(value: Any) -> int:
        if isinstance(value, bool):
            return KVTag.BOOL
        if isinstance(value, int):
            return KVTag.INT64 if value < 1 << 63 else KVTag.UINT64
        if isinstance(value, float):
            return KVTag.FLOAT64
        if isinstance(value, str):
            return KVTag.STRING
        if isinstance(value, (bytes, bytearray, memoryview)):
            return KVTag.BYTES
        raise ArgumentError("kv", "a KV value is str, bool, int, float, bytes or a list of one of them",
                            actual=type(value).__name__)

    @classmethod
    def from_wire(cls, tag: int, payload: Any) -> KVValue:
        if tag == KVTag.ARRAY:
            items = tuple(_bare(payload.element_tag, p) for p in payload["items"])
            return cls(tag=tag, element_tag=payload.element_tag, value=items)
        return cls(tag=tag, value=_bare(tag, payload))

    @property
    def array_tag(self) -> int:
        """An array's element tag (every array has one, HF-META-15)."""
        if self.element_tag is None:
            raise RuleViolation("HF-META-15", "an array's element tag is a scalar tag 0x01-0x06",
                                path="kv -> element_tag", actual=None, expected="0x01-0x06")
        return self.element_tag

    def payload_wire(self) -> Any:
        """The payload as the declaration builds it."""
        if self.tag == KVTag.ARRAY:
            return {"element_tag": self.array_tag, "count": len(self.value),
                    "items": [_wire(self.array_tag, v) for v in self.value]}
        return _wire(self.tag, self.value)

    def size(self) -> int:
        """Encoded payload size in bytes, from lengths only."""
        if self.tag == KVTag.ARRAY:
            return 1 + 4 + _array_size(self.array_tag, self.value)
        return payload_size(self.tag, _raw(self.tag, self.value))

    def plain(self) -> Any:
        """The value as JSON shows it: bytes as hex, non-finite floats as strings."""
        def one(tag: int, v: Any) -> Any:
            if tag == KVTag.BYTES:
                return bytes(v).hex()
            if tag == KVTag.FLOAT64 and not math.isfinite(v):
                return repr(v)
            return v
        if self.tag == KVTag.ARRAY:
            return [one(self.array_tag, v) for v in self.value]
        return one(self.tag, self.value)

    def type_name(self) -> str:
        name = KVTag(self.tag).name.lower()
        return f"array<{KVTag(self.array_tag).name.lower()}>" if self.tag == KVTag.ARRAY else name


def _raw(tag: int, value: Any) -> Any:
    return value.encode("utf-8") if tag == KVTag.STRING else value


def _bare(tag: int, payload: Any) -> Any:
    if tag == KVTag.STRING:
        return payload.bytes.decode("utf-8")
    if tag == KVTag.BYTES:
        return bytes(payload.bytes)
    if tag == KVTag.BOOL:
        return bool(payload)
    return payload


def _wire(tag: int, value: Any) -> Any:
    if tag in (KVTag.STRING, KVTag.BYTES):
        raw = _raw(tag, value)
        return {"length": len(raw), "bytes": bytes(raw)}
    if tag == KVTag.BOOL:
        return int(value)
    return value


__all__ = ["ContainerPart", "FileHeader", "IndexEntry", "KVValue", "Trailer"]
