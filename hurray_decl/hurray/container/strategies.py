"""Hypothesis strategies for containers: valid files, and rule-labelled mutants.

:func:`valid_containers` draws whole files written by :class:`~.writer.ContainerWriter`
(dense, empty, three-buffer quantized and composite tensors; KV values of every type; either
alignment, sorted or not, with or without checksum and count hint). :func:`invalid_containers`
draws ``(bytes, rule, code)``: a valid file changed at the field one HF reader rule governs,
so that a reader must refuse it with ``code`` (the rule itself, or the code the rule says
reports it: HF-IDX-17 and HF-DATA-08 through the region walk HF-DATA-03, an empty tensor's
placement through HF-DATA-05, a broken descriptor through its own descriptor rule). Patches
inside the index recompute the checksum, as the conformance vectors do, so that only the
intended rule breaks.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from hurray_decl.declare.schema import field_offsets
from hurray_decl.declare.trace import trace
from hurray_decl.hurray.container.composite import CompositeWalk
from hurray_decl.hurray.container.crc import crc32c
from hurray_decl.hurray.container.declarations import (
    DESCRIPTOR_ALIGNMENT,
    FILE_HEADER,
    HEADER_LENGTH,
    KV_COUNT,
    KV_ENTRY,
    MIN_FILE_SIZE,
    TRAILER,
    TRAILER_LENGTH,
    FileFlag,
    KVTag,
)
from hurray_decl.hurray.container.model import KVValue
from hurray_decl.hurray.container.reader import Container, align, open_container
from hurray_decl.hurray.container.writer import ContainerWriter
from hurray_decl.hurray.numerics import quantize
from hurray_decl.hurray.tables.codes import CompositionRule
from hurray_decl.hurray.tables.element_types import BY_NAME
from hurray_decl.hurray.tensor import BufferHandle, CompositeHead, RowMajor, TensorDescriptor
from hurray_decl.hurray.tensor.fields import field_span

Tensors = list[tuple[str, TensorDescriptor, list[bytes]]]


def _dense(type_name: str, shape: tuple[int, ...], fill: int = 0) -> tuple[TensorDescriptor, list[bytes]]:
    element = BY_NAME[type_name]
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    size = count * element.bits // 8
    d = TensorDescriptor(type_tag=element.tag, shape=shape, layout=RowMajor(), buffers=(BufferHandle(byte_size=size),))
    return d, [bytes([fill % 256]) * size]


def _head(rule: int, members: int) -> TensorDescriptor:
    return TensorDescriptor(type_tag=BY_NAME["float32"].tag, shape=(1,),
                            layout=CompositeHead(composition_rule=int(rule), member_count=members))


@st.composite
def _tensor(draw: st.DrawFn, empty: bool = False, quantized: bool = False) -> tuple[TensorDescriptor, list[bytes]]:
    if quantized:
        rows, cols = draw(st.integers(1, 4)), draw(st.integers(1, 8))
        values = np.arange(1, rows * cols + 1, dtype=np.float32).reshape(rows, cols)
        d, buffers = quantize(values, "per_channel_affine", axis=0, storage="int8", symmetric=False)
        return d, list(buffers)
    shape = draw(st.lists(st.integers(0 if empty else 1, 5), min_size=1, max_size=2).map(tuple))
    if empty:
        shape = (0,) + shape[1:]
    return _dense(draw(st.sampled_from(["float32", "int8", "uint8", "float16"])), shape, draw(st.integers(0, 255)))


_KV_VALUES: dict[int, st.SearchStrategy[Any]] = {
    KVTag.STRING: st.text(max_size=6),
    KVTag.INT64: st.integers(-(1 << 63), (1 << 63) - 1),
    KVTag.UINT64: st.integers(0, (1 << 64) - 1),
    KVTag.FLOAT64: st.floats(allow_nan=True, allow_infinity=True),
    KVTag.BOOL: st.booleans(),
    KVTag.BYTES: st.binary(max_size=6),
}


@st.composite
def kv_values(draw: st.DrawFn, tag: int | None = None) -> KVValue:
    """A KVValue of any tag (arrays of any scalar element type, empty ones included)."""
    tag = draw(st.sampled_from(sorted(KVTag))) if tag is None else tag
    if tag == KVTag.ARRAY:
        element = draw(st.sampled_from(sorted(_KV_VALUES)))
        return KVValue(tag=tag, element_tag=element, value=draw(st.lists(_KV_VALUES[element], max_size=3)))
    return KVValue(tag=tag, value=draw(_KV_VALUES[tag]))


@dataclass(frozen=True)
class Needs:
    """What a mutant needs of its base file."""

    tensors: int = 0
    kv: bool | None = None  # True: a KV section; False: none; None: either
    kv_tags: tuple[int, ...] = ()  # these value tags among the KV entries (first, in order)
    quantized: bool = False  # a tensor with three buffers first
    empty: bool = False  # an empty tensor first
    group: bool = False  # a group composite last
    first_descriptor_offset: int = 64
    unsorted: bool = False  # at least two tensors, index not sorted, names in decreasing order


@st.composite
def valid_containers(draw: st.DrawFn, needs: Needs = Needs()) -> bytes:
    """A valid container file, written by ContainerWriter."""
    count = draw(st.integers(max(needs.tensors, 2 if needs.unsorted else 0), max(needs.tensors, 3)))
    tensors: Tensors = []
    for i in range(count):
        d, buffers = draw(_tensor(empty=needs.empty and i == 0, quantized=needs.quantized and i == 0))
        tensors.append((f"t{i}", d, buffers))
    if needs.unsorted:
        tensors = [(f"t{count - 1 - i}", d, b) for i, (_, d, b) in enumerate(tensors)]
    if needs.group:
        members = draw(st.integers(1, 2))
        tensors.append(("g", _head(CompositionRule.GROUP, members), []))
        for j in range(members):
            tensors.append((f"g.{j}", *draw(_tensor())))
    kv: dict[str, KVValue] = {}
    if needs.kv is not False and (needs.kv or draw(st.booleans())):
        for j, tag in enumerate(needs.kv_tags):
            kv[f"k{j}"] = draw(kv_values(tag))
        for j in range(len(kv), draw(st.integers(max(1, len(kv)), 4))):
            kv[f"k{j}"] = draw(kv_values())
    out = io.BytesIO()
    writer = ContainerWriter(
        out, alignment=draw(st.sampled_from([4096, 8192])),
        sorted_index=not needs.unsorted and draw(st.booleans()), index_crc=draw(st.booleans()),
        kv_promised=bool(kv) and draw(st.booleans()),
        tensor_count_hint=len(tensors) if draw(st.booleans()) else None,
        first_descriptor_offset=needs.first_descriptor_offset)
    for name, d, buffers in tensors:
        writer.add(name, d, buffers)
    writer.finish(kv)
    return out.getvalue()


# ---------------------------------------------------------------------- patching


class Patch:
    """A mutable copy of a valid file, with its parsed parts and field offsets."""

    def __init__(self, data: bytes) -> None:
        self.c: Container = open_container(data)
        self.data = bytearray(data)

    @property
    def size(self) -> int:
        return len(self.data)

    def header(self, name: str) -> int:
        return self.header_span(name)[0]

    def header_span(self, name: str) -> tuple[int, int]:
        """(offset, size) of a file-header field, from its declaration."""
        return field_offsets(FILE_HEADER)[name]

    def trailer(self, name: str) -> int:
        return self.trailer_span(name)[0]

    def trailer_span(self, name: str) -> tuple[int, int]:
        """(absolute offset, size) of a trailer field, from its declaration."""
        offset, size = field_offsets(TRAILER)[name]
        return len(self.data) - TRAILER_LENGTH + offset, size

    def kv_count(self) -> tuple[int, int]:
        """(absolute offset, size) of kv_count, traced through its declaration."""
        start = self.c.trailer.kv_offset
        spans, _ = trace(KV_COUNT, bytes(self.data[start:start + self.c.trailer.kv_length]), base=start)
        return spans[0].offset, spans[0].size

    def kv_entries(self) -> list[dict[str, tuple[int, int]]]:
        """Each KV entry's fields, (absolute offset, size) by name (``key``, ``value_tag``,
        ``value.length``), traced through the KV entry declaration."""
        position = sum(self.kv_count())
        end = self.c.trailer.kv_offset + self.c.trailer.kv_length
        entries = []
        for _ in self.c.kv:
            spans, _ = trace(KV_ENTRY, bytes(self.data[position:end]), base=position)
            entries.append({s.path: (s.offset, s.size) for s in spans})
            position = max(s.offset + s.size for s in spans)
        return entries

    def entry(self, index: int, name: str) -> int:
        return self.c.field_offset(index, name)

    def descriptor_field(self, index: int, name: str) -> tuple[int, int]:
        """(absolute offset, size) of a field of entry ``index``'s descriptor, by name (``layout.member_count``)."""
        e = self.c.entries[index]
        start = e.descriptor_offset
        offset, size = field_span(bytes(self.data[start:start + e.descriptor_length]), name)
        return start + offset, size

    def put(self, offset: int, value: int | bytes, width: int = 0) -> Patch:
        raw = value if isinstance(value, bytes) else (value % (1 << 8 * width)).to_bytes(width, "little")
        self.data[offset:offset + len(raw)] = raw
        return self

    def u(self, offset: int, width: int) -> int:
        return int.from_bytes(self.data[offset:offset + width], "little")

    def insert(self, offset: int, raw: bytes) -> Patch:
        self.data[offset:offset] = raw
        return self

    def recrc(self) -> bytes:
        """The bytes, with index_crc32c recomputed over the (patched) index when the flag is set."""
        flags = self.u(self.header("file_flags"), 4)
        if flags & FileFlag.HAS_INDEX_CRC32C:
            start = self.u(self.trailer("index_offset"), 8)
            length = self.u(self.trailer("index_length"), 8)
            self.put(self.trailer("index_crc32c"), crc32c(bytes(self.data[start:start + length])), 4)
        return bytes(self.data)


