"""Container refusals where they happen: every invalid shared vector refused with its code, at the
byte and path of the field that breaks it, at the check level its manifest names; and each of the
three HF-DATA-13 checks (a tensor's bytes outside the tensor region) triggered.

Expected offsets come from the declarations (header and trailer field tables, index and KV
entries traced through ``INDEX_ENTRY`` and ``KV_ENTRY``), never from the reader under test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import construct as cs
import pytest
from hypothesis import given, settings

from hurray_decl.declare.schema import field_offsets
from hurray_decl.declare.trace import trace
from hurray_decl.errors import ArgumentError, HurrayDeclError
from hurray_decl.hurray import container
from hurray_decl.hurray.container import open_container, read_container, reader, validate_container
from hurray_decl.hurray.container.crc import crc32c
from hurray_decl.hurray.container.declarations import (
    FILE_HEADER,
    HEADER_LENGTH,
    INDEX_COUNT,
    INDEX_ENTRY,
    KV_COUNT,
    KV_ENTRY,
    SCALAR_PAYLOADS,
    TRAILER,
    TRAILER_LENGTH,
    FileFlag,
    KVTag,
)
from hurray_decl.hurray.container.reader import Container, align
from hurray_decl.hurray.container.strategies import Patch, invalid_containers
from hurray_decl.hurray.container.writer import write_container
from hurray_decl.hurray.tensor import BufferHandle, CompositeHead, TensorDescriptor
from hurray_decl.hurray.tensor.fields import field_span
from tests.hurray.tensor_support import CONFORMANCE

FILES = CONFORMANCE / "files"
MANIFEST = json.loads((FILES / "manifest.json").read_text())["vectors"]
INVALID = {v["file"]: v for v in MANIFEST if v["expect"] == "invalid"}


class Layout:
    """Where the fields of a container file sit, from the declarations alone."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def u(self, offset: int, size: int) -> int:
        return int.from_bytes(self.data[offset:offset + size], "little")

    def header(self, name: str) -> int:
        return field_offsets(FILE_HEADER)[name][0]

    def trailer(self, name: str) -> int:
        return len(self.data) - int(TRAILER_LENGTH) + field_offsets(TRAILER)[name][0]

    def _trailer_value(self, name: str) -> int:
        return self.u(self.trailer(name), field_offsets(TRAILER)[name][1])

    def _entries(self, start: int, end: int) -> list[dict[str, int]]:
        """Each index entry's field offsets (and ``start``), traced through the declarations."""
        spans, _ = trace(INDEX_COUNT, self.data[start:end], base=start)
        position, entries = spans[0].offset + spans[0].size, []
        for _ in range(spans[0].value):
            fields, _ = trace(INDEX_ENTRY, self.data[position:end], base=position)
            entries.append({"start": position, **{s.path: s.offset for s in fields}})
            position = max(s.offset + s.size for s in fields)
        return entries

    def entry(self, index: int, field: str) -> int:
        start = self._trailer_value("index_offset")
        return self._entries(start, start + self._trailer_value("index_length"))[index][field]

    def entry_named(self, name: str) -> int:
        start = self._trailer_value("index_offset")
        for e in self._entries(start, start + self._trailer_value("index_length")):
            if self.data[e["name"]:e["descriptor_offset"]] == name.encode():
                return e["start"]
        raise KeyError(name)

    def kv(self, index: int, field: str) -> int:
        start = self._trailer_value("kv_offset")
        end = start + self._trailer_value("kv_length")
        if field == "kv_count":
            return start
        position = start + KV_COUNT.sizeof()
        for _ in range(index):
            fields, _ = trace(KV_ENTRY, self.data[position:end], base=position)
            position = max(s.offset + s.size for s in fields)
        fields, _ = trace(KV_ENTRY, self.data[position:end], base=position)
        return {s.path: s.offset for s in fields}[field]


