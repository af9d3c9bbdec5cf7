"""Protobuf wire format, walked byte by byte and named by the generated message descriptors.

:func:`walk` reads serialized bytes as a message type and returns one :class:`Field` per field
occurrence (a tree, in byte order) plus the dump rows that name every byte: each field's key
(field number and wire type), its length prefix, and its value. Packed repeated scalars give one
row per element. Names and numbers come from the ``onnx_light_pb2`` descriptors, never from a
table here; a field the descriptor does not know (or one sent with another wire type, which
protobuf keeps as an unknown field too) is named by its number.

The walker accepts exactly what the protobuf runtime accepts: a :class:`WireError` (offset and
reason) for a truncated varint or length, a wire type 6 or 7, an unmatched end-group key, a
malformed packed run or nesting deeper than :data:`MAX_DEPTH`; groups of unknown fields are
skipped as the runtime skips them.
"""

from __future__ import annotations

import enum
import re
import struct
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from hurray_decl.dump.rows import Row

__all__ = [
    "MAX_DEPTH",
    "MAX_FIELD_NUMBER",
    "WIRE_TYPES",
    "Field",
    "Walk",
    "WireError",
    "WireType",
    "read_key",
    "read_varint",
    "walk",
]


class WireType(enum.IntEnum):
    """The wire type in the low three bits of a field key, with its title and, for a fixed-width
    value, its size in bytes (6 and 7 are invalid)."""

    title: str
    size: int | None

    def __new__(cls, value: int, title: str = "", size: int | None = None) -> WireType:
        member = int.__new__(cls, value)
        member._value_ = value
        member.title = title
        member.size = size
        return member

    VARINT = 0, "varint"
    I64 = 1, "64-bit", 8
    LEN = 2, "length-delimited"
    SGROUP = 3, "start group"
    EGROUP = 4, "end group"
    I32 = 5, "32-bit", 4


WIRE_TYPES = {int(wire): wire.title for wire in WireType}
"""Each wire type's title, by code."""
_PACKABLE = (WireType.VARINT, WireType.I64, WireType.I32)
"""The wire types of scalars a packed repeated field may hold."""
MAX_DEPTH = 100
"""The protobuf runtime's default recursion limit for nested messages."""
MAX_FIELD_NUMBER = (1 << 29) - 1
"""The largest field number protobuf allows."""

_T = FieldDescriptor
_W = WireType
_WIRE_OF_TYPE = {
    _T.TYPE_DOUBLE: _W.I64, _T.TYPE_FIXED64: _W.I64, _T.TYPE_SFIXED64: _W.I64,
    _T.TYPE_FLOAT: _W.I32, _T.TYPE_FIXED32: _W.I32, _T.TYPE_SFIXED32: _W.I32,
    _T.TYPE_STRING: _W.LEN, _T.TYPE_BYTES: _W.LEN, _T.TYPE_MESSAGE: _W.LEN,
}
"""The wire type of each field type that is not a varint."""
_FIXED = {_T.TYPE_DOUBLE: "<d", _T.TYPE_FIXED64: "<Q", _T.TYPE_SFIXED64: "<q",
          _T.TYPE_FLOAT: "<f", _T.TYPE_FIXED32: "<I", _T.TYPE_SFIXED32: "<i"}
_FIXED_SIZE = {int(wire): wire.size for wire in WireType if wire.size is not None}
"""The size of a fixed-width wire type's value, by code."""
_VARINT_RUN = re.compile(rb"(?:[\x80-\xff]{0,9}[\x00-\x7f])*")
"""Bytes that are whole varints, each at most 10 bytes long (what :func:`read_varint` reads)."""
_SIGNED64 = {_T.TYPE_INT64, _T.TYPE_INT32, _T.TYPE_ENUM}
_DATA_TYPE_FIELDS = {"elem_type", "data_type"}
"""int32 fields that hold a TensorProto.DataType code (the .proto declares them int32, as ONNX does)."""


