"""onnx-light on the command line, and the bundled onnx-light corpus (run in-process through cli.main)."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from hurray_decl import cli
from hurray_decl.hurray.examples import bundled as hurray_bundled
from hurray_decl.onnx_light import (
    QuantizationFormat as F,
    corpus,
    dequantize_value,
    make_quantization_plan,
    quantize_array,
)
from hurray_decl.onnx_light.inputs import Item, items, parse
from hurray_decl.onnx_light.ort import ORT_FORMATS
from hurray_decl.onnx_light.profiles import PROFILES
from hurray_decl.onnx_light.tensors import tensor_to_array
from tests.helpers import covers, raises_rule

CORPUS = corpus.examples()
FOLDER = corpus.bundled()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exit_:  # usage errors exit 2, as argparse's do
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_bundled_corpus_is_current():
    names = sorted(p.name for p in FOLDER.iterdir() if p.name != corpus.MANIFEST)
    assert names == sorted(e.file for e in CORPUS)
    for example in CORPUS:
        assert (FOLDER / example.file).read_bytes() == example.data, f"regenerate: {example.name}"
    assert json.loads((FOLDER / corpus.MANIFEST).read_text()) == corpus.manifest(CORPUS)


def test_the_corpus_covers_every_profile_layout_and_reader_rule():
    from hurray_decl.onnx_light.mutants import EXCLUDED, MUTANTS

    valid = {e.name for e in CORPUS if e.expect is None}
    for fmt in PROFILES:
        if fmt in ORT_FORMATS:
            assert {f"valid_{fmt.wire_name}_{s}" for s in ("implicit", "packed", "float")} <= valid
        else:
            assert f"valid_{fmt.wire_name}" in valid
    assert {e.expect for e in CORPUS if e.expect} == set(MUTANTS)
    assert not set(MUTANTS) & set(EXCLUDED)
    assert {e.kind for e in CORPUS} == {"value", "tensor", "model"}


@pytest.mark.parametrize("example", CORPUS, ids=lambda e: e.name)
def test_validate_exits_0_or_1_with_the_rule(example, capsys):
    code, out, _ = run(capsys, "validate", str(FOLDER / example.file))
    if example.expect is None:
        assert code == 0 and out.startswith("valid: onnx-light")
    else:
        assert code == 1 and out.startswith(f"invalid: [{example.expect}] ")


def _expected_array(example) -> np.ndarray:
    message = parse(example.data, example.kind)
    if example.kind == "tensor":
        return tensor_to_array(message)
    (item,) = items(message, example.kind, "w" if example.kind == "model" else None)
    return dequantize_value(item.value, item.model)


@pytest.mark.parametrize("example", [e for e in CORPUS if e.expect is None and e.name != "valid_empty_int4"][::3]
                         + [e for e in CORPUS if e.kind != "value" and e.expect is None],
                         ids=lambda e: e.name)
def test_dequantize_npy_equals_dequantize_value(example, capsys, tmp_path):
    out = tmp_path / "x.npy"
    argv = ["dequantize", str(FOLDER / example.file), "-o", str(out)]
    if example.kind == "model":
        argv += ["--name", "w"]
    code, text, err = run(capsys, *argv)
    assert code == 0, err
    expected = _expected_array(example)
    written = np.load(out)
    if expected.dtype == ml_dtypes.bfloat16:
        assert written.dtype == np.float32 and "widened exactly" in text
        expected = expected.astype(np.float32)
    assert written.dtype == expected.dtype and written.shape == expected.shape
    assert np.array_equal(written, expected)
    assert [p.name for p in tmp_path.iterdir()] == ["x.npy"]  # the temporary file is gone


def test_dequantize_refuses_before_writing(capsys, tmp_path):
    out = tmp_path / "x.npy"
    code, _, err = run(capsys, "dequantize", str(FOLDER / "invalid_OL-WIRE-30.pb"), "-o", str(out))
    assert code == 1 and "OL-WIRE-30" in err and not out.exists()
    code, _, err = run(capsys, "dequantize", str(FOLDER / "valid_int4.pb"), str(FOLDER / "valid_int4.pb"), "-o",
                       str(out))
    assert code == 2 and "BUFFER: does not apply" in err and not out.exists()


def test_audit_default_run_includes_the_onnx_light_corpus(capsys):
    code, out, _ = run(capsys, "audit", "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["summary"]["disagreements"] == 0
    light = report["onnx_light"]
    assert light["summary"] == {"files": len(CORPUS), "valid": sum(e.expect is None for e in CORPUS),
                                "invalid": sum(e.expect is not None for e in CORPUS), "disagreements": 0,
                                "missing": 0, "unchecked": 0, "unlisted": 0}
    assert {e["code"] for e in light["descriptors"] if e["verdict"] == "invalid"} == {e.expect for e in CORPUS
                                                                                     if e.expect}
    code, out, _ = run(capsys, "audit")
    assert code == 0 and "onnx-light files" in out and "descriptor files" in out


def test_audit_of_an_onnx_light_folder_reports_disagreements(capsys, tmp_path):
    (tmp_path / "a.pb").write_bytes((FOLDER / "valid_int4.pb").read_bytes())
    (tmp_path / "manifest.json").write_text(json.dumps({"values": [{"file": "a.pb", "kind": "value",
                                                                    "expect": "OL-WIRE-30"}]}))
    code, out, _ = run(capsys, "audit", str(tmp_path))
    assert code == 1 and "NO" in out
    code, out, _ = run(capsys, "audit", str(hurray_bundled()))   # a Hurray folder goes to the Hurray audit
    assert code == 0 and "descriptor files" in out and "onnx-light files" not in out


@covers("OL-PROF-01")
def test_profiles_prints_the_catalogue(capsys):
    code, out, _ = run(capsys, "profiles", "--format", "json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 43
    assert [r["profile"] for r in rows][:4] == ["int8", "int8_per_channel", "int4", "gptq"]
    assert rows[3]["zero_point"] == 8.0 and rows[3]["signed"] == 0
    assert rows[19] == {"#": 19, "profile": "tq1_0", "method": "codebook", "bits": 2, "signed": 0, "books": 1,
                        "entries": 3, "vector": 1, "base3": 1, "cast": 10, "zero_point": 0.0, "table": "TERNARY",
                        "transform": "", "layout": "portable"}
    assert rows[36]["transform"] == "required" and rows[42]["layout"] == "ORT MatMulNBits"
    code, out, _ = run(capsys, "profiles")
    assert code == 0 and len(out.strip().splitlines()) == 45 and "aqlm" in out
    code, out, _ = run(capsys, "profiles", "--format", "markdown")
    assert out.startswith("| # | profile |")


def test_inspect_detects_forces_and_picks(capsys, tmp_path):
    data = (FOLDER / "valid_int4.pb").read_bytes()
    code, out, _ = run(capsys, "inspect", "--format", "json", str(FOLDER / "valid_int4.pb"))
    assert code == 0 and json.loads(out)["rows"][0]["field"] == "struct_type:key"
    (tmp_path / "v.pb").write_bytes(data)
    code, out, _ = run(capsys, "inspect", "--format", "json", "--kind", "tensor", str(tmp_path / "v.pb"))
    assert json.loads(out)["rows"][0]["field"] != "struct_type:key"   # read as a TensorProto
    code, out, _ = run(capsys, "inspect", str(FOLDER / "invalid_OL-WIRE-30.pb"))
    assert code == 1 and "<-- OL-WIRE-30" in out
    code, out, _ = run(capsys, "inspect", "--name", "w", "--format", "json", str(FOLDER / "valid_catalogue.onnx"))
    rows = json.loads(out)["rows"]
    assert code == 0 and rows[0]["field"] == "graph.encoded_initializer[0]:key"
    code, _, err = run(capsys, "inspect", "--name", "nope", str(FOLDER / "valid_catalogue.onnx"))
    assert code == 2 and "--name" in err
    hurray = next(hurray_bundled().glob("valid_row_major.bin"))
    code, out, _ = run(capsys, "inspect", str(hurray))   # HRRY: the Hurray dump
    assert code == 0 and "magic" in out


def test_decode_prints_the_plan_as_json(capsys, tmp_path):
    value = quantize_array(np.array([-9, -7.5, -0.5, 0.5, 1.5, 6.5, 8], np.float32), make_quantization_plan(F.INT4, 7))
    (tmp_path / "v.pb").write_bytes(value.SerializeToString())
    code, out, _ = run(capsys, "decode", str(tmp_path / "v.pb"))
    decoded = json.loads(out)
    assert code == 0 and decoded["kind"] == "value"
    plan = decoded["values"][0]["plan"]
    assert plan["format"] == "int4" and plan["runs"][0]["layout"]["count"] == 7
    assert plan["runs"][0]["blocks"] == [{"scale": 1.0, "zero_point": 0.0, "offset": 0.0, "codebook": []}]
    code, out, _ = run(capsys, "decode", str(FOLDER / "invalid_OL-WIRE-14.pb"))
    assert code == 1 and json.loads(out)["error"]["code"] == "OL-WIRE-14"
    code, out, _ = run(capsys, "decode", str(FOLDER / "valid_tensor.pb"))
    assert code == 0 and json.loads(out)["kind"] == "tensor"


@covers("OL-WIRE-42")
def test_model_verdict_reaches_values_in_nested_graphs(capsys, tmp_path):
    from hurray_decl.onnx_light.inputs import check
    from hurray_decl.onnx_light.mutants import MUTANTS, RandomSource

    case = next(c for c in (MUTANTS["OL-WIRE-30"].build(RandomSource(s)) for s in range(50)) if c.kind == "model")
    message = parse(case.data, "model")
    (item,) = items(message, "model")
    assert isinstance(item, Item) and item.path == "graph.node[0].attribute[0].g.encoded_initializer[0]"
    with raises_rule("OL-WIRE-30"):
        check(message, "model")
    (tmp_path / "m.onnx").write_bytes(case.data)
    code, out, _ = run(capsys, "validate", str(tmp_path / "m.onnx"))
    assert code == 1 and out.startswith("invalid: [OL-WIRE-30]")


def test_a_decoder_failure_is_one_line_never_a_traceback(capsys, tmp_path):
    """A model whose annotation name is not UTF-8 (found by atheris): refused with its rule, in one line."""
    from hurray_decl.onnx_light.wire import pb

    model = pb.ModelProto(ir_version=10)
    model.graph.quantization_annotation.add(tensor_name="Z")
    data = model.SerializeToString().replace(b"Z", b"\xff")
    (tmp_path / "m.onnx").write_bytes(data)
    code, out, err = run(capsys, "validate", "--kind", "model", str(tmp_path / "m.onnx"))
    assert code == 1 and "Traceback" not in err + out
    assert len((out + err).strip().splitlines()) == 1


def test_audit_runs_without_onnx_installed(capsys, monkeypatch):
    """A plain install has no onnx: models are checked through the package's own messages."""
    import sys

    monkeypatch.setitem(sys.modules, "onnx", None)  # "import onnx" raises ImportError
    code, out, err = run(capsys, "audit")
    assert code == 0 and "onnx-light files" in out and not err
