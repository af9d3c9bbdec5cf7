"""bitsandbytes NF4 weights (``Linear4bit``'s state dict as transformers saves it: ``W`` uint8,
``W.absmax``, ``W.quant_map``, ``W.quant_state.bitsandbytes__nf4``; nested: ``W.nested_absmax``,
``W.nested_quant_map``) converted to Hurray NF4 and dequantized bit for bit to the producer's
formula ``quant_map[q] * absmax[b]`` in float32. The fixtures are packed here as the
bitsandbytes repository's reference ``quantize_4bit`` packs (two codes a byte, element 2k in the
HIGH nibble, blocks over the flattened tensor; the state as JSON bytes, as ``pack_dict_to_tensor``
writes it); bitsandbytes' own quantize_4bit and dequantize_4bit (the package is in the test
extra; its CPU kernels) are checked against too. A copy with swapped nibbles gives other values."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("safetensors")
from safetensors.numpy import save_file

import hurray_decl as hd
from hurray_decl.hurray.schemes.nf4 import LEVELS
from tests.helpers import run_cli as cli

W = "model.layers.0.mlp.down_proj.weight"



def nf4_layer(rng: np.random.Generator, shape: tuple[int, int], block: int = 64, nested: bool = False,
              swap: bool = False) -> tuple[dict[str, np.ndarray], np.ndarray]:
    count = shape[0] * shape[1]
    q = rng.integers(0, 16, count).astype(np.uint8)
    levels = np.array(LEVELS, np.float32)
    state = {"quant_type": "nf4", "blocksize": block, "dtype": "float32", "shape": list(shape)}
    if nested:
        codes = rng.integers(0, 256, count // block).astype(np.uint8)
        table = np.sort(rng.uniform(-0.3, 1, 256)).astype(np.float32)  # absmax stays positive (HQ-NF4-09)
        outer = rng.uniform(0.01, 0.1, -(-codes.size // 256)).astype(np.float32)
        offset = np.float32(0.0375)
        absmax = (table[codes] * outer[np.arange(codes.size) // 256] + offset).astype(np.float32)
        state.update(nested_blocksize=256, nested_dtype="float32", nested_offset=float(offset))
        extra = {f"{W}.absmax": codes, f"{W}.nested_absmax": outer, f"{W}.nested_quant_map": table}
    else:
        absmax = rng.uniform(0.01, 2.0, count // block).astype(np.float32)
        extra = {f"{W}.absmax": absmax}
    high, low = (q[1::2], q[::2]) if swap else (q[::2], q[1::2])
    packed = ((high << 4) | low).astype(np.uint8).reshape(-1, 1)  # bitsandbytes: element 2k high
    expected = (levels[q].reshape(-1, block) * absmax[:, None]).astype(np.float32).reshape(shape)
    tensors = {W: packed, f"{W}.quant_map": levels, **extra,
               f"{W}.quant_state.bitsandbytes__nf4": np.frombuffer(json.dumps(state).encode(), np.uint8).copy(),
               "model.norm.weight": np.ones(5, np.float32)}
    return tensors, expected


@pytest.mark.parametrize("nested", [False, True], ids=["absmax", "nested absmax"])
def test_an_nf4_layer_converts_bit_for_bit(tmp_path, nested):
    tensors, expected = nf4_layer(np.random.default_rng(34), (96, 320), nested=nested)
    save_file(tensors, str(tmp_path / "model.safetensors"))
    done = cli("convert", "model.safetensors", "-o", "m.hrry", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)["tensors"]}
    assert rows[W]["status"] == "converted" and rows[W]["shape"] == [96, 320] and len(rows) == 2
    loaded = hd.load(tmp_path / "m.hrry")
    assert type(loaded[W].quantization).__name__ == "NF4"
    assert loaded[W].numpy().tobytes() == expected.tobytes()


def test_swapped_nibbles_give_other_values(tmp_path):
    tensors, expected = nf4_layer(np.random.default_rng(34), (32, 128), swap=True)
    save_file(tensors, str(tmp_path / "model.safetensors"))
    done = cli("convert", "model.safetensors", "-o", "m.hrry", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert hd.load(tmp_path / "m.hrry")[W].numpy().tobytes() != expected.tobytes()


def test_what_has_no_nf4_form_is_refused_by_rule(tmp_path):
    tensors, _ = nf4_layer(np.random.default_rng(1), (8, 128))
    tensors[f"{W}.quant_map"] = tensors[f"{W}.quant_map"] * np.float32(0.5)  # another code table
    save_file(tensors, str(tmp_path / "model.safetensors"))
    done = cli("convert", "model.safetensors", "-o", "m.hrry", "--json", cwd=tmp_path)
    assert {r["name"]: r for r in json.loads(done.stdout)["tensors"]}[W]["code"] == "HQ-NF4-11"
    tensors, _ = nf4_layer(np.random.default_rng(1), (8, 96))  # blocks of 64 run across rows of 96
    save_file(tensors, str(tmp_path / "model.safetensors"))
    done = cli("convert", "model.safetensors", "-o", "m.hrry", "--json", cwd=tmp_path)
    assert {r["name"]: r for r in json.loads(done.stdout)["tensors"]}[W]["code"] == "HQ-PB-15"


def test_an_nf4_layer_converts_to_onnx_light_nf4_and_ort_refuses_it(tmp_path):
    from hurray_decl.onnx_light import ModelProto, dequantize_value

    tensors, expected = nf4_layer(np.random.default_rng(3), (16, 128))
    save_file(tensors, str(tmp_path / "model.safetensors"))
    done = cli("convert", "model.safetensors", "--to", "onnx-light", "-o", "m.onnx", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    values = {v.name: v for v in ModelProto.FromString((tmp_path / "m.onnx").read_bytes()).graph.encoded_initializer}
    assert np.asarray(dequantize_value(values[W]), np.float32).tobytes() == expected.tobytes()
    done = cli("convert", "model.safetensors", "--to", "ort", "-o", "o.onnx", "--json", cwd=tmp_path)
    assert done.returncode == 1 and {r["name"]: r for r in json.loads(done.stdout)["tensors"]}[W]["code"] == "OL-ORT-07"


@pytest.mark.parametrize("nested", [False, True], ids=["absmax", "nested absmax"])
def test_bitsandbytes_own_quantizer_and_dequantizer_agree(tmp_path, nested):
    """bitsandbytes' own ``quantize_4bit`` makes the layer and its own ``dequantize_4bit``
    (float32) is the reference; the same layer with its nibbles swapped converts to other values."""
    torch = pytest.importorskip("torch")
    functional = pytest.importorskip("bitsandbytes.functional")
    weight = torch.randn(48, 256, generator=torch.Generator().manual_seed(34))
    packed, state = functional.quantize_4bit(weight, blocksize=64, quant_type="nf4", compress_statistics=nested)
    tensors = {W: packed.numpy(), "model.norm.weight": np.ones(5, np.float32)}
    tensors.update({f"{W}.{key}": value.numpy() for key, value in state.as_dict(packed=True).items()})
    save_file(tensors, str(tmp_path / "model.safetensors"))
    done = cli("convert", "model.safetensors", "-o", "m.hrry", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    reference = functional.dequantize_4bit(packed, state).float().numpy()
    assert hd.load(tmp_path / "m.hrry")[W].numpy().tobytes() == reference.tobytes()
    assert hd.load(tmp_path / "model.safetensors")[W].numpy().tobytes() == reference.tobytes()  # opened as is
    codes = tensors[W]
    tensors[W] = ((codes << 4) | (codes >> 4)).astype(np.uint8)
    save_file(tensors, str(tmp_path / "swapped.safetensors"))
    done = cli("convert", "swapped.safetensors", "-o", "s.hrry", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    swapped = hd.load(tmp_path / "s.hrry")[W].numpy()
    assert swapped.tobytes() != reference.tobytes()  # the nibble order is what the values say
    theirs = functional.dequantize_4bit(torch.from_numpy(tensors[W]), state).float().numpy()
    assert swapped.tobytes() == theirs.tobytes()  # and bitsandbytes reads the swapped bytes as we do
