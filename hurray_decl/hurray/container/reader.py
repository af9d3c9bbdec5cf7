"""Reading a ``.hrry`` container with the check levels of FILE-FORMAT.md § 9.3.

* :func:`open_container` (level **O**): header, trailer, checksum, index and KV section, in the
  order of Appendix A. Nothing is returned from a file that fails them.
* :meth:`Container.tensor` / :meth:`Container.composite` (level **T**): one tensor's descriptor,
  through the public tensor reader, and its buffers, placed by offset arithmetic only.
* :meth:`Container.validate` / :func:`validate_container` (level **V**): every tensor in write
  order, the canonical layout without gaps, zero padding, the count hint, every composite,
  and the buffer contents' own data rules.

The input may be bytes, a memoryview or an mmap: sections and buffers are memoryview slices,
and no size claimed by the file drives an allocation (counts are bounded by the bytes of
their section before anything is read).
"""

from __future__ import annotations

import io
import itertools
import mmap
import operator
import os
import re
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import construct as cs
import numpy as np

from hurray_decl.declare.model import trusted
from hurray_decl.declare.schema import Context, Rule, context, field_offsets, record_format
from hurray_decl.errors import ArgumentError, HurrayDeclError, NameNotFound, RuleViolation, TruncatedError
from hurray_decl.hurray.container.composite import CompositeWalk
from hurray_decl.hurray.container.crc import crc32c
from hurray_decl.hurray.container.declarations import (
    ARRAY_PAYLOAD,
    DESCRIPTOR_ALIGNMENT,
    ENTRY_FIXED,
    FILE_HEADER,
    FILE_MAGIC,
    FILE_PREAMBLE,
    HEADER_LENGTH,
    INDEX_COUNT,
    INDEX_COUNT_LENGTH,
    INDEX_ENTRY,
    KV_COUNT,
    KV_ENTRY,
    MIN_FILE_SIZE,
    SCALAR_PAYLOADS,
    TRAILER,
    TRAILER_LENGTH,
    TRAILER_MAGIC_STRUCT,
    UNKNOWN_COUNT,
    CountWithin,
    FileFlag,
    KVTag,
)
from hurray_decl.hurray.container.model import FileHeader, IndexEntry, KVValue, Trailer
from hurray_decl.hurray.tensor import CompositeHead, TensorDescriptor, read_tensor_descriptor, validate_buffers
from hurray_decl.hurray.tensor.header import PREAMBLE_LENGTH  # a descriptor's magic, versions and descriptor_length

COUNT_HINT_OFFSET = field_offsets(FILE_HEADER)["tensor_count_hint"][0]
PADDING_CHUNK = 1 << 20
"""Padding is checked in runs of at most this many bytes."""


def _entry_offsets() -> dict[str, int]:
    """Offset of each index-entry field from the entry start, the name's bytes not counted."""
    offsets, position = {}, 0
    for sub in INDEX_ENTRY.subcons:
        offsets[sub.name] = position
        position += 0 if sub.name == "name" else sub.sizeof()
    return offsets


ENTRY_OFFSETS = _entry_offsets()


def is_container(data: Any) -> bool:
    """Whether input starts with "HRRYFILE": then it is a container, never a descriptor (HF-HDR-19)."""
    return bytes(memoryview(data)[:len(FILE_MAGIC)]) == FILE_MAGIC


def align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


class Section:
    """One section of the file, read front to back from a single copy of its bytes.

    Errors carry absolute offsets and ``where`` as their path; a field cut by the section's
    end is ``truncated`` (that section's truncation rule).
    """

    def __init__(self, view: memoryview, start: int, end: int, truncated: str) -> None:
        self.stream = io.BytesIO(view[start:end])
        self.start, self.end, self.truncated = start, end, truncated

    @property
    def position(self) -> int:
        return self.start + self.stream.tell()

    def parse(self, struct: cs.Construct, where: str, **params: Any) -> Any:
        base = self.start
        try:
            return struct.parse_stream(self.stream, **params)
        except HurrayDeclError as err:
            raise err.rebased(base, where) from None
        except cs.StreamError as exc:
            raise TruncatedError(self.truncated, "the section ends inside this field", path=where,
                                 offset=self.position, actual=f"{self.end - self.start} bytes in the section") from exc


def parse_at(struct: cs.Construct, view: memoryview, start: int, end: int, where: str, truncated: str,
             **params: Any) -> tuple[Any, int]:
    """Parse ``struct`` from ``view[start:end]``; returns the value and the end offset."""
    section = Section(view, start, end, truncated)
    return section.parse(struct, where, **params), section.position


@dataclass(frozen=True)
class Skipped:
    """What a reader of this version accepts without reading it: at a newer minor, the reserved
    bytes it ignores and the bytes left inside the index and KV sections (HF-D06); kept so
    that :func:`~.writer.rewrite` writes them back unchanged. At minor 0 they are all zeros or
    empty. ``kv_section`` says whether the trailer records a KV section (it may hold no entry)."""

    minor: int = 0
    reserved: bytes = bytes(2)
    reserved_header: bytes = bytes(28)
    trailer_reserved: bytes = bytes(4)
    index_tail: bytes = b""
    kv_tail: bytes = b""
    kv_section: bool = False


@dataclass(frozen=True)
class Placement:
    """Where one tensor sits: its descriptor and each buffer, as absolute [start, end)."""

    descriptor_start: int
    descriptor_end: int
    buffers: tuple[tuple[int, int], ...]

    @property
    def end(self) -> int:
        """Where the tensor's bytes end: the last buffer, or the descriptor for a head."""
        return self.buffers[-1][1] if self.buffers else self.descriptor_end


