"""The onnx-light codec modules import in one direction only, and never the Hurray side."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "hurray_decl" / "onnx_light"
CODEC = ["profiles", "numerics", "extended", "packing", "methods", "plan", "validate", "wire", "portable", "ort",
         "tensors", "calibrate", "values", "shared", "codec", "model", "operators", "bench"]
"""The codec's modules, ground first: each may import only those before it (and itself)."""
ALLOWED_OUTSIDE = {"errors", "schema", "registry"}
"""The project modules below onnx_light that it may use: errors, declarations, registries."""


def _module_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    return rel.parts[0]


def _imports(path: Path):
    """(level, dotted name) of every relative import in a file, at any depth."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            inside = len(path.relative_to(PACKAGE).parts) - 1   # 1 inside a sub-package
            yield node.level - inside, (node.module or "").split(".")[0], node


def test_codec_modules_import_downwards_only():
    rank = {name: i for i, name in enumerate(CODEC)}
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "_generated" in path.parts:
            continue
        owner = _module_of(path)
        if owner not in rank:
            continue
        for level, target, node in _imports(path):
            if level == 1 and target in rank and rank[target] > rank[owner]:
                problems.append(f"{path.relative_to(PACKAGE)}:{node.lineno} imports .{target} (above it)")
            if level >= 2 and target not in ALLOWED_OUTSIDE:
                problems.append(f"{path.relative_to(PACKAGE)}:{node.lineno} imports ..{target} (the Hurray side)")
    assert problems == []


def test_the_layer_list_names_real_modules():
    present = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()}
    assert set(CODEC) <= present
