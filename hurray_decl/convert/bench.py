"""``hurray-decl bench --convert``: every ``convert`` direction of a generated GGUF model, timed and
its peak memory measured, as ratios to ``cp`` of the same file and to gguf-py reading and
dequantizing every tensor, in one run.

The model (:func:`write_model`) holds Q4_0, Q8_0, Q4_K, Q6_K, F16 and F32 tensors of 4096
columns, :data:`LAYERS` of each type, in about ``size`` bytes (Q4_0 and Q8_0 blocks from
``gguf.quants.quantize``; Q4_K and Q6_K blocks as llama.cpp's quantizer lays them out, since
gguf-py has none: random codes, sub-block scales of their full range). Each direction
(:data:`DIRECTIONS`) is one ``hurray-decl convert`` command in a process of its own; so are the
baselines: ``cp SOURCE COPY`` and a Python process that opens the file with gguf's
``GGUFReader`` and calls ``gguf.quants.dequantize`` on every tensor. Every figure is the
fastest of ``repeat`` rounds, the commands taking turns within a round, so that a change of the
machine's load falls on all of them; the files are warm in the page cache (one ``cp`` first).

Peak memory is the ``ru_maxrss`` of each command (:func:`measure`): a small Python process
forks and execs it and reads the child's resource use from ``wait4``, so the figure is the
command's own, not that of the process that started the bench (Linux keeps the peak of a
process across ``exec``); the same ``wait4`` gives its CPU time (user + system), printed beside
the wall time because a shared machine's load stretches wall times (a baseline's too). Its bound
(:func:`bound`) is twice the largest tensor plus 128 MiB, the largest tensor taken in the
source's form or the output's (dequantized float32 values are larger than their blocks).
"""

from __future__ import annotations

import filecmp
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from hurray_decl.errors import ArgumentError

COLUMNS = 4096
"""Every generated tensor's last dimension (a multiple of the K-quants' 256-element blocks)."""
TYPES = ("Q4_0", "Q8_0", "Q4_K", "Q6_K", "F16", "F32")
"""The GGML types of the generated model."""
LAYERS = 4
"""Tensors of each type in the generated model."""
SIZE = 256 << 20
"""The default size of the generated model, in bytes (the acceptance figures need 200 MB or more)."""
SLACK = 128 << 20
"""The fixed part of the memory bound (the interpreter, NumPy, gguf, onnx, protobuf)."""
MIB = 1 << 20

MEASURE = """\
import os, sys, time
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024,
      os.waitstatus_to_exitcode(status))
"""
"""The process that runs a measured command: a fork of a small interpreter, so that the command's
``ru_maxrss`` is its own (``wait4``); prints wall seconds, CPU seconds (user + system), peak bytes
and exit status."""

GGUF_PY = """\
import sys
import gguf
reader = gguf.GGUFReader(sys.argv[1])
for tensor in reader.tensors:
    gguf.quants.dequantize(tensor.data, tensor.tensor_type)
"""
"""The gguf-py baseline: read the file and dequantize every tensor (the values are dropped)."""


@dataclass(frozen=True)
class Measured:
    seconds: float
    cpu: float
    """User + system CPU seconds: less disturbed than wall time by other load on the machine."""
    peak: int
    """ru_maxrss in bytes."""
    status: int


def measure(argv: Sequence[str]) -> Measured:
    """Run ``argv`` in a fresh process; its wall time, peak resident size and exit status."""
    done = subprocess.run([sys.executable, "-c", MEASURE, *argv], capture_output=True, text=True, check=True)
    seconds, cpu, peak, status = done.stdout.split()[-4:]
    return Measured(float(seconds), float(cpu), int(peak), int(status))


def _k_blocks(rng: np.random.Generator, name: str, blocks: int) -> np.ndarray:
    """K-quant blocks as llama.cpp's quantizer lays them out: random codes, sub-block scales of
    their full range with one at the top code per block, float16 ``d`` (and ``dmin``)."""
    from hurray_decl.convert.gguf import GGUF_TYPES, pack_blocks

    row = GGUF_TYPES[name]
    per = row.elements // row.sub_block
    q = rng.integers(row.low, row.high + 1, (blocks, row.elements), dtype=np.int16)
    sc = rng.integers(row.scale_codes[0], row.scale_codes[1] + 1, (blocks, per))
    sc[sc == 0] = 1
    picks = np.arange(blocks), rng.integers(0, per, blocks)
    sc[picks] = row.top_scale
    levels: dict[str, np.ndarray] = {"d": rng.uniform(1e-3, 1e-2, blocks).astype(np.float16).astype(np.float32),
                                     "sc": sc}
    if row.has_offset:
        mn = rng.integers(0, row.min_codes[1] + 1, (blocks, per))
        mn[picks] = row.top_scale
        levels |= {"dmin": rng.uniform(1e-3, 1e-2, blocks).astype(np.float16).astype(np.float32), "mn": mn}
    return pack_blocks(name, q, levels)