@dataclass(frozen=True)
class Tensor:
    """One tensor of a container: its index entry, decoded descriptor and buffer contents."""

    name: str
    entry: IndexEntry
    descriptor: TensorDescriptor
    buffers: tuple[memoryview, ...]
    placement: Placement


@dataclass(frozen=True)
class Composite:
    """A composite head and its members, pre-order (nested heads bring their members)."""

    head: Tensor
    members: tuple[Tensor, ...]


class Container:
    """An opened container: header, trailer, index and KV checked (level O)."""

    def __init__(self, view: memoryview, header: FileHeader, trailer: Trailer, entries: Index,
                 kv: dict[str, KVValue], positions: Mapping[str, int], permissive: bool,
                 skipped: Skipped = Skipped()) -> None:
        self.view = view
        self.skipped = skipped
        self.header = header
        self.trailer = trailer
        self.entries = entries
        self.kv = kv
        self.positions = positions
        self.permissive = permissive

    # ------------------------------------------------------------------ what the index says

    @property
    def size(self) -> int:
        return len(self.view)

    @property
    def names(self) -> tuple[str, ...]:
        """Tensor names in index order."""
        return self.entries.names

    @property
    def region_end(self) -> int:
        """kv_offset when a KV section is present, otherwise index_offset."""
        t = self.trailer
        return t.kv_offset if t.has_kv else t.index_offset

    def write_order(self) -> list[int]:
        """Entry positions sorted by descriptor_offset: the write order (HF-IDX-16)."""
        order: list[int] = np.argsort(self.entries.column("descriptor_offset"), kind="stable").tolist()
        return order

    def entry(self, name: str) -> IndexEntry:
        entry: IndexEntry = self.entries[self._position(name)]
        return entry

    def _position(self, name: str) -> int:
        at = self.entries.position(name)
        if at is None:
            raise NameNotFound("name", "no tensor of that name in the container", actual=name,
                                expected=", ".join(self.names[:20]) or "(the container holds no tensor)")
        return at

    def field_offset(self, index: int, field: str) -> int:
        """Absolute offset of one field of index entry ``index``."""
        after_name = field not in ("name_length", "name")
        name_length = int(self.entries.column("name_length")[index]) if after_name else 0
        return self.entries.start(index) + ENTRY_OFFSETS[field] + name_length

    def locate(self, name: str) -> int:
        """Where a tensor's index entry starts: errors about a whole tensor point there."""
        return self.entries.start(self._position(name))

    def _fail(self, code: str, message: str, index: int, field: str, actual: Any, expected: Any) -> RuleViolation:
        return RuleViolation(code, message, path=f"file -> index -> entries -> {index} -> {field}",
                             offset=self.field_offset(index, field), actual=actual, expected=expected)

    # ------------------------------------------------------------------ level T

    def place(self, index: int) -> tuple[TensorDescriptor, Placement]:
        """Read entry ``index``'s descriptor and locate its buffers (HF-DATA-02/04/05/06/07/10/12/13,
        HF-IDX-18): the checks that decide which bytes become the tensor."""
        e = self.entries[index]
        start, region = self.header.first_descriptor_offset, self.region_end
        off = e.descriptor_offset
        if off % DESCRIPTOR_ALIGNMENT:
            raise self._fail("HF-DATA-02", "a descriptor_offset is not 8-aligned", index, "descriptor_offset", off,
                             "a multiple of 8")
        if off < start or off + PREAMBLE_LENGTH > region:
            raise self._fail("HF-DATA-13", "the descriptor lies outside the tensor region", index,
                             "descriptor_offset", off, f"[{start}, {region})")
        own = int.from_bytes(self.view[off + 6:off + 10], "little")
        if own != e.descriptor_length:
            raise self._fail("HF-IDX-18", "descriptor_length differs from the descriptor's own", index,
                             "descriptor_length", e.descriptor_length, own)
        end = off + own
        if end > region:
            raise self._fail("HF-DATA-13", "the descriptor reaches past the tensor region", index,
                             "descriptor_length", own, f"<= {region - off}")
        try:
            descriptor = read_tensor_descriptor(self.view[off:end], permissive=self.permissive)
        except HurrayDeclError as err:  # HF-DATA-04: the descriptor's own rule, at its byte in the file
            raise err.rebased(off, f"file -> tensor {e.name!r} -> descriptor") from None
        a = self.header.data_buffer_alignment
        sizes = [h.byte_size for h in descriptor.buffers]
        buffers: list[tuple[int, int]] = []
        if sizes:
            p = align(end, a)
            if e.data_offset != p:
                raise self._fail("HF-DATA-05", "data_offset is not alignA(descriptor end)", index, "data_offset",
                                 e.data_offset, p)
            for i, size in enumerate(sizes):
                if i:
                    p = align(p, a)
                buffers.append((p, p + size))
                p += size
            if p > region:
                raise self._fail("HF-DATA-13", "the buffers reach past the tensor region", index, "data_length",
                                 e.data_length, f"buffers ending by {region}")
            if e.data_length != p - e.data_offset:
                raise self._fail("HF-DATA-07", "data_length is not the end of the last buffer - data_offset", index,
                                 "data_length", e.data_length, p - e.data_offset)
        else:
            if e.data_length != 0:
                raise self._fail("HF-DATA-07", "a tensor without buffers has data_length 0", index, "data_length",
                                 e.data_length, 0)
            if e.data_offset not in (end, align(end, a)):
                raise self._fail("HF-DATA-10", "a head's data_offset is its descriptor end or alignA of it", index,
                                 "data_offset", e.data_offset, f"{end} or {align(end, a)}")
        return descriptor, Placement(off, end, tuple(buffers))

    def _tensor(self, index: int) -> Tensor:
        descriptor, placement = self.place(index)
        views = tuple(self.view[s:t] for s, t in placement.buffers)
        return Tensor(self.entries[index].name, self.entries[index], descriptor, views, placement)

    def tensor(self, name: str) -> Tensor:
        """One tensor, checked at level T; its buffers are slices of the file, not copies."""
        return self._tensor(self._position(name))

    def tensors(self) -> Iterator[Tensor]:
        """Every tensor, in write order."""
        for i in self.write_order():
            yield self._tensor(i)

    def composite(self, name: str) -> Composite:
        """A composite head and its members in descriptor_offset order, torn composites, nesting
        and the composite's own close-time checks included (HF-DATA-14..17)."""
        position = self._position(name)
        head = self._tensor(position)
        if not isinstance(head.descriptor.layout, CompositeHead):
            raise ArgumentError("name", "this tensor is not a composite head", actual=name,
                                expected="a tensor with layout 0x0B")
        order = self.write_order()
        walk = CompositeWalk(self.locate)
        walk.item(name, head.descriptor)
        members: list[Tensor] = []
        for i in order[order.index(position) + 1:]:
            if walk.closed:
                break
            member = self._tensor(i)
            members.append(member)
            walk.item(member.name, member.descriptor)
        walk.finish()
        return Composite(head, tuple(members))

    # ------------------------------------------------------------------ level V

    def validate(self, *, data: bool = True) -> Container:
        """Every rule of a whole file (level V), then each tensor's data rules when ``data``."""
        for _ in self.checks(data=data):
            pass
        return self

    def checks(self, *, data: bool = True) -> Iterator[int | None]:
        """:meth:`validate`'s checks in their order, step by step: yields None once the header's
        are done, then each tensor's entry position once that tensor's are (write order); the
        checks of the sections after the tensors run before it stops. A dump reads a file in
        this order, so it judges the bytes before it shows them."""
        h, t = self.header, self.trailer
        if h.tensor_count_hint not in (UNKNOWN_COUNT, len(self.entries)):
            raise RuleViolation("HF-HDR-16", "tensor_count_hint is neither unknown nor the entry count",
                                path="file -> header -> tensor_count_hint", offset=COUNT_HINT_OFFSET,
                                actual=h.tensor_count_hint,
                                expected=f"{len(self.entries)} or 0xFFFFFFFFFFFFFFFF")
        self._zero(HEADER_LENGTH, h.first_descriptor_offset, "HF-HDR-15", "file -> padding before the first descriptor")
        yield None
        walk = CompositeWalk(self.locate)
        expect = {h.first_descriptor_offset}
        previous = h.first_descriptor_offset
        for i in self.write_order():
            e = self.entries[i]
            tensor = self._tensor(i)  # the tensor's own placement first (Appendix A, row 16)
            if e.descriptor_offset not in expect:
                raise self._fail("HF-DATA-03", "a tensor does not start where the previous one ends", i,
                                 "descriptor_offset", e.descriptor_offset, " or ".join(map(str, sorted(expect))))
            self._zero(previous, e.descriptor_offset, "HF-DATA-11", "file -> padding")
            p = tensor.placement
            gap_from = p.descriptor_end
            for s, end in p.buffers:
                self._zero(gap_from, s, "HF-DATA-11", f"file -> tensor {e.name!r} -> padding")
                gap_from = end
            previous = p.end
            expect = {align(p.end if p.buffers else e.data_offset, DESCRIPTOR_ALIGNMENT)}
            walk.item(e.name, tensor.descriptor)
            if data:
                self._data(tensor)
            yield i
        region = self.region_end
        if region not in expect:
            code = "HF-META-20" if t.has_kv else "HF-IDX-07"
            field = "kv_offset" if t.has_kv else "index_offset"
            raise RuleViolation(code, "the section does not start where the tensor region ends",
                                path=f"file -> trailer -> {field}", offset=self.positions[f"trailer -> {field}"],
                                actual=region, expected=" or ".join(map(str, sorted(expect))))
        self._zero(previous, region, "HF-DATA-11", "file -> padding")
        if t.has_kv:
            after = align(t.kv_offset + t.kv_length, DESCRIPTOR_ALIGNMENT)
            if t.index_offset != after:
                raise RuleViolation("HF-IDX-07", "the index does not start at align8(end of the KV section)",
                                    path="file -> trailer -> index_offset",
                                    offset=self.positions["trailer -> index_offset"], actual=t.index_offset,
                                    expected=after)
            self._zero(t.kv_offset + t.kv_length, t.index_offset, "HF-DATA-11", "file -> padding after the KV section")
        if t.index_offset + t.index_length != self.size - TRAILER_LENGTH:
            raise RuleViolation("HF-IDX-06", "the index does not end where the trailer begins",
                                path="file -> trailer -> index_length",
                                offset=self.positions["trailer -> index_length"],
                                actual=t.index_offset + t.index_length, expected=self.size - TRAILER_LENGTH)
        walk.finish()  # torn composites last (Appendix A, row 18)

    def _zero(self, start: int, end: int, code: str, where: str) -> None:
        """Padding [start, end) is all 0x00: ``any()`` over bounded chunks, then the first
        offending byte of the chunk that has one (never a per-byte index of the whole run)."""
        for chunk in range(start, end, PADDING_CHUNK):
            raw = np.frombuffer(self.view[chunk:min(end, chunk + PADDING_CHUNK)], dtype=np.uint8)
            if raw.any():
                first = int(np.argmax(raw != 0))
                raise RuleViolation(code, "padding bytes are 0x00", path=where, offset=chunk + first,
                                    actual=f"0x{int(raw[first]):02X}", expected="0x00")

    def _data(self, tensor: Tensor) -> None:
        """The tensor's data rules (HQ-/HE-/HT- rules on buffer contents); an offset inside
        buffer i becomes a file offset from that buffer's start, others from the descriptor's."""
        try:
            validate_buffers(tensor.descriptor, tensor.buffers, permissive=self.permissive)
        except HurrayDeclError as err:
            match = re.search(r"buffers -> (\d+) -> \[", err.path)
            p = tensor.placement
            base = p.buffers[int(match.group(1))][0] if match else p.descriptor_start
            raise err.rebased(base, f"file -> tensor {tensor.name!r} -> descriptor") from None