# file -> (path, where its offset is). The code and the level are the manifest's.
EXPECTED: dict[str, tuple[str, Callable[[Layout], int]]] = {
    "i01-major-zero.hrry": ("file -> header -> container_version_major",
                            lambda f: f.header("container_version_major")),
    "i02-alignment-zero.hrry": ("file -> header -> data_buffer_alignment", lambda f: f.header("data_buffer_alignment")),
    "i03-count-hint-wrong.hrry": ("file -> header -> tensor_count_hint", lambda f: f.header("tensor_count_hint")),
    "i04-sorted-flag-unsorted.hrry": ("file -> index -> entries -> 1 -> name", lambda f: f.entry(1, "name")),
    "i05-index-descriptor-length.hrry": ("file -> index -> entries -> 1 -> descriptor_length",
                                         lambda f: f.entry(1, "descriptor_length")),
    "i06-duplicate-name.hrry": ("file -> index -> entries -> 1 -> name", lambda f: f.entry(1, "name")),
    "i07-crc-mismatch.hrry": ("file -> trailer -> index_crc32c", lambda f: f.trailer("index_crc32c")),
    "i08-crc-flag-clear-nonzero.hrry": ("file -> trailer -> index_crc32c", lambda f: f.trailer("index_crc32c")),
    "i09-data-offset-off-by-8.hrry": ("file -> index -> entries -> 1 -> data_offset",
                                      lambda f: f.entry(1, "data_offset")),
    "i10-torn-composite.hrry": ("file -> tensor 'g'", lambda f: f.entry_named("g")),
    "i11-kv-flag-without-kv.hrry": ("file -> trailer -> kv_length", lambda f: f.trailer("kv_length")),
    "i12-kv-array-elem-tag-zero.hrry": ("file -> kv -> entries -> 1 -> value -> element_tag",
                                        lambda f: f.kv(1, "value.element_tag")),
    "i13-kv-count-huge.hrry": ("file -> kv -> kv_count", lambda f: f.kv(0, "kv_count")),
}


def test_every_invalid_vector_has_an_expectation() -> None:
    assert sorted(EXPECTED) == sorted(INVALID)


def _level_t(c: Container) -> None:
    """Everything level T reads: each tensor, and each composite through its head."""
    for name in c.names:
        if isinstance(c.tensor(name).descriptor.layout, CompositeHead):
            c.composite(name)


@pytest.mark.parametrize("name", sorted(INVALID))
def test_each_invalid_vector_is_refused_at_its_field_and_level(name: str) -> None:
    data = (FILES / name).read_bytes()
    code, level = INVALID[name]["rule"], INVALID[name]["check_level"]
    path, where = EXPECTED[name]
    with pytest.raises(HurrayDeclError) as info:
        c = open_container(data)
        assert level != "O", "open_container accepted a file level O refuses"
        try:
            _level_t(c)
        except HurrayDeclError:
            assert level == "T", "refused before its level"
            raise
        assert level == "V", "level T accepted a file it refuses"
        c.validate()
    err = info.value
    assert (err.code, err.path, err.offset) == (code, path, where(Layout(data)))


# ---------------------------------------------------------------- HF-DATA-13: outside the tensor region


def _file() -> bytes:
    """Two float32 tensors, then a KV section: the tensor region ends at kv_offset."""
    a = TensorDescriptor(type_tag=0x03, shape=(2, 3), buffers=(BufferHandle(byte_size=24),))
    b = TensorDescriptor(type_tag=0x03, shape=(4,), buffers=(BufferHandle(byte_size=16),))
    return write_container([("a", a, [bytes(range(24))]), ("b", b, [bytes(16)])], kv={"k": "v"})


def _patched(data: bytes, edits: dict[int, tuple[int, int]]) -> bytes:
    """``data`` with ``offset: (value, width)`` written and the index CRC recomputed."""
    out = bytearray(data)
    for offset, (value, width) in edits.items():
        out[offset:offset + width] = value.to_bytes(width, "little")
    f = Layout(bytes(out))
    if f.u(f.header("file_flags"), 4) & FileFlag.HAS_INDEX_CRC32C:
        start, length = f._trailer_value("index_offset"), f._trailer_value("index_length")
        out[f.trailer("index_crc32c"):f.trailer("index_crc32c") + 4] = crc32c(bytes(out[start:start + length])) \
            .to_bytes(4, "little")
    return bytes(out)


def _region(data: bytes) -> int:
    return Layout(data)._trailer_value("kv_offset")


def test_the_file_is_valid_and_its_region_ends_at_the_kv_section() -> None:
    data = _file()
    c = open_container(data).validate()
    assert c.trailer.has_kv and c.region_end == _region(data) and c.tensor("b").placement.end <= _region(data)


@pytest.mark.rules("HF-DATA-13")
def test_a_descriptor_starting_past_the_region_is_hf_data_13() -> None:
    data = _file()
    f = Layout(data)
    region = _region(data)
    moved = _patched(data, {f.entry(1, "descriptor_offset"): (align(region, 8), 8)})
    with pytest.raises(HurrayDeclError) as info:
        open_container(moved).tensor("b")
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-DATA-13", "file -> index -> entries -> 1 -> descriptor_offset",
                                                f.entry(1, "descriptor_offset"))
    first = open_container(data).header.first_descriptor_offset
    assert err.actual == align(region, 8) and err.expected == f"[{first}, {region})"


