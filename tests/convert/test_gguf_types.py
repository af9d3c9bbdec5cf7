"""GGUF tensor types through the converters (issue 33, acceptance 3): the plain integer and
float64 types to onnx-light and back exactly, a rule code for every type a target refuses, and a
Q4_1 / Q5_1 minimum of -0 kept through onnx-light."""

from __future__ import annotations

import json

import gguf
import numpy as np
import pytest

from hurray_decl.convert.gguf import GGUF_TYPES
from hurray_decl.convert.onnx_light import gguf_to_onnx_light, onnx_light_to_gguf
from hurray_decl.onnx_light import ModelProto
from hurray_decl.rules import all_rules
from tests.convert.test_cli_convert import cli
from tests.convert.test_gguf_file import write

Q = gguf.GGMLQuantizationType
PLAIN = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "f64": np.float64}


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plain")
    rng = np.random.default_rng(33)
    arrays = {name: (rng.standard_normal((7, 13)) * 1000).astype(dtype) for name, dtype in PLAIN.items()}
    arrays["f64"][0, :3] = [-0.0, np.nan, np.inf]
    arrays["i64"][1, 0] = np.iinfo(np.int64).min
    arrays["f32"] = rng.standard_normal(100_003).astype(np.float32)
    write(folder / "p.gguf", [(name, a, None) for name, a in arrays.items()])
    return folder, arrays


