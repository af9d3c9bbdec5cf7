"""A refused descriptor is parsed again to say which rule refuses, where: first untraced, in rule
order (a field rule's error holds its own offset), and traced only when the error came from a
model (a rule over several fields, raised without a position). Whichever path answers, the error
must be the one the traced parse gives: same code, path, offset and message."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from hurray_decl.declare import trace as trace_module
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray import strategies
from hurray_decl.hurray.examples import bundled
from hurray_decl.hurray.strategies.mutants import invalid_tensor_descriptors
from hurray_decl.hurray.tensor import descriptor as declaration, read_tensor_descriptor, reader, write_tensor_descriptor
from tests.paths import CONFORMANCE, DESCRIPTORS

from .tensor_support import manifest

INPUTS = sorted({*(CONFORMANCE / entry["file"] for entry in manifest()), *DESCRIPTORS.glob("*.bin"),
                 *bundled().glob("*.bin")})


def key(err: HurrayDeclError) -> tuple[object, ...]:
    return type(err), err.code, err.path, err.offset, str(err)


def traced_error(data: bytes, permissive: bool) -> HurrayDeclError | None:
    """The error of the traced parse alone (the reference), or None when it accepts."""
    try:
        view = reader._preamble(data, permissive)
    except HurrayDeclError as err:
        return err
    return declaration.parse_traced(view, permissive)[2]


def assert_same_refusal(data: bytes) -> HurrayDeclError | None:
    seen = None
    for permissive in (False, True):
        expected = traced_error(data, permissive)
        try:
            read_tensor_descriptor(data, permissive=permissive)
        except HurrayDeclError as err:
            assert expected is not None, "refused, though the traced parse accepts"
            assert key(err) == key(expected)
            seen = err
        else:
            assert expected is None, f"accepted, though the traced parse refuses: {expected}"
    return seen


def test_every_vector_and_example_is_refused_as_the_traced_parse_refuses():
    refused = [p for p in INPUTS if assert_same_refusal(p.read_bytes()) is not None]
    assert len(refused) >= 14


def mutants(data: bytes) -> list[bytes]:
    """Each byte of ``data`` changed to 0x00, 0xFF and +1: field rules and model rules alike."""
    out = []
    for i in range(len(data)):
        for value in {0, 0xFF, (data[i] + 1) & 0xFF} - {data[i]}:
            out.append(data[:i] + bytes([value]) + data[i + 1:])
    return out


@pytest.mark.parametrize("path", sorted(bundled().glob("valid_*.bin")), ids=lambda p: p.name)
def test_every_byte_mutant_of_an_example_is_refused_as_the_traced_parse_refuses(path: Path):
    codes = set()
    for data in mutants(path.read_bytes()):
        err = assert_same_refusal(data)
        if err is not None:
            codes.add(err.code)
    assert len(codes) >= 3


@settings(max_examples=150)
@given(invalid_tensor_descriptors())
def test_rule_labelled_mutants_are_refused_as_the_traced_parse_refuses(case):
    data, _ = case
    assert_same_refusal(data)


@settings(max_examples=60)
@given(strategies.tensor_descriptors(), st.data())
def test_byte_mutants_of_generated_descriptors_are_refused_as_the_traced_parse_refuses(d, data):
    raw = write_tensor_descriptor(d)
    position = data.draw(st.integers(0, len(raw) - 1))
    assert_same_refusal(raw[:position] + bytes([data.draw(st.integers(0, 255))]) + raw[position + 1:])


def first_refusals() -> tuple[bytes, bytes]:
    """An example mutant refused by a field rule (located by the rule) and one refused by a
    model (located from the traced parse's positions)."""
    field = model = None
    for path in sorted(bundled().glob("valid_*.bin")):
        for data in mutants(path.read_bytes()):
            try:
                view = reader._preamble(data, False)
                declaration.DESCRIPTOR.parse(view, permissive=False)
            except HurrayDeclError as err:
                if err.offset is not None and field is None:
                    field = data
                elif err.offset is None and model is None:
                    model = data
            if field is not None and model is not None:
                return field, model
    raise AssertionError("no example mutant of each kind")


def test_a_field_rule_refusal_needs_no_traced_parse_and_a_model_one_a_positions_only_parse(monkeypatch):
    field, model = first_refusals()
    calls: list[str] = []
    full, tree = reader.parse_traced, reader.parse_tree

    def counted_full(view, permissive):
        calls.append("full")
        return full(view, permissive)

    def counted_tree(*args, **kwargs):
        calls.append("positions" if kwargs.get("positions") else "tree")
        return tree(*args, **kwargs)

    monkeypatch.setattr(reader, "parse_traced", counted_full)
    monkeypatch.setattr(reader, "parse_tree", counted_tree)
    with pytest.raises(HurrayDeclError) as field_error:
        read_tensor_descriptor(field)
    assert calls == [] and field_error.value.offset is not None
    with pytest.raises(HurrayDeclError) as model_error:
        read_tensor_descriptor(model)
    assert calls == ["positions"]
    assert key(model_error.value) == key(traced_error(model, False))


def test_a_positions_only_trace_records_fewer_nodes_and_the_same_positions():
    _, model = first_refusals()
    view = reader._preamble(model, False)
    full, _, _ = trace_module.parse_tree(declaration.DESCRIPTOR, view, params={"permissive": False})
    light, _, _ = trace_module.parse_tree(declaration.DESCRIPTOR, view, params={"permissive": False}, positions=True)

    def count(node) -> int:
        return 1 + sum(count(child) for child in node.children)

    assert count(light) * 2 < count(full)
    assert trace_module.positions_of(light) == trace_module.positions_of(full)
