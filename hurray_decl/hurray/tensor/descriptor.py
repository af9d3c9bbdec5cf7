"""The whole tensor descriptor as one Construct declaration (DIGEST § 5), the context rules of
DIGEST Appendix A placed in it as zero-width checkpoints where Appendix A checks them.

:data:`DESCRIPTOR` is composed of the section declarations (``HEADER``, the layout rows'
``struct(rank)``, ``HANDLE``, ``STATISTICS``, ``EXTENSION_TYPE``, ``COMPOSITE_MEMBER``, the
scheme rows' structs through :class:`~hurray_decl.hurray.quantization.Payload`): fixed header,
shape, byte_offset, the layout fields chosen by ``layout_tag`` for the rank, the buffer table,
each optional section under its flag in wire order, the length-prefixed quantization payload
(writer padding kept), and the trailing bytes of a newer minor version.

The same declaration is run three ways:

* :func:`parse_traced`: interpreted, on a traced copy (:mod:`hurray_decl.declare.trace`): every field's
  offset and path are recorded, and an error carries its rule, path and byte offset;
* :func:`parse_fast`: untraced, without positions: the declaration itself for its first few
  uses, then Construct's compiled parser of it (:func:`~hurray_decl.declare.schema.fast_parser`);
  whatever it refuses is parsed again by :func:`parse_traced`, which says why;
* :func:`build`: the writer's build, after :func:`~hurray_decl.hurray.tensor.context.check_descriptor`
  at the place the reader checks the context.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from typing import Any

import construct as cs
from construct import this

from hurray_decl.declare.model import remember_validated, wire_fields
from hurray_decl.declare.schema import (
    Record,
    bind,
    build_untraced,
    compiled,
    construct_path,
    fast_parser,
    field_offsets,
    parse_untraced,
    record_format,
    strict_build,
)
from hurray_decl.declare.trace import parse_tree, positions_of
from hurray_decl.errors import HurrayDeclError, RuleViolation, TruncatedError
from hurray_decl.hurray.quantization import Payload, decode_quantization, encode_quantization
from hurray_decl.hurray.tensor.buffers import BUFFER_COUNT, HANDLE, BufferHandle, rule_inputs, verdict_kept
from hurray_decl.hurray.tensor.common import Section, field_names, permissive, trusted
from hurray_decl.hurray.tensor.context import (
    TensorContext,
    check_buffer_table,
    check_composite_member,
    check_descriptor,
    check_extension_flag,
    check_extents,
    check_layout_rank,
    check_quantization,
    check_scalar,
    check_shard,
    check_statistics,
)
from hurray_decl.hurray.tensor.header import HEADER, HEADER_LENGTH, MAGIC, PREAMBLE, Flag, core_fields
from hurray_decl.hurray.tensor.layouts import CompositeHead, Layout, OpaqueLayout, layout_row, row_of
from hurray_decl.hurray.tensor.model import TensorDescriptor
from hurray_decl.hurray.tensor.sections import (
    COMPOSITE_MEMBER,
    EXTENSION_TYPE,
    QUANTIZATION_LENGTH,
    STATISTICS,
    CompositeMember,
    ExtensionType,
    Shard,
    Statistics,
    shard_fields,
)

# ---------------------------------------------------------------- building blocks


def _link(code: Any, con: cs.Construct, call: str) -> str:
    """Compiled code calling ``con.<call>``: the bound method, a global of the compiled module."""
    method, arguments = call.split("(", 1)
    return f"{bind(code, f'{method.lstrip(chr(95))}_{id(con)}', getattr(con, method))}({arguments}"


def _size(stream: Any) -> int:
    return cs.core.stream_size(stream)


def _take(stream: Any, count: int, path: str) -> bytes:
    """``count`` bytes, or HT-HDR-08 when descriptor_length (or the input) ends sooner."""
    left = _size(stream) - stream.tell()
    if count > left:
        raise TruncatedError("HT-HDR-08", "a section ends past descriptor_length", path=construct_path(path),
                             offset=_size(stream), actual=f"{left} bytes left", expected=f"{count} bytes")
    return stream.read(count)


class Items(cs.Array):
    """An array whose elements' errors name their index (``descriptor -> buffers -> 0 -> ...``)."""

    def _parse(self, stream, context, path):
        count = cs.core.evaluate(self.count, context)
        items = cs.ListContainer()
        for index in range(count):
            context._index = index
            items.append(self.subcon._parsereport(stream, context, f"{path} -> {index}"))
        return items

    def _build(self, obj, stream, context, path):
        built = cs.ListContainer()
        for index, item in enumerate(obj):
            context._index = index
            built.append(self.subcon._build(item, stream, context, f"{path} -> {index}"))
        return built

    def _emitparse(self, code):
        return f"ListContainer([{self.subcon._compileparse(code)} for i in range({self.count!r})])"

    strict_build = True

    def _emitbuild(self, code):
        name = f"build_items_{code.allocateId()}"
        code.append(f"""
            def {name}_item(obj, io, this):
                return {strict_build(code, self.subcon)}
            def {name}(obj, io, this):
                built = ListContainer()
                for index, item in enumerate(obj):
                    this['_index'] = index
                    built.append({name}_item(item, io, this))
                return built
        """)
        return f"{name}(obj, io, this)"


