"""The command-line side of the HTML hex view: ``inspect --format html`` and ``audit --format html -o DIR``."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

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
    """Write ``text`` to a temporary file beside ``path``, then rename it into place."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def page_name(file: str) -> str:
    return f"{file}.html"


def write_audit(result: dict[str, Any], folder: Path, args: argparse.Namespace) -> int:
    """``audit --format html -o DIR``: one page per audited file and an index linking them with
    the verdicts; exit 1 if a verdict disagrees with the manifest (as the other formats)."""
    if not args.output:
        print("hurray-decl audit: error: --format html writes pages: give the folder with -o DIR", file=sys.stderr)
        return USAGE
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        print(f"hurray-decl audit: error: {str(out)!r} exists and is not a folder", file=sys.stderr)
        return ENVIRONMENT
    try:
        out.mkdir(parents=True, exist_ok=True)
        pages = {}
        for entry in result["descriptors"]:
            data = (folder / entry["file"]).read_bytes()
            dump = hexdump.dump(data, kind=result["kind"], permissive=args.permissive)
            name = page_name(entry["file"])
            write_atomically(out / name, render(dump, "html", title=f"{entry['file']} ({result['kind']})"))
            pages[entry["file"]] = quote(name)
        write_atomically(out / INDEX, render_audit_index(result, pages))
    except OSError as err:
        print(f"hurray-decl audit: error: cannot write {str(out)!r}: {err.strerror or err}", file=sys.stderr)
        return ENVIRONMENT
    summary = result["summary"]
    print(f"wrote {out / INDEX} and {len(pages)} pages: {summary['valid']} valid, {summary['invalid']} invalid, "
          f"{summary['disagreements']} disagreeing with the manifest")
    return INVALID if summary["disagreements"] else 0