class WireError(Exception):
    """Bytes that are not a serialized message: ``offset`` is where reading failed."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"{reason} at byte {offset}")
        self.offset = offset
        self.reason = reason


@dataclass
class Field:
    """One field occurrence: where it sits, its path, and its value or its sub-fields."""

    name: str                     # the descriptor's field name, or "[N]" for an unknown field
    path: str
    start: int                    # offset of the key
    end: int                      # one past the last byte of the value
    number: int
    wire_type: int
    descriptor: FieldDescriptor | None
    body: tuple[int, int] | None = None   # the payload of a length-delimited field
    value: Any = None                     # scalar, string or bytes value (None for a message)
    message: Descriptor | None = None     # set when the payload was read as a message
    children: list[Field] = field(default_factory=list)
    first_row: int = 0                    # index of the field's key row
    value_row: int = 0                    # index of the row that holds the value (or the key row)
    last_row: int = 0                     # index of the field's last row

    @property
    def alias(self) -> str | None:
        """The message's own ``name`` (or ``key``) string, which paths in error messages use (None
        for a field not read as a message: a group's fields are unknown, a packed run's are numbers)."""
        if self.message is None:
            return None
        for child in self.children:
            if child.name in ("name", "key") and isinstance(child.value, bytes):
                return child.value.decode("utf-8", "replace")
        return None

    def child(self, name: str, index: int = 0) -> Field | None:
        """The ``index``-th occurrence of a sub-field (repeated elements of a packed run included)."""
        found = [c for c in self.children if c.name == name]
        return found[index] if 0 <= index < len(found) else None


@dataclass
class Walk:
    rows: list[Row]
    root: Field
    known: int = 0       # fields the descriptors name (how well the bytes fit the message type)
    unknown: int = 0     # fields kept as unknown, and string fields that are not UTF-8
    error: WireError | None = None   # where the bytes stopped being a message; the rows end there


def read_varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    if pos < end and data[pos] < 0x80:  # one byte: most keys, lengths and small values
        return data[pos], pos + 1
    value = shift = 0
    start = pos
    while True:
        if pos >= end:
            raise WireError(start, "truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 70:
            raise WireError(start, "varint longer than 10 bytes")


def read_key(data: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """The field number and wire type of the key at ``pos``, and the position after it; a wire type
    6 or 7 or a field number outside 1 .. :data:`MAX_FIELD_NUMBER` is a :class:`WireError`."""
    key, after = read_varint(data, pos, end)
    number, wire = key >> 3, key & 7
    if wire not in WIRE_TYPES:  # 6 or 7
        raise WireError(pos, f"invalid wire type {wire}")
    if number == 0 or number > MAX_FIELD_NUMBER:
        raise WireError(pos, f"field number {number} outside 1 .. {MAX_FIELD_NUMBER}")
    return number, wire, after


def _hex(data: bytes, start: int, end: int) -> str:
    return data[start:end].hex(" ").upper()


# --- the refusals both walks make, each stated once -----------------------------------------------

def _nested(pos: int, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise WireError(pos, f"messages nest deeper than {MAX_DEPTH}")


def _group_end(pos: int, number: int, group: int | None) -> None:
    if group != number:
        raise WireError(pos, f"end-group key for field {number} outside its group")


def _closed(end: int, group: int | None) -> None:
    if group is not None:
        raise WireError(end, f"group of field {group} is not closed")


def _fixed_end(pos: int, size: int, end: int) -> int:
    """The end of the ``size``-byte value at ``pos``."""
    if pos + size > end:
        raise WireError(pos, f"truncated {size * 8}-bit value")
    return pos + size


def _body(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The payload (start, stop) of the length-delimited value whose length is at ``pos``."""
    length, body = read_varint(data, pos, end)
    if body + length > end:
        raise WireError(pos, f"length {length} runs past the end of the enclosing message")
    return body, body + length


