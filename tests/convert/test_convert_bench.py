"""``bench --convert`` (``hurray_decl.convert.bench``): the generated model holds every type it
names in about the size asked, the report has a row per command with its ratios, peak and bound,
what comes back is compared byte for byte, and the options are checked. Nothing here is timed:
the figures are printed, not asserted."""

from __future__ import annotations

import io

import gguf
import numpy as np
import pytest

from hurray_decl import cli
from hurray_decl.convert import bench
from hurray_decl.errors import ArgumentError


def test_the_model_holds_every_type_in_about_the_size_asked(tmp_path):
    plan = bench.write_model(tmp_path / "m.gguf", 6 << 20, layers=2)
    reader = gguf.GGUFReader(tmp_path / "m.gguf")
    assert [t.tensor_type.name for t in reader.tensors] == [kind for _, kind, _ in plan] == list(bench.TYPES) * 2
    assert abs((tmp_path / "m.gguf").stat().st_size - (6 << 20)) < 6 << 18
    for tensor, (name, _kind, rows) in zip(reader.tensors, plan):
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        assert tensor.name == name and values.shape == (rows, bench.COLUMNS) and np.isfinite(values).all()


def test_a_run_reports_every_command_with_its_ratios_and_bound(tmp_path):
    out = io.StringIO()
    result = bench.run(size=2 << 20, out=out, directions=bench.DIRECTIONS[:2], folder=tmp_path)
    text = out.getvalue()
    assert list(result["rows"]) == ["cp", "gguf-py", "GGUF -> .hrry", ".hrry -> GGUF"]
    for label, row in result["rows"].items():
        assert row["status"] == 0 and row["peak"] > 0 and label in text
    assert result["rows"]["cp"]["cp_ratio"] == 1.0 and result["rows"]["gguf-py"]["gguf_py_ratio"] == 1.0
    assert result["rows"][".hrry -> GGUF"]["identical"] is True and "cmp ok" in text
    assert result["rows"]["GGUF -> .hrry"]["bound"] == bench.bound(bench.plan(2 << 20))
    assert not list(tmp_path.iterdir())  # the generated files are removed


@pytest.mark.parametrize("size, repeat", [(0, 1), (1 << 40, 1), (1 << 20, 0), (True, 1)])
def test_unusable_options_are_refused_before_anything_is_written(size, repeat):
    with pytest.raises(ArgumentError):
        bench.run(size=size, repeat=repeat)


def test_threads_do_not_apply_to_convert(capsys):
    assert cli.main(["bench", "--convert", "--threads", "2"]) == 2
    assert "--threads" in capsys.readouterr().err
