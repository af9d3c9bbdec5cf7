"""The rows of a hex dump as a table: text that fits 100 columns, Markdown, and the JSON document
(its JSON Schema shipped in the package as ``schema.json``).

Each renderer produces its output line by line as the rows arrive (``*_lines``), so a dump of
any size starts printing at once and holds one row at a time; ``render_*`` joins the lines.

The text layout has fixed columns, as hexyl and xxd keep rows to a fixed width: the offset, the
hex of up to 8 bytes per line, the field and the value, each wrapped in its column onto
continuation lines and cut after :data:`CELL_LINES` lines with a count of what was left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from importlib import resources
from typing import Any

from hurray_decl.dump.rows import HEX_SHOWN, Rows, marked, verdict_json

JSON_SCHEMA = "schema.json"
"""The JSON Schema of the json format, shipped in the package: ``json_schema()`` loads it."""
HEADER = ("Offset", "Value (hex)", "Field", "Value")
WIDTH = 100
"""Columns of every line of the text table and of the verdict after it."""
HEX_BYTES = 8
"""Bytes of hex per text line."""
COLUMNS = (10, 3 * HEX_BYTES - 1, 34, WIDTH - 10 - (3 * HEX_BYTES - 1) - 34 - 3 * 2)
"""Widths of the text columns: offset, hex, field, value (two spaces between columns)."""
CELL_LINES = 4
"""Lines a field or value cell may take before it is cut."""


def json_schema() -> dict[str, Any]:
    """The JSON Schema that every ``format="json"`` dump satisfies."""
    loaded: dict[str, Any] = json.loads(
        resources.files("hurray_decl.dump").joinpath(JSON_SCHEMA).read_text(encoding="utf-8"))
    return loaded


def json_lines(dump: Rows) -> Iterator[str]:
    """The dump's JSON document, indented as ``json.dumps(dump.to_json(), indent=2)`` would be,
    one row at a time."""
    head = json.dumps(dump.about, indent=2)[1:-2]  # the keys before the rows, if any
    yield "{" + (head + "," if dump.about else "") + '\n  "rows": ['
    first = True
    for row in dump.rows:
        text = json.dumps(row.to_json(), indent=2).replace("\n", "\n    ")
        yield ("\n    " if first else ",\n    ") + text
        first = False
    tail = json.dumps(verdict_json(dump.error), indent=2)[1:]  # after the rows: the top level's other keys
    yield ("\n  ]," if not first else "],") + tail


def render_json(dump: Rows) -> str:
    """The dump's JSON document (rows and error), indented."""
    return "".join(json_lines(dump))


def _cells(dump: Rows) -> Iterator[tuple[int, int, str, str, str, str]]:
    """(offset, size, hex, field, value, marker) per row; the failing field's marker names its rule."""
    for row, failing in marked(dump):
        code = dump.error.code if failing and dump.error is not None else ""
        yield row.offset, row.size, row.hex, row.field, row.value, f"<-- {code}" if code else ""


VERDICT_INDENT = "  "
"""The indent of a verdict's continuation lines."""


def verdict_lines(text: str, width: int = WIDTH) -> list[str]:
    """A verdict in lines of at most ``width`` columns, broken between words (a word longer than a
    line is broken too); the lines after the first are indented by :data:`VERDICT_INDENT`, so the
    verdict starts where a line starts with ``valid`` or ``invalid: [CODE]``."""
    import textwrap

    flat = " ".join(text.split())
    return textwrap.wrap(flat, width, subsequent_indent=VERDICT_INDENT, break_on_hyphens=False) or [flat]


def _verdict(dump: Rows) -> Iterator[str]:
    yield ""
    yield from verdict_lines("valid" if dump.error is None else f"invalid: {dump.error}")


NOTE = re.compile(r"… \(\+(\d+) chars\)$")
"""The count a row's text ends with when the row itself cut it (:func:`~hurray_decl.dump.rows.shorten`)."""


