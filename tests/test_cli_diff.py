"""``hurray-decl diff A B`` through the command line: an edited byte is named by the field and
offset ``inspect`` gives it, identical inputs are the same (exit 0), inputs of two kinds are a
usage error (exit 2), an invalid input is compared with its verdict and rule code."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import hurray_decl as hd
from hurray_decl import cli
from hurray_decl.cli import diff

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "conformance" / "hurray"
EXAMPLES = ROOT / "hurray_decl" / "onnx_light" / "examples"

INPUTS = {
    "descriptor": VECTORS / "descriptors" / "quant_per_block_int4_128x128.bin",
    "container": VECTORS / "files" / "basic.hrry",
    "stream": VECTORS / "streams" / "v03-three-tensors.stream",
    "value": EXAMPLES / "valid_int4.pb",
    "model": EXAMPLES / "valid_catalogue.onnx",
    "tensor": EXAMPLES / "valid_tensor.pb",
    "quantization": Path("quantization.bin"),  # written by payload_file, for each test
}
"""One valid input of every kind diff reads, by its kind's name."""
OPTIONS = {"tensor": ("--kind", "tensor"), "quantization": ("--quantization",)}
"""What inspect and diff are told of a kind they do not detect: a bare payload, and a 23-byte
TensorProto (most of whose one-byte edits parse as another onnx-light kind)."""
PAYLOAD = bytes.fromhex("0201000000000000010000000200000003000000")
"""A per-channel affine quantization payload (as tests/test_cli.py decodes it)."""


@pytest.fixture(autouse=True)
def payload_file(tmp_path_factory, monkeypatch):
    path = tmp_path_factory.mktemp("payload") / "quantization.bin"
    path.write_bytes(PAYLOAD)
    monkeypatch.setitem(INPUTS, "quantization", path)

EDITED = {
    "descriptor": (4, 9, 30, 61, 80, 104),
    "container": (12, 30, 85, 125, 2000, 4100, 4140, 8300, 8390),
    "stream": (5, 40, 100, 150, 193),
    "value": (3, 40, 200, 400, 622),
    "model": (3, 300, 700, 1100, 1700),
    "tensor": (1, 6, 12, 22),
    "quantization": (0, 5, 9, 14, 19),
}
"""Bytes edited one at a time: in headers, descriptors, padding, tensor data, the trailer, the
payloads (whatever each edit breaks, the copy stays of the same kind)."""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def inspected(capsys, path: Path, kind: str = "") -> list[dict]:
    """The rows ``inspect --format json`` gives."""
    status, out, _ = run(capsys, "inspect", "--format", "json", *OPTIONS.get(kind, ()), str(path))
    assert status in (0, 1)
    rows: list[dict] = json.loads(out)["rows"]
    return rows


def holding(rows: list[dict], offset: int) -> dict:
    (row,) = [r for r in rows if r["offset"] <= offset < r["offset"] + r["size"]]
    return row


def edited(tmp_path: Path, source: Path, position: int, name: str = "") -> Path:
    data = bytearray(source.read_bytes())
    data[position] ^= 0x01
    path = tmp_path / (name or f"edited-{position}{source.suffix}")
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("kind", list(INPUTS))
def test_an_edited_byte_is_named_by_the_field_and_offset_inspect_gives(capsys, tmp_path, kind):
    source, options = INPUTS[kind], OPTIONS.get(kind, ())
    rows_a = inspected(capsys, source, kind)
    for position in EDITED[kind]:
        copy = edited(tmp_path, source, position)
        rows_b = inspected(capsys, copy, kind)
        status, out, err = run(capsys, "diff", "--format", "json", *options, str(source), str(copy))
        assert (status, err) == (1, ""), (position, err)
        document = json.loads(out)
        assert document["verdict"] == "different"
        assert document["a"]["kind"] == document["b"]["kind"] == kind
        first = document["first_difference"]
        assert first["byte"] == position
        assert first["a"] == holding(rows_a, position), position
        assert first["b"] == holding(rows_b, position), position
        row = holding(rows_a, position)
        named = [d for d in document["differences"] if d["a"] is not None
                 and (d["a"]["field"], d["a"]["offset"]) == (row["field"], row["offset"])]
        assert named, (position, row["field"])
        status, text, _ = run(capsys, "diff", *options, str(source), str(copy))
        assert status == 1
        assert f"first differing byte is byte {position}, in A's {row['field']} (at byte {row['offset']})" \
            in " ".join(line.strip() for line in text.splitlines())
        assert max(len(line) for line in text.splitlines()) <= 100


