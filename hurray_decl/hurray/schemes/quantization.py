"""The quantization descriptor header (quantization.txt § Descriptor Header) and the models
every scheme shares.

The 4-byte header is declared once, by :func:`descriptor_struct`, and prefixed to each
scheme's own fields; a scheme module supplies only its fields, its model and its row.
"""

from __future__ import annotations

import math
import struct as _struct
from functools import cache
from typing import Any, ClassVar

import construct as cs
from pydantic import computed_field, model_validator

from hurray_decl.declare.model import DeclaredModel
from hurray_decl.declare.schema import NONE32, OrderedStruct, Rule, equals, field_offsets, reserved_flags
from hurray_decl.errors import RuleViolation

PAYLOAD_HEADER = cs.Struct("scheme_tag" / cs.Int8ul, "scheme_version" / cs.Default(cs.Int8ul, 1),
                           "flags" / cs.Default(cs.Int16ul, 0))
"""The header every quantization payload starts with, before any rule: what a reader sees of a
scheme it does not know (permissive mode keeps it with the opaque rest)."""
HEADER_LENGTH = PAYLOAD_HEADER.sizeof()
HEADER_OFFSETS = {name: offset for name, (offset, _) in field_offsets(PAYLOAD_HEADER).items()}
SYMMETRIC = 0x0001


AXIS = "axis" / cs.Int32ul * "index of the quantized axis; < rank"
"""The axis field every scheme but per-tensor declares at offset 4."""


def version_field(highest: int) -> cs.Construct:
    """scheme_version: 0 is never valid (HQ-HDR-12); above ``highest`` is unsupported (HQ-HDR-11)."""
    low = Rule(cs.Int8ul, lambda v, _: v >= 1, "HQ-HDR-12", ">= 0x01",
               "scheme_version 0x00 is not a defined version")
    return Rule(low, lambda v, _: v <= highest, "HQ-HDR-11", f"<= 0x{highest:02X}",
                "scheme_version is newer than this reader supports")


def descriptor_struct(tag: int, flags_defined: int, *fields: Any, highest_version: int = 1,
                      order: tuple[str, ...] = ()) -> cs.Struct:
    """The whole fixed encoding of a scheme: the shared header, then ``fields``. ``order``: the
    rule codes checked last, in that order (DIGEST Appendix A), when wire order is not it."""
    return OrderedStruct(
        "scheme_tag" / equals(tag, "HQ-HDR-06", "the payload does not belong to this scheme", cs.Int8ul, selects=True)
        * "selects the scheme; read first, everything else is dispatched on it",
        "scheme_version" / cs.Default(version_field(highest_version), 1)
        * "scheme encoding version; 0x01 for every scheme defined so far",
        "flags" / cs.Default(reserved_flags(flags_defined, "HQ-HDR-13"), 0)
        * "scheme-defined flag bits; undefined bits must be zero",
        *fields,
        order=order,
    )


def f32_field(finite_code: str, nonzero_code: str | None) -> cs.Construct:
    """A little-endian float32 that must be finite (and, when ``nonzero_code``, non-zero)."""
    field: cs.Construct = Rule(cs.Float32l, lambda v, _: math.isfinite(v), finite_code,
                               "a finite float32", "scale is NaN or infinite")
    if nonzero_code:
        field = Rule(field, lambda v, _: v != 0.0, nonzero_code, "a non-zero float32",
                     "scale is zero")
    return field


def index_field(code: str = "HQ-BUF-01") -> cs.Construct:
    """A parameter buffer index: 0xFFFFFFFF can never be below buffer_count (HD-04)."""
    return Rule(cs.Int32ul, lambda v, _: v != NONE32, code, "< buffer_count (at most 254)",
                "0xFFFFFFFF names no buffer")


class Descriptor(DeclaredModel):
    """Base of every quantization descriptor model: the 4-byte header fields (derived from
    :data:`PAYLOAD_HEADER`; each scheme's fields from its whole declaration)."""

    rule: ClassVar[str] = "HQ-HDR-02"
    declaration: ClassVar[cs.Construct | None] = PAYLOAD_HEADER


QuantizationDescriptor = Descriptor
"""The name ``hurray_decl`` gives :class:`Descriptor`."""


