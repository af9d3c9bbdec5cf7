"""Dumps that stream and fit 100 columns: every text line of the dump of every ``.hrry`` vector,
stream vector and bundled example (Hurray and onnx-light) fits the width; rows are produced
and printed one at a time (the first row of a container arrives before its last tensor is
checked); the streamed marker and JSON are the ones of the whole dump; values are typed and
bounded whatever the field's size."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from hurray_decl.dump import render as render_module
from hurray_decl.dump.render import chunks, json_schema, render, write
from hurray_decl.dump.rows import HEX_SHOWN, TEXT_SHOWN, Dump, Row, RowStream, failing_row, marked
from hurray_decl.dump.table import WIDTH
from hurray_decl.errors import RuleViolation
from hurray_decl.hurray import dump as hurray_dump
from hurray_decl.hurray.container.dump import container_dump, container_stream
from hurray_decl.hurray.container.writer import write_container
from hurray_decl.hurray.examples import bundled as hurray_bundled, examples as hurray_examples
from hurray_decl.hurray.stream.dump import stream_dump
from hurray_decl.hurray.tensor import BufferHandle, TensorDescriptor
from hurray_decl.onnx_light import dump as onnx_light_dump
from hurray_decl.onnx_light.corpus import bundled as onnx_light_bundled, examples as onnx_light_examples
from tests.helpers import dump_verdict
from tests.paths import FILES, STREAMS

CONTAINERS = sorted(FILES.glob("*.hrry"))
STREAM_FILES = sorted(STREAMS.glob("*.stream"))
HURRAY_EXAMPLES = sorted(p for p in hurray_bundled().rglob("*.bin"))
ONNX_LIGHT_EXAMPLES = sorted(p for p in onnx_light_bundled().rglob("*") if p.suffix in (".pb", ".onnx"))


def table_lines(text: str) -> list[str]:
    """The lines of a text dump before its verdict (the lines after the last blank one)."""
    lines = text.split("\n")
    start = len(lines) - 1 - lines[::-1].index("")
    assert dump_verdict(text).startswith(("valid", "invalid: ["))
    assert all(line.startswith("  ") for line in lines[start + 2:])  # the verdict's continuation lines
    return lines[:start]


def assert_fits(text: str, name: str) -> None:
    """Every line of the dump within WIDTH columns, the verdict's too."""
    wide = [line for line in text.split("\n") if len(line) > WIDTH]
    table_lines(text)
    assert not wide, f"{name}: {len(wide)} lines wider than {WIDTH}: {wide[:2]}"


def test_the_corpora_are_at_hand():
    """Every file each manifest lists is dumped below."""
    assert len(CONTAINERS) == len(json.loads((FILES / "manifest.json").read_text())["vectors"])
    assert len(STREAM_FILES) == len(json.loads((STREAMS / "manifest.json").read_text())["vectors"])
    assert len(HURRAY_EXAMPLES) == len(hurray_examples()) and len(ONNX_LIGHT_EXAMPLES) == len(onnx_light_examples())


@pytest.mark.parametrize("path", CONTAINERS, ids=[p.name for p in CONTAINERS])
def test_every_container_vector_fits_100_columns(path: Path):
    assert_fits(render(container_stream(path.read_bytes()), "text"), path.name)


@pytest.mark.parametrize("path", STREAM_FILES, ids=[p.name for p in STREAM_FILES])
def test_every_stream_vector_fits_100_columns(path: Path):
    assert_fits(render(stream_dump(io.BytesIO(path.read_bytes())), "text"), path.name)


def test_every_bundled_example_fits_100_columns():
    for path in HURRAY_EXAMPLES:
        assert_fits(hurray_dump.hexdump(path.read_bytes()), path.name)
    for path in ONNX_LIGHT_EXAMPLES:
        assert_fits(onnx_light_dump.hexdump(path.read_bytes()), path.name)


@pytest.mark.parametrize("path", CONTAINERS, ids=[p.name for p in CONTAINERS])
def test_streamed_marker_and_json_are_the_whole_dumps(path: Path):
    data = path.read_bytes()
    whole = container_dump(data)
    picked = [i for i, (_, failing) in enumerate(marked(whole)) if failing]
    expected = failing_row(whole.rows, whole.error.offset if whole.error is not None else None)
    assert picked == ([] if expected is None else [expected])
    document = render(container_stream(data), "json")
    assert json.loads(document) == whole.to_json()
    assert document == json.dumps(whole.to_json(), indent=2)  # the same text, row by row
    jsonschema.validate(json.loads(document), json_schema())
    if whole.error is not None:
        assert f"<-- {whole.error.code}" in render(container_stream(data), "text")


def test_marking_of_hand_made_rows_matches_failing_row():
    rows = [Row(0, 4, "", "a", ""), Row(4, 4, "", "(undecoded)", ""), Row(8, 2, "", "b", "")]
    for offset in range(0, 12):
        for cut in range(1, 4):
            part = rows[:cut]
            dump = Dump(part, RuleViolation("HT-HDR-12", "made up", offset=offset))
            got = [i for i, (_, failing) in enumerate(marked(dump)) if failing]
            assert got == [failing_row(part, offset)], (offset, cut)


def quantized_file(count: int, bad_padding_in_last: bool = False) -> bytes:
    d = TensorDescriptor(type_tag=0x10, shape=(64,), buffers=(BufferHandle(byte_size=64),))
    data = bytearray(write_container([(f"t{i}", d, [bytes(range(64))]) for i in range(count)]))
    if bad_padding_in_last:
        last = bytes(data).rindex(b"HRRY", 0, len(data) - 4096 - 40)  # the last descriptor's magic
        data[last + 100] = 0xAA  # in the padding between that descriptor and its buffer
    return bytes(data)