def _kv_entry(p: Patch, tag: int) -> dict[str, tuple[int, int]]:
    """The fields of the first KV entry with value tag ``tag``."""
    for value, fields in zip(p.c.kv.values(), p.kv_entries()):
        if value.tag == tag:
            return fields
    raise LookupError(tag)


def _after(span: tuple[int, int]) -> int:
    return span[0] + span[1]


def _first_with_buffers(p: Patch) -> int:
    return next(i for i in p.c.write_order() if p.c.entries[i].data_length or p.c.place(i)[1].buffers)


# ---------------------------------------------------------------------- the mutants

Mutate = Callable[[st.DrawFn, Patch], bytes]


@dataclass(frozen=True)
class Mutant:
    code: str  # the code a reader refuses it with
    needs: Needs
    mutate: Mutate


def _header_field(name: str, values: st.SearchStrategy[int], width: int) -> Mutate:
    return lambda draw, p: bytes(p.put(p.header(name), draw(values), width).data)


def _trailer_field(name: str, values: Callable[[Patch], st.SearchStrategy[int]], width: int) -> Mutate:
    return lambda draw, p: p.put(p.trailer(name), draw(values(p)), width).recrc()


def _entry_field(name: str, values: Callable[[Patch, int], st.SearchStrategy[int]], width: int,
                 pick: Callable[[Patch], int] = lambda p: 0) -> Mutate:
    def mutate(draw: st.DrawFn, p: Patch) -> bytes:
        i = pick(p)
        return p.put(p.entry(i, name), draw(values(p, i)), width).recrc()
    return mutate


