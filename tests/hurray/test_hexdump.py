"""Annotated hex dumps of quantization payloads."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, strategies as st

from hurray_decl.hurray.dump import UNDECODED, hexdump, quantization_dump
from hurray_decl.hurray.strategies import quantization_payloads
from tests.helpers import dump_verdict
from tests.paths import HURRAY_SPEC

SPEC = HURRAY_SPEC / "per-channel-affine.txt"
WORKED_EXAMPLE = bytes.fromhex("0201000000000000010000000200000003000000")


def assert_rows_cover(data: bytes, rows: list[dict]) -> None:
    position = 0
    for row in rows:
        assert row["offset"] == position, f"gap or overlap at {position}: {row}"
        assert row["size"] > 0 and row["field"]
        assert bytes.fromhex(row["hex"]) == data[position:position + row["size"]]
        position += row["size"]
    assert position == len(data)


def spec_table() -> list[tuple[int, str, str, str]]:
    """(offset, hex, field, value) rows of the worked example table in per-channel-affine.txt."""
    text = SPEC.read_text(encoding="utf-8")
    block = text.split("Quantization descriptor bytes (20 total):", 1)[1].split("The quantization_length", 1)[0]
    rows = []
    for line in block.splitlines():
        match = re.match(r"^(\d+)\s+((?:[0-9a-f]{2} ?)+)\s+(\w+) = (\S+)", line)
        if match:
            rows.append((int(match[1]), match[2].strip().upper(), match[3], match[4]))
    return rows


def test_markdown_of_the_worked_example_matches_the_specification_table():
    markdown = hexdump(WORKED_EXAMPLE, kind="quantization", format="markdown")
    lines = [line for line in markdown.splitlines() if line.startswith("| ") and not line.startswith("| Offset")]
    ours = [tuple(c.strip() for c in line.strip("|").split("|")) for line in lines]
    expected = spec_table()
    assert len(expected) == 8 and len(ours) == 8
    for (offset, hexbytes, field, value), (o, h, f, v) in zip(expected, ours):
        assert (int(o), h, f.lstrip("_")) == (offset, hexbytes, field.lstrip("_"))
        # The spec prints 0x02, 1, 0x0000, 0, 1, 2, 0x03, 0x00: the same numbers as ours.
        ours_value = v.split()[0]
        if field == "_reserved":
            assert bytes.fromhex(v) == bytes(3)
        else:
            assert int(ours_value, 0) == int(value, 0)


@given(quantization_payloads())
def test_json_rows_cover_every_byte_once(data):
    dump = json.loads(hexdump(data, kind="quantization", format="json"))
    assert dump["error"] is None
    assert_rows_cover(data, dump["rows"])
    assert UNDECODED not in {r["field"] for r in dump["rows"]}


@given(st.binary(max_size=40), st.booleans())
def test_any_bytes_dump_completely(data, permissive):
    dump = quantization_dump(data, permissive=permissive).to_json()
    assert_rows_cover(data, dump["rows"])


@pytest.mark.parametrize("data, code, offset, field", [
    ("03010000000000000600000001000000ffffffff03000000", "HQ-PB-03", 8, "block_size"),
    ("020100000000000001000000ffffffff03000000", "HQ-PC-05", 12, "zero_point_buffer_index"),
    ("62010000", "HQ-HDR-09", 0, "scheme_tag"),
    ("0101000000000000000000000000000001", "HQ-PT-02", 4, "scale"),
])
def test_invalid_input_marks_the_failing_field(data, code, offset, field):
    raw = bytes.fromhex(data)
    dump = json.loads(hexdump(raw, kind="quantization", format="json"))
    assert dump["error"]["code"] == code and dump["error"]["offset"] == offset
    assert any(r["offset"] == offset and r["field"] == field for r in dump["rows"])
    assert_rows_cover(raw, dump["rows"])
    text = hexdump(raw, kind="quantization")
    assert f"<-- {code}" in text and dump_verdict(text).startswith(f"invalid: [{code}]")


def test_truncated_field_is_left_undecoded():
    rows = quantization_dump(WORKED_EXAMPLE[:11]).rows
    assert [r.field for r in rows][-1] == UNDECODED and rows[-1].offset == 8


def test_padding_is_labelled():
    rows = quantization_dump(WORKED_EXAMPLE + b"\x00\x07").rows
    assert rows[-1].field == "padding" and rows[-1].hex == "00 07"


def test_unknown_format_is_refused():
    with pytest.raises(ValueError):
        hexdump(WORKED_EXAMPLE, kind="quantization", format="xml")
