"""``bench --open``: the reads it times read the same values from both files; the table has a row per
count (no assertion on the times themselves)."""

from __future__ import annotations

import contextlib
import io

import numpy as np

from hurray_decl import cli
from hurray_decl.hurray import open_bench


def test_the_timed_reads_agree(tmp_path):
    ours, theirs = open_bench.files(tmp_path, 7)
    reads = open_bench.works(ours, theirs)
    assert np.array_equal(reads["open"](), reads["safe_open"]()) and reads["safe_open"]().tolist() == [0.0] * 4
    assert reads["load_kv"]() == {"source": "bench"} == reads["metadata"]()


def test_a_row_per_count_from_one_run():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli.main(["bench", "--open", "--counts", "3", "40", "--repeat", "1"])
    lines = out.getvalue().splitlines()
    assert status == 0 and lines[0].startswith("open + first tensor, and KV metadata: best of 1")
    assert [line.split()[0] for line in lines[2:]] == ["3", "40"]
    assert all(line.count("x") == 2 for line in lines[2:])
    results = open_bench.run(counts=(2,), repeat=1)
    assert set(results[2]) == {"open", "safe_open", "load_kv", "metadata", "open_ratio", "kv_ratio"}
    assert all(value > 0 for value in results[2].values())
