"""Sharded safetensors models read through their index as one model: ``convert`` of the index
writes what ``convert`` of the unsplit model writes; a missing shard, an index naming a tensor
its shard lacks, a tensor in two shards, a bad index and disagreeing shard metadata are refused
by their rules before anything is written."""

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
from hurray_decl.convert.safetensors import open_safetensors
from hurray_decl.errors import HurrayDeclError

ROOT = Path(__file__).resolve().parents[2]
INDEX = "model.safetensors.index.json"


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hurray_decl", *argv], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)


def tensors() -> dict[str, np.ndarray]:
    import ml_dtypes

    rng = np.random.default_rng(34)
    model = {f"layers.{i}.w": rng.standard_normal((7 + i, 13)).astype(np.float32) for i in range(12)}
    model["embed"] = rng.standard_normal((331, 307)).astype(ml_dtypes.bfloat16)  # 10^5 elements, odd shape
    model["norm"] = rng.standard_normal(307).astype(np.float16)
    model["ids"] = np.arange(-7, 8, dtype=np.int64)
    model["mask"] = np.array([True, False, True])
    return model


def shard(folder: Path, model: dict[str, np.ndarray], count: int = 5, metadata=None) -> dict[str, str]:
    """The model in ``count`` shards named as Hugging Face names them, and their index."""
    weight_map = {}
    names = sorted(model)
    for k in range(count):
        part = {name: model[name] for name in names[k::count]}
        file = f"model-{k + 1:05d}-of-{count:05d}.safetensors"
        save_file(part, str(folder / file), metadata=metadata or {"format": "pt"})
        weight_map.update(dict.fromkeys(part, file))
    index = {"metadata": {"total_size": sum(v.nbytes for v in model.values()), "note": "kept"},
             "weight_map": weight_map}
    (folder / INDEX).write_text(json.dumps(index))
    return weight_map


def test_five_shards_convert_as_the_unsplit_model(tmp_path):
    model = tensors()
    save_file(model, str(tmp_path / "whole.safetensors"), metadata={"format": "pt"})
    shard(tmp_path, model)
    whole = cli("convert", "whole.safetensors", "-o", "whole.hrry", cwd=tmp_path)
    split = cli("convert", INDEX, "-o", "split.hrry", "--json", cwd=tmp_path)
    assert whole.returncode == 0 and split.returncode == 0, whole.stderr + split.stderr
    assert sorted(r["name"] for r in json.loads(split.stdout)["tensors"]) == sorted(model)
    a, b = hd.load(tmp_path / "whole.hrry"), hd.load(tmp_path / "split.hrry")
    assert sorted(a) == sorted(b) == sorted(model)
    for name in model:
        assert a[name].descriptor == b[name].descriptor, name
        assert [bytes(x) for x in a[name].buffers] == [bytes(x) for x in b[name].buffers], name
        assert np.asarray(b[name]).tobytes() == model[name].tobytes(), name
    assert hd.load_kv(tmp_path / "whole.hrry") == {"format": "pt"}
    assert hd.load_kv(tmp_path / "split.hrry") == {"format": "pt", "safetensors.index.note": "kept"}


def test_the_shards_are_read_one_at_a_time(tmp_path):
    model = tensors()
    weight_map = shard(tmp_path, model)
    with open_safetensors(tmp_path / INDEX) as opened:
        assert set(opened.names) == set(model) and opened.metadata["format"] == "pt"
        for name in opened.names:
            assert opened.array(name).tobytes() == model[name].tobytes()
            assert opened.open_shard == weight_map[name]


def refused(tmp_path: Path, rule: str) -> None:
    done = cli("convert", INDEX, "-o", "out.hrry", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"[{rule}]" in done.stderr, done.stderr
    assert not (tmp_path / "out.hrry").exists()
    with pytest.raises(HurrayDeclError) as caught:
        open_safetensors(tmp_path / INDEX)
    assert caught.value.code == rule


def test_a_missing_shard_is_refused(tmp_path):
    shard(tmp_path, tensors())
    (tmp_path / "model-00003-of-00005.safetensors").unlink()
    refused(tmp_path, "CV-SHD-01")


def test_an_index_naming_an_absent_tensor_is_refused(tmp_path):
    shard(tmp_path, tensors())
    index = json.loads((tmp_path / INDEX).read_text())
    index["weight_map"]["lm_head.weight"] = "model-00002-of-00005.safetensors"
    (tmp_path / INDEX).write_text(json.dumps(index))
    refused(tmp_path, "CV-SHD-02")


def test_two_shards_holding_one_tensor_are_refused(tmp_path):
    model = tensors()
    weight_map = shard(tmp_path, model)
    other = next(f for f in sorted(set(weight_map.values())) if f != weight_map["norm"])
    held = {n: model[n] for n, f in weight_map.items() if f == other}
    save_file({**held, "norm": model["norm"]}, str(tmp_path / other), metadata={"format": "pt"})
    refused(tmp_path, "CV-SHD-03")


def test_a_tensor_the_index_does_not_list_is_refused(tmp_path):
    shard(tmp_path, tensors())
    index = json.loads((tmp_path / INDEX).read_text())
    del index["weight_map"]["norm"]
    (tmp_path / INDEX).write_text(json.dumps(index))
    refused(tmp_path, "CV-SHD-03")


@pytest.mark.parametrize("index", [b"not json", b"[]", b'{"weight_map": {"x": "../model.safetensors"}}',
                                   b'{"weight_map": {"x": 3}}', b'{"weight_map": {}, "metadata": [1]}'])
def test_an_index_that_is_not_one_is_refused(tmp_path, index):
    (tmp_path / INDEX).write_bytes(index)
    refused(tmp_path, "CV-SHD-04")


def test_shards_whose_metadata_disagree_are_refused(tmp_path):
    model = tensors()
    weight_map = shard(tmp_path, model)
    first = sorted(set(weight_map.values()))[0]
    save_file({n: model[n] for n, f in weight_map.items() if f == first}, str(tmp_path / first),
              metadata={"format": "np"})
    refused(tmp_path, "CV-SHD-06")
