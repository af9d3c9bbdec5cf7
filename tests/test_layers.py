"""The package's floors: every import points down (or sideways within a floor), type-only imports
included, and no module imports another module's private (``_name``) names.

The floors are the design's (README, "Layers"): errors and tables at the ground, declarations
above, then the registry and schemes, the quantization payload, the tensor descriptor, the
container, the numerics of whole tensors, the tools built on all of them, the command line on
top. onnx-light sits beside the Hurray side: it may use the ground, the declaration machinery
and the dump, never the Hurray descriptors.
"""

from __future__ import annotations

import ast

from tests.test_import_cycles import PACKAGE, _imports, edges, modules

FLOORS = {  # module prefix -> floor; the longest matching prefix decides
    "errors": 1, "rules": 1, "lazy_modules": 1, "hurray": 1, "hurray.tables": 1, "hurray.checks": 1,
    "declare": 2, "registry": 2, "dump": 2, "hurray.kernels": 2,
    "hurray.schemes": 3,
    "hurray.quantization": 4,
    "hurray.tensor": 5,
    "hurray.container": 6,
    "hurray.numerics": 7, "hurray.stream": 7,
    "hurray.stream.strategies": 8, "hurray.stream.fuzz_target": 8, "hurray.stream.dump": 8,
    "hurray.container.dump": 8, "hurray.container.strategies": 8, "hurray.container.edit": 8,
    "hurray.dump": 8, "hurray.strategies": 8,
    "hurray.fuzz": 8, "hurray.fuzz_target": 8, "hurray.examples": 8, "hurray.bench": 8, "hurray.parse_bench": 8,
    "hurray.startup_bench": 8,
    "hurray.open_bench": 8,
    "hurray.values": 8, "hurray.entries": 8, "hurray.windows": 8,
    "hurray.files": 8, "hurray.dask_arrays": 8, "hurray.dlpack": 8,
    "fuzz_harness": 8, "convert": 8, "convert.gguf_file": 8, "convert.gguf_mutants": 8,  # on the container declarations
    "convert.safetensors": 8, "convert.checkpoints": 8, "convert.model_quantize": 8,
    "cli": 9, "__main__": 9, "": 9,
    "onnx_light": 5, "onnx_light.dump": 8, "onnx_light.mutants": 8, "onnx_light.fuzz_target": 8,
}
SHARED_ROOT = {"__main__", "errors", "rules", "lazy_modules", "registry", "fuzz_harness", "declare", "dump"}
"""What the package root holds besides the format packages, convert and cli: format-neutral ground only."""
HURRAY_SIDE = ("hurray", "convert")
"""What onnx-light never imports."""


def floor(module: str) -> tuple[int, str]:
    name = module[len(PACKAGE) + 1:] if module != PACKAGE else ""
    best = max((p for p in FLOORS if p == "" or name == p or name.startswith(p + ".")), key=len)
    return FLOORS[best], best


def test_the_package_root_holds_only_shared_ground():
    """Everything Hurray lives in hurray_decl/hurray/; the root is shared / hurray / onnx_light / convert / cli."""
    root = {m[len(PACKAGE) + 1:].split(".")[0] for m in modules() if m != PACKAGE}
    assert root - {"hurray", "onnx_light", "convert", "cli"} == SHARED_ROOT


def test_every_module_has_a_floor():
    assert all(floor(m)[1] for m in modules() if m != PACKAGE)


def test_imports_point_down():
    wrong = []
    for a, targets in edges(modules()).items():
        for b in sorted(targets):
            fa, fb = floor(a), floor(b)
            if fa[1].startswith("onnx_light") and fb[1].startswith("onnx_light"):
                continue  # inside onnx-light: its own order, checked for cycles by test_import_cycles
            if fb[0] > fa[0]:
                wrong.append(f"{a} (floor {fa[0]}) -> {b} (floor {fb[0]})")
    assert not wrong, "imports pointing up:\n" + "\n".join(wrong)


def test_onnx_light_never_reaches_the_hurray_side():
    """Not directly, and not through anything it imports."""
    graph = edges(modules())
    seen: dict[str, str] = {}
    todo = [m for m in graph if floor(m)[1].startswith("onnx_light")]
    for m in todo:
        seen[m] = m
    while todo:
        a = todo.pop()
        for b in graph[a]:
            if b not in seen:
                seen[b] = a
                todo.append(b)
    wrong = []
    for m in sorted(seen):
        if floor(m)[1].split(".")[0] in HURRAY_SIDE:
            chain = [m]
            while seen[chain[-1]] != chain[-1]:
                chain.append(seen[chain[-1]])
            wrong.append(" <- ".join(chain))
    assert not wrong, "onnx-light reaches the Hurray side:\n" + "\n".join(wrong)


def test_no_private_names_cross_modules():
    known = modules()
    wrong = []
    for name, path in known.items():
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                wrong += [f"{name}: from {'.' * node.level}{node.module or ''} import {a.name}"
                          for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    assert not wrong, "private names imported:\n" + "\n".join(wrong)