def _wrap(text: str, width: int, breaks: str) -> list[str]:
    """``text`` in lines of at most ``width``, broken after one of ``breaks`` when one is past
    the line's first third, cut after CELL_LINES lines with the count of characters left out
    (those the row had already left out included)."""
    lines: list[str] = []
    rest = text
    while rest and len(lines) < CELL_LINES:
        if len(rest) <= width:
            lines.append(rest)
            rest = ""
            break
        cut = max(rest.rfind(c, 1, width) + 1 for c in breaks)  # a break after one of them
        cut = cut if cut > width // 3 else width
        lines.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip(" ")
    if rest:
        known = NOTE.search(rest)
        hidden = len(rest) - len(known.group(0)) + int(known.group(1)) if known else len(rest)
        note = f"…(+{hidden})"
        lines[-1] = lines[-1][:width - len(note)] + note
    return lines or [""]


def _hex_lines(hex_text: str, size: int) -> list[str]:
    per_line = 3 * HEX_BYTES
    lines = [hex_text[p:p + per_line].rstrip() for p in range(0, len(hex_text), per_line)] or [""]
    shown = (len(hex_text) + 1) // 3
    if size > shown:
        lines.append(f"(+{size - shown} bytes)")
    return lines


def text_lines(dump: Rows) -> Iterator[str]:
    """The dump as fixed columns that fit :data:`WIDTH`, then the verdict."""
    w_offset, w_hex, w_field, w_value = COLUMNS
    yield "  ".join(h.ljust(w) for h, w in zip(HEADER, COLUMNS)).rstrip()
    yield "  ".join("-" * w for w in COLUMNS)
    for offset, size, hex_text, field, value, marker in _cells(dump):
        first = str(offset)
        if marker:
            value = f"{value}  {marker}" if value else marker
        if len(hex_text) <= w_hex and len(field) <= w_field and len(value) <= w_value and size * 3 - 1 <= w_hex:
            yield f"{first:<{w_offset}}  {hex_text:<{w_hex}}  {field:<{w_field}}  {value}".rstrip()
            continue
        hexes = _hex_lines(hex_text, size) if size * 3 - 1 > w_hex or len(hex_text) > w_hex else [hex_text]
        fields = _wrap(field, w_field, ".:")
        values = _wrap(value[:len(value) - len(marker)].rstrip() if marker else value, w_value, " ,")
        if marker:  # the rule code stays whole, on the value's last line or the next
            if not values[-1]:
                values[-1] = marker
            elif len(values[-1]) + 2 + len(marker) <= w_value:
                values[-1] += "  " + marker
            else:
                values.append(marker)
        for i in range(max(len(hexes), len(fields), len(values))):
            cells = (first if i == 0 else "", hexes[i] if i < len(hexes) else "",
                     fields[i] if i < len(fields) else "", values[i] if i < len(values) else "")
            yield "  ".join(c.ljust(w) for c, w in zip(cells, COLUMNS)).rstrip()
    yield from _verdict(dump)


def render_text(dump: Rows) -> str:
    """The dump as fixed columns that fit 100 columns, then the verdict."""
    return "\n".join(text_lines(dump))


def markdown_lines(dump: Rows) -> Iterator[str]:
    """The dump as a Markdown table (each cell bounded as a row is), then the verdict."""
    yield "| " + " | ".join(HEADER) + " |"
    yield "|---:|---|---|---|"
    for offset, size, hex_text, field, value, marker in _cells(dump):
        value = f"{value}  {marker}" if marker else value
        shown = (len(hex_text) + 1) // 3
        if size > shown:
            hex_text += f" (+{size - shown} bytes)"
        yield "| " + " | ".join(markdown_cell(c) for c in (str(offset), hex_text, field, value)) + " |"
    yield from _verdict(dump)


def render_markdown(dump: Rows) -> str:
    """The dump as a Markdown table, then the verdict."""
    return "\n".join(markdown_lines(dump))


def markdown_cell(text: str) -> str:
    return text.replace("|", "\\|") if text else " "


__all__ = ["COLUMNS", "HEADER", "HEX_SHOWN", "WIDTH", "json_lines", "json_schema", "markdown_lines", "render_json",
           "render_markdown", "render_text", "text_lines"]
