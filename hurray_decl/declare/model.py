"""The base of every immutable model: pydantic's validation errors become rule errors, and a
model's fields are derived from its Construct declaration.

A model class that names its declaration (a ``declaration`` class attribute, or a ``fields(rank)``
builder of the declaration's fields) gets one pydantic field per wire field, in wire order:
the name, an integer of the wire integer's range, a float of its width, a tuple for an array,
``X | None = None`` for a part present only under a selector (``cs.If``), the default a field
declares with ``cs.Default``, a literal for a constant that selects the model
(:class:`~hurray_decl.declare.schema.Equals`). Reserved bytes and fields the writer rebuilds
(``cs.Rebuild``) are no model fields. A class annotates only what a declaration cannot say (a
nested model, another declaration's part); validators that need more than one field stay on it.
"""

from __future__ import annotations

import contextvars
import inspect
import math
import re
import struct
import types
import typing
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self, TypeVar

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

from hurray_decl.declare.schema import Equals, Rule, show
from hurray_decl.errors import HurrayDeclError, RuleViolation

_PARSED: contextvars.ContextVar[bool] = contextvars.ContextVar("hurray_decl_parsed", default=False)
"""Set while a model is made from values a declaration has just parsed (and so checked). A
context variable, not a validation context: pydantic calls a custom ``__init__`` for nested
validation, which would drop the latter."""


class _Validated(set[str]):
    """The fields-set of a model its validating constructor or a reader made: its type marks the
    model valid in full (frozen, so for good). A copy of it is a plain set (``copy.copy``,
    ``model_copy``, ``deepcopy``, pickling), and ``model_construct`` makes a plain one, so a model
    made any other way is validated again; equality, hashing and JSON never read it."""

    __slots__ = ()

    def __copy__(self) -> set[str]:
        return set(self)

    def __deepcopy__(self, memo: Any) -> set[str]:
        return set(self)

    def __reduce__(self) -> Any:
        return set, (list(self),)


def validated(value: Any) -> bool:
    """Whether ``value`` (a model, a tuple of them, or a plain value) is exactly what a validating
    constructor or a reader returned: frozen, so it needs no validation again."""
    if isinstance(value, FrozenModel):
        return type(getattr(value, "__pydantic_fields_set__", None)) is _Validated
    if isinstance(value, (tuple, list)):
        if not any(issubclass(kind, (FrozenModel, tuple, list)) for kind in set(map(type, value))):
            return True  # plain values only (a KV array's): one pass over their types
        return all(validated(v) for v in value)
    return True


_M = TypeVar("_M", bound="FrozenModel")


_FIELD_NAMES: dict[type[Any], frozenset[str]] = {}
"""Each model class's field names, for :func:`trusted` (empty for a class with a post-init hook)."""


