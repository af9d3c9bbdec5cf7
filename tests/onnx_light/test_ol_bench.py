"""The onnx-light measuring entry: what it reports (the figures themselves are the bench's job)."""

from __future__ import annotations

import io

from hurray_decl.onnx_light import bench


def test_bench_reports_every_ratio_and_verdict():
    out = io.StringIO()
    result = bench.run(count=1 << 12, block_size=32, repeat=1, out=out)
    assert set(result["ratios"]) == set(bench.TARGETS) == set(result["met"])
    seconds = result["seconds"]
    assert set(seconds) == {"copyto", "plan", "quantize", "dequantize", "ort_dequantize", "export"}
    assert all(value > 0 for value in seconds.values())
    assert result["ratios"]["plan_over_quantize"] == seconds["plan"] / seconds["quantize"]
    assert result["ratios"]["export_over_dequantize"] == seconds["export"] / seconds["ort_dequantize"]
    for name, limit in bench.TARGETS.items():
        assert result["met"][name] == (result["ratios"][name] <= limit)
    text = out.getvalue().splitlines()
    assert text[0].startswith("onnx-light int4, block 32, 4096 float32 values")
    assert len(text) == 1 + len(seconds) + len(bench.TARGETS)
    assert result["decoded_matches_shape"]