def _nonzero() -> st.SearchStrategy[int]:
    return st.integers(1, 255)


def _short(draw: st.DrawFn, p: Patch) -> bytes:
    return bytes(p.data[:draw(st.integers(HEADER_LENGTH, MIN_FILE_SIZE - 1))])


def _nonzero_byte(start: Callable[[Patch], int], end: Callable[[Patch], int]) -> Mutate:
    def mutate(draw: st.DrawFn, p: Patch) -> bytes:
        return p.put(draw(st.integers(start(p), end(p) - 1)), draw(_nonzero()), 1).recrc()
    return mutate


def _byte_in(span: Callable[[Patch], tuple[int, int]], values: st.SearchStrategy[int]) -> Mutate:
    """One byte anywhere inside a field set to one of ``values`` (no checksum recomputed)."""
    def mutate(draw: st.DrawFn, p: Patch) -> bytes:
        offset, size = span(p)
        return bytes(p.put(offset + draw(st.integers(0, size - 1)), draw(values), 1).data)
    return mutate


def _gap_before_index(draw: st.DrawFn, p: Patch) -> bytes:
    """Eight zero bytes before the index: it no longer follows the tensors or the KV section."""
    at = p.c.trailer.index_offset
    index_at = p.trailer("index_offset")
    p.insert(at, bytes(8))
    return p.put(index_at + 8, at + 8, 8).recrc()


