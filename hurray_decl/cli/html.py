"""The command-line side of the HTML hex view: ``inspect --format html`` and ``audit --format html -o DIR``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hurray_decl.cli.kinds import KINDS, Kind
from hurray_decl.dump.html import render_audit_index
from hurray_decl.dump.render import render
from hurray_decl.dump.rows import Dump
from hurray_decl.hurray import dump as hexdump

INVALID = 1
USAGE = 2
ENVIRONMENT = 3
INDEX = "index.html"


def print_page(result: Dump, args: argparse.Namespace) -> int:
    """``inspect --format html``: the page on standard output; exit 1 if the input is invalid."""
    sys.stdout.write(render(result, "html", title=f"hurray-decl inspect {args.input}"))
    return INVALID if result.error is not None else 0


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through :func:`hurray_decl.cli.outputs.write_text`: a recognisable
    temporary beside it, renamed into place once complete (the umask's permissions, the free space
    checked first, nothing left on failure)."""
    from hurray_decl.cli.outputs import write_text

    write_text(path, text)


def page_name(file: str) -> str:
    return f"{file}.html"


ONNX_LIGHT_PAGES = str(Kind.ONNX_LIGHT)
"""The subfolder of ``-o DIR`` that holds the pages of an onnx-light section beside a Hurray one."""


def page_dump(path: Path, entry: dict[str, Any], kind: str, args: argparse.Namespace) -> Dump:
    """The dump of one audited file, by the kind its audit read it as: an onnx-light value,
    tensor or model, a container, a stream, or a descriptor (payload)."""
    data = path.read_bytes()
    if kind == Kind.ONNX_LIGHT:
        from hurray_decl.onnx_light.dump import dump as onnx_light_dump

        return onnx_light_dump(data, kind=entry.get("kind"))
    if data.startswith(KINDS[Kind.CONTAINER].magic):
        from hurray_decl.hurray.container.dump import container_dump

        return container_dump(data)
    if path.suffix in KINDS[Kind.STREAM].suffixes:
        from hurray_decl.hurray.stream.dump import stream_dump

        return stream_dump(data, permissive=args.permissive)
    dump = hexdump.quantization_dump if kind == Kind.QUANTIZATION else hexdump.tensor_dump
    return dump(data, permissive=args.permissive)


def write_audit(result: dict[str, Any], folder: Path, args: argparse.Namespace,
                more: list[tuple[dict[str, Any], Path]] | None = None) -> int:
    """``audit --format html -o DIR``: one page per audited file and an index linking them with
    the verdicts; ``more`` adds sections (the bundled onnx-light corpus after the Hurray one: its
    pages in ``DIR/onnx-light/``); exit 1 if a verdict disagrees with a manifest (as the other formats)."""
    if not args.output:
        print("hurray-decl audit: error: --format html writes pages: give the folder with -o DIR", file=sys.stderr)
        return USAGE
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        print(f"hurray-decl audit: error: {str(out)!r} exists and is not a folder", file=sys.stderr)
        return ENVIRONMENT
    sections = [(result, folder), *(more or [])]
    linked: list[tuple[dict[str, Any], dict[str, str]]] = []
    try:
        for number, (report, place) in enumerate(sections):
            sub = out / ONNX_LIGHT_PAGES if number and report["kind"] == Kind.ONNX_LIGHT else out
            sub.mkdir(parents=True, exist_ok=True)
            pages = {}
            for entry in report["descriptors"]:
                path = place / entry["file"]
                if entry["verdict"] in ("missing", "unchecked") or not path.is_file():
                    continue
                name = page_name(entry["file"])
                title = f"{entry['file']} ({entry.get('kind') or report['kind']})"
                write_atomically(sub / name, render(page_dump(path, entry, report["kind"], args), "html", title=title))
                pages[entry["file"]] = quote(sub.relative_to(out).joinpath(name).as_posix())
            linked.append((report, pages))
        write_atomically(out / INDEX, render_audit_index(linked[0][0], linked[0][1], more=linked[1:]))
    except OSError as err:
        print(f"hurray-decl audit: error: cannot write {str(out)!r}: {err.strerror or err}", file=sys.stderr)
        return ENVIRONMENT
    count = sum(len(pages) for _, pages in linked)
    summaries = [report["summary"] for report, _ in linked]
    valid, invalid = sum(s["valid"] for s in summaries), sum(s["invalid"] for s in summaries)
    disagreements = sum(s["disagreements"] for s in summaries)
    print(f"wrote {out / INDEX} and {count} pages: {valid} valid, {invalid} invalid, "
          f"{disagreements} disagreeing with the manifest")
    return INVALID if disagreements else 0
