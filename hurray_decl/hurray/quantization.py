"""The engine: decode, encode and kernel dispatch on the scheme tag, for every registered scheme.

A scheme module supplies its Construct declaration, its model and (later) its kernel; the
engine owns framing, the tag space, permissive mode and error positions.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import Any

import construct as cs

from hurray_decl.declare import json_text
from hurray_decl.declare.schema import build_untraced, parse_exact, parse_untraced
from hurray_decl.declare.trace import parse_inside
from hurray_decl.errors import (
    ArgumentError,
    HurrayDeclError,
    OpaqueDataAccess,
    RegistrationError,
    RuleViolation,
    TruncatedError,
    UnsupportedError,
)
from hurray_decl.hurray.schemes import BUILTIN, ggml_codebook, ggml_super_block
from hurray_decl.hurray.schemes.quantization import (
    HEADER_LENGTH,
    HEADER_OFFSETS,
    PAYLOAD_HEADER,
    Descriptor,
    OpaqueQuantization,
    SchemeDescriptor,
    descriptor_struct,
)
from hurray_decl.hurray.tables.codes import PRIVATE_SPAN
from hurray_decl.hurray.tables.tags import PRIVATE_RANGE, TagClass, classify, skippable, tag_error
from hurray_decl.registry import SchemeRow, Table

SCHEMES: Table[int, SchemeRow[SchemeDescriptor]] = Table("scheme", "HQ-EXT-03")
"""Every scheme this reader decodes, keyed by tag: the built-in five and registered private ones."""

for _row in BUILTIN:
    SCHEMES.register(_row.tag, _row)

ASSIGNED: frozenset[int] = frozenset(row.tag for row in BUILTIN)


def scheme(key: int | str) -> SchemeRow[SchemeDescriptor]:
    """The row of a scheme, by tag or by name (``per_block_affine``)."""
    found = SCHEMES.get(key) if type(key) is int else None  # the table is keyed by tag
    if found is not None:
        return found
    for row in SCHEMES:
        if key in (row.tag, row.name):
            return row
    raise UnsupportedError(
        "HQ-HDR-08", f"no scheme {key!r} is registered", path="scheme", actual=key,
        expected=", ".join(row.name for row in SCHEMES),
    )


def _too_short(have: int, need: int, what: str) -> TruncatedError:
    return TruncatedError(
        "HQ-HDR-04",
        f"the payload is shorter than {what}",
        path="descriptor",
        offset=have,
        actual=f"{have} bytes",
        expected=f"at least {need} bytes",
    )


def decode_quantization(payload: bytes, *, permissive: bool = False) -> Descriptor:
    """Decode one quantization descriptor from exactly ``quantization_length`` bytes.

    Nothing past ``payload`` is read. Bytes after the scheme's fixed fields are kept as
    writer padding. In permissive mode an unrecognised (but not invalid) tag yields an
    :class:`OpaqueQuantization` instead of an error.
    """
    try:
        data = payload if type(payload) is bytes else bytes(memoryview(payload))
    except TypeError:
        raise ArgumentError("payload", "a quantization payload is decoded from bytes", actual=type(payload).__name__,
                            expected="bytes, bytearray, memoryview or another bytes-like object") from None
    row = SCHEMES.get(data[0]) if data else None
    if row is not None and len(data) >= row.length:
        fast = _decode_fast(row, data)
        if fast is not None:
            return fast
    return _decode(data, permissive)


def _decode(data: bytes, permissive: bool, fields: tuple[Any, BaseException | None] | None = None) -> Descriptor:
    """The ordered decode (DIGEST Appendix A order), which says which rule refuses, where.
    ``fields``: the scheme's fixed fields as a traced parse of them already read them (value,
    error), instead of parsing them here again."""
    if not data:
        raise _too_short(0, 1, "the scheme_tag byte")
    tag = data[0]
    row = SCHEMES.get(tag)
    if row is None:
        if not (permissive and skippable(tag)):
            raise tag_error(tag, offset=HEADER_OFFSETS["scheme_tag"])
        if len(data) < HEADER_LENGTH:
            raise _too_short(len(data), HEADER_LENGTH, "the 4-byte header")
        header = PAYLOAD_HEADER.parse(data[:HEADER_LENGTH])
        return OpaqueQuantization(scheme_tag=header.scheme_tag, scheme_version=header.scheme_version,
                                  flags=header.flags, payload=data[HEADER_LENGTH:])
    if len(data) < HEADER_LENGTH:
        raise _too_short(len(data), HEADER_LENGTH, "the 4-byte header")
    parse_exact(row.version_check, data[:2])
    if len(data) < row.length:
        raise _too_short(len(data), row.length, f"the {row.length}-byte {row.title} encoding")
    if fields is None:
        wire = parse_exact(row.struct, data[: row.length])
    else:
        wire, stopped = fields
        if isinstance(stopped, HurrayDeclError):
            raise stopped
        if stopped is not None:  # the fixed-size fields are all there: nothing else stops them
            raise TruncatedError("HQ-HDR-04", "the input ends inside a field", path="descriptor",
                                 offset=row.length) from stopped
    return _model_from_wire(row, wire, data[row.length:])


PADDING = "padding" / cs.GreedyBytes * "writer padding, never interpreted"
"""The bytes after a scheme's fixed fields (HQ-HDR-05)."""

