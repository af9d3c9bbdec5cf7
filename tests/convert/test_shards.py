"""Sharded safetensors models read through their index as one model: ``convert`` of the index
writes what ``convert`` of the unsplit model writes; a missing shard, an index naming a tensor
its shard lacks, a tensor in two shards, a bad index and disagreeing shard metadata are refused
by their rules before anything is written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

pytest.importorskip("safetensors")
from safetensors.numpy import save_file

import hurray_decl as hd
from hurray_decl.convert.safetensors import open_safetensors
from hurray_decl.errors import HurrayDeclError
from tests.helpers import measured, run_cli as cli

INDEX = "model.safetensors.index.json"



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
    same_as_container(tmp_path / INDEX, tmp_path / "split.hrry")
    listed = cli("ls", INDEX, "--format", "json", cwd=tmp_path)  # ls of the index: the model's tensors
    assert listed.returncode == 0, listed.stderr
    unsplit = json.loads(cli("ls", "whole.safetensors", "--format", "json", cwd=tmp_path).stdout)["tensors"]
    rows = json.loads(listed.stdout)["tensors"]
    assert sorted(rows, key=lambda r: r["name"]) == sorted(unsplit, key=lambda r: r["name"]) and len(rows) == 16
    assert {r["name"]: r["type"] for r in rows}["embed"] == "BF16"


def same_as_container(source: Path, container: Path) -> None:
    """``hd.open(source)`` gives what ``convert source -o container`` wrote: the same names in the
    same order, descriptors, buffer bytes and KV; ``hd.load`` and ``hd.load_kv`` too."""
    with hd.open(source) as opened, hd.open(container) as written:
        assert list(opened) == list(written) and len(opened) == len(written) > 0
        for name in written:
            assert opened[name].descriptor == written[name].descriptor, name
            assert [bytes(b) for b in opened[name].buffers] == [bytes(b) for b in written[name].buffers], name
        assert opened.kv == written.kv
        with pytest.raises(KeyError):
            opened["no such tensor"]
    with pytest.raises(HurrayDeclError):
        opened[next(iter(written.names))]  # closed
    assert list(hd.load(source)) == list(written.names) and hd.load_kv(source) == hd.load_kv(container)


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
    listed = cli("ls", INDEX, cwd=tmp_path)
    assert listed.returncode == 1 and f"[{rule}]" in listed.stderr and "Traceback" not in listed.stderr
    for opener in (open_safetensors, hd.open, hd.load):
        with pytest.raises(HurrayDeclError) as caught:
            opener(tmp_path / INDEX)
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


# ---------------------------------------------------------------- GGUF splits

def gguf_model(path: Path, *, split_max_tensors: int = 0) -> list[Path]:
    """A small model of Q4_0, Q8_0, F16 and F32 tensors written by gguf-py, split by its own
    writer when ``split_max_tensors`` is set (names ``<stem>-%05d-of-%05d.gguf``)."""
    import gguf

    rng = np.random.default_rng(7)
    writer = gguf.GGUFWriter(str(path), "llama", split_max_tensors=split_max_tensors)
    writer.add_block_count(3)
    writer.add_string("general.name", "split test")
    writer.add_array("tokenizer.ggml.scores", [0.5, -1.0, 2.25])
    for i, kind in enumerate([gguf.GGMLQuantizationType.Q4_0, gguf.GGMLQuantizationType.Q8_0,
                              gguf.GGMLQuantizationType.F16, gguf.GGMLQuantizationType.F32] * 2):
        values = rng.standard_normal((3 + i, 64)).astype(np.float32)
        if kind == gguf.GGMLQuantizationType.F32:
            writer.add_tensor(f"blk.{i}.w", values)
        else:
            raw = gguf.quants.quantize(values, kind)
            writer.add_tensor(f"blk.{i}.w", raw, raw_dtype=kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return sorted(path.parent.glob(f"{path.stem}-*-of-*.gguf")) or [path]


def test_three_gguf_splits_convert_as_the_unsplit_model(tmp_path):
    (tmp_path / "whole").mkdir()
    (tmp_path / "split").mkdir()
    gguf_model(tmp_path / "whole" / "m.gguf")
    splits = gguf_model(tmp_path / "split" / "m.gguf", split_max_tensors=3)
    assert [p.name for p in splits] == [f"m-0000{k}-of-00003.gguf" for k in (1, 2, 3)]
    whole = cli("convert", "whole/m.gguf", "-o", "whole.hrry", cwd=tmp_path)
    for start in (splits[0], splits[2]):  # any split names the model
        split = cli("convert", str(start), "-o", "split.hrry", cwd=tmp_path)
        assert whole.returncode == 0 and split.returncode == 0, whole.stderr + split.stderr
        assert "8 converted" in split.stdout
        assert (tmp_path / "whole.hrry").read_bytes() == (tmp_path / "split.hrry").read_bytes()
        same_as_container(start, tmp_path / "whole.hrry")  # hd.open of any split: the model
    listed = cli("ls", str(splits[1]), "--format", "json", cwd=tmp_path)  # ls of any split: the model's tensors
    assert listed.returncode == 0, listed.stderr
    unsplit = json.loads(cli("ls", "whole/m.gguf", "--format", "json", cwd=tmp_path).stdout)
    assert json.loads(listed.stdout)["tensors"] == unsplit["tensors"] and len(unsplit["tensors"]) == 8


def test_gguf_split_refusals(tmp_path):
    from hurray_decl.convert.gguf import read_gguf_model

    splits = gguf_model(tmp_path / "m.gguf", split_max_tensors=3)
    moved = splits[1].rename(tmp_path / "aside.gguf")
    with pytest.raises(HurrayDeclError) as caught:
        read_gguf_model(splits[0])
    assert caught.value.code == "CV-SHD-01"
    with pytest.raises(HurrayDeclError) as caught:
        hd.open(splits[2])
    assert caught.value.code == "CV-SHD-01"
    done = cli("convert", splits[0].name, "-o", "out.hrry", cwd=tmp_path)
    assert done.returncode == 1 and "[CV-SHD-01]" in done.stderr and not (tmp_path / "out.hrry").exists()
    moved.rename(splits[1])
    renamed = splits[0].rename(tmp_path / "first.gguf")  # a split named otherwise: its others cannot be found
    with pytest.raises(HurrayDeclError) as caught:
        read_gguf_model(renamed)
    assert caught.value.code == "CV-SHD-01"
    renamed.rename(splits[0])
    splits[2].write_bytes(splits[1].read_bytes())  # split 2 where split 3 belongs: its split.no says 1
    with pytest.raises(HurrayDeclError) as caught:
        read_gguf_model(splits[0])
    assert caught.value.code == "CV-SHD-05"


def test_gguf_splits_holding_one_tensor_twice_or_too_few_are_refused(tmp_path):
    import gguf

    def split(path: Path, no: int, names: list[str], total: int) -> None:
        writer = gguf.GGUFWriter(str(path), "llama")
        for key, value, kind in (("split.no", no, gguf.GGUFValueType.UINT16),
                                 ("split.count", 2, gguf.GGUFValueType.UINT16),
                                 ("split.tensors.count", total, gguf.GGUFValueType.INT32)):
            writer.add_key_value(key, value, kind)
        for name in names:
            writer.add_tensor(name, np.ones((2, 32), np.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()

    from hurray_decl.convert.gguf import read_gguf_model

    first, second = tmp_path / "m-00001-of-00002.gguf", tmp_path / "m-00002-of-00002.gguf"
    split(first, 0, ["a", "b"], 3)
    split(second, 1, ["b"], 3)
    for opener in (read_gguf_model, hd.open):
        with pytest.raises(HurrayDeclError) as caught:
            opener(first)
        assert caught.value.code == "CV-SHD-03"
    for total in (4, 3):  # both say 4 while they hold 3; then the first says 3 and the second 4
        split(second, 1, ["c"], 4)
        split(first, 0, ["a", "b"], total)
        with pytest.raises(HurrayDeclError) as caught:
            read_gguf_model(first)
        assert caught.value.code == "CV-SHD-05"
    split(first, 0, ["a", "b"], 3)
    split(second, 1, ["c"], 3)
    assert [t.name for t in read_gguf_model(second).tensors] == ["a", "b", "c"]


# ---------------------------------------------------------------- memory

MIB = 1 << 20


def test_converting_shards_and_splits_holds_one_tensor_at_a_time(tmp_path):
    """``convert`` of a 5-shard safetensors model (10 float32 tensors of 32 MiB, 320 MiB) and of
    a 3-split GGUF (12 F32 tensors of 16 MiB, 192 MiB) peaks at most at the largest tensor x 2
    + 128 MiB (ru_maxrss of the converting process alone), less than either model: the shards
    and splits are read one tensor at a time; every tensor is in the container."""
    import gguf

    rows = 32 * MIB // 4 // 1024
    weight_map = {}
    for k in range(5):  # each shard written from its own two arrays, so this test holds 64 MiB at a time
        file = f"model-{k + 1:05d}-of-00005.safetensors"
        part = {f"layers.{2 * k + j}.w": np.full((rows, 1024), 2 * k + j, np.float32) for j in range(2)}
        save_file(part, str(tmp_path / file))
        weight_map.update(dict.fromkeys(part, file))
    (tmp_path / INDEX).write_text(json.dumps({"weight_map": weight_map}))
    writer = gguf.GGUFWriter(str(tmp_path / "m.gguf"), "llama", split_max_tensors=4)
    for i in range(12):
        writer.add_tensor(f"blk.{i}.w", np.full((rows // 2, 1024), i, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    del writer
    for source, largest, total, count in ((INDEX, 32 * MIB, 320 * MIB, 10), ("m-00001-of-00003.gguf", 16 * MIB,
                                                                            192 * MIB, 12)):
        bound = 2 * largest + 128 * MIB
        assert total > bound  # a reader holding the model could not pass
        run = measured(sys.executable, "-m", "hurray_decl", "convert", source, "-o", "out.hrry", cwd=tmp_path)
        assert run["rc"] == 0, run["err"]
        assert run["peak"] <= bound, f"{source}: peak {run['peak'] / MIB:.1f} MiB > {bound / MIB:.0f} MiB"
        with hd.open(tmp_path / "out.hrry") as written:
            assert len(written) == count
            last = written[list(written)[-1]]
            assert np.asarray(last)[-1, -1] == count - 1 and last.shape[1] == 1024


# ---------------------------------------------------------------- fuzzing the index

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=10)


@settings(max_examples=60)
@example(index=b'{"weight_map": {"a": "model-00001-of-00001.safetensors"}}')
@example(index=b'{"weight_map": {"a": "/etc/passwd"}}')
@given(index=st.binary(max_size=200) | JSON.map(lambda v: json.dumps(v).encode())
       | st.dictionaries(st.sampled_from(["weight_map", "metadata"]), JSON).map(lambda v: json.dumps(v).encode()))
def test_any_index_bytes_give_a_model_or_a_rule(tmp_path_factory, index):
    folder = tmp_path_factory.mktemp("index")
    save_file({"a": np.ones(3, np.float32)}, str(folder / "model-00001-of-00001.safetensors"))
    (folder / INDEX).write_bytes(index)
    try:
        with open_safetensors(folder / INDEX) as opened:
            assert opened.names in ([], ["a"])  # an empty weight_map is a model of no tensors
    except HurrayDeclError as err:
        assert err.code.startswith("CV-SHD-"), err


# ---------------------------------------------------------------- writing shards

def test_split_max_size_writes_shards_the_safetensors_package_reads(tmp_path):
    from safetensors import safe_open

    model = tensors()
    hd.save(tmp_path / "m.hrry", model, kv={"format": "pt"})
    done = cli("convert", "m.hrry", "--to", "safetensors", "--split-max-size", "64K", "-o", "out.safetensors",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    index = json.loads((tmp_path / "out.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    count = len(shards)
    assert count > 2 and shards == [f"out-{k:05d}-of-{count:05d}.safetensors" for k in range(1, count + 1)]
    assert index["metadata"]["total_size"] == sum(v.nbytes for v in model.values())
    seen = {}
    for file in shards:
        with safe_open(str(tmp_path / file), framework="numpy") as opened:  # the package's own reader
            assert opened.metadata() == {"format": "pt"}
            data = sum(opened.get_tensor(n).nbytes for n in opened.keys())
            assert data <= 64_000 or len(list(opened.keys())) == 1  # one tensor larger than the limit: alone
            for name in opened.keys():
                assert index["weight_map"][name] == file
                seen[name] = opened.get_tensor(name)
    assert sorted(seen) == sorted(model)
    for name, values in model.items():
        assert seen[name].tobytes() == values.tobytes(), name
    back = cli("convert", "out.safetensors.index.json", "-o", "back.hrry", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    loaded = hd.load(tmp_path / "back.hrry")
    assert {n: np.asarray(t).tobytes() for n, t in loaded.items()} == {n: v.tobytes() for n, v in model.items()}
    assert hd.load_kv(tmp_path / "back.hrry") == {"format": "pt"}


@pytest.mark.parametrize("argv", [["m.hrry", "--split-max-size", "1M", "-o", "x.hrry"],
                                  ["m.safetensors", "--split-max-size", "1M", "-o", "x.hrry"],
                                  ["m.hrry", "--to", "safetensors", "--split-max-size", "12Q", "-o", "x.safetensors"]])
def test_split_max_size_is_for_safetensors_output(tmp_path, argv):
    hd.save(tmp_path / "m.hrry", {"w": np.ones(3, np.float32)})
    save_file({"w": np.ones(3, np.float32)}, str(tmp_path / "m.safetensors"))
    done = cli("convert", *argv, cwd=tmp_path)
    assert done.returncode == 2 and "--split-max-size" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "x.hrry").exists() and not (tmp_path / "x.safetensors").exists()


def test_split_max_size_writes_gguf_splits_gguf_py_reads(tmp_path):
    import gguf

    gguf_model(tmp_path / "m.gguf")
    assert cli("convert", "m.gguf", "-o", "m.hrry", cwd=tmp_path).returncode == 0
    done = cli("convert", "m.hrry", "--to", "gguf", "--split-max-size", "2K", "-o", "out.gguf", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    splits = sorted(tmp_path.glob("out-*-of-*.gguf"))
    count = len(splits)
    assert count > 2 and [p.name for p in splits] == [f"out-{k:05d}-of-{count:05d}.gguf" for k in range(1, count + 1)]
    assert not (tmp_path / "out.gguf").exists() and not list(tmp_path.glob(".hurray-decl-splits-*"))
    original = {t.name: bytes(t.data.tobytes()) for t in gguf.GGUFReader(str(tmp_path / "m.gguf")).tensors}
    seen = {}
    for k, path in enumerate(splits):
        reader = gguf.GGUFReader(str(path))  # gguf-py's own reader
        assert reader.fields["split.no"].parts[-1][0] == k and reader.fields["split.count"].parts[-1][0] == count
        data = {t.name: bytes(t.data.tobytes()) for t in reader.tensors}
        assert sum(map(len, data.values())) <= 2000 or len(data) == 1  # a larger tensor alone
        seen.update(data)
    assert seen == original
    back = cli("convert", splits[0].name, "-o", "back.hrry", cwd=tmp_path)
    assert back.returncode == 0, back.stderr
    assert (tmp_path / "back.hrry").read_bytes() == (tmp_path / "m.hrry").read_bytes()