class HandleTable(Items):
    """The buffer table: Items of handle sections whose compiled parse unpacks the whole table
    at once and runs the handle declaration's compiled parser only on a handle whose rule
    inputs (:func:`~hurray_decl.hurray.tensor.buffers.rule_inputs`) it has not accepted before;
    the others' rules gave their verdict already, so their models are made straight away."""

    def __init__(self, count: Any, subcon: cs.Construct, model: type[Section]) -> None:
        super().__init__(count, subcon)
        self.model = model
        self._accepted: set[tuple[Any, ...]] = set()
        fields = [field.name for field in HANDLE.subcons]
        self._names = field_names(model)
        self._picks = [fields.index(name) for name in self._names]
        self._leading = self._picks == list(range(len(self._names)))
        """Whether the model's fields are the handle's first fields, in order (zip takes them)."""
        self._format = record_format(HANDLE)

    def _parse_fast(self, stream: Any, context: Any) -> list[Any]:
        count = context["buffer_count"]
        size = self._format.size  # type: ignore[union-attr]
        raw = _take(stream, count * size, "descriptor -> buffers")
        accepted, names, picks, leading, model = self._accepted, self._names, self._picks, self._leading, self.model
        handles = []
        parse = None
        for index, values in enumerate(self._format.iter_unpack(raw)):  # type: ignore[union-attr]
            key = rule_inputs(values)
            if key not in accepted:
                if parse is None:
                    parse = compiled(self.subcon).parsefunc  # type: ignore[union-attr]
                handles.append(parse(io.BytesIO(raw[index * size:(index + 1) * size]), context))
                if verdict_kept(values):
                    accepted.add(key)
                continue
            handles.append(trusted(model, dict(zip(names, values if leading else [values[i] for i in picks]))))
        return handles

    def _emitparse(self, code):
        if compiled(self.subcon) is None:  # (the handle's format is fixed: 16 bytes)
            return super()._emitparse(code)
        return _link(code, self, "_parse_fast(io, this)")


class Framed(cs.Subconstruct):
    """A section: running out of bytes inside it is HT-HDR-08 under the section's path; a value
    it cannot encode (or any other Construct failure) is the section's own ``rule``."""

    def __init__(self, subcon: cs.Construct, rule: str) -> None:
        super().__init__(subcon)
        self.rule = rule

    def _parse(self, stream, context, path):
        start = stream.tell()
        try:
            return self.subcon._parsereport(stream, context, path)
        except cs.StreamError as exc:
            raise TruncatedError(
                "HT-HDR-08", "a section ends past descriptor_length", path=construct_path(path),
                offset=_size(stream), actual=f"{_size(stream)} bytes", expected="more bytes inside descriptor_length",
            ) from exc
        except cs.ConstructError as exc:
            raise RuleViolation(self.rule, f"cannot read this section: {exc}", path=construct_path(path),
                                offset=start) from exc

    def _build(self, obj, stream, context, path):
        try:
            return self.subcon._build(obj, stream, context, path)
        except (cs.ConstructError, TypeError, KeyError) as exc:
            raise RuleViolation(self.rule, f"the values do not fit the encoding: {exc}",
                                path=construct_path(path)) from exc

    def _emitparse(self, code):
        return self.subcon._compileparse(code)

    strict_build = True

    def _emitbuild(self, code):  # a refusal of the compiled builder is built again interpreted: no framing here
        return strict_build(code, self.subcon)


