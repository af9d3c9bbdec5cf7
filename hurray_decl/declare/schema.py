"""Construct building blocks shared by every wire declaration.

A field is declared once, with its type, its documentation and the rules that refuse bad
values: ``"axis" / Int32ul * "quantized axis; < rank"``. :class:`Rule` wraps a field so that
parsing *and* building refuse a value that breaks the rule, raising the rule's RULES.md code
with the field's path and byte offset. The hex dump and the docs read names and documentation
from the same declarations.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from functools import cache, partial
from typing import Any

import construct as cs
from construct.core import stream_tell

from hurray_decl.errors import HurrayDeclError, RuleViolation, TruncatedError

NONE32 = 0xFFFF_FFFF
"""The "no buffer" value of a ``*_buffer_index`` field."""

Check = Callable[[Any, Any], bool]


def construct_path(path: str, root: str = "descriptor") -> str:
    """Turn Construct's ``(parsing) -> a -> b`` into ``descriptor -> a -> b``."""
    parts = path.split(" -> ")
    if parts and parts[0] in ("(parsing)", "(building)", "(sizeof)", ""):
        parts[0] = root
    # A field renamed twice (name, then docs) appears twice in Construct's path.
    # A docs-only rename (``field * "docs"`` inside a rename) shows up as ``None``.
    kept = [p for i, p in enumerate(parts) if i == 0 or (p != parts[i - 1] and p != "None")]
    return " -> ".join(kept)


class Rule(cs.Subconstruct):
    """A field that refuses values breaking one rule, on parse and on build alike.

    ``check(value, context)`` returns True for a valid value. ``expected`` is the human text
    of what the rule wants; ``code`` is the RULES.md ID raised otherwise. Rules nest: the
    innermost is checked first.
    """

    def __init__(
        self,
        subcon: cs.Construct,
        check: Check,
        code: str,
        expected: Any,
        message: str,
        error: type[HurrayDeclError] = RuleViolation,
    ) -> None:
        super().__init__(subcon)
        self.check = check
        self.code = code
        self.expected = expected
        self.message = message
        self.error = error

    def _enforce(self, value: Any, context: Any, path: str, offset: int | None) -> None:
        if not self.check(value, context):
            raise self.error(
                self.code,
                self.message,
                path=construct_path(path),
                offset=offset,
                actual=self._shown(value),
                expected=self.expected,
            )

    def _shown(self, value: Any) -> Any:
        """The value in the number base the expectation uses (``0x47``, never ``71`` beside hex)."""
        if isinstance(value, int) and not isinstance(value, bool) and "0x" in str(self.expected):
            field: cs.Construct = self
            while isinstance(field, Rule):
                field = field.subcon
            try:
                width = field.sizeof()
            except (cs.SizeofError, KeyError, AttributeError):
                width = 1
            return f"0x{value:0{2 * width}X}" if value >= 0 else value
        return show(value)

    def _parse(self, stream, context, path):
        offset = stream_tell(stream, path)
        value = self.subcon._parsereport(stream, context, path)
        pending = _pending(context)
        if pending is None:
            self._enforce(value, context, path, offset)
        else:
            pending.append((self, value, context, path, offset))
        return value

    def _build(self, obj, stream, context, path):
        # The same order as parsing: the innermost rule first, then the field is built.
        offset = stream_tell(stream, path)
        field: cs.Construct = self
        pending = _pending(context)
        for rule in self.rules():
            if pending is None:
                rule._enforce(obj, context, path, offset)
            else:
                pending.append((rule, obj, context, path, offset))
        while isinstance(field, Rule):
            field = field.subcon
        return field._build(obj, stream, context, path)

    def _refused(self, value: Any, context: Any) -> None:
        """The compiled parser's refusal: the rule's error without a position (whoever calls the
        compiled parser re-runs the interpreted one to locate it)."""
        self._enforce(value, context, "(parsing)", None)

    def refuse(self, value: Any, context: Any) -> None:
        """The compiled parser's refusal of a value one of this field's rules breaks: the first
        of them (innermost first, as the interpreted parse checks them) raises."""
        for rule in self.rules():
            if not rule.check(value, context):
                rule._refused(value, context)

    def checked(self, code: Any, value: str, parsed: str | None = None) -> str:
        """Compiled code giving ``value`` once every rule of this field passes, else raising the
        first that fails: one call per rule, each check a global of the compiled module
        (:func:`compiled` binds them). ``parsed``: code that parses the value into the name
        ``value`` first; without it, ``value`` is already bound (a field of a batched read)."""
        rules = self.rules()
        for rule in rules:
            bind(code, f"check_{id(rule)}", rule.check)
        bind(code, f"refuse_{id(self)}", self.refuse)
        head = value if parsed is None else f"({value} := {parsed})"
        alone = [rule for rule in rules if _value_only(rule.check)] if _hashable_leaf(self.leaf()) else []
        calls = [f"check_{id(rule)}" for rule in rules if rule not in alone]
        if alone:
            accepted: set[Any] = set()
            bind(code, f"accepted_{id(self)}", accepted)
            calls.insert(0, bind(code, f"judge_{id(self)}", _remembering([rule.check for rule in alone], accepted)))
            first = f"({head} in accepted_{id(self)} or {calls[0]}({value}, this))"
        else:
            first = f"{calls[0]}({head}, this)"
        tests = " and ".join([first] + [f"{call}({value}, this)" for call in calls[1:]])
        return f"({value} if {tests} else refuse_{id(self)}({value}, this))"

    def leaf(self) -> cs.Construct:
        """The field under this rule and the rules nested inside it."""
        field: cs.Construct = self
        while isinstance(field, Rule):
            field = field.subcon
        return field

    def _emitparse(self, code):
        return self.checked(code, f"rule_value_{id(self)}", self.leaf()._compileparse(code))

    strict_build = True
    """:func:`strict_build` may use :meth:`_emitbuild`: it builds exactly what ``_build`` builds."""

    def _emitbuild(self, code):
        return f"({self.checked(code, 'obj')}, {strict_build(code, self.leaf())})[1]"

    def rules(self) -> list[Rule]:
        """This rule and those nested inside it, innermost first."""
        inner = self.subcon.rules() if isinstance(self.subcon, Rule) else []
        return inner + [self]


