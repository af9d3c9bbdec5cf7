"""Byte spans of every field, read off a Construct declaration while it parses.

:func:`trace` parses ``data`` with a declaration and returns one :class:`Span` per leaf field:
offset, size, dotted path (``layout.strides[1]``), value and the field's documentation. The
spans come from Construct's own parse, so they name exactly what the declaration names; the
hex dump is built on them and has no table of its own. The parse runs on a traced copy of the
declaration (built once, cached), whose nodes record into the calling thread's trace: nothing
global is patched, so other threads parsing at the same time are unaffected.
"""

from __future__ import annotations

import copy
import io
import weakref
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import construct as cs

from hurray_decl.errors import HurrayDeclError


@dataclass
class _Node:
    con: cs.Construct
    start: int
    end: int | None = None
    value: Any = None
    failed: bool = False
    children: list[_Node] = field(default_factory=list)


@dataclass(frozen=True)
class Span:
    offset: int
    size: int
    path: str
    value: Any
    doc: str = ""


_STACK: ContextVar[list[_Node] | None] = ContextVar("hurray_decl_trace_stack", default=None)
"""The open nodes of the trace running in this thread (or task); ``None`` outside a trace."""

_TRACED: weakref.WeakKeyDictionary[cs.Construct, cs.Construct] = weakref.WeakKeyDictionary()
"""Each declaration's traced copy, built once."""

_POSITIONS: weakref.WeakKeyDictionary[cs.Construct, cs.Construct] = weakref.WeakKeyDictionary()
"""Each declaration's positions-only traced copy, built once."""


def _recorder(con: cs.Construct) -> Any:
    """A ``_parsereport`` for the copy ``con`` that records its span in the running trace."""
    report = type(con)._parsereport

    def recording(stream: Any, context: Any, path: str) -> Any:
        stack = _STACK.get()
        if stack is None:  # the copy parsed outside trace(): nothing to record
            return report(con, stream, context, path)
        node = _Node(con, stream.tell())
        stack[-1].children.append(node)
        stack.append(node)
        try:
            node.value = report(con, stream, context, path)
        except BaseException:
            node.failed = True
            raise
        finally:
            node.end = stream.tell()
            stack.pop()
        return node.value

    return recording


_POSITIONED = (cs.Renamed, cs.Array, cs.GreedyRange)
"""The nodes a positions-only copy records: named fields and arrays (with their items), all that
:func:`positions_of` reads."""


def _copy(value: Any, memo: dict[int, Any], positions: bool = False) -> Any:
    """``value`` with every Construct inside it replaced by its recording copy (sharing kept);
    with ``positions``, only the nodes :func:`positions_of` reads record (:data:`_POSITIONED`, and
    an array's item), the others parse as they are declared."""
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, cs.Construct):
        new = copy.copy(value)
        memo[id(value)] = new
        for name, attr in vars(value).items():
            setattr(new, name, _copy(attr, memo, positions))
        if isinstance(value, cs.LazyBound):  # built when parsed: trace what it builds
            build = value.subconfunc
            new.subconfunc = lambda: traced(build(), positions=positions)
        choose = getattr(value, "choose", None)
        if callable(choose):  # picks its declaration when parsed (by tag and rank): trace the pick
            new.choose = lambda context: _traced_or_none(choose(context), positions)
        if not positions or isinstance(value, _POSITIONED):
            new._parsereport = _recorder(new)  # on the copy only: the declaration is untouched
        if positions and isinstance(value, (cs.Array, cs.GreedyRange)):
            new.subcon._parsereport = _recorder(new.subcon)  # each item is a node: its index is a path
        return new
    if isinstance(value, dict):
        new_dict = copy.copy(value)
        memo[id(value)] = new_dict
        for key, item in value.items():
            new_dict[key] = _copy(item, memo, positions)
        return new_dict
    if isinstance(value, (list, tuple)):
        items = [_copy(item, memo, positions) for item in value]
        result = items if isinstance(value, list) else tuple(items)
        memo[id(value)] = result
        return result
    return value


def parse_inside(declaration: cs.Construct, data: bytes, base: int) -> tuple[Any, BaseException | None]:
    """Parse ``data`` with ``declaration`` on its own, as a part of the trace running in this
    thread: its nodes become children of the node being parsed, at offsets shifted by ``base``
    (where ``data`` starts in the traced input). ``declaration`` is a traced copy, as a traced
    node's ``choose`` returns it; outside a trace this is a plain parse. Returns the value (None
    when the parse stopped) and the rule error or Construct error that stopped it."""
    stack = _STACK.get()
    parent = stack[-1] if stack else None
    before = len(parent.children) if parent is not None else 0
    value, error = None, None
    try:
        value = declaration.parse_stream(io.BytesIO(data))
    except (HurrayDeclError, cs.ConstructError) as exc:
        error = exc
    if parent is not None:
        pending = list(parent.children[before:])
        while pending:
            node = pending.pop()
            node.start += base
            node.end = None if node.end is None else node.end + base
            pending += node.children
    return value, error


def _traced_or_none(declaration: cs.Construct | None, positions: bool = False) -> cs.Construct | None:
    return None if declaration is None else traced(declaration, positions=positions)


