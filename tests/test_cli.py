"""The hurray-decl command line, run as a user would (in-process through main())."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import hurray_decl as hd
from hurray_decl import cli
from hurray_decl.dump.render import json_schema
from hurray_decl.hurray import examples, numerics as tensor_numerics
from hurray_decl.hurray.dump import UNDECODED, hexdump
from hurray_decl.hurray.tensor.layouts import LAYOUTS
from tests.hurray.tensor_support import manifest, vector
from tests.hurray.test_hexdump import assert_rows_cover
from tests.paths import CONFORMANCE

VECTORS = [entry["file"].split("/")[-1] for entry in manifest()]


def run(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


@pytest.mark.parametrize("name", VECTORS)
def test_json_rows_cover_every_conformance_vector(name, capsys):
    data = vector(name)
    code, out = run(capsys, "inspect", "--format", "json", data.hex())
    dump = json.loads(out)
    assert code == 0 and dump["error"] is None
    assert_rows_cover(data, dump["rows"])
    assert UNDECODED not in {r["field"] for r in dump["rows"]}


@settings(max_examples=30)
@given(scheme=st.sampled_from([row.name for row in hd.SCHEMES]), rows=st.integers(1, 4),
       seed=st.integers(0, 2**31))
def test_json_rows_cover_quantized_tensors(scheme, rows, seed):
    x = np.random.default_rng(seed).standard_normal((rows, 64)).astype(np.float32)
    descriptor, _ = tensor_numerics.quantize(x, scheme)
    data = hd.write_tensor_descriptor(descriptor)
    dump = json.loads(hexdump(data, format="json"))
    assert dump["error"] is None
    assert_rows_cover(data, dump["rows"])
    assert {r["field"].split(".")[0] for r in dump["rows"]} >= {"magic", "quantization", "buffers[0]"}


# (mutation class, offset to patch relative to the quantization payload or absolute, bytes, code)
MUTATIONS = [
    ("reserved bit", 10, b"\x80", "HT-HDR-12"),
    ("bad tag", 15, b"\xff", "HT-HDR-15"),
    ("bad length", 6, b"\x05", "HT-HDR-07"),
    ("out-of-range index", "scale_buffer_index", b"\x09", "HQ-BUF-01"),
    ("bad scheme tag", "scheme_tag", b"\x00", "HQ-HDR-07"),
    ("reserved byte", "reserved", b"\x01", "HQ-PB-09"),
]


@pytest.mark.parametrize("label, where, value, code", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_inspect_and_validate_name_the_broken_rule(label, where, value, code, capsys, tmp_path):
    descriptor, _ = tensor_numerics.quantize(np.ones((2, 32), np.float32), "per_block_affine", block_size=16)
    data = bytearray(hd.write_tensor_descriptor(descriptor))
    q = len(data) - 24
    offsets = {"scheme_tag": q, "scale_buffer_index": q + 12, "reserved": q + 21}
    offset = offsets.get(where, where)
    data[offset:offset + len(value)] = value
    exit_code, out = run(capsys, "inspect", "--format", "json", bytes(data).hex())
    dump = json.loads(out)
    assert exit_code == 1 and dump["error"]["code"] == code
    failing = dump["error"]["offset"]
    assert any(r["offset"] <= failing < r["offset"] + r["size"] or r["offset"] == failing for r in dump["rows"])
    exit_code, text = run(capsys, "inspect", bytes(data).hex())
    assert exit_code == 1 and f"<-- {code}" in text
    path = tmp_path / "bad.bin"
    path.write_bytes(bytes(data))
    exit_code, out = run(capsys, "validate", str(path))
    assert exit_code == 1 and code in out


@pytest.mark.parametrize("name", VECTORS)
def test_decode_then_encode_reproduces_the_input(name, capsys, tmp_path):
    code, out = run(capsys, "decode", vector(name).hex())
    assert code == 0
    model = tmp_path / "model.json"
    model.write_text(out)
    target = tmp_path / "again.bin"
    assert run(capsys, "encode", str(model), "-o", str(target))[0] == 0
    assert target.read_bytes() == vector(name)


def test_quantization_payloads_decode_and_encode(capsys, tmp_path):
    payload = "0201000000000000010000000200000003000000"
    code, out = run(capsys, "decode", "--quantization", payload)
    assert code == 0
    model = tmp_path / "q.json"
    model.write_text(out)
    assert run(capsys, "encode", "--quantization", "--hex", str(model)) == (0, payload + "\n")


def test_dequantize_writes_an_npy(capsys, tmp_path):
    x = np.linspace(-2, 2, 96, dtype=np.float32).reshape(3, 32)
    descriptor, buffers = tensor_numerics.quantize(x, "nf4", block_size=32)
    (tmp_path / "d.bin").write_bytes(hd.write_tensor_descriptor(descriptor))
    names = []
    for i, content in enumerate(buffers):
        (tmp_path / f"b{i}.bin").write_bytes(content)
        names.append(str(tmp_path / f"b{i}.bin"))
    code, _ = run(capsys, "dequantize", str(tmp_path / "d.bin"), *names, "-o", str(tmp_path / "x.npy"))
    assert code == 0
    assert np.array_equal(np.load(tmp_path / "x.npy"), hd.dequantize(descriptor, buffers))


def test_audit_of_the_bundled_corpus_agrees_with_its_manifest(capsys):
    code, out = run(capsys, "audit", "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["summary"]["disagreements"] == 0
    assert report["summary"]["files"] == len(examples.examples())
    assert {e["code"] for e in report["descriptors"] if e["verdict"] == "invalid"} >= {"HT-HDR-04", "HQ-PB-03"}


def test_audit_reports_a_disagreement(capsys, tmp_path):
    (tmp_path / "a.bin").write_bytes(vector("row_major_f32_3x4.bin"))
    (tmp_path / "manifest.json").write_text(json.dumps({"descriptors": [{"file": "a.bin", "expect": "HT-HDR-04"}]}))
    code, out = run(capsys, "audit", str(tmp_path))
    assert code == 1 and "NO" in out


def test_the_bundled_corpus_is_current():
    folder = examples.bundled()
    corpus = examples.examples()
    assert sorted(p.name for p in folder.glob("*.bin")) == sorted(f"{e.name}.bin" for e in corpus)
    for example in corpus:
        assert (folder / f"{example.name}.bin").read_bytes() == example.data, f"regenerate: {example.name}"
    shipped = json.loads((folder / examples.MANIFEST).read_text())
    assert shipped == examples.manifest(corpus)
    valid = [e.name.removeprefix("valid_") for e in corpus if e.expect is None]
    for row in hd.SCHEMES:
        assert any(name.startswith(row.name) for name in valid), f"no valid example of {row.name}"
    for row in LAYOUTS:
        assert row.name in valid, f"no valid example of the {row.name} layout"


def test_usage_errors_exit_2(capsys):
    assert cli.main(["validate", "not-hex-nor-file"]) == 2


@pytest.mark.parametrize("command", ["inspect", "decode", "encode", "validate", "dequantize", "audit", "bench", "fuzz",
                                     "schemes", "rule"])
def test_every_help_runs(command):
    result = subprocess.run([sys.executable, "-m", "hurray_decl.cli", command, "--help"], capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0 and "usage: hurray-decl" in result.stdout


def test_json_dumps_follow_the_shipped_schema(capsys):
    import jsonschema

    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for example in examples.examples():
        validator.validate(json.loads(hexdump(example.data, format="json")))
    validator.validate(json.loads(hexdump(bytes.fromhex("0201"), kind="quantization", format="json")))


@pytest.mark.parametrize("spelling", ["{hex}", "0x{hex}", "{spaced}", "{0x_each}", "{colons}", "{upper}"])
def test_hex_is_read_in_every_documented_spelling(spelling, capsys):
    data = vector("row_major_f32_3x4.bin")
    pairs = [f"{b:02x}" for b in data]
    text = spelling.format(hex=data.hex(), spaced=" ".join(pairs), colons=":".join(pairs),
                           upper="0X" + data.hex().upper(), **{"0x_each": " ".join("0x" + p for p in pairs)})
    assert run(capsys, "validate", text) == (0, "valid: TensorDescriptor\n")


def test_hex_names_that_are_files_are_files(capsys, tmp_path, monkeypatch):
    """An existing path wins over hex; a missing path-looking name is no such file, never hex."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cafe").write_bytes(vector("row_major_int8_5.bin"))
    assert run(capsys, "validate", "cafe")[0] == 0  # the file, not the two bytes CA FE
    assert cli.main(["validate", "./beef"]) == 3
    assert "no such file: ./beef" in capsys.readouterr().err
    assert cli.main(["validate", "beef"]) == 1  # two bytes of hex: too short for a descriptor
    assert "HT-HDR-08" in capsys.readouterr().out


