"""``hurray-decl bench --open``: opening a ``.hrry`` file and reading its first tensor, and reading its
KV metadata, as ratios to safetensors' ``safe_open`` + ``get_tensor`` and ``safe_open(...).metadata()``
on the same tensors, measured in the same run.

For each tensor count (default 10, 1,000, 10,000 and 100,000), the same float32[4] tensors and one
metadata entry are written by :func:`hurray_decl.save` and by ``safetensors.numpy.save_file`` to a
temporary folder; then, ``repeat`` rounds, each of the four reads runs in turn (so that a change
in the machine's load falls on all of them) and each keeps its fastest run. The files are warm in
the page cache; the first tensor's values are read (``numpy()``), so that nothing is left lazy.
:func:`hurray_decl.save` writes files of many tensors slowly (100,000 take minutes): ``--counts``
picks others.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from hurray_decl.hurray.bench import interleaved
from hurray_decl.hurray.files import load_kv, open_file, save

COUNTS = (10, 1_000, 10_000, 100_000)
"""The tensor counts of the acceptance figures (issue 35)."""


def files(folder: Path, count: int) -> tuple[Path, Path]:
    """The ``.hrry`` and safetensors files of ``count`` float32[4] tensors (tensor i holds i) in ``folder``."""
    from safetensors.numpy import save_file

    tensors = {f"t{i:06d}": np.full(4, i, dtype=np.float32) for i in range(count)}
    ours, theirs = folder / f"{count}.hrry", folder / f"{count}.safetensors"
    save(ours, tensors, {"source": "bench"})
    save_file(tensors, str(theirs), metadata={"source": "bench"})
    return ours, theirs


def works(ours: Path, theirs: Path) -> dict[str, Callable[[], object]]:
    """The four reads of one pair of files, by label."""
    from safetensors import safe_open

    def open_ours() -> object:
        with open_file(ours) as f:
            return f["t000000"].numpy()

    def open_theirs() -> object:
        with safe_open(str(theirs), "np") as f:
            return f.get_tensor("t000000")

    def kv_theirs() -> object:
        with safe_open(str(theirs), "np") as f:
            return f.metadata()

    return {"open": open_ours, "safe_open": open_theirs, "load_kv": lambda: load_kv(ours), "metadata": kv_theirs}


def run(counts: Sequence[int] = COUNTS, repeat: int = 5, out: TextIO | None = None) -> dict[int, dict[str, Any]]:
    """Measure every count; print a table to ``out`` when given; return the figures (seconds, ratios)."""
    results: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="hurray-open-bench-") as folder:
        for count in counts:
            ours, theirs = files(Path(folder), count)
            best = interleaved(repeat, works(ours, theirs))
            results[count] = {**best, "open_ratio": best["open"] / best["safe_open"],
                              "kv_ratio": best["load_kv"] / best["metadata"]}
            ours.unlink()
            theirs.unlink()
    if out is not None:
        report(results, repeat, out)
    return results


def report(results: dict[int, dict[str, Any]], repeat: int, out: TextIO) -> None:
    print(f"open + first tensor, and KV metadata: best of {repeat}, ratios to safetensors in the same run", file=out)
    print(f"{'tensors':>9}  {'open ms':>9}  {'safe_open ms':>12}  {'ratio':>6}  {'load_kv ms':>10}  "
          f"{'metadata ms':>11}  {'ratio':>6}", file=out)
    for count, r in results.items():
        print(f"{count:>9}  {r['open'] * 1e3:>9.2f}  {r['safe_open'] * 1e3:>12.2f}  {r['open_ratio']:>5.1f}x  "
              f"{r['load_kv'] * 1e3:>10.2f}  {r['metadata'] * 1e3:>11.2f}  {r['kv_ratio']:>5.1f}x", file=out)


__all__ = ["COUNTS", "files", "report", "run", "works"]