@pytest.mark.rules("HF-DATA-13")
def test_a_descriptor_before_the_first_descriptor_offset_is_hf_data_13() -> None:
    data = _file()
    f = Layout(data)
    first = f.u(f.header("first_descriptor_offset"), 8)
    moved = _patched(data, {f.entry(0, "descriptor_offset"): (first - 8, 8)})
    with pytest.raises(HurrayDeclError) as info:
        open_container(moved).tensor("a")
    assert (info.value.code, info.value.offset, info.value.actual) == ("HF-DATA-13", f.entry(0, "descriptor_offset"),
                                                                        first - 8)


@pytest.mark.rules("HF-DATA-13")
def test_a_descriptor_whose_preamble_crosses_the_region_end_is_hf_data_13() -> None:
    """The preamble (10 bytes) must lie inside the region before descriptor_length is read from it."""
    data = _file()
    f = Layout(data)
    region = _region(data)
    moved = _patched(data, {f.entry(1, "descriptor_offset"): (region - 8, 8)})
    with pytest.raises(HurrayDeclError) as info:
        open_container(moved).tensor("b")
    assert (info.value.code, info.value.offset) == ("HF-DATA-13", f.entry(1, "descriptor_offset"))


@pytest.mark.rules("HF-DATA-13")
def test_a_descriptor_reaching_past_the_region_is_hf_data_13() -> None:
    """The last descriptor moved so that its preamble is inside the region and its end is not."""
    data = _file()
    f = Layout(data)
    region = _region(data)
    c = open_container(data)
    own = c.entries[1].descriptor_length
    start = align(region - own + 8, 8)  # the preamble fits, the descriptor does not
    assert start + 10 <= region < start + own
    moved = bytearray(data)
    moved[start:start + 10] = data[c.entries[1].descriptor_offset:c.entries[1].descriptor_offset + 10]
    moved = bytearray(_patched(bytes(moved), {f.entry(1, "descriptor_offset"): (start, 8)}))
    with pytest.raises(HurrayDeclError) as info:
        open_container(bytes(moved)).tensor("b")
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-DATA-13", "file -> index -> entries -> 1 -> descriptor_length",
                                                f.entry(1, "descriptor_length"))
    assert err.actual == own and err.expected == f"<= {region - start}"


@pytest.mark.rules("HF-DATA-13")
def test_buffers_reaching_past_the_region_are_hf_data_13() -> None:
    """A buffer one byte longer than the room left before the KV section: the descriptor is inside
    the region, its buffers are not."""
    a = TensorDescriptor(type_tag=0x10, shape=(8,), buffers=(BufferHandle(byte_size=8),))
    data = write_container([("a", a, [bytes(8)])], kv={"k": "v"})
    c = open_container(data)
    f = Layout(data)
    region = c.region_end
    placement = c.tensor("a").placement
    room = region - placement.buffers[0][0]
    start = c.entries[0].descriptor_offset
    size_at = start + _buffer_size_offset(data[start:placement.descriptor_end])
    grown = _patched(data, {size_at: (room + 1, 8), f.entry(0, "data_length"): (room + 1, 8)})
    with pytest.raises(HurrayDeclError) as info:
        open_container(grown).tensor("a")
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-DATA-13", "file -> index -> entries -> 0 -> data_length",
                                                f.entry(0, "data_length"))
    assert err.actual == room + 1 and err.expected == f"buffers ending by {region}"
    assert err.detail == "the buffers reach past the tensor region"
    exact = _patched(data, {size_at: (room, 8), f.entry(0, "data_length"): (room, 8)})
    assert open_container(exact).tensor("a").placement.end == region  # exactly filling the region is valid


def _buffer_size_offset(descriptor: bytes) -> int:
    return field_span(descriptor, "buffers.0.byte_size")[0]


# ---------------------------------------------------------------- strict unless told otherwise


def _unassigned_type() -> tuple[bytes, int]:
    """A one-tensor file whose descriptor names an unassigned element type (0x05), and where."""
    a = TensorDescriptor(type_tag=0x03, shape=(2, 3), buffers=(BufferHandle(byte_size=24),))
    data = write_container([("a", a, [bytes(24)])])
    start = Layout(data).u(Layout(data).entry(0, "descriptor_offset"), 8)
    at = start + field_span(data[start:], "type_tag")[0]
    return data[:at] + b"\x05" + data[at + 1:], at