def test_streams_honour_offset_and_length(tmp_path):
    data = vector("row_major_f32_3x4.bin")
    stream = b"\xee" * 7 + data + b"\x00" * 5000
    command = [sys.executable, "-m", "hurray_decl", "inspect", "-", "--offset", "7", "--format", "json"]
    done = subprocess.run(command, input=stream, capture_output=True, check=False)
    assert done.returncode == 0 and sum(r["size"] for r in json.loads(done.stdout)["rows"]) == len(data)
    assert b"the 5000 bytes after it were not read" in done.stderr
    short = subprocess.run(command + ["--length", "30"], input=stream, capture_output=True, check=False)
    assert short.returncode == 1 and json.loads(short.stdout)["error"]["code"] == "HT-HDR-08"


def test_audit_of_the_conformance_folder(capsys):
    """Its manifest lists descriptors in a subfolder with expected properties; README.md is no descriptor;
    files/ has a manifest of its own and is not scanned, but the basic.hrry it lists is reported."""
    folder = CONFORMANCE
    code, out = run(capsys, "audit", str(folder), "--format", "json")
    report = json.loads(out)
    entries = {e["file"]: e for e in report["descriptors"]}
    assert code == 0 and report["summary"]["disagreements"] == 0
    manifest = json.loads((folder / "manifest.json").read_text())
    assert sorted(entries) == sorted(e["file"] for e in manifest["descriptors"] + manifest["files"])
    assert all(entries[name]["verdict"] == "valid" and entries[name]["agrees"] for name in entries
               if name.startswith("descriptors/"))
    assert entries["files/basic.hrry"]["verdict"] in ("unchecked", "valid")


