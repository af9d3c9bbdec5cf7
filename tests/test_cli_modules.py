"""The command modules of ``cli/`` stand side by side: none imports another (what two commands
share lives in the shared modules: common, kinds, inputs, detection, outputs, report, writers,
conversions, corpus, html ...), and no module of ``cli/`` grows past its bound."""

from __future__ import annotations

import ast
from pathlib import Path

from hurray_decl import cli

CLI = Path(cli.__file__).parent
COMMANDS = {name.rsplit(".", 1)[1] for name in cli.COMMAND_MODULES}
MODULE_LIMIT = 800
"""Lines of any module of ``cli/``."""
CONVERT_LIMIT = 300
"""Lines of ``cli/convert.py``: the command, its options and its handler; the readers and
writers are the table's (``cli/conversions.py``, ``cli/writers.py``)."""


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports (function-level and type-only imports included), with the
    names imported from a package as modules of their own (``from hurray_decl.cli import convert``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) \
                == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
            found.add(str(node.args[0].value))
    return found


def imports_between_commands() -> set[tuple[str, str]]:
    return {(name, other) for name in sorted(COMMANDS) for other in COMMANDS - {name}
            if f"hurray_decl.cli.{other}" in imports_of(CLI / f"{name}.py")}


def test_no_command_module_imports_another() -> None:
    assert COMMANDS >= {"descriptors", "dequantize", "audit", "convert", "models", "ls", "container", "stream",
                        "onnx_light"}
    assert imports_between_commands() == set()


def test_the_scan_sees_every_form_of_import(tmp_path) -> None:
    """The scan would catch an import from one command module to another in any of its forms."""
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from hurray_decl.cli import convert\n    import hurray_decl.cli.audit\n"
                     "    from hurray_decl.cli.models import report\n"
                     "    importlib.import_module('hurray_decl.cli.ls')\n", encoding="utf-8")
    found = {m for m in imports_of(probe) if m.removeprefix("hurray_decl.cli.") in COMMANDS}
    assert found == {"hurray_decl.cli.convert", "hurray_decl.cli.audit", "hurray_decl.cli.models",
                     "hurray_decl.cli.ls"}


def test_no_cli_module_is_over_its_bound() -> None:
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in CLI.glob("*.py")}
    assert sizes["convert.py"] <= CONVERT_LIMIT, sizes["convert.py"]
    assert {name: n for name, n in sizes.items() if n > MODULE_LIMIT} == {}


def _run_parsed(argv: list[str], stdin: bytes | None = None) -> tuple[int, dict, dict]:
    """(status, the arguments as parsed, the same after the command ran)."""
    import copy
    import io
    import sys

    args = cli.build_parser().parse_args(argv)
    before = copy.deepcopy(vars(args))
    saved = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        status = args.run(args)
    finally:
        sys.stdin = saved
    return status, before, vars(args)


def test_handlers_write_nothing_into_the_parsed_arguments(tmp_path, capsys) -> None:
    """dispatch hands each handler the arguments resolved in a namespace of its own: the input
    taken from --buffers, the kind detected, the window spent on standard input."""
    import numpy as np

    import hurray_decl as hd

    t = hd.quantize(np.linspace(-1, 1, 256).reshape(4, 64), "per_block_affine", block_size=32, storage="int4")
    desc = tmp_path / "w.bin"
    desc.write_bytes(hd.write_tensor_descriptor(t.descriptor))
    buffers = []
    for i, b in enumerate(t.buffers):
        buffers.append(tmp_path / f"w.buf{i}.bin")
        buffers[-1].write_bytes(bytes(b))
    cases = [
        (["validate", "--buffers", *map(str, buffers), str(desc)], None),
        (["inspect", "-", "--offset", "3"], b"xyz" + desc.read_bytes()),
        (["dequantize", str(desc), *map(str, buffers), "-o", str(tmp_path / "x.npy")], None),
        (["decode", str(desc)], None),
    ]
    for argv, stdin in cases:
        status, before, after = _run_parsed(argv, stdin)
        assert status == 0, (argv, capsys.readouterr())
        assert after == before, argv
    capsys.readouterr()


def _options(parser) -> dict[str, set[str]]:
    import argparse

    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: {flag for a in command._actions for flag in a.option_strings}
            for name, command in action.choices.items()}


def test_every_command_declares_its_own_options() -> None:
    """Each command module's parsers have every option they will have: no other module adds one
    (the full parser's options of each command are those its own module gives it alone)."""
    import argparse
    import importlib

    full = _options(cli.build_parser())
    for module in cli.COMMAND_MODULES:
        alone = argparse.ArgumentParser()
        importlib.import_module(module).register(alone.add_subparsers(dest="command"))
        for name, flags in _options(alone).items():
            assert flags == full[name], (module, name, full[name] - flags)