def test_readers_are_strict_by_default(tmp_path: Path) -> None:
    data, at = _unassigned_type()
    path = tmp_path / "unassigned.hrry"
    path.write_bytes(data)
    for read in (lambda: open_container(data).tensor("a"), lambda: validate_container(data),
                 lambda: read_container(path).tensor("a")):
        with pytest.raises(HurrayDeclError) as info:
            read()
        assert (info.value.code, info.value.offset) == ("HE-03", at)
        assert info.value.path == "file -> tensor 'a' -> descriptor -> type_tag"
    assert open_container(data, permissive=True).tensor("a").descriptor.type_tag == 0x05
    assert read_container(path, permissive=True).tensor("a").descriptor.type_tag == 0x05
    with pytest.raises(HurrayDeclError) as info:  # the data rules of an unknown type cannot be checked
        validate_container(data, permissive=True)
    assert info.value.code != "HE-03"
    assert validate_container(data, permissive=True, data_rules=False).names == ("a",)


def test_the_public_names_of_the_container_modules_exist() -> None:
    for module in (reader, container):
        assert module.__all__ and all(hasattr(module, name) for name in module.__all__), module.__name__
    assert set(reader.__all__) <= set(container.__all__)


def test_a_file_shorter_than_the_minimum_is_refused_at_its_end() -> None:
    data = (FILES / "v04-no-tensors.hrry").read_bytes()  # the 112-byte minimum file
    with pytest.raises(HurrayDeclError) as info:
        open_container(data[:100])
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-HDR-18", "file", 100)
    assert (err.actual, err.expected) == ("100 bytes", f">= {len(data)} bytes")


def test_an_entry_cut_by_index_length_is_refused_at_the_sections_end() -> None:
    data = (FILES / "basic.hrry").read_bytes()
    f = Layout(data)
    start, length = f._trailer_value("index_offset"), f._trailer_value("index_length")
    last = len(open_container(data).entries) - 1
    with pytest.raises(HurrayDeclError) as info:
        open_container(_patched(data, {f.trailer("index_length"): (length - 1, 8)}))
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-IDX-09", f"file -> index -> entries -> {last}", start + length - 1)
    assert err.actual == f"{length - 1} bytes in the section"
    assert err.detail == "the section ends inside this field"


def test_a_placement_is_immutable_and_hashable() -> None:
    placement = open_container((FILES / "basic.hrry").read_bytes()).tensors().__next__().placement
    assert hash(placement) == hash(type(placement)(**placement.__dict__))
    with pytest.raises(AttributeError):
        placement.descriptor_start = 0  # type: ignore[misc]


def _padded_file() -> bytes:
    """Two tensors, a KV section, the first descriptor after a padded header: every kind of gap."""
    a = TensorDescriptor(type_tag=0x10, shape=(5,), buffers=(BufferHandle(byte_size=5),))
    b = TensorDescriptor(type_tag=0x10, shape=(3,), buffers=(BufferHandle(byte_size=3),))
    return write_container([("a", a, [bytes(5)]), ("b", b, [bytes(3)])], kv={"k": "v"}, first_descriptor_offset=128)


def _gaps(data: bytes) -> dict[str, tuple[str, int, int]]:
    """Each gap of the file: name -> (the path an error names, start, end), from the index and trailer."""
    f = Layout(data)
    entry = {(i, name): f.u(f.entry(i, name), size) for i in (0, 1)
             for name, size in (("descriptor_offset", 8), ("descriptor_length", 4), ("data_offset", 8),
                                ("data_length", 8))}
    kv_offset, kv_length = f._trailer_value("kv_offset"), f._trailer_value("kv_length")
    return {
        "header": ("file -> padding before the first descriptor", HEADER_LENGTH, entry[0, "descriptor_offset"]),
        "descriptor to buffer": ("file -> tensor 'a' -> padding", entry[0, "descriptor_offset"]
                                 + entry[0, "descriptor_length"], entry[0, "data_offset"]),
        "between tensors": ("file -> padding", entry[0, "data_offset"] + entry[0, "data_length"],
                            entry[1, "descriptor_offset"]),
        "before the KV section": ("file -> padding", entry[1, "data_offset"] + entry[1, "data_length"], kv_offset),
        "after the KV section": ("file -> padding after the KV section", kv_offset + kv_length,
                                 f._trailer_value("index_offset")),
    }


@pytest.mark.parametrize("gap", ["header", "descriptor to buffer", "between tensors", "before the KV section",
                                 "after the KV section"])
