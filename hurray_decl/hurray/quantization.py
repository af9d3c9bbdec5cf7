"""The engine: decode, encode and kernel dispatch on the scheme tag, for every registered scheme.

A scheme module supplies its Construct declaration, its model and (later) its kernel; the
engine owns framing, the tag space, permissive mode and error positions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import construct as cs

from hurray_decl.declare.schema import fast_parser, parse_exact
from hurray_decl.errors import (
    HurrayDeclError,
    OpaqueDataAccess,
    RegistrationError,
    RuleViolation,
    TruncatedError,
    UnsupportedError,
)
from hurray_decl.hurray.schemes import BUILTIN
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
    data = bytes(payload)
    row = SCHEMES.get(data[0]) if data else None
    if row is not None and len(data) >= row.length:
        fast = _decode_fast(row, data)
        if fast is not None:
            return fast
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
    wire = parse_exact(row.struct, data[: row.length])
    return _model_from_wire(row, wire, data[row.length:])


def _decode_fast(row: SchemeRow[SchemeDescriptor], data: bytes) -> SchemeDescriptor | None:
    """The untraced parse of a whole scheme encoding (compiled once warm); None when it refuses
    (the ordered parse then says which rule, where)."""
    try:
        wire = fast_parser(row.struct).parse(data[: row.length])
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
        fixed: bytes = row.struct.build(descriptor.to_wire())  # construct is untyped
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
            data = json.loads(data)
        except ValueError as exc:
            raise RuleViolation("HQ-HDR-02", f"not JSON: {exc}", path="descriptor") from exc
    if not isinstance(data, dict) or not isinstance(data.get("scheme_tag"), int):
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