def _gap_before_trailer(draw: st.DrawFn, p: Patch) -> bytes:
    return p.insert(p.size - TRAILER_LENGTH, bytes(8)).recrc()


def _gap_before_kv(draw: st.DrawFn, p: Patch) -> bytes:
    at = p.c.trailer.kv_offset
    p.insert(at, bytes(8))
    for name in ("kv_offset", "index_offset"):
        p.put(p.trailer(name), p.u(p.trailer(name), 8) + 8, 8)
    return p.recrc()


def _leftover_index(draw: st.DrawFn, p: Patch) -> bytes:
    end = p.c.trailer.index_offset + p.c.trailer.index_length
    p.insert(end, bytes(8))
    return p.put(p.trailer("index_length"), p.c.trailer.index_length + 8, 8).recrc()


def _duplicate_name(draw: st.DrawFn, p: Patch) -> bytes:
    name = p.c.entries[0].name.encode()
    return p.put(p.entry(1, "name"), name).recrc()


def _sorted_flag(draw: st.DrawFn, p: Patch) -> bytes:
    offset = p.header("file_flags")
    return p.put(offset, p.u(offset, 4) | FileFlag.SORTED_INDEX, 4).recrc()


def _shared_descriptor(draw: st.DrawFn, p: Patch) -> bytes:
    order = p.c.write_order()
    first, second = order[0], order[1]
    for name, width in (("descriptor_offset", 8), ("descriptor_length", 4), ("data_offset", 8), ("data_length", 8)):
        p.put(p.entry(second, name), p.u(p.entry(first, name), width), width)
    return p.recrc()


def _moved_descriptor(draw: st.DrawFn, p: Patch) -> bytes:
    """A later tensor's descriptor moved 8 bytes into its own alignment padding: still placed
    right for its buffers, but no longer where the previous tensor ends."""
    for i in p.c.write_order()[1:]:
        _, where = p.c.place(i)
        if where.buffers and where.descriptor_end + 8 <= where.buffers[0][0]:
            start, end = where.descriptor_start, where.descriptor_end
            raw = bytes(p.data[start:end])
            p.put(start, bytes(end - start + 8)).put(start + 8, raw)
            return p.put(p.entry(i, "descriptor_offset"), start + 8, 8).recrc()
    raise LookupError("no movable descriptor")


def _kv_count_minus_one(draw: st.DrawFn, p: Patch) -> bytes:
    at, width = p.kv_count()
    return p.put(at, len(p.c.kv) - 1, width).recrc()


def _kv_tag(tag: int, values: st.SearchStrategy[int], payload: bool = False) -> Mutate:
    def mutate(draw: st.DrawFn, p: Patch) -> bytes:
        value_tag = _kv_entry(p, tag)["value_tag"]
        return p.put(_after(value_tag) if payload else value_tag[0], draw(values), 1).recrc()
    return mutate


def _kv_key(draw: st.DrawFn, p: Patch, value: bytes = b"", length: int | None = None) -> bytes:
    first = p.kv_entries()[0]
    if length is not None:
        at, width = first["key_length"]
        return p.put(at, length, width).recrc()
    return p.put(first["key"][0], value).recrc()


def _kv_second_key_same(draw: st.DrawFn, p: Patch) -> bytes:
    first = next(iter(p.c.kv))
    return p.put(p.kv_entries()[1]["key"][0], first.encode()).recrc()


def _descriptor_magic(draw: st.DrawFn, p: Patch) -> bytes:
    at, width = p.descriptor_field(0, "magic")
    return p.put(at + draw(st.integers(0, width - 1)), b"\x00").recrc()


def _data_offset(delta: st.SearchStrategy[int]) -> Mutate:
    def mutate(draw: st.DrawFn, p: Patch) -> bytes:
        i = _first_with_buffers(p)
        return p.put(p.entry(i, "data_offset"), p.c.entries[i].data_offset + draw(delta), 8).recrc()
    return mutate