def _inherits_from_wire(model: type) -> bool:
    """Whether ``model`` makes itself from wire values with Section.from_wire (no class on its
    way there defines another)."""
    for klass in model.__mro__:
        if "from_wire" in klass.__dict__:
            return klass is Section
    return False


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


class ModelOf(cs.Adapter):
    """A section declaration that parses into its model and builds from it."""

    def __init__(self, subcon: cs.Construct, model: type[Section]) -> None:
        super().__init__(subcon)
        self.model = model

    def _decode(self, obj, context, path):
        return self.model.from_wire(obj)

    def _encode(self, obj, context, path):
        return obj.to_wire()

    def _emitparse(self, code):
        record = self.subcon._compileparse(code)
        if not _inherits_from_wire(self.model):
            return f"{bind(code, f'from_wire_{id(self)}', self.model.from_wire)}({record})"
        # Section.from_wire written out for this model: each field read once, arrays made tuples
        arrays = {wire.name for wire in wire_fields(self.subcon) if wire.array}
        values = ", ".join(f"{name!r}: as_tuple(wire[{name!r}])" if name in arrays else f"{name!r}: wire[{name!r}]"
                           for name in field_names(self.model))
        bind(code, "as_tuple", _as_tuple)
        bind(code, "trusted", trusted)
        model = bind(code, f"model_class_{id(self)}", self.model)
        name = f"model_{code.allocateId()}"
        code.append(f"def {name}(wire):\n    return trusted({model}, {{{values}}})")
        return f"{name}({record})"

    strict_build = True

    def _emitbuild(self, code):
        name = f"build_model_{code.allocateId()}"
        code.append(f"""
            def {name}(model, io, this):
                obj = model.to_wire()
                {strict_build(code, self.subcon)}
                return model
        """)
        return f"{name}(obj, io, this)"


def section(subcon: cs.Construct, model: type[Section]) -> Framed:
    """A section read into ``model`` and built from it, under the rule the model names."""
    return Framed(ModelOf(subcon, model), model.rule)


class Checkpoint(cs.Construct):
    """Zero bytes: ``check(context, stream)`` runs the context rules Appendix A checks here and may
    return a value (kept under the checkpoint's name). ``on_build`` is what building runs."""

    def __init__(self, check: Callable[[Any, Any], Any] | None,
                 on_build: Callable[[Any], None] | None = None) -> None:
        super().__init__()
        self.check = check
        self.on_build = on_build
        self.flagbuildnone = True

    def _parse(self, stream, context, path):
        return None if self.check is None else self.check(context, stream)

    def _build(self, obj, stream, context, path):
        if self.on_build is not None:
            self.on_build(context)
        return obj

    def _sizeof(self, context, path):
        return 0

    def _emitparse(self, code):
        return "None" if self.check is None else _link(code, self, "check(this, io)")

    strict_build = True

    def _emitbuild(self, code):
        if self.on_build is None:
            return "obj"
        return f"({bind(code, f'on_build_{id(self)}', self.on_build)}(this), obj)[1]"


