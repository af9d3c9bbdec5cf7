"""The renderer chooser: one entry point that renders a set of dump rows in a named format.

The rows (:mod:`hurray_decl.dump.rows`) know no renderer; the renderers (:mod:`hurray_decl.dump.table`
for text, Markdown and JSON, :mod:`hurray_decl.dump.html` for the page) know the rows. Every dump --
Hurray descriptor or payload, container, onnx-light value -- and the command line render through
:func:`render`, so a format is added in one place.
"""

from __future__ import annotations

from collections.abc import Callable

from hurray_decl.dump.html import DEFAULT_TITLE, render_html
from hurray_decl.dump.rows import Dump
from hurray_decl.dump.table import json_schema, render_json, render_markdown, render_text

RENDERERS: dict[str, Callable[[Dump, str], str]] = {
    "text": lambda dump, _title: render_text(dump),
    "markdown": lambda dump, _title: render_markdown(dump),
    "json": lambda dump, _title: render_json(dump),
    "html": lambda dump, title: render_html(dump, title=title),
}
"""Each format's renderer, given the dump and a title (only the HTML page shows one)."""

FORMATS = tuple(RENDERERS)

__all__ = ["FORMATS", "RENDERERS", "json_schema", "render"]


def render(dump: Dump, fmt: str = "text", *, title: str = DEFAULT_TITLE) -> str:
    """The dump as aligned text, a Markdown table, JSON, or a self-contained HTML page titled ``title``."""
    renderer = RENDERERS.get(fmt)
    if renderer is None:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    return renderer(dump, title)
