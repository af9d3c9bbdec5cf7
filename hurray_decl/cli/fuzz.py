"""``fuzz``: the external-reader harness of :mod:`hurray_decl.hurray.fuzz` as a command."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from hurray_decl.cli.common import FILE, INVALID, OK, USAGE, integer_at_least
from hurray_decl.cli.kinds import Kind
from hurray_decl.cli.outputs import write_text

DESCRIPTION = ("Run an external reader on valid and rule-labelled invalid inputs (tensor descriptors; with --kind, "
               "onnx-light values, tensors and models, or Hurray streams) and report every disagreement. Exit 0 "
               "when there is none, 1 otherwise, 2 for a usage error, 3 for a file error.")


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
    parser.add_argument("--kind", choices=(Kind.HURRAY, Kind.ONNX_LIGHT, Kind.STREAM), default=Kind.HURRAY,
                        help="what to fuzz the reader with: Hurray tensor descriptors, onnx-light values, tensors and "
                             "models, or Hurray streams (default: hurray)")
    return parser


def _refuse_unwritable(args: argparse.Namespace) -> str | None:
    """Why --out or --json cannot be written, before any case is run (None when both can)."""
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        return f"argument --out: {args.out} is a file, not a folder"
    if args.json is not None:
        if args.json.is_dir():
            return f"argument --json: {args.json} is a folder; give the name of a file to write"
        if not args.json.parent.is_dir():
            return f"argument --json: no such folder: {args.json.parent}"
    return None


def _refuse_reader(template: str) -> str | None:
    """Why the reader command cannot be started (None when its program is found)."""
    import shutil

    from hurray_decl.hurray.fuzz import reader_command

    if not shlex.split(template):
        return "argument --reader: the command is empty"
    argv = reader_command(template, "case.bin")
    if shutil.which(argv[0]) is None:
        return f"argument --reader: no such program: {argv[0]}"
    return None


def draw_onnx_light_cases(count: int, seed: int, rules: Sequence[str] | None = None) -> list[Any]:
    """``count`` onnx-light cases for the fuzz harness: a quarter valid inputs, the rest mutants
    spread over the reader rules (or only ``rules``), reproducibly from ``seed``."""
    import random
    import zlib

    from hurray_decl.hurray.fuzz import ACCEPT, REJECT, VALID, VALID_SHARE, Case
    from hurray_decl.onnx_light.mutants import MUTANTS, RandomSource, valid_case

    if rules:
        unknown = [r for r in rules if r not in MUTANTS]
        if unknown:
            raise ValueError(f"no onnx-light mutant generator for {', '.join(unknown)} "
                             "(see hurray_decl.onnx_light.mutants.MUTANTS)")
    targets = sorted(set(rules)) if rules else sorted(MUTANTS)
    drawn: list[tuple[bytes, str, str]] = []
    valid = 0 if rules else max(1, count // VALID_SHARE)
    for i in range(valid):
        drawn.append((valid_case(RandomSource(seed * 1_000_003 + i)).data, ACCEPT, VALID))
    rest = count - valid
    start = random.Random(seed).randrange(len(targets))  # small runs start at a seeded rule
    for i in range(rest):
        rule = targets[(start + i) % len(targets)]
        case = MUTANTS[rule].build(RandomSource((seed ^ zlib.crc32(rule.encode())) * 1_000_003 + i))
        drawn.append((case.data, REJECT, rule))
    random.Random(seed).shuffle(drawn)
    return [Case(i, data, expected, rule) for i, (data, expected, rule) in enumerate(drawn)]


def _draw(kind: Kind) -> Callable[..., list[Any]] | None:
    """What ``--kind`` fuzzes the reader with: Hurray descriptors (the harness's own draw, None),
    onnx-light values, tensors and models, or Hurray streams."""
    if kind == Kind.ONNX_LIGHT:
        return draw_onnx_light_cases
    if kind == Kind.STREAM:
        from hurray_decl.hurray.stream.strategies import draw_cases

        return draw_cases
    return None


def run(args: argparse.Namespace) -> int:
    """Run ``hurray-decl fuzz`` from parsed arguments; 0 if the reader agreed on every case, 1 if not,
    2 for a usage error, 3 for a file error (messages on standard error)."""
    import secrets

    from hurray_decl.hurray.fuzz import fuzz, report

    for problem, status in ((_refuse_reader(args.reader), USAGE), (_refuse_unwritable(args), FILE)):
        if problem is not None:
            sys.stderr.write(f"hurray-decl fuzz: {problem}\n")
            return status
    seed = args.seed if args.seed is not None else secrets.randbelow(2**32)
    out = args.out if args.out is not None else Path(tempfile.gettempdir()) / f"hurray-fuzz-{seed}-{os.getpid()}"
    from hypothesis.configuration import set_hypothesis_home_dir

    from hurray_decl.errors import ArgumentError

    # Hypothesis keeps caches in ./.hypothesis unless told otherwise: a temporary one, to leave nothing behind.
    with tempfile.TemporaryDirectory(prefix="hurray-fuzz-hypothesis-") as home:
        if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
            set_hypothesis_home_dir(home)
        try:
            disagreements, by_rule, bad_by_rule = fuzz(args.reader, args.count, seed, timeout=args.timeout,
                                                       rules=args.rule, out=out, jobs=args.jobs,
                                                       draw=_draw(Kind(getattr(args, "kind", Kind.HURRAY))))
        except ArgumentError as err:  # an unknown --rule
            sys.stderr.write(f"hurray-decl fuzz: argument --rule: {err.detail}\n")
            return USAGE
        except (FileNotFoundError, PermissionError) as err:  # the reader cannot be started
            sys.stderr.write(f"hurray-decl fuzz: argument --reader: {err.strerror}: {err.filename}\n")
            return USAGE
        finally:
            if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
                set_hypothesis_home_dir(None)
    report(disagreements, by_rule, bad_by_rule, seed, sys.stdout)
    if disagreements:
        sys.stdout.write(f"kept the {len(disagreements)} disagreeing cases in {out}\n")
    if args.json is not None:
        write_text(args.json, json.dumps({
            "seed": seed, "cases": sum(by_rule.values()), "reader": args.reader,
            "by_rule": {r: {"cases": n, "disagreements": bad_by_rule.get(r, 0)} for r, n in sorted(by_rule.items())},
            "disagreements": [asdict(d) for d in disagreements],
        }, indent=2), what="--json")
    return INVALID if disagreements else OK


cmd_fuzz = run


def register(sub: Any) -> None:
    command = sub.add_parser("fuzz", help="fuzz an external reader with valid and rule-labelled invalid descriptors",
                             description=DESCRIPTION)
    add_arguments(command)
    command.set_defaults(run=cmd_fuzz)
