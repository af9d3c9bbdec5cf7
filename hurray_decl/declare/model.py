"""The base of every immutable model: pydantic's validation errors become rule errors."""

from __future__ import annotations

import contextvars
import math
import re
import struct
import weakref
import types
import typing
from typing import Annotated, Any, ClassVar

import construct as cs
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    model_validator,
)

from hurray_decl.errors import HurrayDeclError, RuleViolation
from hurray_decl.declare.schema import show

_PARSED: contextvars.ContextVar[bool] = contextvars.ContextVar("hurray_decl_parsed", default=False)
"""Set while a model is made from values a declaration has just parsed (and so checked). A
context variable, not a validation context: pydantic calls a custom ``__init__`` for nested
validation, which would drop the latter."""

_VALIDATED: "weakref.WeakValueDictionary[int, FrozenModel]" = weakref.WeakValueDictionary()
"""Models whose constructor ran every validator, nested models included, by id. A model made by
``model_construct``, ``model_copy`` or ``copy.copy`` is a new object, so never found here."""


def validated(value: Any) -> bool:
    """Whether ``value`` (a model, a tuple of them, or a plain value) is exactly what a validating
    constructor or a reader returned: frozen, so it needs no validation again."""
    if isinstance(value, FrozenModel):
        return _VALIDATED.get(id(value)) is value
    if isinstance(value, (tuple, list)):
        return all(validated(v) for v in value)
    return True


def remember_validated(model: "FrozenModel") -> "FrozenModel":
    """Record ``model`` as validated in full: for a reader whose parse has just run every rule of
    the values it built the model from."""
    _VALIDATED[id(model)] = model
    return model


U8 = Annotated[int, Field(ge=0, le=0xFF)]
U16 = Annotated[int, Field(ge=0, le=0xFFFF)]
U32 = Annotated[int, Field(ge=0, le=0xFFFF_FFFF)]
U64 = Annotated[int, Field(ge=0, le=0xFFFF_FFFF_FFFF_FFFF)]
I32 = Annotated[int, Field(ge=-(1 << 31), le=(1 << 31) - 1)]
I64 = Annotated[int, Field(ge=-(1 << 63), le=(1 << 63) - 1)]
"""Model field types with the ranges of their wire integers."""

_NAN_BITS = re.compile(r"NaN\((0x[0-9A-Fa-f]{16})\)")


def _f64_to_json(value: float) -> Any:
    """A float64 as JSON: a number when finite (-0.0 included), else a string that keeps the bits."""
    if math.isfinite(value):
        return value
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    return f"NaN(0x{bits:016X})"


def _f64_from_json(value: Any) -> Any:
    if isinstance(value, str):
        found = _NAN_BITS.fullmatch(value)
        if found:
            return struct.unpack("<d", struct.pack("<Q", int(found.group(1), 16)))[0]
    return value


F64 = Annotated[float, BeforeValidator(_f64_from_json), PlainSerializer(_f64_to_json, when_used="json")]
"""A float64 wire field whose JSON form re-encodes to the same 8 bytes: NaN payloads and sign as
``"NaN(0x7FF8000000000001)"``, infinities as ``"Infinity"`` / ``"-Infinity"``, -0.0 as ``-0.0``."""