class FixedRead:
    """A declaration of fixed-size fields read with one struct unpack, each field's rules checked
    by their own checks, innermost first, in field order, each seeing the fields before it and the
    parse keywords, as the declaration's parse does: the fields, or None at the first a rule
    refuses (the declaration is then parsed, to say which rule and where)."""

    def __init__(self, declaration: cs.Struct) -> None:
        layout = record_format(declaration)
        if layout is None:
            raise TypeError("a declaration of fixed-size fields")
        self.layout = layout
        self.fields = [(sub.name, _rules(sub)) for sub in declaration.subcons]

    def read(self, view: memoryview, offset: int, params: dict[str, Any] | None = None) -> Context | None:
        if offset < 0 or len(view) - offset < self.layout.size:
            return None
        ctx = context(_params=params or {})
        for (name, rules), value in zip(self.fields, self.layout.unpack_from(view, offset)):
            for rule in rules:
                if not rule.check(value, ctx):
                    return None
            ctx[name] = value
        return ctx


def _rules(field: cs.Construct) -> list[Rule]:
    """The rules on a field, under its names and defaults, innermost first."""
    rules: list[Rule] = []
    while hasattr(field, "subcon"):
        if isinstance(field, Rule):
            rules.append(field)
        field = field.subcon
    return rules[::-1]