def test_a_nonzero_padding_byte_is_refused_at_its_offset(gap: str) -> None:
    data = _padded_file()
    validate_container(data)
    path, start, end = _gaps(data)[gap]
    assert end > start, f"the file has no {gap} gap"
    code = "HF-HDR-15" if gap == "header" else "HF-DATA-11"
    for at in (start, end - 1):
        with pytest.raises(HurrayDeclError) as info:
            validate_container(data[:at] + b"\x5A" + data[at + 1:])
        err = info.value
        assert (err.code, err.path, err.offset, err.actual, err.expected) == (code, path, at, "0x5A", "0x00")
        assert err.detail == "padding bytes are 0x00"


def test_asking_a_plain_tensor_for_its_composite_is_an_argument_error() -> None:
    c = open_container((FILES / "basic.hrry").read_bytes())
    name = c.names[0]
    with pytest.raises(ArgumentError) as info:
        c.composite(name)
    assert (info.value.path, info.value.actual, info.value.expected) == ("name", name, "a tensor with layout 0x0B")
    with pytest.raises(ArgumentError) as info:
        c.tensor("no such tensor")
    assert (info.value.path, info.value.actual) == ("name", "no such tensor")
    assert info.value.expected == ", ".join(c.names)


def test_a_container_is_read_from_bytes_like_objects_only() -> None:
    for wrong in (42, "HRRYFILE", None):
        with pytest.raises(ArgumentError) as info:
            open_container(wrong)
        err = info.value
        assert (err.path, err.actual, err.expected) == ("data", type(wrong).__name__, "bytes, memoryview or mmap")
        assert err.detail == "a container is read from a bytes-like object"
    with pytest.raises(HurrayDeclError) as short:
        open_container(memoryview(b"HRRY"))
    assert (short.value.code, short.value.offset, short.value.actual) == ("HF-HDR-03", 0, "4 bytes")


def test_a_head_with_data_is_hf_data_07_at_its_data_length() -> None:
    data = (FILES / "v07-composite-spec-placement.hrry").read_bytes()
    f = Layout(data)
    head = open_container(data).names[0]
    with pytest.raises(HurrayDeclError) as info:
        open_container(_patched(data, {f.entry(0, "data_length"): (8, 8)})).tensor(head)
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-DATA-07", "file -> index -> entries -> 0 -> data_length",
                                                f.entry(0, "data_length"))
    assert (err.actual, err.expected, err.detail) == (8, 0, "a tensor without buffers has data_length 0")


@pytest.mark.parametrize("size", [9, 20, 63])
def test_a_file_cut_inside_its_header_is_hf_hdr_18_at_its_end(size: int) -> None:
    data = (FILES / "v04-no-tensors.hrry").read_bytes()
    with pytest.raises(HurrayDeclError) as info:
        open_container(data[:size])
    err = info.value
    assert (err.code, err.path, err.offset, err.actual) == ("HF-HDR-18", "file -> header", size,
                                                            f"{size} bytes in the section")


# ---------------------------------------------------------------- level V refusals, exactly

def _entries_end(data: bytes, count_declaration: Any, entry_declaration: Any, start: int, end: int) -> int:
    """Where the entries of a section end, traced through their declarations."""
    spans, _ = trace(count_declaration, data[start:end], base=start)
    position = spans[0].offset + spans[0].size
    for _ in range(spans[0].value):
        fields, _ = trace(entry_declaration, data[position:end], base=position)
        position = max(s.offset + s.size for s in fields)
    return position


