"""Byte spans of every field, read off a Construct declaration while it parses.

:func:`trace` parses ``data`` with a declaration and returns one :class:`Span` per leaf field:
offset, size, dotted path (``layout.strides[1]``), value and the field's documentation. The
spans come from Construct's own parse, so they name exactly what the declaration names; the
hex dump is built on them and has no table of its own.
"""

from __future__ import annotations

import io
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

import construct as cs

from .errors import HurrayDeclError

_LOCK = threading.Lock()
_ORIGINAL = cs.Construct._parsereport


@dataclass
class _Node:
    con: cs.Construct
    start: int
    end: int | None = None
    value: Any = None
    failed: bool = False
    children: list["_Node"] = field(default_factory=list)


@dataclass(frozen=True)
class Span:
    offset: int
    size: int
    path: str
    value: Any
    doc: str = ""


@contextmanager
def _recording(root: _Node) -> Iterator[None]:
    stack = [root]

    def report(self, stream, context, path):
        node = _Node(self, stream.tell())
        stack[-1].children.append(node)
        stack.append(node)
        try:
            node.value = _ORIGINAL(self, stream, context, path)
        except BaseException:
            node.failed = True
            raise
        finally:
            node.end = stream.tell()
            stack.pop()
        return node.value

    with _LOCK:
        cs.Construct._parsereport = report
        try:
            yield
        finally:
            cs.Construct._parsereport = _ORIGINAL


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


def trace(declaration: cs.Construct, data: bytes, *, base: int = 0, prefix: str = "",
          params: dict[str, Any] | None = None) -> tuple[list[Span], HurrayDeclError | None]:
    """Parse ``data`` and return the leaf spans, plus the rule error that stopped the parse.

    On a rule error, the spans end with the failing field (its value as read); a field cut
    short by the end of ``data`` is left out. Offsets are
    shifted by ``base`` and paths start with ``prefix``; ``params`` are the keyword arguments
    the declaration is parsed with (``permissive``).
    """
    root = _Node(declaration, 0)
    stream = io.BytesIO(data)
    error: HurrayDeclError | None = None
    with _recording(root):
        try:
            context = cs.Container(_parsing=True, _building=False, _sizing=False, _params=dict(params or {}))
            context.update(params or {})
            declaration._parsereport(stream, context, "(parsing)")
        except HurrayDeclError as err:
            error = err
        except cs.ConstructError:  # the stream ran out inside a field: the caller's decoder says why
            error = None
    spans: list[Span] = []
    for child in root.children:
        _leaves(child, prefix, "", spans, base)
    return spans, error
