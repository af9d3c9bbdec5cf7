"""The rows of an annotated hex dump: every byte named, and the verdict.

Format-neutral: the Hurray dumps (:mod:`hurray_decl.hurray.dump`, the container's) and onnx-light's
make their rows from their own declarations. The rows know no renderer: :mod:`hurray_decl.dump.render`
picks one (text, Markdown, JSON, HTML) for a set of rows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from hurray_decl.errors import HurrayDeclError

UNDECODED = "(undecoded)"
BEYOND = "(after descriptor_length)"
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
