"""GPTQ and AWQ checkpoints read whole: safetensors files packed here by the formats' own rules
(written independently of hurray_decl's unpacking), converted with ``hurray-decl convert`` to
``.hrry``, ORT MatMulNBits (run in onnxruntime) and onnx-light, each dequantizing bit for bit to
the GPTQ / AWQ formula ``scale * (q - zero)``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("safetensors")
from safetensors.numpy import save_file

import hurray_decl as hd
from hurray_decl.convert.checkpoints import read_checkpoint
from hurray_decl.errors import HurrayDeclError
from hurray_decl.onnx_light import ModelProto, dequantize_value

ROOT = Path(__file__).resolve().parents[2]
AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # AutoAWQ's pack order: word nibble p holds column 8j + AWQ_ORDER[p]


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hurray_decl", *argv], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)


def pack_along_rows(values: np.ndarray, bits: int) -> np.ndarray:
    """GPTQ's qweight: 32/bits rows of codes in one int32, row 8i + p in bits [p*bits, (p+1)*bits)."""
    per = 32 // bits
    words = np.zeros((values.shape[0] // per, values.shape[1]), np.uint32)
    for p in range(per):
        words |= values[p::per].astype(np.uint32) << np.uint32(bits * p)
    return words.view(np.int32)


def pack_along_columns(values: np.ndarray, bits: int, order=None) -> np.ndarray:
    per = 32 // bits
    order = order or tuple(range(per))
    words = np.zeros((values.shape[0], values.shape[1] // per), np.uint32)
    for p in range(per):
        words |= values[:, order[p]::per].astype(np.uint32) << np.uint32(bits * p)
    return words.view(np.int32)


def gptq_layer(rng, k: int, n: int, group: int, bits: int = 4, v2: bool = False):
    """A GPTQ layer: codes, true zeros and float16 scales, with the formula's float32 values."""
    top = (1 << bits) - 1
    q = rng.integers(0, top + 1, (k, n))
    zeros = rng.integers(1, top + 1, (k // group, n))  # v1 stores zero - 1, so a stored 0 .. top - 1
    scales = rng.uniform(1e-3, 2e-2, (k // group, n)).astype(np.float16)  # GPTQ's (max - min) / maxq
    tensors = {"qweight": pack_along_rows(q, bits), "qzeros": pack_along_columns(zeros - (0 if v2 else 1), bits),
               "scales": scales, "g_idx": (np.arange(k) // group).astype(np.int32)}
    # the GPTQ formula, written out: W[i, j] = scales[g(i), j] * (q[i, j] - zeros[g(i), j]), in float32
    g = np.arange(k) // group
    formula = scales.astype(np.float32)[g] * (q - zeros[g]).astype(np.float32)
    return tensors, formula


def write_checkpoint(path: Path, layers: dict, extra: dict, metadata=None) -> None:
    tensors = {f"{prefix}.{role}": value for prefix, roles in layers.items() for role, value in roles.items()}
    save_file(tensors | extra, str(path), metadata=metadata)


@pytest.fixture(scope="module")
def gptq(tmp_path_factory):
    """A 4-bit, group-128 GPTQ checkpoint with a trivial g_idx and its config in __metadata__."""
    folder = tmp_path_factory.mktemp("gptq")
    rng = np.random.default_rng(11)
    first, first_w = gptq_layer(rng, 512, 96, 128)
    second, second_w = gptq_layer(rng, 256, 328, 128)  # 8.4e4 codes, N not a multiple of 64
    norm = rng.standard_normal(96).astype(np.float32)
    config = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": False}
    write_checkpoint(folder / "model.safetensors", {"layers.0.q_proj": first, "layers.0.o_proj": second},
                     {"norm.weight": norm}, {"format": "pt", "quantization_config": json.dumps(config)})
    return folder, {"layers.0.q_proj.weight": first_w, "layers.0.o_proj.weight": second_w, "norm.weight": norm}


def bits(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)


def test_gptq_to_hrry_dequantizes_to_the_formula_bit_for_bit(gptq):
    folder, expected = gptq
    done = cli("convert", "model.safetensors", "-o", "model.hrry", "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["tensors"]}
    assert rows["layers.0.q_proj.weight"]["type"] == "gptq" and rows["norm.weight"]["status"] == "converted"
    tensors = hd.load(folder / "model.hrry")
    assert sorted(tensors) == sorted(expected)  # qweight, qzeros, scales and g_idx are one tensor
    for name, values in expected.items():
        assert np.array_equal(bits(tensors[name].numpy()), bits(values)), name
    q = tensors["layers.0.q_proj.weight"].descriptor.quantization
    assert (q.axis, q.block_size) == (0, 128)
    assert json.loads(hd.load_kv(folder / "model.hrry")["quantization_config"])["bits"] == 4


def test_gptq_to_ort_runs_in_onnxruntime_and_gives_the_formula(gptq):
    ort = pytest.importorskip("onnxruntime")
    folder, expected = gptq
    done = cli("convert", "model.safetensors", "--to", "ort", "-o", "model.onnx", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert "skipped    norm.weight" in done.stdout  # a plain tensor has no MatMulNBits form
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    names = ("layers.0.q_proj.weight", "layers.0.o_proj.weight")
    outputs = session.run([f"{n}.Y" for n in names],
                          {f"{n}.A": np.eye(expected[n].shape[0], dtype=np.float32) for n in names})
    initializers = {v.name: v for v in ModelProto.FromString((folder / "model.onnx").read_bytes()).graph.initializer}
    for name, y in zip(names, outputs):
        assert np.array_equal(y, expected[name]), name  # identity @ B: the dequantized weight itself
        assert initializers[f"{name}.scales"].data_type == 1  # float32 scales: float16 ones held exactly


def test_gptq_to_onnx_light_decodes_to_the_formula(gptq):
    folder, expected = gptq
    done = cli("convert", "model.safetensors", "--to", "onnx-light", "-o", "light.onnx", cwd=folder)
    assert done.returncode == 0, done.stderr
    model = ModelProto.FromString((folder / "light.onnx").read_bytes())
    values = {v.name: v for v in model.graph.encoded_initializer}
    for name in ("layers.0.q_proj.weight", "layers.0.o_proj.weight"):
        assert np.array_equal(bits(dequantize_value(values[name])), bits(expected[name])), name
    assert [t.name for t in model.graph.initializer] == ["norm.weight"]


def test_act_order_is_refused_by_rule(tmp_path):
    rng = np.random.default_rng(5)
    layer, _ = gptq_layer(rng, 256, 64, 128)
    layer["g_idx"] = rng.permutation(np.arange(256) // 128).astype(np.int32)
    config = {"bits": 4, "group_size": 128, "desc_act": True}
    write_checkpoint(tmp_path / "m.safetensors", {"l": layer}, {})
    (tmp_path / "quantize_config.json").write_text(json.dumps(config))  # AutoGPTQ: names no quant_method
    done = cli("convert", "m.safetensors", "-o", "m.hrry", cwd=tmp_path)
    assert done.returncode == 1 and "HQ-PB-15" in done.stderr and "skipped    l.weight" in done.stdout
    assert not (tmp_path / "m.hrry").exists()


@pytest.mark.parametrize("bits_, v2", [(8, False), (2, False), (4, True)])
def test_other_widths_and_gptq_v2_from_config_json(tmp_path, bits_, v2):
    rng = np.random.default_rng(bits_)
    layer, formula = gptq_layer(rng, 256, 64, 64, bits=bits_, v2=v2)
    write_checkpoint(tmp_path / "m.safetensors", {"l": layer}, {})
    config = {"quant_method": "gptq", "bits": bits_, "group_size": 64,
              "checkpoint_format": "gptq_v2" if v2 else "gptq"}
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["X"], "quantization_config": config}))
    done = cli("convert", "m.safetensors", "-o", "m.hrry", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert np.array_equal(bits(hd.load(tmp_path / "m.hrry")["l.weight"].numpy()), bits(formula))


def test_awq_gemm_to_hrry_and_ort(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(9)
    k, n, group = 256, 64, 128
    q = rng.integers(0, 16, (k, n))
    zeros = rng.integers(0, 16, (k // group, n))
    scales = rng.uniform(1e-3, 2e-2, (k // group, n)).astype(np.float16)
    layer = {"qweight": pack_along_columns(q, 4, AWQ_ORDER), "qzeros": pack_along_columns(zeros, 4, AWQ_ORDER),
             "scales": scales}
    g = np.arange(k) // group
    formula = scales.astype(np.float32)[g] * (q - zeros[g]).astype(np.float32)  # AWQ: (q - zero) * scale
    config = {"quant_method": "awq", "bits": 4, "group_size": group, "version": "gemm", "zero_point": True}
    write_checkpoint(tmp_path / "m.safetensors", {"l": layer}, {}, {"quantization_config": json.dumps(config)})
    assert cli("convert", "m.safetensors", "-o", "m.hrry", cwd=tmp_path).returncode == 0
    assert np.array_equal(bits(hd.load(tmp_path / "m.hrry")["l.weight"].numpy()), bits(formula))
    assert cli("convert", "m.safetensors", "--to", "ort", "-o", "m.onnx", cwd=tmp_path).returncode == 0
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"l.weight.A": np.eye(k, dtype=np.float32)})
    assert np.array_equal(y, formula)


@pytest.mark.parametrize("config, code", [
    ({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemv"}, "HQ-PB-15"),
    ({"quant_method": "bitsandbytes"}, "HQ-PB-01"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "checkpoint_format": "marlin"}, "HQ-ZP-01"),
    ({"quant_method": "gptq", "bits": 3, "group_size": 128}, "HQ-PB-14"),
])
def test_configs_that_do_not_convert_name_their_rule(tmp_path, config, code):
    layer, _ = gptq_layer(np.random.default_rng(1), 256, 64, 128)
    write_checkpoint(tmp_path / "m.safetensors", {"l": layer}, {}, {"quantization_config": json.dumps(config)})
    done = cli("convert", "m.safetensors", "-o", "m.hrry", cwd=tmp_path)
    assert done.returncode == 1 and code in done.stderr, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and not (tmp_path / "m.hrry").exists()


def test_packed_weights_without_a_config_are_refused(tmp_path):
    layer, _ = gptq_layer(np.random.default_rng(2), 256, 64, 128)
    write_checkpoint(tmp_path / "m.safetensors", {"l": layer}, {})
    with pytest.raises(HurrayDeclError, match="quantization_config"):
        read_checkpoint(tmp_path / "m.safetensors")
    done = cli("convert", "m.safetensors", "-o", "m.hrry", cwd=tmp_path)
    assert done.returncode == 1 and "quantization_config" in done.stderr


def test_scales_float16_cannot_hold_are_refused(tmp_path):
    layer, formula = gptq_layer(np.random.default_rng(3), 256, 64, 128)
    config = json.dumps({"quant_method": "gptq", "bits": 4, "group_size": 128})
    layer["scales"] = layer["scales"].astype(np.float32)  # float16 values in float32: converted exactly
    write_checkpoint(tmp_path / "a.safetensors", {"l": layer}, {}, {"quantization_config": config})
    assert cli("convert", "a.safetensors", "-o", "a.hrry", cwd=tmp_path).returncode == 0
    assert np.array_equal(bits(hd.load(tmp_path / "a.hrry")["l.weight"].numpy()), bits(formula))
    layer["scales"] = layer["scales"] * np.float32(1 + 2 ** -20)  # 24 significant bits: no float16 value
    write_checkpoint(tmp_path / "b.safetensors", {"l": layer}, {}, {"quantization_config": config})
    done = cli("convert", "b.safetensors", "-o", "b.hrry", cwd=tmp_path)
    assert done.returncode == 1 and "HQ-PB-08" in done.stderr


def test_group_size_minus_one_is_one_group_over_all_inputs(tmp_path):
    rng = np.random.default_rng(12)
    layer, formula = gptq_layer(rng, 256, 64, 256)
    config = json.dumps({"quant_method": "gptq", "bits": 4, "group_size": -1})
    layer.pop("g_idx")
    write_checkpoint(tmp_path / "m.safetensors", {"l": layer}, {}, {"quantization_config": config})
    assert cli("convert", "m.safetensors", "-o", "m.hrry", cwd=tmp_path).returncode == 0
    tensor = hd.load(tmp_path / "m.hrry")["l.weight"]
    assert tensor.descriptor.quantization.block_size == 256
    assert np.array_equal(bits(tensor.numpy()), bits(formula))
