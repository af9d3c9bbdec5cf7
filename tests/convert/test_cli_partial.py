"""Nothing lost without an error: a tensor that does not convert means no output and exit 1,
unless ``--partial`` is given, and then the summary, the ``--json`` report and the output's KV
name what is missing (issue 33, acceptance 2).

The model is llama-shaped, 66 tensors written by gguf's ``GGUFWriter`` (norms F32, the layers'
matrices Q4_0 / Q8_0 / Q5_0 from ``gguf.quants.quantize``) with a Q6_K ``output.weight`` (blocks as
llama.cpp's quantizer lays them out: gguf-py has no Q6_K quantizer), which Hurray has no public
scheme for.
"""

from __future__ import annotations

import json

import gguf
import numpy as np
import pytest

import hurray_decl as hd
from hurray_decl.convert.metadata import MISSING_TENSORS_KEY
from hurray_decl.hurray.container import read_container
from hurray_decl.hurray.quantization import register_project_schemes
from tests.convert.test_cli_convert import cli
from tests.convert.test_gguf_write import canonical_k

Q = gguf.GGMLQuantizationType
EMBED, VOCAB, LAYERS = 256, 48, 7
HEAD = "output.weight"


def llama(path, rng) -> dict[str, np.ndarray]:
    """A 66-tensor llama GGUF at ``path``; returns gguf's own dequantized values of each tensor."""
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_block_count(LAYERS)
    writer.add_embedding_length(EMBED)
    values = {}

    def quantized(name: str, shape: tuple[int, ...], kind: Q) -> None:
        blocks = gguf.quants.quantize(rng.standard_normal(shape).astype(np.float32), kind)
        writer.add_tensor(name, blocks, raw_dtype=kind)
        values[name] = gguf.quants.dequantize(blocks, kind)

    def plain(name: str) -> None:
        x = rng.standard_normal(EMBED).astype(np.float32)
        writer.add_tensor(name, x)
        values[name] = x

    quantized("token_embd.weight", (VOCAB, EMBED), Q.Q8_0)
    for i in range(LAYERS):
        plain(f"blk.{i}.attn_norm.weight")
        for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
            quantized(f"blk.{i}.{part}.weight", (EMBED, EMBED), Q.Q4_0)
        plain(f"blk.{i}.ffn_norm.weight")
        for part, kind in (("ffn_gate", Q.Q4_0), ("ffn_up", Q.Q4_0), ("ffn_down", Q.Q5_0)):
            quantized(f"blk.{i}.{part}.weight", (EMBED, EMBED), kind)
    plain("output_norm.weight")
    head = canonical_k(rng, "Q6_K", VOCAB).reshape(VOCAB, -1)
    writer.add_tensor(HEAD, head, raw_dtype=Q.Q6_K)
    values[HEAD] = gguf.quants.dequantize(head, Q.Q6_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return values


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llama")
    values = llama(folder / "m.gguf", np.random.default_rng(33))
    assert len(values) == 66
    return folder, values


def listing(folder) -> set[str]:
    return {p.name for p in folder.iterdir()}


def bits(a) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32).reshape(-1).view(np.uint32)


