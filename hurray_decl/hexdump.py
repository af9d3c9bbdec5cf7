"""Annotated hex dumps: every byte of a descriptor named by the declaration that reads it.

Rows come from :func:`hurray_decl.trace.trace` over the same Construct declarations the codec
uses; the verdict comes from the codec itself, so the dump and the decoder never disagree.
For an invalid input the rows run up to the failing field, which carries the rule code, and
the bytes after it follow as undecoded rows.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any, Callable

from . import engine
from .element_types import BY_TAG
from .errors import HurrayDeclError
from .schema import NONE32
from .tags import tag_range
from .trace import Span, trace

FORMATS = ("text", "markdown", "json")
UNDECODED = "(undecoded)"
RAW_ROW = 16  # bytes per undecoded row


@dataclass(frozen=True)
class Row:
    offset: int
    size: int
    hex: str
    field: str
    value: str


@dataclass(frozen=True)
class Dump:
    rows: list[Row]
    error: HurrayDeclError | None

    def to_json(self) -> dict[str, Any]:
        error = None
        if self.error is not None:
            error = {"code": self.error.code, "offset": self.error.offset, "message": str(self.error)}
        return {"rows": [asdict(r) for r in self.rows], "error": error}


def _scheme_tag(value: int) -> str:
    row = engine.SCHEMES.get(value)
    return f"0x{value:02X} ({row.title if row else tag_range(value).cls.value})"


def _type_tag(value: int) -> str:
    known = BY_TAG.get(value)
    return f"0x{value:02X} ({known.name if known else 'unassigned'})"


FORMATTERS: dict[str, Callable[[int], str]] = {
    "scheme_tag": _scheme_tag,
    "scale_type_tag": _type_tag,
    "type_tag": _type_tag,
    "flags": lambda v: f"0x{v:04X}",
}
"""How a field's value reads, by field name; other fields print their plain value."""


def describe(field: str, value: Any) -> str:
    name = field.rsplit(".", 1)[-1].split("[", 1)[0]
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex(" ").upper() or "(empty)"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, int):
        if name.endswith("_buffer_index") and value == NONE32:
            return "none (0xFFFFFFFF)"
        if name in FORMATTERS:
            return FORMATTERS[name](value)
    return str(value)


def _rows(data: bytes, spans: list[Span], start: int, end: int) -> list[Row]:
    rows = [
        Row(s.offset, s.size, data[s.offset:s.offset + s.size].hex(" ").upper(), s.path, describe(s.path, s.value))
        for s in spans
    ]
    position = max([start] + [s.offset + s.size for s in spans])
    while position < end:
        size = min(RAW_ROW, end - position)
        rows.append(Row(position, size, data[position:position + size].hex(" ").upper(), UNDECODED, ""))
        position += size
    return rows


def quantization_dump(data: bytes, *, permissive: bool = False, base: int = 0, prefix: str = "") -> Dump:
    """Rows and verdict for a bare quantization payload."""
    data = bytes(data)
    error: HurrayDeclError | None = None
    try:
        engine.decode_quantization(data, permissive=permissive)
    except HurrayDeclError as err:
        error = err
    spans: list[Span] = []
    row = engine.SCHEMES.get(data[0]) if data else None
    if row is not None:
        spans, stopped = trace(row.struct, data[: row.length], prefix=prefix)
        if len(data) > row.length and stopped is None:
            spans.append(Span(row.length, len(data) - row.length, _join(prefix, "padding"),
                              data[row.length:], "writer padding, never interpreted"))
    elif data:
        spans = [Span(0, 1, _join(prefix, "scheme_tag"), data[0])]
        if error is None and len(data) >= 4:  # opaque, permissive
            spans += [Span(1, 1, _join(prefix, "scheme_version"), data[1]),
                      Span(2, 2, _join(prefix, "flags"), int.from_bytes(data[2:4], "little"))]
            if len(data) > 4:
                spans.append(Span(4, len(data) - 4, _join(prefix, "payload"), data[4:]))
    rows = _rows(data, spans, 0, len(data))
    if base:
        rows = [Row(r.offset + base, r.size, r.hex, r.field, r.value) for r in rows]
    return Dump(rows, error)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def render(dump: Dump, fmt: str = "text") -> str:
    """The dump as aligned text, a Markdown table, or JSON."""
    if fmt == "json":
        return json.dumps(dump.to_json(), indent=2)
    failing = dump.error.offset if dump.error is not None else None
    marked = _failing_row(dump.rows, failing)
    header = ("Offset", "Value (hex)", "Field", "Value")
    cells = [(str(r.offset), r.hex, r.field, r.value + (f"  <-- {dump.error.code}" if i == marked else ""))
             for i, r in enumerate(dump.rows)]
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|---:|---|---|---|"]
        lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in cells]
    elif fmt == "text":
        widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(header)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip(),
                 "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    else:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    lines.append("")
    lines.append("valid" if dump.error is None else f"invalid: {dump.error}")
    return "\n".join(lines)


def _failing_row(rows: list[Row], offset: int | None) -> int | None:
    if offset is None:
        return None
    for index, row in enumerate(rows):
        if row.offset <= offset < row.offset + row.size:
            return index
    return len(rows) - 1 if rows else None


def _md(text: str) -> str:
    return text.replace("|", "\\|") if text else " "


def dump(data: bytes, *, kind: str = "tensor", permissive: bool = False) -> Dump:
    """Rows and verdict of a descriptor (``kind="quantization"`` for a bare payload)."""
    if kind == "quantization":
        return quantization_dump(data, permissive=permissive)
    raise ValueError(f"kind must be 'tensor' or 'quantization', not {kind!r}")


def hexdump(data: bytes, *, kind: str = "tensor", format: str = "text", permissive: bool = False) -> str:
    """The annotated hex dump of a descriptor as text, Markdown or JSON."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    return render(dump(data, kind=kind, permissive=permissive), format)
