"""Hex dumps of containers: every byte of each file covered exactly once, the worked example of
FILE-FORMAT.md § 12 reproduced row for row, the JSON Schema satisfied, failures marked."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from hurray_decl.dump.render import json_schema
from hurray_decl.dump.rows import HEX_SHOWN
from hurray_decl.hurray import dump as hexdump
from hurray_decl.hurray.container.dump import container_dump
from hurray_decl.hurray.container.strategies import invalid_containers, valid_containers
from hurray_decl.hurray.container.writer import write_container
from hurray_decl.hurray.tensor import BufferHandle, TensorDescriptor
from tests.helpers import dump_verdict
from tests.paths import FILES, HURRAY_SPEC

VECTORS = json.loads((FILES / "manifest.json").read_text())["vectors"]


def assert_covers(data: bytes, rows: list[dict]) -> None:
    """Rows tile the file in order; a row's hex is its bytes, the first 16 of a summary row, or
    the first HEX_SHOWN of a longer field."""
    position = 0
    for row in rows:
        assert row["offset"] == position, f"gap or overlap at {position}: {row}"
        assert row["size"] > 0 and row["field"]
        shown = bytes.fromhex(row["hex"])
        if len(shown) < row["size"]:
            assert (len(shown) == 16 and "first 16 shown" in row["text"]) or len(shown) == HEX_SHOWN, row
        assert shown == data[position:position + len(shown)]
        position += row["size"]
    assert position == len(data)


@pytest.mark.parametrize("entry", VECTORS, ids=[v["file"] for v in VECTORS])
def test_every_byte_of_each_vector_exactly_once(entry):
    data = (FILES / entry["file"]).read_bytes()
    dump = container_dump(data)
    document = dump.to_json()
    jsonschema.validate(document, json_schema())
    assert_covers(data, document["rows"])
    if entry["expect"] == "valid":
        assert dump.error is None
        assert hexdump.UNDECODED not in {r["field"] for r in document["rows"]}
    else:
        assert dump.error is not None and dump.error.code == entry["rule"]
        text = hexdump.render(dump, "text")
        assert dump_verdict(text).startswith(f"invalid: [{entry['rule']}]")


def _worked_example() -> list[tuple[int, int, str]]:
    """(offset, length, field) of every row of the § 12 table of FILE-FORMAT.md."""
    text = (HURRAY_SPEC / "FILE-FORMAT.md").read_text(encoding="utf-8")
    section = text.split("## 12. Worked example", 1)[1].split("## 13.", 1)[0]
    rows = []
    for line in section.splitlines():
        m = re.match(r"\| `([0-9A-F]{4})` \| (\d+) \| (\d+) \| [^|]* \| ([^|]+) \|", line)
        if m:
            assert int(m.group(1), 16) == int(m.group(2))
            rows.append((int(m.group(2)), int(m.group(3)), m.group(4).strip()))
    return rows


def test_basic_hrry_matches_the_worked_example_row_for_row():
    data = (FILES / "basic.hrry").read_bytes()
    ours = container_dump(data).rows
    spec = _worked_example()
    assert len(spec) == 82
    assert [(r.offset, r.size) for r in ours] == [(o, n) for o, n, _ in spec]
    for row, (_, _, field) in zip(ours, spec):
        name = field.split("·")[-1].strip().replace("buffer[0].", "").lstrip("_")
        if "padding" in field:
            assert row.field == "padding", (row, field)
        elif "buffer 0" in field:
            assert row.field.endswith(".buffer[0]")
        elif field.startswith("KV[0] · string"):
            assert row.field in ("kv[0].value.length", "kv[0].value.bytes")
        elif field == "KV[1] · value":
            assert row.field == "kv[1].value"
        else:
            assert row.field.split(".")[-1].lstrip("_") == name, (row, field)
    by_field = {r.field: r.value for r in ours}
    assert by_field["header.file_flags"] == "0x00000004 (HAS_INDEX_CRC32C)"
    assert by_field["kv[0].value.bytes"] == "'hurray-conformance'"
    assert by_field["trailer.index_crc32c"] == "0x51349F72"
    assert by_field["index[1].name"] == "'bias'"
    assert by_field["tensor[bias].type_tag"] == "0x10 (int8)"


def test_a_big_buffer_is_one_summary_row():
    size = 1 << 20
    d = TensorDescriptor(type_tag=0x11, shape=(size,), buffers=(BufferHandle(byte_size=size),))
    data = write_container([("big", d, [bytes(range(256)) * (size // 256)])])
    rows = container_dump(data).to_json()["rows"]
    assert_covers(data, rows)
    buffer_rows = [r for r in rows if r["field"] == "tensor[big].buffer[0]"]
    assert len(buffer_rows) == 1 and buffer_rows[0]["size"] == size
    assert buffer_rows[0]["text"] == f"{size} bytes, first 16 shown" and buffer_rows[0]["value"] is None
    assert len(rows) < 60


@settings(max_examples=30)
@given(data=valid_containers())
def test_generated_containers_dump_completely(data):
    dump = container_dump(data)
    assert dump.error is None
    assert_covers(data, dump.to_json()["rows"])


@settings(max_examples=60)
@given(mutant=invalid_containers())
def test_mutants_dump_completely_and_name_their_rule(mutant):
    data, _, code = mutant
    dump = container_dump(data)
    assert dump.error is not None and dump.error.code == code
    assert_covers(data, dump.to_json()["rows"])
    text = hexdump.render(dump, "markdown")
    assert f"invalid: [{code}]" in text


@settings(max_examples=150)
@given(data=st.binary(max_size=300).map(lambda b: b"HRRYFILE" + b) | st.binary(max_size=40))
def test_arbitrary_bytes_dump_completely(data):
    dump = container_dump(data)
    assert dump.error is not None
    assert_covers(data, dump.to_json()["rows"])


def test_a_trailer_fault_still_names_the_header_and_trailer():
    data = (FILES / "i07-crc-mismatch.hrry").read_bytes()
    rows = container_dump(data).rows
    fields = [r.field for r in rows]
    assert fields[:2] == ["header.magic", "header.container_version_major"]
    assert "trailer.index_offset" in fields and "trailer.kv_length" in fields
