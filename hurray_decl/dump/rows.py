"""The rows of an annotated hex dump and their renderers: aligned text, Markdown, JSON (its
JSON Schema shipped in the package) and a self-contained HTML page.

Format-neutral: the Hurray dumps (:mod:`hurray_decl.hurray.dump`, the container's) and onnx-light's
make their rows from their own declarations and render them here.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

from hurray_decl.errors import HurrayDeclError
from hurray_decl.dump.html import render_html

FORMATS = ("text", "markdown", "json", "html")
JSON_SCHEMA = "schema.json"
"""The JSON Schema of the json format, shipped in the package: ``json_schema()`` loads it."""
UNDECODED = "(undecoded)"
BEYOND = "(after descriptor_length)"
RAW_ROW = 16  # bytes per undecoded row


def json_schema() -> dict[str, Any]:
    """The JSON Schema that every ``format="json"`` dump satisfies."""
    return json.loads(resources.files("hurray_decl.dump").joinpath(JSON_SCHEMA).read_text(encoding="utf-8"))


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


def raw_rows(data: bytes, start: int, end: int, label: str) -> list[Row]:
    """Bytes no field covers, in rows of at most 16."""
    return [Row(p, min(RAW_ROW, end - p), data[p:min(end, p + RAW_ROW)].hex(" ").upper(), label, "")
            for p in range(start, end, RAW_ROW)]


def render(dump: Dump, fmt: str = "text") -> str:
    """The dump as aligned text, a Markdown table, JSON, or a self-contained HTML page."""
    if fmt == "json":
        return json.dumps(dump.to_json(), indent=2)
    if fmt == "html":
        return render_html(dump)
    failing = dump.error.offset if dump.error is not None else None
    marked = failing_row(dump.rows, failing)
    header = ("Offset", "Value (hex)", "Field", "Value")
    mark = f"  <-- {dump.error.code}" if dump.error is not None else ""
    cells = [(str(r.offset), r.hex, r.field, r.value + (mark if i == marked else "")) for i, r in enumerate(dump.rows)]
    if fmt == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|---:|---|---|---|"]
        lines += ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in cells]
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


def markdown_cell(text: str) -> str:
    return text.replace("|", "\\|") if text else " "