HEADER_READ, TRAILER_READ = FixedRead(FILE_HEADER), FixedRead(TRAILER)
TRAILER_OFFSETS = field_offsets(TRAILER)


# ---------------------------------------------------------------------- level O

def open_container(data: Any, *, permissive: bool = False) -> Container:
    """Check everything a reader needs before returning any tensor (level O) and return the
    :class:`Container`. ``data`` is bytes, a memoryview or an mmap; it is not copied.
    ``permissive`` is handed to the tensor reader (unrecognised tags inside descriptors)."""
    try:
        view = memoryview(data).cast("B")
    except TypeError:
        raise ArgumentError("data", "a container is read from a bytes-like object", actual=type(data).__name__,
                            expected="bytes, memoryview or mmap") from None
    size = len(view)
    if size < len(FILE_MAGIC):
        raise TruncatedError("HF-HDR-03", "the input is shorter than the container magic",
                             path="file -> header -> magic", offset=0, actual=f"{size} bytes", expected=">= 8 bytes")
    if size < MIN_FILE_SIZE:
        parse_at(FILE_PREAMBLE, view, 0, min(size, HEADER_LENGTH), "file -> header", "HF-HDR-18")
        # The header fields the input holds are checked first, in wire order.
        parse_at(FILE_HEADER, view, 0, size, "file -> header", "HF-HDR-18")
        raise TruncatedError("HF-HDR-18", "a container is at least 112 bytes", path="file", offset=size,
                             actual=f"{size} bytes", expected=f">= {MIN_FILE_SIZE} bytes")
    wire = HEADER_READ.read(view, 0)
    if wire is None:  # a rule refuses a field: the declaration says which, where
        parse_at(FILE_PREAMBLE, view, 0, HEADER_LENGTH, "file -> header", "HF-HDR-18")
        wire, _ = parse_at(FILE_HEADER, view, 0, HEADER_LENGTH, "file -> header", "HF-HDR-18")
    header = trusted(FileHeader, {name: wire[name] for name in FileHeader.model_fields})
    minor = header.container_version_minor
    base = size - TRAILER_LENGTH
    positions: dict[str, int] = {f"trailer -> {name}": base + offset for name, (offset, _) in TRAILER_OFFSETS.items()}

    def index_crc(offset: int, length: int) -> int:
        return crc32c(view[offset:offset + length])

    reserved = (bytes(wire["reserved"]), bytes(wire["reserved_header"]))
    params = {"file_size": size, "file_flags": header.file_flags, "minor": minor, "index_crc": index_crc}
    wire = TRAILER_READ.read(view, base, params)
    if wire is None:
        parse_at(TRAILER_MAGIC_STRUCT, view, size - 4, size, "file -> trailer", "HF-HDR-18")
        wire, _ = parse_at(TRAILER, view, base, size, "file -> trailer", "HF-HDR-18", **params)
    trailer = trusted(Trailer, {name: wire[name] for name in Trailer.model_fields})
    entries, index_tail = _index(view, trailer, header)
    kv, kv_tail = _kv(view, trailer, minor, positions) if trailer.has_kv else ({}, b"")
    skipped = Skipped(minor, *reserved, bytes(wire["reserved"]), index_tail, kv_tail, trailer.has_kv)
    return Container(view, header, trailer, entries, kv, Positions(positions, entries.starts), permissive, skipped)