@pytest.mark.parametrize("output", ["m.hrry", "folder"])
def test_a_tensor_that_does_not_convert_means_nothing_written(model, tmp_path, output):
    folder, _ = model
    done = cli("convert", str(folder / "m.gguf"), "-o", str(tmp_path / output), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert listing(tmp_path) == set(), "nothing, not even a temporary, is left"
    lines = done.stdout.splitlines()
    refused = [line for line in lines if line.startswith("skipped")]
    assert len(refused) == 1 and HEAD in refused[0] and "Q6_K" in refused[0] and "HQ-EXT-04" in refused[0]
    assert "(converts with --private-schemes, --to onnx-light)" in refused[0]
    assert lines[-1] == ("65 converted, 1 skipped; nothing written: 1 tensor did not convert (--partial writes "
                         "the others)")


def test_the_json_report_of_a_refusal(model, tmp_path):
    folder, _ = model
    done = cli("convert", str(folder / "m.gguf"), "-o", str(tmp_path / "m.hrry"), "--json", cwd=tmp_path)
    assert done.returncode == 1 and listing(tmp_path) == set()
    report = json.loads(done.stdout)
    assert report["output"] is None and report["partial"] is False and report["missing"] == [HEAD]
    row = next(r for r in report["tensors"] if r["name"] == HEAD)
    assert row["code"] == "HQ-EXT-04" and row["type"] == "Q6_K" and "--to onnx-light" in row["converts_with"]


def test_partial_writes_the_others_and_says_what_is_missing(model, tmp_path):
    folder, values = model
    done = cli("convert", str(folder / "m.gguf"), "-o", str(tmp_path / "m.hrry"), "--partial", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = done.stdout.splitlines()[-1]
    assert summary.startswith(f"65 converted, 1 skipped; wrote the container {tmp_path / 'm.hrry'}")
    assert summary.endswith(f"a partial model: 1 tensor missing ({HEAD})")
    container = read_container(tmp_path / "m.hrry").validate()
    assert container.kv[MISSING_TENSORS_KEY].value == (f"HQ-EXT-04 Q6_K {HEAD}",)
    loaded = hd.load(str(tmp_path / "m.hrry"))
    assert set(loaded) == set(values) - {HEAD}
    for name in ("token_embd.weight", "blk.6.ffn_down.weight", "output_norm.weight"):
        assert np.array_equal(bits(loaded[name].numpy()), bits(values[name])), name
    report = json.loads(cli("convert", str(folder / "m.gguf"), "-o", str(tmp_path / "j.hrry"), "--partial",
                            "--json", cwd=tmp_path).stdout)
    assert report["partial"] is True and report["missing"] == [HEAD] and report["output"]


def test_a_partial_model_back_to_gguf_keeps_the_list(model, tmp_path):
    folder, values = model
    assert cli("convert", str(folder / "m.gguf"), "-o", str(tmp_path / "m.hrry"), "--partial",
               cwd=tmp_path).returncode == 0
    done = cli("convert", str(tmp_path / "m.hrry"), "--to", "gguf", "-o", str(tmp_path / "back.gguf"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    reader = gguf.GGUFReader(tmp_path / "back.gguf")
    field = reader.fields[MISSING_TENSORS_KEY]
    assert [bytes(field.parts[i]).decode() for i in field.data] == [f"HQ-EXT-04 Q6_K {HEAD}"]
    assert {t.name for t in reader.tensors} == set(values) - {HEAD}
    original = {t.name: t.data.tobytes() for t in gguf.GGUFReader(folder / "m.gguf").tensors}
    assert all(t.data.tobytes() == original[t.name] for t in reader.tensors)


def test_onnx_light_takes_every_tensor(model, tmp_path):
    folder, _ = model
    done = cli("convert", str(folder / "m.gguf"), "--to", "onnx-light", "-o", str(tmp_path / "m.onnx"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("66 converted, 0 skipped; wrote")


def test_a_refusal_on_the_way_to_gguf(tmp_path):
    """A .hrry whose tensor has no GGUF form (blocks along axis 0): exit 1 and no file; with
    --partial the GGUF's KV lists it."""
    from hurray_decl.hurray.container.writer import ContainerWriter

    rng = np.random.default_rng(3)
    tensors = {"ok": hd.Tensor.from_numpy(rng.standard_normal((3, 5)).astype(np.float32)),
               "axis0": hd.quantize(rng.standard_normal((64, 64)), "per_block_affine", axis=0, block_size=32,
                                    storage="int4", scale_type="float16")}
    with (tmp_path / "w.hrry").open("wb") as stream:
        writer = ContainerWriter(stream, tensor_count_hint=len(tensors))
        for name, t in tensors.items():
            writer.add(name, t.descriptor, t.buffers)
        writer.finish()
    done = cli("convert", "w.hrry", "--to", "gguf", "-o", "w.gguf", "--json", cwd=tmp_path)
    assert done.returncode == 1 and listing(tmp_path) == {"w.hrry"}
    report = json.loads(done.stdout)
    assert report["missing"] == ["axis0"] and report["output"] is None
    done = cli("convert", "w.hrry", "--to", "gguf", "-o", "w.gguf", "--partial", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    field = gguf.GGUFReader(tmp_path / "w.gguf").fields[MISSING_TENSORS_KEY]
    (entry,) = [bytes(field.parts[i]).decode() for i in field.data]
    code, kind, name = entry.split(" ")
    assert (kind, name) == ("hurray", "axis0") and code == report["tensors"][1]["code"]


def test_with_private_schemes_the_whole_model_comes_back(model, tmp_path):
    """The Q6_K head in the project's private scheme: every tensor converts, and the .hrry goes
    back to the very file, and the head's values are gguf's."""
    folder, values = model
    done = cli("convert", str(folder / "m.gguf"), "-o", str(tmp_path / "m.hrry"), "--private-schemes", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("66 converted, 0 skipped; wrote the container")
    register_project_schemes()  # this process reads the project's private scheme too
    container = read_container(tmp_path / "m.hrry").validate()
    assert MISSING_TENSORS_KEY not in container.kv
    assert np.array_equal(bits(hd.load(str(tmp_path / "m.hrry"))[HEAD].numpy()), bits(values[HEAD]))
    done = cli("convert", str(tmp_path / "m.hrry"), "--to", "gguf", "-o", str(tmp_path / "back.gguf"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "back.gguf").read_bytes() == (folder / "m.gguf").read_bytes()
