"""A type checker sees the public API as its real objects, lazy names included.

``hurray_decl``, ``hurray_decl.hurray.tensor``, ``hurray_decl.convert`` and ``hurray_decl.onnx_light``
import their public names on first use (``__getattr__``); the names are declared as data, and
imported again in an ``if TYPE_CHECKING:`` block, which is what mypy reads (a test here checks
that the two name the same objects). Were a name left out of that block,
or the block's import not an explicit re-export, mypy would type it ``Any`` (or refuse it), and
a misspelt attribute of what it returns would pass unseen. mypy runs here on a small snippet
with the project's configuration.

The fields a declared model derives from its Construct declaration (``DeclaredModel``) are
unknown to a type checker, which types them ``Any``; the fields a model writes itself (a tensor
descriptor's sections and layout) and every other class keep their types.
"""

from __future__ import annotations

import ast
import re
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SNIPPET = '''
import numpy as np

import hurray_decl
from hurray_decl.hurray.container import read_container
from hurray_decl.hurray.tensor import TensorDescriptor
from hurray_decl.onnx_light import dequantize_value, quantization_operators


def check(data: bytes) -> None:
    reveal_type(hurray_decl.read_tensor_descriptor(data))
    reveal_type(hurray_decl.quantize(np.zeros(8, np.float32), "per_tensor_affine"))
    reveal_type(hurray_decl.dequantize(hurray_decl.read_tensor_descriptor(data), []))
    reveal_type(read_container("model.hrry").tensor("w").descriptor)
    reveal_type(hurray_decl.QuantizationDescriptor)
    reveal_type(hurray_decl.kernels.Plan)
    reveal_type(TensorDescriptor.model_validate_json)
    reveal_type(dequantize_value)
    reveal_type(quantization_operators)
    reveal_type(hurray_decl.dask.open)
    reveal_type(hurray_decl.read_tensor_descriptor(data).layout)
    hurray_decl.quantize(np.zeros(8, np.float32), "nf4").layuot
    read_container("model.hrry").tensr("w")
'''

EXPECTED = [
    "hurray_decl.hurray.tensor.model.TensorDescriptor",
    "hurray_decl.hurray.values.Tensor",
    "numpy.ndarray",
    "hurray_decl.hurray.tensor.model.TensorDescriptor",
    "-> hurray_decl.hurray.schemes.quantization.Descriptor",
    "def (geometry: hurray_decl.hurray.kernels.plan.Geometry,",
    "-> hurray_decl.hurray.tensor.model.TensorDescriptor",
    "-> numpy.ndarray",
    "-> list[type[hurray_decl.onnx_light.operators.Quantize] | type[hurray_decl.onnx_light.operators.Dequantize]]",
    "-> dict[str, dask.array.core.Array]",
    "hurray_decl.hurray.tensor.layouts.Layout",
]
"""What each ``reveal_type`` of the snippet shows (the start of it, or a part naming the real types)."""


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[str]]:
    api = pytest.importorskip("mypy.api")
    snippet = tmp_path_factory.mktemp("typing") / "snippet.py"
    # A fresh line each run: mypy's cache would otherwise find the snippet unchanged, skip it and
    # reveal nothing (a cached module is not checked again)
    snippet.write_text(SNIPPET + f"# run {uuid.uuid4().hex}\n")
    out, err, _ = api.run([str(snippet), "--config-file", str(ROOT / "pyproject.toml"), "--show-error-codes",
                           "--no-error-summary", "--no-pretty", "--show-absolute-path"])
    assert not err.strip(), err
    lines = [line for line in out.splitlines() if line.startswith(str(snippet))]
    revealed = [m.group(1) for line in lines if (m := re.search(r'note: Revealed type is "(.*)"$', line))]
    errors = [line for line in lines if ": error: " in line]
    return revealed, errors


def test_the_public_api_reveals_its_real_types(checked: tuple[list[str], list[str]]) -> None:
    revealed, _ = checked
    assert len(revealed) == len(EXPECTED), revealed
    for shown, wanted in zip(revealed, EXPECTED):
        assert shown != "Any" and wanted in shown, (wanted, shown)
    assert revealed[0] == EXPECTED[0]  # read_tensor_descriptor(b)
    assert revealed[1] == EXPECTED[1]  # quantize(...): a Tensor


