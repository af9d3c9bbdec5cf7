"""The rows of an annotated hex dump: every byte named, and the verdict.

Format-neutral: the Hurray dumps (:mod:`hurray_decl.hurray.dump`, the container's) and onnx-light's
make their rows from their own declarations. The rows know no renderer: :mod:`hurray_decl.dump.render`
picks one (text, Markdown, JSON, HTML) for a set of rows.

A row holds a bounded amount whatever the size of the field it names: the hex of at most
:data:`HEX_SHOWN` bytes (``size`` says how many it covers), a value text of at most
:data:`TEXT_SHOWN` characters and a typed value of at most :data:`ITEMS_SHOWN` list elements,
with ``elided`` counting what was left out. A dump is either a :class:`Dump` (a list of rows and
the verdict) or a :class:`RowStream`, whose rows are produced as they are read (a renderer
prints each one before the next is computed) and whose verdict is known by the time the rows
that hold it have been produced.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hurray_decl.errors import HurrayDeclError

UNDECODED = "(undecoded)"
BEYOND = "(after descriptor_length)"
RAW_ROW = 16  # bytes per undecoded row
HEX_SHOWN = 32
"""Bytes of hex a row keeps; a longer field is located by its offset and size."""
TEXT_SHOWN = 200
"""Characters of a value's text a row keeps."""
ITEMS_SHOWN = 16
"""Elements of a list value a row keeps (its text and its typed value)."""


@dataclass(frozen=True)
class Row:
    offset: int
    size: int
    hex: str
    field: str
    value: str
    data: Any = None
    """The value typed, as the JSON document gives it: a number, a boolean, a string, a list of
    them, or None (no value: undecoded bytes, or a byte field, whose bytes are the hex)."""
    elided: int = 0
    """How many characters (of a string) or elements (of a list) the value leaves out."""

    def to_json(self) -> dict[str, Any]:
        document = {"offset": self.offset, "size": self.size, "hex": self.hex, "field": self.field,
                    "value": self.data, "text": self.value}
        if self.elided:
            document["elided"] = self.elided
        return document


def hex_shown(data: Any, start: int, end: int) -> str:
    """The hex a row shows of ``data[start:end]``: its first :data:`HEX_SHOWN` bytes at most."""
    return bytes(data[start:min(end, start + HEX_SHOWN)]).hex(" ").upper()


def shorten(text: str, limit: int = TEXT_SHOWN) -> str:
    """``text`` cut to ``limit`` characters, the cut counted: ``'abc…' (+N chars)``."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit} chars)"


def typed(value: Any) -> tuple[Any, int]:
    """The JSON form of a decoded value and how much of it is elided: numbers and booleans as
    themselves (a non-finite float as its name), strings cut to TEXT_SHOWN characters, lists to
    ITEMS_SHOWN elements, bytes as None (the row's hex shows them)."""
    if isinstance(value, (bool, int)) or value is None:
        return value, 0
    if isinstance(value, float):
        return (value if math.isfinite(value) else repr(value)), 0
    if isinstance(value, str):
        return value[:TEXT_SHOWN], max(0, len(value) - TEXT_SHOWN)
    if isinstance(value, (list, tuple)):
        return [typed(v)[0] for v in value[:ITEMS_SHOWN]], max(0, len(value) - ITEMS_SHOWN)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return None, 0
    if hasattr(value, "item"):  # a NumPy scalar
        return typed(value.item())
    return str(value)[:TEXT_SHOWN], 0


@dataclass(frozen=True)
class Dump:
    rows: list[Row]
    error: HurrayDeclError | None
    about: dict[str, Any] = field(default_factory=dict, compare=False)
    """What the JSON document says before its rows (the command line puts the file and its kind there)."""

    def to_json(self) -> dict[str, Any]:
        return {**self.about, "rows": [r.to_json() for r in self.rows], **verdict_json(self.error)}


def verdict_json(error: HurrayDeclError | None) -> dict[str, Any]:
    """What the JSON document gives after its rows: the verdict, and the error object (the one
    every JSON document of the project gives: code, path, offset, message) or null."""
    return {"verdict": "valid" if error is None else "invalid", "error": None if error is None else error.to_dict()}


class RowStream:
    """A dump whose rows are produced as they are iterated, once: ``produce(stream)`` gives them,
    and sets ``stream.error`` no later than when it yields the row holding the error's offset
    (the error is final once the rows are exhausted)."""

    def __init__(self, produce: Callable[[RowStream], Iterable[Row]]) -> None:
        self.error: HurrayDeclError | None = None
        self.about: dict[str, Any] = {}  # as Dump.about
        self._rows = iter(produce(self))

    @property
    def rows(self) -> Iterator[Row]:
        return self._rows

    def collect(self) -> Dump:
        """Every row, then the verdict, as a :class:`Dump`."""
        rows = list(self._rows)
        return Dump(rows, self.error, self.about)


Rows = Dump | RowStream
"""What the renderers take: a dump whose rows are a list, or a stream of them."""


def raw_rows(data: bytes, start: int, end: int, label: str) -> list[Row]:
    """Bytes no field covers, in rows of at most 16."""
    return [Row(p, min(RAW_ROW, end - p), data[p:min(end, p + RAW_ROW)].hex(" ").upper(), label, "")
            for p in range(start, end, RAW_ROW)]


def failing_row(rows: list[Row], offset: int | None) -> int | None:
    """The row of the field holding ``offset``; for an offset just past what was read (a field or a
    payload cut short) or inside bytes no field names, the last row before it."""
    if offset is None or not rows:
        return None
    before = covering = None
    for index, row in enumerate(rows):
        if row.offset <= offset < row.offset + row.size:
            if row.field not in (UNDECODED, BEYOND):
                return index
            covering = index
            break
        if row.offset + row.size <= offset:
            before = index
    if before is not None:
        return before
    return covering if covering is not None else len(rows) - 1


def marked(dump: Rows) -> Iterator[tuple[Row, bool]]:
    """Each row and whether it is the failing one (as :func:`failing_row` picks it), as the rows
    are produced: a row is held back only until the next one arrives (rows come in offset order),
    so a renderer prints each row before the one after the next is computed."""
    held: Row | None = None
    seen_before = False  # a row ending at or before the error's offset has gone by
    done = False

    def place(row: Row, offset: int) -> str:
        if row.offset <= offset < row.offset + row.size:
            return "named" if row.field not in (UNDECODED, BEYOND) else "undecoded"
        return "before" if row.offset + row.size <= offset else "after"

    for row in dump.rows:
        if held is not None:
            error = dump.error
            hit = False
            if not done and error is not None and error.offset is not None:
                mine, nxt = place(held, error.offset), place(row, error.offset)
                hit = (mine == "named" or (mine == "before" and nxt in ("undecoded", "after"))
                       or (mine == "undecoded" and not seen_before))
                seen_before = seen_before or mine == "before"
            done = done or hit
            yield held, hit
        held = row
    if held is not None:
        error = dump.error
        hit = False
        if not done and error is not None and error.offset is not None:
            mine = place(held, error.offset)
            hit = mine in ("named", "before", "after") or (mine == "undecoded" and not seen_before)
        yield held, hit