def trusted(cls: type[_M], values: dict[str, Any]) -> _M:
    """``remember_validated(cls.model_construct(**values))`` for ``values`` naming every field, made
    without model_construct's walk over aliases and defaults: for a reader building many small models
    from fields its parse has checked (a model with a post-init hook goes through model_construct)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(cls.model_fields) if not cls.__pydantic_post_init__ else frozenset()
    if values.keys() != names:
        return remember_validated(cls.model_construct(**values))
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", values)
    object.__setattr__(model, "__pydantic_fields_set__", _Validated(values))
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


def remember_validated(model: _M) -> _M:
    """Record ``model`` as validated in full: for a reader whose parse has just run every rule of
    the values it built the model from."""
    object.__setattr__(model, "__pydantic_fields_set__", _Validated(model.__pydantic_fields_set__))
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


# ---------------------------------------------------------------- fields read off a declaration

INTEGERS = (U8, U16, U32, U64, I32, I64)
"""The named model integer types; a wire integer of another range gets its own bounds."""
_FORMATS = {"B": (False, 8), "H": (False, 16), "I": (False, 32), "L": (False, 32), "Q": (False, 64),
            "b": (True, 8), "h": (True, 16), "i": (True, 32), "l": (True, 32), "q": (True, 64)}
_FLOATS = {"e": 16, "f": 32, "d": 64}
NO_DEFAULT: Any = ...
"""A wire field without a declared default: the model field is required."""
DECLARED_RANK = 1
"""The rank a rank-dependent declaration is built at to read its fields (arrays have any length)."""


@dataclass
class WireField:
    """One named field of a declaration, unwrapped: its leaf construct, the rules around it and
    its shape."""

    name: str
    leaf: cs.Construct
    rules: list[Rule] = field(default_factory=list)
    array: bool = False
    optional: bool = False
    derived: bool = False
    """Built from other fields (a length prefix): no model field."""
    nested: bool = False
    """Another declaration (``cs.LazyBound``): the model annotates the field itself."""
    default: Any = NO_DEFAULT

    @property
    def reserved(self) -> bool:
        return self.name.startswith("reserved")

    @property
    def selector(self) -> Any:
        """The constant value of a field that selects the model, else NO_DEFAULT."""
        for rule in self.rules:
            if isinstance(rule, Equals) and rule.selects:
                return rule.value
        return NO_DEFAULT


def unwrap(name: str, con: cs.Construct) -> WireField:
    """The wire field ``name`` declared by ``con``, its wrappers read down to the leaf."""
    wire = WireField(name, con)
    while True:
        if isinstance(con, Rule):
            wire.rules.append(con)
            con = con.subcon
        elif isinstance(con, cs.Rebuild):
            wire.derived = True
            con = con.subcon
        elif isinstance(con, cs.Default):
            if wire.default is NO_DEFAULT:
                wire.default = con.value
            con = con.subcon
        elif isinstance(con, cs.IfThenElse):
            wire.optional = True
            con = con.thensubcon
        elif isinstance(con, cs.Array):
            wire.array = True
            con = con.subcon
        elif isinstance(con, cs.LazyBound):
            wire.nested = True
            break
        elif isinstance(con, (cs.Renamed, cs.Transformed)) or type(con) is cs.Subconstruct:
            con = con.subcon
        else:
            break
    wire.leaf = con
    return wire


def wire_fields(declaration: cs.Construct) -> list[WireField]:
    """The named fields of a Struct declaration, in wire order."""
    return [unwrap(sub.name, sub) for sub in declaration.subcons if sub.name]


def wire_range(leaf: cs.Construct) -> tuple[int, int] | None:
    """The value range of a wire integer, or None for anything else."""
    if isinstance(leaf, cs.FormatField) and leaf.fmtstr[-1] in _FORMATS:
        signed, bits = _FORMATS[leaf.fmtstr[-1]]
    elif isinstance(leaf, cs.BytesInteger) and isinstance(leaf.length, int):
        signed, bits = leaf.signed, 8 * leaf.length
    else:
        return None
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def float_width(leaf: cs.Construct) -> int | None:
    """The bits of a wire float, or None for anything else."""
    if isinstance(leaf, cs.FormatField) and leaf.fmtstr[-1] in _FLOATS:
        return _FLOATS[leaf.fmtstr[-1]]
    return None


def _integer(low: int, high: int) -> Any:
    for alias in INTEGERS:
        if _alias_range(alias) == (low, high):
            return alias
    return Annotated[int, Field(ge=low, le=high)]


def _alias_range(alias: Any) -> tuple[int, int]:
    constraint = alias.__metadata__[0]
    bounds = {type(m).__name__: m for m in constraint.metadata}
    return bounds["Ge"].ge, bounds["Le"].le


def leaf_type(wire: WireField) -> Any:
    """The model type of one element of ``wire`` (None: the declaration cannot say)."""
    if wire.nested:
        return None
    bounds = wire_range(wire.leaf)
    if bounds is not None:
        return _integer(*bounds)
    width = float_width(wire.leaf)
    if width is not None:
        return F64 if width == 64 else float
    if isinstance(wire.leaf, cs.Bytes):
        return bytes
    return None


def model_field(wire: WireField, nullable: bool = False) -> tuple[Any, Any] | None:
    """(annotation, default) of the model field of ``wire``; ``nullable``: None stands for a value
    the writer derives or an absent index (the wire always has the field). None when the
    declaration cannot say (a nested declaration)."""
    selected = wire.selector
    if selected is not NO_DEFAULT:
        return Literal[selected], selected
    element = leaf_type(wire)
    if element is None:
        return None
    annotation: Any = types.GenericAlias(tuple, (element, ...)) if wire.array else element
    if wire.optional or nullable:
        return annotation | None, None
    return annotation, wire.default


def derive_fields(cls: type, declaration: cs.Construct, nullable: tuple[str, ...] = (),
                  wire_only: tuple[str, ...] = ()) -> None:
    """Give ``cls`` (a model class being created) one annotated field per field of ``declaration``,
    in wire order, before pydantic collects them; the annotations the class writes itself win
    (and say what the declaration cannot), the class's other annotations follow."""
    own: dict[str, Any] = dict(inspect.get_annotations(cls))
    merged: dict[str, Any] = {}
    for wire in wire_fields(declaration):
        if wire.reserved or wire.derived or wire.name in wire_only:
            continue
        if wire.name in own:
            merged[wire.name] = own.pop(wire.name)
            continue
        derived = model_field(wire, wire.name in nullable)
        if derived is None:
            raise TypeError(f"{cls.__name__}.{wire.name}: the declaration does not say the model type; "
                            "annotate the field")
        merged[wire.name], default = derived
        if default is not NO_DEFAULT:
            setattr(cls, wire.name, default)
    merged.update(own)
    cls.__annotations__ = merged


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
    def _bytes_rules(self) -> Self:
        """Building a model runs its declaration's field rules, with the reader's codes, so no
        model holds what the reader would refuse in its bytes (permissive-relaxed rules aside:
        the strict writer applies them)."""
        if not _PARSED.get():
            declaration = self.wire_declaration()
            if declaration is not None:
                build_checked(declaration, self.wire_values(), self.wire_name, self.rule)
        return self

    @classmethod
    def parsed(cls, values: dict[str, Any]) -> Self:
        """The model from values a declaration has just parsed: their field rules ran as the
        parse's compiled predicates and their types are the wire's (integers, floats, bytes,
        tuples, models the reader built), so pydantic's type pass is skipped; the class's own
        validators (the rules between fields) run as a validating constructor runs them, and
        the model equals, hashes and serialises as the one that constructor builds."""
        replay = _replay(cls)
        if replay is not None:
            try:
                made: Self = replay(values)
                return made
            except (ValueError, TypeError, AssertionError, KeyError):  # a refusal: in pydantic's words below
                pass
        token = _PARSED.set(True)
        try:
            return cls(**values)
        finally:
            _PARSED.reset(token)

    def checked(self) -> Self:
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
    def load(cls, data: Any) -> Self:
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