_DEFERRED = "_deferred_rules"

REMEMBERED = 256
"""Values of a field the compiled parser remembers as accepted by the rules that read the value alone."""


def _value_only(check: Check) -> bool:
    """Whether a rule's check reads the value alone: its context parameter is named ``_`` (the
    declarations' convention for a check that ignores the context)."""
    code = getattr(check, "__code__", None)
    return code is not None and code.co_argcount == 2 and code.co_varnames[1] == "_"


def _hashable_leaf(field: cs.Construct) -> bool:
    """Whether a field's values are integers or bytes (never a float: -0.0 equals 0.0, NaN nothing)."""
    if type(field) is cs.FormatField:
        return field.fmtstr[-1] in "bBhHiIlLqQ"
    return type(field) in (cs.Bytes, Bytes)


def _remembering(checks: list[Check], accepted: set[Any]) -> Check:
    """The checks that read the value alone, run in turn; a value they all accept is remembered
    (at most :data:`REMEMBERED` of them), so the compiled parser finds it in ``accepted`` next time."""
    def judge(value: Any, context: Any) -> bool:
        for check in checks:
            if not check(value, context):
                return False
        if len(accepted) < REMEMBERED:
            accepted.add(value)
        return True
    return judge


def _pending(context: Any) -> list | None:
    """The list an enclosing :class:`OrderedStruct` collects rule checks in, if any."""
    params = getattr(context, "_params", None)
    stack = params.get(_DEFERRED) if isinstance(params, dict) else None
    return stack[-1] if stack else None


class Context(dict[str, Any]):
    """A compiled parser's context, which is also its record's result: a dict whose keys read as
    attributes at the speed of an instance attribute, being its own ``__dict__`` (set where it is
    made: :func:`context`, or the compiled code), where Construct's Container runs a Python
    ``__getattr__`` for each ``ctx.field`` a rule reads."""


def bind(code: Any, name: str, value: Any) -> str:
    """Make ``value`` the global ``name`` of the module being compiled (:func:`compiled` binds it
    once the module exists: Construct runs the module before it links anything); returns ``name``."""
    code.linkedinstances[name] = value
    return name


