"""No import cycles in the package, function-level and type-only imports included.

Every ``import`` and ``from ... import`` statement of every module is read with ``ast``
(module level, inside functions and inside ``if TYPE_CHECKING:`` blocks alike: a type-only
import that closes a circle is still two modules that need each other), resolved to the
package's own modules, and the graph is searched for strongly connected components. A
package's ``__init__`` is only an edge where a module names it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "hurray_decl"
PACKAGE = "hurray_decl"


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(tree: ast.AST):
    """Every import statement anywhere in ``tree``, in source order."""
    found = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    yield from sorted(found, key=lambda node: (node.lineno, node.col_offset))


def edges(known: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                targets = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in known else origin
                           for alias in node.names]
            for target in targets:
                while target and target not in known:  # `import a.b.c` names module a.b.c or a.b
                    target = target.rpartition(".")[0]
                if target and target != name and target.startswith(PACKAGE):
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_walker_sees_function_level_and_type_only_imports_and_cycles():
    tree = ast.parse("def f():\n    from .b import x\nif TYPE_CHECKING:\n    from .c import y\n"
                     "if typing.TYPE_CHECKING:\n    import p.d\nelse:\n    import p.e\n")
    assert [getattr(n, "module", None) or n.names[0].name for n in _imports(tree)] == ["b", "c", "p.d", "p.e"]
    assert cycles({"p.a": {"p.b"}, "p.b": {"p.a"}, "p.c": set()}) == [["p.a", "p.b"]]


def test_a_type_only_import_closes_a_cycle(tmp_path, monkeypatch):
    """Two modules that need each other only for a type annotation are still a cycle."""
    package = tmp_path / "hurray_decl"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from hurray_decl.b import B\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\n"
                                  "if TYPE_CHECKING:\n    from hurray_decl.a import A\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", package)
    assert cycles(edges(modules())) == [["hurray_decl.a", "hurray_decl.b"]]


AREAS = {
    "hurray": lambda name: not name.startswith(f"{PACKAGE}.onnx_light"),
    "onnx_light": lambda name: name.startswith(f"{PACKAGE}.onnx_light"),
}


@pytest.mark.parametrize("area", AREAS)
def test_no_import_cycles(area):
    found = [c for c in cycles(edges(modules())) if any(AREAS[area](m) for m in c)]
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_dump_rows_know_no_renderer():
    """The rows are the model; the renderers (and the chooser over them) import the rows, never the reverse."""
    graph = edges(modules())
    assert not {m for m in graph[f"{PACKAGE}.dump.rows"] if m.startswith(f"{PACKAGE}.dump.")}
    assert {f"{PACKAGE}.dump.table", f"{PACKAGE}.dump.html"} <= graph[f"{PACKAGE}.dump.render"]
    users = [m for m, targets in graph.items() if f"{PACKAGE}.dump.render" in targets]
    for caller in ("hurray.dump", "onnx_light.dump", "cli.descriptors", "cli.container", "cli.onnx_light", "cli.html"):
        assert f"{PACKAGE}.{caller}" in users, f"{caller} renders without the chooser"
