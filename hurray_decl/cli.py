"""The ``hurray-decl`` command line.

Commands that read a descriptor take a file path, hex bytes, or ``-`` for standard input, and
read a tensor descriptor unless ``--quantization`` says the input is a bare quantization
payload. Exit codes: 0 success (or valid), 1 invalid input (or a disagreement), 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from . import engine, hexdump
from .errors import HurrayDeclError
from .rules import all_rules

INVALID = 1


class UsageError(Exception):
    """A command-line mistake: reported on stderr with exit status 2."""


def read_input(source: str) -> bytes:
    """Bytes from ``-`` (standard input), a file path, or a hex string (spaces and colons allowed)."""
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
        if line.startswith("invalid") or "<-- " in line:
            line = style.bad(line)
        elif line == "valid":
            line = style.good(line)
        lines.append(line)
    return "\n".join(lines)


# --- one place that knows the two kinds of input ----------------------------------------------

def decode(data: bytes, args: argparse.Namespace) -> Any:
    from .tensor import read_tensor_descriptor

    if args.quantization:
        return engine.decode_quantization(data, permissive=args.permissive)
    return read_tensor_descriptor(data, permissive=args.permissive)


def encode(text: str, args: argparse.Namespace) -> bytes:
    from .tensor import TensorDescriptor, write_tensor_descriptor

    if args.quantization:
        return engine.encode_quantization(engine.load_quantization(text), permissive=args.permissive)
    return write_tensor_descriptor(TensorDescriptor.load(text), permissive=args.permissive)


def kind(args: argparse.Namespace) -> str:
    return "quantization" if args.quantization else "tensor"


# --- commands ---------------------------------------------------------------------------------

def cmd_schemes(args: argparse.Namespace) -> int:
    print(engine.scheme_table())
    return 0


def cmd_rule(args: argparse.Namespace) -> int:
    rules = all_rules()
    missing = [code for code in args.codes if code not in rules]
    if missing:
        raise UsageError(f"no rule {', '.join(missing)} in RULES.md")
    for code in args.codes:
        row = rules[code]
        print(f"{row.id} ({row.role}; needs {'+'.join(sorted(row.needs))}): {row.text}\n  source: {row.source}")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    result = hexdump.dump(read_input(args.input), kind=kind(args), permissive=args.permissive)
    text = hexdump.render(result, args.format)
    print(text if args.format == "json" else colour_verdicts(text, Style(sys.stdout)))
    return INVALID if result.error is not None else 0


def cmd_decode(args: argparse.Namespace) -> int:
    try:
        descriptor = decode(read_input(args.input), args)
    except HurrayDeclError as err:
        print(json.dumps({"error": err.to_dict()}, indent=2))
        return INVALID
    print(descriptor.model_dump_json(indent=2))
    return 0


def cmd_encode(args: argparse.Namespace) -> int:
    try:
        data = encode(read_text(args.input), args)
    except HurrayDeclError as err:
        print(Style(sys.stderr).bad(f"invalid {err.code}: {err}"), file=sys.stderr)
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
        descriptor = decode(read_input(args.input), args)
        if args.buffers:
            from .tensor import validate_buffers

            validate_buffers(descriptor, [Path(p).read_bytes() for p in args.buffers], permissive=args.permissive)
    except HurrayDeclError as err:
        print(style.bad(f"invalid {err.code}: {err}"))
        return INVALID
    print(style.good(f"valid: {type(descriptor).__name__}"))
    return 0


def progress_printer(label: str) -> Callable[[int, int], None] | None:
    """A progress callback that rewrites one stderr line, on a terminal only."""
    if not sys.stderr.isatty():
        return None

    def report(done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        print(f"\r{label}: {100 * done // max(total, 1):3d}%", end=end, file=sys.stderr, flush=True)

    return report


def cmd_dequantize(args: argparse.Namespace) -> int:
    from .codec import prepare_dequantize
    from .tensor import read_tensor_descriptor

    buffers = []
    for path in args.buffers:
        if not Path(path).is_file():
            raise UsageError(f"{path!r} is not a readable file")
        buffers.append(np.memmap(path, dtype=np.uint8, mode="r") if Path(path).stat().st_size else b"")
    try:
        descriptor = read_tensor_descriptor(read_input(args.descriptor), permissive=args.permissive)
        prepared = prepare_dequantize(descriptor, buffers)  # every refusal before the output file exists
        out = np.lib.format.open_memmap(args.output, mode="w+", dtype=np.float32, shape=tuple(descriptor.shape))
        prepared.run(out, progress=progress_printer("dequantize"))
        out.flush()
    except HurrayDeclError as err:
        print(Style(sys.stderr).bad(f"invalid {err.code}: {err}"), file=sys.stderr)
        return INVALID
    print(f"wrote float32 {list(descriptor.shape)} to {args.output}")
    return 0


def audit(folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Verdicts for every file of ``folder``, compared with its manifest.json when there is one."""
    manifest_path = folder / "manifest.json"
    expected: dict[str, str | None] = {}
    if manifest_path.is_file():
        for entry in json.loads(manifest_path.read_text(encoding="utf-8")).get("descriptors", []):
            expected[Path(entry["file"]).name] = entry.get("expect")
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name != "manifest.json")
    report = []
    show = progress_printer("audit")
    for index, path in enumerate(files, start=1):
        entry: dict[str, Any] = {"file": path.name, "verdict": "valid", "code": None, "offset": None, "message": ""}
        try:
            decode(path.read_bytes(), args)
        except HurrayDeclError as err:
            entry.update(verdict="invalid", code=err.code, offset=err.offset, message=str(err))
        if path.name in expected:
            entry["expected"] = expected[path.name]
            entry["agrees"] = expected[path.name] == entry["code"]
        report.append(entry)
        if show:
            show(index, len(files))
    counts = {"files": len(report), "valid": sum(e["verdict"] == "valid" for e in report)}
    counts["invalid"] = counts["files"] - counts["valid"]
    counts["disagreements"] = sum(e.get("agrees") is False for e in report)
    return {"folder": str(folder), "kind": kind(args), "summary": counts, "descriptors": report}


