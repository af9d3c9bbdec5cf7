"""The hex dump as one self-contained HTML page: a hex pane beside the field tree, linked both ways.

The page embeds the dump's JSON document (exactly what ``format="json"`` prints) and builds
everything from it in the browser, so the page and the JSON never disagree and there is no
second field table. It needs no network: script and style are inline (``hexview/`` in the
package), a Content-Security-Policy forbids every fetch, and it works from ``file://``. Only
the rows in sight are in the DOM, so dumps of 100,000 rows stay usable.

The renderer depends on nothing but a dump's ``to_json()`` (rows and error) and the rule table,
so every kind of dump (quantization payload, tensor descriptor, onnx-light value, container)
gets the same page.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from hurray_decl.dump.rows import RowStream
from hurray_decl.errors import ArgumentError
from hurray_decl.rules import all_rules

if TYPE_CHECKING:
    from hurray_decl.dump.rows import Dump

ASSETS = "hexview"
DEFAULT_TITLE = "hurray-decl hex dump"

COLOURS: dict[str, dict[str, str]] = {
    "light": {
        "bg": "#ffffff", "fg": "#1b1f24", "muted": "#6a737d", "line": "#d0d7de", "field-bg": "#f6f8fa",
        "alt": "#eef3f8", "hover": "#fff1a8", "selected": "#2f6fde", "selected-fg": "#ffffff",
        "error": "#ffb3b3", "error-fg": "#8a0000", "problem-bg": "#fff5f5", "ok-bg": "#d8f5dd",
        "ok-fg": "#0b5d1e", "focus": "#2f6fde", "link": "#0b57d0",
    },
    "dark": {
        "bg": "#16191d", "fg": "#e2e5e9", "muted": "#8b949e", "line": "#30363d", "field-bg": "#21262d",
        "alt": "#1f252c", "hover": "#5a4a00", "selected": "#3d7bf0", "selected-fg": "#ffffff",
        "error": "#7a1f1f", "error-fg": "#ffd0d0", "problem-bg": "#2a1717", "ok-bg": "#123d1f",
        "ok-fg": "#a6f0b8", "focus": "#3d7bf0", "link": "#8ab4f8",
    },
}
"""The page's colours by system setting (prefers-color-scheme); ``error`` marks the failing
field's bytes, ``selected`` the selected field's, ``hover`` the one under the pointer."""

ROW_HEIGHTS = {"hex-row": 18, "tree-row": 20}
"""Pixel heights of a hex line and a tree row (the virtual lists need them fixed)."""

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
"""The page may load nothing: no script, style, font or image from anywhere but itself."""


@cache
def _asset(name: str) -> str:
    return resources.files("hurray_decl.dump").joinpath(f"{ASSETS}/{name}").read_text(encoding="utf-8")


def _properties(colours: Mapping[str, str]) -> str:
    return " ".join(f"--{name}: {value};" for name, value in colours.items())


def stylesheet() -> str:
    """The page's CSS: colour properties for light and dark, the row heights, then the layout."""
    sizes = " ".join(f"--{name}: {px}px;" for name, px in ROW_HEIGHTS.items())
    return (f":root {{ color-scheme: light dark; {sizes} {_properties(COLOURS['light'])} }}\n"
            f"@media (prefers-color-scheme: dark) {{ :root {{ {_properties(COLOURS['dark'])} }} }}\n"
            + _asset("hexview.css"))


def _script_data(text: str) -> str:
    """JSON text safe inside a <script> element: ``<`` occurs in JSON only inside strings,
    where ``\\u003c`` means the same character, so the document parses to the same value."""
    return text.replace("<", "\\u003c")


def json_document(dump: Dump) -> str:
    """The JSON text the page embeds: the ``format="json"`` document."""
    return json.dumps(dump.to_json(), indent=2)


def _rule_texts(codes: list[str]) -> dict[str, dict[str, str]]:
    table = all_rules()
    return {code: {"text": table[code].text, "source": table[code].source} for code in codes if code in table}


def _page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<link rel=\"icon\" href=\"data:,\">\n"
            f"<title>{html.escape(title)}</title>\n<style>\n{stylesheet()}</style>\n</head>\n"
            f"<body>\n{body}</body>\n</html>\n")