def _where_v(rule: str, data: bytes, err: HurrayDeclError) -> tuple[str, int, str]:
    """(path, offset, detail) a level-V refusal of ``rule`` must carry in ``data``."""
    f = Layout(data)
    index, index_length = f._trailer_value("index_offset"), f._trailer_value("index_length")
    kv, kv_length = f._trailer_value("kv_offset"), f._trailer_value("kv_length")
    region = "the section does not start where the tensor region ends"
    if rule == "HF-IDX-06":
        assert (err.actual, err.expected) == (index + index_length, len(data) - TRAILER_LENGTH)
        return ("file -> trailer -> index_length", f.trailer("index_length"),
                "the index does not end where the trailer begins")
    if rule == "HF-IDX-07" and kv_length:  # after a KV section: at align8 of its end
        assert (err.actual, err.expected) == (index, align(kv + kv_length, 8))
        return ("file -> trailer -> index_offset", f.trailer("index_offset"),
                "the index does not start at align8(end of the KV section)")
    if rule == "HF-IDX-07":
        return "file -> trailer -> index_offset", f.trailer("index_offset"), region
    if rule == "HF-META-20":
        return "file -> trailer -> kv_offset", f.trailer("kv_offset"), region
    if rule == "HF-IDX-10":
        end = _entries_end(data, INDEX_COUNT, INDEX_ENTRY, index, index + index_length)
        assert (err.actual, err.expected) == (f"{index + index_length - end} bytes", "0 bytes")
        return "file -> index", end, "bytes are left inside index_length after the entries (minor 0)"
    if rule == "HF-META-08":
        end = _entries_end(data, KV_COUNT, KV_ENTRY, kv, kv + kv_length)
        assert (err.actual, err.expected) == (f"{kv + kv_length - end} bytes", "0 bytes")
        return "file -> kv", end, "bytes are left inside kv_length after the entries (minor 0)"
    if rule == "HF-META-11":
        i = int(err.path.split(" -> ")[3])
        return f"file -> kv -> entries -> {i} -> key", f.kv(i, "key"), "two KV entries have the same key"
    if rule == "HF-HDR-16":
        count = f.u(index, 8)
        assert err.expected == f"{count} or 0xFFFFFFFFFFFFFFFF"
        return ("file -> header -> tensor_count_hint", f.header("tensor_count_hint"),
                "tensor_count_hint is neither unknown nor the entry count")
    raise AssertionError(rule)


@pytest.mark.parametrize("rule", ["HF-IDX-06", "HF-IDX-07", "HF-META-20", "HF-IDX-10", "HF-META-08", "HF-META-11",
                                  "HF-HDR-16"])
def test_whole_file_refusals_carry_their_field_offset_and_words(rule: str) -> None:
    @settings(max_examples=4)
    @given(mutant=invalid_containers(rule))
    def check(mutant: tuple[bytes, str, str]) -> None:
        data, _, code = mutant
        with pytest.raises(HurrayDeclError) as info:
            validate_container(data)
        err = info.value
        assert err.code == code == rule
        assert (err.path, err.offset, err.detail) == _where_v(rule, data, err)

    check()


def test_field_offsets_of_index_entries_are_the_declarations() -> None:
    data = (FILES / "v05-align8192-sorted-u64.hrry").read_bytes()
    c, f = open_container(data), Layout(data)
    for i in range(len(c.entries)):
        assert c.locate(c.names[i]) == f.entry_named(c.names[i])
        for field in (sub.name for sub in INDEX_ENTRY.subcons):
            assert c.field_offset(i, field) == f.entry(i, field), (i, field)


def test_unknown_names_list_the_first_twenty_tensors() -> None:
    t = TensorDescriptor(type_tag=0x10, shape=(1,), buffers=(BufferHandle(byte_size=1),))
    names = [f"t{i:02d}" for i in range(21)]
    c = open_container(write_container([(n, t, [b"\x00"]) for n in names]))
    with pytest.raises(ArgumentError) as info:
        c.entry("t21")
    assert info.value.expected == ", ".join(names[:20])


def test_exactly_the_magic_is_cut_inside_the_header_not_short_of_the_magic() -> None:
    with pytest.raises(HurrayDeclError) as info:
        open_container(b"HRRYFILE")
    assert (info.value.code, info.value.path, info.value.offset) == ("HF-HDR-18", "file -> header", 8)
    with pytest.raises(HurrayDeclError) as info:
        open_container(b"HRRYFIL")
    assert (info.value.code, info.value.path, info.value.offset) == ("HF-HDR-03", "file -> header -> magic", 0)


def test_a_misaligned_descriptor_offset_is_hf_data_02() -> None:
    data = _file()
    f = Layout(data)
    off = f.u(f.entry(1, "descriptor_offset"), 8)
    with pytest.raises(HurrayDeclError) as info:
        open_container(_patched(data, {f.entry(1, "descriptor_offset"): (off + 4, 8)})).tensor("b")
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-DATA-02", "file -> index -> entries -> 1 -> descriptor_offset",
                                                f.entry(1, "descriptor_offset"))
    assert (err.actual, err.expected) == (off + 4, "a multiple of 8")
    assert err.detail == "a descriptor_offset is not 8-aligned"


def test_a_tensor_not_where_the_previous_one_ends_is_hf_data_03() -> None:
    """Entry 1 names entry 0's descriptor (same offset, lengths, data): each tensor is readable on
    its own, but the second does not start where the first ends."""
    data = _file()
    f = Layout(data)
    widths = {"descriptor_offset": 8, "descriptor_length": 4, "data_offset": 8, "data_length": 8}
    bad = _patched(data, {f.entry(1, name): (f.u(f.entry(0, name), size), size) for name, size in widths.items()})
    with pytest.raises(HurrayDeclError) as info:
        validate_container(bad)
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-DATA-03", "file -> index -> entries -> 1 -> descriptor_offset",
                                                f.entry(1, "descriptor_offset"))
    assert err.actual == f.u(f.entry(0, "descriptor_offset"), 8)
    assert err.expected == str(f.u(f.entry(1, "descriptor_offset"), 8))


