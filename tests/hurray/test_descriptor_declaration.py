"""The tensor descriptor as one Construct declaration (issue #11): its compiled and interpreted
(traced) parses agree on every input, the compiled one decides nothing on its own (a refusal is
always located by the traced parse), and the declaration is composed of the section
declarations rather than restating them."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

import construct as cs
import pytest
from hypothesis import given, settings, strategies as st

from hurray_decl.declare import schema
from hurray_decl.declare.model import validated
from hurray_decl.declare.schema import Rule, compiled, field_offsets
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray import strategies
from hurray_decl.hurray.quantization import (
    decode_quantization,
    encode_quantization,
    register_private_scheme,
    unregister_private_scheme,
)
from hurray_decl.hurray.schemes.quantization import SchemeDescriptor
from hurray_decl.hurray.tensor import (
    BufferHandle,
    descriptor as declaration,
    read_tensor_descriptor,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.buffers import HANDLE
from hurray_decl.hurray.tensor.fields import with_field
from hurray_decl.hurray.tensor.header import HEADER, PREAMBLE_LENGTH
from hurray_decl.hurray.tensor.layouts import LAYOUTS, Tiled
from hurray_decl.hurray.tensor.reader import field_positions, trace_tensor_descriptor
from hurray_decl.hurray.tensor.sections import COMPOSITE_MEMBER, EXTENSION_TYPE, STATISTICS
from tests.paths import CONFORMANCE

from .tensor_support import manifest, vector

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "hurray_decl" / "hurray" / "examples").glob("*.bin"))
VECTORS = [CONFORMANCE / entry["file"] for entry in manifest()]
INPUTS = VECTORS + EXAMPLES


def _view(data: bytes) -> bytes:
    """The first descriptor_length bytes, found where the header declares the field."""
    at, size = field_offsets(HEADER)["descriptor_length"]
    return data[:int.from_bytes(data[at:at + size], "little")] if len(data) >= at + size else data


def _outcome(err: HurrayDeclError | None) -> tuple[Any, ...] | None:
    return None if err is None else (type(err), err.code, err.path, err.offset, err.actual, err.expected)


@contextlib.contextmanager
def warm(after: int):
    """Parsers compiled after ``after`` uses (0: compiled at once; a large number: interpreted)."""
    saved = schema.WARM_AFTER
    schema.WARM_AFTER = after
    try:
        yield
    finally:
        schema.WARM_AFTER = saved


def assert_parses_agree(data: bytes, permissive: bool) -> None:
    for after in (0, 10**9):  # the compiled parse, then the untraced interpreted one
        with warm(after):
            _assert_agree(data, permissive)


def _assert_agree(data: bytes, permissive: bool) -> None:
    """Untraced (compiled or not) and traced parses of the one declaration: the same model, or
    the untraced one refuses whatever the reader (the traced parse, after the preamble) refuses."""
    fast = declaration.parse_fast(data, permissive) if len(data) >= PREAMBLE_LENGTH else None
    try:
        read = read_tensor_descriptor(data, permissive=permissive)
    except HurrayDeclError as err:
        assert fast is None, f"the compiled parse accepted what the reader refuses: {err}"
        return
    _, traced, error = declaration.parse_traced(_view(data), permissive)
    assert error is None
    assert fast is not None, "the compiled parse refused a descriptor the traced parse accepts"
    assert fast == traced == read
    assert fast.model_dump(mode="json") == traced.model_dump(mode="json")


@pytest.mark.parametrize("permissive", [False, True], ids=["strict", "permissive"])
@pytest.mark.parametrize("path", INPUTS, ids=[p.name for p in INPUTS])
def test_compiled_and_traced_parses_agree_on_every_vector_and_example(path, permissive):
    assert_parses_agree(path.read_bytes(), permissive)


@pytest.mark.parametrize("path", [p for p in INPUTS if not p.name.startswith("invalid")], ids=lambda p: p.name)
def test_a_valid_descriptor_is_read_by_the_compiled_parse_alone(path, monkeypatch):
    data = path.read_bytes()
    monkeypatch.setattr(schema, "WARM_AFTER", 0)
    assert declaration.parse_fast(data, False) is not None
    monkeypatch.setattr(declaration, "parse_tree", None)  # the traced parse cannot run: never needed
    from hurray_decl.hurray.tensor import reader
    monkeypatch.setattr(reader, "parse_traced", None)
    assert read_tensor_descriptor(data).byte_offset >= 0


@settings(max_examples=60)
@given(strategies.tensor_descriptors(), st.data())
def test_parses_agree_on_strategy_output_and_its_byte_mutations(d, data):
    raw = write_tensor_descriptor(d)
    assert_parses_agree(raw, False)
    position = data.draw(st.integers(0, len(raw) - 1))
    value = data.draw(st.integers(0, 255))
    mutated = raw[:position] + bytes([value]) + raw[position + 1:]
    for candidate in (mutated, raw[:position], raw + bytes([value])):
        assert_parses_agree(candidate, False)
        assert_parses_agree(candidate, True)


@settings(max_examples=80)
@given(strategies.invalid_tensor_descriptors())
def test_a_refusal_is_never_decided_by_the_compiled_parse(case):
    data, rule = case
    for after in (0, 10**9):
        with warm(after):
            assert declaration.parse_fast(data, False) is None
    with pytest.raises(HurrayDeclError) as caught:
        read_tensor_descriptor(data)
    _, traced = trace_tensor_descriptor(data)
    assert traced is not None
    assert _outcome(caught.value) == _outcome(traced)
    assert caught.value.code == rule


def _walk(con: Any, seen: set[int], found: list[Any]) -> None:
    if id(con) in seen:
        return
    seen.add(id(con))
    found.append(con)
    for attr in ("subcon", "subcons", "thensubcon", "elsesubcon"):
        value = getattr(con, attr, None)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, cs.Construct):
                _walk(item, seen, found)


def test_the_declaration_is_composed_of_the_section_declarations():
    found: list[Any] = []
    _walk(declaration.DESCRIPTOR, set(), found)
    ids = {id(c) for c in found}
    for section in (HANDLE, STATISTICS, EXTENSION_TYPE, COMPOSITE_MEMBER, *HEADER.subcons):
        assert id(section) in ids, section
    names = [c.name for c in declaration.DESCRIPTOR.subcon.subcons if c.name and not c.name.startswith("_")]
    assert names == [*(f.name for f in HEADER.subcons), "shape", "byte_offset", "layout", "buffer_count", "buffers",
                     "quantization_length", "quantization", "shard", "statistics", "extension_type",
                     "composite_member", "trailing"]
    # the layout fields are each row's own declaration, chosen by tag for the rank
    chooser = next(c for c in found if isinstance(c, declaration.LayoutFields))
    for row in LAYOUTS:
        assert chooser.choose(cs.Container(layout_tag=row.tag, rank=3)) is row.struct(3)


@pytest.mark.parametrize("path", VECTORS + [p for p in EXAMPLES if p.name.startswith("valid")], ids=lambda p: p.name)
def test_field_positions_are_the_traced_spans(path):
    data = path.read_bytes()
    positions = field_positions(data)
    spans, error = trace_tensor_descriptor(data)
    assert error is None and spans
    for span in spans:
        key = "descriptor -> " + span.path.replace(".", " -> ").replace("[", " -> ").replace("]", "")
        assert positions[key] == span.offset, key
    for name, (offset, _) in field_offsets(HEADER).items():
        assert positions[f"descriptor -> {name}"] == offset
    if "descriptor -> quantization" in positions:
        start = positions["descriptor -> quantization"]
        assert positions["descriptor -> quantization -> scheme_tag"] == start
        assert data[start] == read_tensor_descriptor(data).quantization.scheme_tag


def test_compiled_parsers_refuse_short_reads_like_the_interpreted_ones():
    struct = cs.Struct("n" / cs.Int8ul, "data" / schema.Bytes(cs.this.n))
    fast = compiled(struct)
    assert fast.parse(b"\x02ab").data == b"ab"
    for parser in (struct, fast):
        with pytest.raises(cs.StreamError):
            parser.parse(b"\x03ab")


def test_a_rule_is_checked_by_the_compiled_parser():
    struct = cs.Struct("x" / Rule(cs.Int8ul, lambda v, _: v < 5, "HT-HDR-03", "< 5", "too big"))
    assert compiled(struct).parse(b"\x04").x == 4
    with pytest.raises(HurrayDeclError) as caught:
        compiled(struct).parse(b"\x07")
    assert caught.value.code == "HT-HDR-03" and caught.value.offset is None  # located by the traced parse
    with pytest.raises(HurrayDeclError) as located:
        struct.parse(b"\x07")
    assert located.value.offset == 0 and located.value.path == "descriptor -> x"


class _Counted(SchemeDescriptor):
    scheme_tag: int = 0xF3
    count: int = 0
    data: bytes = b""


def test_a_declaration_that_cannot_compile_is_parsed_interpreted():
    fields = ["count" / cs.Int8ul, "data" / cs.Bytes(lambda ctx: 2)]  # a caller's lambda
    row = register_private_scheme(0xF3, name="counted", fields=fields, model=_Counted)
    try:
        assert compiled(row.struct) is None
        payload = bytes([0xF3, 1, 0, 0, 7, 0xAB, 0xCD, 0xEE])
        assert decode_quantization(payload) == _Counted(count=7, data=b"\xAB\xCD", padding=b"\xEE")
        assert encode_quantization(decode_quantization(payload)) == payload
        with pytest.raises(HurrayDeclError) as caught:  # the interpreted parse locates refusals
            decode_quantization(bytes([0xF3, 0, 0, 0, 7, 0xAB, 0xCD]))
        assert (caught.value.code, caught.value.offset) == ("HQ-HDR-12", 1)
    finally:
        unregister_private_scheme(0xF3)


def test_threads_reading_at_once_read_alike():
    inputs = [p.read_bytes() for p in INPUTS]

    def outcome(data: bytes) -> Any:
        try:
            return read_tensor_descriptor(data)
        except HurrayDeclError as err:
            return _outcome(err)

    expected = [outcome(d) for d in inputs]
    results: list[list[Any]] = [[] for _ in range(8)]

    def work(k: int) -> None:
        for _ in range(5):
            results[k].append([outcome(d) for d in inputs])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(run == expected for runs in results for run in runs) and all(len(r) == 5 for r in results)


def test_a_copy_of_a_read_descriptor_is_validated_again_by_the_writer():
    data = VECTORS[0].read_bytes()
    d = read_tensor_descriptor(data)
    assert validated(d) and write_tensor_descriptor(d) == data
    changed = d.model_copy(update={"type_tag": 0x00})  # bypasses validation: the writer must not
    assert not validated(changed)
    with pytest.raises(HurrayDeclError) as caught:
        write_tensor_descriptor(changed)
    assert caught.value.code == "HE-02"


def test_every_builtin_declaration_compiles():
    """A declaration that cannot compile is parsed interpreted, silently and slowly: none of ours."""
    from hurray_decl.hurray.quantization import SCHEMES
    from hurray_decl.hurray.tensor.header import PREAMBLE

    for rank in range(5):
        for row in LAYOUTS:
            assert compiled(row.struct(rank)) is not None, (row.name, rank)
    for row in SCHEMES:
        assert compiled(row.struct) is not None, row.name
    assert compiled(declaration.DESCRIPTOR) is not None and compiled(PREAMBLE) is not None


def test_warm_the_buffer_table_and_the_layout_take_their_compiled_paths(monkeypatch):
    """The buffer table unpacked at once (a new handle's rule inputs recorded as accepted), a
    recognised layout built by its compiled builder; an opaque layout's payload written by the
    interpreted one."""
    monkeypatch.setattr(schema, "WARM_AFTER", 0)
    found: list[Any] = []
    _walk(declaration.DESCRIPTOR, set(), found)
    table = next(c for c in found if isinstance(c, declaration.HandleTable))
    table._accepted.clear()
    data = vector("quant_per_block_int4_128x128.bin")
    assert declaration.parse_fast(data, False) is not None and table._accepted
    calls: list[tuple[str, str]] = []
    interpreted = declaration.LayoutFields._build

    def spy(self, obj, stream, context, path):
        calls.append((type(obj).__name__, path))
        return interpreted(self, obj, stream, context, path)

    monkeypatch.setattr(declaration.LayoutFields, "_build", spy)
    assert write_tensor_descriptor(read_tensor_descriptor(data)) == data and calls == []
    opaque = with_field(data, "layout_tag", 0xEE)
    assert write_tensor_descriptor(read_tensor_descriptor(opaque, permissive=True), permissive=True) == opaque
    assert calls == [("OpaqueLayout", "(building)")]


def test_warm_a_section_is_built_by_its_own_compiled_builder(monkeypatch):
    """The buffer handles and the sections are written by the builders their ModelOf emits, never
    by a call of the interpreted one."""
    monkeypatch.setattr(schema, "WARM_AFTER", 0)
    data = vector("quant_per_block_int4_128x128.bin")
    d = read_tensor_descriptor(data)
    assert write_tensor_descriptor(d) == data
    calls: list[str] = []
    interpreted = declaration.ModelOf._encode  # what the interpreted build runs first

    def spy(self, obj, context, path):
        calls.append(self.model.__name__)
        return interpreted(self, obj, context, path)

    monkeypatch.setattr(declaration.ModelOf, "_encode", spy)
    assert write_tensor_descriptor(d) == data and calls == []
    monkeypatch.setattr(schema, "WARM_AFTER", 10**9)  # and the spy sees the interpreted build
    assert write_tensor_descriptor(d) == data and calls == ["BufferHandle", "BufferHandle"]


def test_a_model_makes_itself_from_wire_values_by_section_from_wire_unless_it_has_its_own() -> None:
    assert declaration._inherits_from_wire(BufferHandle)
    assert not declaration._inherits_from_wire(Tiled)