def context(**values: Any) -> Context:
    """A :class:`Context` holding ``values``."""
    made = Context(values)
    made.__dict__ = made
    return made


_STRUCT_CODES = frozenset("BbHhIiLlQqefd")


def _fixed_format(con: cs.Construct) -> tuple[str, Rule | None] | None:
    """The struct format of a field read as a fixed number of bytes (an integer, a float or a
    fixed ``Bytes``, under names, defaults and rules), with its outermost rule; None otherwise."""
    rule = None
    while True:
        if isinstance(con, Rule):
            rule = rule or con
            con = con.subcon
        elif type(con) in (cs.Renamed, cs.Default, cs.Rebuild):
            con = con.subcon
        else:
            break
    if type(con) is cs.FormatField and len(con.fmtstr) == 2 and con.fmtstr[0] == "<" \
            and con.fmtstr[1] in _STRUCT_CODES:
        return con.fmtstr[1], rule
    if type(con) in (cs.Bytes, Bytes) and isinstance(con.length, int) and con.length > 0:
        return f"{con.length}s", rule
    return None


def record_format(record: cs.Construct) -> struct.Struct | None:
    """The struct reading every field of ``record`` at once (each of a fixed size), in wire
    order; None when one of them is not."""
    formats = [_fixed_format(sc) for sc in record.subcons]
    if any(fixed is None for fixed in formats):
        return None
    return struct.Struct("<" + "".join(fixed[0] for fixed in formats if fixed is not None))


READ_ARRAY = """
    def read_array(io, count, code, size):
        if count <= 0:
            if count < 0:
                raise RangeError(f"invalid count {count}")
            return ListContainer()
        return ListContainer(struct.unpack(f"<{count}{code}", read_exact(io, count * size)))
"""
"""Compiled code reading ``count`` fixed-size values with one ``unpack`` (never more bytes than
the stream holds: a count the input claims allocates nothing before the bytes are there)."""


def _fixed_array(con: cs.Construct) -> tuple[str, str, int] | None:
    """(count code, struct code, item size) of an Array of integers or floats without rules, under
    names and defaults, whose count is a constant or an expression of the context; else None."""
    while type(con) in (cs.Renamed, cs.Default):
        con = con.subcon
    if type(con) is not cs.Array or con.discard:
        return None
    item = _fixed_format(con.subcon)
    if item is None or item[1] is not None or item[0].endswith("s"):
        return None
    count = con.count
    if isinstance(count, int):
        shown = str(count)
    elif isinstance(count, cs.expr.ExprMixin):
        shown = repr(count)
    else:
        return None
    return shown, item[0], struct.calcsize("<" + item[0])