@pytest.mark.parametrize("kind", list(INPUTS))
def test_two_identical_files_are_the_same(capsys, tmp_path, kind):
    copy = tmp_path / f"copy{INPUTS[kind].suffix}"
    copy.write_bytes(INPUTS[kind].read_bytes())
    options = OPTIONS.get(kind, ())
    status, out, _ = run(capsys, "diff", *options, str(INPUTS[kind]), str(copy))
    assert status == 0
    rows = len(inspected(capsys, INPUTS[kind], kind))
    assert out.splitlines()[-1] == f"same: {copy.stat().st_size} bytes, {rows} rows alike"
    status, out, _ = run(capsys, "diff", "--format", "json", *options, str(INPUTS[kind]), str(copy))
    document = json.loads(out)
    assert (status, document["verdict"], document["first_difference"], document["differences"]) == \
        (0, "same", None, [])


def test_a_field_in_one_row_is_shown_with_both_values(capsys, tmp_path):
    """The text names the field, both offsets, both bytes and both values."""
    copy = edited(tmp_path, INPUTS["container"], 85)  # shape[0] of the first tensor: 2 -> 258
    status, out, _ = run(capsys, "diff", str(INPUTS["container"]), str(copy))
    assert status == 1
    lines = out.splitlines()
    at = lines.index("tensor[weights].shape[0] (bytes)")
    assert lines[at + 1:at + 4] == ["  A at byte 84 (8 bytes): 02 00 00 00 00 00 00 00 = 2",
                                    "  B at byte 84 (8 bytes): 02 01 00 00 00 00 00 00 = 258",
                                    "  first differing byte: A 85, B 85"]
    joined = " ".join(line.strip() for line in lines)
    assert f"B: {copy}: a .hrry container, 8391 bytes, 81 rows; invalid: [HE-21] file -> tensor 'weights'" in joined


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_tensor_data_is_compared_by_hash_and_first_differing_byte(capsys, tmp_path, monkeypatch, chunk):
    """A 100,473-element tensor (313 x 321) of odd shape: its buffer is one row, compared a chunk at a time
    (7 bytes: across chunk boundaries), shown by its SHA-256 and the first byte that differs."""
    monkeypatch.setattr(diff, "CHUNK", chunk)
    w = np.arange(313 * 321, dtype=np.float32).reshape(313, 321)
    hd.save(tmp_path / "a.hrry", {"w": w})
    rows = inspected(capsys, tmp_path / "a.hrry")
    (data,) = [r for r in rows if r["field"] == "tensor[w].buffer[0]"]
    assert data["size"] == w.nbytes
    position = data["offset"] + 4 * 54_321 + 2  # an element far inside
    copy = edited(tmp_path, tmp_path / "a.hrry", position, "b.hrry")
    status, out, _ = run(capsys, "diff", "--format", "json", str(tmp_path / "a.hrry"), str(copy))
    assert status == 1
    (item,) = json.loads(out)["differences"]
    assert (item["field"], item["change"], item["a"]["offset"]) == ("tensor[w].buffer[0]", "bytes", data["offset"])
    assert item["first_difference"] == {"a": position, "b": position}
    import hashlib

    assert item["a"]["sha256"] == hashlib.sha256(w.tobytes()).hexdigest()
    changed = copy.read_bytes()[data["offset"]:data["offset"] + w.nbytes]
    assert item["b"]["sha256"] == hashlib.sha256(changed).hexdigest()
    assert item["a"]["sha256"] != item["b"]["sha256"]
    status, out, _ = run(capsys, "diff", str(tmp_path / "a.hrry"), str(copy))
    assert f"  A at byte {data['offset']} ({w.nbytes} bytes): sha256 {item['a']['sha256'][:16]}" in out.splitlines()


def test_inputs_of_two_kinds_are_a_usage_error(capsys, tmp_path):
    status, out, err = run(capsys, "diff", str(INPUTS["container"]), str(INPUTS["stream"]))
    assert (status, out) == (2, "")
    assert err == (f"hurray-decl: error: argument B: {INPUTS['stream']} is a Hurray stream and "
                   f"{INPUTS['container']} is a .hrry container: diff compares two inputs of one kind\n")
    status, _, err = run(capsys, "diff", "--format", "json", str(INPUTS["value"]), str(INPUTS["model"]))
    assert status == 2 and "is an onnx-light model and" in err
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + bytes(16))
    status, _, err = run(capsys, "diff", str(gguf), str(gguf))
    assert status == 2 and err.startswith("hurray-decl: error: argument A: diff does not take a GGUF input")
    status, _, err = run(capsys, "diff", str(INPUTS["model"]), str(tmp_path / "missing.onnx"))
    assert status == 3 and err.startswith("hurray-decl: error: argument B: no such file")
    status, _, err = run(capsys, "diff", "-", "-")
    assert status == 2 and "standard input" in err


