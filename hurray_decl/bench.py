"""``hurray-decl bench``: dequantization speed as ratios against baselines measured in the same run.

The workload is the one the numerics issue fixes: a square float32 matrix quantized per-block
affine (int4, asymmetric, float16 scales, block 32, along the last axis). The baselines are a
NumPy copy of an equally sized float32 array (the memory-bandwidth limit) and the ``gguf``
package's NumPy dequantization of the same-sized Q4_0 tensor.
"""

from __future__ import annotations

import time
from typing import Callable, TextIO

import numpy as np

from .codec import dequantize, quantize


def best_of(repeat: int, work: Callable[[], object]) -> float:
    """The fastest of ``repeat`` runs, in seconds (the least disturbed by other load)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def run(size: int = 4096, repeat: int = 5, threads: int | None = None, out: TextIO | None = None) -> dict[str, float]:
    """Measure and print; returns the timings and ratios."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((size, size)).astype(np.float32)
    descriptor, buffers = quantize(x, "per_block_affine", block_size=32, storage="int4", symmetric=False,
                                   scale_type="float16")
    result = {
        "dequantize": best_of(repeat, lambda: dequantize(descriptor, buffers, threads=threads)),
        "numpy_copy": best_of(repeat, lambda: x.copy()),
    }
    try:
        import gguf
    except ImportError:
        gguf = None
    if gguf is not None:
        raw = gguf.quants.quantize(x, gguf.GGMLQuantizationType.Q4_0)
        result["gguf_q4_0"] = best_of(max(1, repeat // 2),
                                      lambda: gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.Q4_0))
    result["ratio_to_copy"] = result["dequantize"] / result["numpy_copy"]
    if "gguf_q4_0" in result:
        result["ratio_to_gguf"] = result["dequantize"] / result["gguf_q4_0"]
    if out is not None:
        label = f"{threads} thread(s)" if threads else "default threads"
        print(f"per-block int4 asymmetric, float16 scales, block 32, {size}x{size}, best of {repeat}, {label}",
              file=out)
        for key in ("dequantize", "numpy_copy", "gguf_q4_0"):
            if key in result:
                print(f"  {key:<12} {result[key] * 1e3:9.2f} ms", file=out)
        print(f"  dequantize / numpy copy  {result['ratio_to_copy']:.2f}x", file=out)
        if "ratio_to_gguf" in result:
            print(f"  dequantize / gguf Q4_0   {result['ratio_to_gguf']:.2f}x", file=out)
        else:
            print("  gguf is not installed: no gguf ratio", file=out)
    return result
