"""gpt-oss MXFP4 checkpoints (``*_blocks`` E2M1 nibble pairs, ``*_scales`` E8M0 exponents, a
``quantization_config`` with ``quant_method`` ``mxfp4``): converted to Hurray MXFP with the same
bytes and to onnx-light mxfp4, each dequantizing bit for bit to the producer's formula (openai
gpt-oss ``gpt_oss/torch/weights.py``: ``ldexp(FP4_VALUES[nibble], scale - 127)``, element 2k
in the low nibble of byte k). The fixtures are the test's own, packed from that description
(gpt-oss does not install here). A copy with the nibbles of every byte swapped gives other values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("safetensors")
from safetensors.numpy import save_file

import hurray_decl as hd
from hurray_decl.onnx_light import ModelProto, dequantize_value
from tests.helpers import run_cli as cli

FP4_VALUES = [+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
"""gpt-oss's table of the 16 E2M1 codes."""
EXPERTS = "model.layers.0.mlp.experts.gate_up_proj"



def producer_formula(blocks: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """The dequantized tensor as gpt-oss computes it: low nibble first, then ldexp by scale - 127."""
    lut = np.array(FP4_VALUES, np.float32)
    values = np.empty(blocks.shape[:-1] + (32,), np.float32)
    values[..., 0::2] = lut[blocks & 0x0F]
    values[..., 1::2] = lut[blocks >> 4]
    values = np.ldexp(values, scales.astype(np.int32)[..., None] - 127).astype(np.float32)
    return values.reshape(*blocks.shape[:-2], blocks.shape[-2] * 32)


def experts(folder: Path, blocks: np.ndarray, scales: np.ndarray, config: bool = True) -> None:
    bias = np.linspace(-1, 1, 2 * 10, dtype=np.float32).reshape(2, 10)
    save_file({f"{EXPERTS}_blocks": blocks, f"{EXPERTS}_scales": scales, f"{EXPERTS}_bias": bias},
              str(folder / "model.safetensors"))
    if config:
        (folder / "config.json").write_text(json.dumps({"quantization_config": {"quant_method": "mxfp4"}}))


def fixture(seed: int = 34) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, (2, 10, 3, 16), dtype=np.uint8)  # 2 experts, 10 rows, 3 blocks of 32
    scales = rng.integers(110, 140, (2, 10, 3), dtype=np.uint8)
    return blocks, scales


def test_an_expert_tensor_converts_to_mxfp_bit_for_bit(tmp_path):
    blocks, scales = fixture()
    experts(tmp_path, blocks, scales)
    done = cli("convert", "model.safetensors", "-o", "m.hrry", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["tensors"]}
    assert rows[EXPERTS]["status"] == "converted" and rows[EXPERTS]["shape"] == [2, 10, 96]
    loaded = hd.load(tmp_path / "m.hrry")
    tensor = loaded[EXPERTS]
    assert type(tensor.quantization).__name__ == "MXFP" and tensor.type_name == "float4_e2m1"
    assert tensor.numpy().tobytes() == producer_formula(blocks, scales).tobytes()  # signed zeros included
    assert bytes(tensor.buffers[0]) == blocks.tobytes() and bytes(tensor.buffers[1]) == scales.tobytes()
    assert f"{EXPERTS}_bias" in loaded


