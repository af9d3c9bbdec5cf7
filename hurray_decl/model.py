"""The base of every immutable model: pydantic's validation errors become rule errors."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import HurrayDeclError, RuleViolation
from .schema import show


U8 = Annotated[int, Field(ge=0, le=0xFF)]
U16 = Annotated[int, Field(ge=0, le=0xFFFF)]
U32 = Annotated[int, Field(ge=0, le=0xFFFF_FFFF)]
U64 = Annotated[int, Field(ge=0, le=0xFFFF_FFFF_FFFF_FFFF)]
I32 = Annotated[int, Field(ge=-(1 << 31), le=(1 << 31) - 1)]
I64 = Annotated[int, Field(ge=-(1 << 63), le=(1 << 63) - 1)]
"""Model field types with the ranges of their wire integers."""


class FrozenModel(BaseModel):
    """An immutable model whose constructor and :meth:`load` raise only HurrayDeclError.

    A validator that raises a HurrayDeclError keeps its code; any other validation failure
    (a wrong type, a value outside its field's range) is reported under ``rule``, the rule
    that lays out the structure, with the path ``descriptor -> wire_name -> field``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_bytes="hex", val_json_bytes="hex",
                              ser_json_inf_nan="strings")

    rule: ClassVar[str] = "HT-HDR-02"
    wire_name: ClassVar[str] = ""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise model_error(exc, type(self)) from exc

    @classmethod
    def load(cls, data: Any) -> "FrozenModel":
        """Validate a mapping or JSON text into this model."""
        try:
            if isinstance(data, (str, bytes)):
                return cls.model_validate_json(data)
            return cls.model_validate(data)
        except ValidationError as exc:
            raise model_error(exc, cls) from exc


def model_error(exc: ValidationError, cls: type[FrozenModel]) -> HurrayDeclError:
    """The HurrayDeclError inside a pydantic ValidationError, or one naming the field's rule."""
    errors = exc.errors()
    for err in errors:
        inner = (err.get("ctx") or {}).get("error")
        if isinstance(inner, HurrayDeclError):
            return inner
    first = errors[0]
    field = " -> ".join(str(p) for p in first["loc"])
    path = " -> ".join(part for part in ("descriptor", cls.wire_name, field) if part)
    return RuleViolation(cls.rule, f"{field or cls.__name__}: {first['msg']}", path=path,
                         actual=show(first.get("input")), expected=f"a value the {cls.__name__} encoding can hold")
