"""The wire walk without rows (the one ``validate``, ``decode`` and kind detection use) must judge
every input exactly as the walk with rows (the dump's): the same error, at the same offset, and the
same fit counts, on the bundled corpus and on its byte mutants, for every message kind."""

from __future__ import annotations

import random
import struct

import pytest

from hurray_decl.onnx_light.corpus import bundled
from hurray_decl.onnx_light.inputs import KINDS, MESSAGES
from hurray_decl.onnx_light.protowire import walk

FILES = sorted(p for p in bundled().iterdir() if p.is_file() and p.suffix != ".json")


def verdict(data: bytes, kind: str, rows: bool) -> tuple[object, ...]:
    result = walk(data, MESSAGES[kind].DESCRIPTOR, rows=rows)
    error = result.error
    return (None if error is None else (error.offset, error.reason)), result.known, result.unknown


def mutants(data: bytes, rng: random.Random, count: int = 40) -> list[bytes]:
    out = []
    for _ in range(count):
        i = rng.randrange(len(data))
        how = rng.randrange(3)
        if how == 0:
            out.append(data[:i] + bytes([rng.randrange(256)]) + data[i + 1:])
        elif how == 1:
            out.append(data[:i])
        else:
            out.append(data[:i] + bytes([0x80 | rng.randrange(128)]) * rng.randrange(1, 12) + data[i:])
    return out


def test_the_corpus_is_there():
    assert len(FILES) >= 100


@pytest.mark.parametrize("kind", KINDS)
def test_both_walks_judge_the_corpus_and_its_mutants_alike(kind):
    rng = random.Random(kind)
    errors = enums = 0
    for path in FILES:
        data = path.read_bytes()
        for sample in [data, *mutants(data, rng)] if data else [data]:
            fast = verdict(sample, kind, rows=False)
            assert fast == verdict(sample, kind, rows=True), (path.name, sample.hex())
            errors += fast[0] is not None
            enums += fast[2] > 0
    assert errors > 100 and enums > 10


@pytest.mark.parametrize("run, error", [
    (b"\x08\x01\x02", None),
    (b"\x08\xff", (3, "truncated varint")),
    (b"\x08" + b"\xff" * 9 + b"\x01", None),
    (b"\x08" + b"\xff" * 10 + b"\x01", (3, "varint longer than 10 bytes")),
])
def test_a_packed_varint_run_is_checked_element_by_element(run, error):
    """dims (field 1 of TensorProto) packed: the fast check refuses where the element loop does."""
    data = bytes([0x0A, len(run)]) + run
    got = verdict(data, "tensor", rows=False)
    assert got == verdict(data, "tensor", rows=True)
    assert got[0] == error


def _nest(depth: int) -> bytes:
    """Groups of field 3 nested ``depth`` deep, each closed."""
    return b"\x1b" * depth + b"\x1c" * depth


@pytest.mark.parametrize("data", [
    b"",
    b"\x10\x01",                              # data_type
    b"\x70\x05",                              # data_location 5: no DataLocation value (an unknown)
    b"\x70\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # data_location -1 (64-bit two's complement)
    b"\x90\x00\x01",                          # a key in two bytes (data_type, spelled long)
    b"\x10",                                  # a varint cut short
    b"\x10" + b"\xff" * 11,                   # a varint longer than 10 bytes
    b"\x0e\x00", b"\x0f\x00",                 # wire types 6 and 7
    b"\x00\x00", b"\xf8\xff\xff\xff\x0f\x00",  # field numbers 0 and 2^29
    b"\x25\x00\x00\x80", b"\x25\x00\x00\x80\x3f",  # float_data unpacked: cut short, whole
    b"\x51" + b"\x00" * 7,                    # double_data cut short
    b"\x22\x05" + b"\x00" * 5,                # float_data packed: 5 bytes
    b"\x22\x08" + b"\x00" * 8,                # float_data packed: two elements
    b"\x0a\x03\x01\x80\x01", b"\x0a\x02\x01\x80",  # dims packed: whole, then cut short
    b"\x42\x02\xc3\x28", b"\x42\x02hi",       # name: not UTF-8, then UTF-8
    b"\x4a\x05abc",                           # raw_data runs past the end
    b"\x6a\x02\x0a\x00",                      # external_data with an empty key
    b"\x6a\x02\x0a\x05",                      # a nested length past its message
    b"\x10\x01\x10\x02",                      # data_type twice
    b"\x13\x08\x01\x14",                      # a group of field 2 (data_type sent as a group)
    b"\x1b\x23\x08\x01\x24\x1c",              # groups nested, closed in order
    b"\x1b\x08\x01",                          # a group left open
    b"\x1b\x24",                              # closed by another field's end-group
    b"\x14",                                  # an end-group outside any group
    b"\xfa\x01\x00",                          # an unknown length-delimited field (31)
    b"\x2a\x01\x01\x2d\x00\x00\x00\x00",      # int32_data packed, then float-width (unknown)
    _nest(99), _nest(100), _nest(101),
])
def test_both_walks_judge_hand_made_wires_alike(data):
    """Each path of the table walk (``rows=False``): known and unknown keys, every wire type, enum
    values, packed runs, strings, groups and nesting, against the walk that makes rows."""
    for kind in KINDS:
        assert verdict(data, kind, rows=False) == verdict(data, kind, rows=True), (kind, data.hex())


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


@pytest.mark.parametrize("number, wire, elements", [
    (1, 0, [_varint(v) for v in (0, 1, 300, 2**63, 2**64 - 1)]),             # dims (int64)
    (5, 0, [_varint(v) for v in (5, 2**31, 2**64 - 1, 2**40, 2**64 - 2**31)]),  # int32_data, some no int32
    (11, 0, [_varint(v) for v in (0, 2**64 - 1)]),                         # uint64_data
    (4, 5, [struct.pack("<f", v) for v in (1.5, float("nan"), -float("inf"))]),   # float_data
    (10, 1, [struct.pack("<d", v) for v in (0.1, -0.0, 1e300)]),          # double_data
])
def test_a_packed_run_reads_as_its_elements_sent_one_by_one(number, wire, elements):
    """The rows and elements of a packed run (read at once) are those of the same values sent as
    one field each: offsets, fields, texts and values, keys and length aside."""
    run = b"".join(elements)
    packed = bytes([number << 3 | 2, len(run)]) + run
    unpacked = b"".join(bytes([number << 3 | wire]) + element for element in elements)

    def values(data: bytes, skip: int, per: int) -> tuple[list[tuple[object, ...]], list[str]]:
        result = walk(data, MESSAGES["tensor"].DESCRIPTOR)
        assert result.error is None and result.unknown == 0
        rows = [r for r in result.rows if not r.field.endswith((":key", ":length"))]
        leaves = [f for node in result.root.children for f in (node.children or [node])]
        shown = [(r.offset - skip - per * i, r.size, r.hex, r.field, r.value) for i, r in enumerate(rows)]
        return shown, [repr(f.value) for f in leaves]

    assert values(packed, 2, 0) == values(unpacked, 1, 1)