class Record(cs.Struct):
    """A Struct whose compiled parser gives each member a lighter context than Construct's own
    (:class:`Context`: the outer context, the parse keywords and the three mode flags an
    interpreted member reads) and returns that context as the record (its fields, and those
    underscored entries), and reads each run of fixed-size fields with one ``unpack``, then
    checks their rules in field order: the same fields and checks, for less per record."""

    def _emitparse(self, code):
        name = f"parse_record_{code.allocateId()}"
        lines = [f"def {name}(io, this):",
                 "    this = Context(_ = this, _params = this['_params'], _parsing = True, _building = False, "
                 "_sizing = False)",
                 "    this.__dict__ = this",
                 "    try:"]
        run: list[tuple[str, str, Rule | None]] = []

        def flush() -> None:
            if not run:
                return
            layout = struct.Struct("<" + "".join(fmt for _, fmt, _ in run))
            unpack = f"unpack_{code.allocateId()}"
            code.append(f"{unpack} = struct.Struct({layout.format!r}).unpack")
            names = [f"field_{id(self)}_{i}" for i in range(len(run))]
            lines.append(f"        ({', '.join(names)},) = {unpack}(read_exact(io, {layout.size}))")
            for value, (field, _, rule) in zip(names, run):
                checked = value if rule is None else rule.checked(code, value)
                lines.append(f"        this[{field!r}] = {checked}")
            run.clear()

        code.append(READ_EXACT)
        code.append(READ_ARRAY)
        for sc in self.subcons:
            fixed = _fixed_format(sc) if sc.name else None
            if fixed is not None:
                run.append((sc.name, *fixed))
                continue
            flush()
            array = _fixed_array(sc) if sc.name else None
            if array is not None:
                count, fmt, size = array
                lines.append(f"        this[{sc.name!r}] = read_array(io, {count}, {fmt!r}, {size})")
                continue
            target = f"this[{sc.name!r}] = " if sc.name else ""
            lines.append(f"        {target}{sc._compileparse(code)}")
        flush()
        lines += ["        pass", "    except StopFieldError:", "        pass", "    return this"]
        code.append("\n".join(lines))
        return f"{name}(io, this)"

    strict_build = True

    def _emitbuild(self, code):
        """Each field as Struct builds it (the value given, else its default or rebuilt value,
        kept in the context before and after it is built), a run of fixed-size fields checked
        field by field, then packed with one ``pack``; any other member through
        :func:`strict_build`."""
        name = f"build_record_{code.allocateId()}"
        lines = [f"def {name}(obj, io, this):",
                 "    objdict = obj",
                 "    this = Context(_ = this, _params = this['_params'], _parsing = False, _building = True, "
                 "_sizing = False)",
                 "    this.__dict__ = this",
                 "    this.update(objdict)",
                 "    try:"]
        run: list[tuple[str, str]] = []

        def flush() -> None:
            if run:
                pack = bind(code, f"pack_{code.allocateId()}", struct.Struct("<" + "".join(f for _, f in run)).pack)
                lines.append(f"        io.write({pack}({', '.join(v for v, _ in run)}))")
                run.clear()

        for index, sc in enumerate(self.subcons):
            take = f"objdict.get({sc.name!r}, None)" if sc.flagbuildnone else f"objdict[{sc.name!r}]"
            value = f"field_{id(self)}_{index}"
            fixed = _fixed_build(code, sc, value) if sc.name else None
            if fixed is not None:
                fmt, steps = fixed
                lines += [f"        {value} = {take}", f"        this[{sc.name!r}] = {value}"]
                lines += [f"        {step}" for step in steps]
                lines.append(f"        this[{sc.name!r}] = {value}")
                run.append((value, fmt))
                continue
            flush()
            lines.append(f"        obj = {take}")
            if sc.name:
                lines.append(f"        this[{sc.name!r}] = obj")
            target = f"this[{sc.name!r}] = " if sc.name else ""
            lines.append(f"        {target}{strict_build(code, sc)}")
        flush()
        lines += ["        pass", "    except StopFieldError:", "        pass", "    return this"]
        code.append("\n".join(lines))
        return f"{name}(obj, io, this)"


def _evaluated(code: Any, name: str, value: Any) -> str:
    """Compiled code giving ``value`` as Construct evaluates a parameter in the context ``this``:
    an expression of ``this`` written out as Construct's compiled parsers write it, a constant or
    another function through a bound global."""
    if isinstance(value, cs.expr.ExprMixin):
        return f"({value!r})"
    return f"{bind(code, name, partial(cs.core.evaluate, value))}(this)"


def _fixed_build(code: Any, con: cs.Construct, value: str) -> tuple[str, list[str]] | None:
    """How a Record's compiled builder builds a fixed-size field: its struct format and the
    statements that turn the given ``value`` into the one written, in the order the wrappers'
    interpreted builds run (a default for None, a rebuilt value, each rule's check); None for a
    field that is not read as a fixed number of bytes."""
    steps: list[str] = []
    while True:
        kind = type(con)
        if kind is cs.Renamed:
            con = con.subcon
        elif kind is cs.Default:
            steps.append(f"if {value} is None: {value} = {_evaluated(code, f'default_{id(con)}', con.value)}")
            con = con.subcon
        elif kind is cs.Rebuild:
            steps.append(f"{value} = {_evaluated(code, f'rebuild_{id(con)}', con.func)}")
            con = con.subcon
        elif isinstance(con, Rule) and kind._build is Rule._build:
            steps.append(con.checked(code, value))
            con = con.leaf()
        else:
            break
    fixed = _fixed_format(con)
    if fixed is None:
        return None
    fmt = fixed[0]
    if fmt.endswith("s"):  # Bytes refuses another length (a struct would pad or cut it)
        steps.append(f"if type({value}) is not bytes or len({value}) != {fmt[:-1]}: "
                     f"raise StreamError('bytes of another length')")
    return fmt, steps


