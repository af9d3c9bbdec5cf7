"""``fuzz``: the external-reader harness of :mod:`hurray_decl.fuzz` as a command."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from .common import integer_at_least

DESCRIPTION = ("Run an external reader on valid and rule-labelled invalid tensor descriptors and report every "
               "disagreement. Exit 0 when there is none, 1 otherwise, 2 for a usage error, 3 for a file error.")


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number of seconds")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The ``fuzz`` options, for a parser of its own or a ``hurray-decl`` subcommand."""
    parser.add_argument("--reader", required=True, metavar="CMD",
                        help='the reader to test, e.g. "my-reader --check {file}"; {file} becomes each case\'s path; '
                             "exit 0 = accept, non-zero = reject")
    parser.add_argument("--count", type=integer_at_least(1), default=1000, metavar="N",
                        help="number of cases (default 1000)")
    parser.add_argument("--seed", type=int, default=None, metavar="S",
                        help="seed of the cases; the same seed and count draw the same cases (default: random, "
                             "printed)")
    parser.add_argument("--timeout", type=positive_seconds, default=10.0, metavar="T",
                        help="seconds per run of the reader before it counts as a timeout (default 10)")
    parser.add_argument("--rule", action="append", metavar="ID",
                        help="only mutants breaking this rule (repeatable); default: valid cases and every rule")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="the folder where the files of disagreeing cases are kept (default: a new temporary "
                             "folder, named in the report)")
    parser.add_argument("--jobs", type=integer_at_least(1), default=os.cpu_count() or 1, metavar="J",
                        help="reader runs at a time (default: the number of CPUs)")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="also write the report as JSON to PATH")
    return parser


def cmd_fuzz(args: argparse.Namespace) -> int:
    from .. import fuzz

    return fuzz.run(args)


def register(sub: Any) -> None:
    command = sub.add_parser("fuzz", help="fuzz an external reader with valid and rule-labelled invalid descriptors",
                             description=DESCRIPTION)
    add_arguments(command)
    command.set_defaults(run=cmd_fuzz)