_VIEW = """<header>
<h1>{title}</h1><span id="verdict" class="verdict"></span><span id="stats" class="stats"></span>
<div class="tools"><span id="matches"></span>
<input id="search" type="search" placeholder="filter by path or value  (/)" aria-label="filter fields">
<button id="fold" type="button">fold all</button><button id="unfold" type="button">unfold all</button></div>
</header>
<section id="problem" hidden><span class="code"></span> <span class="message"></span>
<button type="button">show the failing field (e)</button>
<div class="rule">Rule: <span class="rule-text"></span><span class="source"></span></div></section>
<noscript><p>The interactive view needs JavaScript; the dump is in the JSON element of this page.</p></noscript>
<main>
<div class="pane hexpane"><div id="hexhead" class="colhead hex"></div>
<div id="hex" class="scroll hex" tabindex="0" aria-label="hex bytes"><div class="spacer"></div><div class="layer"></div></div></div>
<div class="pane treepane"><div class="tree"><div class="head colhead"><span class="num">offset</span><span class="num">size</span>\
<span>field</span><span>value</span><span>rule</span></div></div>
<div id="tree" class="scroll tree" tabindex="0" role="listbox" aria-label="fields"><div class="spacer"></div><div class="layer"></div></div></div>
</main>
<div class="keys"><kbd>&uarr;</kbd><kbd>&darr;</kbd> field, <kbd>&larr;</kbd><kbd>&rarr;</kbd> fold / parent, \
<kbd>PgUp</kbd><kbd>PgDn</kbd><kbd>Home</kbd><kbd>End</kbd>, <kbd>Enter</kbd> toggle, <kbd>e</kbd> failing field, \
<kbd>/</kbd> search, <kbd>Esc</kbd> clear</div>
<script type="application/json" id="hexdump-json">{document}</script>
<script type="application/json" id="hexdump-rules">{rules}</script>
<script>
{script}</script>
"""


def render_html(dump: Dump | RowStream, title: str = DEFAULT_TITLE) -> str:
    """The dump as one self-contained HTML page (see the module's documentation); a stream of
    rows is collected first (the page embeds the whole document)."""
    if isinstance(dump, RowStream):
        dump = dump.collect()
    if not callable(getattr(dump, "to_json", None)):
        raise ArgumentError("render_html(dump=...)", "not a hex dump", actual=type(dump).__name__,
                            expected="a dump_rows.Dump")
    if not isinstance(title, str):
        raise ArgumentError("render_html(title=...)", "not a string", actual=type(title).__name__, expected="str")
    document = json_document(dump)
    codes = [dump.error.code] if dump.error is not None else []
    body = _VIEW.format(title=html.escape(title), document=_script_data(document),
                        rules=_script_data(json.dumps(_rule_texts(codes))),
                        script=_asset("hexview.js"))
    return _page(title, body)


def render_audit_index(report: Mapping[str, Any], pages: Mapping[str, str], title: str | None = None,
                       more: Sequence[tuple[Mapping[str, Any], Mapping[str, str]]] = ()) -> str:
    """An index page for an audit report (as ``hurray-decl audit --format json`` prints it):
    one table row per file with its verdict, rule, offset and manifest agreement, linking the
    page of that file (``pages``: file name to relative link); ``more`` adds a section per further
    (report, pages), as the default audit gives the Hurray corpus, then the onnx-light one."""
    heading = title or f"hurray-decl audit of {report['folder']}"
    sections = [(report, pages), *more]
    body = f"<header><h1>{html.escape(heading)}</h1></header>\n" + "".join(
        _audit_section(r, p, heading=bool(more)) for r, p in sections)
    return _page(heading, body)


def _audit_section(report: Mapping[str, Any], pages: Mapping[str, str], *, heading: bool) -> str:
    summary = report["summary"]
    cells = []
    for entry in report["descriptors"]:
        link = pages.get(entry["file"])
        name = html.escape(entry["file"])
        anchor = f'<a href="{html.escape(link)}">{name}</a>' if link else name
        agrees = {True: "yes", False: "NO"}.get(entry.get("agrees"), "-")
        expected = entry.get("expected") or ("valid" if "expected" in entry else "")
        offset = "" if entry["offset"] is None else str(entry["offset"])
        cls = ' class="disagrees"' if entry.get("agrees") is False else ""
        cells.append(
            f"<tr{cls} data-file=\"{name}\" data-verdict=\"{entry['verdict']}\">"
            f"<td>{anchor}</td>"
            f"<td>{entry['verdict']}</td><td>{html.escape(entry['code'] or '')}</td><td class=\"num\">{offset}</td>"
            f"<td>{html.escape(expected)}</td><td>{agrees}</td><td>{html.escape(entry['message'])}</td></tr>")
    title = f"<h2>{html.escape(str(report['folder']))}</h2>" if heading else ""
    return (f"<section class=\"audit\" data-kind=\"{html.escape(str(report['kind']))}\">{title}"
            f"<span class=\"stats\">{summary['files']} {html.escape(str(report['kind']))} "
            f"files: {summary['valid']} valid, {summary['invalid']} invalid, "
            f"{summary['disagreements']} disagreeing with the manifest</span>\n"
            "<table class=\"audit\"><thead><tr><th>file</th><th>verdict</th><th>rule</th><th>offset</th>"
            "<th>expected</th><th>agrees</th><th>message</th></tr></thead>\n<tbody>\n"
            + "\n".join(cells) + "\n</tbody></table></section>\n")