def test_a_misspelt_attribute_of_a_result_is_an_error(checked: tuple[list[str], list[str]]) -> None:
    _, errors = checked
    assert len(errors) == 2, errors
    assert '"Tensor" has no attribute "layuot"' in errors[0] and "[attr-defined]" in errors[0]
    assert '"Container" has no attribute "tensr"' in errors[1]


@pytest.mark.parametrize("package", ["hurray_decl", "hurray_decl.hurray.tensor", "hurray_decl.convert",
                                     "hurray_decl.onnx_light"])
def test_lazy_names_are_explicit_re_exports(package: str) -> None:
    """Every TYPE_CHECKING import of a lazy package is ``name as name``: an explicit re-export,
    which a checker with ``implicit_reexport = false`` (``--strict``) exports. A plain import
    there would be a name the package gives at run time and hides from a strict checker. A
    submodule may take another name (``dask_arrays as dask``): a module alias is exported."""
    import importlib
    import inspect

    path = ROOT.joinpath(*package.split("."), "__init__.py")
    tree = ast.parse(path.read_text())
    blocks = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    aliases = [alias for block in blocks for node in block.body if isinstance(node, ast.ImportFrom)
               for alias in node.names]
    assert aliases, package
    module = importlib.import_module(package)
    renamed = [a.asname for a in aliases if a.asname != a.name]
    assert [name for name in renamed if not inspect.ismodule(getattr(module, name or ""))] == []


def type_checking_imports(path: Path) -> dict[str, tuple[str, str]]:
    """public name -> (module, attribute) of the imports of a package's ``if TYPE_CHECKING:`` blocks."""
    names: dict[str, tuple[str, str]] = {}
    for block in ast.parse(path.read_text()).body:
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING":
            for statement in block.body:
                if isinstance(statement, ast.ImportFrom):
                    for alias in statement.names:
                        names[alias.asname or alias.name] = (statement.module or "", alias.name)
    return names


LAZY_TABLES = {"hurray_decl": "_LAZY", "hurray_decl.convert": "_LAZY", "hurray_decl.onnx_light": "_OPERATOR_NAMES",
               "hurray_decl.hurray.tensor": None, "hurray_decl.hurray.stream": None}
"""Each lazy package and where it keeps its table (None: its ``__all__``, from ``lazy_package``)."""


@pytest.mark.parametrize("package", sorted(LAZY_TABLES))
def test_lazy_names_are_the_type_checking_imports(package: str) -> None:
    """The names a package serves at run time (declared as data) are exactly its TYPE_CHECKING
    imports, and each resolves to the object the import names."""
    import importlib

    module = importlib.import_module(package)
    typed = type_checking_imports(Path(str(module.__file__)))
    typed.pop("__version__", None)
    table = LAZY_TABLES[package]
    served = set(getattr(module, table)) if table else set(module.__all__)
    assert served == set(typed), package
    for name, (source, attribute) in typed.items():
        origin = importlib.import_module(source)
        value = getattr(origin, attribute, None) or importlib.import_module(f"{source}.{attribute}")
        assert getattr(module, name) is value, (package, name)


def test_importing_a_package_parses_no_source() -> None:
    """The lazy names are data: importing the packages (and asking for a lazy name) never reads
    a source file with ``ast``."""
    import os
    import subprocess
    import sys

    code = ("import ast\nparsed = []\nreal = ast.parse\n"
            "ast.parse = lambda *a, **k: parsed.append(1) or real(*a, **k)\n"
            "import hurray_decl, hurray_decl.convert, hurray_decl.hurray.tensor, hurray_decl.hurray.stream\n"
            "hurray_decl.Tensor, hurray_decl.hurray.tensor.CSR, hurray_decl.convert.gguf_parts\n"
            "print(len(parsed))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.strip() == "0", done.stdout + done.stderr
