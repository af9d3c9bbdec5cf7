"""The container commands of hurray-decl: inspect, validate, audit, extract and dequantize of
.hrry files, through the console entry point; exit codes, one-line messages, atomic outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hurray_decl import cli
from hurray_decl.hurray.container import validate_container
from hurray_decl.hurray.numerics import dequantize
from tests.helpers import dump_verdict
from tests.paths import FILES

BASIC = str(FILES / "basic.hrry")
QUANT = str(FILES / "v02-quant-three-buffers.hrry")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.rules("HF-HDR-19")
def test_inspect_names_every_byte_of_a_container(capsys):
    code, out, _ = run(capsys, "inspect", BASIC, "--format", "json")
    assert code == 0
    rows = json.loads(out)["rows"]
    assert sum(r["size"] for r in rows) == (FILES / "basic.hrry").stat().st_size
    assert rows[0]["field"] == "header.magic" and rows[-1]["field"] == "trailer.trailer_magic"
    assert "tensor[weights].shape[0]" in {r["field"] for r in rows}
    code, out, _ = run(capsys, "inspect", str(FILES / "i07-crc-mismatch.hrry"))
    assert code == 1 and dump_verdict(out).startswith("invalid: [HF-DATA-20]")


def test_validate_gives_verdict_and_rule(capsys):
    code, out, _ = run(capsys, "validate", BASIC)
    assert code == 0 and out == "valid: container 1.0, 2 tensors (0 composite heads), 2 KV entries\n"
    code, out, _ = run(capsys, "validate", str(FILES / "i09-data-offset-off-by-8.hrry"))
    assert code == 1 and out.startswith("invalid: [HF-DATA-05] ") and out.count("\n") == 1
    hexed = (FILES / "v04-no-tensors.hrry").read_bytes().hex()
    assert run(capsys, "validate", hexed)[0] == 0


def test_decode_prints_the_container_as_json(capsys):
    code, out, _ = run(capsys, "decode", str(FILES / "v01-dense-kv-all-types.hrry"))
    document = json.loads(out)
    assert code == 0 and [t["entry"]["name"] for t in document["tensors"]] == ["w.a", "w.b"]
    assert document["tensors"][0]["descriptor"]["shape"] == [2, 2]
    assert document["kv"]["blob"] == {"type": "bytes", "value": "0001fe"}
    assert document["kv"]["sizes"] == {"type": "array<int64>", "value": [8, 16]}
    assert document["header"]["data_buffer_alignment"] == 4096
    code, out, _ = run(capsys, "decode", str(FILES / "i01-major-zero.hrry"))
    assert code == 1 and json.loads(out)["error"]["code"] == "HF-HDR-05"


def test_audit_of_the_shared_container_folder_agrees(capsys):
    code, out, _ = run(capsys, "audit", str(FILES), "--format", "json")
    result = json.loads(out)
    assert code == 0 and result["summary"] == {"files": 21, "valid": 8, "invalid": 13, "missing": 0,
                                                "disagreements": 0}
    by_file = {e["file"]: e for e in result["files"]}
    assert by_file["i13-kv-count-huge.hrry"]["code"] == "HF-META-07" and by_file["basic.hrry"]["agrees"]


def test_audit_reports_a_missing_file_and_a_disagreement(tmp_path, capsys):
    (tmp_path / "a.hrry").write_bytes((FILES / "basic.hrry").read_bytes())
    manifest = {"vectors": [{"file": "a.hrry", "expect": "invalid", "rule": "HF-HDR-05"},
                            {"file": "gone.hrry", "expect": "valid", "rule": None}]}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    code, out, _ = run(capsys, "audit", str(tmp_path), "--format", "json")
    summary = json.loads(out)["summary"]
    assert code == 1 and summary["missing"] == 1 and summary["disagreements"] == 2


def test_extract_writes_descriptor_and_buffers_that_validate(tmp_path, capsys):
    code, out, _ = run(capsys, "extract", QUANT, "--name", "q.weight", "-o", str(tmp_path))
    assert code == 0, out
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["q.weight.buffer0.bin", "q.weight.buffer1.bin", "q.weight.buffer2.bin",
                     "q.weight.descriptor.bin"]
    tensor = validate_container((FILES / "v02-quant-three-buffers.hrry").read_bytes()).tensor("q.weight")
    assert [(tmp_path / f"q.weight.buffer{i}.bin").read_bytes() for i in range(3)] == [bytes(b) for b in tensor.buffers]
    buffers = [str(tmp_path / f"q.weight.buffer{i}.bin") for i in range(3)]
    code, out, _ = run(capsys, "validate", str(tmp_path / "q.weight.descriptor.bin"), "--buffers", *buffers)
    assert code == 0, out


def test_dequantize_a_named_tensor(tmp_path, capsys):
    target = tmp_path / "w.npy"
    code, out, _ = run(capsys, "dequantize", QUANT, "--name", "q.weight", "-o", str(target))
    assert code == 0, out
    tensor = validate_container((FILES / "v02-quant-three-buffers.hrry").read_bytes()).tensor("q.weight")
    assert np.array_equal(np.load(target), dequantize(tensor.descriptor, tensor.buffers))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.npy"]


@pytest.mark.parametrize("argv, code, text", [
    (["extract", BASIC, "-o", "{tmp}"], 2, "--name"),
    (["extract", BASIC, "--name", "nope", "-o", "{tmp}"], 2, "nope"),
    (["extract", BASIC, "--name", "bias", "-o", "{tmp}/missing/new"], 3, "no such folder"),  # made, not its parent
    (["extract", str(FILES / "i07-crc-mismatch.hrry"), "--name", "w.a", "-o", "{tmp}"], 1, "HF-DATA-20"),
    (["extract", str(FILES.parent / "descriptors" / "row_major_f32_3x4.bin"), "-o", "{tmp}"], 2,
     "does not take a tensor descriptor"),
    (["dequantize", QUANT, "-o", "{tmp}/x.npy"], 2, "--name"),
    (["dequantize", QUANT, "--name", "q.weight", "-o", "{tmp}/missing/x.npy"], 3, "no such folder"),
    (["dequantize", str(FILES / "i09-data-offset-off-by-8.hrry"), "--name", "w.a", "-o", "{tmp}/x.npy"], 1,
     "HF-DATA-05"),
    (["dequantize", BASIC, "x.bin", "--name", "bias", "-o", "{tmp}/x.npy"], 2, "BUFFER: does not apply"),
    (["validate", BASIC, "--buffers", BASIC], 2, "--buffers"),
])
def test_bad_container_inputs(tmp_path, argv, code, text):
    """Through the console script: documented exit code, one line, no traceback, no file left."""
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, "-m", "hurray_decl.cli", *argv], capture_output=True, text=True,
                          cwd=tmp_path, env=env)
    output = (done.stdout + done.stderr).strip()
    assert done.returncode == code, output
    assert text in output and "Traceback" not in output and output.count("\n") == 0, output
    assert list(tmp_path.iterdir()) == [], "a file was left behind"
