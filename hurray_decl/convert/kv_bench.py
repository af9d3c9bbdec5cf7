"""``hurray-decl bench --kv``: metadata at scale, each command in a fresh process as a user runs it,
as ratios to gguf-py and safetensors reading the same files, in the same run.

The files are written here by gguf-py's ``GGUFWriter`` and ``safetensors.numpy.save_file``:

* ``tokenizer``: the KV of a 262,144-token tokenizer (strings of 1 to 4-byte characters and empty
  ones, float32 scores, int32 token types) and one small tensor;
* ``strings``: one KV array of 1,000,000 strings;
* ``entries``: 200,000 KV entries (strings and uint32s);
* ``empty``: a safetensors file of 300,000 empty float32 tensors.

For each GGUF file: ``hurray-decl ls``, ``hurray-decl convert`` to ``.hrry`` and ``hd.load_kv`` of the
result, each in its own interpreter, against ``gguf.GGUFReader`` reading every field's values
(``contents()``); for the safetensors file, ``convert`` against ``safetensors.numpy.load_file``. Each
figure is the fastest of ``repeat`` rounds (the commands run in turn each round), wall time of the
whole process, and its peak resident size (``wait4``'s ``ru_maxrss``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

SIZES = {"tokenizer": 262_144, "strings": 1_000_000, "entries": 200_000, "empty": 300_000}
"""Each file's count (tokens, strings, KV entries, tensors) in the acceptance figures."""


def _gguf(path: Path, kv: Callable[[Any], None]) -> Path:
    import gguf

    writer = gguf.GGUFWriter(str(path), "bench")
    kv(writer)
    writer.add_tensor("w", np.ones((2, 32), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def tokenizer(path: Path, tokens: int) -> Path:
    pieces = ["", "\u00e9", "\u4e2d\u6587", "\U0001f600", "\u2581the"]
    rng = np.random.default_rng(7)

    def kv(w: Any) -> None:
        w.add_tokenizer_model("llama")
        w.add_token_list([f"t{i}" + pieces[i % 5] if i % 97 else "" for i in range(tokens)])
        w.add_token_scores(rng.standard_normal(tokens).astype(np.float32).tolist())
        w.add_token_types((np.arange(tokens) % 6).astype(np.int32).tolist())

    return _gguf(path, kv)


def strings(path: Path, count: int) -> Path:
    return _gguf(path, lambda w: w.add_array("bench.strings", [f"s{i}" for i in range(count)]))


def entries(path: Path, count: int) -> Path:
    def kv(w: Any) -> None:
        for i in range(count):
            if i % 2:
                w.add_uint32(f"bench.{i:07d}", i)
            else:
                w.add_string(f"bench.{i:07d}", f"v{i}")

    return _gguf(path, kv)


def empty(path: Path, count: int) -> Path:
    from safetensors.numpy import save_file

    save_file({f"t{i:07d}": np.zeros((0,), np.float32) for i in range(count)}, str(path))
    return path


MAKERS = {"tokenizer": (tokenizer, "gguf"), "strings": (strings, "gguf"), "entries": (entries, "gguf"),
          "empty": (empty, "safetensors")}


def timed(argv: Sequence[str]) -> tuple[float, int]:
    """Wall seconds and peak resident bytes of one process running ``argv`` (its output discarded)."""
    start = time.perf_counter()
    process = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    error = process.stderr.read().decode(errors="replace") if process.stderr else ""
    if status:
        raise RuntimeError(f"{' '.join(argv)} failed: {error.strip()}")
    return elapsed, usage.ru_maxrss * 1024


def commands(kind: str, source: Path, target: Path) -> dict[str, list[str]]:
    """The timed commands of one file, by label (ours first, the baseline last)."""
    python = [sys.executable]
    ours = [*python, "-m", "hurray_decl"]
    if kind == "empty":
        return {"convert": [*ours, "convert", str(source), "-o", str(target)],
                "load_file": [*python, "-c", "import sys; from safetensors.numpy import load_file; "
                              "load_file(sys.argv[1])", str(source)]}
    return {"ls": [*ours, "ls", str(source)],
            "convert": [*ours, "convert", str(source), "-o", str(target)],
            "load_kv": [*python, "-c", "import sys, hurray_decl as hd; hd.load_kv(sys.argv[1])", str(target)],
            "GGUFReader": [*python, "-c", "import sys, gguf; r = gguf.GGUFReader(sys.argv[1]); "
                           "[f.contents() for f in r.fields.values()]", str(source)]}


def run(sizes: dict[str, int] | None = None, repeat: int = 3, out: TextIO | None = None) -> dict[str, Any]:
    """Write the files, time every command; print a table to ``out`` when given; return the figures."""
    chosen = SIZES if sizes is None else sizes
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="hurray-kv-bench-") as folder:
        for kind, count in chosen.items():
            make, suffix = MAKERS[kind]
            source = make(Path(folder) / f"{kind}.{suffix}", count)
            target = Path(folder) / f"{kind}.hrry"
            runs = commands(kind, source, target)
            best: dict[str, tuple[float, int]] = {}
            for _ in range(repeat):
                for label, argv in runs.items():
                    if label == "convert" and target.exists():
                        target.unlink()
                    seconds, peak = timed(argv)
                    if label not in best or seconds < best[label][0]:
                        best[label] = (seconds, peak)
            baseline = "load_file" if kind == "empty" else "GGUFReader"
            results[kind] = {"count": count, "bytes": source.stat().st_size,
                             "figures": {label: {"seconds": s, "peak": p, "ratio": s / best[baseline][0]}
                                         for label, (s, p) in best.items()}}
    if out is not None:
        report(results, repeat, out)
    return results


def report(results: dict[str, Any], repeat: int, out: TextIO) -> None:
    print(f"metadata at scale, each command in a fresh process: best of {repeat}, wall time, peak RSS, "
          "ratios to gguf-py's GGUFReader (GGUF) or safetensors' load_file in the same run", file=out)
    print(f"{'file':>10} {'count':>9} {'MB':>6}  {'command':<11} {'s':>7} {'RSS MB':>7} {'ratio':>7}", file=out)
    for kind, r in results.items():
        for label, f in r["figures"].items():
            print(f"{kind:>10} {r['count']:>9} {r['bytes'] / 1e6:>6.1f}  {label:<11} {f['seconds']:>7.2f} "
                  f"{f['peak'] / 2**20:>7.0f} {f['ratio']:>6.2f}x", file=out)


__all__ = ["MAKERS", "SIZES", "commands", "empty", "entries", "report", "run", "strings", "timed", "tokenizer"]