def _empty_at_descriptor_end(draw: st.DrawFn, p: Patch) -> bytes:
    i = p.c.write_order()[0]
    _, where = p.c.place(i)
    return p.put(p.entry(i, "data_offset"), where.descriptor_end, 8).recrc()


def _head_data_offset(draw: st.DrawFn, p: Patch) -> bytes:
    i = p.c.names.index("g")
    return p.put(p.entry(i, "data_offset"), p.c.entries[i].data_offset + draw(st.sampled_from([1, 8, 4096])),
                 8).recrc()


def _padding_after_descriptor(draw: st.DrawFn, p: Patch) -> bytes:
    i = _first_with_buffers(p)
    _, where = p.c.place(i)
    return p.put(draw(st.integers(where.descriptor_end, where.buffers[0][0] - 1)), draw(_nonzero()), 1).recrc()


def _past_region(draw: st.DrawFn, p: Patch) -> bytes:
    """The last tensor in write order moved to or past the end of the region (it stays last)."""
    region = align(p.c.region_end, 8)
    last = p.c.write_order()[-1]
    return p.put(p.entry(last, "descriptor_offset"), region + 8 * draw(st.integers(0, 4)), 8).recrc()


def _member_count_plus_one(draw: st.DrawFn, p: Patch) -> bytes:
    at, width = p.descriptor_field(p.c.names.index("g"), "layout.member_count")
    return p.put(at, p.u(at, width) + draw(st.integers(1, 3)), width).recrc()


def _group_to_partition(draw: st.DrawFn, p: Patch) -> bytes:
    at, width = p.descriptor_field(p.c.names.index("g"), "layout.composition_rule")
    return p.put(at, CompositionRule.PARTITION, width).recrc()


def _nested(draw: st.DrawFn, p: Patch) -> bytes:
    """Nine nested group heads around one tensor, written as the reference allows (depth 64)."""
    out = io.BytesIO()
    writer = ContainerWriter(out)
    writer.walk = CompositeWalk(max_depth=64)
    depth = draw(st.integers(9, 10))
    for level in range(depth):
        writer.add(f"h{level}", _head(CompositionRule.GROUP, 1))
    writer.add("leaf", *_dense("float32", (2,)))
    writer.finish()
    return out.getvalue()


def _crc_flip(draw: st.DrawFn, p: Patch) -> bytes:
    offset = p.trailer("index_crc32c")
    return bytes(p.put(offset, p.u(offset, 4) ^ (1 << draw(st.integers(0, 31))), 4).data)


def _crc_flag_clear(draw: st.DrawFn, p: Patch) -> bytes:
    offset = p.header("file_flags")
    p.put(offset, p.u(offset, 4) & ~FileFlag.HAS_INDEX_CRC32C, 4)
    return bytes(p.put(p.trailer("index_crc32c"), draw(st.integers(1, 0xFFFF_FFFF)), 4).data)


_ANY = Needs()
_ONE = Needs(tensors=1)
_TWO = Needs(tensors=2)
_KV = Needs(kv=True)
_NO_KV = Needs(kv=False)
_GROUP = Needs(group=True)