class SchemeDescriptor(Descriptor):
    """A descriptor of a scheme this reader implements.

    ``padding`` holds bytes that followed the scheme's fixed fields inside
    quantization_length: writer padding, never interpreted, kept so that re-encoding
    reproduces the input (HQ-HDR-05).
    """

    padding: bytes = b""

    # Wire fields that hold NONE32 on the wire and None in the model.
    optional_indices: ClassVar[tuple[str, ...]] = ()
    declaration: ClassVar[cs.Construct | None] = None
    """The scheme's whole fixed encoding (set by each scheme module, or on registration)."""

    @classmethod
    def nullable_fields(cls) -> tuple[str, ...]:
        return cls.optional_indices

    def wire_declaration(self) -> cs.Construct | None:
        return type(self).declaration

    def wire_values(self) -> dict[str, Any]:
        return self.to_wire()

    def to_wire(self) -> dict[str, Any]:
        """The field values as the Construct declaration builds them."""
        fields = self.__dict__
        values = {name: fields[name] for name in _wire_names(type(self))}
        for name in self.optional_indices:
            if values.get(name) is None:
                values[name] = NONE32
        return values

    @classmethod
    def wire_fields(cls, wire: dict[str, Any]) -> dict[str, Any]:
        """Model fields from parsed wire values: reserved bytes dropped, NONE32 made None."""
        values = {name: wire[name] for name in _wire_names(cls)}
        for name in cls.optional_indices:
            if values.get(name) == NONE32:
                values[name] = None
        return values


@cache
def _wire_names(cls: type[SchemeDescriptor]) -> tuple[str, ...]:
    """The fields :meth:`SchemeDescriptor.to_wire` gives the declaration: all but the padding."""
    return tuple(name for name in cls.model_fields if name != "padding")


def check_float32(value: float, code: str, field: str) -> float:
    """Refuse a float that a float32 field cannot hold exactly (nothing is rounded silently)."""
    if not math.isfinite(value):  # representable; the field's own rule decides (HQ-PT-03)
        return value
    nearest = _struct.unpack("<f", _struct.pack("<f", value))[0] if abs(value) < 3.5e38 else math.copysign(
        math.inf, value)
    if nearest != value:
        raise RuleViolation(
            code, f"{field} is a float32 field and {value!r} is not a float32 value",
            path=f"descriptor -> {field}", actual=value, expected=f"a float32 value such as {nearest!r}",
        )
    return value


class SymmetricZeroPoint(SchemeDescriptor):
    """Flags bit 0 SYMMETRIC, and the zero-point index it governs (0x02, 0x03).

    ``symmetric=True`` may be given instead of setting the flag. Under SYMMETRIC the model's
    ``zero_point_buffer_index`` is None (0xFFFFFFFF on the wire); otherwise it names a buffer.
    """

    optional_indices: ClassVar[tuple[str, ...]] = ("zero_point_buffer_index",)
    symmetric_code: ClassVar[str]
    asymmetric_code: ClassVar[str]
    # Each scheme's declaration holds zero_point_buffer_index, so its derived field keeps wire order.

    @computed_field  # type: ignore[prop-decorator]
    @property
    def symmetric(self) -> bool:
        return bool(self.flags & SYMMETRIC)

    @model_validator(mode="before")
    @classmethod
    def _fold_symmetric(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        folded = data.get("zero_point_buffer_index") == NONE32
        if not folded and "symmetric" not in data:  # nothing to fold (a reader's values): no copy
            return data
        data = dict(data)
        if folded:
            data["zero_point_buffer_index"] = None
        if "symmetric" not in data:
            return data
        wanted = bool(data.pop("symmetric"))
        flags = data.get("flags", 0)
        if "flags" in data and bool(flags & SYMMETRIC) != wanted:
            raise RuleViolation(
                cls.rule, "symmetric disagrees with flags bit 0 (SYMMETRIC)",
                path="descriptor -> flags", actual=flags, expected=f"bit 0 {'set' if wanted else 'clear'}",
            )
        data["flags"] = (flags | SYMMETRIC) if wanted else (flags & ~SYMMETRIC)
        return data

    @model_validator(mode="after")
    def _zero_point_presence(self) -> SymmetricZeroPoint:
        index = self.zero_point_buffer_index
        symmetric = self.flags & SYMMETRIC
        if symmetric and index is not None:
            raise RuleViolation(
                self.symmetric_code, "SYMMETRIC is set, so there is no zero-point buffer",
                path="descriptor -> zero_point_buffer_index", actual=index, expected="0xFFFFFFFF",
            )
        if not symmetric and index is None:
            raise RuleViolation(
                self.asymmetric_code, "SYMMETRIC is clear, so a zero-point buffer must be named",
                path="descriptor -> zero_point_buffer_index", actual="0xFFFFFFFF",
                expected="a buffer index < buffer_count",
            )
        return self


class OpaqueQuantization(Descriptor):
    """A descriptor accepted only in permissive mode: its scheme is not recognised.

    It keeps the header and the raw bytes after it, re-encodes byte-exactly when asked to in
    permissive mode, and refuses every request that would touch tensor data (HQ-EXT-02).
    """

    payload: bytes = b""
