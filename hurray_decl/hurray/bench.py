"""``hurray-decl bench``: dequantization speed as ratios against baselines measured in the same run.

The baseline is ``np.copyto`` of an equally sized float32 matrix into a preallocated array (the
memory-bandwidth limit); dequantization writes into a preallocated ``out`` too. One table per
layout (row-major, column-major, tiled 64x64): every scheme's case, single-threaded and with
the default threads, as ratios to the copy, to the ``gguf`` package's NumPy dequantization of
its nearest type (Q4_0, Q8_0, IQ4_NL, MXFP4; when gguf is installed) and, for the other
layouts, to the same tensor stored row-major. Peak extra memory is tracemalloc's peak during
one run, beyond the output.

On a shared machine the load changes from one second to the next, so the figures compared are
taken together: each case runs its layouts, thread counts, a copy and its gguf type in turn,
``repeat`` rounds, and keeps each one's fastest; the baselines are the fastest copy and gguf
runs of the whole run (the least disturbed, so no ratio is flattered by a slowed baseline).
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TextIO

import numpy as np

from hurray_decl.errors import ArgumentError
from hurray_decl.hurray.kernels import workers
from hurray_decl.hurray.numerics import dequantize, quantize
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.element_types import BY_TAG
from hurray_decl.hurray.tensor import (
    BufferHandle,
    ColumnMajor,
    Layout,
    Tiled,
    read_tensor_descriptor,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.access import stored_codes_row_major

TILE = 64
"""Tile side of the tiled layout's table; the matrix size is a multiple of it."""


@dataclass(frozen=True)
class Case:
    label: str
    scheme: str
    options: dict[str, Any]
    gguf: str | None
    """The gguf type whose dequantization is the nearest comparison."""


CASES = (
    Case("per-block uint4 asym f16 K32", "per_block_affine",
         {"block_size": 32, "storage": "uint4", "symmetric": False, "scale_type": "float16"}, "Q4_0"),
    Case("per-block int8 sym f16 K32", "per_block_affine",
         {"block_size": 32, "storage": "int8", "scale_type": "float16"}, "Q8_0"),
    Case("per-channel int8 axis 0", "per_channel_affine", {"axis": 0, "storage": "int8"}, "Q8_0"),
    Case("per-channel int8 axis 1", "per_channel_affine", {"axis": 1, "storage": "int8"}, "Q8_0"),
    Case("per-channel uint8 asym axis 1", "per_channel_affine",
         {"axis": 1, "storage": "uint8", "symmetric": False}, "Q8_0"),
    Case("per-tensor int4", "per_tensor_affine", {"storage": "int4"}, "Q4_0"),
    Case("NF4 K32", "nf4", {"block_size": 32}, "IQ4_NL"),
    Case("MXFP float4_e2m1 K32", "mxfp", {"block_size": 32, "storage": "float4_e2m1"}, "MXFP4"),
    Case("MXFP float8_e4m3 K32", "mxfp", {"block_size": 32, "storage": "float8_e4m3"}, "Q8_0"),
)

LAYOUTS = ("row-major", "column-major", "tiled")


def best_of(repeat: int, work: Callable[[], object]) -> float:
    """The fastest of ``repeat`` runs, in seconds (the least disturbed by other load)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_extra(work: Callable[[], object]) -> int:
    """tracemalloc's peak, in bytes, while ``work`` runs once."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def check_options(size: Any, repeat: Any, threads: Any, layouts: Any = LAYOUTS) -> None:
    """Refuse unusable bench options with :class:`ArgumentError` before anything is measured."""
    def whole(value: Any) -> bool:
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool)

    if not whole(size) or size < TILE or size % TILE:
        raise ArgumentError("size", "the matrix size is a positive multiple of the tile side", actual=size,
                            expected=f"a multiple of {TILE}, at least {TILE}")
    if size > 1 << 15:
        raise ArgumentError("size", "the bench keeps its matrices below 4 GiB", actual=size, expected="<= 32768")
    if not whole(repeat) or not 1 <= repeat <= 1000:
        raise ArgumentError("repeat", "runs per measurement", actual=repeat, expected="1..1000")
    if threads is not None and (not whole(threads) or not 1 <= threads <= 256):
        raise ArgumentError("threads", "dequantization threads", actual=threads, expected="1..256")
    unknown = [name for name in layouts if name not in LAYOUTS]
    if unknown or not layouts:
        raise ArgumentError("layouts", "unknown layout", actual=", ".join(map(str, unknown)) or "none",
                            expected=", ".join(LAYOUTS))