def test_audit_compares_the_manifest_properties(capsys, tmp_path):
    (tmp_path / "a.bin").write_bytes(vector("row_major_f32_3x4.bin"))
    expect = {"shape": [4, 3], "element_type": "float32", "has_quantization": False}
    (tmp_path / "manifest.json").write_text(json.dumps({"descriptors": [{"file": "a.bin", "expect": expect}]}))
    code, out = run(capsys, "audit", str(tmp_path), "--format", "json")
    entry = json.loads(out)["descriptors"][0]
    assert code == 1 and entry["agrees"] is False and entry["message"] == "shape: manifest [4, 3], read [3, 4]"
    expect["shape"] = [3, 4]
    (tmp_path / "manifest.json").write_text(json.dumps({"descriptors": [{"file": "a.bin", "expect": expect}]}))
    assert run(capsys, "audit", str(tmp_path))[0] == 0


def test_audit_reads_the_container_manifest_format(capsys, tmp_path):
    """The verdict-and-rule form of tests/conformance/hurray/files/manifest.json."""
    (tmp_path / "good.bin").write_bytes(vector("row_major_f32_3x4.bin"))
    (tmp_path / "bad.bin").write_bytes(b"HRRX" + vector("row_major_f32_3x4.bin")[4:])
    (tmp_path / "manifest.json").write_text(json.dumps({"vectors": [
        {"file": "good.bin", "expect": "valid", "rule": None},
        {"file": "bad.bin", "expect": "invalid", "rule": "HT-HDR-04"}]}))
    code, out = run(capsys, "audit", str(tmp_path), "--format", "json")
    assert code == 0 and [e["agrees"] for e in json.loads(out)["descriptors"]] == [True, True]


def test_bench_quantize_reports_ratios_to_gguf(capsys):
    """``bench --quantize``: every case as x np.copyto and x gguf's nearest type, single-threaded."""
    assert cli.main(["bench", "--quantize", "--size", "64", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("quantize 64x64 float32") and "threads = 1;" in out
    for label, kind in (("per-block int4 sym f16 K32", "Q4_0"), ("per-block int8 sym f16 K32", "Q8_0"),
                        ("per-block uint4 asym f16 K32", "Q4_1")):
        assert re.search(rf"{label}\s+[0-9.]+ms\s+[0-9.]+\s+{kind}\s+[0-9.]+$", out, re.M), out
    assert cli.main(["bench", "--quantize", "--size", "48"]) == 2  # not a multiple of the block size


def test_bench_parse_reports_ratios_to_the_kaitai_readers(capsys):
    """``bench --parse``: the three entry points and their ratios to the Kaitai readers, from one run."""
    assert cli.main(["bench", "--parse", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    for line in ("read_tensor_descriptor", "write_tensor_descriptor", "decode_quantization"):
        assert re.search(rf"{line}\s+[0-9.]+x the Kaitai (payload )?reader", out), out


@pytest.mark.parametrize("path", [
    CONFORMANCE / "descriptors" / "row_major_f32_3x4.bin",
    CONFORMANCE / "files" / "basic.hrry",
    CONFORMANCE / "files" / "i02-alignment-zero.hrry",
    CONFORMANCE / "streams" / "i01-truncated-prefix.stream",
    CONFORMANCE / "streams" / "i03-truncated-buffer.stream",
], ids=lambda p: p.name)
def test_inspect_and_validate_give_one_json_envelope(path, capsys) -> None:
    """The dump's JSON names the file and its kind first and ends with the verdict and the error
    object validate gives for the same input (code, path, offset, message); it meets the schema."""
    from jsonschema import validate as meets

    inspected = cli.main(["inspect", "--format", "json", str(path)])
    dump = json.loads(capsys.readouterr().out)
    validated = cli.main(["validate", "--format", "json", str(path)])
    verdict = json.loads(capsys.readouterr().out)
    assert inspected == validated
    assert (dump["file"], dump["kind"]) == (verdict["file"], verdict["kind"]) == (str(path), verdict["kind"])
    assert (dump["verdict"], dump["error"]) == (verdict["verdict"], verdict["error"])
    assert list(dump)[:2] == ["file", "kind"] and list(dump)[-2:] == ["verdict", "error"]
    if dump["error"] is not None:
        assert set(dump["error"]) == {"code", "path", "offset", "message"} and dump["verdict"] == "invalid"
    meets(dump, json_schema())
