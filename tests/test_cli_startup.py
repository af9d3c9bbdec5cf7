"""The command line imports only what a command needs; the package's names load on first use."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest

import hurray_decl as hd
from hurray_decl import cli
from tests.paths import DESCRIPTORS, REPO as ROOT

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
HEAVY = ("numpy", "pydantic", "construct", "onnx", "onnxruntime", "google.protobuf", "hypothesis", "ml_dtypes",
         "gguf")
VECTOR = DESCRIPTORS / "row_major_f32_3x4.bin"


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], env=ENV, capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_import_and_parser_load_nothing_heavy():
    """Every registered command module, plug-ins included, keeps its heavy imports inside its handlers."""
    loaded = modules_after("import hurray_decl.cli as c\nc.build_parser()")
    assert set(cli.COMMAND_MODULES) <= loaded
    assert not {m for m in loaded for h in HEAVY if m == h or m.startswith(h + ".")}
    assert not {m for m in loaded if m.startswith("hurray_decl.") and not m.startswith("hurray_decl.cli")} - {
        "hurray_decl.errors", "hurray_decl.lazy_modules"}  # lazy_modules: the public names' table, imported lazily


def test_validate_loads_no_numerics_onnx_protobuf_or_hypothesis():
    loaded = modules_after(f"from hurray_decl import cli\nassert cli.main(['validate', {str(VECTOR)!r}]) == 0")
    assert "hurray_decl.hurray.tensor.reader" in loaded  # it did read
    unneeded = {"onnx", "google.protobuf", "hypothesis", "gguf", "hurray_decl.hurray.numerics",
                "hurray_decl.hurray.dump", "hurray_decl.onnx_light", "hurray_decl.convert",
                "hurray_decl.hurray.tensor.access", "hurray_decl.hurray.fuzz"}
    assert not {m for m in loaded for u in unneeded if m == u or m.startswith(u + ".")}


def test_every_public_name_loads_lazily_and_is_the_module_attribute():
    assert modules_after("import hurray_decl") & {"numpy", "pydantic", "hurray_decl.hurray.quantization"} == set()
    assert set(hd.__all__) <= set(dir(hd))
    for name in hd.__all__:
        value = getattr(hd, name)
        if name == "__version__":
            assert isinstance(value, str) and value
            continue
        module, attribute = hd._LAZY[name]  # the table read from the TYPE_CHECKING imports
        source = importlib.import_module(module, "hurray_decl")
        assert value is (source if attribute is None else getattr(source, attribute)), name
    with pytest.raises(AttributeError):
        hd.no_such_name


def test_version_is_the_installed_metadata(capsys):
    from importlib.metadata import version

    assert hd.__version__ == version("hurray_decl")
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"hurray-decl {hd.__version__}\n"


@pytest.mark.parametrize("argv", [["-m", "hurray_decl", "--version"], ["-m", "hurray_decl.cli", "--version"]])
def test_python_dash_m_runs_the_command_line(argv):
    done = subprocess.run([sys.executable, *argv], env=ENV, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.startswith("hurray-decl ")


def test_bench_startup_pairs_the_two_commands_and_prints_their_ratios(monkeypatch, capsys):
    """``bench --startup``: the commands alternate, one validate run first, and the ratios are of
    the medians (fake timings here: speed is measured by the bench, never by a test)."""
    from hurray_decl.hurray import startup_bench

    runs: list[tuple[str, ...]] = []
    times = {startup_bench.BASELINE: (0.2, 0.1)}

    def fake(arguments):
        runs.append(arguments)
        return times.get(arguments, (0.3, 0.25))

    monkeypatch.setattr(startup_bench, "timed", fake)
    assert cli.main(["bench", "--startup", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    command = startup_bench.validate_command(startup_bench.bundled() / startup_bench.EXAMPLE)
    assert runs == [command] + [startup_bench.BASELINE, command] * 5
    assert "5 paired runs" in out and "hurray-decl validate valid_block_paged.bin" in out
    assert " 200.0     300.0    1.50" in out and " 100.0     250.0    2.50" in out


def test_bench_startup_times_a_real_run_and_names_a_failing_one():
    from hurray_decl.hurray import startup_bench

    wall, cpu = startup_bench.timed(("-c", "pass"))
    assert wall > 0 and cpu >= 0
    with pytest.raises(RuntimeError, match="exit 3"):
        startup_bench.timed(("-c", "import sys; sys.exit('exit 3')"))
    example = startup_bench.bundled() / startup_bench.EXAMPLE
    assert example.is_file() and example.read_bytes().startswith(b"HRRY")


@pytest.mark.parametrize(("example", "status"), [("valid_block_paged.bin", 0), ("invalid_bad_alignment.bin", 1)])
def test_the_console_script_exits_with_mains_code_and_freezes_the_collector(monkeypatch, capsys, example, status):
    """``run`` (the console script, ``python -m hurray_decl``) exits with what ``main`` returns, after
    moving every object out of the collector's reach, so the interpreter's last collections walk none."""
    path = ROOT / "hurray_decl" / "hurray" / "examples" / example
    monkeypatch.setattr(sys, "argv", ["hurray-decl", "validate", str(path)])
    import gc

    gc.unfreeze()
    try:
        with pytest.raises(SystemExit) as stop:
            cli.run()
        assert stop.value.code == status
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert capsys.readouterr().out.startswith("valid" if status == 0 else "invalid")


def test_python_dash_m_runs_the_console_script():
    done = subprocess.run([sys.executable, "-m", "hurray_decl", "validate", str(VECTOR)], env=ENV,
                          capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "valid: TensorDescriptor\n")
