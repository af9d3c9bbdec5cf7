"""onnx-light speed as ratios to baselines measured in the same run (issue #12, acceptance 6).

The workload: ``count`` float32 values (16M by default) quantized with the ``int4`` profile in
blocks of 32, and the same values as a ``[K, N]`` ORT MatMulNBits int4 matrix (block 32). The
baseline is ``numpy.copyto`` of the float32 output into a preallocated array (the memory
bandwidth limit). The targets:

* ``make_quantization_plan`` under 5 % of the quantize time;
* ``dequantize_value`` at most 12x the copy;
* ``quantize_array`` at most 4x, and ``export_matmul_nbits_inputs`` at most 2x, the time of
  ``dequantize_value`` on the same data.

:func:`run` returns the timings, ratios and verdicts; the command line hooks it in as
``hurray-decl bench --onnx-light``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TextIO, TypeVar

import numpy as np

from hurray_decl.onnx_light.codec import dequantize_value, export_matmul_nbits_inputs, quantize_array
from hurray_decl.onnx_light.ort import make_matmul_nbits_plan
from hurray_decl.onnx_light.plan import make_quantization_plan
from hurray_decl.onnx_light.profiles import QuantizationFormat

__all__ = ["TARGETS", "run"]

TARGETS = {
    "plan_over_quantize": 0.05,
    "dequantize_over_copy": 12.0,
    "quantize_over_dequantize": 4.0,
    "export_over_dequantize": 2.0,
}
"""The ceilings of acceptance 6, by ratio."""


T = TypeVar("T")


def _best(repeat: int, work: Callable[[], T]) -> tuple[float, T]:
    """The fastest of ``repeat`` runs (the least disturbed by other load) and the last result."""
    best = math.inf
    for _ in range(max(1, repeat) - 1):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    start = time.perf_counter()
    result = work()
    return min(best, time.perf_counter() - start), result


def run(count: int = 1 << 24, block_size: int = 32, repeat: int = 3, out: TextIO | None = None) -> dict:
    """Measure, optionally print a report to ``out``; returns timings (s), ratios and verdicts."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(count).astype(np.float32)
    target = np.empty_like(x)
    t = {}
    t["copyto"], _ = _best(repeat, lambda: np.copyto(target, x))
    t["plan"], plan = _best(repeat, lambda: make_quantization_plan(QuantizationFormat.INT4, count, block_size))
    t["quantize"], encoded = _best(repeat, lambda: quantize_array(x, plan))
    t["dequantize"], decoded = _best(repeat, lambda: dequantize_value(encoded))
    columns = 1 << max(0, (count.bit_length() - 1) // 2)
    matrix = x[: (count // columns) * columns].reshape(-1, columns)
    ort_plan = make_matmul_nbits_plan(QuantizationFormat.ORT_MATMULNBITS_INT4, matrix.shape[0], columns, block_size)
    ort = quantize_array(matrix, ort_plan)
    t["ort_dequantize"], _ = _best(repeat, lambda: dequantize_value(ort))
    t["export"], _ = _best(repeat, lambda: export_matmul_nbits_inputs(ort))
    ratios = {
        "plan_over_quantize": t["plan"] / t["quantize"],
        "dequantize_over_copy": t["dequantize"] / t["copyto"],
        "quantize_over_dequantize": t["quantize"] / t["dequantize"],
        "export_over_dequantize": t["export"] / t["ort_dequantize"],
    }
    verdicts = {name: ratios[name] <= limit for name, limit in TARGETS.items()}
    result = {"count": count, "block_size": block_size, "repeat": repeat, "seconds": t, "ratios": ratios,
              "met": verdicts, "decoded_matches_shape": decoded.shape == x.shape}
    if out is not None:
        print(f"onnx-light int4, block {block_size}, {count} float32 values, best of {repeat}", file=out)
        for name, seconds in t.items():
            print(f"  {name:<16} {seconds * 1e3:10.2f} ms", file=out)
        for name, ratio in ratios.items():
            shown = f"{ratio:.2%}" if name == "plan_over_quantize" else f"{ratio:.2f}x"
            limit = TARGETS[name]
            limit_text = f"{limit:.0%}" if name == "plan_over_quantize" else f"{limit:g}x"
            print(f"  {name:<26} {shown:>9}  (target <= {limit_text}: "
                  f"{'met' if verdicts[name] else 'NOT met'})", file=out)
    return result