MUTANTS: dict[str, Mutant] = {
    "HF-HDR-03": Mutant("HF-HDR-03", _ANY, _byte_in(lambda p: p.header_span("magic"), st.just(0))),
    "HF-HDR-04": Mutant("HF-HDR-04", _ANY, _header_field("container_version_major", st.integers(2, 255), 1)),
    "HF-HDR-05": Mutant("HF-HDR-05", _ANY, _header_field("container_version_major", st.just(0), 1)),
    "HF-HDR-08": Mutant("HF-HDR-08", _ANY, _byte_in(lambda p: p.header_span("reserved"), _nonzero())),
    "HF-HDR-09": Mutant("HF-HDR-09", _ANY, _byte_in(lambda p: p.header_span("reserved_header"), _nonzero())),
    "HF-HDR-10": Mutant("HF-HDR-10", _ANY, lambda draw, p: bytes(p.put(
        p.header("file_flags"), p.u(*p.header_span("file_flags")) | 1 << draw(st.integers(3, 31)), 4).data)),
    "HF-HDR-11": Mutant("HF-HDR-11", _ANY, _header_field(
        "data_buffer_alignment", st.integers(0, 1 << 22).filter(lambda v: v == 0 or v & (v - 1)), 4)),
    "HF-HDR-12": Mutant("HF-HDR-12", _ANY, _header_field(
        "data_buffer_alignment", st.sampled_from([1 << k for k in (*range(12), *range(22, 32))]), 4)),
    "HF-HDR-13": Mutant("HF-HDR-13", _ANY, _header_field("first_descriptor_offset", st.sampled_from(
        range(0, HEADER_LENGTH, 8)), 8)),
    "HF-HDR-14": Mutant("HF-HDR-14", _ANY, _header_field(
        "first_descriptor_offset", st.integers(HEADER_LENGTH + 1, 1 << 40).filter(lambda v: v % 8), 8)),
    "HF-HDR-15": Mutant("HF-HDR-15", Needs(first_descriptor_offset=HEADER_LENGTH + DESCRIPTOR_ALIGNMENT), _nonzero_byte(
        lambda p: HEADER_LENGTH, lambda p: p.c.header.first_descriptor_offset)),
    "HF-HDR-16": Mutant("HF-HDR-16", _ANY, lambda draw, p: bytes(p.put(p.header("tensor_count_hint"), draw(
        st.integers(0, (1 << 64) - 2).filter(lambda v: v != len(p.c.entries))), 8).data)),
    "HF-HDR-18": Mutant("HF-HDR-18", _ANY, _short),
    "HF-IDX-02": Mutant("HF-IDX-02", _ANY, _byte_in(lambda p: p.trailer_span("trailer_magic"), st.just(0))),
    "HF-IDX-03": Mutant("HF-IDX-03", _ANY, _byte_in(lambda p: p.trailer_span("reserved"), _nonzero())),
    "HF-IDX-04": Mutant("HF-IDX-04", _ANY, _trailer_field("index_length", lambda p: st.integers(
        p.size - TRAILER_LENGTH - p.c.trailer.index_offset + 1, (1 << 64) - 1), 8)),
    "HF-IDX-05": Mutant("HF-IDX-05", _ANY, _trailer_field("index_offset", lambda p: st.integers(1, 7).map(
        lambda d: p.c.trailer.index_offset - 8 + d), 8)),
    "HF-IDX-06": Mutant("HF-IDX-06", _ANY, _gap_before_trailer),
    "HF-IDX-07": Mutant("HF-IDX-07", _ANY, _gap_before_index),
    "HF-IDX-09": Mutant("HF-IDX-09", _ANY, _trailer_field("index_length", lambda p: st.integers(0, 7), 8)),
    "HF-IDX-10": Mutant("HF-IDX-10", _ANY, _leftover_index),
    "HF-IDX-11": Mutant("HF-IDX-11", _ONE, _entry_field("name_length", lambda p, i: st.just(0), 2)),
    "HF-IDX-12": Mutant("HF-IDX-12", _ONE, _entry_field("name", lambda p, i: st.sampled_from([0xFE, 0xFF]), 1)),
    "HF-IDX-13": Mutant("HF-IDX-13", _TWO, _duplicate_name),
    "HF-IDX-14": Mutant("HF-IDX-14", _ONE, _entry_field("flags", lambda p, i: st.integers(1, 0xFFFF_FFFF), 4)),
    "HF-IDX-15": Mutant("HF-IDX-15", Needs(unsorted=True), _sorted_flag),
    "HF-IDX-17": Mutant("HF-DATA-03", _TWO, _shared_descriptor),
    "HF-IDX-18": Mutant("HF-IDX-18", _ONE, _entry_field("descriptor_length", lambda p, i: st.integers(
        0, 0xFFFF_FFFF).filter(lambda v: v != p.c.entries[i].descriptor_length), 4)),
    "HF-META-02": Mutant("HF-META-02", _KV, _trailer_field("kv_length", lambda p: st.just(0), 4)),
    "HF-META-03": Mutant("HF-META-03", _NO_KV, lambda draw, p: bytes(p.put(
        p.header("file_flags"), p.u(*p.header_span("file_flags")) | FileFlag.HAS_KV_METADATA, 4).data)),
    "HF-META-05": Mutant("HF-META-05", _KV, _trailer_field("kv_offset", lambda p: st.integers(1, 7).map(
        lambda d: p.c.trailer.kv_offset - 8 + d), 8)),
    "HF-META-06": Mutant("HF-META-06", _KV, _trailer_field("kv_length", lambda p: st.integers(
        p.c.trailer.index_offset - p.c.trailer.kv_offset + 1, 0xFFFF_FFFF), 4)),
    "HF-META-07": Mutant("HF-META-07", _KV, lambda draw, p: p.put(p.kv_count()[0], draw(st.integers(
        len(p.c.kv) + 1, 0xFFFF_FFFF)), 4).recrc()),
    "HF-META-08": Mutant("HF-META-08", _KV, _kv_count_minus_one),
    "HF-META-09": Mutant("HF-META-09", _KV, lambda draw, p: _kv_key(draw, p, length=0)),
    "HF-META-10": Mutant("HF-META-10", _KV, lambda draw, p: _kv_key(draw, p, value=bytes([draw(st.sampled_from(
        [0xFE, 0xFF]))]))),
    "HF-META-11": Mutant("HF-META-11", Needs(kv=True, kv_tags=(KVTag.BOOL, KVTag.BOOL)), _kv_second_key_same),
    "HF-META-13": Mutant("HF-META-13", Needs(kv=True, kv_tags=(KVTag.STRING,)), lambda draw, p: _string_byte(draw, p)),
    "HF-META-14": Mutant("HF-META-14", Needs(kv=True, kv_tags=(KVTag.BOOL,)), _kv_tag(KVTag.BOOL, st.integers(2, 255),
                                                                                       payload=True)),
    "HF-META-15": Mutant("HF-META-15", Needs(kv=True, kv_tags=(KVTag.ARRAY,)), _kv_tag(
        KVTag.ARRAY, st.one_of(st.just(0), st.integers(7, 255)), payload=True)),
    "HF-META-16": Mutant("HF-META-16", _KV, lambda draw, p: p.put(p.kv_entries()[0]["value_tag"][0],
                                                                  draw(st.integers(0x08, 0xEF)), 1).recrc()),
    "HF-META-17": Mutant("HF-META-17", _KV, lambda draw, p: p.put(p.kv_entries()[0]["value_tag"][0],
                                                                  draw(st.sampled_from([0x00, 0xFF])), 1).recrc()),
    "HF-META-18": Mutant("HF-META-18", _KV, lambda draw, p: p.put(p.kv_entries()[0]["value_tag"][0],
                                                                  draw(st.integers(0xF0, 0xFE)), 1).recrc()),
    "HF-META-20": Mutant("HF-META-20", _KV, _gap_before_kv),
    "HF-DATA-02": Mutant("HF-DATA-02", _ONE, _entry_field("descriptor_offset", lambda p, i: st.integers(1, 7).map(
        lambda d: p.c.entries[i].descriptor_offset + d), 8)),
    "HF-DATA-03": Mutant("HF-DATA-03", _TWO, _moved_descriptor),
    "HF-DATA-04": Mutant("HT-HDR-04", _ONE, _descriptor_magic),
    "HF-DATA-05": Mutant("HF-DATA-05", _ONE, _data_offset(st.sampled_from([-8, 8, 4096, -4096]))),
    "HF-DATA-07": Mutant("HF-DATA-07", _ONE, lambda draw, p: p.put(p.entry(_first_with_buffers(p), "data_length"),
                                                                   p.c.entries[_first_with_buffers(p)].data_length
                                                                   + draw(st.sampled_from([1, 8, -1])), 8).recrc()),
    "HF-DATA-08": Mutant("HF-DATA-03", _TWO, _moved_descriptor),
    "HF-DATA-10": Mutant("HF-DATA-10", _GROUP, _head_data_offset),
    "HF-DATA-11": Mutant("HF-DATA-11", _ONE, _padding_after_descriptor),
    "HF-DATA-12": Mutant("HF-DATA-05", Needs(tensors=1, empty=True), _empty_at_descriptor_end),
    "HF-DATA-13": Mutant("HF-DATA-13", _ONE, _past_region),
    "HF-DATA-15": Mutant("HF-DATA-15", _GROUP, _member_count_plus_one),
    "HF-DATA-16": Mutant("HF-DATA-16", _GROUP, _group_to_partition),
    "HF-DATA-17": Mutant("HF-DATA-17", _ANY, _nested),
    "HF-DATA-20": Mutant("HF-DATA-20", _ANY, _crc_flip),
    "HF-DATA-21": Mutant("HF-DATA-21", _ANY, _crc_flag_clear),
}
"""One mutant generator per HF reader rule a file can break on its own: rule -> code refused."""


