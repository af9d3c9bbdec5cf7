"""The parse benchmark runs and reports its three ratios (its figures are never asserted)."""

from __future__ import annotations

import io
import math
import os
import shutil
import subprocess
import sys

from hurray_decl.hurray import parse_bench
from hurray_decl.hurray.examples import bundled, checkout_conformance_descriptors
from tests.paths import DESCRIPTORS, REPO


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


def test_the_shipped_kaitai_readers_are_the_generated_ones():
    """``hurray_decl.hurray._generated`` holds a link to every file of ``generated/hurray/`` (a wheel
    copies their contents), so what a plain install measures against is what the staleness test checks."""
    shipped = REPO / "hurray_decl" / "hurray" / "_generated"
    source = REPO / "generated" / "hurray"
    assert sorted(p.name for p in shipped.iterdir() if p.suffix == ".py") == sorted(p.name for p in source.glob("*.py"))
    for path in shipped.glob("*.py"):
        assert path.is_symlink() and path.resolve() == (source / path.name).resolve()


def test_bench_parse_runs_from_a_copy_of_the_package_without_the_checkout(tmp_path):
    """As after ``pip install .``: the package alone (links followed, as a wheel holds it), no ``generated/``."""
    shutil.copytree(REPO / "hurray_decl", tmp_path / "hurray_decl", symlinks=False,
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import io, sys; from hurray_decl.cli import main; "
            "assert main(['bench', '--parse', '--repeat', '1']) == 0; "
            "assert 'generated.hurray' in sys.modules and sys.modules['generated.hurray'].__name__ == "
            "'hurray_decl.hurray._generated'")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "x the Kaitai reader" in done.stdout
