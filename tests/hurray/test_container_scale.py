"""Containers at scale: KV arrays read as one NumPy view (fixed-width elements) or in one pass
(strings, byte sequences), with the declaration's own errors at the first bad element; padding
checked in bounded chunks, the first offending byte named."""

from __future__ import annotations

import io
import itertools
import math
import struct

import numpy as np
import pytest

from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.container import KVTag, KVValue, open_container, reader, validate_container
from hurray_decl.hurray.container.declarations import KV_ENTRY
from hurray_decl.hurray.container.reader import Section
from hurray_decl.hurray.container.writer import ContainerWriter, write_container

N = 100_003  # 10^5 and odd: no element count a chunk or a pair divides


def kv_file(value) -> bytes:
    return write_container([], {"a": 1, "big": value, "z": "end"})


def entry_start(data: bytes, c) -> int:
    return c.positions["kv -> entries -> 1"]


def declared_error(data: bytes, start: int, end: int) -> HurrayDeclError:
    """What the KV_ENTRY declaration itself says of the entry at ``start`` (element by element)."""
    with pytest.raises(HurrayDeclError) as info:
        Section(memoryview(data), start, end, "HF-META-07").parse(KV_ENTRY, "file -> kv -> entries -> 1")
    return info.value


@pytest.mark.parametrize("values", [
    [bool(i % 3) for i in range(N)],
    list(range(-N // 2, N - N // 2)),
    [(1 << 64) - 1 - i for i in range(N)],
    [float(i) / 7 for i in range(N)],
    [f"s{i}" * (i % 4) for i in range(N)],
    [bytes([i % 256]) * (i % 5) for i in range(N)],
], ids=["bool", "int64", "uint64", "float64", "string", "bytes"])
def test_large_arrays_read_back_every_element(values):
    value = KVValue.of(values)
    c = validate_container(kv_file(value))
    got = c.kv["big"]
    assert got.tag == KVTag.ARRAY and got.element_tag == value.element_tag
    assert got.value == value.value
    assert all(type(a) is type(b) for a, b in zip(got.value[:50], value.value[:50]))
    assert c.kv["z"].value == "end"  # the section is read on past the array
    assert got.size() == value.size()


def test_float_bits_and_empty_arrays_survive():
    nan = struct.unpack("<d", bytes.fromhex("0100000000f8ff7f"))[0]
    c = open_container(write_container([], {"f": [nan, -0.0, math.inf],
                                            "e": KVValue(tag=KVTag.ARRAY, element_tag=KVTag.BOOL, value=())}))
    f = c.kv["f"].value
    assert struct.pack("<d", f[0]) == bytes.fromhex("0100000000f8ff7f") and math.copysign(1, f[1]) < 0
    assert c.kv["e"].value == () and c.kv["e"].element_tag == KVTag.BOOL


@pytest.mark.parametrize("where", [0, N // 2, N - 1])
def test_a_bad_bool_is_the_declarations_error(where):
    data = bytearray(kv_file([True] * N))
    c = open_container(bytes(data))
    start = entry_start(bytes(data), c)
    items = start + 2 + 3 + 1 + 1 + 4  # key_length, "big", value_tag, element_tag, count
    data[items + where] = 2
    end = c.trailer.kv_offset + c.trailer.kv_length
    expected = declared_error(bytes(data), start, end)
    with pytest.raises(HurrayDeclError) as info:
        open_container(bytes(data))
    got = info.value
    assert (got.code, got.path, got.offset, str(got)) == (expected.code, expected.path, expected.offset,
                                                          str(expected))
    assert got.code == "HF-META-14" and got.offset == items + where


@pytest.mark.parametrize("damage", ["utf8", "length"])
def test_a_bad_string_is_the_declarations_error(damage):
    values = [f"v{i}" for i in range(1000)]
    data = bytearray(kv_file(values))
    c = open_container(bytes(data))
    start = entry_start(bytes(data), c)
    at = bytes(data).index(b"v777", start)
    if damage == "utf8":
        data[at + 1] = 0xFF
    else:
        data[at - 4:at] = (10 ** 6).to_bytes(4, "little")
    end = c.trailer.kv_offset + c.trailer.kv_length
    expected = declared_error(bytes(data), start, end)
    with pytest.raises(HurrayDeclError) as info:
        open_container(bytes(data))
    assert (info.value.code, info.value.path, info.value.offset, str(info.value)) == (
        expected.code, expected.path, expected.offset, str(expected))
    assert info.value.code == ("HF-META-13" if damage == "utf8" else "HF-META-07")


def test_positions_of_kv_entries_tile_the_section():
    c = open_container(kv_file([1.5] * 10))
    starts = [c.positions[f"kv -> entries -> {i}"] for i in range(3)]
    sizes = [2 + len(k.encode()) + 1 + v.size() for k, v in c.kv.items()]
    assert starts[0] == c.trailer.kv_offset + 4
    assert [b - a for a, b in itertools.pairwise(starts)] == sizes[:2]
    assert c.positions["kv -> end"] == starts[2] + sizes[2]


def padded(gap: int) -> bytearray:
    sink = io.BytesIO()
    writer = ContainerWriter(sink, first_descriptor_offset=64 + gap)
    writer.finish({"k": 1})
    return bytearray(sink.getvalue())


@pytest.mark.parametrize("at", [0, 4095, 4096, 3 * 4096 + 5, 5 * 4096 - 1])
def test_padding_is_checked_in_chunks_and_names_the_first_byte(monkeypatch, at):
    monkeypatch.setattr(reader, "PADDING_CHUNK", 4096)
    data = padded(5 * 4096)
    validate_container(bytes(data))
    data[64 + at] = 0x7F
    data[64 + 5 * 4096 - 1] = 0x01  # a later offender never wins
    with pytest.raises(HurrayDeclError) as info:
        validate_container(bytes(data))
    assert (info.value.code, info.value.offset) == ("HF-HDR-15", 64 + at)
    assert info.value.actual == ("0x7F" if at != 5 * 4096 - 1 else "0x01")


def test_long_non_zero_padding_is_a_rule_not_a_memory_error():
    gap = 3 * reader.PADDING_CHUNK + 24
    data = padded(gap)
    data[64:64 + gap] = b"\xff" * gap
    with pytest.raises(HurrayDeclError) as info:
        validate_container(bytes(data))
    assert (info.value.code, info.value.offset) == ("HF-HDR-15", 64)
    assert np.frombuffer(bytes(data[64:64 + gap]), np.uint8).all()


@pytest.mark.parametrize("claim", [5, 6, 35])
def test_a_count_of_wide_elements_past_the_section_is_refused_at_the_count(claim):
    """Three int64 elements, then the "z" entry: a count the bytes left hold as bytes but not as
    8-byte elements is refused at the count, by the declaration, before any element is read (so
    the one NumPy view of the elements never reaches past the section)."""
    data = bytearray(kv_file([7, 8, 9]))
    c = open_container(bytes(data))
    start = entry_start(bytes(data), c)
    count_at = start + 2 + 3 + 1 + 1  # key_length, "big", value_tag, element_tag
    assert int.from_bytes(data[count_at:count_at + 4], "little") == 3
    data[count_at:count_at + 4] = claim.to_bytes(4, "little")
    end = c.trailer.kv_offset + c.trailer.kv_length
    left = end - (count_at + 4)
    assert claim * 8 > left >= claim, "the count passes a one-byte-per-element bound, not the 8-byte one"
    expected = declared_error(bytes(data), start, end)
    with pytest.raises(HurrayDeclError) as info:
        open_container(bytes(data))
    assert (info.value.code, info.value.path, info.value.offset, str(info.value)) == (
        expected.code, expected.path, expected.offset, str(expected))
    assert (info.value.code, info.value.offset) == ("HF-META-07", count_at)


WRITTEN = [
    (KVTag.STRING, ["a", "", "\u00e9\u20ac\U0001f600", "x" * 300] * 2_501),
    (KVTag.BYTES, [b"", b"\x00\xff", bytearray(b"ab"), memoryview(b"xyz")] * 2_501),
    (KVTag.INT64, [-(1 << 63), -1, 0, (1 << 63) - 1] * 2_501),
    (KVTag.UINT64, [0, 1, (1 << 64) - 1] * 3_334),
    (KVTag.FLOAT64, [math.inf, -0.0, struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_0000_0123))[0], 1e-310] * 2_501),
    (KVTag.BOOL, [True, False, False] * 3_334),
    (KVTag.STRING, []),
]


@pytest.mark.parametrize("tag, values", WRITTEN, ids=[f"{KVTag(t).name}-{len(v)}" for t, v in WRITTEN])
def test_arrays_are_written_as_their_declaration_builds_them(tag, values):
    """The writer's one-pass arrays (NumPy for fixed-width elements, lengths and bytes joined for
    strings) are the bytes KV_ENTRY builds element by element, and size() their length."""
    value = KVValue(tag=KVTag.ARRAY, element_tag=tag, value=tuple(values))
    ref = KV_ENTRY.build({"key_length": 1, "key": b"k", "value_tag": KVTag.ARRAY, "value": value.payload_wire()})
    data = write_container([], {"k": value})
    c = open_container(data)
    at = c.positions["kv -> entries -> 0"]
    assert data[at:at + len(ref)] == ref and value.size() == len(ref) - 4
    assert write_container([], {"k": c.kv["k"]}) == data  # read back exactly (NaN bits too)


@pytest.mark.parametrize("tag, values, index, code", [
    (KVTag.STRING, ["a"] * 500 + ["\ud800"] + ["b"], 500, "HF-META-13"),
    (KVTag.STRING, ["a", 3], 1, "ARGUMENT"),
    (KVTag.INT64, [0] * 9 + [1 << 63], 9, "ARGUMENT"),
    (KVTag.INT64, [0, True], 1, "ARGUMENT"),
    (KVTag.UINT64, [5, -1], 1, "ARGUMENT"),
    (KVTag.FLOAT64, [1.0, 1], 1, "ARGUMENT"),
    (KVTag.BOOL, [True, 1], 1, "ARGUMENT"),
    (KVTag.BYTES, [b"", "s"], 1, "ARGUMENT"),
])
def test_a_bad_element_among_many_is_named_by_its_index(tag, values, index, code):
    """The whole-array passes refuse what the element check refuses, at the first bad element."""
    with pytest.raises(HurrayDeclError) as info:
        KVValue(tag=KVTag.ARRAY, element_tag=tag, value=values)
    assert info.value.code == code and info.value.path.endswith(f"value -> {index}"), info.value


def test_of_types_a_list_by_its_elements():
    assert KVValue.of([1, 2]).element_tag == KVTag.INT64
    assert KVValue.of([1, 1 << 63]).element_tag == KVTag.UINT64
    assert KVValue.of([True, False]).element_tag == KVTag.BOOL
    assert KVValue.of(["a"]).element_tag == KVTag.STRING and KVValue.of([0.5]).element_tag == KVTag.FLOAT64
    assert KVValue.of([b"a", bytearray(b"b")]).element_tag == KVTag.BYTES
    with pytest.raises(HurrayDeclError):
        KVValue.of([1, "a"])
    with pytest.raises(HurrayDeclError):
        KVValue.of([1, True])


SCALARS = [(KVTag.STRING, "\u00e9\u20ac"), (KVTag.STRING, ""), (KVTag.INT64, -(1 << 63)), (KVTag.INT64, (1 << 63) - 1),
           (KVTag.UINT64, (1 << 64) - 1), (KVTag.FLOAT64, math.nan), (KVTag.FLOAT64, -0.0), (KVTag.BOOL, True),
           (KVTag.BOOL, False), (KVTag.BYTES, b"\x00\xff"), (KVTag.BYTES, bytearray())]


def test_scalar_entries_are_written_as_their_declaration_builds_them():
    """Each scalar entry (packed by struct with the declaration's formats) is KV_ENTRY's build, and
    KVValue.scalar is the validating constructor's value."""
    kv = {f"k{i}": KVValue.scalar(tag, value) for i, (tag, value) in enumerate(SCALARS)}
    data = write_container([], kv)
    c = open_container(data)
    for i, (tag, value) in enumerate(SCALARS):
        model = KVValue(tag=tag, value=value)
        assert kv[f"k{i}"].model_dump_json() == model.model_dump_json()
        key = f"k{i}".encode()
        ref = KV_ENTRY.build({"key_length": len(key), "key": key, "value_tag": tag, "value": model.payload_wire()})
        at = c.positions[f"kv -> entries -> {i}"]
        assert data[at:at + len(ref)] == ref, (tag, value)
    for tag, value, code in ((KVTag.INT64, 1 << 63, "ARGUMENT"), (KVTag.STRING, "\ud800", "HF-META-13"),
                             (KVTag.BOOL, 1, "ARGUMENT"), (0x09, 1, "HF-META-16")):
        with pytest.raises(HurrayDeclError) as info:
            KVValue.scalar(tag, value)
        assert info.value.code == code


def _opened(data: bytes):
    """What open_container makes of ``data``: entries, positions and KV, or the refusal's code, path, offset."""
    try:
        c = open_container(data)
    except HurrayDeclError as err:
        return (err.code, err.path, err.offset, str(err))
    return ([e.model_dump() for e in c.entries], c.positions, {k: v.model_dump_json() for k, v in c.kv.items()},
            c.skipped)


def test_the_fast_index_and_kv_walks_read_and_refuse_as_the_declarations(monkeypatch):
    """Index entries and scalar KV entries read with struct are the ones INDEX_ENTRY and KV_ENTRY
    parse, and every mutant is refused with the same code, path and offset with and without the
    fast walks (every rule's mutants, valid files, and a name that is not UTF-8, an empty name, a
    flags bit; a KV key that is not UTF-8, a bool 2, a string that is not UTF-8 or runs past the
    section)."""
    from hurray_decl.hurray.container.strategies import invalid_containers, valid_containers
    from hurray_decl.hurray.fuzz import draw_examples

    cases = [data for data, _, _ in draw_examples(invalid_containers(), 400, 3)]
    cases += draw_examples(valid_containers(), 60, 4)
    base = write_container([("ab", *_f32()), ("cd", *_f32())], {"k": 1}, index_crc=False)
    c = open_container(base)
    second = c.positions["index -> entries -> 1"]
    for patch in ((second + 2, b"\xff"), (second, b"\x00\x00"), (c.field_offset(1, "flags"), b"\x01")):
        at, new = patch
        cases.append(base[:at] + new + base[at + len(new):])
    scalars = write_container([], {"b": True, "s": "text", "n": -3, "f": 0.5, "y": b"\x00"}, index_crc=False)
    kv = open_container(scalars).positions
    bool_at, text_at = kv["kv -> entries -> 0"], kv["kv -> entries -> 1"]
    for at, new in ((bool_at + 2, b"\xff"), (bool_at + 4, b"\x02"), (text_at + 8, b"\xff"),
                    (text_at + 4, b"\xff\x00")):
        cases.append(scalars[:at] + new + scalars[at + len(new):])
    fast = [_opened(data) for data in cases]
    monkeypatch.setattr(reader, "_index_fast", lambda view, start, end, header: None)
    monkeypatch.setattr(reader, "_entry_fast", lambda view, p, end: None)
    monkeypatch.setattr(reader, "_kv_fast", lambda view, p, end: None)
    monkeypatch.setattr(reader.FixedRead, "read", lambda self, view, offset, params=None: None)
    slow = [_opened(data) for data in cases]
    assert fast == slow
    assert [f[0] for f in fast[-7:]] == ["HF-IDX-12", "HF-IDX-11", "HF-IDX-14", "HF-META-10", "HF-META-14",
                                         "HF-META-13", "HF-META-07"]
    assert sum(isinstance(f[0], list) for f in fast) >= 60


def _f32():
    from hurray_decl.hurray.tensor import BufferHandle, TensorDescriptor

    return TensorDescriptor(type_tag=0x03, shape=(2,), buffers=(BufferHandle(byte_size=8),)), [bytes(8)]


def test_trusted_models_are_the_constructors():
    """declare.model.trusted: the model a validating constructor makes, marked validated; with a
    field missing it goes through model_construct (the default filled in)."""
    from hurray_decl.declare.model import trusted, validated
    from hurray_decl.hurray.container.model import IndexEntry

    made = trusted(KVValue, {"tag": KVTag.STRING, "value": "x", "element_tag": None})
    assert made == KVValue(tag=KVTag.STRING, value="x") and validated(made)
    fields = {"name": "t", "descriptor_offset": 8, "descriptor_length": 40, "data_offset": 64, "data_length": 4}
    entry = trusted(IndexEntry, fields)  # flags left to its default
    assert entry == IndexEntry(**fields) and entry.flags == 0 and validated(entry)
    assert entry.model_dump() == IndexEntry(**fields, flags=0).model_dump()


def _index_of(names: list[bytes], *, sorted_index: bool = False, tail: bytes = b"",
              flags_at: int | None = None) -> bytes:
    """A container whose index holds ``names`` as raw bytes (any bytes, valid or not), every entry
    with the fields of its one tensor's (level O reads no descriptor), its CRC made again; ``tail``
    appended inside the index (a newer minor's bytes), a flags bit set in entry ``flags_at``."""
    from hurray_decl.hurray.container.crc import crc32c
    from hurray_decl.hurray.container.declarations import INDEX_COUNT_LENGTH

    data = write_container([("n", *_f32())], {"k": 1}, sorted_index=sorted_index)
    c = open_container(data)
    t = c.trailer
    fixed = c.field_offset(0, "descriptor_offset")
    fields = data[fixed:fixed + 32]
    flagged = fields[:28] + b"\x01\x00\x00\x00"
    index = struct.pack("<Q", len(names)) + b"".join(
        struct.pack("<H", len(raw)) + raw + (flagged if i == flags_at else fields) for i, raw in enumerate(names))
    index += tail
    assert INDEX_COUNT_LENGTH == 8
    trailer = struct.pack("<QQQII4s4s", t.index_offset, len(index), t.kv_offset, t.kv_length, crc32c(index),
                          bytes(4), b"HRRY")
    return data[:t.index_offset] + index + trailer


@pytest.mark.parametrize("names", [
    [b"a", b"b\xc3", b"\xa9c"],              # the names joined are UTF-8, each is not (HF-IDX-12)
    [b"x\xc3\xa9", b"\xe4\xb8\xad", b"\xa9"],  # a name starting inside a character
    [b"\xf0\x9f\x98\x80", b"e\xcc\x81", b"\xc3\xa9t\xc3\xa9"],  # valid: characters of 1 to 4 bytes
    [b"a\x00b", b"\x00", b"c"],              # valid: names holding the separator of the one-split path
    [b"a\x00\xc3\xa9", b"\xe4\xb8\xad\x00"],  # the same with characters of several bytes
    [b"dup", b"x", b"dup"],                   # HF-IDX-13
    [b"\xed\xa0\x80", b"y"],                 # a surrogate: not UTF-8
    [b"", b"y"],                              # HF-IDX-11
], ids=["joined-utf8", "mid-character", "multibyte", "nul", "nul-multibyte", "duplicate", "surrogate", "empty"])
def test_the_column_index_reads_and_refuses_names_as_the_declaration(monkeypatch, names):
    """The index read as columns (:func:`reader._index_fast`) gives the declaration's names, fields,
    starts and positions, or lets the declaration refuse with its own code, path and offset."""
    data = _index_of(names)
    fast = _opened(data)
    with monkeypatch.context() as m:
        m.setattr(reader, "_index_fast", lambda view, start, end, header: None)
        slow = _opened(data)
    assert fast == slow
    try:
        valid = [raw.decode("utf-8") for raw in names] if all(names) and len(set(names)) == len(names) else None
    except UnicodeDecodeError:
        valid = None
    if isinstance(fast[0], list):
        assert valid is not None and [e["name"] for e in fast[0]] == valid
        c = open_container(data)
        assert c.names == tuple(valid) and [c.entries.position(n) for n in valid] == list(range(len(valid)))
    else:
        assert fast[0] in ("HF-IDX-11", "HF-IDX-12", "HF-IDX-13")


def test_the_column_index_reads_a_large_index_as_the_declaration(monkeypatch):
    """10^5 + 3 entries of names of 1 to 40 bytes, ASCII and not, sorted: the columns, names and
    positions equal the entry-by-entry walk's; a name out of order, a flags bit, bytes after the
    entries (minor 0) and a cut entry are refused with the same code and offset by both."""
    from hurray_decl.hurray.container.crc import crc32c

    rng = np.random.default_rng(3)
    count = N
    alphabet = ["a", "Z", "0", ".", "\u00e9", "\u4e2d", "\U0001f600"]
    names = sorted({"".join(rng.choice(alphabet, int(rng.integers(1, 12)))) + f"{i:06d}" for i in range(count)},
                   key=lambda n: n.encode())
    raws = [n.encode() for n in names]
    data = _index_of(raws, sorted_index=True)
    c = open_container(data)
    with monkeypatch.context() as m:
        m.setattr(reader, "_index_fast", lambda view, start, end, header: None)
        d = open_container(data)
    assert c.names == d.names == tuple(names)
    for field in ("name_length", *reader.ENTRY_FIELDS):
        assert np.array_equal(c.entries.column(field), d.entries.column(field)), field
    assert np.array_equal(c.entries.starts, d.entries.starts) and c.positions == d.positions
    assert [c.entries[i] for i in (0, 7, count - 1)] == [d.entries[i] for i in (0, 7, count - 1)]
    assert c.entries[-1] == d.entries[count - 1] and c.entries[2:4] == d.entries[2:4]
    swapped = raws[:]
    swapped[500], swapped[501] = swapped[501], swapped[500]
    mutants = [_index_of(swapped, sorted_index=True), _index_of(raws, sorted_index=True, flags_at=count - 2),
               _index_of(raws[:50], sorted_index=True, tail=b"\x00" * 8)]
    short = _index_of(raws[:50] + [b"z" * 60], sorted_index=True)  # the index cut inside its last entry, CRC made
    t = open_container(short).trailer
    index = short[t.index_offset:t.index_offset + t.index_length - 40]
    mutants.append(short[:t.index_offset] + index + struct.pack(
        "<QQQII4s4s", t.index_offset, len(index), t.kv_offset, t.kv_length, crc32c(index), bytes(4), b"HRRY"))
    fast = [_opened(m_) for m_ in mutants]
    with monkeypatch.context() as m:
        m.setattr(reader, "_index_fast", lambda view, start, end, header: None)
        slow = [_opened(m_) for m_ in mutants]
    assert fast == slow
    assert [f[0] for f in fast] == ["HF-IDX-15", "HF-IDX-14", "HF-IDX-10", "HF-IDX-09"]


def test_the_index_is_built_at_once_as_the_declaration_builds_each_entry():
    """writer.encode_entries: the bytes INDEX_ENTRY builds entry by entry, for names of 1 to 4-byte
    characters and fields at their wire ranges' ends (20,011 entries), and for no entry."""
    from hurray_decl.hurray.container.declarations import INDEX_ENTRY
    from hurray_decl.hurray.container.model import IndexEntry
    from hurray_decl.hurray.container.writer import encode_entries

    rng = np.random.default_rng(11)
    pieces = ["a", "\u00e9", "\u4e2d", "\U0001f600", "\x00"]
    entries = [IndexEntry(name="".join(rng.choice(pieces, int(rng.integers(1, 6)))) + str(i),
                          descriptor_offset=(1 << 64) - 1 - i, descriptor_length=(1 << 32) - 1 - i % 7,
                          data_offset=i * 4096, data_length=int(rng.integers(0, 1 << 62))) for i in range(20_011)]
    expected = b"".join(INDEX_ENTRY.build(e.to_wire()) for e in entries)
    assert encode_entries(entries) == expected
    assert encode_entries([]) == b""
