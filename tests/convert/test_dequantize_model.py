"""``convert --dequantize``: a whole GGUF model's values, tensor by tensor, into safetensors or
``.hrry``, equal to ``gguf.quants.dequantize`` bit for bit (issue 33, acceptance 4).

The GGUF (gguf's ``GGUFWriter``) holds a tensor of every quantized type this package decodes
itself (Q4_0 .. Q8_0 from ``gguf.quants.quantize``, one of 100,096 elements and a block of zeros
that gguf writes with d = -0; the K-quants as llama.cpp lays them out), types that gguf-py
decodes (TQ1_0, TQ2_0, IQ4_NL) and plain F32, F16, BF16, F64 and I32 tensors.
"""

from __future__ import annotations

import json

import gguf
import ml_dtypes
import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl.convert.gguf import GGUF_TYPES, GgufTensor, read_gguf
from hurray_decl.convert.tensors import gguf_dequantized
from tests.convert.test_cli_convert import cli
from tests.convert.test_gguf_file import write
from tests.convert.test_gguf_write import canonical_k

Q = gguf.GGMLQuantizationType
ROUND = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def bits(a) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """The .gguf, and per tensor its GGML type and gguf's own values (float32, or the plain array)."""
    folder = tmp_path_factory.mktemp("dequantize")
    rng = np.random.default_rng(34)
    writer = gguf.GGUFWriter(folder / "m.gguf", "llama")
    expected = {}
    x = rng.standard_normal((391, 256)).astype(np.float32)  # 100,096 elements
    x[5, 32:64] = 0  # a block of zeros: gguf writes d = -0, so its values are -0
    for kind, shape in ((Q.Q4_0, None), (Q.Q4_1, (3, 96)), (Q.Q5_0, (7, 160)), (Q.Q5_1, (5, 32)),
                        (Q.Q8_0, (9, 64)), (Q.TQ1_0, (2, 256)), (Q.TQ2_0, (3, 256))):
        source = x if shape is None else rng.standard_normal(shape).astype(np.float32)
        blocks = gguf.quants.quantize(source, kind)
        writer.add_tensor(kind.name.lower(), blocks, raw_dtype=kind)
        expected[kind.name.lower()] = (kind, gguf.quants.dequantize(blocks, kind))
    for name in ("Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"):
        blocks = canonical_k(rng, name, 6).reshape(3, -1)
        writer.add_tensor(name.lower(), blocks, raw_dtype=Q[name])
        expected[name.lower()] = (Q[name], gguf.quants.dequantize(blocks, Q[name]))
    iq = rng.integers(0, 256, (5, 18), dtype=np.uint8)
    iq[:, :2] = np.frombuffer(np.float16(-0.03).tobytes(), np.uint8)
    writer.add_tensor("iq4_nl", iq.reshape(1, -1), raw_dtype=Q.IQ4_NL)
    expected["iq4_nl"] = (Q.IQ4_NL, gguf.quants.dequantize(iq.reshape(1, -1), Q.IQ4_NL))
    plain = {"f32": rng.standard_normal((3, 5)).astype(np.float32), "f16": rng.standard_normal(7).astype(np.float16),
             "f64": rng.standard_normal(4), "i32": rng.integers(-9, 9, 6).astype(np.int32)}
    for name, array in plain.items():
        writer.add_tensor(name, array)
        expected[name] = (None, array)
    bf16 = rng.standard_normal((2, 3)).astype(ml_dtypes.bfloat16)
    writer.add_tensor("bf16", bf16.view(np.uint8).reshape(2, -1), raw_dtype=Q.BF16)
    expected["bf16"] = (None, bf16)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return folder / "m.gguf", expected


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_gguf_to_safetensors_dequantized_equals_gguf(model, tmp_path, dtype):
    from safetensors.numpy import load_file

    path, expected = model
    done = cli("convert", str(path), "--to", "safetensors", "--dequantize", "--dtype", dtype,
               "-o", str(tmp_path / "m.safetensors"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith(f"{len(expected)} converted, 0 skipped")
    if dtype == "bfloat16":  # safetensors.numpy has no bfloat16: read the file with the package's own reader
        from hurray_decl.convert.safetensors import open_safetensors

        with open_safetensors(tmp_path / "m.safetensors") as opened:
            got = {name: opened.array(name) for name in opened.names}
    else:
        got = load_file(str(tmp_path / "m.safetensors"))
    assert set(got) == set(expected)
    for name, (kind, want) in expected.items():
        if kind is None:  # a plain tensor: its own type and bytes
            assert got[name].dtype == want.dtype and bits(got[name]) == bits(want), name
        else:
            rounded = np.asarray(want, np.float32).astype(ROUND[dtype])
            assert got[name].dtype == rounded.dtype and got[name].shape == want.shape, name
            assert bits(got[name]) == bits(rounded), name
    assert np.signbit(got["q4_0"][5, 32:64]).all()  # gguf's -0, kept


def test_gguf_to_hrry_dequantized(model, tmp_path):
    path, expected = model
    done = cli("convert", str(path), "--dequantize", "-o", str(tmp_path / "m.hrry"), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(r["status"] == "converted" for r in json.loads(done.stdout)["tensors"])
    loaded = hd.load(str(tmp_path / "m.hrry"))
    for name, (kind, want) in expected.items():
        assert loaded[name].descriptor.quantization is None
        assert bits(loaded[name].numpy()) == bits(want if kind is None else np.asarray(want, np.float32)), name
    # and from that .hrry (quantized tensors of its own) to safetensors: the package's dequantized values
    assert cli("convert", str(path), "-o", str(tmp_path / "q.hrry"), "--partial", cwd=tmp_path).returncode == 0
    done = cli("convert", str(tmp_path / "q.hrry"), "--to", "safetensors", "--dequantize", "-o",
               str(tmp_path / "q.safetensors"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    from safetensors.numpy import load_file

    got = load_file(str(tmp_path / "q.safetensors"))
    assert bits(got["q4_0"]) == bits(expected["q4_0"][1]) and bits(got["q8_0"]) == bits(expected["q8_0"][1])


def test_tiny_chunks_give_the_same_values(model):
    path, expected = model
    for tensor in read_gguf(path):
        kind, want = expected[tensor.name]
        if kind is not None:
            assert bits(gguf_dequantized(tensor, chunk=3)) == bits(np.asarray(want, np.float32)), tensor.name


def test_refusals(model, tmp_path):
    path, _ = model
    done = cli("convert", str(path), "--to", "safetensors", "-o", str(tmp_path / "m.safetensors"), cwd=tmp_path)
    assert done.returncode == 2 and "give --dequantize" in done.stderr
    done = cli("convert", str(path), "--to", "onnx-light", "--dequantize", "-o", str(tmp_path / "m.onnx"),
               cwd=tmp_path)
    assert done.returncode == 2 and "--dequantize writes --to hurray, safetensors or npz" in done.stderr
    done = cli("convert", str(path), "--dtype", "float16", "-o", str(tmp_path / "m.hrry"), cwd=tmp_path)
    assert done.returncode == 2 and "give --dequantize too" in done.stderr
    q8k = tmp_path / "k.gguf"
    # gguf-py has no Q8_K dequantizer
    write(q8k, [("k", np.zeros((1, 292), np.uint8), Q.Q8_K), ("f", np.ones(3, np.float32), None)])
    done = cli("convert", "k.gguf", "--to", "safetensors", "--dequantize", "-o", "k.safetensors", "--json",
               cwd=tmp_path)
    assert done.returncode == 1 and not (tmp_path / "k.safetensors").exists()
    assert [(r["name"], r["code"]) for r in json.loads(done.stdout)["tensors"]] == [("k", "HE-03")]
    done = cli("convert", "k.gguf", "--to", "safetensors", "--dequantize", "--partial", "-o", "k.safetensors",
               cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    from safetensors.numpy import load_file

    assert list(load_file(str(tmp_path / "k.safetensors"))) == ["f"]


@pytest.mark.parametrize("name", list(GGUF_TYPES))
def test_every_bit_pattern_dequantizes_as_gguf_does(name):
    """Random blocks (infinite and NaN scales among them): the same float32 bits, NaNs' signs included."""
    import warnings

    row = GGUF_TYPES[name]
    rng = np.random.default_rng(len(name))
    raw = rng.integers(0, 256, 40 * row.record.itemsize, dtype=np.uint8)
    shape = (5, 8 * row.elements)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = gguf.quants.dequantize(raw.reshape(5, -1), Q[name])
    got = gguf_dequantized(GgufTensor("x", name, shape, raw), chunk=7)
    assert bits(got) == bits(want)


def test_to_npz_tensor_by_tensor(model, tmp_path):
    path, expected = model
    done = cli("convert", str(path), "--to", "npz", "-o", str(tmp_path / "m.npz"), "--json", cwd=tmp_path)
    assert done.returncode == 1 and not (tmp_path / "m.npz").exists()  # quantized tensors need --dequantize
    refused = {r["name"]: r["code"] for r in json.loads(done.stdout)["tensors"] if r["status"] != "converted"}
    assert set(refused) == {n for n, (kind, _) in expected.items() if kind is not None}
    for dtype in ("float32", "float16"):
        done = cli("convert", str(path), "--to", "npz", "--dequantize", "--dtype", dtype, "-o",
                   str(tmp_path / f"{dtype}.npz"), cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        with np.load(tmp_path / f"{dtype}.npz") as got:
            assert set(got.files) == set(expected)
            for name, (kind, want) in expected.items():
                if kind is None:  # plain: its own type; bfloat16 widened exactly to float32
                    plain = want.astype(np.float32) if want.dtype == ml_dtypes.bfloat16 else want
                    assert bits(got[name]) == bits(plain), name
                else:
                    assert bits(got[name]) == bits(np.asarray(want, np.float32).astype(ROUND[dtype])), name
    # a .hrry (per-block affine, MXFP, plain) to npz: the package's own dequantized values
    assert cli("convert", str(path), "-o", str(tmp_path / "q.hrry"), "--partial", cwd=tmp_path).returncode == 0
    done = cli("convert", str(tmp_path / "q.hrry"), "--to", "npz", "--dequantize", "-o", str(tmp_path / "q.npz"),
               cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    with np.load(tmp_path / "q.npz") as got:
        assert bits(got["q4_0"]) == bits(expected["q4_0"][1]) and bits(got["f16"]) == bits(expected["f16"][1])
    done = cli("convert", str(path), "--to", "npz", "--dequantize", "--dtype", "bfloat16", "-o",
               str(tmp_path / "b.npz"), cwd=tmp_path)
    assert done.returncode == 2 and "no bfloat16" in done.stderr