_REPLAYS: dict[type, Callable[[dict[str, Any]], Any] | None] = {}
_UNREAD = object()
_OWN_CHECKS = ("_strict_integers", "_bytes_rules")
"""FrozenModel's checks of values a caller gives (no boolean for an integer, the declaration's
field rules): a parse gives integers from its bytes and has run the field rules."""


def _holds_models(annotation: Any) -> bool:
    """Whether a field of this annotation may hold a model (whose validation a parent depends on)."""
    if isinstance(annotation, type):
        return issubclass(annotation, BaseModel)
    return any(_holds_models(arg) for arg in typing.get_args(annotation))


def _replay(cls: type[FrozenModel]) -> Callable[[dict[str, Any]], Any] | None:
    """The function :meth:`FrozenModel.parsed` makes a ``cls`` with, written out once from
    pydantic's record of the class's validators: the ``before`` model validators in the order
    pydantic runs them (the last declared first), each field from the values or its default, in
    field order, the ``after`` field validators, the instance as pydantic's constructor leaves
    it, the ``after`` model validators in declaration order (FrozenModel's own checks of given
    values left out), marked validated when the models it holds are. KeyError for a value of no
    field or a required field missing, a validator's own exception for a refusal. None when a
    validator needs pydantic (a wrap or plain validator, one taking validation info)."""
    known = _REPLAYS.get(cls, _UNREAD)
    if known is not _UNREAD:
        return known  # type: ignore[return-value]
    decorators = cls.__pydantic_decorators__
    replay = None
    simple = all(dec.info.mode in ("before", "after") for dec in decorators.model_validators.values())
    simple = simple and all(dec.info.mode == "after" and len(inspect.signature(dec.func).parameters) == 1
                            for dec in decorators.field_validators.values())
    if simple and not decorators.validators and not decorators.root_validators:
        cls.model_rebuild()  # its schema is built on first use (defer_build): serialising needs it
        fields = cls.model_fields
        own = [(name, dec.info.mode) for name, dec in decorators.model_validators.items() if name not in _OWN_CHECKS]
        names: dict[str, Any] = {"cls": cls, "names": frozenset(fields), "set_": object.__setattr__,
                                 "Validated": _Validated, "validated": validated}
        lines = ["def replay(values):", "    if not names.issuperset(values):",
                 "        raise KeyError('a value of no field')", "    data = values"]
        for k, name in enumerate(reversed([name for name, mode in own if mode == "before"])):
            names[f"before_{k}"] = getattr(cls, name)
            lines.append(f"    data = before_{k}(data)")
        items = []
        for k, (name, info) in enumerate(fields.items()):
            if info.is_required():
                items.append(f"{name!r}: data[{name!r}]")
            else:
                names[f"default_{k}"] = partial(info.get_default, call_default_factory=True)
                items.append(f"{name!r}: data[{name!r}] if {name!r} in data else default_{k}()")
        lines.append(f"    fields = {{{', '.join(items)}}}")
        checks = [(field, getattr(cls, name)) for name, dec in decorators.field_validators.items()
                  for field in dec.info.fields]
        for k, (field, check) in enumerate(checks):
            names[f"check_{k}"] = check
            lines.append(f"    fields[{field!r}] = check_{k}(fields[{field!r}])")
        nested = [f"validated(fields[{name!r}])" for name, info in fields.items() if _holds_models(info.annotation)]
        lines += ["    made = cls.__new__(cls)", "    set_(made, '__dict__', fields)",
                  "    given = names.intersection(data)",
                  f"    set_(made, '__pydantic_fields_set__', Validated(given) if {' and '.join(nested) or 'True'} "
                  "else set(given))",
                  "    set_(made, '__pydantic_extra__', None)", "    set_(made, '__pydantic_private__', None)"]
        for k, name in enumerate(name for name, mode in own if mode == "after"):
            names[f"after_{k}"] = getattr(cls, name)
            lines.append(f"    made = after_{k}(made)")
        lines.append("    return made")
        exec(compile("\n".join(lines), f"<parsed {cls.__qualname__}>", "exec"), names)
        replay = names["replay"]
    _REPLAYS[cls] = replay
    return replay


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
        built: bytes = declaration.build(values, permissive=True)  # construct is untyped
        return built
    except HurrayDeclError as err:
        err.offset = None
        raise err.rebased(0, " -> ".join(p for p in ("descriptor", where) if p)) from None
    except (cs.ConstructError, TypeError, KeyError, ValueError, OverflowError) as exc:
        raise RuleViolation(rule, f"the values do not fit the encoding: {exc}",
                            path=" -> ".join(p for p in ("descriptor", where) if p)) from exc


