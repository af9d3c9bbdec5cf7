"""The command modules of ``cli/`` stand side by side: none imports another (what two commands
share lives in the shared modules: common, kinds, inputs, outputs, html)."""

from __future__ import annotations

import ast
from pathlib import Path

from hurray_decl import cli

CLI = Path(cli.__file__).parent
COMMANDS = {name.rsplit(".", 1)[1] for name in cli.COMMAND_MODULES}
STILL = {("models", "convert"), ("onnx_light", "audit")}
"""The imports from one command module to another not yet cut (convert's staged writers, the
audit routing); the test fails when one of them goes, so that this list only shrinks."""


def imports_between_commands() -> set[tuple[str, str]]:
    found = set()
    for name in sorted(COMMANDS):
        tree = ast.parse((CLI / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                if parts[:2] == ["hurray_decl", "cli"] and len(parts) == 3 and parts[2] in COMMANDS:
                    found.add((name, parts[2]))
                if node.module == "hurray_decl.cli":
                    found.update((name, alias.name) for alias in node.names if alias.name in COMMANDS)
    return found


def test_no_command_module_imports_another_but_the_listed_ones() -> None:
    assert COMMANDS >= {"descriptors", "dequantize", "audit", "convert", "models", "ls", "container", "stream"}
    assert imports_between_commands() == STILL


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
