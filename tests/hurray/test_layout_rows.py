"""Layout behaviour is read from the layout's row, not asked of its class: ``Tensor`` reads the
values of a family of layouts through the category of the row (``values.FAMILIES``), the NumPy
order of row-major and column-major storage is a field of their rows, and CSR and CSC are
siblings (neither is the other, so no test for one needs to rule the other out)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from hurray_decl.hurray import values
from hurray_decl.hurray.tensor.layouts import CSC, CSR, LAYOUTS, MODELS, Compressed, Layout

VALUES = Path(values.__file__)
MAX_LAYOUT_ISINSTANCE = 2


def _layout_class_names() -> set[str]:
    found, todo = {"Layout"}, [Layout]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.add(sub.__name__)
            todo.append(sub)
    return found | {"SPARSE"}


def layout_isinstance_sites(path: Path) -> list[tuple[int, str]]:
    """(line, source) of every ``isinstance(x, C)`` in ``path`` whose class argument names a layout model."""
    names = _layout_class_names()
    tree = ast.parse(path.read_text(), str(path))
    sites = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
                and len(node.args) == 2:
            named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            if named & names:
                sites.append((node.lineno, ast.unparse(node)))
    return sites


def test_values_asks_a_layout_its_class_at_most_twice():
    sites = layout_isinstance_sites(VALUES)
    assert len(sites) <= MAX_LAYOUT_ISINSTANCE, sites


def test_the_scan_sees_an_isinstance_against_a_layout(tmp_path: Path):
    """The scan itself: a site naming a layout class (directly, in a tuple, or starred) is counted."""
    source = tmp_path / "probe.py"
    source.write_text("isinstance(a, CSR)\nisinstance(b, (int, RowMajor))\nisinstance(c, (*SPARSE,))\n"
                      "isinstance(d, str)\n")
    assert [line for line, _ in layout_isinstance_sites(source)] == [1, 2, 3]


def test_every_layout_category_has_a_family():
    rows = list(MODELS.values())
    assert {row.category for row in rows} <= set(values.FAMILIES)
    assert {row.category for row in LAYOUTS} == {"dense", "sparse", "indirect", "virtual"}


def test_sparse_models_are_derived_from_the_rows():
    assert {m.__name__ for m in values.SPARSE} == {"COO", "CSR", "CSC", "CSF"}


def test_csr_and_csc_are_siblings():
    assert not isinstance(CSC(nnz=1), CSR) and not isinstance(CSR(nnz=1), CSC)
    assert isinstance(CSR(nnz=1), Compressed) and isinstance(CSC(nnz=1), Compressed)
    assert (CSR.pointer_axis, CSC.pointer_axis) == (0, 1)


def test_numpy_orders_are_row_fields():
    orders = {row.name: row.numpy_order for row in LAYOUTS if row.numpy_order is not None}
    assert orders == {"row_major": "C", "column_major": "F"}
    assert set(values.LAYOUT_NAMES) == {"row-major", "column-major"}


@pytest.mark.parametrize("layout", ["row-major", "column-major"])
def test_from_numpy_stores_the_rows_order(layout: str):
    """The data buffer holds the elements in the row's NumPy order, by hand: element [i, j] of a
    3 x 5 int16 array at 2 * (5i + j) row-major, 2 * (i + 3j) column-major."""
    array = np.arange(15, dtype=np.int16).reshape(3, 5) * 7 - 40
    t = values.Tensor.from_numpy(array, layout=layout)
    stored = np.frombuffer(bytes(t.buffers[0]), "<i2")
    for i in range(3):
        for j in range(5):
            at = 5 * i + j if layout == "row-major" else i + 3 * j
            assert stored[at] == array[i, j]
    assert np.array_equal(t.numpy(), array)
    assert np.array_equal(np.from_dlpack(t), array)


def test_from_numpy_refuses_other_layouts():
    from hurray_decl.errors import ArgumentError
    from hurray_decl.hurray.tensor.layouts import Strided

    with pytest.raises(ArgumentError):
        values.Tensor.from_numpy(np.zeros(3), layout=Strided(strides=(1,)))
    with pytest.raises(ArgumentError):
        values.Tensor.from_numpy(np.zeros(3), layout=object())