_D = TypeVar("_D")

if TYPE_CHECKING:  # a type checker sees no derived field: a declared model's constructor takes any field
    from pydantic._internal._model_construction import ModelMetaclass

    class _DeclaredMeta(ModelMetaclass):
        def __call__(cls: type[_D], **data: Any) -> _D: ...
else:
    _DeclaredMeta = type(BaseModel)


class DeclaredModel(FrozenModel, metaclass=_DeclaredMeta):
    """A model whose fields are derived from its Construct declaration (see the module's
    documentation): the base of the tensor descriptor's parts and of the quantization descriptors."""

    nullable: ClassVar[tuple[str, ...]] = ()
    """Wire fields the model may hold as None (the wire always has them): derived by the writer."""
    wire_only: ClassVar[tuple[str, ...]] = ()
    """Wire fields that are no model fields: constants, or values the writer computes from others."""

    if TYPE_CHECKING:  # fields derived from a declaration are unknown to a type checker
        def __getattr__(self, name: str) -> Any: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declaration = cls.fields_declaration()
        if declaration is not None:
            derive_fields(cls, declaration, cls.nullable_fields(), cls.wire_only)

    @classmethod
    def fields_declaration(cls) -> cs.Construct | None:
        """The declaration this class's own fields are derived from: its own ``declaration``
        attribute, or its own ``fields(rank)`` builder at :data:`DECLARED_RANK`; None when the
        class names neither (a subclass inherits its parent's fields)."""
        own = cls.__dict__
        if own.get("declaration") is not None:
            declared: cs.Construct = own["declaration"]
            return declared
        if "fields" in own:
            return cs.Struct(*own["fields"].__get__(None, cls)(DECLARED_RANK))
        return None

    @classmethod
    def nullable_fields(cls) -> tuple[str, ...]:
        return cls.nullable