def _whole(data: bytes, body: int, stop: int, size: int | None) -> int:
    """Where the whole elements of the packed run ``data[body:stop]`` end (``size`` None: varints
    of at most 10 bytes)."""
    if size is not None:
        return stop - (stop - body) % size
    return _VARINT_RUN.match(data, body, stop).end()  # type: ignore[union-attr]  # (...)* always matches


def _rest(data: bytes, whole: int, stop: int, size: int | None) -> None:
    """The refusal of the bytes a packed run holds after its whole elements (none: nothing)."""
    if whole < stop:
        if size is not None:
            raise WireError(whole, "a packed run ends inside an element")
        read_varint(data, whole, stop)  # cut short or longer than 10 bytes: refused here


class _Walker:
    def __init__(self, data: bytes, base: int) -> None:
        self.data = data
        self.base = base
        self.rows: list[Row] = []
        self.known = 0
        self.unknown = 0

    def row(self, start: int, end: int, path: str, value: str) -> int:
        self.rows.append(Row(self.base + start, end - start, _hex(self.data, start, end), path, value))
        return len(self.rows) - 1

    def message(self, start: int, end: int, descriptor: Descriptor | None, path: str, parent: Field,
                depth: int, group: int | None = None) -> int:
        """Read fields from ``start`` to ``end`` (or up to the end-group key of ``group``)."""
        _nested(start, depth)
        data = self.data
        pos = start
        counts: dict[str, int] = {}
        while pos < end:
            number, wire, after = read_key(data, pos, end)
            if wire == _W.EGROUP:
                _group_end(pos, number, group)
                self.row(pos, after, f"{path}:end_group" if path else "end_group",
                         f"field {number}, wire type {int(_W.EGROUP)} ({_W.EGROUP.title})")
                return after
            fd = descriptor.fields_by_number.get(number) if descriptor is not None else None
            expected = None if fd is None else _WIRE_OF_TYPE.get(fd.type, _W.VARINT)
            packed = fd is not None and fd.is_repeated and wire == _W.LEN and expected in _PACKABLE
            if fd is not None and wire != expected and not packed:
                fd = None  # the runtime keeps a field sent with another wire type as unknown
            name = fd.name if fd is not None else f"[{number}]"
            index = counts.get(name, 0)
            here = f"{path}.{name}" if path else name
            if fd is not None and fd.is_repeated and not packed:
                here = f"{here}[{index}]"
            node = Field(name, here, pos, after, number, wire, fd)
            node.first_row = self.row(pos, after, f"{here}:key",
                                      f"field {number} ({name}), wire type {wire} ({WIRE_TYPES[wire]})")
            pos = self.value(node, after, end, depth, index)
            node.end = pos
            node.last_row = len(self.rows) - 1
            parent.children.append(node)
            counts[name] = index + (len(node.children) if packed else 1)
            if fd is None:
                self.unknown += 1
            else:
                self.known += 1
        _closed(end, group)
        return pos

    def value(self, node: Field, pos: int, end: int, depth: int, index: int) -> int:
        """Read the value of ``node`` (``index``: the elements of its field read so far)."""
        data, fd, wire, here = self.data, node.descriptor, node.wire_type, node.path
        if wire == _W.VARINT:
            value, after = read_varint(data, pos, end)
            node.value = value
            node.value_row = self.row(pos, after, here, self.scalars(fd, [value])[0])
            return after
        size = _FIXED_SIZE.get(wire)
        if size is not None:  # I64 or I32
            after = _fixed_end(pos, size, end)
            fmt = (_FIXED.get(fd.type) if fd is not None else None) or ("<Q" if size == 8 else "<I")
            node.value = struct.unpack(fmt, data[pos:after])[0]
            node.value_row = self.row(pos, after, here, str(node.value))  # a float's str is its repr
            return after
        if wire == _W.SGROUP:
            node.value_row = node.first_row
            return self.message(pos, end, None, here, node, depth + 1, group=node.number)
        body, stop = node.body = _body(data, pos, end)
        length = stop - body
        message = fd.message_type if fd is not None and fd.type == _T.TYPE_MESSAGE else None
        node.value_row = self.row(pos, body, f"{here}:length",
                                  f"{length} bytes ({message.name})" if message is not None else f"{length} bytes")
        if fd is None:
            if length:
                node.value = data[body:stop]
                self.row(body, stop, here, "(unknown field, not interpreted)")
            return stop
        if message is not None:
            node.message = message
            self.message(body, stop, message, here, node, depth + 1)
            alias = node.alias
            if alias is not None:  # name the message by its own name or key field
                row = self.rows[node.value_row]
                self.rows[node.value_row] = Row(row.offset, row.size, row.hex, row.field,
                                                f"{row.value[:-1]} {alias!r})")
            return stop
        if fd.type in (_T.TYPE_STRING, _T.TYPE_BYTES):
            node.value = data[body:stop]
            if length:
                node.value_row = self.row(body, stop, here, self.text(fd, node.value))
            return stop
        self.packed(node, fd, body, stop, index)
        return stop

    def packed(self, node: Field, fd: FieldDescriptor, body: int, stop: int, index: int) -> None:
        """The elements of a packed run, one row and one child each, indexed across the field's runs
        from ``index``; read whole first, then a refusal at the element that does not end in the run."""
        data = self.data
        size = _WIRE_OF_TYPE.get(fd.type, _W.VARINT).size
        whole = _whole(data, body, stop, size)
        if size is not None:
            values = list(struct.unpack(f"<{(whole - body) // size}{_FIXED[fd.type][1]}", data[body:whole]))
            ends = list(range(body + size, whole + 1, size))
            texts = list(map(str, values))  # a float's str is its repr
        else:
            ends, values = _varints(data, body, whole)
            texts = self.scalars(fd, values)
        shown = data[body:whole].hex(" ").upper()
        rows, children, first, at = self.rows, node.children, len(self.rows), body
        for k, (after, value, text) in enumerate(zip(ends, values, texts)):
            path = f"{node.path}[{index + k}]"
            rows.append(Row(self.base + at, after - at, shown[3 * (at - body):3 * (after - body) - 1], path, text))
            children.append(Field(fd.name, path, at, after, fd.number, int(_W.VARINT), fd, value=value,
                                  first_row=first + k, value_row=first + k, last_row=first + k))
            at = after
        _rest(data, whole, stop, size)

    def scalars(self, fd: FieldDescriptor | None, values: list[int]) -> list[str]:
        """The texts of varint values of field ``fd`` (each the wire's unsigned 64 bits); an enum
        value the enum does not name counts against the fit."""
        if fd is None:
            return list(map(str, values))
        if fd.type == _T.TYPE_BOOL:
            return ["true" if value else "false" for value in values]
        if fd.type in _SIGNED64:
            values = list(struct.unpack(f"<{len(values)}q", struct.pack(f"<{len(values)}Q", *values)))
        if fd.type == _T.TYPE_ENUM:
            known = fd.enum_type.values_by_number
            self.unknown += sum(value not in known for value in values)
            return [f"{value} ({known[value].name})" if value in known else
                    f"{value} (not a {fd.enum_type.name} value; kept as an unknown field)" for value in values]
        if fd.name in _DATA_TYPE_FIELDS and fd.containing_type is not None:
            named = fd.file.message_types_by_name["TensorProto"].enum_types_by_name["DataType"].values_by_number
            texts = [f"{value} ({named[value].name})" if value in named else str(value) for value in values]
        else:
            texts = list(map(str, values))
        if fd.type == _T.TYPE_INT32 and values and not -(1 << 31) <= min(values) <= max(values) < 1 << 31:
            texts = [text if -(1 << 31) <= value < 1 << 31 else f"{value} (not an int32)"
                     for value, text in zip(values, texts)]
        return texts

    def text(self, fd: FieldDescriptor, value: bytes) -> str:
        if fd.type == _T.TYPE_BYTES:
            return f"{len(value)} bytes"
        try:
            return repr(value.decode("utf-8"))
        except UnicodeDecodeError:
            self.unknown += 1
            return "(not UTF-8)"