WRITE_ARRAY = """
    def write_array(io, obj, count, code):
        if count < 0 or len(obj) != count:
            raise RangeError(f"expected {count} elements, found {len(obj)}")
        io.write(struct.pack(f"<{count}{code}", *obj))
        return ListContainer(obj)
"""
"""Compiled code writing an array of ``count`` fixed-size values with one ``pack``, refusing
another count as Array's interpreted build does."""


def _array_build(code: Any, con: cs.Construct, value: str) -> list[str] | None:
    """The statements building an Array of integers or floats without rules (under names and
    defaults) from ``value`` and writing it, as its interpreted build does; None for another field."""
    steps: list[str] = []
    while type(con) in (cs.Renamed, cs.Default):
        if type(con) is cs.Default:
            steps.append(f"if {value} is None: {value} = {_evaluated(code, f'default_{id(con)}', con.value)}")
        con = con.subcon
    if type(con) is not cs.Array or con.discard:
        return None
    item = _fixed_format(con.subcon)
    if item is None or item[1] is not None or item[0].endswith("s"):
        return None
    if isinstance(con.count, int):
        count = str(con.count)
    elif isinstance(con.count, cs.expr.ExprMixin):
        count = repr(con.count)
    else:
        return None
    return [*steps, f"{value} = write_array(io, {value}, {count}, {item[0]!r})"]


def strict_build(code: Any, con: cs.Construct) -> str:
    """Compiled code building ``obj`` with ``con`` exactly as its interpreted ``_build`` does: the
    emitted builder of a construct of this package that has one (``strict_build``), a condition
    evaluated in place, else a call of the interpreted ``_build`` (Construct's own emitted
    builders check less than its interpreted ones: no Bytes length, no Array count)."""
    while type(con) is cs.Renamed:
        con = con.subcon
    if getattr(con, "strict_build", False):
        emitted: str = con._compilebuild(code)
        return emitted
    fixed = _fixed_build(code, con, "value")
    array = None if fixed is not None else _array_build(code, con, "value")
    if fixed is not None or array is not None:
        name = f"build_field_{code.allocateId()}"
        if fixed is not None:
            steps = [*fixed[1], f"io.write({bind(code, f'pack_{id(con)}', struct.Struct('<' + fixed[0]).pack)}(value))"]
        else:
            code.append(WRITE_ARRAY)
            steps = array or []
        body = "".join(f"    {step}\n" for step in steps)
        code.append(f"def {name}(obj, io, this):\n    value = obj\n{body}    return value")
        return f"{name}(obj, io, this)"
    if type(con) is cs.IfThenElse:
        condition = _evaluated(code, f"condition_{id(con)}", con.condfunc)
        return (f"(({strict_build(code, con.thensubcon)}) if {condition} "
                f"else ({strict_build(code, con.elsesubcon)}))")
    return f"{bind(code, f'builder_{id(con)}', con._build)}(obj, io, this, '(building)')"


class OrderedStruct(Record):
    """A Struct whose field rules run once all its fields are read (or built), the codes in
    ``order`` last and in that order, the others first in field order: the check order of
    DIGEST Appendix A where it differs from wire order (buffer handles, some schemes).

    Compiled, it is a plain Struct checking each rule as its field is read: the same rules, in
    another order, so a compiled parser refuses exactly what the interpreted one refuses (and
    leaves saying which rule first to the interpreted parse)."""

    def __init__(self, *subcons: Any, order: tuple[str, ...] = ()) -> None:
        super().__init__(*subcons)
        self.order = order

    def _parse(self, stream, context, path):
        return self._checked(super()._parse, stream, context, path)

    def _build(self, obj, stream, context, path):
        return self._checked(lambda s, c, p: super(OrderedStruct, self)._build(obj, s, c, p), stream, context, path)

    def _checked(self, run, stream, context, path):
        params = context._params
        stack = params.setdefault(_DEFERRED, [])
        pending: list = []
        stack.append(pending)
        try:
            result = run(stream, context, path)
        finally:
            stack.pop()
        rank = {code: i for i, code in enumerate(self.order)}
        for rule, value, ctx, where, offset in sorted(pending, key=lambda p: rank.get(p[0].code, -1)):
            rule._enforce(value, ctx, where, offset)
        return result


