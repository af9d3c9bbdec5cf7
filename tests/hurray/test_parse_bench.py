"""The parse benchmark runs and reports its three ratios (its figures are never asserted)."""

from __future__ import annotations

import io
import math

from hurray_decl.hurray import parse_bench
from hurray_decl.hurray.examples import bundled, checkout_conformance_descriptors
from tests.paths import DESCRIPTORS


def test_parse_bench_reports_three_ratios():
    out = io.StringIO()
    ratios = parse_bench.run(repeat=1, rounds=1, out=out)
    assert set(ratios) == {"read_tensor_descriptor", "write_tensor_descriptor", "decode_quantization"}
    assert all(r > 0 and math.isfinite(r) for r in ratios.values())
    text = out.getvalue()
    assert "x the Kaitai reader" in text and "x the Kaitai payload reader" in text


def test_parse_bench_reads_every_conformance_descriptor_of_the_checkout():
    """The package finds the in-repository vectors (tests/paths.py's DESCRIPTORS) when it runs
    from the source tree, and the benchmark times each of them beside the bundled examples."""
    assert checkout_conformance_descriptors() == sorted(DESCRIPTORS.glob("*.bin"))
    timed = parse_bench.inputs()
    vectors = [p.read_bytes() for p in sorted(DESCRIPTORS.glob("*.bin"))]
    assert len(vectors) == 11 and all(v in timed for v in vectors)
    assert all(p.read_bytes() in timed for p in bundled().glob("valid_*.bin"))