def test_the_first_rows_come_before_the_last_tensor_is_checked():
    data = quantized_file(40, bad_padding_in_last=True)
    dump = container_stream(data)
    pieces = chunks(dump, "text")
    first = [next(pieces) for _ in range(3)]
    assert first[2].lstrip("\n").startswith("0 ") and "header.magic" in first[2]
    assert dump.error is None  # the fault in the last tensor is not yet known: it is not yet read
    rest = "".join(pieces)
    assert dump.error is not None and dump.error.code == "HF-DATA-11"
    assert "<-- HF-DATA-11" in rest
    assert dump_verdict(rest).startswith("invalid: [HF-DATA-11]")


def test_write_prints_each_row_before_the_next_is_made(monkeypatch):
    made: list[int] = []

    def produce(_stream: RowStream):
        for i in range(200):
            made.append(i)
            yield Row(i, 1, "00", f"f{i}", str(i))

    seen: list[tuple[int, int]] = []

    class Out(io.StringIO):
        def flush(self) -> None:
            seen.append((self.getvalue().count("\n"), len(made)))

    out = Out()
    monkeypatch.setattr(render_module, "FLUSH_EVERY", 3600.0)
    write(RowStream(produce), out, "text")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 + 200 + 2 and lines[-1] == "valid"
    # Each early flush has the rows printed so far, made at most two ahead (one held back).
    early = [(printed, produced) for printed, produced in seen[:render_module.FIRST_LINES]]
    assert all(produced <= max(0, printed - 2) + 2 for printed, produced in early), early


def test_a_16_mib_kv_string_gives_bounded_rows_and_a_typed_value():
    big = "é" + "x" * (16 << 20)
    data = write_container([], {"n": 7, "flag": True, "f": 0.5, "big": big, "list": [1, 2, 3]})
    rows = container_dump(data).rows
    assert max(len(r.hex) for r in rows) <= 3 * HEX_SHOWN
    assert max(len(r.value) for r in rows) <= TEXT_SHOWN + 40
    text = next(r for r in rows if r.field == "kv[3].value.bytes")
    assert text.data == big[:TEXT_SHOWN] and text.elided == len(big) - TEXT_SHOWN
    assert f"(+{len(big) - TEXT_SHOWN} chars)" in text.value
    by_field = {r.field: r for r in rows}
    assert by_field["kv[0].value"].data == 7 and by_field["kv[1].value"].data is True
    assert by_field["kv[2].value"].data == 0.5 and by_field["kv[0].value_tag"].data == 2
    assert [by_field[f"kv[4].value.items[{i}]"].data for i in range(3)] == [1, 2, 3]
    rendered = render(container_stream(data), "text")
    assert len(rendered) < 40_000
    assert_fits(rendered, "16 MiB string")
    cut = [int(n) for n in re.findall(r"…\(\+(\d+)\)", rendered)]  # the text cell's count: all it leaves out
    assert len(cut) == 1 and len(big) - TEXT_SHOWN < cut[0] < len(big)
    document = json.loads(render(container_stream(data), "json"))
    jsonschema.validate(document, json_schema())
    assert len(json.dumps(document)) < 60_000


def test_a_large_kv_array_is_one_summary_row_with_its_first_values():
    values = [bool(i % 3) for i in range(100_003)]
    data = write_container([], {"flags": values, "small": [1.5, 2.5]})
    rows = container_dump(data).rows
    items = [r for r in rows if r.field.startswith("kv[0].value.items")]
    assert len(items) == 1
    (summary,) = items
    assert summary.size == len(values) and summary.data == values[:16] and summary.elided == len(values) - 16
    assert summary.value.startswith("100003 × bool: [false, true, true,")
    assert [r.data for r in rows if r.field.startswith("kv[1].value.items")] == [1.5, 2.5]
    position = 0
    for row in rows:  # the rows still tile the file
        assert row.offset == position
        position += row.size
    assert position == len(data)


def test_descriptor_values_are_typed_in_json():
    data = next(p for p in HURRAY_EXAMPLES if "per_block" in p.name).read_bytes()
    document = json.loads(hurray_dump.hexdump(data, format="json"))
    jsonschema.validate(document, json_schema())
    by_field = {r["field"]: r for r in document["rows"]}
    assert isinstance(by_field["rank"]["value"], int) and by_field["rank"]["text"] == str(by_field["rank"]["value"])
    assert by_field["type_tag"]["value"] == int(by_field["type_tag"]["hex"], 16)
    assert by_field["magic"]["value"] is None  # bytes: the hex shows them
    shapes = [r for r in document["rows"] if r["field"].startswith("shape[")]
    assert shapes and all(isinstance(r["value"], int) for r in shapes)
    floats = [r for r in document["rows"] if isinstance(r["value"], float)]
    assert all(np.isfinite(r["value"]) for r in floats)


def test_streamed_marker_is_failing_row_for_every_kind():
    """Streams, descriptors and onnx-light values too: the marker that holds one row back picks
    the row that :func:`failing_row` picks over the whole list."""
    dumps = [stream_dump(io.BytesIO(p.read_bytes())) for p in STREAM_FILES]
    dumps += [hurray_dump.dump(p.read_bytes()) for p in HURRAY_EXAMPLES]
    dumps += [onnx_light_dump.dump(p.read_bytes()) for p in ONNX_LIGHT_EXAMPLES]
    invalid = 0
    for dump in dumps:
        expected = failing_row(dump.rows, dump.error.offset if dump.error is not None else None)
        assert [i for i, (_, failing) in enumerate(marked(dump)) if failing] == ([] if expected is None else [expected])
        invalid += dump.error is not None
    assert invalid > 50