def _tensor(rng: np.random.Generator, name: str, rows: int) -> np.ndarray:
    """``rows`` x :data:`COLUMNS` of type ``name``, as the bytes GGUFWriter takes (rows of blocks)."""
    import gguf

    if name in ("F16", "F32"):
        return rng.standard_normal((rows, COLUMNS), dtype=np.float32).astype(name.replace("F", "float"))
    kind = gguf.GGMLQuantizationType[name]
    if name in ("Q4_0", "Q8_0"):
        return np.asarray(gguf.quants.quantize(rng.standard_normal((rows, COLUMNS), dtype=np.float32), kind))
    return _k_blocks(rng, name, rows * COLUMNS // 256).reshape(rows, -1)


def row_bytes(name: str) -> int:
    """The bytes of one :data:`COLUMNS`-element row of GGML type ``name``."""
    import gguf

    elements, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[name]]
    return COLUMNS // elements * size


def plan(size: int, layers: int = LAYERS) -> list[tuple[str, str, int]]:
    """(name, GGML type, rows) of every tensor of a model of about ``size`` bytes: ``layers``
    tensors of each of :data:`TYPES`, each type's tensors about the same number of bytes."""
    share = size / (len(TYPES) * layers)
    return [(f"blk.{layer}.{name.lower()}.weight", name, max(1, round(share / row_bytes(name))))
            for layer in range(layers) for name in TYPES]


def write_model(path: Path, size: int = SIZE, layers: int = LAYERS, seed: int = 0,
                tensors: Sequence[tuple[str, str, int]] | None = None) -> list[tuple[str, str, int]]:
    """Write the bench's GGUF model (``tensors``: (name, GGML type, rows) each, by default
    :func:`plan`'s) at ``path``, one tensor made at a time; its plan."""
    import gguf

    rng = np.random.default_rng(seed)
    tensors = list(plan(size, layers) if tensors is None else tensors)
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_name("hurray-decl bench")
    for name, kind, rows in tensors:
        raw_shape = (rows, row_bytes(kind)) if kind.startswith("Q") else (rows, COLUMNS)
        dtype = {"F16": np.float16, "F32": np.float32}.get(kind, np.uint8)
        writer.add_tensor_info(name, raw_shape, np.dtype(dtype), rows * row_bytes(kind),
                               raw_dtype=gguf.GGMLQuantizationType[kind])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _name, kind, rows in tensors:
        writer.write_tensor_data(_tensor(rng, kind, rows))
    writer.close()
    return tensors


def largest(tensors: Sequence[tuple[str, str, int]], dequantized: bool = False) -> int:
    """The bytes of the largest tensor of a plan: in the file, or as float32 values when ``dequantized``."""
    return max(rows * (COLUMNS * 4 if dequantized and kind != "F32" else row_bytes(kind)) for _, kind, rows in tensors)


def bound(tensors: Sequence[tuple[str, str, int]], dequantized: bool = False) -> int:
    """The peak memory a direction may take: twice the largest tensor (:func:`largest`) plus :data:`SLACK`."""
    return 2 * largest(tensors, dequantized) + SLACK


@dataclass(frozen=True)
class Direction:
    label: str
    source: str
    """The file it reads: ``gguf`` (the generated model) or another direction's output name."""
    output: str
    options: tuple[str, ...]
    dequantized: bool = False
    same_as: str | None = None
    """A file the output must equal byte for byte (``gguf``: the generated model)."""


DIRECTIONS = (
    Direction("GGUF -> .hrry", "gguf", "m.hrry", ("--private-schemes",)),
    Direction(".hrry -> GGUF", "m.hrry", "back.gguf", ("--to", "gguf"), same_as="gguf"),
    Direction("GGUF -> onnx-light", "gguf", "m.onnx", ("--to", "onnx-light")),
    Direction("onnx-light -> GGUF", "m.onnx", "again.gguf", ("--to", "gguf"), same_as="gguf"),
    Direction("GGUF -> safetensors --dequantize", "gguf", "m.safetensors", ("--to", "safetensors", "--dequantize"),
              dequantized=True),
    Direction("GGUF -> ort (Q4_0, Q8_0; --partial)", "gguf", "m.ort.onnx", ("--to", "ort", "--partial")),
)
"""Every direction measured, in an order where each source is written before it is read."""


def convert_argv(source: Path, output: Path, options: Sequence[str]) -> list[str]:
    """The ``hurray-decl convert`` command line of one direction (this interpreter, this package)."""
    return [sys.executable, "-m", "hurray_decl", "convert", str(source), "-o", str(output), *options]


def _convert(source: Path, output: Path, options: Sequence[str]) -> Measured:
    return measure(convert_argv(source, output, options))


