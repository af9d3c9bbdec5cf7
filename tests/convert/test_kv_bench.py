"""``bench --kv``: the files it writes convert to what gguf-py and safetensors read in them (values
equal to GGUFReader's), every timed command runs in its own process and is reported with its ratio
(small sizes; no assertion on the times themselves)."""

from __future__ import annotations

import io
import subprocess
import sys

import gguf
import numpy as np

import hurray_decl as hd
from hurray_decl.convert import kv_bench


def test_the_files_convert_to_what_gguf_py_and_safetensors_read(tmp_path):
    from safetensors.numpy import load_file

    for kind, count in (("tokenizer", 1_001), ("strings", 997), ("entries", 301)):
        source = kv_bench.MAKERS[kind][0](tmp_path / f"{kind}.gguf", count)
        target = tmp_path / f"{kind}.hrry"
        argv = kv_bench.commands(kind, source, target)["convert"]
        assert subprocess.run(argv, capture_output=True).returncode == 0
        kv = hd.load_kv(target)
        reader = gguf.GGUFReader(str(source))
        keys = [k for k in reader.fields if not k.startswith("GGUF.")]
        assert [k for k in kv if not k.startswith("hurray_decl.")] == keys
        for key in keys:
            theirs = reader.fields[key].contents()
            if key == "tokenizer.ggml.scores":
                assert np.array_equal(np.asarray(kv[key]), np.asarray(theirs, np.float32).astype(np.float64))
            else:
                assert kv[key] == theirs, key
        counted = {"tokenizer": len(kv.get("tokenizer.ggml.tokens", [])), "strings": len(kv.get("bench.strings", [])),
                   "entries": sum(k.startswith("bench.") for k in kv)}
        assert counted[kind] == count, kind
    source = kv_bench.empty(tmp_path / "empty.safetensors", 503)
    assert subprocess.run(kv_bench.commands("empty", source, tmp_path / "empty.hrry")["convert"],
                          capture_output=True).returncode == 0
    with hd.open(tmp_path / "empty.hrry") as f:
        assert sorted(f) == sorted(load_file(str(source))) and f["t0000502"].shape == (0,)


def test_a_row_per_command_from_one_run():
    out = io.StringIO()
    results = kv_bench.run({"entries": 50, "empty": 20}, repeat=1, out=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("metadata at scale, each command in a fresh process: best of 1")
    assert [line.split()[3] for line in lines[2:]] == ["ls", "convert", "load_kv", "GGUFReader", "convert",
                                                       "load_file"]
    assert results["entries"]["figures"]["GGUFReader"]["ratio"] == 1.0
    assert all(f["seconds"] > 0 and f["peak"] > 0 for r in results.values() for f in r["figures"].values())
    assert sys.executable in kv_bench.commands("entries", "a.gguf", "a.hrry")["ls"]