def test_a_data_rule_inside_a_buffer_is_located_from_that_buffers_first_byte() -> None:
    """A NaN scale (HQ-PB-12) in the scale buffer of a per-block tensor: the offset is the scale's
    byte in the file (its buffer's start plus its place in the buffer), not the buffer's end."""
    import numpy as np

    from hurray_decl import quantize

    q = quantize(np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32), "per_block_affine", storage="int8",
                 block_size=32)
    data = bytearray(write_container([("q", q.descriptor, [bytes(b) for b in q.buffers])]))
    start, end = open_container(bytes(data)).tensor("q").placement.buffers[1]
    data[start + 4:start + 8] = np.float32(np.nan).tobytes()  # the second block's scale
    with pytest.raises(HurrayDeclError) as info:
        validate_container(bytes(data))
    err = info.value
    assert (err.code, err.offset) == ("HQ-PB-12", start + 4) and end > start + 4
    assert err.path == "file -> tensor 'q' -> descriptor -> buffers -> 1 -> [1]"
    for by_default in (lambda c: c.validate(), lambda c: list(c.checks())):  # the data rules are on by default
        with pytest.raises(HurrayDeclError) as again:
            by_default(open_container(bytes(data)))
        assert (again.value.code, again.value.offset) == ("HQ-PB-12", start + 4)
    assert open_container(bytes(data)).validate(data=False).names == ("q",)


# --- KV arrays of strings and byte sequences, read in one pass ------------------------------

def _kv_array(kv: dict[str, Any], field: str | None = None, value: int | bytes = 0,
              width: int = 4) -> tuple[bytes, int]:
    """A container of one KV array, with ``field`` of its entry patched; and where that field is."""
    p = Patch(write_container([], kv))
    at = p.kv_entries()[0][field][0] if field else 0
    return (p.put(at, value, width).recrc() if field else bytes(p.data)), at


@pytest.mark.parametrize("values", [["ab", ""], ["ab", "cd"], [b"x", b""], [b"x", b"yz"]])
def test_an_array_whose_last_element_ends_the_kv_section_is_read_whole(values: list[Any]) -> None:
    data, _ = _kv_array({"k": values})
    c = open_container(data)
    p = Patch(data)
    last = p.kv_entries()[0]
    assert max(offset + size for offset, size in last.values()) == c.trailer.kv_offset + c.trailer.kv_length
    assert c.kv["k"].value == tuple(values)


@pytest.mark.rules("HF-META-07")
@pytest.mark.parametrize(("item", "length", "room"), [(1, 3, 2), (0, 0x0100_0002, 8), (1, 0x0100_0002, 2)])
def test_an_array_element_longer_than_the_bytes_left_is_hf_meta_07_at_its_length(item: int, length: int,
                                                                                 room: int) -> None:
    """One byte too long, or a length whose fourth byte is set (its low three bytes alone would fit)."""
    data, at = _kv_array({"k": ["ab", "cd"]}, f"value.items[{item}].length", length)
    with pytest.raises(HurrayDeclError) as info:
        open_container(data)
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-META-07", "file -> kv -> entries -> 0 -> value -> items -> length",
                                                at)
    assert (err.actual, err.expected) == (length, f"<= {room} ({room} bytes left)")
    assert err.detail == "a string length cannot fit in the bytes left in its section"


@pytest.mark.rules("HF-META-07")
def test_an_array_counting_one_element_more_than_it_holds_is_cut_at_the_section_end() -> None:
    data, _ = _kv_array({"k": ["abcdef", "x"]}, "value.count", 3)
    c = Patch(write_container([], {"k": ["abcdef", "x"]})).c
    end = c.trailer.kv_offset + c.trailer.kv_length
    with pytest.raises(HurrayDeclError) as info:
        open_container(data)
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-META-07", "file -> kv -> entries -> 0 -> value -> items", end)


@pytest.mark.rules("HF-META-13")
def test_a_string_element_that_is_not_utf8_is_hf_meta_13_at_its_bytes() -> None:
    data, at = _kv_array({"k": ["ab", "cd"]}, "value.items[1].bytes", b"\xff\xfe")
    with pytest.raises(HurrayDeclError) as info:
        open_container(data)
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-META-13", "file -> kv -> entries -> 0 -> value -> items -> bytes",
                                                at)
    assert err.actual == b"\xff\xfe"