def test_a_copy_that_looks_like_another_kind_is_read_as_one_with_kind(capsys, tmp_path):
    """Byte 28 of the model edited: the copy parses as an onnx-light tensor (exit 2), unless
    --kind reads both as models."""
    copy = edited(tmp_path, INPUTS["model"], 28)
    assert run(capsys, "diff", str(INPUTS["model"]), str(copy))[0] == 2
    status, out, _ = run(capsys, "diff", "--kind", "model", "--format", "json", str(INPUTS["model"]), str(copy))
    document = json.loads(out)
    assert status == 1 and document["first_difference"]["byte"] == 28
    assert document["b"]["error"]["code"] == "OL-WIRE-01"


def test_an_invalid_input_is_compared_with_its_verdict(capsys):
    bad = VECTORS / "files" / "i07-crc-mismatch.hrry"
    status, out, err = run(capsys, "diff", str(bad), str(INPUTS["container"]))
    assert status == 1 and err == ""
    joined = " ".join(line.strip() for line in out.splitlines())
    assert "invalid: [HF-DATA-20] file -> trailer -> index_crc32c at byte 8438" in joined
    assert max(len(line) for line in out.splitlines()) <= 100
    status, out, _ = run(capsys, "diff", "--format", "json", str(bad), str(INPUTS["container"]))
    document = json.loads(out)
    assert document["a"]["error"]["code"] == "HF-DATA-20" and document["a"]["error"]["offset"] == 8438
    assert document["b"]["verdict"] == "valid" and document["b"]["error"] is None
    status, out, _ = run(capsys, "diff", str(bad), str(bad))  # the same bytes: same, the verdict still shown
    assert status == 0 and "invalid: [HF-DATA-20]" in out and out.splitlines()[-1].startswith("same: 8450 bytes")


def test_a_dump_that_stops_is_one_line_per_side(capsys, tmp_path):
    """The copy refused at byte 30 has no rows for the value's fields after it: one line for them."""
    copy = edited(tmp_path, INPUTS["value"], 40)
    status, out, _ = run(capsys, "diff", str(INPUTS["value"]), str(copy))
    assert status == 1
    assert [line for line in out.splitlines() if line.startswith("only in A: ")] == [
        "only in A: 264 fields at bytes 57-622, from struct_type.structure.field[2]:key to name"]
    status, out, _ = run(capsys, "diff", "--format", "json", str(INPUTS["value"]), str(copy))
    assert sum(d["change"] == "only in A" for d in json.loads(out)["differences"]) == 264


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=st.binary(max_size=96), b=st.binary(max_size=96))
@example(a=b"HRRY" + bytes(12), b=b"HRRY" + bytes(13))
@example(a=b"HRRYFILE", b=b"HRRYFILE\x01")
@example(a=b"\x0a\x00", b=b"\x0a\x01")
def test_arbitrary_bytes_give_a_verdict_never_a_crash(capsys, tmp_path, a, b):
    (tmp_path / "a.bin").write_bytes(a)
    (tmp_path / "b.bin").write_bytes(b)
    status, out, err = run(capsys, "diff", "--format", "json", str(tmp_path / "a.bin"), str(tmp_path / "b.bin"))
    assert status in (0, 1, 2), err
    if status == 2:
        assert out == "" and err.startswith("hurray-decl: error: argument ") and err.count("\n") == 1
    else:
        document = json.loads(out)
        assert (status == 0) == (a == b) == (document["first_difference"] is None)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(sorted(INPUTS)), where=st.floats(0, 1, exclude_max=True), flip=st.integers(1, 255))
def test_any_edited_byte_is_the_first_difference(capsys, tmp_path, kind, where, flip):
    """Any byte of any input edited: exit 1 naming that byte and the row of A holding it, or
    exit 2 when the copy is of another kind."""
    data = bytearray(INPUTS[kind].read_bytes())
    position = int(where * len(data))
    data[position] ^= flip
    copy = tmp_path / f"copy{INPUTS[kind].suffix}"
    copy.write_bytes(data)
    status, out, err = run(capsys, "diff", "--format", "json", *OPTIONS.get(kind, ()), str(INPUTS[kind]), str(copy))
    if status == 2:
        assert "diff compares two inputs of one kind" in err
        return
    assert status == 1, err
    first = json.loads(out)["first_difference"]
    assert first["byte"] == position
    assert first["a"]["offset"] <= position < first["a"]["offset"] + first["a"]["size"]