NOT_MUTATED: dict[str, str] = {
    "HF-HDR-01": "byte order: a layout fact every field's declaration states, not a value to break",
    "HF-HDR-02": "the header layout itself (its fields' offsets are tested against the declaration)",
    "HF-IDX-01": "the trailer layout itself",
    "HF-IDX-08": "the index-entry layout itself",
    "HF-META-01": "the KV section layout itself",
    "HF-META-12": "the payload encodings themselves; each value rule (HF-META-13/14/15) has its mutant",
    "HF-HDR-07": "an acceptance rule: a higher minor is read (tested with minor 1 files)",
    "HF-META-04": "an acceptance rule: KV is read whatever HAS_KV_METADATA says",
    "HF-META-21": "an acceptance rule: empty arrays with a scalar element tag",
    "HF-DATA-22": "an acceptance rule: no CRC check while the flag is clear",
    "HF-HDR-17": "reader behaviour: the count hint never locates anything (a wrong hint is HF-HDR-16)",
    "HF-HDR-19": "dispatch between containers and descriptors, decided by 8 bytes",
    "HF-IDX-16": "reader behaviour: write order from descriptor_offset",
    "HF-DATA-01": "reported through HF-DATA-03, HF-META-06/20 and HF-IDX-06/07, which have mutants",
    "HF-DATA-06": "buffers are located by arithmetic, so a misplaced buffer shows as HF-DATA-07 or padding",
    "HF-DATA-14": "the binding rule itself; its violations are HF-DATA-15/16/17",
    "HF-DATA-18": "the CRC algorithm; a wrong checksum is HF-DATA-20",
    "HF-DATA-19": "what the CRC covers; a wrong checksum is HF-DATA-20",
    "HF-DATA-24": "sequential mode only (read_sequential)",
    "HF-DATA-25": "sequential mode only (read_sequential)",
}
"""HF reader rules without a mutant of their own, and why."""


