"""The ``hurray-decl`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from . import engine
from .errors import HurrayDeclError

USAGE_ERROR = 2


def read_input(source: str) -> bytes:
    """Bytes from ``-`` (standard input), a file path, or a hex string (spaces allowed)."""
    if source == "-":
        return sys.stdin.buffer.read()
    path = Path(source)
    if path.is_file():
        return path.read_bytes()
    try:
        return bytes.fromhex(source.replace(" ", ""))
    except ValueError:
        raise SystemExit(f"hurray-decl: {source!r} is neither a file nor hex bytes") from None


def _decode(args: argparse.Namespace):
    return engine.decode_quantization(read_input(args.input), permissive=args.permissive)


def cmd_schemes(args: argparse.Namespace) -> int:
    print(engine.scheme_table())
    return 0


def cmd_decode(args: argparse.Namespace) -> int:
    try:
        descriptor = _decode(args)
    except HurrayDeclError as err:
        print(json.dumps({"error": err.to_dict()}, indent=2))
        return 1
    print(descriptor.model_dump_json(indent=2))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        descriptor = _decode(args)
    except HurrayDeclError as err:
        print(f"invalid: {err}")
        return 1
    print(f"valid: {type(descriptor).__name__}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hurray-decl",
        description="Decode, encode and check Hurray quantization descriptors.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    schemes = sub.add_parser("schemes", help="print the table of registered quantization schemes")
    schemes.set_defaults(run=cmd_schemes)

    for name, run, text in (
        ("decode", cmd_decode, "decode a quantization descriptor and print it as JSON"),
        ("validate", cmd_validate, "check a quantization descriptor: exit 0 valid, 1 invalid, 2 usage error"),
    ):
        command = sub.add_parser(name, help=text, description=text)
        command.add_argument("input", help="a file, hex bytes, or - for standard input")
        command.add_argument("--permissive", action="store_true",
                             help="accept unrecognised scheme tags as opaque descriptors")
        command.set_defaults(run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
