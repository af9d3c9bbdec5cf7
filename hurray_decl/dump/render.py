"""The renderer chooser: one entry point that renders a set of dump rows in a named format.

The rows (:mod:`hurray_decl.dump.rows`) know no renderer; the renderers (:mod:`hurray_decl.dump.table`
for text, Markdown and JSON, :mod:`hurray_decl.dump.html` for the page) know the rows. Every dump --
Hurray descriptor or payload, container, stream, onnx-light value -- and the command line render
through :func:`render` (the whole text) or :func:`chunks` / :func:`write` (piece by piece, as the
rows are produced), so a format is added in one place.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

from hurray_decl.dump.html import DEFAULT_TITLE, render_html
from hurray_decl.dump.rows import Rows
from hurray_decl.dump.table import json_lines, json_schema, markdown_lines, text_lines


def _joined(lines: Iterable[str]) -> Iterator[str]:
    """Lines as pieces of one text: a newline before every line but the first."""
    for i, line in enumerate(lines):
        yield "\n" + line if i else line


RENDERERS: dict[str, Callable[[Rows, str], Iterator[str]]] = {
    "text": lambda dump, _title: _joined(text_lines(dump)),
    "markdown": lambda dump, _title: _joined(markdown_lines(dump)),
    "json": lambda dump, _title: json_lines(dump),
    "html": lambda dump, title: iter([render_html(dump, title=title)]),
}
"""Each format's renderer, given the dump and a title (only the HTML page shows one): the pieces
of its output, in order, each produced once the rows it shows are."""

FORMATS = tuple(RENDERERS)

FLUSH_EVERY = 0.1
"""Seconds between flushes of a streamed dump (the first lines are flushed at once)."""
FIRST_LINES = 64
"""Pieces of a streamed dump flushed one by one, so the start of any dump appears at once."""

__all__ = ["FORMATS", "RENDERERS", "chunks", "json_schema", "render", "write"]


def chunks(dump: Rows, fmt: str = "text", *, title: str = DEFAULT_TITLE) -> Iterator[str]:
    """The pieces of :func:`render`'s text, produced as the dump's rows are."""
    renderer = RENDERERS.get(fmt)
    if renderer is None:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    return renderer(dump, title)


def render(dump: Rows, fmt: str = "text", *, title: str = DEFAULT_TITLE) -> str:
    """The dump as aligned text, a Markdown table, JSON, or a self-contained HTML page titled ``title``."""
    return "".join(chunks(dump, fmt, title=title))


def write(dump: Rows, out: TextIO, fmt: str = "text", *, title: str = DEFAULT_TITLE,
          every: float = FLUSH_EVERY) -> None:
    """Print the dump to ``out`` as its rows are produced, then a newline: the first pieces are
    flushed one by one, the rest at least every ``every`` seconds (0: each piece, for rows that
    arrive as slowly as their input, a stream's), so a reader of a pipe (``| head``) sees the start
    of any dump at once and memory holds a row at a time."""
    last = time.monotonic()
    for count, piece in enumerate(chunks(dump, fmt, title=title)):
        out.write(piece)
        now = time.monotonic()
        if count < FIRST_LINES or now - last >= every:
            out.flush()
            last = now
    out.write("\n")
    out.flush()