class StopIfOpaque(cs.Construct):
    """Nothing after an unrecognised layout can be located (HT-HDR-17): the descriptor ends here.
    Building, a model's ``trailing`` bytes are written after the layout's bytes, kept (a reader
    reads them back as part of the opaque layout's payload: the same bytes)."""

    def __init__(self) -> None:
        super().__init__()
        self.flagbuildnone = True

    def _parse(self, stream, context, path):
        if isinstance(context["layout"], OpaqueLayout):
            raise cs.StopFieldError(path=path)

    def _build(self, obj, stream, context, path):
        if isinstance(context["layout"], OpaqueLayout):
            stream.write(context.get("trailing") or b"")
            raise cs.StopFieldError(path=path)

    def _sizeof(self, context, path):
        return 0

    def _emitparse(self, code):
        return _link(code, self, "_parse(io, this, '(parsing)')")


# ---------------------------------------------------------------- layout and quantization


def _row(tag: int) -> Any:
    try:
        return layout_row(tag)
    except KeyError:
        return None


class LayoutFields(cs.Construct):
    """The layout fields: the struct of the row ``layout_tag`` selects, for the rank; in
    permissive mode an unrecognised tag's bytes up to descriptor_length, unread (HT-HDR-17)."""

    def __init__(self) -> None:
        super().__init__()
        self._fast: dict[tuple[int, int], tuple[Callable[..., Any], Callable[[Any], Layout]]] = {}
        """The compiled parser and model of each (layout_tag, rank) read so far."""

    def choose(self, context: Any) -> cs.Construct | None:
        row = _row(context["layout_tag"])
        return None if row is None else row.struct(context["rank"])

    def _parse(self, stream, context, path):
        struct = self.choose(context)
        if struct is None:
            payload = _take(stream, context["descriptor_length"] - stream.tell(), path)
            return trusted(OpaqueLayout, {"payload": payload})
        return self._model(context, struct._parsereport(stream, context, path))

    def _parse_fast(self, stream, context):
        """The layout by the compiled parser of its struct (reached from compiled code only)."""
        key = (context["layout_tag"], context["rank"])
        found = self._fast.get(key)
        if found is None:
            struct = self.choose(context)
            fast = None if struct is None else compiled(struct)
            if fast is None:
                return self._parse(stream, context, "(parsing)")
            found = self._fast[key] = (fast.parsefunc, layout_row(key[0]).model.from_wire)
        parse, model = found
        return model(parse(stream, context))

    @staticmethod
    def _model(context: Any, wire: Any) -> Layout:
        return layout_row(context["layout_tag"]).model.from_wire(wire)

    def _build(self, obj, stream, context, path):
        if isinstance(obj, OpaqueLayout):  # its unrecognised layout_tag was refused unless permissive (HT-HDR-16)
            stream.write(obj.payload)
            return obj
        row_of(obj).struct(context.rank)._build(obj.to_wire(), stream, context, path)
        return obj

    def _emitparse(self, code):
        return _link(code, self, "_parse_fast(io, this)")

    def _build_fast(self, obj: Any, stream: Any, context: Any) -> Any:
        """The compiled builder of the layout's struct (reached from compiled code only)."""
        fast = None if isinstance(obj, OpaqueLayout) else compiled(row_of(obj).struct(context["rank"]))
        if fast is None:  # an opaque layout's payload, or a struct that does not compile
            return self._build(obj, stream, context, "(building)")
        fast.buildfunc(obj.to_wire(), stream, context)
        return obj

    strict_build = True

    def _emitbuild(self, code):
        return _link(code, self, "_build_fast(obj, io, this)")


def _not_composite(context: Any) -> None:
    if isinstance(context["layout"], CompositeHead):
        raise RuleViolation("HT-LAY-76", "a composite head is never quantized", path="descriptor -> flags",
                            actual=f"0x{context.flags:08X}", expected="HAS_QUANTIZATION clear")


_QUANTIZATION_PATH = "descriptor -> quantization"
"""Where the quantization payload is, in error paths."""


