"""The ``hurray-decl`` command line.

Every command that reads a descriptor takes a file path, hex bytes, or ``-`` for standard
input. Exit codes: 0 success (or valid), 1 invalid input, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from . import engine, hexdump
from .errors import HurrayDeclError

INVALID = 1
USAGE = 2


class UsageError(Exception):
    """A command-line mistake: reported on stderr with exit code 2."""


def read_input(source: str) -> bytes:
    """Bytes from ``-`` (standard input), a file path, or a hex string (spaces allowed)."""
    if source == "-":
        return sys.stdin.buffer.read()
    path = Path(source)
    if path.is_file():
        return path.read_bytes()
    try:
        return bytes.fromhex(source.replace(" ", "").replace(":", ""))
    except ValueError:
        raise UsageError(f"{source!r} is neither a readable file nor hex bytes") from None


def read_text(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    path = Path(source)
    if not path.is_file():
        raise UsageError(f"{source!r} is not a readable file")
    return path.read_text(encoding="utf-8")


class Style:
    """ANSI colour on a terminal, plain text when piped or when NO_COLOR is set."""

    def __init__(self, stream: Any) -> None:
        self.on = hasattr(stream, "isatty") and stream.isatty() and "NO_COLOR" not in os.environ

    def paint(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.on else text

    def good(self, text: str) -> str:
        return self.paint(text, "32")

    def bad(self, text: str) -> str:
        return self.paint(text, "31;1")


def colour_verdicts(text: str, style: Style) -> str:
    lines = []
    for line in text.splitlines():
        if line.startswith("invalid:") or "<-- " in line:
            line = style.bad(line)
        elif line == "valid":
            line = style.good(line)
        lines.append(line)
    return "\n".join(lines)


# --- what each command does with one kind of descriptor -----------------------------------

def _decode(args: argparse.Namespace, data: bytes):
    return engine.decode_quantization(data, permissive=args.permissive)


def _encode(args: argparse.Namespace, text: str) -> bytes:
    return engine.encode_quantization(engine.load_quantization(text), permissive=args.permissive)


def cmd_schemes(args: argparse.Namespace) -> int:
    print(engine.scheme_table())
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    result = hexdump.dump(read_input(args.input), kind=args.kind, permissive=args.permissive)
    text = hexdump.render(result, args.format)
    print(text if args.format == "json" else colour_verdicts(text, Style(sys.stdout)))
    return INVALID if result.error is not None else 0


def cmd_decode(args: argparse.Namespace) -> int:
    try:
        descriptor = _decode(args, read_input(args.input))
    except HurrayDeclError as err:
        print(json.dumps({"error": err.to_dict()}, indent=2))
        return INVALID
    print(descriptor.model_dump_json(indent=2))
    return 0


def cmd_encode(args: argparse.Namespace) -> int:
    try:
        data = _encode(args, read_text(args.input))
    except HurrayDeclError as err:
        print(Style(sys.stderr).bad(f"invalid: {err}"), file=sys.stderr)
        return INVALID
    if args.output:
        Path(args.output).write_bytes(data)
    elif args.hex or sys.stdout.isatty():
        print(data.hex())
    else:
        sys.stdout.buffer.write(data)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    style = Style(sys.stdout)
    try:
        descriptor = _decode(args, read_input(args.input))
    except HurrayDeclError as err:
        print(style.bad(f"invalid {err.code}: {err}"))
        return INVALID
    print(style.good(f"valid: {type(descriptor).__name__}"))
    return 0


def _input(command: argparse.ArgumentParser, what: str = "the descriptor: a file, hex bytes, or - for standard input") -> None:
    command.add_argument("input", help=what)
    command.add_argument("--permissive", action="store_true",
                         help="accept unrecognised scheme tags as opaque descriptors")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hurray-decl",
        description="Decode, encode, inspect and check Hurray quantization descriptors.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, run: Callable[[argparse.Namespace], int], text: str) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=text, description=text)
        command.set_defaults(run=run, kind="quantization")
        return command

    add("schemes", cmd_schemes, "print the table of registered quantization schemes")

    inspect = add("inspect", cmd_inspect,
                  "print an annotated hex dump: every byte with its offset, field and value; "
                  "exit 1 if the descriptor is invalid")
    _input(inspect)
    inspect.add_argument("--format", choices=hexdump.FORMATS, default="text", help="output format (default: text)")

    _input(add("decode", cmd_decode, "decode a descriptor and print it as JSON; exit 1 if invalid"))

    encode = add("encode", cmd_encode, "build descriptor bytes from the JSON that decode prints")
    _input(encode, "a JSON file as decode prints it, or - for standard input")
    encode.add_argument("-o", "--output", help="write the bytes to this file")
    encode.add_argument("--hex", action="store_true", help="print hex even when stdout is not a terminal")

    _input(add("validate", cmd_validate, "check a descriptor: exit 0 valid, 1 invalid (the rule code is printed)"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as err:
        parser.error(str(err))  # exits with status 2
        return USAGE


if __name__ == "__main__":
    sys.exit(main())