@pytest.mark.rules("HF-META-12")
def test_an_element_the_fast_path_refuses_and_its_declaration_accepts_is_hf_meta_12(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-pass read never keeps a value its declaration would read otherwise: were the string
    declaration to accept bytes that are not UTF-8, the element is refused, not decoded another way."""
    data, at = _kv_array({"k": ["ab", "cd"]}, "value.items[1].bytes", b"\xff\xfe")
    loose = cs.Struct("length" / cs.Int32ul, "bytes" / cs.Bytes(cs.this.length))
    monkeypatch.setitem(SCALAR_PAYLOADS, KVTag.STRING, loose)
    with pytest.raises(HurrayDeclError) as info:
        open_container(data)
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-META-12", "file -> kv -> entries -> 0 -> value -> items", at - 4)
    assert err.detail == "an array element could not be read"


@pytest.mark.rules("HF-DATA-07")
@pytest.mark.parametrize("length", [23, 25])
def test_a_data_length_other_than_its_buffers_end_is_hf_data_07(length: int) -> None:
    data = _file()
    f = Layout(data)
    with pytest.raises(HurrayDeclError) as info:
        open_container(_patched(data, {f.entry(0, "data_length"): (length, 8)})).tensor("a")
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-DATA-07", "file -> index -> entries -> 0 -> data_length",
                                                f.entry(0, "data_length"))
    assert (err.actual, err.expected) == (length, 24)
    assert err.detail == "data_length is not the end of the last buffer - data_offset"


@pytest.mark.rules("HF-HDR-03")
@pytest.mark.parametrize("size", [0, 7])
def test_an_input_shorter_than_the_magic_expects_8_bytes(size: int) -> None:
    with pytest.raises(HurrayDeclError) as info:
        open_container(b"HRRYFILE"[:size])
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-HDR-03", "file -> header -> magic", 0)
    assert (err.actual, err.expected) == (f"{size} bytes", ">= 8 bytes")
    assert err.detail == "the input is shorter than the container magic"


@pytest.mark.rules("HF-IDX-18")
def test_the_descriptors_own_length_is_read_as_four_bytes() -> None:
    """A descriptor_length whose fourth byte is set differs from the index's, even when its low three bytes agree."""
    data = _file()
    c = open_container(data)
    e = c.entries[1]
    at = e.descriptor_offset + 9  # the high byte of the preamble's u32 descriptor_length
    with pytest.raises(HurrayDeclError) as info:
        open_container(_patched(data, {at: (1, 1)})).tensor("b")
    err = info.value
    f = Layout(data)
    assert (err.code, err.path, err.offset) == ("HF-IDX-18", "file -> index -> entries -> 1 -> descriptor_length",
                                                f.entry(1, "descriptor_length"))
    assert (err.actual, err.expected) == (e.descriptor_length, e.descriptor_length + (1 << 24))
    assert err.detail == "descriptor_length differs from the descriptor's own"


@pytest.mark.rules("HF-DATA-13", "HF-DATA-05")
def test_a_descriptor_ending_exactly_at_the_region_end_is_inside_the_region() -> None:
    """A newer-minor descriptor of 56 bytes (3 trailing) moved to end at the KV section: the region
    check passes it, and its buffer, now after the region, is where HF-DATA-05 refuses it."""
    a = TensorDescriptor(type_tag=0x10, shape=(13,), buffers=(BufferHandle(byte_size=13),), version_minor=1,
                         trailing=bytes(3))
    data = write_container([("a", a, [bytes(13)])], kv={"k": "v"})
    c = open_container(data)
    e, region = c.entries[0], c.region_end
    start = region - e.descriptor_length
    assert start % 8 == 0 and e.descriptor_length == 56
    moved = bytearray(data)
    moved[start:region] = data[e.descriptor_offset:e.descriptor_offset + e.descriptor_length]
    f = Layout(data)
    with pytest.raises(HurrayDeclError) as info:
        open_container(_patched(bytes(moved), {f.entry(0, "descriptor_offset"): (start, 8)})).tensor("a")
    err = info.value
    assert (err.code, err.path, err.offset) == ("HF-DATA-05", "file -> index -> entries -> 0 -> data_offset",
                                                f.entry(0, "data_offset"))
    assert (err.actual, err.expected) == (e.data_offset, align(region, c.header.data_buffer_alignment))