_U32 = struct.Struct("<I")  # a string's or byte sequence's u32 length (SCALAR_PAYLOADS)
KV_ENTRY_HEAD = cs.Struct(*KV_ENTRY.subcons[:3])
"""A KV entry up to its value: key_length, key, value_tag."""
ARRAY_HEAD = cs.Struct(*ARRAY_PAYLOAD.subcons[:2])
"""An array payload up to its items: element_tag, count (bounded by the bytes left)."""


def format_field(declaration: cs.Construct) -> tuple[cs.FormatField | None, bool]:
    """The fixed-width wire number under a field's wrappers (None for a variable payload), and
    whether a rule sits on it."""
    ruled = False
    while not isinstance(declaration, cs.FormatField):
        ruled = ruled or isinstance(declaration, Rule)
        inner = getattr(declaration, "subcon", None)
        if inner is None:
            return None, ruled
        declaration = inner
    return declaration, ruled


_NUMPY_CODES = {"b": "i1", "B": "u1", "h": "i2", "H": "u2", "i": "i4", "I": "u4", "l": "i4", "L": "u4", "q": "i8",
                "Q": "u8", "e": "f2", "f": "f4", "d": "f8"}


def wire_dtype(field: cs.FormatField) -> np.dtype[Any]:
    """The NumPy dtype of a fixed-width wire number, at struct's standard sizes (``<L`` is 4 bytes
    on the wire, where NumPy's ``L`` is the platform's long)."""
    dtype: np.dtype[Any] = np.dtype(field.fmtstr[0].replace("=", "<") + _NUMPY_CODES[field.fmtstr[-1]])
    return dtype


FIXED_ITEMS: dict[int, tuple[np.dtype[Any], bool]] = {}
"""Element tag -> (NumPy dtype of the wire number, whether its declaration holds a rule), for the
fixed-width element tags: an array of them is read as one view."""
FIXED_STRUCTS: dict[int, struct.Struct] = {}
"""Element tag -> the struct of its wire number, for the same tags."""
for _tag, _payload in SCALAR_PAYLOADS.items():
    _field, _ruled = format_field(_payload)
    if _field is not None:
        FIXED_ITEMS[_tag] = (wire_dtype(_field), _ruled)
        FIXED_STRUCTS[_tag] = struct.Struct(_field.fmtstr)


def wire_struct(*fields: cs.Construct) -> struct.Struct:
    """The fixed-width wire numbers of ``fields`` (under their rules and names) as one struct."""
    found = [format_field(f)[0] for f in fields]
    return struct.Struct("<" + "".join(f.fmtstr.lstrip("<>=") for f in found if f is not None))


_NAME_LENGTH = wire_struct(INDEX_ENTRY.subcons[0])
_ENTRY_TAIL = wire_struct(*INDEX_ENTRY.subcons[2:])
"""An index entry's name_length, and its fields after the name (offsets, lengths, flags)."""
_COUNT = wire_struct(INDEX_COUNT.subcons[0])


def _name_at(view: memoryview, p: int, end: int, length: struct.Struct, after: int) -> tuple[bytes, str, int] | None:
    """A name of at least one byte in well-formed UTF-8 at ``p``, after its ``length`` field, with
    ``after`` more bytes before ``end``: (its bytes, its text, where it ends), or None."""
    if end - p < length.size:
        return None
    (count,) = length.unpack_from(view, p)
    name_end = p + length.size + count
    if count < 1 or name_end + after > end:
        return None
    raw = bytes(view[p + length.size:name_end])
    try:
        return raw, raw.decode("utf-8"), name_end
    except UnicodeDecodeError:
        return None


def _entry_fast(view: memoryview, p: int, end: int) -> tuple[bytes, IndexEntry, int] | None:
    """(name, entry, end) of the index entry at ``p`` read with struct, its declaration's checks made
    on the way (a name of at least one byte and well-formed UTF-8, flags 0, the entry inside the
    section); None at anything else, for the declaration to refuse with its own error."""
    found = _name_at(view, p, end, _NAME_LENGTH, _ENTRY_TAIL.size)
    if found is None:
        return None
    name, text, name_end = found
    values = _ENTRY_TAIL.unpack_from(view, name_end)
    fields = dict(zip(ENTRY_FIELDS, values))
    if fields["flags"] != 0:
        return None
    entry = trusted(IndexEntry, {"name": text, **fields})
    return name, entry, name_end + _ENTRY_TAIL.size


ENTRY_KEY = "index -> entries -> "
"""The key of an index entry's start in :attr:`Container.positions` (followed by its position)."""
ENTRY_COLUMNS = {sub.name: wire_dtype(field) for sub in INDEX_ENTRY.subcons
                 if (field := format_field(sub)[0]) is not None}
"""An index entry's fixed-width fields (name_length and those after the name) and their wire types."""
ENTRY_FIELDS = tuple(name for name in ENTRY_COLUMNS if name != "name_length")
if ENTRY_COLUMNS["name_length"] != np.dtype("<u2"):  # _index_fast's walk reads it as two bytes, low first
    raise TypeError("an index entry's name_length is a little-endian u16")