class FrozenModel(BaseModel):
    """An immutable model whose constructor and :meth:`load` raise only HurrayDeclError.

    A validator that raises a HurrayDeclError keeps its code; any other validation failure
    (a wrong type, a value outside its field's range) is reported under ``rule``, the rule
    that lays out the structure, with the path ``descriptor -> wire_name -> field``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_bytes="hex", val_json_bytes="hex",
                              ser_json_inf_nan="strings", defer_build=True)

    rule: ClassVar[str] = "HT-HDR-02"
    wire_name: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _strict_integers(cls, data: Any) -> Any:
        """A boolean is refused where an integer field is declared (pydantic would read True as
        1): JSON ``true`` is not the integer 1, nor is Python's True."""
        if isinstance(data, dict):
            for name in _integer_fields(cls):
                value = data.get(name)
                if isinstance(value, bool) or (isinstance(value, (list, tuple))
                                               and any(isinstance(v, bool) for v in value)):
                    path = " -> ".join(dict.fromkeys(part for part in ("descriptor", cls.wire_name, name) if part))
                    raise RuleViolation(cls.rule, f"{name}: a boolean where an integer is declared", path=path,
                                        actual=show(value), expected="an integer")
        return data

    def wire_declaration(self) -> cs.Construct | None:
        """The Construct declaration this model's fields are written with (None: no bytes of its own)."""
        return None

    def wire_values(self) -> dict[str, Any]:
        """The values :meth:`wire_declaration` builds."""
        return {name: getattr(self, name) for name in type(self).model_fields}

    @model_validator(mode="after")
    def _bytes_rules(self) -> "FrozenModel":
        """Building a model runs its declaration's field rules, with the reader's codes, so no
        model holds what the reader would refuse in its bytes (permissive-relaxed rules aside:
        the strict writer applies them)."""
        if not _PARSED.get():
            declaration = self.wire_declaration()
            if declaration is not None:
                build_checked(declaration, self.wire_values(), self.wire_name, self.rule)
        return self

    @classmethod
    def parsed(cls, values: dict[str, Any]) -> "FrozenModel":
        """The model from values a declaration has just parsed (its field rules are not run again)."""
        token = _PARSED.set(True)
        try:
            return cls(**values)
        finally:
            _PARSED.reset(token)

    def checked(self) -> "FrozenModel":
        """This model validated again, nested models included: one made by ``model_construct``
        or ``model_copy(update=...)`` bypassed validation, and only a HurrayDeclError comes out."""
        if validated(self):  # its constructor or a reader validated it; frozen, so still valid
            return self
        values = {}
        for name in type(self).model_fields:
            if name in self.__dict__:
                values[name] = _checked(self.__dict__[name])
        return type(self)(**values)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise model_error(exc, type(self)) from exc
        if all(validated(value) for value in self.__dict__.values()):  # no unchecked nested model
            remember_validated(self)

    @classmethod
    def load(cls, data: Any) -> "FrozenModel":
        """Validate a mapping or JSON text into this model."""
        try:
            if isinstance(data, (str, bytes)):
                return cls.model_validate_json(data)
            return cls.model_validate(data)
        except ValidationError as exc:
            raise model_error(exc, cls) from exc


_INTEGER_FIELDS: weakref.WeakKeyDictionary[type, tuple[str, ...]] = weakref.WeakKeyDictionary()


def _is_integer(annotation: Any) -> bool:
    """int (an IntEnum too), optional or not, or a tuple of them; never bool."""
    if isinstance(annotation, type):
        return issubclass(annotation, int) and not issubclass(annotation, bool)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return _is_integer(args[0])
    if origin in (typing.Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        return bool(kinds) and all(_is_integer(a) for a in kinds)
    if origin is tuple and args:
        return all(_is_integer(a) for a in args if a is not Ellipsis)
    return False


def _integer_fields(cls: type[FrozenModel]) -> tuple[str, ...]:
    """The fields of ``cls`` declared as integers, by name (computed once per class)."""
    found = _INTEGER_FIELDS.get(cls)
    if found is None:
        found = _INTEGER_FIELDS[cls] = tuple(name for name, info in cls.model_fields.items()
                                             if _is_integer(info.annotation))
    return found


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


def _checked(value: Any) -> Any:
    if isinstance(value, FrozenModel):
        return value.checked()
    if isinstance(value, (tuple, list)):
        return tuple(_checked(v) for v in value)
    return value


def build_checked(declaration: cs.Construct, values: Any, where: str, rule: str) -> bytes:
    """Build ``values`` with ``declaration`` (permissive), as a model's own check: a rule error
    keeps its code, with the path under ``where`` and no byte offset (a model has none)."""
    try:
        return declaration.build(values, permissive=True)
    except HurrayDeclError as err:
        err.offset = None
        raise err.rebased(0, " -> ".join(p for p in ("descriptor", where) if p)) from None
    except (cs.ConstructError, TypeError, KeyError, ValueError, OverflowError) as exc:
        raise RuleViolation(rule, f"the values do not fit the encoding: {exc}",
                            path=" -> ".join(p for p in ("descriptor", where) if p)) from exc