OPAQUE = cs.Struct(*PAYLOAD_HEADER.subcons, "payload" / cs.GreedyBytes * "the fields of a scheme this reader skips")
"""A payload of a scheme this reader does not know, read in permissive mode."""

UNKNOWN_TAG = cs.Struct(PAYLOAD_HEADER.subcons[0])
"""The scheme_tag of a payload refused for its tag: all that is read of it."""


class Payload(cs.Construct):  # type: ignore[misc]  # construct ships no types
    """A quantization payload of ``length`` bytes (the rest of the input when None), decoded as
    :func:`decode_quantization` decodes it; an error is moved to the payload's place, under
    ``where`` (when given).

    Parsed through a traced copy (:mod:`hurray_decl.declare.trace`), the parse descends into the
    payload through its scheme's declaration (:meth:`choose`), so that one traced parse names
    every payload field: the hex dump, field lookups and error positions all read that trace,
    and the decode takes the fields it read. ``check(context)`` runs before the decode (a rule
    of the enclosing structure about the payload as a whole).
    """

    def __init__(self, length: Any = None, where: str | None = None,
                 check: Callable[[Any], None] | None = None) -> None:
        super().__init__()
        self.length = length
        self.where = where
        self.check = check
        self.flagbuildnone = True

    def choose(self, part: Any) -> cs.Construct | None:
        """The declaration of one part of a payload: a scheme's fixed fields by tag,
        ``"padding"``, ``"opaque"`` or ``"unknown"`` (a traced copy returns its traced copy)."""
        if part == "padding":
            return PADDING
        if part == "opaque":
            return OPAQUE
        if part == "unknown":
            return UNKNOWN_TAG
        row = SCHEMES.get(part)
        return None if row is None else row.struct

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        start = stream.tell()
        length = cs.core.stream_size(stream) - start if self.length is None else cs.core.evaluate(self.length,
                                                                                                 context)
        data = stream.read(length)
        params = getattr(context, "_params", None) or {}
        permissive = bool(params.get("permissive", False))
        fields = self._descend(data, start, permissive) if self.choose("padding") is not PADDING else None
        if self.check is not None:
            self.check(context)
        try:
            if fields is None:
                return decode_quantization(data, permissive=permissive)
            return _decode(data, permissive, fields)
        except HurrayDeclError as err:
            if self.where is None:
                raise
            raise err.rebased(start, self.where) from None

    def _descend(self, data: bytes, start: int, permissive: bool) -> tuple[Any, BaseException | None] | None:
        """Trace the payload's fields (only on a traced copy): the scheme's declaration, then
        its padding; of an unknown scheme what a reader reads of it. Returns the scheme's
        fields as parsed (value, error), or None."""
        row = SCHEMES.get(data[0]) if data else None
        if row is not None:
            fields = parse_inside(self.choose(row.tag), data[:row.length], start)
            if fields[1] is None and len(data) > row.length:
                parse_inside(self.choose("padding"), data[row.length:], start + row.length)
            return fields
        if data:
            opaque = permissive and skippable(data[0]) and len(data) >= HEADER_LENGTH
            parse_inside(self.choose("opaque" if opaque else "unknown"), data if opaque else data[:1], start)
        return None

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        raw = encode_quantization(obj, permissive=bool((getattr(context, "_params", None) or {}).get("permissive")))
        stream.write(raw)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise cs.SizeofError("a quantization payload has no fixed size", path=path)


PAYLOAD = Payload()
"""A bare quantization payload: the whole input (what the hex dump traces for one)."""


