"""Every pydantic model's fields equal its Construct declaration's (issue #11, acceptance 1).

The models derive their fields from their declarations (:mod:`hurray_decl.declare.model`, whose
walker reads ``struct.subcons``); this test reads the other side independently, off pydantic's
own field records (annotations, bounds, defaults), and compares. It also shows that the
derivation follows the declaration: a model declared over a changed declaration changes with it.

The expectations are read off the declarations themselves (``struct.subcons``, unwrapped down
to the Construct integer or float under the rules): for each wire field, the model has a field
of the same name (reserved bytes and length prefixes excepted, the model holds neither); an
integer field's bounds are exactly the wire integer's range; a float field is a float of the
wire's width; an array is a tuple of the same element range; a field present only under a
selector (``If``) is optional in the model; and every default the model gives passes the
declaration's own rules. Nothing is listed by hand but the few model fields that live in
another declaration (the header model's sections, a payload's writer padding), each with its
reason.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any, ClassVar

import annotated_types
import construct as cs
import pytest
from pydantic.fields import FieldInfo

from hurray_decl.declare.model import F64, NO_DEFAULT, float_width, wire_fields, wire_range
from hurray_decl.declare.schema import equals, zero_bytes
from hurray_decl.hurray.schemes import BUILTIN
from hurray_decl.hurray.tensor import BufferHandle, CompositeMember, ExtensionType, Shard, Statistics, TensorDescriptor
from hurray_decl.hurray.tensor.buffers import HANDLE
from hurray_decl.hurray.tensor.common import Section
from hurray_decl.hurray.tensor.header import HEADER, core
from hurray_decl.hurray.tensor.layouts import LAYOUTS, MODELS, BlockPaged, PrivateLayout
from hurray_decl.hurray.tensor.sections import COMPOSITE_MEMBER, EXTENSION_TYPE, STATISTICS, shard_fields

RANK = 2
"""The rank rank-dependent declarations are built for (it changes array counts only)."""

F64_MARKERS = typing.get_args(F64)[1:]
"""What marks a model field as a float64 wire field (its JSON form keeps the bits)."""


def _strip_optional(annotation: Any) -> tuple[Any, bool]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(annotation)) == 2:
            return args[0], True
    return annotation, False


def _bounds(metadata: list[Any]) -> tuple[int | None, int | None]:
    low = high = None
    for item in metadata:
        if isinstance(item, FieldInfo):
            sub_low, sub_high = _bounds(item.metadata)
            low = sub_low if sub_low is not None else low
            high = sub_high if sub_high is not None else high
        elif isinstance(item, annotated_types.Ge):
            low = item.ge
        elif isinstance(item, annotated_types.Le):
            high = item.le
    return low, high


@dataclass
class ModelField:
    name: str
    base: Any
    bounds: tuple[int | None, int | None]
    literals: tuple[Any, ...]
    array: bool
    optional: bool
    default: Any
    float64: bool


def model_field(model: type, name: str) -> ModelField:
    info = model.model_fields[name]
    annotation, optional = _strip_optional(info.annotation)
    array = typing.get_origin(annotation) is tuple
    if array:
        annotation = typing.get_args(annotation)[0]
    metadata = list(info.metadata) if not array else []
    float64 = all(marker in metadata for marker in F64_MARKERS) if not array else annotation == F64
    literals: tuple[Any, ...] = ()
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extra = typing.get_args(annotation)
        metadata += extra
    elif typing.get_origin(annotation) is typing.Literal:
        literals = typing.get_args(annotation)
        base = type(literals[0])
    else:
        base = annotation
    return ModelField(name, base, _bounds(metadata), literals, array, optional,
                      None if info.is_required() else info.get_default(call_default_factory=True), float64)


@dataclass(frozen=True)
class Pair:
    label: str
    model: type
    struct: cs.Construct
    elsewhere: frozenset[str] = frozenset()
    """Model fields held by another declaration, or bytes kept as read."""
    derived: frozenset[str] = frozenset()
    """Wire fields the writer derives from the model (not model fields)."""
    derivable: frozenset[str] = frozenset()
    """Model fields that may be None, meaning "the writer derives it" (the wire always has it)."""


SCHEME_ELSEWHERE = frozenset({"padding"})  # writer padding after the fixed fields (HQ-HDR-05)


def pairs() -> list[Pair]:
    out = [Pair(f"layout {row.name}", row.model, row.struct(RANK)) for row in LAYOUTS]
    out.append(Pair("layout private", PrivateLayout, MODELS[PrivateLayout].struct(RANK)))
    out += [
        Pair("shard", Shard, cs.Struct(*shard_fields(RANK))),
        Pair("statistics", Statistics, STATISTICS),
        Pair("extension_type", ExtensionType, EXTENSION_TYPE),
        Pair("composite_member", CompositeMember, COMPOSITE_MEMBER),
        Pair("buffer handle", BufferHandle, HANDLE),
        Pair("tensor descriptor header", TensorDescriptor, cs.Struct(*HEADER.subcons, *core(RANK).subcons),
             elsewhere=frozenset({"layout", "buffers", "quantization", "shard", "statistics", "extension_type",
                                  "composite_member", "trailing"}),
             derived=frozenset({"magic", "rank"}),  # the constant magic; rank = len(shape)
             derivable=frozenset({"descriptor_length", "flags", "layout_tag"})),
    ]
    out += [Pair(f"scheme {row.name}", row.model, row.struct, elsewhere=SCHEME_ELSEWHERE) for row in BUILTIN]
    return out


PAIRS = pairs()


def _context(model: type) -> cs.Container:
    ctx = cs.Container({name: model_field(model, name).default for name in model.model_fields
                        if not model.model_fields[name].is_required()})
    ctx._params = cs.Container(permissive=False)
    return ctx


def compare(pair: Pair) -> list[str]:
    """Every difference between the model and its declaration, as readable lines."""
    problems: list[str] = []
    model = pair.model
    wires = [w for w in wire_fields(pair.struct) if not w.name.startswith("reserved")]
    names = {w.name for w in wires if not w.derived and w.name not in pair.derived}
    model_names = set(model.model_fields) - pair.elsewhere
    if names != model_names:
        problems.append(f"names: only on the wire {sorted(names - model_names)}, "
                        f"only in the model {sorted(model_names - names)}")
    for w in wires:
        if w.name not in model_names:
            continue
        f = model_field(model, w.name)
        if w.array != f.array:
            problems.append(f"{w.name}: array on the wire {w.array}, tuple in the model {f.array}")
        optional_index = w.name in getattr(model, "optional_indices", ()) or w.name in pair.derivable
        if w.optional != (f.optional and not optional_index):
            problems.append(f"{w.name}: optional on the wire {w.optional}, in the model {f.optional}")
        if w.nested:
            continue
        if w.default is not NO_DEFAULT and not f.optional and f.default != w.default:
            problems.append(f"{w.name}: default {f.default!r} in the model, {w.default!r} declared")
        bounds = wire_range(w.leaf)
        width = float_width(w.leaf)
        if bounds is not None:
            if f.literals:
                outside = [v for v in f.literals if not bounds[0] <= v <= bounds[1]]
                if outside:
                    problems.append(f"{w.name}: literal {outside} outside the wire range {bounds}")
            elif f.base is not int or f.bounds != bounds:
                problems.append(f"{w.name}: model {f.base.__name__} {f.bounds}, wire integer {bounds}")
        elif width is not None:
            if f.base is not float or (width == 64) != f.float64:
                problems.append(f"{w.name}: model {f.base}, wire float{width}")
        elif isinstance(w.leaf, cs.Bytes) or type(w.leaf).__name__ == "Bytes":
            if f.base is not bytes:
                problems.append(f"{w.name}: model {f.base}, wire bytes")
        for value in ([f.default] if f.default is not None else []) + list(f.literals):
            if isinstance(value, (tuple, list)):
                continue
            if bounds is not None and not bounds[0] <= value <= bounds[1]:
                problems.append(f"{w.name}: default {value!r} outside the wire range {bounds}")
            for rule in w.rules:
                try:
                    ok = rule.check(value, _context(model))
                except (AttributeError, KeyError, TypeError):
                    continue  # the rule needs a field with no default: covered when models are built
                if not ok:
                    problems.append(f"{w.name}: default {value!r} breaks {rule.code} ({rule.expected})")
    return problems


@pytest.mark.parametrize("pair", PAIRS, ids=[p.label for p in PAIRS])
def test_model_fields_equal_the_declaration(pair):
    assert compare(pair) == []


def test_every_layout_row_and_scheme_row_is_compared():
    labels = {p.label for p in PAIRS}
    assert {f"layout {row.name}" for row in LAYOUTS} <= labels
    assert {f"scheme {row.name}" for row in BUILTIN} <= labels


def test_the_comparison_sees_a_changed_width_a_changed_default_and_a_missing_field():
    """The walker is not blind: a model differing from its declaration in one width, one default
    or one name is reported."""
    from pydantic import create_model

    from hurray_decl.declare.model import U8, U16

    narrow = create_model("NarrowHandle", __base__=BufferHandle, alignment=(U16, 64))
    assert any("alignment" in p for p in compare(Pair("narrow", narrow, HANDLE)))
    paged = MODELS[BlockPaged]
    kv_role = create_model("BadDefault", __base__=BlockPaged, kv_role=(U8, 0x03))
    assert any("kv_role" in p and "HT-LAY-53" in p for p in compare(Pair("default", kv_role, paged.struct(3))))
    extra = create_model("ExtraField", __base__=CompositeMember, member_rank=(U8, 0))
    assert any(p.startswith("names") for p in compare(Pair("extra", extra, COMPOSITE_MEMBER)))
    shorter = cs.Struct(*[s for s in STATISTICS.subcons if s.name != "nm_m"])
    assert any("nm_m" in p for p in compare(Pair("shorter", Statistics, shorter)))


def test_the_walker_reads_wire_widths():
    """The integer ranges and float widths every comparison above leans on, stated independently."""
    assert wire_range(cs.Int8ul) == (0, 0xFF)
    assert wire_range(cs.Int16ul) == (0, 0xFFFF)
    assert wire_range(cs.Int32sl) == (-(1 << 31), (1 << 31) - 1)
    assert wire_range(cs.Int64ul) == (0, (1 << 64) - 1)
    assert wire_range(cs.Float32l) is None and wire_range(cs.Bytes(4)) is None
    assert (float_width(cs.Float16l), float_width(cs.Float32l), float_width(cs.Float64l)) == (16, 32, 64)
    assert float_width(cs.Int32ul) is None


CHANGED = cs.Struct(
    "byte_size" / cs.Default(cs.Int64ul, 7),
    "alignment" / cs.Int16ul,
    "device_tag" / cs.If(cs.this.byte_size > 0, cs.Int8ul),
    "extent" / cs.Array(2, cs.Int32sl),
    "scale" / cs.Float64l,
    "kind" / equals(5, "HT-BUFT-01", "not this kind", cs.Int8ul, selects=True),
    "reserved" / zero_bytes(1, "HT-BUFT-23"),
)
"""The buffer handle's declaration changed: a default, a width, a selector, an array, a float, a
literal; no memory_class, no sync_mode."""


def test_a_declaration_change_shows_up_in_the_model():
    """A model's fields follow its declaration: declared over a changed one, the model changes."""

    class Changed(Section):
        declaration: ClassVar[cs.Construct] = CHANGED

    assert list(Changed.model_fields) == ["byte_size", "alignment", "device_tag", "extent", "scale", "kind"]
    assert model_field(Changed, "byte_size").default == 7
    alignment = model_field(Changed, "alignment")
    assert alignment.bounds == (0, 0xFFFF) and Changed.model_fields["alignment"].is_required()
    device = model_field(Changed, "device_tag")
    assert device.optional and device.default is None and device.bounds == (0, 0xFF)
    extent = model_field(Changed, "extent")
    assert extent.array and extent.base is int and extent.bounds == (-(1 << 31), (1 << 31) - 1)
    assert model_field(Changed, "scale").float64
    assert model_field(Changed, "kind").literals == (5,)
    assert compare(Pair("changed", Changed, CHANGED)) == []
    assert compare(Pair("handle", BufferHandle, CHANGED))  # the real handle no longer matches it


def test_a_field_the_declaration_cannot_type_is_annotated_by_its_model():
    """A nested declaration (``cs.LazyBound``) says no model type: the class must annotate it, and
    what a class annotates wins."""
    nested = cs.Struct("count" / cs.Int8ul, "inner" / cs.LazyBound(lambda: cs.Struct("x" / cs.Int8ul)))
    with pytest.raises(TypeError, match="inner"):
        class Unannotated(Section):
            declaration: ClassVar[cs.Construct] = nested

    class Annotated(Section):
        declaration: ClassVar[cs.Construct] = nested
        inner: bytes = b""

    assert list(Annotated.model_fields) == ["count", "inner"]
    assert Annotated.model_fields["inner"].annotation is bytes
