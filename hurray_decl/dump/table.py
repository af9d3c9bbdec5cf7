"""The rows of a hex dump as a table: aligned text, Markdown, and the JSON document (its JSON
Schema shipped in the package as ``schema.json``)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from hurray_decl.dump.rows import Dump, failing_row

JSON_SCHEMA = "schema.json"
"""The JSON Schema of the json format, shipped in the package: ``json_schema()`` loads it."""
HEADER = ("Offset", "Value (hex)", "Field", "Value")


def json_schema() -> dict[str, Any]:
    """The JSON Schema that every ``format="json"`` dump satisfies."""
    loaded: dict[str, Any] = json.loads(
        resources.files("hurray_decl.dump").joinpath(JSON_SCHEMA).read_text(encoding="utf-8"))
    return loaded


def render_json(dump: Dump) -> str:
    """The dump's JSON document (rows and error), indented."""
    return json.dumps(dump.to_json(), indent=2)


def _cells(dump: Dump) -> list[tuple[str, str, str, str]]:
    """One tuple of cells per row; the failing field's value carries the rule code."""
    marked = failing_row(dump.rows, dump.error.offset if dump.error is not None else None)
    code = dump.error.code if dump.error is not None else ""
    return [(str(r.offset), r.hex, r.field, r.value + (f"  <-- {code}" if i == marked else ""))
            for i, r in enumerate(dump.rows)]


def _verdict(dump: Dump) -> list[str]:
    return ["", "valid" if dump.error is None else f"invalid: {dump.error}"]


def render_text(dump: Dump) -> str:
    """The dump as aligned columns, then the verdict."""
    cells = _cells(dump)
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(HEADER)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines + _verdict(dump))


def render_markdown(dump: Dump) -> str:
    """The dump as a Markdown table, then the verdict."""
    lines = ["| " + " | ".join(HEADER) + " |", "|---:|---|---|---|"]
    lines += ["| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in _cells(dump)]
    return "\n".join(lines + _verdict(dump))


def markdown_cell(text: str) -> str:
    return text.replace("|", "\\|") if text else " "