def _varints(data: bytes, start: int, end: int) -> tuple[list[int], list[int]]:
    """The end of each varint in ``data[start:end]`` (whole varints of at most 10 bytes) and its
    value (its low 64 bits, as :func:`read_varint` gives it), decoded at once."""
    raw = np.frombuffer(data, np.uint8, end - start, start)
    if not raw.size:
        return [], []
    last = raw < 0x80
    ends = np.flatnonzero(last) + 1
    starts = np.concatenate(([0], ends[:-1]))
    within = np.arange(raw.size) - np.repeat(starts, ends - starts)
    parts = (raw & 0x7F).astype(np.uint64) << (7 * within).astype(np.uint64)
    return (ends + start).tolist(), np.bitwise_or.reduceat(parts, starts).tolist()


# --- the walk without rows: one table look-up per field -------------------------------------------

_Table = dict[int, tuple[Any, Any]]
"""A message type's fields by key (field number and wire type, as the wire spells them): the
:class:`_Fit` method that reads the value, and what it needs (a nested table, an enum's values,
a fixed width)."""


class _Fit:
    """The walk that makes neither rows nor a tree: the fit counts and the first refusal, exactly
    as :class:`_Walker` finds them. A field is one look-up of its key in the message type's
    :func:`_tables` entry; a key the table lacks is an unknown field (or a refusal, an end-group)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.known = 0
        self.unknown = 0

    def message(self, pos: int, end: int, table: _Table, depth: int, group: int | None = None) -> int:
        _nested(pos, depth)
        data = self.data
        while pos < end:
            key = data[pos]
            if key < 0x80:
                after = pos + 1
            else:
                key, after = read_varint(data, pos, end)
            entry = table.get(key)
            if entry is not None:
                pos = entry[0](self, entry[1], after, end, depth)
                self.known += 1
                continue
            number, wire, after = read_key(data, pos, end)
            if wire == _W.EGROUP:
                _group_end(pos, number, group)
                return after
            if wire == _W.SGROUP:
                pos = self.message(after, end, _NO_FIELDS, depth + 1, number)
            else:
                read, arg = _UNKNOWN[wire]
                pos = read(self, arg, after, end, depth)
            self.unknown += 1
        _closed(end, group)
        return pos

    def varint(self, _: None, pos: int, end: int, depth: int) -> int:
        return read_varint(self.data, pos, end)[1]

    def enum(self, values: frozenset[int], pos: int, end: int, depth: int) -> int:
        value, after = read_varint(self.data, pos, end)
        if value not in values:
            self.unknown += 1
        return after

    def fixed(self, size: int, pos: int, end: int, depth: int) -> int:
        return _fixed_end(pos, size, end)

    def blob(self, _: None, pos: int, end: int, depth: int) -> int:
        return _body(self.data, pos, end)[1]

    def string(self, _: None, pos: int, end: int, depth: int) -> int:
        body, stop = _body(self.data, pos, end)
        try:
            self.data[body:stop].decode("utf-8")
        except UnicodeDecodeError:
            self.unknown += 1
        return stop

    def nested(self, table: _Table, pos: int, end: int, depth: int) -> int:
        body, stop = _body(self.data, pos, end)
        self.message(body, stop, table, depth + 1)
        return stop

    def packed(self, size: int | None, pos: int, end: int, depth: int) -> int:
        """A packed run of ``size``-byte elements (None: varints) that are not enum values."""
        body, stop = _body(self.data, pos, end)
        _rest(self.data, _whole(self.data, body, stop, size), stop, size)
        return stop

    def packed_enum(self, values: frozenset[int], pos: int, end: int, depth: int) -> int:
        """A packed run of enum values: the whole ones decoded at once and counted against the
        enum, then the refusal of the rest."""
        data = self.data
        body, stop = _body(data, pos, end)
        whole = _whole(data, body, stop, None)
        self.unknown += sum(value not in values for value in _varints(data, body, whole)[1])
        _rest(data, whole, stop, None)
        return stop


_NO_FIELDS: _Table = {}
"""The table of a group's fields (unknown, every one)."""
_UNKNOWN: _Table = {int(_W.VARINT): (_Fit.varint, None), int(_W.I64): (_Fit.fixed, 8), int(_W.I32): (_Fit.fixed, 4),
            int(_W.LEN): (_Fit.blob, None)}