READ_EXACT = """
    def read_exact(io, count):
        data = io.read(count)
        if len(data) != count:
            raise StreamError(f"stream read less than specified amount, expected {count}, found {len(data)}")
        return data
"""
"""Compiled code reading exactly ``count`` bytes, or raising StreamError as the interpreted parse does."""


class Bytes(cs.Bytes):
    """``cs.Bytes`` whose compiled parser refuses a short read as the interpreted one does
    (Construct's compiled ``Bytes`` returns whatever the stream had left)."""

    def _emitparse(self, code):
        code.append(READ_EXACT)
        return f"read_exact(io, {self.length})"


def show(value: Any) -> Any:
    """Values as messages print them: small integers stay decimal, bytes become hex."""
    if isinstance(value, float):
        return repr(value)
    return value


def hex_byte(value: int) -> str:
    return f"0x{value:02X}"


class Equals(Rule):
    """A field with one valid value, ``value``. When the value ``selects`` the model (a scheme's
    tag), the model holds it as that literal; otherwise the model field is the plain integer and
    this rule refuses the others, with its code."""

    def __init__(self, subcon: cs.Construct, value: Any, code: str, message: str, selects: bool = False) -> None:
        shown = hex_byte(value) if isinstance(value, int) else value
        super().__init__(subcon, lambda v, _: v == value, code, shown, message)
        self.value = value
        self.selects = selects


def equals(expected_value: Any, code: str, message: str, subcon: cs.Construct, *, selects: bool = False) -> Rule:
    return Equals(subcon, expected_value, code, message, selects)


def zero_bytes(count: int, code: str) -> Rule:
    """``count`` reserved bytes that must all be 0x00 (built as zeros by default)."""
    zeros = bytes(count)
    return cs.Default(
        Rule(Bytes(count), lambda v, _: v == zeros, code, zeros, "reserved bytes must be zero"),
        zeros,
    )


def reserved_flags(defined: int, code: str) -> Rule:
    """A u16 flags field whose bits outside ``defined`` must be clear."""
    return Rule(
        cs.Int16ul,
        lambda v, _: v & ~defined & 0xFFFF == 0,
        code,
        f"only bits 0x{defined:04X} may be set" if defined else "0x0000 (no flags defined)",
        "a reserved flags bit is set",
    )


def power_of_two(minimum: int, maximum: int | None, codes: tuple[str, str, str | None]) -> cs.Construct:
    """A u32 block size: at least ``minimum``, a power of two, at most ``maximum``.

    ``codes`` gives the rule IDs for (below minimum, not a power of two, above maximum).
    """
    low_code, pow_code, high_code = codes
    field: cs.Construct = Rule(
        cs.Int32ul, lambda v, _: v >= minimum, low_code, f">= {minimum}",
        "block_size is below the scheme's minimum",
    )
    field = Rule(
        field, lambda v, _: v & (v - 1) == 0, pow_code, "a power of two",
        "block_size is not a power of two",
    )
    if maximum is not None and high_code is not None:
        field = Rule(
            field, lambda v, _: v <= maximum, high_code, f"<= {maximum}",
            "block_size is above the scheme's maximum",
        )
    return field


def field_offsets(struct: cs.Construct) -> dict[str, tuple[int, int]]:
    """Offset and size of a Struct's named fields, from its declaration, up to the first field
    whose size depends on the data (that one is listed with size -1; later ones are not)."""
    offsets: dict[str, tuple[int, int]] = {}
    position = 0
    for sub in getattr(struct, "subcons", ()):
        try:
            size = sub.sizeof()
        except (cs.SizeofError, KeyError, AttributeError):  # `this`-dependent: known only when parsed
            if sub.name:
                offsets[sub.name] = (position, -1)
            break
        if sub.name:
            offsets[sub.name] = (position, size)
        position += size
    return offsets