def render_audit(result: dict[str, Any], fmt: str, style: Style) -> str:
    if fmt == "json":
        return json.dumps(result, indent=2)
    summary = result["summary"]
    head = (f"{summary['files']} {result['kind']} descriptors in {result['folder']}: {summary['valid']} valid, "
            f"{summary['invalid']} invalid, {summary['disagreements']} disagreeing with the manifest")
    rows = []
    for e in result["descriptors"]:
        agrees = {True: "yes", False: "NO"}.get(e.get("agrees"), "-")
        rows.append((e["file"], e["verdict"], e["code"] or "", str(e["offset"] if e["offset"] is not None else ""),
                     e.get("expected") or ("valid" if "expected" in e else ""), agrees))
    header = ("File", "Verdict", "Rule", "Offset", "Expected", "Agrees")
    if fmt == "markdown":
        lines = [head, "", "| " + " | ".join(header) + " |", "|---|---|---|---:|---|---|"]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    for r in rows:
        line = "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
        lines.append(style.bad(line) if r[5] == "NO" else line)
    return "\n".join(lines + ["", head])


def cmd_audit(args: argparse.Namespace) -> int:
    from .examples import bundled

    folder = Path(args.folder) if args.folder else bundled()
    if not folder.is_dir():
        raise UsageError(f"{str(folder)!r} is not a folder")
    result = audit(folder, args)
    print(render_audit(result, args.format, Style(sys.stdout)))
    return INVALID if result["summary"]["disagreements"] else 0


def cmd_bench(args: argparse.Namespace) -> int:
    from . import bench

    bench.run(size=args.size, repeat=args.repeat, threads=args.threads, out=sys.stdout)
    return 0


def cmd_fuzz(argv: Sequence[str]) -> int:
    from . import fuzz

    return fuzz.main(list(argv))