"""How a field the table does not name is read, by wire type (groups and end-groups aside)."""


def _enum_values(fd: FieldDescriptor) -> frozenset[int]:
    """The values an enum field names, as the wire's unsigned 64 bits carry them."""
    return frozenset(number & 0xFFFFFFFFFFFFFFFF for number in fd.enum_type.values_by_number)


@cache
def _tables(root: Descriptor) -> dict[str, _Table]:
    """The :class:`_Fit` table of ``root`` and of every message type it holds, by full name."""
    found: dict[str, Descriptor] = {}
    pending = [root]
    while pending:
        descriptor = pending.pop()
        if descriptor.full_name not in found:
            found[descriptor.full_name] = descriptor
            pending += [fd.message_type for fd in descriptor.fields if fd.type == _T.TYPE_MESSAGE]
    tables: dict[str, _Table] = {name: {} for name in found}
    for name, table in tables.items():
        for fd in found[name].fields:
            wire = _WIRE_OF_TYPE.get(fd.type, _W.VARINT)
            key = fd.number << 3 | wire
            if fd.type == _T.TYPE_MESSAGE:
                table[key] = (_Fit.nested, tables[fd.message_type.full_name])
            elif fd.type == _T.TYPE_STRING:
                table[key] = (_Fit.string, None)
            elif fd.type == _T.TYPE_BYTES:
                table[key] = (_Fit.blob, None)
            elif wire.size is not None:
                table[key] = (_Fit.fixed, wire.size)
            elif fd.type == _T.TYPE_ENUM:
                table[key] = (_Fit.enum, _enum_values(fd))
            else:
                table[key] = (_Fit.varint, None)
            if fd.is_repeated and wire in _PACKABLE:
                table[fd.number << 3 | _W.LEN] = (
                    (_Fit.packed_enum, _enum_values(fd)) if fd.type == _T.TYPE_ENUM else (_Fit.packed, wire.size))
    return tables


def walk(data: bytes, descriptor: Descriptor, *, base: int = 0, path: str = "", rows: bool = True) -> Walk:
    """Rows and field tree of ``data`` read as ``descriptor``'s message (``rows=False``: only the
    fit counts and the error, faster, for telling message types apart and checking the wire; the
    root then lists no field).

    On bytes that are not such a message, ``error`` says where reading stopped; the rows and
    the tree hold every field completed before that point.
    """
    data = bytes(data)
    root = Field(descriptor.name, path, 0, len(data), 0, 2, None, (0, len(data)), message=descriptor)
    error = None
    if not rows:
        fit = _Fit(data)
        try:
            fit.message(0, len(data), _tables(descriptor)[descriptor.full_name], 0)
        except WireError as err:
            error = err
        return Walk([], root, fit.known, fit.unknown, error)
    walker = _Walker(data, base)
    try:
        walker.message(0, len(data), descriptor, path, root, 0)
    except WireError as err:
        error = err
    root.last_row = len(walker.rows) - 1
    return Walk(walker.rows, root, walker.known, walker.unknown, error)
