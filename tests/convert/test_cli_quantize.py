"""``hurray-decl quantize`` of whole models: ONNX models (written with onnx's helpers) whose MatMul
weights become MatMulNBits nodes that onnxruntime runs, ``.npz`` archives and safetensors files
(written by NumPy and the safetensors package) into ``.hrry`` and onnx-light, each with a report
whose figures are recomputed here from the written output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper

import hurray_decl as hd
from hurray_decl.onnx_light import ModelProto, dequantize_value
from tests.helpers import on_terminal

ROOT = Path(__file__).resolve().parents[2]


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hurray_decl", *argv], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)


def errors(source: np.ndarray, decoded: np.ndarray) -> tuple[float, float, float | None]:
    """Max abs error, RMSE and SNR (dB) of ``decoded`` against ``source``, in float64, written out."""
    x, y = source.astype(np.float64).ravel(), decoded.astype(np.float64).ravel()
    e = y - x
    power = float(np.sum(e * e))
    return float(np.max(np.abs(e))), float(np.sqrt(power / x.size)), (
        None if power == 0 else float(10 * np.log10(np.sum(x * x) / power)))


def check_row(row: dict, source: np.ndarray, decoded: np.ndarray) -> None:
    worst, rmse, snr = errors(source, decoded)
    assert row["max_abs_error"] == worst  # the same float64 maximum, exactly
    assert row["rmse"] == pytest.approx(rmse, rel=1e-9)
    assert row["snr_db"] == pytest.approx(snr, rel=1e-9)


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    """x @ W1 -> Relu -> @ W2 + b, W1 (300, 337): 10^5 weights, K not a multiple of the block."""
    folder = tmp_path_factory.mktemp("mlp")
    rng = np.random.default_rng(1)
    weights = {"W1": rng.standard_normal((300, 337)).astype(np.float32) * 0.1,
               "W2": rng.standard_normal((337, 40)).astype(np.float32) * 0.1,
               "b": rng.standard_normal(40).astype(np.float32),
               "shape": np.array([-1, 40], dtype=np.int64)}
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "W2"], ["m"]), helper.make_node("Add", ["m", "b"], ["s"]),
             helper.make_node("Reshape", ["s", "shape"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["M", 300])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", 40])],
                              [numpy_helper.from_array(v, n) for n, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    onnx.save(model, folder / "mlp.onnx")
    return folder, weights


def matmul_nbits_weight(initializers: dict, node) -> np.ndarray:
    """The [K, N] weight a MatMulNBits node multiplies by, from its initializers, by ORT's layout:
    B [N, blocks, block * bits / 8] codes LSB first, scales [N * blocks], zero points packed
    the same way per column (absent: 2^(bits - 1))."""
    attrs = {a.name: a.i for a in node.attribute}
    k, n, bits, block = attrs["K"], attrs["N"], attrs["bits"], attrs["block_size"]
    blocks = -(-k // block)
    raw = numpy_helper.to_array(initializers[node.input[1]]).reshape(n, blocks, block * bits // 8)
    per = 8 // bits
    codes = np.stack([(raw >> (bits * i)) & ((1 << bits) - 1) for i in range(per)], axis=-1).reshape(n, blocks, block)
    scales = numpy_helper.to_array(initializers[node.input[2]]).reshape(n, blocks).astype(np.float32)
    if len(node.input) > 3:
        packed = numpy_helper.to_array(initializers[node.input[3]]).reshape(n, -1)
        zeros = np.stack([(packed >> (bits * i)) & ((1 << bits) - 1) for i in range(per)], axis=-1)
        zeros = zeros.reshape(n, -1)[:, :blocks]
    else:
        zeros = np.full((n, blocks), 1 << (bits - 1))
    w = (codes.astype(np.float32) - zeros[..., None].astype(np.float32)) * scales[..., None]
    return w.reshape(n, blocks * block)[:, :k].T


@pytest.mark.parametrize("options", [[], ["--asymmetric", "--block-size", "64"], ["--storage", "int8"]],
                         ids=["int4", "uint4-K64", "int8"])
def test_an_onnx_model_quantizes_to_matmul_nbits_that_onnxruntime_runs(mlp, options):
    folder, weights = mlp
    out = f"q{len(options)}.onnx"
    done = cli("quantize", "mlp.onnx", "--to", "ort", "-o", out, "--json", *options, cwd=folder)
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["tensors"]}
    assert [rows[n]["status"] for n in weights] == ["quantized", "quantized", "kept", "kept"]
    model = onnx.load(folder / out)
    onnx.checker.check_model(model)
    assert [n.op_type for n in model.graph.node] == ["MatMulNBits", "Relu", "MatMulNBits", "Add", "Reshape"]
    assert not {"W1", "W2"} & {t.name for t in model.graph.initializer}
    initializers = {t.name: t for t in model.graph.initializer}
    dequantized = {node.input[1][: -len(".B")]: matmul_nbits_weight(initializers, node)
                   for node in model.graph.node if node.op_type == "MatMulNBits"}
    for name in ("W1", "W2"):
        check_row(rows[name], weights[name], dequantized[name])
        bits = {"int4": 4, "uint4": 4, "int8": 8}[rows[name]["method"].split()[1]]
        scale = np.abs(weights[name]).max() / ((1 << (bits - 1)) - 1)
        assert 0 < rows[name]["max_abs_error"] <= scale  # half a step of the coarsest block, and then some
    x = np.random.default_rng(2).standard_normal((7, 300)).astype(np.float32)
    (y_float,) = ort.InferenceSession(str(folder / "mlp.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    (y,) = ort.InferenceSession(str(folder / out), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    hidden = np.maximum(x @ dequantized["W1"], 0)
    expected = hidden @ dequantized["W2"] + weights["b"]
    assert np.allclose(y, expected, rtol=1e-4, atol=1e-4)  # onnxruntime multiplies by exactly these weights
    # against the float model: |x (W1 - Q1)| <= |x| max|e1| per element, carried through Relu and W2
    e1, e2 = rows["W1"]["max_abs_error"], rows["W2"]["max_abs_error"]
    h_bound = np.abs(x).sum(axis=1, keepdims=True) * e1
    bound = h_bound @ np.abs(weights["W2"]).sum(axis=0, keepdims=True) + \
        (np.abs(hidden) + h_bound).sum(axis=1, keepdims=True) * e2
    assert (np.abs(y - y_float) <= bound + 1e-4).all()
    assert np.abs(y - y_float).max() < 0.1 * np.abs(y_float).max()


def test_an_onnx_model_to_hrry_and_onnx_light(mlp):
    folder, weights = mlp
    done = cli("quantize", "mlp.onnx", "-o", "mlp.hrry", "--block-size", "32", "--storage", "int4", "--json",
               cwd=folder)
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["tensors"]}
    tensors = hd.load(folder / "mlp.hrry")
    for name in ("W1", "W2"):
        check_row(rows[name], weights[name], tensors[name].numpy())
    for name in ("b", "shape"):  # kept: the same values, the same type
        assert np.asarray(tensors[name]).tobytes() == weights[name].tobytes()
    light = cli("quantize", "mlp.onnx", "--to", "onnx-light", "--profile", "nf4", "-o", "light.onnx", "--json",
                cwd=folder)
    assert light.returncode == 0, light.stderr
    rows = {r["name"]: r for r in json.loads(light.stdout)["tensors"]}
    model = ModelProto.FromString((folder / "light.onnx").read_bytes())
    values = {v.name: v for v in model.graph.encoded_initializer}
    assert sorted(values) == ["W1", "W2"] and rows["W1"]["method"] == "nf4"
    for name in ("W1", "W2"):
        check_row(rows[name], weights[name], dequantize_value(values[name]))
    assert [n.op_type for n in model.graph.node] == ["MatMul", "Relu", "MatMul", "Add", "Reshape"]


def test_npz_and_safetensors_models(tmp_path):
    import ml_dtypes
    from safetensors.numpy import save_file

    rng = np.random.default_rng(4)
    arrays = {"embed": rng.standard_normal((129, 64)).astype(np.float32),
              "proj": rng.standard_normal((48, 96)).astype(np.float16),
              "tiny": rng.standard_normal(16).astype(np.float32), "ids": np.arange(2000, dtype=np.int64)}
    np.savez(tmp_path / "m.npz", **arrays)
    done = cli("quantize", "m.npz", "-o", "m.hrry", "--scheme", "per_block_affine", "--block-size", "32",
               "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rows = {r["name"]: r for r in report["tensors"]}
    assert {n: r["status"] for n, r in rows.items()} == {"embed": "quantized", "proj": "quantized", "tiny": "kept",
                                                         "ids": "kept"}
    tensors = hd.load(tmp_path / "m.hrry")
    for name in ("embed", "proj"):
        check_row(rows[name], arrays[name], tensors[name].numpy())
    assert np.asarray(tensors["ids"]).tobytes() == arrays["ids"].tobytes()

    arrays["proj"] = arrays["proj"].astype(ml_dtypes.bfloat16)
    save_file({k: v for k, v in arrays.items()}, str(tmp_path / "m.safetensors"), metadata={"format": "pt"})
    named = cli("quantize", "m.safetensors", "--to", "onnx-light", "--profile", "int8", "--tensor", "proj",
                "--tensor", "tiny", "-o", "m.onnx", "--json", cwd=tmp_path)
    assert named.returncode == 0, named.stderr
    rows = {r["name"]: r for r in json.loads(named.stdout)["tensors"]}
    assert rows["embed"]["status"] == "kept" and rows["proj"]["status"] == rows["tiny"]["status"] == "quantized"
    model = ModelProto.FromString((tmp_path / "m.onnx").read_bytes())
    values = {v.name: v for v in model.graph.encoded_initializer}
    check_row(rows["proj"], arrays["proj"].astype(np.float32), dequantize_value(values["proj"]))
    plain = {t.name: t for t in model.graph.initializer}
    assert plain["embed"].raw_data == arrays["embed"].tobytes()

    ort_model = cli("quantize", "m.safetensors", "--to", "ort", "--tensor", "embed", "-o", "w.onnx", cwd=tmp_path)
    assert ort_model.returncode == 0, ort_model.stderr
    assert "max|err|" in ort_model.stdout and "snr" in ort_model.stdout
    session = ort.InferenceSession(str(tmp_path / "w.onnx"), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"embed.A": np.eye(64, dtype=np.float32)})  # a (N, K) weight: Y = A @ W^T
    assert np.abs(y - arrays["embed"].T).max() < 0.5


@pytest.mark.parametrize("argv, status, words", [
    (["quantize", "mlp.onnx", "--tensor", "nope", "-o", "x.hrry"], 2, "no tensor 'nope'"),
    (["quantize", "mlp.onnx", "--block-size", "3", "-o", "x.hrry"], 1, "HQ-PB-03"),
    (["quantize", "mlp.onnx", "--min-elements", "100000000", "-o", "x.hrry"], 2, "no tensor was chosen"),
    (["quantize", "mlp.onnx", "--to", "ort", "--scheme", "nf4", "-o", "x.onnx"], 2, "per_block_affine"),
    (["quantize", "mlp.onnx", "--to", "onnx-light", "--profile", "ort_matmulnbits_int4", "-o", "x.onnx"], 2,
     "ORT layout"),
    (["quantize", "mlp.onnx", "--to", "ort", "--tensor", "b", "-o", "x.onnx"], 1, "OL-ORT-07"),
], ids=["unknown tensor", "bad block", "nothing chosen", "ort scheme", "ort profile", "ort vector"])
def test_bad_quantize_runs_leave_nothing(mlp, argv, status, words):
    folder, _ = mlp
    before = sorted(p.name for p in folder.iterdir())
    done = cli(*argv, cwd=folder)
    assert done.returncode == status, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in done.stdout + done.stderr
    assert sorted(p.name for p in folder.iterdir()) == before


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal needs POSIX")
def test_progress_on_a_terminal_only(mlp, tmp_path):
    folder, _ = mlp
    status, shown = on_terminal([sys.executable, "-m", "hurray_decl", "quantize", str(folder / "mlp.onnx"), "-o",
                                 str(tmp_path / "tty.hrry")], cwd=tmp_path,
                                env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert status == 0
    assert b"quantize:" in shown and b"/4" in shown  # tqdm's bar over the four tensors, on the terminal
    piped = cli("quantize", "mlp.onnx", "-o", str(tmp_path / "piped.hrry"), cwd=folder)
    assert piped.returncode == 0 and piped.stderr == ""


def test_a_weight_read_elsewhere_keeps_its_float_form(tmp_path):
    rng = np.random.default_rng(6)
    w = rng.standard_normal((64, 48)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"]), helper.make_node("Identity", ["W"], ["w_out"])]
    graph = helper.make_graph(nodes, "shared", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["M", 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", 48]),
                               helper.make_tensor_value_info("w_out", TensorProto.FLOAT, [64, 48])],
                              [numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, tmp_path / "shared.onnx")
    done = cli("quantize", "shared.onnx", "--to", "ort", "-o", "q.onnx", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    session = ort.InferenceSession(str(tmp_path / "q.onnx"), providers=["CPUExecutionProvider"])
    x = rng.standard_normal((3, 64)).astype(np.float32)
    y, w_out = session.run(None, {"x": x})
    assert np.array_equal(w_out, w)  # the Identity still reads the float weight
    assert np.abs(y - x @ w).max() < 0.25 * np.abs(x @ w).max()  # int4, K = 64: a few percent per element


def test_unreadable_tensors_are_listed_and_the_rest_written(tmp_path):
    rng = np.random.default_rng(8)
    w = rng.standard_normal((64, 64)).astype(np.float32)
    np.savez(tmp_path / "m.npz", w=w, notes=np.array([{"a": 1}], dtype=object), zeros=np.zeros((32, 64), np.float32))
    done = cli("quantize", "m.npz", "-o", "m.hrry", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["tensors"]}
    assert rows["notes"]["status"] == "skipped" and "allow_pickle" in rows["notes"]["reason"]
    assert rows["zeros"]["status"] == "quantized" and rows["zeros"]["max_abs_error"] == 0
    assert rows["zeros"]["snr_db"] is None  # no error: no finite SNR
    assert sorted(hd.load(tmp_path / "m.hrry")) == ["w", "zeros"]


def test_a_npy_weight_to_ort(tmp_path):
    w = np.random.default_rng(9).standard_normal((40, 96)).astype(np.float32)  # (N, K), as PyTorch stores it
    np.save(tmp_path / "w.npy", w)
    done = cli("quantize", "w.npy", "--to", "ort", "--block-size", "32", "-o", "w.onnx", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["tensors"]
    model = onnx.load(tmp_path / "w.onnx")
    initializers = {t.name: t for t in model.graph.initializer}
    weight = matmul_nbits_weight(initializers, model.graph.node[0])  # [K, N]
    check_row(row, w.T, weight)
    session = ort.InferenceSession(str(tmp_path / "w.onnx"), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(10).standard_normal((5, 96)).astype(np.float32)
    (y,) = session.run(None, {"w.A": x})
    assert np.allclose(y, x @ weight, rtol=1e-4, atol=1e-4)


def test_the_error_report_in_tiny_chunks(monkeypatch):
    from hurray_decl.convert import model_quantize

    rng = np.random.default_rng(11)
    x = rng.standard_normal((331, 307)).astype(np.float32)  # 10^5 elements, odd shape
    y = x + rng.standard_normal(x.shape).astype(np.float32) * 1e-3
    whole = model_quantize.error_report(x, y)
    monkeypatch.setattr(model_quantize, "_CHUNK", 7)
    chunked = model_quantize.error_report(x, y)
    worst, rmse, snr = errors(x, y)
    assert whole.max_abs_error == chunked.max_abs_error == worst
    assert whole.rmse == pytest.approx(rmse, rel=1e-12) and chunked.rmse == pytest.approx(rmse, rel=1e-9)
    assert chunked.snr_db == pytest.approx(snr, rel=1e-9)
