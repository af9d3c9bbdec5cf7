"""The models the fast paths build (the compiled descriptor parse, the compiled payload decode)
skip pydantic's type pass: they must be the very models a validating constructor builds from
the same values, on every bundled example and conformance descriptor: equal, with the same
hash, the same fields set, frozen alike, and serialised to the same JSON."""

from __future__ import annotations

import contextlib
import copy
import io
import pickle
from pathlib import Path
from typing import Any

import construct as cs
import pytest
from hypothesis import given, settings, strategies as st
from pydantic import BaseModel, ValidationError

from hurray_decl.declare import schema
from hurray_decl.declare.model import validated
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray import strategies
from hurray_decl.hurray.examples import bundled
from hurray_decl.hurray.quantization import SCHEMES, decode_quantization
from hurray_decl.hurray.tensor import descriptor as declaration, read_tensor_descriptor, write_tensor_descriptor
from hurray_decl.hurray.tensor.reader import field_positions
from tests.paths import CONFORMANCE, DESCRIPTORS

from .tensor_support import manifest

INPUTS = sorted({*(CONFORMANCE / entry["file"] for entry in manifest()), *DESCRIPTORS.glob("*.bin"),
                 *bundled().glob("*.bin")})


@contextlib.contextmanager
def warm_after(uses: int):
    """Parsers and builders compiled after ``uses`` uses (0: at once; a large number: never)."""
    saved = schema.WARM_AFTER
    schema.WARM_AFTER = uses
    try:
        yield
    finally:
        schema.WARM_AFTER = saved


def _validated(value: Any) -> Any:
    """``value`` built again by the validating constructors, nested models first."""
    if isinstance(value, BaseModel):
        return type(value)(**{name: _validated(getattr(value, name)) for name in type(value).model_fields})
    if isinstance(value, tuple):
        return tuple(_validated(v) for v in value)
    return value


def _models(value: Any) -> list[BaseModel]:
    if isinstance(value, BaseModel):
        return [value] + [m for name in type(value).model_fields for m in _models(getattr(value, name))]
    if isinstance(value, tuple):
        return [m for v in value for m in _models(v)]
    return []


def assert_same_model(fast: BaseModel, validated: BaseModel) -> None:
    assert fast == validated and validated == fast
    assert hash(fast) == hash(validated)
    assert fast.model_dump_json() == validated.model_dump_json()
    assert fast.model_dump(mode="json") == validated.model_dump(mode="json")
    pairs = list(zip(_models(fast), _models(validated), strict=True))
    for mine, theirs in pairs:
        assert type(mine) is type(theirs)
        assert mine.__dict__ == theirs.__dict__ and list(mine.__dict__) == list(theirs.__dict__)
        assert mine.model_fields_set == theirs.model_fields_set
        assert (mine.__pydantic_extra__, mine.__pydantic_private__) == (theirs.__pydantic_extra__,
                                                                         theirs.__pydantic_private__)
        name = next(iter(type(mine).model_fields), None)
        if name is not None:
            for model in (mine, theirs):
                with pytest.raises(ValidationError):
                    setattr(model, name, getattr(model, name))


def _accepted() -> list[Path]:
    found = []
    for path in INPUTS:
        try:
            read_tensor_descriptor(path.read_bytes())
        except HurrayDeclError:
            continue
        found.append(path)
    return found


ACCEPTED = _accepted()


def test_every_kind_of_input_is_compared():
    assert len(ACCEPTED) >= 30 and any(p.parent == DESCRIPTORS for p in ACCEPTED)
    kinds = {type(read_tensor_descriptor(p.read_bytes()).quantization).__name__ for p in ACCEPTED}
    assert {"PerTensorAffine", "PerChannelAffine", "PerBlockAffine", "NF4", "MXFP", "NoneType"} <= kinds