class QuantizationSection(Payload):
    """quantization_length bytes, decoded by the scheme their scheme_tag names; bytes after the
    scheme's fields are kept as writer padding (HQ-HDR-05). A traced parse descends into the
    payload through the scheme's declaration (:class:`~hurray_decl.hurray.quantization.Payload`)."""

    def __init__(self) -> None:
        super().__init__(this.quantization_length, _QUANTIZATION_PATH, _not_composite)

    def _parse(self, stream, context, path):
        start = stream.tell()
        if context["quantization_length"] > _size(stream) - start:
            _take(stream, context["quantization_length"], path)  # HT-HDR-08, in the take's words
        return super()._parse(stream, context, path)

    def _build(self, obj, stream, context, path):
        stream.write(context._payload)
        return obj

    def _parse_fast(self, stream: Any, context: Any) -> Any:
        """The payload as :meth:`_parse` reads it, for the compiled parse (which says nothing of
        where a refusal is): any error refuses."""
        data = _take(stream, context["quantization_length"], _QUANTIZATION_PATH)
        if self.check is not None:
            self.check(context)
        return decode_quantization(data, permissive=permissive(context))

    def _emitparse(self, code):
        return _link(code, self, "_parse_fast(io, this)")


# ---------------------------------------------------------------- the context checkpoints


def _values(context: Any) -> dict[str, Any]:
    """Every TensorDescriptor field from what has been parsed so far (absent sections None)."""
    get = context.get
    values = {name: get(name) for name in field_names(TensorDescriptor)}
    values.update(shape=tuple(values["shape"]), buffers=tuple(values["buffers"] or ()),
                  trailing=values["trailing"] or b"")
    return values


def _before_layout(context: Any, stream: Any) -> None:
    """Step 10: a scalar is row-major, before its layout fields are read."""
    if context["rank"] == 0 and _row(context["layout_tag"]) is not None:
        check_scalar(0, context["layout_tag"])


def _after_layout(context: Any, stream: Any) -> TensorDescriptor | None:
    """Step 10 after the fields (the rank the layout needs), step 11 (HAS_EXTENSION_TYPE). An
    unrecognised layout ends the descriptor: it is checked as a whole and returned."""
    if isinstance(context["layout"], OpaqueLayout):
        descriptor = trusted(TensorDescriptor, _values(context))
        check_descriptor(descriptor)
        return descriptor
    check_layout_rank(layout_row(context["layout_tag"]), context["rank"])
    check_extension_flag(context["type_tag"], context["flags"])
    return None


def _buffer_table(context: Any, stream: Any) -> None:
    """Step 12, before the handles: who owns buffers, byte_offset 0 where required."""
    check_buffer_table(context["layout"], context["buffer_count"], context["byte_offset"])


_FIELDS = field_names(TensorDescriptor)
_READ_BY_STEP_13 = _FIELDS[:_FIELDS.index("quantization") + 1]
"""The descriptor's fields (in wire order) read when step 13 runs; the sections after it are not yet."""
_NOT_YET = dict.fromkeys(_FIELDS[len(_READ_BY_STEP_13):])


def _quantization(context: Any, stream: Any) -> None:
    """Step 13: the payload against its tensor, placement, colocation, buffer count."""
    values = {name: context[name] for name in _READ_BY_STEP_13}
    values.update(_NOT_YET)
    values["shape"], values["buffers"], values["trailing"] = tuple(values["shape"]), tuple(values["buffers"]), b""
    t = context["_tensor"] = TensorContext(trusted(TensorDescriptor, values))
    check_quantization(t)


def _shard(context: Any, stream: Any) -> None:
    check_shard(context["_tensor"], context["shard"])  # step 14


def _statistics(context: Any, stream: Any) -> None:
    check_statistics(context["_tensor"], context["statistics"])  # step 15


def _member(context: Any, stream: Any) -> None:
    check_composite_member(context["layout"], context["composite_member"], context["flags"])  # step 17