@cache
def compiled(declaration: cs.Construct) -> cs.Construct | None:
    """Construct's compiled parser of ``declaration``, built on first use and kept; None when a
    part of it cannot be compiled (a caller's field written with a lambda), so the interpreted
    declaration is used instead. The compiled parser checks every :class:`Rule` but records no
    position: a caller re-runs the interpreted declaration to say where a refusal is."""
    try:
        built = declaration.compile()
    except (SyntaxError, NameError, TypeError, AttributeError, NotImplementedError, cs.ConstructError):
        return None
    namespace = built.module.__dict__
    namespace["Context"] = Context
    for key, value in built.module.linkedinstances.items():
        if isinstance(key, str):  # the globals bind() asked for
            namespace[key] = value
    return built


WARM_AFTER = 8
"""Parses of a declaration before it is compiled: compiling costs a few milliseconds, more than
a handful of interpreted parses, so a one-off read (``hurray-decl validate``) never pays it."""

_USES: dict[int, int] = {}
_WARM: dict[int, cs.Construct] = {}


def fast_parser(declaration: cs.Construct) -> cs.Construct:
    """The parser to try first: ``declaration`` itself for its first :data:`WARM_AFTER` uses,
    then its compiled parser (when it compiles). Either checks every rule; neither is asked
    where a refusal is (the traced parse says that)."""
    key = id(declaration)
    uses = _USES.get(key, 0)
    if uses < WARM_AFTER:
        _USES[key] = uses + 1
        return declaration
    parser = _WARM.get(key)
    if parser is None:  # kept with its declaration (a compiled parser holds it), so the id stays its own
        parser = _WARM[key] = compiled(declaration) or declaration
    return parser


def parse_untraced(declaration: cs.Construct, stream: Any, params: dict[str, Any]) -> Any:
    """Parse ``stream`` with :func:`fast_parser`'s parser of ``declaration`` and the parse keywords
    ``params``: a compiled parser is called straight (a :class:`Context` holding ``params``, none of
    Construct's per-parse set-up), an interpreted one as Construct parses."""
    parser = fast_parser(declaration)
    if type(parser) is cs.Compiled:
        outer = Context(_params=params)
        outer.__dict__ = outer
        return parser.parsefunc(stream, outer)
    return parser.parse_stream(stream, **params)


BUILD_REFUSALS = (HurrayDeclError, cs.ConstructError, struct.error, TypeError, KeyError, ValueError, OverflowError,
                  AttributeError, IndexError)
"""What a compiled builder raises for a value it refuses (the interpreted build then says why)."""


def build_untraced(declaration: cs.Construct, obj: Any, params: dict[str, Any]) -> bytes:
    """The bytes of ``obj`` built with ``declaration`` and the build keywords ``params``: by its
    compiled builder once warm (:func:`fast_parser`), whose refusal is built again by the
    interpreted declaration, which raises the rule's error where it is (or, should the two ever
    disagree, builds the bytes itself)."""
    builder = fast_parser(declaration)
    top = declaration
    while type(top) is cs.Renamed:
        top = top.subcon
    if type(builder) is cs.Compiled and getattr(top, "strict_build", False):
        stream = io.BytesIO()
        outer = context(**params, _parsing=False, _building=True, _sizing=False)
        outer["_params"] = outer
        try:
            builder.buildfunc(obj, stream, outer)
            return stream.getvalue()
        except BUILD_REFUSALS:
            pass
    built: bytes = declaration.build(obj, **params)
    return built


def parse_exact(struct: cs.Construct, data: bytes, path: str = "descriptor") -> Any:
    """Parse ``data`` with ``struct``; Construct's own errors become :class:`TruncatedError`.

    Rule violations propagate unchanged. Any other Construct failure here can only be a
    stream running out, since the declarations have no other failing parts.
    """
    try:
        return struct.parse(data)
    except HurrayDeclError:
        raise
    except cs.StreamError as exc:
        raise TruncatedError(
            "HQ-HDR-04", "the input ends inside a field", path=path, offset=len(data)
        ) from exc