@pytest.mark.parametrize("path", ACCEPTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_compiled_parse_builds_the_validated_models(path):
    data = path.read_bytes()
    with warm_after(0):
        fast = declaration.parse_fast(data, False)
    assert fast is not None
    assert_same_model(fast, _validated(fast))
    _, traced, error = declaration.parse_traced(data[:len(write_tensor_descriptor(fast))], False)
    assert error is None and traced is not None
    assert_same_model(fast, traced)


@pytest.mark.parametrize("path", ACCEPTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_compiled_decode_builds_the_validated_models(path):
    data = path.read_bytes()
    if read_tensor_descriptor(data).quantization is None:
        return
    positions = field_positions(data)
    start, prefix = positions["descriptor -> quantization"], positions["descriptor -> quantization_length"]
    payload = data[start:start + int.from_bytes(data[prefix:prefix + 4], "little")]
    with warm_after(10**9):
        interpreted = decode_quantization(payload)
    with warm_after(0):
        fast = decode_quantization(payload)
    for model in (fast, interpreted):
        assert_same_model(model, _validated(model))
    assert_same_model(fast, interpreted)


@pytest.mark.parametrize("path", ACCEPTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_compiled_builder_writes_what_the_interpreted_one_writes(path):
    data = path.read_bytes()
    d = read_tensor_descriptor(data)
    with warm_after(0):
        fast = write_tensor_descriptor(d)
    with warm_after(10**9):
        interpreted = write_tensor_descriptor(d)
    assert fast == interpreted == data[:len(fast)]


def _written(d: Any, **modes: bool) -> Any:
    """The bytes the writer gives, or the error it raises (code, path, offset, actual, expected)."""
    try:
        return write_tensor_descriptor(d, **modes)
    except HurrayDeclError as err:
        return (type(err), err.code, err.path, err.offset, err.actual, err.expected)


def assert_builds_agree(d: Any) -> None:
    for modes in ({}, {"permissive": True}, {"writer_rules": True}):
        with warm_after(0):
            fast = _written(d, **modes)
        with warm_after(10**9):
            interpreted = _written(d, **modes)
        assert fast == interpreted, modes


@settings(max_examples=60)
@given(strategies.tensor_descriptors(), st.data())
def test_compiled_and_interpreted_builds_agree_on_strategy_output_and_mutations(d, data):
    """Bytes or refusal alike, in every mode, for generated descriptors and for whatever a
    permissive read makes of their byte mutations (opaque parts, private ids, newer minors)."""
    assert_builds_agree(d)
    raw = write_tensor_descriptor(d)
    position = data.draw(st.integers(0, len(raw) - 1))
    mutated = raw[:position] + bytes([data.draw(st.integers(0, 255))]) + raw[position + 1:]
    try:
        back = read_tensor_descriptor(mutated, permissive=True)
    except HurrayDeclError:
        return
    assert_builds_agree(back)


@pytest.mark.parametrize("path", ACCEPTED[:8], ids=lambda p: p.name)
def test_a_valid_descriptor_is_written_by_the_compiled_builder_alone(path, monkeypatch):
    data = path.read_bytes()
    d = read_tensor_descriptor(data)

    def interpreted(*args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("the interpreted build ran")

    with warm_after(0):
        write_tensor_descriptor(d)  # compiled once
        for built in (declaration.DESCRIPTOR, *(row.struct for row in SCHEMES)):
            monkeypatch.setattr(built, "build", interpreted)
        assert write_tensor_descriptor(d) == data[:len(write_tensor_descriptor(d))]


def test_only_what_a_constructor_or_reader_made_counts_as_validated():
    d = read_tensor_descriptor(ACCEPTED[0].read_bytes())
    assert validated(d) and validated(_validated(d))
    for other in (copy.copy(d), copy.deepcopy(d), pickle.loads(pickle.dumps(d)), d.model_copy(),
                  type(d).model_construct(**dict(d))):
        assert other == d and not validated(other)
        assert validated(other.checked()) and other.checked() == d


def test_a_compiled_record_remembers_only_verdicts_on_the_value_alone():
    """Checks reading the value alone (their context parameter named ``_``) run once per
    accepted integer; a check reading the context runs on every parse, and a float field is
    judged each time (-0.0 equals 0.0)."""
    calls: list[str] = []

    def small(v: int, _: Any) -> bool:
        calls.append("small")
        return v < 200

    def allowed(v: int, ctx: Any) -> bool:
        calls.append("allowed")
        return v != ctx._params["refused"]

    def positive(v: float, _: Any) -> bool:
        calls.append("positive")
        return v > 0 or str(v) == "0.0"

    record = schema.Record(
        "a" / schema.Rule(schema.Rule(cs.Int8ul, small, "X-1", "< 200", "too large"), allowed, "X-2", "not refused",
                          "refused"),
        "b" / schema.Rule(cs.Float32l, positive, "X-3", "> 0 or 0.0", "negative"),
    )
    parser = schema.compiled(record)
    assert parser is not None

    def parse(a: int, b: float, refused: int) -> Any:
        outer = schema.Context(_params={"refused": refused})
        outer.__dict__ = outer
        return parser.parsefunc(io.BytesIO(cs.Int8ul.build(a) + cs.Float32l.build(b)), outer)

    assert parse(7, 0.0, 0).a == 7 and calls == ["small", "allowed", "positive"]
    calls.clear()
    assert parse(7, 0.0, 0).a == 7 and calls == ["allowed", "positive"]
    with pytest.raises(HurrayDeclError, match="X-2"):
        parse(7, 0.0, 7)  # the context check still runs
    with pytest.raises(HurrayDeclError, match="X-3"):
        parse(7, -0.0, 0)
    with pytest.raises(HurrayDeclError, match="X-1"):
        parse(201, 1.0, 0)
    with pytest.raises(HurrayDeclError, match="X-1"):
        parse(201, 1.0, 0)  # a refused value is never remembered
