"""``audit`` of the folders ``convert -o DIR`` writes (its manifest read, each descriptor checked
with its buffer files), and ``audit --format html`` over everything the text audit covers: the
bundled Hurray corpus and the bundled onnx-light corpus, a page per file."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import numpy as np
import pytest

from hurray_decl.cli import main
from hurray_decl.hurray.examples import bundled as hurray_bundled
from hurray_decl.onnx_light.corpus import bundled as onnx_light_bundled

Q = gguf.GGMLQuantizationType


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> Path:
    """A folder written by ``convert -o DIR`` from a .gguf that gguf's GGUFWriter wrote."""
    folder = tmp_path_factory.mktemp("convert")
    rng = np.random.default_rng(5)
    path = folder / "model.gguf"
    writer = gguf.GGUFWriter(str(path), "test")
    writer.add_tensor("w.q8", gguf.quants.quantize(rng.standard_normal((33, 96)).astype(np.float32), Q.Q8_0),
                      raw_dtype=Q.Q8_0)
    writer.add_tensor("w.q4", gguf.quants.quantize(rng.standard_normal((7, 64)).astype(np.float32), Q.Q4_0),
                      raw_dtype=Q.Q4_0)
    writer.add_tensor("norm", rng.standard_normal(17).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert main(["convert", str(path), "-o", str(folder / "out")]) == 0
    return folder / "out"


def audit_json(folder: Path, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    status = main(["audit", str(folder), "--format", "json"])
    return status, json.loads(capsys.readouterr().out)


def test_audit_reads_the_folder_convert_writes(converted, capsys):
    manifest = json.loads((converted / "manifest.json").read_text())["tensors"]
    status, report = audit_json(converted, capsys)
    assert status == 0, report
    files = {e["file"]: e for e in report["descriptors"]}
    assert set(files) == {t["descriptor"] for t in manifest}  # buffers are checked with them, not as descriptors
    assert all(e["verdict"] == "valid" and e["agrees"] for e in files.values())
    assert report["summary"]["disagreements"] == 0 and report["manifest"] is True


def test_a_damaged_buffer_or_a_missing_one_disagrees(converted, tmp_path, capsys):
    copy = tmp_path / "out"
    copy.mkdir()
    for path in converted.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    manifest = json.loads((copy / "manifest.json").read_text())["tensors"]
    q8 = next(t for t in manifest if t["name"] == "w.q8")
    scales = copy / q8["buffers"][1]
    scales.write_bytes(b"\x00\x7e" + scales.read_bytes()[2:])  # a float16 NaN scale
    norm = next(t for t in manifest if t["name"] == "norm")
    for name in norm["buffers"]:
        (copy / name).unlink()
    status, report = audit_json(copy, capsys)
    files = {e["file"]: e for e in report["descriptors"]}
    assert status == 1
    assert files[q8["descriptor"]]["verdict"] == "invalid" and files[q8["descriptor"]]["agrees"] is False
    assert files[q8["descriptor"]]["code"].startswith("H")
    missing = files[norm["descriptor"]]
    assert missing["verdict"] == "missing" and norm["buffers"][0] in missing["message"]


def test_a_bad_tensors_manifest_is_a_file_error(tmp_path, capsys):
    (tmp_path / "manifest.json").write_text(json.dumps({"tensors": [{"name": "x"}]}))
    assert main(["audit", str(tmp_path)]) == 3
    assert "tensors[0]" in capsys.readouterr().err


def test_html_audit_covers_both_bundled_corpora(tmp_path, capsys):
    out = tmp_path / "pages"
    status = main(["audit", "--format", "html", "-o", str(out)])
    assert status == 0, capsys.readouterr()
    hurray_files = sorted(p.name for p in hurray_bundled().iterdir() if p.suffix == ".bin")
    onnx_light_files = sorted(p.name for p in onnx_light_bundled().iterdir() if p.suffix in (".pb", ".onnx"))
    assert len(hurray_files) == 35 and len(onnx_light_files) == 102
    index = (out / "index.html").read_text(encoding="utf-8")
    for name in hurray_files + onnx_light_files:
        assert (out / f"{name}.html").is_file() or (out / "onnx-light" / f"{name}.html").is_file(), name
        assert f">{name}</a>" in index, name
    page = next((out / "onnx-light").glob("*.html")).read_text(encoding="utf-8")
    assert "hexdump-json" in page
    capsys.readouterr()
    assert main(["audit", "--format", "text"]) == 0
    text = capsys.readouterr().out
    assert all(name in text for name in hurray_files + onnx_light_files)  # what the text audit covers
