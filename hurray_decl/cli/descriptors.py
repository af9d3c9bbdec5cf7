"""``inspect``, ``validate``, ``decode`` and ``encode``: one descriptor at a time."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any

from hurray_decl.cli import outputs
from hurray_decl.cli.common import INVALID, OK, Style, UsageError, colour_verdicts
from hurray_decl.cli.detection import detect, handles
from hurray_decl.cli.inputs import (
    Input,
    decode_descriptor,
    forced_kind_option,
    input_argument,
    kind_options,
    map_file,
    name_option,
    progress_option,
    read_noted,
    read_text,
)
from hurray_decl.cli.kinds import Kind


class LazyChoices:
    """argparse ``choices`` read from ``module.name`` only when an option is parsed or help is shown,
    so that building the parser imports nothing heavy."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def values(self) -> tuple[str, ...]:
        import importlib

        return tuple(getattr(importlib.import_module(self.module), self.name))

    def __contains__(self, item: object) -> bool:
        return item in self.values()

    def __iter__(self) -> Iterator[str]:
        return iter(self.values())


DUMP_FORMATS = LazyChoices("hurray_decl.dump.render", "FORMATS")


def judged(got: Input) -> str:
    """What a ``valid`` verdict adds when bytes of the input were not read: the bytes it judged
    (``" (bytes 0-52 of 154; --length to judge a window)"``), so it never claims the whole input."""
    if not got.unread:
        return ""
    return f" (bytes 0-{len(got.data) - 1} of {len(got.data) + got.unread}; --length to judge a window)"


def cmd_inspect(args: argparse.Namespace) -> int:
    from hurray_decl.dump.render import render
    from hurray_decl.hurray import dump as hexdump

    got = read_noted(args)
    from hurray_decl.cli.detection import detect
    from hurray_decl.cli.outputs import about

    dump = hexdump.quantization_dump if args.quantization else hexdump.tensor_dump
    result = dump(got.data, permissive=args.permissive)
    result.about.update(about(args, detect(args).kind))
    if args.format == "html":
        from hurray_decl.cli.html import print_page

        return print_page(result, args)
    text = render(result, args.format)
    if result.error is None and args.format != "json":
        text += judged(got)  # on the last line, the verdict
    print(text if args.format == "json" else colour_verdicts(text, Style(sys.stdout)))
    return INVALID if result.error is not None else OK


def cmd_decode(args: argparse.Namespace) -> int:
    from hurray_decl.errors import HurrayDeclError

    try:
        descriptor = decode_descriptor(read_noted(args).data, args)
    except HurrayDeclError as err:
        return outputs.report_error(args, detect(args).kind, err)
    print(descriptor.model_dump_json(indent=2))
    return OK


def cmd_validate(args: argparse.Namespace) -> int:
    def check() -> str:
        if args.buffers and args.quantization:
            raise UsageError("argument --buffers: buffers belong to a tensor descriptor, not --quantization")
        buffers = [map_file(path) for path in args.buffers or ()]
        got = read_noted(args)
        descriptor = decode_descriptor(got.data, args)
        if args.buffers:
            from hurray_decl.hurray.tensor import validate_buffers

            validate_buffers(descriptor, buffers, permissive=args.permissive)
        return f"{type(descriptor).__name__}{judged(got)}"

    return outputs.report_verdict(args, detect(args).kind, check)


def load(text: str, args: argparse.Namespace) -> Any:
    """The descriptor model of a JSON document as decode prints it.

    A document that is no JSON object, misses ``shape`` or holds a value of the wrong JSON type
    is an unusable argument (exit 2, no rule); a value the format refuses names its rule (exit 1).
    """
    from hurray_decl.declare import json_text
    from hurray_decl.errors import ArgumentError, HurrayDeclError

    try:
        document = json_text.loads(text)
    except json_text.TooDeep as err:
        raise ArgumentError("INPUT", f"the JSON nests too deeply: {err}",
                            expected=f"at most {json_text.MAX_DEPTH} levels") from None
    except json.JSONDecodeError as err:
        raise ArgumentError("INPUT", f"not JSON: {err.msg} at line {err.lineno} column {err.colno}") from None
    if not isinstance(document, dict):
        raise ArgumentError("INPUT", "the JSON is not an object as decode prints it",
                            actual=type(document).__name__, expected="object")
    if not args.quantization and "shape" not in document:
        raise ArgumentError("INPUT -> shape", 'missing: a tensor descriptor names its shape ([] for a scalar)')
    from pydantic import ValidationError

    try:
        if args.quantization:
            from hurray_decl.hurray.quantization import load_quantization

            return load_quantization(document)
        from hurray_decl.hurray.tensor import TensorDescriptor

        return TensorDescriptor.model_validate(document)  # not load(): it drops the cause of a nested error
    except (HurrayDeclError, ValidationError) as err:
        raise schema_error(err) from None


