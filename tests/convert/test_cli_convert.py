"""The conversion commands through the console script (issue 14, acceptance 3 and the conversion rows of 1).

A .gguf written by gguf's GGUFWriter with F32, F16, Q4_0, Q4_1 (gguf-quantized, and exact blocks),
Q5_0, Q8_0, Q4_K and Q6_K tensors, odd sizes and one tensor of 10^5+ elements:

* ``convert`` to Hurray: every tensor with an exact form is bit-identical to gguf.quants.dequantize;
  the others are listed with their rule;
* ``--to onnx-light``: every tensor, bit-identical;
* ``--to ort``: onnxruntime's MatMulNBits matches a float64 matmul with the dequantized weights
  to float32 rounding.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl.convert.gguf import GGUF_TYPES
from hurray_decl.hurray.tensor import read_tensor_descriptor
from hurray_decl.onnx_light import ModelProto, dequantize_value
from tests.helpers import on_terminal

Q = gguf.GGMLQuantizationType
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = shutil.which("hurray-decl")


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run the console script (or ``python -m hurray_decl.cli`` where it is not installed) on this checkout."""
    command = [SCRIPT] if SCRIPT else [sys.executable, "-m", "hurray_decl.cli"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(command + list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).reshape(-1).view(np.uint32)


def random_blocks(rng, name: str, rows: int, row_blocks: int) -> np.ndarray:
    """K-quant blocks (gguf has no quantizer for them): random bytes, normal f16 d and dmin."""
    row = GGUF_TYPES[name]
    raw = rng.integers(0, 256, (rows * row_blocks, row.record.itemsize), dtype=np.uint8)
    records = raw.view(row.record).reshape(-1)
    for field in ("d", "dmin"):
        if field in row.record.names:
            records[field] = (rng.standard_normal(records.size) * 0.05).astype(np.float16)
    return raw.reshape(rows, -1)


def exact_q4_1(rng, rows: int, row_blocks: int) -> np.ndarray:
    """Q4_1 blocks whose m is -z * d for an integer z, with d of both signs (6-bit d, so z * d is an f16)."""
    blocks = np.zeros(rows * row_blocks, dtype=GGUF_TYPES["Q4_1"].record)
    d = rng.integers(1, 64, blocks.size) * 2.0 ** -9 * rng.choice([-1, 1], blocks.size)
    blocks["d"] = d.astype(np.float16)
    blocks["m"] = (-rng.integers(0, 16, blocks.size) * blocks["d"].astype(np.float32)).astype(np.float16)
    blocks["qs"] = rng.integers(0, 256, (blocks.size, 16))
    return blocks.view(np.uint8).reshape(rows, -1)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """The .gguf and, per tensor, gguf's own dequantized values."""
    folder = tmp_path_factory.mktemp("gguf")
    rng = np.random.default_rng(14)
    tensors = {
        "f32": (rng.standard_normal((3, 7)).astype(np.float32), Q.F32),
        "f16": (rng.standard_normal(5).astype(np.float16), Q.F16),
        "q4_0": (gguf.quants.quantize(rng.standard_normal((391, 256)).astype(np.float32), Q.Q4_0), Q.Q4_0),
        "q8_0": (gguf.quants.quantize(rng.standard_normal((37, 96)).astype(np.float32), Q.Q8_0), Q.Q8_0),
        "q5_0": (gguf.quants.quantize(rng.standard_normal((9, 160)).astype(np.float32), Q.Q5_0), Q.Q5_0),
        "q4_1": (gguf.quants.quantize(rng.standard_normal((6, 64)).astype(np.float32), Q.Q4_1), Q.Q4_1),
        "q4_1_exact": (exact_q4_1(rng, 5, 3), Q.Q4_1),
        "q4_k": (random_blocks(rng, "Q4_K", 3, 2), Q.Q4_K),
        "q6_k": (random_blocks(rng, "Q6_K", 5, 1), Q.Q6_K),
    }
    path = folder / "model.gguf"
    writer = gguf.GGUFWriter(str(path), "test")
    for name, (data, kind) in tensors.items():
        writer.add_tensor(name, data, raw_dtype=None if kind in (Q.F32, Q.F16) else kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    expected = {name: gguf.quants.dequantize(data, kind) for name, (data, kind) in tensors.items()}
    assert expected["q4_0"].size > 100_000
    return path, expected


EXACT_IN_HURRAY = {"f32", "f16", "q4_0", "q8_0", "q5_0", "q4_1_exact"}
SKIPPED = {"q4_1": "HQ-PB-22", "q4_k": "HQ-EXT-04", "q6_k": "HQ-EXT-04"}  # K-quants: private only on request


def test_convert_to_hurray_is_bit_identical_and_lists_the_rest(model, tmp_path):
    path, expected = model
    refused = cli("convert", str(path), "-o", str(tmp_path / "out"), "--json", cwd=tmp_path)
    assert refused.returncode == 1 and not (tmp_path / "out").exists()  # a tensor that does not convert: no output
    assert set(json.loads(refused.stdout)["missing"]) == set(SKIPPED)
    result = cli("convert", str(path), "-o", str(tmp_path / "out"), "--json", "--partial", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = {row["name"]: row for row in json.loads(result.stdout)["tensors"]}
    assert {n for n, r in report.items() if r["status"] == "converted"} == EXACT_IN_HURRAY
    assert {n: r["code"] for n, r in report.items() if r["status"] != "converted"} == SKIPPED
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())["tensors"]
    assert {entry["name"] for entry in manifest} == EXACT_IN_HURRAY
    for entry in manifest:
        descriptor = read_tensor_descriptor((tmp_path / "out" / entry["descriptor"]).read_bytes())
        buffers = [(tmp_path / "out" / b).read_bytes() for b in entry["buffers"]]
        want = expected[entry["name"]]
        assert tuple(descriptor.shape) == want.shape
        if descriptor.quantization is None:  # F32 / F16: the file's own bytes, unquantized
            got = np.frombuffer(buffers[0], dtype={3: np.float32, 1: np.float16}[descriptor.type_tag])
        else:
            got = hd.dequantize(descriptor, buffers)
        assert np.array_equal(bits(got), bits(want)), entry["name"]
    text = cli("convert", str(path), "-o", str(tmp_path / "again"), "--partial", cwd=tmp_path).stdout.splitlines()
    assert text[-1] == (f"6 converted, 3 skipped; wrote the folder {tmp_path / 'again'} (6 tensors and manifest.json), "
                        "a partial model: 3 tensors missing (q4_1, q4_k, q6_k)")
    assert any(line.startswith("skipped") and "q6_k" in line and "HQ-EXT-04" in line for line in text)


def test_convert_to_onnx_light_is_bit_identical_for_every_listed_type(model, tmp_path):
    path, expected = model
    result = cli("convert", str(path), "--to", "onnx-light", "-o", str(tmp_path / "m.onnx"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("9 converted, 0 skipped")
    onnx_model = ModelProto.FromString((tmp_path / "m.onnx").read_bytes())
    values = {v.name: v for v in onnx_model.graph.encoded_initializer}
    assert set(values) == set(expected) - {"f32", "f16"}
    for name, value in values.items():
        assert np.array_equal(bits(dequantize_value(value, onnx_model)), bits(expected[name])), name
    plain = {t.name: t for t in onnx_model.graph.initializer}
    assert np.frombuffer(plain["f32"].raw_data, np.float32).tobytes() == expected["f32"].tobytes()
    assert np.array_equal(np.frombuffer(plain["f16"].raw_data, np.float16).astype(np.float32), expected["f16"])


def test_convert_to_ort_runs_matmul_nbits_to_float_rounding(model, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    path, expected = model
    result = cli("convert", str(path), "--to", "ort", "-o", str(tmp_path / "w.onnx"), "--json", "--partial",
                 cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = {row["name"]: row for row in json.loads(result.stdout)["tensors"]}
    converted = {n for n, r in report.items() if r["status"] == "converted"}
    assert converted == {"q4_0", "q8_0", "q5_0", "q4_1_exact"}
    session = ort.InferenceSession(str(tmp_path / "w.onnx"), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    feeds = {f"{n}.A": rng.standard_normal((9, expected[n].shape[1])).astype(np.float32) for n in converted}
    outputs = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    for name in converted:
        a, w = feeds[f"{name}.A"].astype(np.float64), expected[name].astype(np.float64)
        exact = a @ w.T
        # float32 rounding of a dot product: at most K * eps * |a| |w| (gamma_K); seen: under 1.6 eps
        bound = 16 * np.finfo(np.float32).eps * (np.abs(a) @ np.abs(w).T)
        assert np.all(np.abs(outputs[f"{name}.Y"] - exact) <= bound), name


def test_the_other_conversions_round_trip(model, tmp_path):
    path, expected = model
    assert cli("convert", str(path), "--to", "onnx-light", "-o", str(tmp_path / "m.onnx"), cwd=tmp_path).returncode == 0
    back = cli("convert", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "back"), "--json", "--partial", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    converted = {r["name"] for r in json.loads(back.stdout)["tensors"] if r["status"] == "converted"}
    assert {"f32", "f16", "q8_0"} <= converted and "q4_k" not in converted   # offsets have no per-block form
    entry = {e["name"]: e for e in json.loads((tmp_path / "back" / "manifest.json").read_text())["tensors"]}["q8_0"]
    files = [str(tmp_path / "back" / entry["descriptor"])]
    buffers = [arg for b in entry["buffers"] for arg in ("--buffer", str(tmp_path / "back" / b))]
    to_ort = cli("convert", *files, *buffers, "--to", "ort", "--name", "w", "-o", str(tmp_path / "w.onnx"),
                 cwd=tmp_path)
    assert to_ort.returncode == 0, to_ort.stderr
    to_ol = cli("convert", *files, *buffers, "--to", "onnx-light", "-o", str(tmp_path / "w2.onnx"), cwd=tmp_path)
    assert to_ol.returncode == 0, to_ol.stderr
    value = ModelProto.FromString((tmp_path / "w2.onnx").read_bytes()).graph.encoded_initializer[0]
    assert np.array_equal(bits(dequantize_value(value)), bits(expected["q8_0"]))
    array = tmp_path / "x.npy"
    np.save(array, np.random.default_rng(0).standard_normal((33, 70)).astype(np.float32))
    quantized = cli("quantize", str(array), "--scheme", "per_block_affine", "--block-size", "16", "-o",
                    str(tmp_path / "q.bin"), cwd=tmp_path)
    assert quantized.returncode == 0, quantized.stderr
    descriptor = read_tensor_descriptor((tmp_path / "q.bin").read_bytes())
    values = hd.dequantize(descriptor, [(tmp_path / f"q.buf{i}.bin").read_bytes() for i in range(2)])
    assert values.shape == (33, 70) and descriptor.quantization.block_size == 16


# --- bad inputs: documented exit code, one line, no traceback, nothing left behind ---------------

BAD = [
    # (arguments, exit status, a word of the message)
    (["convert", "missing.gguf", "-o", "out"], 3, "no such file"),
    (["convert", "notes.txt", "-o", "out"], 1, "invalid input"),
    (["convert", "corrupt.gguf", "-o", "out"], 1, "invalid: [HF-DATA-13]"),  # a truncated file: checked before reading
    (["convert", "folder", "-o", "out"], 3, "is a folder"),
    (["convert", "model.gguf", "-o", "nowhere/out"], 3, "does not exist"),
    (["convert", "model.gguf", "-o", "full"], 3, "non-empty folder"),
    (["convert", "model.gguf", "-o", "one.bin", "--partial"], 2, "do not fit one one.bin"),
    (["convert", "model.gguf", "-o", "one.bin"], 1, "nothing written: 3 tensors did not convert"),
    (["convert", "model.onnx", "--to", "ort", "-o", "w.onnx"], 2, "no conversion from model to ort"),
    (["convert", "desc.bin", "--to", "ort", "-o", "w.onnx"], 2, "needs its buffers"),
    (["convert", "desc.bin", "--buffer", "desc.bin", "--to", "ort", "-o", "w.onnx"], 1, "nothing written"),
    (["quantize", "x.npy", "--scheme", "nope", "-o", "q.bin"], 2, "no scheme 'nope'"),
    (["quantize", "notes.txt", "--scheme", "nf4", "-o", "q.bin"], 1, "not a .npy array"),
    (["quantize", "words.npy", "--scheme", "nf4", "-o", "q.bin"], 1, "not real numbers"),
    (["quantize", "x.npy", "--scheme", "per_block_affine", "--block-size", "3", "-o", "q.bin"], 1, "HQ-PB-03"),
    (["quantize", "x.npy", "--scheme", "per_block_affine", "--storage", "int3", "-o", "q.bin"], 2,
     "argument --storage"),
    (["quantize", "missing.npy", "--scheme", "nf4", "-o", "q.bin"], 3, "no such file"),
]


if importlib.util.find_spec("hurray_decl.hurray.container") is None:  # until the container package is merged
    BAD.append((["convert", "model.gguf", "-o", "out.hrry"], 3, ".hrry"))


@pytest.fixture(scope="module")
def workplace(model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad")
    shutil.copy(model[0], folder / "model.gguf")
    (folder / "notes.txt").write_text("not a model\n")
    (folder / "corrupt.gguf").write_bytes(model[0].read_bytes()[:3000])
    (folder / "folder").mkdir()
    (folder / "full").mkdir()
    (folder / "full" / "keep.txt").write_text("mine\n")
    np.save(folder / "x.npy", np.ones((4, 32), np.float32))
    np.save(folder / "words.npy", np.array(["a", "b"]))
    descriptor = hd.quantize(np.ones((4, 32), np.float32), "per_block_affine").descriptor
    (folder / "desc.bin").write_bytes(hd.write_tensor_descriptor(descriptor))
    assert cli("convert", "model.gguf", "--to", "onnx-light", "-o", "model.onnx", cwd=folder).returncode == 0
    return folder


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("argv, status, words", BAD, ids=[" ".join(a[:2] + a[-2:]) for a, _, _ in BAD])
def test_bad_inputs(workplace, argv, status, words):
    before = listing(workplace)
    result = cli(*argv, cwd=workplace)
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 1 and words in (lines[0] if lines else result.stdout), (result.stderr, result.stdout)
    assert listing(workplace) == before


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal needs POSIX")
def test_a_progress_bar_on_a_terminal_only(model, tmp_path):
    path, _ = model
    command = [SCRIPT] if SCRIPT else [sys.executable, "-m", "hurray_decl.cli"]
    status, shown = on_terminal(command + ["convert", str(path), "-o", str(tmp_path / "tty"), "--partial"],
                                cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert status == 0
    assert b"convert:   0%" in shown and b"0/9" in shown           # tqdm's bar, on the terminal
    piped = cli("convert", str(path), "-o", str(tmp_path / "piped"), "--partial", cwd=tmp_path)
    assert piped.returncode == 0 and piped.stderr == ""             # silent when stderr is not a terminal


def test_containers_in_and_out(model, tmp_path):
    container = pytest.importorskip("hurray_decl.hurray.container")
    path, expected = model
    result = cli("convert", str(path), "-o", str(tmp_path / "m.hrry"), "--partial", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    opened = container.read_container(tmp_path / "m.hrry").validate()
    assert set(opened.names) == EXACT_IN_HURRAY
    for tensor in opened.tensors():
        if tensor.descriptor.quantization is not None:
            got = hd.dequantize(tensor.descriptor, list(tensor.buffers))
            assert np.array_equal(bits(got), bits(expected[tensor.name])), tensor.name
    to_ort = cli("convert", str(tmp_path / "m.hrry"), "--to", "ort", "-o", str(tmp_path / "w.onnx"), "--json",
                 "--partial", cwd=tmp_path)
    assert to_ort.returncode == 0, to_ort.stderr
    rows = {r["name"]: r["status"] == "converted" for r in json.loads(to_ort.stdout)["tensors"]}
    assert rows == {"f32": False, "f16": False, "q4_0": True, "q8_0": True, "q5_0": True, "q4_1_exact": True}


def test_a_failure_while_writing_leaves_nothing(model, tmp_path, monkeypatch, capsys):
    from hurray_decl import cli
    from hurray_decl.cli import writers

    written = []
    real = writers.descriptor_files

    def failing(folder, tensor, stem):  # the third tensor's files cannot be written
        written.append(stem)
        if len(written) == 3:
            raise OSError(28, "No space left on device")
        return real(folder, tensor, stem)

    monkeypatch.setattr(writers, "descriptor_files", failing)
    before = listing(tmp_path)
    status = cli.main(["convert", str(model[0]), "-o", str(tmp_path / "out"), "--partial"])
    assert status == 3 and "No space left on device" in capsys.readouterr().err
    assert len(written) == 3 and listing(tmp_path) == before


def test_every_conversion_report_has_one_key_set(model, tmp_path):
    """``convert --json`` names the same keys for every tensor whatever the source: GGUF, a
    container, safetensors, an onnx-light model (a GGUF source said ``converted`` where a
    safetensors one said ``status``), and ``quantize --json`` the same."""
    import safetensors.numpy

    path, _ = model
    safetensors.numpy.save_file({"a": np.ones((2, 3), np.float32)}, str(tmp_path / "s.safetensors"))
    np.save(tmp_path / "x.npy", np.linspace(-1, 1, 128, dtype=np.float32).reshape(4, 32))
    hd.save(tmp_path / "h.hrry", {"w": hd.quantize(np.linspace(-1, 1, 128).reshape(4, 32), "per_block_affine",
                                                    block_size=32), "b": np.arange(3, dtype=np.float32)})
    runs = [("convert", str(path), "-o", "g.hrry"), ("convert", str(path), "--to", "onnx-light", "-o", "g.onnx"),
            ("convert", "g.onnx", "-o", "back"), ("convert", "s.safetensors", "-o", "s.hrry"),
            ("convert", "h.hrry", "--to", "safetensors", "-o", "h.safetensors"),
            ("convert", "h.hrry", "--to", "gguf", "-o", "h.gguf"), ("quantize", "x.npy", "-o", "x.hrry")]
    keys, statuses = {}, set()
    for argv in runs:
        done = cli(*argv, "--json", *(("--partial",) if argv[0] == "convert" else ()), cwd=tmp_path)
        assert done.returncode == 0, (argv, done.stderr)
        report = json.loads(done.stdout)
        assert {"source", "to", "output", "tensors"} <= set(report), argv
        for row in report["tensors"]:
            keys.setdefault(tuple(row), argv)
            statuses.add(row["status"])
    assert len(keys) == 1, keys
    assert {"converted", "skipped", "quantized"} <= statuses