class Index(Sequence[IndexEntry]):
    """The index entries as columns read from the file: where each entry starts, its name, and each
    fixed-width field of :data:`ENTRY_COLUMNS` as one NumPy array; an :class:`IndexEntry` is made
    when one is asked for, and kept. ``by_name`` maps each name to its position."""

    def __init__(self, starts: np.ndarray, names: Sequence[str], columns: dict[str, np.ndarray],
                 by_name: dict[str, int] | None = None) -> None:
        self.starts, self.columns = starts, columns
        self.names = tuple(names)
        self.by_name = dict(zip(self.names, range(len(self.names)))) if by_name is None else by_name
        self._made: dict[int, IndexEntry] = {}

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        i = operator.index(index)
        made = self._made.get(i)
        if made is None:
            name = self.names[i]  # IndexError past the end, as a tuple's
            i %= len(self.names)
            values = {field: int(self.columns[field][i]) for field in ENTRY_FIELDS}
            made = self._made[i] = trusted(IndexEntry, {"name": name, **values})
        return made

    def column(self, field: str) -> np.ndarray:
        """One fixed-width field of every entry (``name_length`` too), in index order."""
        return self.columns[field]

    def start(self, index: int) -> int:
        """Where entry ``index`` starts in the file."""
        return int(self.starts[index])

    def position(self, name: Any) -> int | None:
        """The index position of tensor ``name``, or None."""
        return self.by_name.get(name) if isinstance(name, str) else None


class Positions(Mapping[str, int]):
    """Where the fields and entries a dump or an error points to start: the trailer's fields and
    the KV entries by key, and each index entry as ``index -> entries -> i``, from the index's
    starts (not one key per entry)."""

    def __init__(self, fixed: dict[str, int], starts: np.ndarray) -> None:
        self.fixed, self.starts = fixed, starts

    def __getitem__(self, key: str) -> int:
        if key in self.fixed:
            return self.fixed[key]
        if key.startswith(ENTRY_KEY) and key[len(ENTRY_KEY):].isdigit():
            i = int(key[len(ENTRY_KEY):])
            if i < len(self.starts):
                return int(self.starts[i])
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        yield from self.fixed
        for i in range(len(self.starts)):
            yield f"{ENTRY_KEY}{i}"

    def __len__(self) -> int:
        return len(self.fixed) + len(self.starts)


def _index(view: memoryview, trailer: Trailer, header: FileHeader) -> tuple[Index, bytes]:
    """The index entries, and the bytes left after them (a newer minor's, kept for rewrite): by
    :func:`_index_fast`, or, at anything it does not accept, entry by entry by the declaration,
    which refuses with the rule's own code and offset."""
    start, end = trailer.index_offset, trailer.index_offset + trailer.index_length
    fast = _index_fast(view, start, end, header)
    if fast is not None:
        return fast
    return _index_walk(view, trailer, header)


def every_offset(data: bytes, dtype: np.dtype[Any]) -> np.ndarray:
    """``data`` read as ``dtype`` at every byte offset (element k starts at byte k): gathering it at
    any offsets reads one field of many variable-length records at once, with no copy of ``data``."""
    return np.ndarray(shape=(max(len(data) - dtype.itemsize + 1, 0),), dtype=dtype, buffer=data, strides=(1,))


_SEPARATOR = 0  # joins the names for one split, when no name holds it


def _index_fast(view: memoryview, start: int, end: int, header: FileHeader) -> tuple[Index, bytes] | None:
    """The index read as columns: one Python step per entry to find where it starts (each
    name_length says where the next entry is), then every check of the declaration made over
    whole columns by NumPy: the count within the section (HF-IDX-09), names of at least one
    byte (HF-IDX-11) in well-formed UTF-8 (HF-IDX-12: all the names decoded at once, each starting
    at a character), unique (HF-IDX-13) and increasing under SORTED_INDEX (HF-IDX-15), flags 0
    (HF-IDX-14), every entry inside the section, nothing after them at minor 0 (HF-IDX-10). None
    when any of them fails: then the declaration reads the index and says which rule and where."""
    raw = bytes(view[start:end])
    size = len(raw)
    if size < INDEX_COUNT_LENGTH:
        return None
    (count,) = _COUNT.unpack_from(raw, 0)
    if count * ENTRY_FIXED > size - INDEX_COUNT_LENGTH:
        return None
    starts = [0] * count
    p, last = INDEX_COUNT_LENGTH, size - ENTRY_FIXED
    for i in range(count):  # where each entry starts (its u16 name_length): the only step taken entry by entry
        if p > last:
            return None
        starts[i] = p
        p += raw[p] + (raw[p + 1] << 8) + ENTRY_FIXED
    if p > size or (p != size and header.container_version_minor == 0):
        return None
    at = np.array(starts, dtype=np.int64)
    lengths = every_offset(raw, ENTRY_COLUMNS["name_length"])[at].astype(np.int64)
    data = np.frombuffer(raw, dtype=np.uint8)
    if count and (lengths.min() < 1 or ((data[at + 2] & 0xC0) == 0x80).any()):  # empty, or starting mid-character
        return None
    columns: dict[str, np.ndarray] = {"name_length": lengths}
    field_at = at + 2 + lengths
    for name in ENTRY_FIELDS:
        dtype = ENTRY_COLUMNS[name]
        columns[name] = every_offset(raw, dtype)[field_at]
        field_at += dtype.itemsize
    if count and columns["flags"].any():
        return None
    names = _names(data, at + 2, lengths)
    if names is None:
        return None
    index = Index(at + start, names, columns)
    if len(index.by_name) != count:
        return None
    if header.has(FileFlag.SORTED_INDEX) and not all(map(operator.lt, names, names[1:])):
        return None  # str order is UTF-8 byte order
    return index, raw[p:]