def test_plain_integer_and_float64_tensors_to_onnx_light_and_back(plain, tmp_path):
    folder, arrays = plain
    done = cli("convert", str(folder / "p.gguf"), "--to", "onnx-light", "-o", str(tmp_path / "p.onnx"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    model = ModelProto.FromString((tmp_path / "p.onnx").read_bytes())
    got = {t.name: t for t in model.graph.initializer}
    assert set(got) == set(arrays)
    for name, array in arrays.items():
        assert list(got[name].dims) == list(array.shape) and got[name].raw_data == array.tobytes(), name
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    checked = onnx.load_from_string((tmp_path / "p.onnx").read_bytes())
    for t in checked.graph.initializer:
        assert numpy_helper.to_array(t).tobytes() == arrays[t.name].tobytes(), t.name
    back = cli("convert", str(tmp_path / "p.onnx"), "--to", "gguf", "-o", str(tmp_path / "p.gguf"), cwd=tmp_path)
    assert back.returncode == 0, back.stdout + back.stderr
    assert (tmp_path / "p.gguf").read_bytes() == (folder / "p.gguf").read_bytes()
    hrry = cli("convert", str(tmp_path / "p.onnx"), "-o", str(tmp_path / "p.hrry"), cwd=tmp_path)
    assert hrry.returncode == 0, hrry.stdout + hrry.stderr
    again = cli("convert", str(tmp_path / "p.hrry"), "--to", "onnx-light", "-o", str(tmp_path / "q.onnx"), cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    values = {t.name: t.raw_data for t in ModelProto.FromString((tmp_path / "q.onnx").read_bytes()).graph.initializer}
    assert values == {name: array.tobytes() for name, array in arrays.items()}


def random_blocks(rng, kind: Q, blocks: int) -> np.ndarray:
    """Blocks of a GGML type gguf-py cannot quantize: random bytes, the leading float16 scale finite."""
    size = gguf.GGML_QUANT_SIZES[kind][1]
    raw = rng.integers(0, 256, (blocks, size), dtype=np.uint8)
    raw[:, :2] = np.frombuffer(np.float16(0.01).tobytes(), np.uint8)
    return raw


@pytest.fixture(scope="module")
def unconverted(tmp_path_factory):
    """A GGUF of types without a public Hurray scheme: IQ4_NL, IQ2_XS, Q8_K, TQ1_0, TQ2_0, and the K-quants."""
    folder = tmp_path_factory.mktemp("types")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 512)).astype(np.float32)
    tensors = [(k.name.lower(), gguf.quants.quantize(x, k), k) for k in (Q.TQ1_0, Q.TQ2_0)]
    tensors += [(k.name.lower(), random_blocks(rng, k, 4).reshape(2, -1), k) for k in (Q.IQ4_NL, Q.IQ2_XS, Q.Q8_K)]
    tensors += [("q6_k", random_blocks(rng, Q.Q6_K, 2).reshape(2, -1), Q.Q6_K)]
    write(folder / "t.gguf", tensors)
    return folder


@pytest.mark.parametrize("target", ["hurray", "onnx-light", "ort"])
def test_every_refusal_of_a_tensor_type_carries_a_rule(unconverted, tmp_path, target):
    out = tmp_path / ("t.hrry" if target == "hurray" else "t.onnx")
    done = cli("convert", str(unconverted / "t.gguf"), "--to", target, "-o", str(out), "--json", cwd=tmp_path)
    assert done.returncode == 1 and not out.exists()
    rows = json.loads(done.stdout)["tensors"]
    refused = {r["name"]: r["code"] for r in rows if r["status"] != "converted"}
    assert {"iq4_nl", "iq2_xs", "q8_k", "tq1_0", "tq2_0"} <= set(refused)
    assert all(code in all_rules() for code in refused.values()), refused
    # to Hurray the project's private ggml_codebook scheme holds it, written only when asked (HQ-EXT-04)
    assert refused["iq4_nl"] == ("HQ-EXT-04" if target == "hurray" else "HE-03")


@pytest.mark.parametrize("name", ["Q4_1", "Q5_1"])
def test_a_minimum_of_minus_zero_comes_back_through_onnx_light(name, tmp_path):
    rng = np.random.default_rng(11)
    row = GGUF_TYPES[name]
    blocks = np.zeros(3 * 37, row.record)
    blocks["d"] = (rng.uniform(0.01, 1, blocks.size) * rng.choice([-1, 1], blocks.size)).astype(np.float16)
    blocks["m"] = (rng.standard_normal(blocks.size)).astype(np.float16)
    blocks["m"][::3] = np.float16(-0.0)
    blocks["m"][1::6] = np.float16(0.0)
    for field in ("qs", "qh"):
        if field in row.record.names:
            blocks[field] = rng.integers(0, 256, blocks[field].shape)
    raw = blocks.view(np.uint8)
    shape = (3, 37 * 32)
    assert np.array_equal(onnx_light_to_gguf(gguf_to_onnx_light(raw, name, shape), None, name)[1], raw)
    write(tmp_path / "m.gguf", [("m", raw.reshape(3, -1), Q[name])])
    assert cli("convert", "m.gguf", "--to", "onnx-light", "-o", "m.onnx", cwd=tmp_path).returncode == 0
    assert cli("convert", "m.onnx", "--to", "gguf", "-o", "back.gguf", cwd=tmp_path).returncode == 0
    assert (tmp_path / "back.gguf").read_bytes() == (tmp_path / "m.gguf").read_bytes()


def test_empty_tensors_go_to_hrry_and_back(tmp_path):
    """Tensors of no elements (a first dimension of 0) of a block type, a K-quant and F32: the
    .hrry goes back to the same GGUF (the bytes' shape was taken from the data, exit 4)."""
    write(tmp_path / "e.gguf", [("a", np.zeros((0, 18), np.uint8), Q.Q4_0), ("k", np.zeros((0, 210), np.uint8), Q.Q6_K),
                                ("f", np.zeros((0, 3), np.float32), None), ("g", np.ones(3, np.float32), None)])
    assert cli("convert", "e.gguf", "-o", "e.hrry", "--private-schemes", cwd=tmp_path).returncode == 0
    done = cli("convert", "e.hrry", "--to", "gguf", "-o", "b.gguf", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "b.gguf").read_bytes() == (tmp_path / "e.gguf").read_bytes()
