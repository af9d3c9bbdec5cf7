"""``hurray-decl bench --save``: :func:`hurray_decl.save` of 64 MB in 8 float32 tensors as ratios to
pyhurray's ``hurray.save`` and ``safetensors.numpy.save_file`` of the same arrays, in the same run.

Each round writes the three files in turn to a temporary folder (so that a change in the machine's
load falls on all of them) and each keeps its fastest round; the previous round's file is removed
before each write, outside the time, so that no writer pays for freeing the blocks of the file it
replaces. pyhurray is given its own tensors (``hurray.from_numpy`` of the arrays, made once), the
others the NumPy arrays.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from hurray_decl.hurray.files import save

TENSORS = 8
ELEMENTS = 2 * 1024 * 1024
"""8 float32 tensors of 2^21 elements: 64 MiB."""


def arrays(count: int = TENSORS, elements: int = ELEMENTS) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {f"w{i}": rng.standard_normal(elements, dtype=np.float32).reshape(-1, 1024) for i in range(count)}


def works(folder: Path, tensors: dict[str, np.ndarray]) -> dict[str, tuple[Path, Callable[[], object]]]:
    """The three writes, by label, each with the file it writes."""
    from safetensors.numpy import save_file

    targets = {label: folder / f"{label}.{suffix}" for label, suffix in
               (("save", "hrry"), ("pyhurray", "hrry"), ("save_file", "safetensors"))}
    chosen: dict[str, tuple[Path, Callable[[], object]]] = {
        "save": (targets["save"], lambda: save(targets["save"], tensors)),
        "save_file": (targets["save_file"], lambda: save_file(tensors, str(targets["save_file"]))),
    }
    try:
        import hurray  # type: ignore[import-untyped]  # pyhurray
    except ImportError:
        return chosen
    theirs = {name: hurray.from_numpy(array) for name, array in tensors.items()}
    chosen["pyhurray"] = (targets["pyhurray"], lambda: hurray.save(str(targets["pyhurray"]), theirs))
    return chosen


def run(repeat: int = 5, out: TextIO | None = None, count: int = TENSORS,
        elements: int = ELEMENTS) -> dict[str, Any]:
    """Time the writes; print a table to ``out`` when given; return the figures (seconds, ratios)."""
    tensors = arrays(count, elements)
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="hurray-save-bench-") as folder:
        chosen = works(Path(folder), tensors)
        for _ in range(repeat):
            for label, (target, work) in chosen.items():
                if target.exists():
                    os.unlink(target)
                start = time.perf_counter()
                work()
                best[label] = min(best.get(label, float("inf")), time.perf_counter() - start)
    result: dict[str, Any] = {**best, "tensors": count, "bytes": count * elements * 4,
                              "save_file_ratio": best["save"] / best["save_file"]}
    if "pyhurray" in best:
        result["pyhurray_ratio"] = best["save"] / best["pyhurray"]
    if out is not None:
        report(result, repeat, out)
    return result


def report(result: dict[str, Any], repeat: int, out: TextIO) -> None:
    print(f"save of {result['bytes'] / 2**20:.0f} MiB in {result['tensors']} float32 tensors: best of {repeat}, "
          f"ratios in the same run", file=out)
    print(f"  hurray_decl.save          {result['save'] * 1e3:9.1f} ms", file=out)
    if "pyhurray" in result:
        print(f"  pyhurray hurray.save      {result['pyhurray'] * 1e3:9.1f} ms   ratio {result['pyhurray_ratio']:.2f}x",
              file=out)
    else:
        print("  pyhurray hurray.save      (pyhurray is not installed)", file=out)
    print(f"  safetensors save_file     {result['save_file'] * 1e3:9.1f} ms   ratio {result['save_file_ratio']:.2f}x",
          file=out)


__all__ = ["ELEMENTS", "TENSORS", "arrays", "report", "run", "works"]
