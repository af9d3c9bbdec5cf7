"""``hurray-decl ls``: one row per tensor for every kind it reads, text that fits 100 columns, JSON,
and the refusals (codes, exit statuses) of inputs it cannot list."""

from __future__ import annotations

import json
import subprocess
import sys

import gguf
import numpy as np
import pytest

from hurray_decl.cli.ls import COLUMNS
from hurray_decl.hurray.container import read_container
from tests.paths import CONFORMANCE, REPO as ROOT

ONNX_EXAMPLES = ROOT / "hurray_decl" / "onnx_light" / "examples"

Q = gguf.GGMLQuantizationType


def ls(*argv: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hurray_decl", "ls", *argv], capture_output=True, text=True,
                          cwd=cwd, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
                          check=False)


def listed(path) -> dict:
    result = ls(str(path), "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ls")
    rng = np.random.default_rng(3)
    writer = gguf.GGUFWriter(str(folder / "model.gguf"), "test")
    writer.add_tensor("blk.0.attn_output.weight.with_a_name_longer_than_its_column",
                      gguf.quants.quantize(rng.standard_normal((4, 64)).astype(np.float32), Q.Q4_0), raw_dtype=Q.Q4_0)
    writer.add_tensor("norm", rng.standard_normal(96).astype(np.float32))
    writer.add_tensor("k", rng.integers(0, 256, (3, 210), dtype=np.uint8), raw_dtype=Q.Q6_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    for target in ("model.hrry", "model.onnx"):
        done = subprocess.run([sys.executable, "-m", "hurray_decl", "convert", "model.gguf", "-o", target, "--partial",
                               "--to", "onnx-light" if target.endswith("onnx") else "hurray"], cwd=folder,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                              check=False)
        assert done.returncode == 0, done.stderr
    return folder


def test_gguf_rows_are_gguf_dumps(files):
    doc = listed(files / "model.gguf")
    reader = gguf.GGUFReader(str(files / "model.gguf"))
    assert doc["kind"] == "gguf"
    assert [(t["name"], t["type"], t["shape"], t["bytes"]) for t in doc["tensors"]] == [
        (t.name, t.tensor_type.name, list(reversed(t.shape.tolist())), t.n_bytes) for t in reader.tensors]
    assert [t["scheme"] for t in doc["tensors"]] == ["ggml block 32", "-", "ggml block 256"]
    assert doc["bytes"] == sum(t.n_bytes for t in reader.tensors)


def test_container_rows(files):
    doc = listed(files / "model.hrry")
    container = read_container(files / "model.hrry")
    assert doc["kind"] == "container"
    rows = {t["name"]: t for t in doc["tensors"]}
    assert set(rows) == {"blk.0.attn_output.weight.with_a_name_longer_than_its_column", "norm"}  # Q6_K: not Hurray
    q = rows["blk.0.attn_output.weight.with_a_name_longer_than_its_column"]
    assert (q["type"], q["shape"], q["scheme"], q["layout"]) == ("int4", [4, 64], "per_block_affine", "row-major")
    assert rows["norm"] == {"name": "norm", "type": "float32", "shape": [96], "scheme": "-", "layout": "row-major",
                            "bytes": 96 * 4}
    assert q["bytes"] == sum(b.byte_size for b in container.tensor(q["name"]).descriptor.buffers)


def test_onnx_light_model_rows(files):
    doc = listed(files / "model.onnx")
    assert doc["kind"] == "model"
    rows = {t["name"]: (t["type"], t["shape"], t["scheme"]) for t in doc["tensors"]}
    assert rows == {"blk.0.attn_output.weight.with_a_name_longer_than_its_column": ("float", [4, 64],
                                                                                     "onnx-light int4"),
                    "k": ("float", [3, 256], "onnx-light q6_k"), "norm": ("float", [96], "-")}


def test_stream_and_descriptor_rows():
    stream = listed(CONFORMANCE / "streams" / "v11-composite-partition.stream")
    assert stream["kind"] == "stream"
    assert [(t["name"], t["layout"], t["shape"]) for t in stream["tensors"]] == [
        ("frame[0]", "composite head", [8, 8]), ("frame[0].member[0]", "row-major", [8, 4]),
        ("frame[0].member[1]", "row-major", [8, 4])]
    three = listed(CONFORMANCE / "streams" / "v03-three-tensors.stream")
    assert [t["name"] for t in three["tensors"]] == ["frame[0]", "frame[1]", "frame[2]"]
    one = listed(CONFORMANCE / "descriptors" / "quant_per_block_int4_128x128.bin")
    assert one["kind"] == "descriptor" and one["tensors"] == [{
        "name": "quant_per_block_int4_128x128", "type": "int4", "shape": [128, 128], "scheme": "per_block_affine",
        "layout": "row-major", "bytes": 8448}]


@pytest.mark.parametrize("name", ["model.gguf", "model.hrry", "model.onnx"])
def test_text_fits_100_columns_and_wraps_long_names_whole(files, name):
    """A name longer than its column is printed whole on a line of its own (pasteable into
    --name), the row's other cells on the next line, in their columns; nothing is cut."""
    result = ls(str(files / name))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == [n.upper() for n, _ in COLUMNS]
    assert max(len(line) for line in lines) <= 100
    assert not any("\u2026" in line for line in lines)
    long = "blk.0.attn_output.weight.with_a_name_longer_than_its_column"
    at = lines.index(long)
    assert lines[at + 1][:COLUMNS[0][1]].strip() == "" and lines[at + 1].split()[-1].isdigit()
    assert lines[at + 1].index(lines[at + 1].split()[0]) == lines[0].index("TYPE")
    names = {row["name"] for row in listed(files / name)["tensors"]}
    assert long in names and lines[-1].startswith(f"{len(names)} tensors, ")


@pytest.mark.parametrize("make, status, words", [
    (lambda d: (d / "empty.gguf").write_bytes(b""), 2, "empty input"),
    (lambda d: (d / "notes.txt").write_text("not a model\n"), 1, "invalid: [HT-HDR-04]"),  # no kind: as validate
    (lambda d: (d / "cut.gguf").write_bytes((d.parent / "model.gguf").read_bytes()[:200]), 1, "invalid: [HF-"),
    (lambda d: (d / "big.gguf").write_bytes(b"GGUF" + (3).to_bytes(4, "little") + (1).to_bytes(8, "little")
                                            + (2**63).to_bytes(8, "little") + bytes(200)), 1, "invalid: [HF-META-07]"),
    (lambda d: (d / "magic.gguf").write_bytes(b"GGUE" + (d.parent / "model.gguf").read_bytes()[4:]), 1,
     "invalid: [HF-HDR-03] gguf -> magic at byte 0"),
    (lambda d: (d / "short.gguf").write_bytes(b"GGU"), 1, "invalid: [HF-HDR-03]"),
    (lambda d: (d / "magic.hrry").write_bytes(b"HRRYFILF" + bytes(100)), 1, "invalid: [HF-HDR-03]"),
    (lambda d: (d / "cut.onnx").write_bytes((d.parent / "model.onnx").read_bytes()[:300]), 1, "invalid: [OL-WIRE-01]"),
    (lambda d: (d / "value.pb").write_bytes((ONNX_EXAMPLES / "valid_int4.pb").read_bytes()), 2,
     "ls does not take an onnx-light value"),
    (lambda d: (d / "folder.gguf").mkdir(), 3, "is a folder"),
    (lambda d: None, 3, "no such file"),
])
def test_what_cannot_be_listed(files, tmp_path, make, status, words):
    folder = files / f"bad{abs(hash(words)) % 10**6}"
    folder.mkdir(exist_ok=True)
    make(folder)
    created = sorted(folder.iterdir())
    target = created[0] if created else folder / "missing.gguf"
    result = ls(str(target))
    assert result.returncode == status, result.stderr
    assert words in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not result.stdout
    assert sorted(folder.iterdir()) == created  # nothing written


@pytest.mark.parametrize("name, data", [
    ("notes.txt", b"not a model\n"),
    ("magic.hrry", b"HRRYFILF" + bytes(100)),
    ("cut.stream", None),
    ("zeros.onnx", bytes(64)),
])
def test_refusals_are_the_verdict_lines_of_validate(tmp_path, name, data):
    """One input layer and one reader per kind: ``ls`` refuses a damaged input with the line that
    ``validate`` prints for it (the kind decided alike: magic, structure, then the suffix)."""
    path = tmp_path / name
    path.write_bytes(data if data is not None else
                     (CONFORMANCE / "streams" / "v03-three-tensors.stream").read_bytes()[:-3])
    listed_ = ls(str(path))
    validated = subprocess.run([sys.executable, "-m", "hurray_decl", "validate", str(path)], capture_output=True,
                               text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
                               check=False)
    assert listed_.returncode == validated.returncode == 1, (listed_.stderr, validated.stdout)
    line = validated.stdout.strip().splitlines()[-1]
    assert line.startswith("invalid: [") and listed_.stderr.strip() == f"hurray-decl: {line}"


def test_standard_input_and_hex_are_listed_as_files_are(files):
    """``ls -`` and ``ls HEX`` read through the same input layer as a file argument."""
    data = (files / "model.gguf").read_bytes()
    piped = subprocess.run([sys.executable, "-m", "hurray_decl", "ls", "-", "--format", "json"], input=data,
                           capture_output=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=False)
    assert piped.returncode == 0, piped.stderr
    by_file = listed(files / "model.gguf")
    assert json.loads(piped.stdout)["tensors"] == by_file["tensors"] and json.loads(piped.stdout)["kind"] == "gguf"
    descriptor = CONFORMANCE / "descriptors" / "quant_per_block_int4_128x128.bin"
    spelled = ls(descriptor.read_bytes().hex(), "--format", "json")
    assert spelled.returncode == 0, spelled.stderr
    assert [t["bytes"] for t in json.loads(spelled.stdout)["tensors"]] == [8448]
    stream = CONFORMANCE / "streams" / "v03-three-tensors.stream"
    piped = subprocess.run([sys.executable, "-m", "hurray_decl", "ls", "-", "--format", "json"],
                           input=stream.read_bytes(), capture_output=True,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, check=False)
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["tensors"] == listed(stream)["tensors"]
