"""The parse benchmark runs and reports its three ratios (its figures are never asserted)."""

from __future__ import annotations

import io
import math

from hurray_decl.hurray import parse_bench


def test_parse_bench_reports_three_ratios():
    out = io.StringIO()
    ratios = parse_bench.run(repeat=1, rounds=1, out=out)
    assert set(ratios) == {"read_tensor_descriptor", "write_tensor_descriptor", "decode_quantization"}
    assert all(r > 0 and math.isfinite(r) for r in ratios.values())
    text = out.getvalue()
    assert "x the Kaitai reader" in text and "x the Kaitai payload reader" in text
    assert len(parse_bench.inputs()) >= 10  # conformance descriptors and bundled examples