def _string_byte(draw: st.DrawFn, p: Patch) -> bytes:
    prefix = _kv_entry(p, KVTag.STRING)["value.length"]
    length = p.u(*prefix)
    if length == 0:  # make room: the string becomes one byte long, eating nothing (kv_count still fits)
        raise LookupError("empty string")
    return p.put(_after(prefix) + draw(st.integers(0, length - 1)), draw(st.sampled_from([0xFE, 0xFF])),
                 1).recrc()


@st.composite
def _mutant(draw: st.DrawFn, rule: str) -> tuple[bytes, str, str]:
    mutant = MUTANTS[rule]
    base = draw(valid_containers(mutant.needs))
    p = Patch(base)
    if rule in ("HF-DATA-20", "HF-DATA-21") and not p.c.header.has(FileFlag.HAS_INDEX_CRC32C):
        p = Patch(_with_flag_crc(base))  # both need a checksum to flip or to leave behind
    try:
        data = mutant.mutate(draw, p)
    except LookupError:
        draw(st.nothing())
    return data, rule, mutant.code


def _with_flag_crc(data: bytes) -> bytes:
    p = Patch(data)
    p.put(p.header("file_flags"), p.u(*p.header_span("file_flags")) | FileFlag.HAS_INDEX_CRC32C, 4)
    return p.recrc()


def invalid_containers(rule: str | Iterable[str] | None = None) -> st.SearchStrategy[tuple[bytes, str, str]]:
    """``(file bytes, rule, code)``: a valid file changed to break ``rule``; a reader refuses it
    with ``code``. ``rule`` picks one rule or several (default: every rule of MUTANTS)."""
    rules = sorted(MUTANTS) if rule is None else ([rule] if isinstance(rule, str) else list(rule))
    missing = [r for r in rules if r not in MUTANTS]
    if missing:
        raise KeyError(f"no container mutant for {missing}")
    return st.one_of([_mutant(r) for r in rules])


__all__ = ["MUTANTS", "NOT_MUTATED", "Mutant", "Needs", "Patch", "invalid_containers", "kv_values", "valid_containers"]