def _names(data: np.ndarray, at: np.ndarray, lengths: np.ndarray) -> list[str] | None:
    """The names of ``lengths`` bytes at ``at`` in ``data``, each starting at a character: decoded
    together, with a separator after each when no name holds it (one split), else sliced by their
    character offsets; None when they are not well-formed UTF-8."""
    count, total = len(at), int(lengths.sum())
    ends = np.cumsum(lengths)
    placed = np.arange(total) + np.repeat(at - (ends - lengths), lengths)  # name bytes in order
    joined = data[placed]
    separated = not (joined == _SEPARATOR).any()
    if separated:  # each name followed by the separator
        out = np.full(total + count, _SEPARATOR, dtype=np.uint8)
        out[np.arange(total) + np.repeat(np.arange(count), lengths)] = joined
        joined = out
    try:
        text = joined.tobytes().decode("utf-8")
    except UnicodeDecodeError:
        return None
    if separated:
        names: list[str] = text.split(chr(_SEPARATOR))[:count]
        return names
    bounds = np.concatenate(([0], ends))
    if len(text) != total:  # characters before each name, where some take more than one byte
        bounds -= np.concatenate(([0], np.cumsum((joined & 0xC0) == 0x80)))[bounds]
    cuts = bounds.tolist()
    return [text[a:b] for a, b in itertools.pairwise(cuts)]


def _index_walk(view: memoryview, trailer: Trailer, header: FileHeader) -> tuple[Index, bytes]:
    """The index read entry by entry, each by struct where it can and by the declaration at
    anything to refuse, which raises the rule's error."""
    section = Section(view, trailer.index_offset, trailer.index_offset + trailer.index_length, "HF-IDX-09")
    count = section.parse(INDEX_COUNT, "file -> index").index_entry_count
    entries: list[IndexEntry] = []
    starts: list[int] = []
    seen: set[bytes] = set()
    last: bytes | None = None
    at = section.position
    ordered = header.has(FileFlag.SORTED_INDEX)
    for i in range(count):
        p = at
        starts.append(p)
        fast = _entry_fast(view, p, section.end)
        if fast is None:  # something to refuse: the declaration's verdict, with its rule and offset
            section.stream.seek(p - section.start)
            wire = section.parse(INDEX_ENTRY, f"file -> index -> entries -> {i}")
            name, entry, at = bytes(wire.name), IndexEntry.from_wire(wire), section.position
        else:
            name, entry, at = fast
        if name in seen:
            raise RuleViolation("HF-IDX-13", "two index entries have the same name",
                                path=f"file -> index -> entries -> {i} -> name", offset=p + 2, actual=name.decode())
        if ordered and last is not None and not last < name:
            raise RuleViolation("HF-IDX-15", "SORTED_INDEX is set but the names do not strictly increase",
                                path=f"file -> index -> entries -> {i} -> name", offset=p + 2,
                                actual=name.decode(), expected=f"after {last.decode()!r}")
        seen.add(name)
        last = name
        entries.append(entry)
    section.stream.seek(at - section.start)
    if section.position != section.end and header.container_version_minor == 0:
        raise RuleViolation("HF-IDX-10", "bytes are left inside index_length after the entries (minor 0)",
                            path="file -> index", offset=section.position,
                            actual=f"{section.end - section.position} bytes", expected="0 bytes")
    columns = {"name_length": np.array([len(e.name.encode("utf-8")) for e in entries], dtype=np.int64)}
    for field in ENTRY_FIELDS:
        columns[field] = np.array([getattr(e, field) for e in entries], dtype=ENTRY_COLUMNS[field])
    index = Index(np.array(starts, dtype=np.int64), [e.name for e in entries], columns)
    index._made.update(enumerate(entries))
    return index, bytes(view[section.position:section.end])


def _items(view: memoryview, section: Section, where: str, tag: int, count: int) -> tuple[Any, ...]:
    """``count`` bare payloads of ``tag`` from the section's position: fixed-width ones as one
    NumPy view (the count checked against the bytes left first), variable ones in one pass. At
    the first element the fast path cannot take, that element is parsed by its declaration,
    which raises the rule's own error."""
    start, end = section.position, section.end
    payload = SCALAR_PAYLOADS[tag]

    def refuse(at: int) -> None:  # the declaration's verdict on the element at ``at``
        element = Section(view, at, end, section.truncated)
        element.parse(payload, where)
        raise RuleViolation("HF-META-12", "an array element could not be read", path=where, offset=at)

    if tag in FIXED_ITEMS:
        dtype, ruled = FIXED_ITEMS[tag]  # ARRAY_HEAD's count fits the bytes left at this width (CountWithin)
        array = np.frombuffer(view, dtype=dtype, count=count, offset=start)
        if ruled and count:  # a rule on the element: judge each distinct value once, by the declaration
            for value in np.unique(array):
                try:
                    payload.parse(value.tobytes())
                except HurrayDeclError:
                    refuse(start + array[:int(np.argmax(array == value))].nbytes)  # the first one's bytes
        section.stream.seek(start - section.start + count * dtype.itemsize)
        return tuple((array.astype(bool) if tag == KVTag.BOOL else array).tolist())
    items: list[Any] = []
    keep = items.append
    length_at = _U32.unpack_from
    p = start
    text = tag == KVTag.STRING
    for _ in range(count):  # one pass: each length against the bytes left, each string decoded (UTF-8)
        if end - p < 4:
            refuse(p)
        (length,) = length_at(view, p)
        q = p + 4 + length
        if q > end:
            refuse(p)
        if text:
            try:
                keep(str(view[p + 4:q], "utf-8"))
            except UnicodeDecodeError:
                refuse(p)
        else:
            keep(bytes(view[p + 4:q]))
        p = q
    section.stream.seek(p - section.start)
    return tuple(items)