def check_options(size: Any, repeat: Any) -> None:
    """Refuse unusable options with :class:`ArgumentError` before anything is written."""
    if not isinstance(size, int) or isinstance(size, bool) or not 1 << 20 <= size <= 16 << 30:
        raise ArgumentError("size", "the generated model's size in bytes", actual=size, expected="1 MiB .. 16 GiB")
    if not isinstance(repeat, int) or isinstance(repeat, bool) or not 1 <= repeat <= 100:
        raise ArgumentError("repeat", "runs per measurement", actual=repeat, expected="1..100")


def run(size: int = SIZE, repeat: int = 1, out: TextIO | None = None,
        directions: Sequence[Direction] = DIRECTIONS, folder: Path | None = None) -> dict[str, Any]:
    """Generate the model, measure the baselines and every direction; print the table to ``out``
    when given; return the figures (seconds, bytes, ratios, bounds, exit statuses)."""
    check_options(size, repeat)
    with tempfile.TemporaryDirectory(prefix="hurray-convert-bench-", dir=folder) as where:
        return _run(Path(where), size, repeat, out, directions)


def _run(folder: Path, size: int, repeat: int, out: TextIO | None, directions: Sequence[Direction]) -> dict[str, Any]:
    source = folder / "model.gguf"
    tensors = write_model(source, size)
    files = {"gguf": source}
    for d in directions:
        files[d.output] = folder / d.output
    works: dict[str, Callable[[], Measured]] = {
        "cp": lambda: measure(["cp", str(source), str(folder / "copy.gguf")]),
        "gguf-py": lambda: measure([sys.executable, "-c", GGUF_PY, str(source)]),
    }
    for d in directions:
        works[d.label] = partial(_convert, files[d.source], files[d.output], d.options)
    works["cp"]()  # the source warm in the page cache
    best: dict[str, Measured] = {}
    for _ in range(repeat):
        for label, work in works.items():
            m = work()
            known = best.get(label)
            best[label] = m if known is None else Measured(min(known.seconds, m.seconds), min(known.cpu, m.cpu),
                                                           max(known.peak, m.peak), known.status or m.status)
    copy, reference = best["cp"].seconds, best["gguf-py"].seconds
    rows: dict[str, dict[str, Any]] = {}
    by_label = {d.label: d for d in directions}
    for label in works:
        m = best[label]
        direction = by_label.get(label)
        limit = bound(tensors, direction.dequantized) if direction is not None else None
        same = None
        if direction is not None and direction.same_as is not None and files[direction.output].exists():
            same = filecmp.cmp(files[direction.same_as], files[direction.output], shallow=False)
        rows[label] = {"seconds": m.seconds, "cpu": m.cpu, "peak": m.peak, "status": m.status,
                       "cp_ratio": m.seconds / copy, "gguf_py_ratio": m.seconds / reference,
                       "cpu_gguf_py_ratio": m.cpu / best["gguf-py"].cpu, "bound": limit, "identical": same}
    result = {"size": source.stat().st_size, "tensors": len(tensors), "largest": largest(tensors),
              "repeat": repeat, "rows": rows}
    if out is not None:
        report(result, out)
    return result


def report(result: dict[str, Any], out: TextIO) -> None:
    print(f"convert of a {result['size'] / 1e6:.0f} MB GGUF ({result['tensors']} tensors of Q4_0, Q8_0, Q4_K, Q6_K, "
          f"F16, F32; largest {result['largest'] / MIB:.1f} MiB): best of {result['repeat']}, each command in a "
          "process of its own, ratios to cp and to gguf-py's read + dequantize in the same run", file=out)
    print(f"{'direction':<36}  {'s':>7}  {'/ cp':>6}  {'/ gguf-py':>9}  {'CPU s':>6}  {'/ gguf-py':>9}  "
          f"{'peak MiB':>8}  {'bound':>6}  {'exit':>4}  same", file=out)
    for label, r in result["rows"].items():
        limit = f"{r['bound'] / MIB:.0f}" if r["bound"] is not None else "-"
        mark = "" if r["bound"] is None or r["peak"] <= r["bound"] else " !"
        same = {None: "", True: "cmp ok", False: "DIFFERS"}[r["identical"]]
        print(f"{label:<36}  {r['seconds']:>7.2f}  {r['cp_ratio']:>5.1f}x  {r['gguf_py_ratio']:>8.2f}x  "
              f"{r['cpu']:>6.2f}  {r['cpu_gguf_py_ratio']:>8.2f}x  {r['peak'] / MIB:>8.0f}{mark:2}  {limit:>6}  "
              f"{r['status']:>4}  {same}", file=out)


def main() -> None:  # python -m hurray_decl.convert.bench [SIZE_MB] [--json]
    size = int(sys.argv[1]) << 20 if len(sys.argv) > 1 and sys.argv[1].isdigit() else SIZE
    result = run(size, out=sys.stdout)
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()


__all__ = ["DIRECTIONS", "Direction", "Measured", "bound", "largest", "measure", "plan", "report", "run",
           "write_model"]