def test_an_expert_tensor_converts_to_onnx_light_mxfp4_where_it_decodes_the_same(tmp_path):
    """onnx-light's mxfp4 decodes the code -0 as +0: a tensor holding it is refused (OL-NUM-14),
    one without it converts and decodes bit for bit."""
    blocks, scales = fixture(5)
    experts(tmp_path, blocks, scales)
    done = cli("convert", "model.safetensors", "--to", "onnx-light", "-o", "m.onnx", "--json", cwd=tmp_path)
    rows = {r["name"]: r for r in json.loads(done.stdout)["tensors"]}
    assert rows[EXPERTS]["status"] == "skipped" and rows[EXPERTS]["code"] == "OL-NUM-14"
    low, high = blocks & 0x0F, blocks >> 4
    low[low == 8], high[high == 8] = 0, 0  # the code -0 becomes +0
    blocks = (high << 4) | low
    experts(tmp_path, blocks, scales)
    done = cli("convert", "model.safetensors", "--to", "onnx-light", "-o", "m.onnx", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    values = {v.name: v for v in ModelProto.FromString((tmp_path / "m.onnx").read_bytes()).graph.encoded_initializer}
    decoded = np.asarray(dequantize_value(values[EXPERTS]), np.float32)
    assert decoded.tobytes() == producer_formula(blocks, scales).tobytes()


def test_swapped_nibbles_give_other_values(tmp_path):
    blocks, scales = fixture()
    swapped = ((blocks & 0x0F) << 4) | (blocks >> 4)
    experts(tmp_path, swapped, scales)
    done = cli("convert", "model.safetensors", "-o", "m.hrry", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert hd.load(tmp_path / "m.hrry")[EXPERTS].numpy().tobytes() != producer_formula(blocks, scales).tobytes()


def test_invalid_scales_are_refused_and_without_a_config_the_bytes_stay_plain(tmp_path):
    blocks, scales = fixture()
    scales[1, 2, 0] = 0xFF  # E8M0 NaN
    experts(tmp_path, blocks, scales)
    done = cli("convert", "model.safetensors", "-o", "m.hrry", "--json", cwd=tmp_path)
    rows = {r["name"]: r for r in json.loads(done.stdout)["tensors"]}
    assert rows[EXPERTS]["status"] == "skipped" and rows[EXPERTS]["code"] == "HQ-MX-10"
    (tmp_path / "config.json").unlink()
    done = cli("convert", "model.safetensors", "-o", "plain.hrry", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    plain = hd.load(tmp_path / "plain.hrry")
    assert plain[f"{EXPERTS}_blocks"].numpy().tobytes() == blocks.tobytes()  # uint8, as stored: nothing guessed


def test_nvfp4_weights_are_refused_by_rule_and_the_rest_converts(tmp_path):
    """ModelOpt NVFP4 (E2M1 pairs, an E4M3 scale a block of 16, a float32 tensor scale
    ``weight_scale_2``) has no exact Hurray scheme: the weight is listed as skipped (HQ-MX-11),
    its scales are not converted as plain tensors on their own; nothing is written unless
    ``--partial``, which writes the other tensors."""
    from safetensors import TensorSpec, serialize_file

    rng = np.random.default_rng(9)
    raw = {"p.weight": ("uint8", (8, 32), rng.integers(0, 256, 256, dtype=np.uint8)),
           "p.weight_scale": ("float8_e4m3fn", (8, 4), rng.integers(0x30, 0x40, 32, dtype=np.uint8)),
           "p.weight_scale_2": ("float32", (1,), np.array([0.01], np.float32).view(np.uint8)),
           "norm.weight": ("float32", (3,), np.ones(3, np.float32).view(np.uint8))}
    serialize_file({name: TensorSpec(dtype=dtype, shape=shape, data_ptr=data.ctypes.data, data_len=data.nbytes)
                    for name, (dtype, shape, data) in raw.items()}, str(tmp_path / "model.safetensors"))
    done = cli("convert", "model.safetensors", "-o", "m.hrry", "--json", cwd=tmp_path)
    assert done.returncode == 1 and "(p.weight)" in done.stderr, done.stderr  # refused: nothing written
    assert not (tmp_path / "m.hrry").exists()
    done = cli("convert", "model.safetensors", "-o", "m.hrry", "--json", "--partial", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["tensors"]}
    assert rows["p.weight"]["status"] == "skipped" and rows["p.weight"]["code"] == "HQ-MX-11"
    assert rows["p.weight"]["shape"] == [8, 64] and set(rows) == {"p.weight", "norm.weight"}
    assert list(hd.load(tmp_path / "m.hrry")) == ["norm.weight"]
