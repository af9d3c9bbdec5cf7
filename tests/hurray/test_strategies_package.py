"""The strategies package: the registry rows are the only list of schemes and layouts it
draws from, and its mutants are made through the declarations (located by the reader's trace,
packed to the declared width, or built part by part from the declarations)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hurray_decl import read_tensor_descriptor, write_tensor_descriptor
from hurray_decl.errors import ArgumentError
from hurray_decl.hurray.schemes import BUILTIN
from hurray_decl.hurray.strategies import LAYOUT_KINDS, LAYOUT_STRATEGIES, SCHEME_NAMES, strategy, tensor_descriptors
from hurray_decl.hurray.strategies.patching import assembled, fields, patched
from hurray_decl.hurray.tensor.fields import dotted, packed
from hurray_decl.hurray.tensor.layouts import LAYOUTS
from hurray_decl.hurray.tensor.reader import trace_tensor_descriptor

PACKAGE = Path(__file__).resolve().parents[2] / "hurray_decl" / "strategies"
quick = settings(max_examples=60, suppress_health_check=list(HealthCheck), deadline=None)


def test_schemes_and_layouts_come_from_the_registry_rows():
    assert SCHEME_NAMES == tuple(row.name for row in BUILTIN)
    for row in BUILTIN:
        module = strategy(row)
        assert module is not None and module.NAME == row.name
        for name in ("descriptors", "shape", "for_tensor", "scale_type", "PAGED"):
            assert hasattr(module, name), (row.name, name)
    assert LAYOUT_KINDS == tuple(row.name for row in LAYOUTS)
    assert set(LAYOUT_KINDS) <= set(LAYOUT_STRATEGIES)


def test_no_scheme_is_named_outside_its_own_module():
    """A scheme's name appears in the strategies only in the module named after it (which takes
    it from its row): nothing else restates the list of schemes."""
    names = [row.name for row in BUILTIN]
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        for name in names:
            if path.stem != name:
                assert not re.search(rf"\b{name}\b", text), f"{path.relative_to(PACKAGE)} names {name}"


def test_no_hand_written_offsets_in_the_strategies():
    """No subscript or slice of descriptor bytes at a literal position, no sum of a literal and
    a multiple of the rank: mutants ask the trace where a field is."""
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("patched", "_patch"):
                position = node.args[1] if len(node.args) > 1 else None
                assert not isinstance(position, ast.Constant) or isinstance(position.value, str), (
                    f"{path.name}:{node.lineno} patches a literal offset")
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
                sides = (node.left, node.right)
                literal = any(isinstance(s, ast.Constant) and isinstance(s.value, int) and s.value >= 4 for s in sides)
                ranked = any("rank" in ast.unparse(s) for s in sides)
                assert not (literal and ranked), f"{path.name}:{node.lineno} {ast.unparse(node)}"


@quick
@given(tensor_descriptors())
def test_assembling_the_parts_gives_the_writers_bytes(d):
    """The structural mutants' builder is the writer without its checks: on a valid descriptor
    the two agree byte for byte."""
    assert assembled(d) == write_tensor_descriptor(d)


@quick
@given(tensor_descriptors(), st.data())
def test_a_patched_field_reads_back_as_the_value_written(d, data):
    raw = write_tensor_descriptor(d)
    where = fields(raw)
    spans, _ = trace_tensor_descriptor(raw)
    span = data.draw(st.sampled_from([s for s in spans if isinstance(s.value, int) and s.path != "descriptor_length"]))
    assert where[dotted(span.path)] == (span.offset, span.size)
    out = patched(raw, span.path, span.value)
    assert out == raw  # the same value packs to the same bytes: offset and width are the declaration's
    other = (span.value + 1) % (1 << (8 * span.size))
    changed = patched(raw, span.path, other)
    assert len(changed) == len(raw)
    assert int.from_bytes(changed[span.offset:span.offset + span.size], "little") == other
    end = span.offset + span.size
    assert changed[:span.offset] == raw[:span.offset] and changed[end:] == raw[end:]


@quick
@given(tensor_descriptors(scheme="per_block_affine"))
def test_quantization_fields_are_located_through_the_scheme_declaration(d):
    raw = write_tensor_descriptor(d)
    where = fields(raw)
    offset, size = where["quantization.block_size"]
    assert size == 4 and int.from_bytes(raw[offset:offset + 4], "little") == d.quantization.block_size
    assert read_tensor_descriptor(raw) == read_tensor_descriptor(patched(raw, "quantization.scale_type_tag",
                                                                         d.quantization.scale_type_tag))


def test_packing_refuses_a_value_of_another_width():
    assert packed(-1, 2, negative=True) == b"\xff\xff" and packed(1.5, 4) == b"\x00\x00\xc0\x3f"
    with pytest.raises(ArgumentError):
        packed(b"\x00", 2)
    with pytest.raises(ArgumentError):
        packed(256, 1)
    with pytest.raises(ArgumentError):
        packed(-1, 2)  # a negative value only where the caller says the field is signed


@settings(max_examples=1, deadline=None)
@given(st.data())
def test_an_unknown_layout_or_scheme_name_is_an_argument_error(data):
    with pytest.raises(ArgumentError):
        data.draw(tensor_descriptors(layout="diagonal"))
    with pytest.raises(ArgumentError):
        data.draw(tensor_descriptors(scheme="int3_magic"))
