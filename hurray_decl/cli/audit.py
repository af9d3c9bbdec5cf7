"""``audit``: verdicts and rule codes for every descriptor of a folder, checked against its manifest
(the audit itself, which files are audited and how manifests read: :mod:`hurray_decl.cli.corpus`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from hurray_decl.cli.common import INVALID, OK, FileProblem, Style, UsageError
from hurray_decl.cli.corpus import PAGES, RENDERERS, audit
from hurray_decl.cli.inputs import forced_kind_option, kind_options


def cmd_audit(args: argparse.Namespace) -> int:
    if args.folder:
        folder = Path(args.folder)
    else:
        from hurray_decl.hurray.examples import bundled

        folder = bundled()
    if not folder.is_dir():
        raise FileProblem(f"argument FOLDER: {folder} is not a folder" if folder.exists()
                          else f"argument FOLDER: no such folder: {folder}")
    result = audit(folder, args)
    if args.format == PAGES:
        from hurray_decl.cli.html import write_audit

        return write_audit(result, folder, args)
    print(RENDERERS[args.format](result, Style(sys.stdout)))
    return INVALID if result["summary"]["disagreements"] else OK


def register(sub: Any) -> None:
    command = sub.add_parser(
        "audit", help="audit every descriptor in a folder against its manifest.json",
        description="Audit every descriptor in a folder (default: the bundled example corpus): verdicts and rule "
                    "codes, checked against the folder's manifest.json if any (the shared conformance manifest "
                    "format included). Exit 0 when everything agrees, 1 on a disagreement (a verdict, a property, "
                    "a listed file missing, a file not listed), 3 for a missing folder or a bad manifest.")
    command.add_argument("folder", nargs="?", metavar="FOLDER", help="the folder (default: the bundled examples)")
    command.add_argument("--format", choices=(*RENDERERS, PAGES), default="text", metavar="FORMAT",
                         help="one of %(choices)s (default: text); html writes an index and one page per file "
                              "to -o DIR")
    command.add_argument("-o", "--output", metavar="DIR", help="the folder --format html writes its pages to")
    kind_options(command)
    forced_kind_option(command)
    command.set_defaults(run=cmd_audit, check=check_options)


def check_options(args: argparse.Namespace) -> None:
    """``-o DIR`` is where ``--format html`` writes its pages: with another format it is refused."""
    if args.output is not None and args.format != PAGES:
        raise UsageError(f"argument -o: applies to --format {PAGES} only (the --format {args.format} report is "
                         "printed on standard output)")
