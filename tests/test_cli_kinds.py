"""The kinds of input, declared once in :mod:`hurray_decl.cli.kinds`: detection returns a
:class:`Kind`, every ``--kind`` choice is a member, ``--help`` names every kind, the options that
do not apply to a kind are refused by its row, and no other module of ``cli/`` spells a kind's
name."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from hurray_decl import cli
from hurray_decl.cli import detection, kinds
from hurray_decl.cli.kinds import KINDS, Kind
from tests.test_cli_harness import build_corpus

CLI = Path(cli.__file__).parent

ALLOWED = {("container.py", "tensor"): "the file stem of a tensor without a usable name",
           ("writers.py", "tensor"): "the file stem of a tensor without a usable name"}
"""String literals equal to a kind's name that are something else, and what."""


def literals(path: Path) -> list[tuple[int, str]]:
    """The string literals of ``path`` that spell a kind's name, outside dict keys, subscripts,
    ``get``/``pop`` keys and ``hasattr``/``getattr`` names (JSON fields and attributes)."""
    names = {str(kind) for kind in Kind}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            skip.update(id(key) for key in node.keys if key is not None)
        elif isinstance(node, ast.Subscript):
            skip.add(id(node.slice))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in ("get", "pop", "setdefault") and node.args:
                skip.add(id(node.args[0]))
            if name in ("hasattr", "getattr") and len(node.args) >= 2:
                skip.add(id(node.args[1]))
            skip.update(id(k.value) for k in node.keywords if k.arg == "unit")
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
            and id(node) not in skip and (path.name, node.value) not in ALLOWED]


def test_no_kind_name_outside_the_kind_table() -> None:
    found = {f"{path.name}:{line}: {value!r}" for path in sorted(CLI.glob("*.py")) if path.name != "kinds.py"
             for line, value in literals(path)}
    assert not found, sorted(found)


def test_the_scan_finds_a_spelled_kind(tmp_path: Path) -> None:
    """The scan is not blind: a comparison with a spelled kind is found, a JSON key is not."""
    sample = tmp_path / "sample.py"
    sample.write_text('if kind == "container":\n    row = {"descriptor": 1}\n', encoding="utf-8")
    assert literals(sample) == [(1, "container")]


def test_every_kind_has_one_row_and_the_lists_are_derived() -> None:
    assert list(KINDS) == list(Kind)
    assert all(row.kind is kind for kind, row in KINDS.items())
    assert set(kinds.DETECTED) | {Kind.AUTO, Kind.HURRAY, Kind.ONNX_LIGHT} == set(Kind)
    assert kinds.ONNX_LIGHT == (Kind.VALUE, Kind.TENSOR, Kind.MODEL)
    assert set(kinds.SUFFIXES.values()) <= set(kinds.DETECTED)
    assert set(kinds.TAKEN_BY) == {Kind.GGUF, Kind.SAFETENSORS}
    assert detection.DESCRIPTOR_MAGIC == b"HRRY" and detection.CONTAINER_MAGIC == b"HRRYFILE"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_kind_choice_is_a_member() -> None:
    seen = 0
    for name, command in _subparsers(cli.build_parser()).items():
        for action in command._actions:
            if "--kind" in action.option_strings:
                seen += 1
                assert all(isinstance(choice, Kind) for choice in action.choices), name
                assert isinstance(action.default, Kind), name
    assert seen >= 7  # inspect, validate, decode, dequantize, audit, extract, fuzz


def test_help_names_every_kind(capsys) -> None:
    assert cli.main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for kind in kinds.DETECTED:
        if kind is not Kind.EMPTY:
            assert KINDS[kind].title in text, kind


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Path]:
    return build_corpus(tmp_path_factory.mktemp("kinds"))


@pytest.mark.parametrize("kind", ["descriptor", "container", "stream", "value", "tensor", "model", "gguf"])
def test_detection_returns_a_kind(corpus, kind) -> None:
    found = detection.detect(argparse.Namespace(input=str(corpus[kind]), offset=0, length=None))
    assert isinstance(found.kind, Kind) and found.kind is Kind(kind)


@pytest.mark.parametrize(("kind", "option", "command", "applies"), [
    (Kind.STREAM, "index", "dequantize", True),
    (Kind.CONTAINER, "index", "dequantize", False),
    (Kind.CONTAINER, "name", "dequantize", True),
    (Kind.CONTAINER, "name", "validate", False),
    (Kind.MODEL, "name", "validate", True),
    (Kind.MODEL, "name", "convert", False),
    (Kind.DESCRIPTOR, "name", "convert", True),
    (Kind.DESCRIPTOR, "buffer", "convert", True),
    (Kind.QUANTIZATION, "region", "dequantize", False),
])
def test_the_options_of_a_kind_come_from_its_row(kind, option, command, applies) -> None:
    assert kinds.applies(option, kind, command) is applies


def test_an_option_for_another_kind_is_refused_naming_both(corpus, capsys) -> None:
    assert cli.main(["validate", "--name", "w", str(corpus["stream"])]) == 2
    err = capsys.readouterr().err
    assert "--name" in err and KINDS[Kind.STREAM].title in err