def _decode_fast(row: SchemeRow[SchemeDescriptor], data: bytes) -> SchemeDescriptor | None:
    """The untraced parse of a whole scheme encoding (compiled once warm); None when it refuses
    (the ordered parse then says which rule, where)."""
    try:
        wire = parse_untraced(row.struct, io.BytesIO(data[: row.length]), {})
        values = row.model.wire_fields(wire)
        values["padding"] = data[row.length:]
        return row.model.parsed(values)
    except (HurrayDeclError, cs.ConstructError):
        return None


def _model_from_wire(row: SchemeRow[SchemeDescriptor], wire: Any, padding: bytes) -> SchemeDescriptor:
    values = row.model.wire_fields(dict(wire))
    values["padding"] = padding
    try:
        return row.model.parsed(values)
    except HurrayDeclError as err:
        field = err.path.rsplit(" -> ", 1)[-1]
        if field in row.offsets:
            err.located(row.offsets[field][0])
        raise


def encode_quantization(descriptor: Descriptor, *, permissive: bool = False) -> bytes:
    """Encode a descriptor to its payload bytes (fixed fields, then any padding it carries).

    An :class:`OpaqueQuantization` is written back byte for byte only with ``permissive=True``;
    otherwise its tag is refused as a writer would refuse it.
    """
    if not isinstance(descriptor, Descriptor):
        raise RuleViolation("HQ-HDR-02", "encode_quantization takes a quantization descriptor model",
                            path="descriptor", actual=type(descriptor).__name__, expected="a Descriptor")
    descriptor = descriptor.checked()  # a model_construct / model_copy(update=...) result too
    if isinstance(descriptor, OpaqueQuantization):
        if not permissive or not skippable(descriptor.scheme_tag):
            raise tag_error(descriptor.scheme_tag, offset=HEADER_OFFSETS["scheme_tag"], writing=True)
        return (
            bytes([descriptor.scheme_tag, descriptor.scheme_version])
            + int(descriptor.flags).to_bytes(2, "little")
            + descriptor.payload
        )
    row = SCHEMES.get(descriptor.scheme_tag)
    if row is None or not isinstance(descriptor, row.model):
        raise tag_error(descriptor.scheme_tag, offset=HEADER_OFFSETS["scheme_tag"], writing=True)
    try:
        fixed = build_untraced(row.struct, descriptor.to_wire(), {})
    except HurrayDeclError:
        raise
    except cs.ConstructError as exc:
        raise RuleViolation(
            row.layout_rule, f"the descriptor does not fit the {row.title} encoding: {exc}",
            path="descriptor",
        ) from exc
    return fixed + descriptor.padding


def load_quantization(data: Any) -> Descriptor:
    """A descriptor from its JSON form (a mapping or JSON text), dispatched on ``scheme_tag``."""
    if isinstance(data, (str, bytes)):
        try:
            data = json_text.loads(data)
        except json_text.TooDeep as exc:
            raise RuleViolation("HQ-HDR-02", f"the JSON nests too deeply: {exc}", path="descriptor",
                                expected=f"at most {json_text.MAX_DEPTH} levels") from None
        except ValueError as exc:
            raise RuleViolation("HQ-HDR-02", f"not JSON: {exc}", path="descriptor") from exc
    tag = data.get("scheme_tag") if isinstance(data, dict) else None
    if not isinstance(tag, int) or isinstance(tag, bool):
        raise RuleViolation("HQ-HDR-02", "a descriptor needs an integer scheme_tag",
                            path="descriptor -> scheme_tag")
    row = SCHEMES.get(data["scheme_tag"])
    cls = row.model if row is not None else OpaqueQuantization
    return cls.load(data)