def _length(context: Any, stream: Any) -> None:
    """Step 18: the input holds descriptor_length bytes; only a newer minor has more after the
    sections (HT-HDR-09, HT-HDR-11)."""
    have, position = _size(stream), stream.tell()
    if have < context["descriptor_length"]:
        raise TruncatedError("HT-HDR-08", "the input is shorter than descriptor_length", path="descriptor",
                             offset=have, actual=f"{have} bytes", expected=f"{context.descriptor_length} bytes")
    if have > position and context["version_minor"] == 0:
        raise RuleViolation("HT-HDR-09", "descriptor_length disagrees with the sections it holds",
                            path="descriptor -> descriptor_length", actual=context["descriptor_length"],
                            expected=position)


def _extents(context: Any, stream: Any) -> TensorDescriptor:
    """After every section: byte_offset and the buffer sizes the layout addresses."""
    t = context["_tensor"]
    descriptor: TensorDescriptor = t.d  # made at step 13 by this parse, for it alone: completed here
    get = context.get
    descriptor.__dict__.update(shard=get("shard"), statistics=get("statistics"), extension_type=get("extension_type"),
                               composite_member=get("composite_member"), trailing=get("trailing") or b"")
    check_extents(t)
    return descriptor


def _written(context: Any) -> None:
    """Building: the whole context, in Appendix A order, once the header rules have run."""
    params = context._params
    check_descriptor(params["descriptor"], writer_rules=params["writer_rules"])


def _encode(context: Any) -> None:
    """Building: the quantization payload, encoded once (its length is written first)."""
    if context.quantization is not None:
        try:
            context._payload = encode_quantization(context.quantization, permissive=permissive(context))
        except HurrayDeclError as err:  # at its place in the descriptor: after the length prefix
            at = cs.stream_tell(context._io, None) + QUANTIZATION_LENGTH.sizeof()
            raise err.rebased(at, _QUANTIZATION_PATH) from None


def _bare(field: cs.Construct) -> cs.Construct:
    """A declared field without its name and docs (to declare it again, computed on build)."""
    while isinstance(field, cs.Renamed):
        field = field.subcon
    return field


def _flag(flag: Flag) -> Any:
    return this.flags & int(flag)


# ---------------------------------------------------------------- the declaration

DESCRIPTOR = Framed(Record(
    *HEADER.subcons,  # Appendix A steps 1-8: the field rules of the fixed header
    Checkpoint(None, _written),
    *core_fields(this.rank),  # step 9
    Checkpoint(_before_layout),
    "layout" / LayoutFields() * "the fields of the layout layout_tag selects, for the rank",
    "_model" / Checkpoint(_after_layout),
    StopIfOpaque(),
    "buffer_count" / cs.Rebuild(_bare(BUFFER_COUNT), cs.len_(this.buffers)) * BUFFER_COUNT.docs,
    Checkpoint(_buffer_table),
    "buffers" / HandleTable(this.buffer_count, section(HANDLE, BufferHandle), BufferHandle)
    * "buffer_count handles of 16 bytes",
    Checkpoint(None, _encode),
    QUANTIZATION_LENGTH.name / cs.If(_flag(Flag.HAS_QUANTIZATION),
                                     cs.Rebuild(_bare(QUANTIZATION_LENGTH), cs.len_(this._payload)))
    * QUANTIZATION_LENGTH.docs,
    "quantization" / cs.If(_flag(Flag.HAS_QUANTIZATION), QuantizationSection())
    * "flags bit 0: the quantization descriptor, decoded by its scheme_tag",
    Checkpoint(_quantization),
    "shard" / cs.If(_flag(Flag.HAS_SHARD), section(Record(*shard_fields(this._.rank)), Shard))
    * "flags bit 1: where this tensor sits in its parent",
    Checkpoint(_shard),
    "statistics" / cs.If(_flag(Flag.HAS_STATISTICS), section(STATISTICS, Statistics))
    * "flags bit 3: advisory statistics",
    Checkpoint(_statistics),
    "extension_type" / cs.If(_flag(Flag.HAS_EXTENSION_TYPE),
                             section(EXTENSION_TYPE, ExtensionType))
    * "flags bit 2: how to size a private element type",
    "composite_member" / cs.If(_flag(Flag.HAS_COMPOSITE_MEMBER),
                               section(COMPOSITE_MEMBER, CompositeMember))
    * "flags bit 4: this descriptor's role in an overlay composite",
    Checkpoint(_member),
    Checkpoint(_length),
    "trailing" / cs.GreedyBytes * "bytes of a newer minor version after the known sections, kept unread",
    "_model" / Checkpoint(_extents),
), "HT-HDR-03")
"""The whole tensor descriptor (HT-HDR-03), parsed from its first descriptor_length bytes."""

