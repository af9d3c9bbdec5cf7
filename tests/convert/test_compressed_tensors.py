"""compressed-tensors ``pack-quantized`` checkpoints (the format vLLM and llm-compressor write)
read whole: safetensors files packed here by the format's published rules (``pack_to_int32``
of vllm-project/compressed-tensors: 32/bits signed codes a word, code i at bits
``[i * bits, (i + 1) * bits)`` plus ``2^(bits-1)``, zero points packed the same way along the
output axis: this packer is the test's own, written from those rules and independent of
hurray_decl's unpacking, and the package's own ``pack_to_int32`` and ``dequantize``, in the test
extra, are checked to agree with it and with the conversion), converted with
``hurray-decl convert`` to ``.hrry``, and dequantized bit for bit to the producer's formula
``(q - zero) * scale``. A copy with its nibbles swapped converts to other values."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("safetensors")
from safetensors.numpy import save_file

import hurray_decl as hd
from hurray_decl.convert.checkpoints import read_checkpoint
from hurray_decl.errors import HurrayDeclError
from tests.helpers import run_cli as cli


def pack_to_int32(q: np.ndarray, bits: int, order: tuple[int, ...] | None = None) -> np.ndarray:
    """Signed codes (rows, cols) to int32 words along the columns, padded with zero codes."""
    per = 32 // bits
    stored = (q.astype(np.int64) + (1 << (bits - 1))).astype(np.uint32)
    padded = np.zeros((q.shape[0], -(-q.shape[1] // per) * per), np.uint32)
    padded[:, : q.shape[1]] = stored
    words = np.zeros((q.shape[0], padded.shape[1] // per), np.uint32)
    for i, p in enumerate(order or range(per)):  # code i of a word at bits [p * bits, (p + 1) * bits)
        words |= padded[:, i::per] << np.uint32(bits * p)
    return words.view(np.int32)


def layer(rng: np.random.Generator, out: int, inp: int, bits: int, strategy: str, symmetric: bool, group: int = 128,
          scale_dtype=ml_dtypes.bfloat16, order=None) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """One linear layer's tensors and the producer's dequantized weight (float32, exact)."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    q = rng.integers(lo, hi + 1, (out, inp))
    columns = {"group": -(-inp // group), "channel": 1, "tensor": 1}[strategy]
    rows = 1 if strategy == "tensor" else out
    scale = (rng.uniform(0.001, 0.05, (rows, columns))).astype(scale_dtype)
    zero = None if symmetric else rng.integers(lo, hi + 1, (rows, columns))
    per_column = np.repeat(scale.astype(np.float32), group, axis=1)[:, :inp] if strategy == "group" else \
        np.broadcast_to(scale.astype(np.float32), (out, inp))
    zero_column = 0 if zero is None else (np.repeat(zero, group, axis=1)[:, :inp] if strategy == "group"
                                          else np.broadcast_to(zero, (out, inp)))
    expected = ((q - zero_column).astype(np.float32) * per_column).astype(np.float32)
    tensors = {"weight_packed": pack_to_int32(q, bits, order), "weight_shape": np.array([out, inp], np.int64),
               "weight_scale": scale if strategy != "tensor" else scale.reshape(1)}
    if zero is not None:
        tensors["weight_zero_point"] = (np.ascontiguousarray(pack_to_int32(zero.T, bits).T) if strategy != "tensor"
                                        else zero.reshape(1).astype(np.int8))
    return tensors, expected


def config(bits: int, strategy: str, symmetric: bool, group: int | None = 128) -> dict:
    weights = {"num_bits": bits, "type": "int", "symmetric": symmetric, "strategy": strategy,
               "group_size": group if strategy == "group" else None}
    return {"quantization_config": {"quant_method": "compressed-tensors", "format": "pack-quantized",
                                    "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}}}}


def checkpoint(folder: Path, layers: dict[str, dict[str, np.ndarray]], cfg: dict) -> None:
    tensors = {f"{prefix}.{role}": values for prefix, roles in layers.items() for role, values in roles.items()}
    tensors["model.norm.weight"] = np.linspace(0.5, 1.5, 7, dtype=np.float32)
    save_file(tensors, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(cfg))


CASES = {  # name: (out, in, bits, strategy, symmetric, group, scale dtype)
    "int4 group 128 asymmetric": (96, 384, 4, "group", False, 128, ml_dtypes.bfloat16),
    "int4 group 128 partial group": (24, 300, 4, "group", False, 128, np.float16),
    "int8 channel symmetric": (40, 200, 8, "channel", True, None, np.float16),
    "int8 channel asymmetric": (16, 64, 8, "channel", False, None, np.float32),
    "int4 tensor asymmetric": (8, 96, 4, "tensor", False, None, ml_dtypes.bfloat16),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pack_quantized_to_hrry_dequantizes_to_the_formula_bit_for_bit(tmp_path, case):
    out, inp, bits, strategy, symmetric, group, dtype = CASES[case]
    rng = np.random.default_rng(34)
    tensors, expected = layer(rng, out, inp, bits, strategy, symmetric, group or 128, dtype)
    checkpoint(tmp_path, {"model.layers.0.mlp.down_proj": tensors}, config(bits, strategy, symmetric, group))
    done = cli("convert", "model.safetensors", "-o", "m.hrry", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["tensors"]}
    assert rows["model.layers.0.mlp.down_proj.weight"]["status"] == "converted"
    loaded = hd.load(tmp_path / "m.hrry")
    weight = loaded["model.layers.0.mlp.down_proj.weight"]
    assert weight.shape == (out, inp) and weight.quantization is not None
    assert weight.numpy().tobytes() == expected.tobytes()  # bit for bit, signed zeros included
    with hd.open(tmp_path / "model.safetensors") as opened:  # the checkpoint opened as the model it converts to
        assert opened["model.layers.0.mlp.down_proj.weight"].numpy().tobytes() == expected.tobytes()
    assert np.array_equal(loaded["model.norm.weight"].numpy(), np.linspace(0.5, 1.5, 7, dtype=np.float32))


def test_swapped_nibbles_give_other_values(tmp_path):
    """The same codes packed with each word's nibbles in reverse order: read as the format packs
    them, they are other values, so the bit-for-bit check above would catch an unpacking that
    read nibbles in the wrong order."""
    tensors, expected = layer(np.random.default_rng(34), 32, 256, 4, "group", False, order=tuple(range(7, -1, -1)))
    checkpoint(tmp_path, {"p": tensors}, config(4, "group", False))
    done = cli("convert", "model.safetensors", "-o", "m.hrry", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert hd.load(tmp_path / "m.hrry")["p.weight"].numpy().tobytes() != expected.tobytes()


def test_act_order_and_odd_widths_are_refused_by_rule(tmp_path):
    rng = np.random.default_rng(1)
    tensors, _ = layer(rng, 8, 256, 4, "group", True)
    tensors["weight_g_idx"] = rng.permutation(np.arange(256) // 128).astype(np.int32)
    checkpoint(tmp_path, {"p": tensors}, config(4, "group", True))
    checkpoint_ = read_checkpoint(tmp_path / "model.safetensors")
    try:
        with pytest.raises(HurrayDeclError) as caught:
            checkpoint_.items[0].parts()
        assert caught.value.code == "HQ-PB-15"
    finally:
        checkpoint_.close()
    with pytest.raises(HurrayDeclError) as caught:
        checkpoint(tmp_path, {"p": tensors}, config(3, "group", True))
        read_checkpoint(tmp_path / "model.safetensors")
    assert caught.value.code == "HQ-PB-14"
    cfg = config(4, "group", True)
    cfg["quantization_config"]["format"] = "float-quantized"
    with pytest.raises(HurrayDeclError) as caught:
        checkpoint(tmp_path, {"p": tensors}, cfg)
        read_checkpoint(tmp_path / "model.safetensors")
    assert caught.value.code == "HQ-PB-01"


def test_pack_quantized_to_ort_runs_in_onnxruntime_and_gives_the_formula(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    tensors, expected = layer(np.random.default_rng(3), 64, 256, 4, "group", False, 128, np.float16)
    checkpoint(tmp_path, {"p": tensors}, config(4, "group", False))
    done = cli("convert", "model.safetensors", "--to", "ort", "-o", "m.onnx", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    (y,) = session.run(["p.weight.Y"], {"p.weight.A": np.eye(256, dtype=np.float32)})
    assert np.array_equal(y, expected.T)  # identity @ W^T: the dequantized weight, transposed


def test_fp8_float_quantized_weights_are_refused_one_by_one(tmp_path):
    """compressed-tensors FP8 (``float-quantized``: F8_E4M3 ``P.weight`` times a float32
    ``P.weight_scale``, per tensor or per channel, ``P.input_scale`` beside it): the config is
    read, and each weight is one row refused by HQ-MX-11 (MXFP scales float8 blocks by powers of
    two only), its scales not converted on their own; the other tensors convert, as for NVFP4."""
    rng = np.random.default_rng(8)
    tensors = {"model.norm.weight": np.linspace(0.5, 1.5, 7, dtype=np.float32),
               "model.q_proj.weight": rng.standard_normal((16, 64)).astype(ml_dtypes.float8_e4m3fn),
               "model.q_proj.weight_scale": np.array([0.013], np.float32),
               "model.q_proj.input_scale": np.array([0.2], np.float32),
               "model.k_proj.weight": rng.standard_normal((16, 64)).astype(ml_dtypes.float8_e4m3fn),
               "model.k_proj.weight_scale": rng.uniform(0.01, 0.02, (16, 1)).astype(np.float32)}
    save_file(tensors, str(tmp_path / "model.safetensors"))
    weights = {"num_bits": 8, "type": "float", "symmetric": True, "strategy": "channel"}
    (tmp_path / "config.json").write_text(json.dumps({"quantization_config": {
        "quant_method": "compressed-tensors", "format": "float-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}}}}))
    checkpoint_ = read_checkpoint(tmp_path / "model.safetensors")
    try:
        assert [(i.name, i.kind, i.shape) for i in checkpoint_.items] == [
            ("model.k_proj.weight", "fp8", (16, 64)), ("model.norm.weight", "F32", (7,)),
            ("model.q_proj.weight", "fp8", (16, 64))]
        with pytest.raises(HurrayDeclError) as caught:
            checkpoint_.items[0].parts()
        assert caught.value.code == "HQ-MX-11"
    finally:
        checkpoint_.close()
    for target in ("hurray", "onnx-light", "ort"):
        done = cli("convert", "model.safetensors", "--to", target, "-o", f"m.{target}", "--json", cwd=tmp_path)
        assert "Traceback" not in done.stderr, done.stderr
        rows = {r["name"]: r for r in json.loads(done.stdout)["tensors"]}
        assert sorted(rows) == ["model.k_proj.weight", "model.norm.weight", "model.q_proj.weight"]
        for name in ("model.k_proj.weight", "model.q_proj.weight"):
            assert (rows[name]["status"], rows[name]["code"]) == ("skipped", "HQ-MX-11"), rows[name]
        if target != "ort":  # ort: nothing converts (MatMulNBits holds no plain tensor)
            assert done.returncode == 1, (target, done.stderr)  # a refused tensor: nothing written
            assert "model.k_proj.weight, model.q_proj.weight" in done.stderr and "--partial" in done.stderr
        assert not (tmp_path / f"m.{target}").exists(), target
    done = cli("convert", "model.safetensors", "-o", "m.hrry", cwd=tmp_path)
    assert done.returncode == 1 and not (tmp_path / "m.hrry").exists(), done.stderr
    done = cli("convert", "model.safetensors", "-o", "m.hrry", "--partial", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    loaded = hd.load(tmp_path / "m.hrry")
    assert list(loaded) == ["model.norm.weight"]
    assert np.array_equal(loaded["model.norm.weight"].numpy(), tensors["model.norm.weight"])
    assert list(hd.load_kv(tmp_path / "m.hrry")["hurray_decl.missing_tensors"]) == [
        "HQ-MX-11 fp8 model.k_proj.weight", "HQ-MX-11 fp8 model.q_proj.weight"]


@pytest.mark.parametrize("bits, strategy, symmetric", [(4, "group", False), (8, "channel", True)],
                         ids=["int4 group 128 asymmetric", "int8 channel symmetric"])
def test_compressed_tensors_own_packer_and_dequantizer_agree(tmp_path, bits, strategy, symmetric):
    """The layer packed by compressed-tensors' own ``pack_to_int32`` (weights along the inputs,
    zero points along the outputs; the package is in the test extra), which is the packing of
    this file's own packer, converts to a tensor that dequantizes bit for bit to the package's
    own ``dequantize`` (float32); the same words with their codes in reverse order (the nibbles of
    int4 words, the bytes of int8 ones) give other values."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("compressed_tensors")
    from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32 as theirs
    from compressed_tensors.quantization import QuantizationArgs
    from compressed_tensors.quantization.lifecycle.forward import dequantize

    generator = torch.Generator().manual_seed(34)
    out, inp, groups = 96, 384, 3 if strategy == "group" else 1
    q = torch.randint(-(1 << (bits - 1)), 1 << (bits - 1), (out, inp), dtype=torch.int8, generator=generator)
    scale = (torch.rand(out, groups, generator=generator) * 0.05 + 0.001).to(torch.bfloat16)
    zero = None if symmetric else torch.randint(-8, 8, (out, groups), dtype=torch.int8, generator=generator)
    packed = theirs(q, bits).numpy()
    assert np.array_equal(packed, pack_to_int32(q.numpy(), bits))  # the test's packer is the producer's
    tensors = {"weight_packed": packed, "weight_shape": np.array([out, inp], np.int64),
               "weight_scale": scale.view(torch.int16).numpy().view(ml_dtypes.bfloat16)}
    if zero is not None:
        tensors["weight_zero_point"] = theirs(zero, bits, packed_dim=0).numpy()
    args = QuantizationArgs(num_bits=bits, type="int", symmetric=symmetric, strategy=strategy,
                            group_size=128 if strategy == "group" else None)
    expected = dequantize(q, scale.float(), zero, args, dtype=torch.float32).numpy()
    checkpoint(tmp_path, {"p": tensors}, config(bits, strategy, symmetric, 128))
    done = cli("convert", "model.safetensors", "-o", "m.hrry", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert hd.load(tmp_path / "m.hrry")["p.weight"].numpy().tobytes() == expected.tobytes()
    words = packed.view(np.uint32)
    swapped = np.zeros_like(words)
    per = 32 // bits
    for i in range(per):  # code i of each word moved to place per - 1 - i
        swapped |= ((words >> np.uint32(bits * i)) & np.uint32((1 << bits) - 1)) << np.uint32(bits * (per - 1 - i))
    checkpoint(tmp_path, {"p": {**tensors, "weight_packed": swapped.view(np.int32)}}, config(bits, strategy,
                                                                                             symmetric, 128))
    done = cli("convert", "model.safetensors", "-o", "s.hrry", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert hd.load(tmp_path / "s.hrry")["p.weight"].numpy().tobytes() != expected.tobytes()