def register_private_scheme(
    tag: int,
    *,
    name: str,
    fields: Iterable[cs.Construct],
    model: type[SchemeDescriptor],
    kernel: Callable[..., Any] | None = None,
    flags_defined: dict[int, str] | None = None,
    storage_types: tuple[str, ...] = (),
    title: str | None = None,
) -> SchemeRow[SchemeDescriptor]:
    """Register a codec for a private scheme tag (0xF0-0xFE), agreed out of band (HQ-EXT-03).

    ``fields`` are the Construct fields after the 4-byte header, ``model`` a
    :class:`SchemeDescriptor` subclass whose fields carry the same names, ``kernel`` an
    optional dequantization function. Any other tag, or a tag registered twice, is refused.
    """
    if not isinstance(tag, int) or not PRIVATE_RANGE.first <= tag <= PRIVATE_RANGE.last:
        raise RegistrationError(
            "HQ-EXT-03", f"private schemes use tags {PRIVATE_SPAN} only", path="scheme_tag",
            actual=tag, expected=PRIVATE_SPAN,
        )
    defined = flags_defined or {}
    mask = sum(1 << bit for bit in defined)
    row = SchemeRow(
        tag=tag, name=name, title=title or name, tier=None,
        struct=descriptor_struct(tag, mask, *fields), model=model,
        storage_types=storage_types, flags_defined=defined, private=True, kernel=kernel,
    )
    registered = SCHEMES.register(tag, row)
    if model.declaration is None:
        model.declaration = row.struct
    return registered


def register_private_row(row: SchemeRow[SchemeDescriptor]) -> SchemeRow[SchemeDescriptor]:
    """Register a private scheme declared whole, as a scheme module declares it (its ``ROW``,
    ``private`` true, a tag 0xF0-0xFE); a tag registered twice is refused."""
    if not row.private or not PRIVATE_RANGE.first <= row.tag <= PRIVATE_RANGE.last:
        raise RegistrationError(
            "HQ-EXT-03", f"private schemes use tags {PRIVATE_SPAN} only", path="scheme_tag",
            actual=row.tag, expected=PRIVATE_SPAN,
        )
    return SCHEMES.register(row.tag, row)


PROJECT_SCHEMES: tuple[SchemeRow[SchemeDescriptor], ...] = (ggml_super_block.ROW, ggml_codebook.ROW)
"""The private schemes of this project (tags 0xF0-0xFE), each documented by its module. This
package is party to their agreement (HQ-EXT-03): its readers register them
(:func:`register_project_schemes`: ``hd.open`` / ``hd.load`` and every command reading Hurray
input), and its writers emit them only when asked (``convert --private-schemes``, HQ-EXT-04).
Below those, the engine knows the built-in schemes only, as any reader without the agreement."""


def register_project_schemes() -> None:
    """Register :data:`PROJECT_SCHEMES` (idempotent): for the code that reads or writes them."""
    for row in PROJECT_SCHEMES:
        if SCHEMES.get(row.tag) is not row:
            register_private_row(row)


def unregister_private_scheme(tag: int) -> None:
    """Forget a private scheme registered earlier; built-in schemes cannot be removed."""
    if tag in ASSIGNED:
        raise RegistrationError("HQ-HDR-14", "built-in schemes cannot be unregistered",
                                path="scheme_tag", actual=tag)
    SCHEMES.unregister(tag)


def kernel_for(descriptor: Descriptor) -> Callable[..., Any]:
    """The kernel that dequantizes data described by ``descriptor``.

    A descriptor accepted in permissive mode never reaches tensor data (HQ-EXT-02).
    """
    if isinstance(descriptor, OpaqueQuantization):
        raise OpaqueDataAccess(
            "HQ-EXT-02",
            f"scheme 0x{descriptor.scheme_tag:02X} was skipped in permissive mode; its data is never read",
            path="descriptor -> scheme_tag", offset=HEADER_OFFSETS["scheme_tag"],
        )
    row = scheme(descriptor.scheme_tag)
    if row.kernel is None:
        raise UnsupportedError(
            "HQ-EXT-03" if row.private else "HQ-HDR-14",
            f"no dequantization kernel is registered for {row.title}",
            path="descriptor -> scheme_tag", offset=HEADER_OFFSETS["scheme_tag"],
        )
    return row.kernel


def tag_class(tag: int) -> TagClass:
    """The class of a scheme tag byte in this reader (private registered tags stay private)."""
    return classify(tag, ASSIGNED)


def scheme_table() -> str:
    """The Markdown table of registered schemes, derived from the registry rows."""
    lines = [
        "| Tag | Scheme | Module | Tier | Length (B) | Flags | Storage types |",
        "|---|---|---|---|---:|---|---|",
    ]
    for row in SCHEMES:
        flags = ", ".join(f"bit {bit} {name}" for bit, name in row.flags_defined.items()) or "none"
        tier = "private" if row.private else str(row.tier)
        lines.append(
            f"| `0x{row.tag:02X}` | {row.title} | `{row.name}` | {tier} | {row.length} | {flags} | "
            f"{', '.join(row.storage_types)} |"
        )
    return "\n".join(lines)