def _kv_value(view: memoryview, section: Section, where: str, tag: int) -> KVValue:
    """One KV value, from the section's position: a scalar by its declaration, an array's
    items by :func:`_items`. Every rule of the value is checked on the way (so the model is
    recorded as validated, not checked again element by element)."""
    if tag != KVTag.ARRAY:
        return KVValue.from_wire(tag, section.parse(SCALAR_PAYLOADS[tag], where))
    head = section.parse(ARRAY_HEAD, where)
    items = _items(view, section, f"{where} -> items", head.element_tag, head.count)
    return trusted(KVValue, {"tag": tag, "value": items, "element_tag": head.element_tag})


_KEY_LENGTH = wire_struct(KV_ENTRY.subcons[0])
_VALUE_TAG = wire_struct(KV_ENTRY.subcons[2])
_SCALARS = FIXED_STRUCTS
"""A KV entry's key_length and value_tag, and each fixed-width scalar's wire number (the declarations')."""


def _kv_fast(view: memoryview, p: int, end: int) -> tuple[str, KVValue, int] | None:
    """(key, value, end) of the scalar KV entry at ``p`` read with struct, the declaration's checks
    made on the way (a key of at least one byte in UTF-8, a scalar tag, a bool 0 or 1, a string's
    or byte sequence's length within the section, a string in UTF-8); None for an array or at
    anything else, which the declaration then reads or refuses with its own error."""
    found = _name_at(view, p, end, _KEY_LENGTH, _VALUE_TAG.size)
    if found is None:
        return None
    _, key, key_end = found
    (tag,) = _VALUE_TAG.unpack_from(view, key_end)
    at = key_end + _VALUE_TAG.size
    value: Any
    if tag in _SCALARS:
        number = _SCALARS[tag]
        if at + number.size > end:
            return None
        (value,) = number.unpack_from(view, at)
        if tag == KVTag.BOOL:
            if value > 1:
                return None
            value = bool(value)
        after = at + number.size
    elif tag in (KVTag.STRING, KVTag.BYTES):
        if end - at < _U32.size:
            return None
        after = at + _U32.size + _U32.unpack_from(view, at)[0]
        if after > end:
            return None
        if tag == KVTag.BYTES:
            value = bytes(view[at + _U32.size:after])
        else:
            try:
                value = str(view[at + _U32.size:after], "utf-8")
            except UnicodeDecodeError:
                return None
    else:
        return None
    return key, trusted(KVValue, {"tag": tag, "value": value, "element_tag": None}), after


def counted(field: cs.Construct) -> tuple[struct.Struct, int]:
    """A count field's wire number and the smallest size of one item it counts (its CountWithin)."""
    while not isinstance(field, CountWithin):
        field = field.subcon
    size = field.item_size
    if not isinstance(size, int):
        raise TypeError("a count of items of one fixed smallest size")
    return wire_struct(field), size


_KV_COUNT, _KV_ITEM = counted(KV_COUNT.subcons[0])


def _kv(view: memoryview, trailer: Trailer, minor: int,
        positions: dict[str, int] | None = None) -> tuple[dict[str, KVValue], bytes]:
    """The KV entries, and the bytes left after them; ``positions`` receives where each entry
    starts (``kv -> entries -> i``) and where the last one ends (``kv -> end``). The count and the
    scalar entries are read with struct over the section (their declaration's checks made on the
    way); arrays, and anything to refuse, by the declaration, which gives the rule and offset."""
    # Inside the file: the KV section ends by index_offset (HF-META-06), the index by the trailer (HF-IDX-04).
    start, end = trailer.kv_offset, trailer.kv_offset + trailer.kv_length
    section: Section | None = None

    def declared(at: int) -> Section:  # the declaration's reading from ``at``, its section copied once
        nonlocal section
        if section is None:
            section = Section(view, start, end, "HF-META-07")
        section.stream.seek(at - start)
        return section

    (count,) = _KV_COUNT.unpack_from(view, start)  # kv_length holds the count (HF-META-07, the trailer)
    if count * _KV_ITEM > end - start - _KV_COUNT.size:
        count = declared(start).parse(KV_COUNT, "file -> kv").kv_count  # refused: the count's own error
    kv: dict[str, KVValue] = {}
    p = start + _KV_COUNT.size
    for i in range(count):
        if positions is not None:
            positions[f"kv -> entries -> {i}"] = p
        fast = _kv_fast(view, p, end)
        if fast is not None:
            key, value, after = fast
        else:  # an array, or something to refuse: the declaration's reading, with its rule and offset
            where = f"file -> kv -> entries -> {i}"
            reading = declared(p)
            head = reading.parse(KV_ENTRY_HEAD, where)
            key = bytes(head.key).decode()  # UTF-8
            value = _kv_value(view, reading, f"{where} -> value", head.value_tag)
            after = reading.position
        if key in kv:
            raise RuleViolation("HF-META-11", "two KV entries have the same key",
                                path=f"file -> kv -> entries -> {i} -> key", offset=p + 2, actual=key)
        kv[key] = value
        p = after
    if positions is not None:
        positions["kv -> end"] = p
    if p != end and minor == 0:
        raise RuleViolation("HF-META-08", "bytes are left inside kv_length after the entries (minor 0)",
                            path="file -> kv", offset=p, actual=f"{end - p} bytes", expected="0 bytes")
    return kv, bytes(view[p:end])


def validate_container(data: Any, *, permissive: bool = False, data_rules: bool = True) -> Container:
    """Open ``data`` and check every rule of a whole file (levels O, T and V)."""
    return open_container(data, permissive=permissive).validate(data=data_rules)


def read_container(path: str | Path, *, permissive: bool = False) -> Container:
    """Open a container file, memory-mapped (level O checks)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        data: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    return open_container(data, permissive=permissive)


__all__ = ["Composite", "Container", "Placement", "Skipped", "Tensor", "is_container", "open_container",
           "read_container", "validate_container"]