def relaid(descriptor: Any, buffers: list[bytes], layout: str) -> tuple[Any, list[bytes]]:
    """The same tensor stored column-major or in 64x64 tiles (row-major grid and interior)."""
    if layout == "row-major":
        return descriptor, buffers
    codes = stored_codes_row_major(descriptor, buffers)
    rows, cols = codes.shape
    target: Layout
    if layout == "column-major":
        order, target = codes.T, ColumnMajor()
    else:
        order = codes.reshape(rows // TILE, TILE, cols // TILE, TILE).transpose(0, 2, 1, 3)
        target = Tiled(tile_shape=(TILE, TILE))
    data = storage.pack_codes(np.ascontiguousarray(order), BY_TAG[descriptor.type_tag].bits)
    changed = descriptor.replace(layout=target, buffers=(BufferHandle(byte_size=len(data)),) + descriptor.buffers[1:])
    return read_tensor_descriptor(write_tensor_descriptor(changed)), [data, *buffers[1:]]


def _gguf_kind(name: str) -> Any:
    """gguf's type ``name`` (None without gguf or the type)."""
    try:
        import gguf
    except ImportError:
        return None
    return getattr(gguf.GGMLQuantizationType, name, None)


def _gguf_work(x: np.ndarray, name: str) -> Callable[[], object] | None:
    """gguf's dequantization of ``x`` quantized to type ``name`` (None without gguf or the type)."""
    kind = _gguf_kind(name)
    if kind is None:
        return None
    import gguf

    try:
        raw = gguf.quants.quantize(x, kind)
    except NotImplementedError:  # IQ4_NL: gguf-py dequantizes but cannot quantize; random blocks will do
        size, block_bytes = gguf.GGML_QUANT_SIZES[kind]
        rng = np.random.default_rng(1)
        raw = rng.integers(0, 256, (x.shape[0], x.shape[1] // size * block_bytes), dtype=np.uint8)
        blocks = raw.reshape(-1, block_bytes)
        blocks[:, :2] = np.frombuffer(np.float16(0.01).tobytes(), dtype=np.uint8)
    return lambda: gguf.quants.dequantize(raw, kind)


def interleaved(repeat: int, works: dict[Any, Callable[[], object]]) -> dict[Any, float]:
    """The fastest of ``repeat`` runs of each of ``works``, in seconds, run in turn round after
    round, so that every figure meets the same load."""
    times: dict[Any, float] = {key: float("inf") for key in works}
    for _ in range(repeat):
        for key, work in works.items():
            start = time.perf_counter()
            work()
            times[key] = min(times[key], time.perf_counter() - start)
    return times


def run(size: int = 4096, repeat: int = 5, threads: int | None = None, out: TextIO | None = None,
        layouts: tuple[str, ...] = LAYOUTS, cases: tuple[Case, ...] = CASES) -> dict[str, Any]:
    """Measure every case on every layout; print the tables to ``out``; return the figures."""
    check_options(size, repeat, threads, layouts)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((size, size)).astype(np.float32)
    target = np.empty_like(x)
    copy = best_of(repeat, lambda: np.copyto(target, x))
    default = threads or workers()
    result: dict[str, Any] = {"threads": default, "cases": {}}
    gguf_works = {name: _gguf_work(x, name) for name in sorted({c.gguf for c in cases if c.gguf})}
    gguf_times: dict[str, float | None] = {name: None for name in gguf_works}
    result["gguf"] = gguf_times
    measured: dict[tuple[str, str], dict[str, Any]] = {}
    for case in cases:
        quantized = quantize(x, case.scheme, **case.options)
        tensors = {layout: relaid(*quantized, layout) for layout in layouts}
        works: dict[Any, Callable[[], object]] = {"copy": lambda: np.copyto(target, x)}
        gguf_work = gguf_works.get(case.gguf) if case.gguf else None
        if gguf_work is not None:
            works["gguf"] = gguf_work
        for layout, (descriptor, buffers) in tensors.items():
            for key, count in (("single", 1), ("default", default)):
                works[layout, key] = partial(dequantize, descriptor, buffers, out=target, threads=count)
        times = interleaved(repeat, works)
        copy = min(copy, times.pop("copy"))
        if "gguf" in times and case.gguf:
            known = gguf_times[case.gguf]
            gguf_times[case.gguf] = times.pop("gguf") if known is None else min(known, times.pop("gguf"))
        for layout, (descriptor, buffers) in tensors.items():
            measured[case.label, layout] = {
                "single": times[layout, "single"], "default": times[layout, "default"],
                "peak_bytes": peak_extra(partial(dequantize, descriptor, buffers, out=target, threads=1))}
    result["copyto"] = copy  # the fastest copy and gguf times of the whole run are the baselines
    for case in cases:
        for layout in layouts:
            figures = measured[case.label, layout]
            one, many = figures["single"], figures["default"]
            figures.update(single_to_copy=one / copy, default_to_copy=many / copy)
            reference = gguf_times.get(case.gguf) if case.gguf else None
            if reference:
                figures["single_to_gguf"] = one / reference
                figures["default_to_gguf"] = many / reference
            if layout != "row-major" and (case.label, "row-major") in measured:
                figures["single_to_row_major"] = one / measured[case.label, "row-major"]["single"]
            result["cases"][(case.label, layout)] = figures
    if out is not None:
        report(result, size, repeat, layouts, cases, out)
    return result


def _gguf_times(times: dict[str, float | None], label: str, out: TextIO) -> None:
    """One line per gguf baseline: ``label`` (formatted with the type's ``name``) and its time."""
    for name, seconds in sorted(times.items()):
        shown = "not available" if seconds is None else f"{seconds * 1e3:.2f} ms"
        print(f"  {label.format(name=name)} {shown}", file=out)


def report(result: dict[str, Any], size: int, repeat: int, layouts: tuple[str, ...], cases: tuple[Case, ...],
           out: TextIO) -> None:
    """The tables: one per layout, one row per case."""
    copy = result["copyto"]
    print(f"dequantize {size}x{size} float32 into a preallocated out, best of {repeat}; "
          f"np.copyto baseline {copy * 1e3:.2f} ms (the fastest of the run); default threads = {result['threads']}; "
          "each case's layouts, thread counts, a copy and gguf measured in turn", file=out)
    _gguf_times(result["gguf"], "gguf {name:<7} dequantize", out)
    header = (f"  {'case':<32} {'1 thread':>9} {'x copy':>7} {'x gguf':>7} {'x row':>6} "
              f"{'default':>9} {'x copy':>7} {'x gguf':>7} {'peak MiB':>9}")
    for layout in layouts:
        print(f"\n{layout}", file=out)
        print(header, file=out)
        for case in cases:
            f = result["cases"][(case.label, layout)]

            def ratio(key: str, f: dict[str, Any] = f) -> str:
                return f"{f[key]:.2f}" if key in f else "-"

            print(f"  {case.label:<32} {f['single'] * 1e3:7.2f}ms {ratio('single_to_copy'):>7} "
                  f"{ratio('single_to_gguf'):>7} {ratio('single_to_row_major'):>6} {f['default'] * 1e3:7.2f}ms "
                  f"{ratio('default_to_copy'):>7} {ratio('default_to_gguf'):>7} {f['peak_bytes'] / 2**20:9.1f}",
                  file=out)


def window_run(size: int = 4096, repeat: int = 5, out: TextIO | None = None,
               folder: str | None = None) -> dict[str, Any]:
    """A window of 1/64 of a ``size`` x ``size`` per-block int4 tensor (K32 along the rows, float16
    scales) in a memory-mapped ``.hrry`` file, against the whole tensor dequantized, both through
    :class:`~hurray_decl.hurray.values.Tensor` and measured in turn: ``warm`` on a tensor whose
    buffers were checked by an earlier read, ``cold`` from opening the file (checks included)."""
    import tempfile

    from hurray_decl.hurray.files import open_file, save
    from hurray_decl.hurray.values import quantize as quantize_tensor

    check_options(size, repeat, None)
    x = np.random.default_rng(0).standard_normal((size, size)).astype(np.float32)
    tensor = quantize_tensor(x, "per_block_affine", axis=1, block_size=32, storage="int4", scale_type="float16")
    side = size // 8
    box = (slice(3 * side, 4 * side), slice(5 * side, 6 * side))  # 1/64 of the elements, away from the edges
    target = np.empty((size, size), np.float32)
    with tempfile.TemporaryDirectory(dir=folder) as place:
        path = f"{place}/window.hrry"
        save(path, {"w": tensor})
        opened = open_file(path)["w"]  # tests/hurray/test_tensor_object.py checks windows against whole results
        times = interleaved(repeat, {
            "full": lambda: opened.numpy(out=target), "window": lambda: opened[box],
            "full cold": lambda: open_file(path)["w"].numpy(out=target),
            "window cold": lambda: open_file(path)["w"][box]})
    result: dict[str, Any] = {"size": size, "window": [side, side], **times,
                              "warm_ratio": times["window"] / times["full"],
                              "cold_ratio": times["window cold"] / times["full cold"]}
    if out is not None:
        print(f"per-block int4 K32 {size}x{size} in a memory-mapped .hrry file, best of {repeat}, measured in turn: "
              f"a {side}x{side} window (1/64 of the elements) against the whole tensor", file=out)
        print(f"  warm (buffers checked by an earlier read): window {times['window'] * 1e3:.2f} ms, whole "
              f"{times['full'] * 1e3:.2f} ms, ratio {result['warm_ratio']:.4f} (1/{1 / result['warm_ratio']:.1f})",
              file=out)
        print(f"  cold (file opened and checked each time):  window {times['window cold'] * 1e3:.2f} ms, whole "
              f"{times['full cold'] * 1e3:.2f} ms, ratio {result['cold_ratio']:.4f} (1/{1 / result['cold_ratio']:.1f})",
              file=out)
    return result


QUANTIZE_CASES = (
    Case("per-block int4 sym f16 K32", "per_block_affine",
         {"block_size": 32, "storage": "int4", "scale_type": "float16"}, "Q4_0"),
    Case("per-block int8 sym f16 K32", "per_block_affine",
         {"block_size": 32, "storage": "int8", "scale_type": "float16"}, "Q8_0"),
    Case("per-block uint4 asym f16 K32", "per_block_affine",
         {"block_size": 32, "storage": "uint4", "symmetric": False, "scale_type": "float16"}, "Q4_1"),
    Case("per-block int8 sym f32 K32", "per_block_affine", {"block_size": 32, "storage": "int8"}, "Q8_0"),
    Case("per-channel int8 axis 0", "per_channel_affine", {"axis": 0, "storage": "int8"}, "Q8_0"),
    Case("per-tensor int8", "per_tensor_affine", {"storage": "int8"}, "Q8_0"),
    Case("NF4 K32", "nf4", {"block_size": 32}, None),
    Case("MXFP float4_e2m1 K32", "mxfp", {"block_size": 32, "storage": "float4_e2m1"}, "MXFP4"),
)
"""The quantize bench: each case's nearest type that ``gguf.quants.quantize`` writes (gguf-py
cannot quantize IQ4_NL, the nearest to NF4). The first three are the targets: the same blocks,
scale width and code width as Q4_0, Q8_0 and Q4_1."""


def _gguf_quantize(x: np.ndarray, name: str) -> Callable[[], object] | None:
    """gguf's quantization of ``x`` to type ``name`` (None without gguf or the type)."""
    kind = _gguf_kind(name)
    if kind is None:
        return None
    import gguf

    return lambda: gguf.quants.quantize(x, kind)


def quantize_run(size: int = 2048, repeat: int = 5, threads: int | None = 1, out: TextIO | None = None,
                 cases: tuple[Case, ...] = QUANTIZE_CASES) -> dict[str, Any]:
    """``quantize`` of a ``size`` x ``size`` float32 matrix for every case (``threads`` threads, one
    by default), as ratios to ``np.copyto`` of the matrix and to ``gguf.quants.quantize`` of the
    case's nearest type on the same matrix; everything measured in turn, ``repeat`` rounds, the
    fastest of each kept. A quantize result is the checked descriptor and its buffers; gguf's is
    the raw block bytes, without a descriptor or any check."""
    check_options(size, repeat, threads)
    x = np.random.default_rng(0).standard_normal((size, size)).astype(np.float32)
    target = np.empty_like(x)
    works: dict[Any, Callable[[], object]] = {"copy": lambda: np.copyto(target, x)}
    names = sorted({c.gguf for c in cases if c.gguf})
    gguf_works = {name: _gguf_quantize(x, name) for name in names}
    for name, work in gguf_works.items():
        if work is not None:
            works["gguf", name] = work
    for case in cases:
        works[case.label] = partial(quantize, x, case.scheme, threads=threads, **case.options)
    times = interleaved(repeat, works)
    copy = times["copy"]
    result: dict[str, Any] = {"size": size, "threads": threads or workers(), "copyto": copy,
                              "gguf": {name: times.get(("gguf", name)) for name in names}, "cases": {}}
    for case in cases:
        seconds = times[case.label]
        figures = {"seconds": seconds, "to_copy": seconds / copy}
        reference = result["gguf"].get(case.gguf) if case.gguf else None
        if reference:
            figures["to_gguf"] = seconds / reference
        result["cases"][case.label] = figures
    if out is not None:
        quantize_report(result, repeat, cases, out)
    return result


def quantize_report(result: dict[str, Any], repeat: int, cases: tuple[Case, ...], out: TextIO) -> None:
    """One row per case: time, x np.copyto, x gguf's nearest type."""
    size = result["size"]
    print(f"quantize {size}x{size} float32 (descriptor built and checked), best of {repeat}, "
          f"threads = {result['threads']}; np.copyto {result['copyto'] * 1e3:.2f} ms; "
          "every case, the copy and gguf measured in turn", file=out)
    _gguf_times(result["gguf"], "gguf.quants.quantize {name:<6}", out)
    print(f"  {'case':<32} {'time':>9} {'x copy':>7} {'gguf':>6} {'x gguf':>7}", file=out)
    for case in cases:
        f = result["cases"][case.label]
        ratio = f"{f['to_gguf']:.2f}" if "to_gguf" in f else "-"
        print(f"  {case.label:<32} {f['seconds'] * 1e3:7.2f}ms {f['to_copy']:7.2f} {case.gguf or '-':>6} {ratio:>7}",
              file=out)


__all__ = ["CASES", "LAYOUTS", "QUANTIZE_CASES", "Case", "best_of", "check_options", "interleaved", "peak_extra",
           "quantize_report", "quantize_run", "relaid", "report", "run", "window_run"]