LENGTH_FIELD = next(field for field in HEADER.subcons if field.name == "descriptor_length")
LENGTH_AT = field_offsets(HEADER)["descriptor_length"][0]
"""Where descriptor_length sits, from the header declaration: the writer fills it in last."""


def _format(field: cs.Construct) -> struct.Struct:
    """The struct format of the integer under a field's names and rules."""
    while not isinstance(field, cs.FormatField):
        field = field.subcon
    return struct.Struct(field.fmtstr)


_LENGTH = _format(LENGTH_FIELD)


# ---------------------------------------------------------------- running it


def locate(err: HurrayDeclError, positions: dict[str, int]) -> HurrayDeclError:
    """Give a context error the offset of the field its path names (longest known prefix)."""
    parts = err.path.split(" -> ")
    for end in range(len(parts), 0, -1):
        key = " -> ".join(parts[:end])
        if key in positions:
            return err.located(positions[key])
    return err


def parse_traced(view: bytes, permissive: bool) -> (
        tuple[Any, TensorDescriptor, None] | tuple[Any, None, HurrayDeclError]):
    """The traced parse of ``view`` (a descriptor's first descriptor_length bytes): the recorded
    node tree, the descriptor (None when refused) and the located error."""
    root, value, error = parse_tree(DESCRIPTOR, io.BytesIO(view), params={"permissive": permissive})
    if error is not None:
        return root, None, locate(error, positions_of(root))
    return root, remember_validated(value["_model"]), None


def parse_fast(data: bytes | bytearray | memoryview, permissive: bool) -> TensorDescriptor | None:
    """The untraced parse of the descriptor at the start of ``data`` (its first descriptor_length
    bytes), compiled once warm; None when it refuses (:func:`parse_traced` then says why). The header rules run
    inside the parse, so descriptor_length is read directly where the header declares it."""
    try:
        view = bytes(data[:_LENGTH.unpack_from(data, LENGTH_AT)[0]])  # only the descriptor is copied
        descriptor = parse_untraced(DESCRIPTOR, io.BytesIO(view), {"permissive": permissive})["_model"]
    except (HurrayDeclError, cs.ConstructError, struct.error):  # struct.error: a compiled integer cut short
        return None
    return remember_validated(descriptor)


def preamble_fast(raw: bytes, permissive: bool) -> int | None:
    """descriptor_length from the compiled preamble parse; None when a preamble rule refuses it."""
    try:
        return fast_parser(PREAMBLE).parse(raw, permissive=permissive).descriptor_length
    except (HurrayDeclError, cs.ConstructError):
        return None


def build(d: TensorDescriptor, *, permissive: bool, writer_rules: bool) -> bytes:
    """The bytes of ``d`` (a validated model), descriptor_length filled in last."""
    values = dict(d.__dict__)  # its fields (a validated model holds every one)
    values.update(magic=MAGIC, descriptor_length=HEADER_LENGTH, rank=d.rank, shape=list(d.shape),
                  buffers=list(d.buffers), trailing=d.trailing)
    raw = build_untraced(DESCRIPTOR, values, {"permissive": permissive, "writer_rules": writer_rules, "descriptor": d})
    if d.descriptor_length is not None and d.descriptor_length != len(raw):
        raise RuleViolation("HT-HDR-09", "descriptor_length disagrees with the sections it holds",
                            path="descriptor -> descriptor_length", actual=d.descriptor_length, expected=len(raw))
    length = build_untraced(LENGTH_FIELD, len(raw), {})
    return raw[:LENGTH_AT] + length + raw[LENGTH_AT + len(length):]