def schema_error(err: Any) -> Any:
    """The error to report for ``err`` from loading a JSON document: ``err`` itself when a rule refused a
    value; an ArgumentError naming the JSON field when pydantic refused the document's shape (a wrong
    type, a missing field), which no rule covers."""
    from pydantic import ValidationError

    from hurray_decl.errors import ArgumentError, HurrayDeclError

    problems = err.errors() if isinstance(err, ValidationError) else (
        err.__cause__.errors() if isinstance(err.__cause__, ValidationError) else None)
    if not problems:
        return err
    for problem in problems:
        inner = (problem.get("ctx") or {}).get("error")
        if isinstance(inner, HurrayDeclError):  # a rule's own error, or a nested model's wrapped one
            return inner if inner is err else schema_error(inner)
    first = problems[0]
    field = " -> ".join(str(part) for part in first["loc"])
    return ArgumentError(f"INPUT -> {field}" if field else "INPUT", first["msg"])


def cmd_encode(args: argparse.Namespace) -> int:
    model = load(read_text(args.input), args)  # a value the format refuses: main() prints its rule, exit 1
    if args.quantization:
        from hurray_decl.hurray.quantization import encode_quantization

        data = encode_quantization(model, permissive=args.permissive)
    else:
        from hurray_decl.hurray.tensor import write_tensor_descriptor

        data = write_tensor_descriptor(model, permissive=args.permissive)
    if args.output:
        outputs.write_bytes(args.output, data)
    elif args.hex or sys.stdout.isatty():
        print(data.hex())
    else:
        sys.stdout.buffer.write(data)
    return OK


def register(sub: Any) -> None:
    inspect = sub.add_parser("inspect", help="print an annotated hex dump of a descriptor",
                             description="Print an annotated hex dump: every byte with its offset, field and value; "
                                         "an invalid input shows the failing field and its rule. Only the bytes the "
                                         "descriptor declares are shown; a note on standard error counts the rest. "
                                         "Exit 0 valid, 1 invalid.")
    input_argument(inspect)
    forced_kind_option(inspect)
    name_option(inspect)
    progress_option(inspect)
    inspect.add_argument("--format", choices=DUMP_FORMATS, default="text", metavar="FORMAT",
                         help="one of %(choices)s (default: text)")
    inspect.set_defaults(run=cmd_inspect)

    decode_cmd = sub.add_parser("decode", help="decode a descriptor and print it as JSON",
                                description="Decode a descriptor and print it as JSON (an error object if invalid). "
                                            "Exit 0 valid, 1 invalid.")
    input_argument(decode_cmd)
    forced_kind_option(decode_cmd)
    name_option(decode_cmd)
    decode_cmd.set_defaults(run=cmd_decode)

    encode_cmd = sub.add_parser("encode", help="build descriptor bytes from the JSON that decode prints",
                                description="Build descriptor bytes from the JSON that decode prints. Exit 0 done, "
                                            "1 a value the format refuses (its rule is printed), 2 a document that is "
                                            "not such JSON (bad JSON, binary, a missing shape, a wrong type).")
    encode_cmd.add_argument("input", metavar="INPUT", help="a JSON file as decode prints it, or - for standard input")
    kind_options(encode_cmd)
    encode_cmd.add_argument("-o", "--output", help="write the bytes to this file (default: standard output)")
    encode_cmd.add_argument("--hex", action="store_true", help="print hex even when standard output is not a terminal")
    encode_cmd.set_defaults(run=cmd_encode)

    validate = sub.add_parser("validate", help="check a descriptor: exit 0 valid, 1 invalid",
                              description="Check a descriptor, and with --buffers the rules needing buffer contents. "
                                          "Exit 0 valid, 1 invalid (the rule code is printed).")
    input_argument(validate, optional=True)  # INPUT may follow --buffers' files: "validate --buffers A B DESC"
    forced_kind_option(validate)
    name_option(validate)
    progress_option(validate)
    validate.add_argument("--buffers", nargs="+", metavar="FILE", default=[],
                          help="the buffer contents, one file per buffer-table entry, to check the data rules too; "
                               "after them, the last file is the descriptor if none came before")
    validate.add_argument("--format", choices=("text", "json"), default="text",
                          help="the verdict as one line (text, default) or as a JSON document: file, kind, verdict "
                               "and the error's code, message, path and offset")
    validate.set_defaults(run=cmd_validate)
    for name, handler in (("inspect", cmd_inspect), ("decode", cmd_decode), ("validate", cmd_validate)):
        handles(sub, name, {Kind.DESCRIPTOR: handler, Kind.QUANTIZATION: handler})
