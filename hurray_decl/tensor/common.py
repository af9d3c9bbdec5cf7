"""Constants, integer types and small field builders shared by the tensor-descriptor modules."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import construct as cs
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import HurrayDeclError, RuleViolation
from ..schema import Rule, show

DYNAMIC = 0xFFFF_FFFF_FFFF_FFFF
"""A shape value meaning "size unknown": nothing may be computed through it (HT-HDR-18)."""

MAX_RANK = 64
SUPPORTED_MAJOR = 1
SUPPORTED_MINOR = 0

U8 = Annotated[int, Field(ge=0, le=0xFF)]
U32 = Annotated[int, Field(ge=0, le=0xFFFF_FFFF)]
U64 = Annotated[int, Field(ge=0, le=0xFFFF_FFFF_FFFF_FFFF)]
I64 = Annotated[int, Field(ge=-(1 << 63), le=(1 << 63) - 1)]


def one_of(subcon: cs.Construct, allowed: Any, code: str, expected: str, message: str) -> Rule:
    """A field whose value must be in ``allowed``."""
    return Rule(subcon, lambda v, _: v in allowed, code, expected, message)


def boolean(code: str, what: str) -> Rule:
    """A one-byte boolean that accepts only 0x00 and 0x01 (HD-21)."""
    return one_of(cs.Int8ul, (0, 1), code, "0x00 or 0x01", f"{what} is a 0/1 byte")


def permissive(ctx: Any) -> bool:
    """Whether the caller asked for permissive reading (passed as a parse keyword)."""
    params = getattr(ctx, "_params", None)
    return bool(params is not None and params.get("permissive", False))


def pow2_at_most(bits: int, limit_bits: int) -> int:
    """2**bits, capped at 2**limit_bits so a claimed exponent never builds a huge integer."""
    return 1 << min(bits, limit_bits)


class Section(BaseModel):
    """Base of the immutable models of descriptor parts; pydantic errors become rule errors."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_bytes="hex", val_json_bytes="hex",
                              ser_json_inf_nan="strings")

    rule: ClassVar[str] = "HT-HDR-02"
    wire_name: ClassVar[str] = "section"

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise section_error(exc, type(self)) from exc

    @classmethod
    def load(cls, data: Any) -> "Section":
        """Validate a mapping or JSON text into this model, raising only HurrayDeclError."""
        try:
            if isinstance(data, (str, bytes)):
                return cls.model_validate_json(data)
            return cls.model_validate(data)
        except ValidationError as exc:
            raise section_error(exc, cls) from exc

    @classmethod
    def from_wire(cls, wire: Any) -> "Section":
        """The model from a parsed Construct container: reserved fields are dropped."""
        values = {}
        for name in cls.model_fields:
            value = wire[name]
            values[name] = tuple(value) if isinstance(value, list) else value
        return cls(**values)

    def to_wire(self) -> dict[str, Any]:
        """Field values as the Construct declaration builds them."""
        return {name: getattr(self, name) for name in type(self).model_fields}


def section_error(exc: ValidationError, cls: type) -> HurrayDeclError:
    errors = exc.errors()
    for err in errors:
        inner = (err.get("ctx") or {}).get("error")
        if isinstance(inner, HurrayDeclError):
            return inner
    first = errors[0]
    field = " -> ".join(str(p) for p in first["loc"]) or cls.wire_name
    return RuleViolation(
        getattr(cls, "rule", "HT-HDR-02"),
        f"{field}: {first['msg']}",
        path=f"descriptor -> {cls.wire_name} -> {field}",
        actual=show(first.get("input")),
        expected=f"a value the {cls.__name__} encoding can hold",
    )