def _input(command: argparse.ArgumentParser,
           what: str = "the descriptor: a file, hex bytes, or - for standard input") -> None:
    command.add_argument("input", help=what)
    _kind_options(command)


def _kind_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--quantization", action="store_true",
                         help="the input is a bare quantization payload, not a tensor descriptor")
    command.add_argument("--permissive", action="store_true",
                         help="accept unrecognised scheme, type and layout tags as opaque parts")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hurray-decl",
        description="Decode, encode, inspect, audit and dequantize Hurray tensor and quantization descriptors.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, run: Callable[[argparse.Namespace], int], text: str) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=text, description=text)
        command.set_defaults(run=run)
        return command

    add("schemes", cmd_schemes, "print the table of registered quantization schemes")
    rule = add("rule", cmd_rule, "print the text of rules by their ID (the codes errors carry)")
    rule.add_argument("codes", nargs="+", metavar="ID", help="a rule ID such as HQ-PB-03")

    inspect = add("inspect", cmd_inspect, "print an annotated hex dump: every byte with its offset, field and value; "
                                          "an invalid input shows the failing field and its rule; exit 1 if invalid")
    _input(inspect)
    inspect.add_argument("--format", choices=hexdump.FORMATS, default="text", help="output format (default: text)")

    _input(add("decode", cmd_decode, "decode a descriptor and print it as JSON; exit 1 if invalid"))

    encode_cmd = add("encode", cmd_encode, "build descriptor bytes from the JSON that decode prints")
    _input(encode_cmd, "a JSON file as decode prints it, or - for standard input")
    encode_cmd.add_argument("-o", "--output", help="write the bytes to this file (default: standard output)")
    encode_cmd.add_argument("--hex", action="store_true", help="print hex even when standard output is not a terminal")

    validate = add("validate", cmd_validate, "check a descriptor: exit 0 valid, 1 invalid (the rule code is printed)")
    _input(validate)
    validate.add_argument("--buffers", nargs="+", metavar="FILE",
                          help="the buffer contents, one file per buffer-table entry, to check the data rules too")

    deq = add("dequantize", cmd_dequantize, "dequantize a quantized tensor into a float32 .npy file")
    deq.add_argument("descriptor", help="the tensor descriptor: a file, hex bytes, or - for standard input")
    deq.add_argument("buffers", nargs="+", metavar="BUFFER", help="one file per buffer-table entry, in order")
    deq.add_argument("-o", "--output", required=True, help="the .npy file to write (memory-mapped)")
    deq.add_argument("--permissive", action="store_true", help="read the descriptor in permissive mode")

    audit_cmd = add("audit", cmd_audit, "audit every descriptor in a folder (default: the bundled example corpus): "
                                        "verdicts and rule codes, checked against the folder's manifest.json if any; "
                                        "exit 1 if a verdict disagrees with the manifest")
    audit_cmd.add_argument("folder", nargs="?", help="the folder (default: the bundled examples)")
    audit_cmd.add_argument("--format", choices=("text", "markdown", "json"), default="text",
                           help="report format (default: text)")
    _kind_options(audit_cmd)

    bench_cmd = add("bench", cmd_bench, "time dequantization against a NumPy copy and gguf's Q4_0 dequantize")
    bench_cmd.add_argument("--size", type=int, default=4096, help="the square matrix size (default: 4096)")
    bench_cmd.add_argument("--repeat", type=int, default=5, help="runs per measurement, best kept (default: 5)")
    bench_cmd.add_argument("--threads", type=int, default=None, help="dequantization threads (default: the cores)")

    # Listed for --help; main() hands everything after "fuzz" to the harness's own parser.
    sub.add_parser("fuzz", help="fuzz an external reader with valid and rule-labelled invalid descriptors "
                                "(see hurray-decl fuzz --help)", add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["fuzz"]:
        return cmd_fuzz(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as err:
        parser.error(str(err))  # exits with status 2
        return 2
    except BrokenPipeError:  # the reader of our output went away (| head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