def traced(declaration: cs.Construct, *, positions: bool = False) -> cs.Construct:
    """A copy of ``declaration`` whose every node records its span while :func:`trace` runs
    (``positions``: only the nodes whose start :func:`positions_of` reads, and the top one).

    Built once per declaration and cached; nothing global (no class, no shared node) changes,
    so parses elsewhere, in any thread, never see the recording.
    """
    cache = _POSITIONS if positions else _TRACED
    try:
        return cache[declaration]
    except KeyError:
        copied = cache[declaration] = _copy(declaration, {}, positions)
        if "_parsereport" not in vars(copied):
            copied._parsereport = _recorder(copied)
        return copied


_UNSET = object()


def _leaves(node: _Node, path: str, doc: str, out: list[Span], base: int,
            value: Any = _UNSET, named: str = "") -> None:
    """Collect leaf spans: a chain of single-child wrappers is one field, named by its renames."""
    con = node.con
    if isinstance(con, cs.Renamed):
        if con.name and con.name != named:  # a field renamed twice (name, then docs) is named once
            path = f"{path}.{con.name}" if path else con.name
            named = con.name
        doc = con.docs or doc
    if not node.children:
        size = (node.end or node.start) - node.start
        if size and not node.failed:  # a field cut short by the end of input is left undecoded
            # A field whose rule failed has no value above the primitive: show what was read.
            shown = node.value if value is _UNSET or value is None else value
            out.append(Span(base + node.start, size, path, shown, doc))
        return
    if isinstance(con, (cs.Array, cs.GreedyRange)):
        for index, child in enumerate(node.children):
            _leaves(child, f"{path}[{index}]", doc, out, base)
        return
    if len(node.children) == 1 and isinstance(con, cs.Subconstruct):
        _leaves(node.children[0], path, doc, out, base, node.value if value is _UNSET else value, named)
        return
    for child in node.children:
        _leaves(child, path, "", out, base)


def parse_tree(declaration: cs.Construct, data: bytes | io.BytesIO, *, params: dict[str, Any] | None = None,
               positions: bool = False) -> tuple[_Node, Any, HurrayDeclError | None]:
    """Parse with the traced copy of ``declaration``: the root of the recorded node tree, the
    parsed value (None when the parse stopped) and the rule error that stopped it, if any.
    ``data`` may be a stream, read from its current position. With ``positions`` the tree holds
    only what :func:`positions_of` reads (faster: for locating an error, not for spans)."""
    root = _Node(declaration, 0)
    stream = data if isinstance(data, io.IOBase) else io.BytesIO(data)
    error: HurrayDeclError | None = None
    value = None
    token = _STACK.set([root])
    try:
        context = cs.Container(_parsing=True, _building=False, _sizing=False, _params=dict(params or {}))
        context.update(params or {})
        value = traced(declaration, positions=positions)._parsereport(stream, context, "(parsing)")
    except HurrayDeclError as err:
        error = err
    except cs.ConstructError:  # the stream ran out inside a field: the caller's decoder says why
        error = None
    finally:
        _STACK.reset(token)
    return root, value, error


def spans_of(root: _Node, *, base: int = 0, prefix: str = "") -> list[Span]:
    """The leaf spans of a recorded tree (see :func:`trace`)."""
    spans: list[Span] = []
    for child in root.children:
        _leaves(child, prefix, "", spans, base)
    return spans


def positions_of(root: _Node, prefix: str = "descriptor") -> dict[str, int]:
    """The start of every named field and array item of a recorded tree, keyed by error path
    (``descriptor -> buffers -> 0 -> byte_size``); names starting with ``_`` and absent optional
    fields are left out."""
    found: dict[str, int] = {prefix: root.children[0].start if root.children else 0}

    def walk(node: _Node, path: str, named: str = "") -> None:
        con = node.con
        if isinstance(con, cs.Renamed) and con.name and con.name != named:  # renamed twice: one name
            if con.name.startswith("_") or (node.value is None and node.end == node.start):
                return  # a private name, or an optional section that is absent
            path = f"{path} -> {con.name}"
            found.setdefault(path, node.start)
        if isinstance(con, (cs.Array, cs.GreedyRange)):
            for index, child in enumerate(node.children):
                found.setdefault(f"{path} -> {index}", child.start)
                walk(child, f"{path} -> {index}")
            return
        for child in node.children:
            walk(child, path, (con.name or named) if isinstance(con, cs.Renamed) else "")

    for child in root.children:
        walk(child, prefix)
    return found


def trace(declaration: cs.Construct, data: bytes, *, base: int = 0, prefix: str = "",
          params: dict[str, Any] | None = None) -> tuple[list[Span], HurrayDeclError | None]:
    """Parse ``data`` and return the leaf spans, plus the rule error that stopped the parse.

    On a rule error, the spans end with the failing field (its value as read); a field cut
    short by the end of ``data`` is left out. Offsets are
    shifted by ``base`` and paths start with ``prefix``; ``params`` are the keyword arguments
    the declaration is parsed with (``permissive``).
    """
    root, _, error = parse_tree(declaration, data, params=params)
    return spans_of(root, base=base, prefix=prefix), error
