"""Constants, integer types and small field builders shared by the tensor-descriptor modules."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, ClassVar, Self, TypeVar

import construct as cs

from hurray_decl.declare.model import DeclaredModel, FrozenModel
from hurray_decl.declare.schema import Rule
from hurray_decl.hurray.checks import TensorChecks as TensorChecks

DYNAMIC = 0xFFFF_FFFF_FFFF_FFFF
"""A shape value meaning "size unknown": nothing may be computed through it (HT-HDR-18)."""

MAX_RANK = 64
SUPPORTED_MAJOR = 1



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


_READY: set[type[FrozenModel]] = set()
_M = TypeVar("_M", bound=FrozenModel)


def trusted(model: type[_M], values: dict[str, Any], _set: Callable[..., None] = object.__setattr__) -> _M:
    """A model from values a declaration has just parsed, every field given: the parse already
    checked each value (types, widths, field rules), so pydantic does not check them again.
    A model a caller builds runs every rule (``FrozenModel``)."""
    if model not in _READY:  # its schema is built on first use (defer_build): dumping needs it
        model.model_rebuild()
        _READY.add(model)
    made = model.__new__(model)
    _set(made, "__dict__", values)
    _set(made, "__pydantic_fields_set__", set(values))
    _set(made, "__pydantic_extra__", None)
    _set(made, "__pydantic_private__", None)
    return made


@cache
def field_names(model: type[FrozenModel]) -> tuple[str, ...]:
    """A model's field names (pydantic computes ``model_fields`` on each access: read once)."""
    return tuple(model.model_fields)


class Section(DeclaredModel):
    """Base of the immutable models of descriptor parts; each derives its fields from its declaration."""

    rule: ClassVar[str] = "HT-HDR-02"
    wire_name: ClassVar[str] = "section"

    @classmethod
    def from_wire(cls, wire: Any) -> Self:
        """The model from a parsed Construct container: reserved fields are dropped, the values
        not validated again (the parse checked them)."""
        values = {}
        for name in field_names(cls):
            value = wire[name]
            values[name] = tuple(value) if isinstance(value, list) else value
        return trusted(cls, values)

    def to_wire(self) -> dict[str, Any]:
        """Field values as the Construct declaration builds them."""
        return {name: getattr(self, name) for name in field_names(type(self))}

    def wire_values(self) -> dict[str, Any]:
        return self.to_wire()
