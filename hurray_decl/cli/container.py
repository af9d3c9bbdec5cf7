"""Container (``.hrry``) commands of ``hurray-decl``.

``register(subparsers)`` adds ``extract`` and the container handlers of ``inspect``, ``validate``,
``decode``, ``dequantize`` and ``extract``, which :func:`hurray_decl.cli.detection.dispatch` runs when
the input's window is a container: its first 8 bytes are "HRRYFILE" (HF-HDR-19; such input is
never parsed as a tensor descriptor), or "HRRYFIL" and a damaged eighth byte, or no magic of any
kind and the suffix ``.hrry`` (both refused HF-HDR-03). Exit codes: 0 valid or done, 1 invalid
input (the rule code is printed), 2 usage error (a missing or unknown ``--name``, an option that
does not apply), 3 file or environment error. Output files go through :mod:`hurray_decl.cli.outputs`,
after the whole input was validated; nothing is left behind on failure.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hurray_decl.cli.kinds import KINDS, Kind
from hurray_decl.errors import HurrayDeclError

OK, INVALID = 0, 1
CONTAINER = Kind.CONTAINER
MAGIC = KINDS[CONTAINER].magic


def _data(args: argparse.Namespace) -> Any:
    """The container's bytes: the input's window (a memory map's view of a file)."""
    from hurray_decl.cli.inputs import window_data

    return window_data(args)


# ------------------------------------------------------------------ inspect, validate, decode


def inspect(args: argparse.Namespace) -> int:
    from hurray_decl.hurray.container.dump import container_dump, container_stream

    if args.format == "html":
        from hurray_decl.cli.html import print_page

        return print_page(container_dump(_data(args)), args)
    from hurray_decl.cli.outputs import about
    from hurray_decl.dump.render import write

    dump = container_stream(_data(args))
    dump.about.update(about(args, CONTAINER))
    write(dump, sys.stdout, args.format)  # each row printed as it is read
    return INVALID if dump.error is not None else OK


def validate(args: argparse.Namespace) -> int:
    from hurray_decl.cli import outputs

    def check() -> str:
        from hurray_decl.cli.inputs import regular_file
        from hurray_decl.hurray.container import validate_container
        from hurray_decl.hurray.container.journal import pending
        from hurray_decl.hurray.tensor.layouts import CompositeHead

        path = regular_file(args)  # an interrupted edit's journal beside it: CV-EDT-01, naming the file's verdict
        try:
            c = validate_container(_data(args), permissive=getattr(args, "permissive", False))
        except HurrayDeclError as err:
            interrupted = pending(path, f"the file as it stands: {err}") if path is not None else None
            if interrupted is None:
                raise
            raise interrupted from None
        interrupted = pending(path, "the file as it stands is valid") if path is not None else None
        if interrupted is not None:
            raise interrupted
        composites = sum(1 for t in c.tensors() if isinstance(t.descriptor.layout, CompositeHead))
        return (f"container {c.header.container_version_major}.{c.header.container_version_minor}, "
                f"{len(c.entries)} tensors ({composites} composite heads), {len(c.kv)} KV entries")

    return outputs.report_verdict(args, CONTAINER, check)


def decode(args: argparse.Namespace) -> int:
    """The whole container as JSON: header, trailer, KV values with their types, and each
    tensor's index entry and decoded descriptor, in index order."""
    from hurray_decl.cli import outputs
    from hurray_decl.hurray.container import validate_container

    try:
        c = validate_container(_data(args), permissive=getattr(args, "permissive", False))
        document = {
            "header": c.header.model_dump(), "trailer": c.trailer.model_dump(),
            "kv": {key: {"type": v.type_name(), "value": v.plain()} for key, v in c.kv.items()},
            "tensors": [{"entry": e.model_dump(),
                         "descriptor": json.loads(c.tensor(e.name).descriptor.model_dump_json())} for e in c.entries],
        }
    except HurrayDeclError as err:
        return outputs.report_error(args, CONTAINER, err)
    print(json.dumps(document, indent=2))
    return OK


# ------------------------------------------------------------------ outputs


def _safe(name: str) -> str:
    """A file-name stem for a tensor name (names may hold '/', spaces or anything UTF-8)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".") or "tensor"


def _named(data: Any, name: str | None, permissive: bool) -> tuple[Any, str]:
    """The container, validated whole before any output, and the tensor name asked for."""
    from hurray_decl.errors import ArgumentError
    from hurray_decl.hurray.container import validate_container

    c = validate_container(data, permissive=permissive)  # the whole file, before any output
    if name is None:
        if len(c.entries) != 1:
            raise ArgumentError("--name", "the container holds several tensors; name one",
                                expected=", ".join(c.names[:20]) or "(no tensors)")
        name = c.names[0]  # a single-tensor container: its sole entry (HF-IDX-02-S)
    elif name not in c.names:
        raise ArgumentError("--name", "the container holds no tensor of this name", actual=name,
                            expected=", ".join(c.names[:20]) or "(no tensors)")
    return c, name


def extract(args: argparse.Namespace) -> int:
    from hurray_decl.cli import outputs
    from hurray_decl.hurray.tensor import write_tensor_descriptor

    folder = outputs.folder_target(args.output, create=True)
    c, name = _named(_data(args), args.name, args.permissive)
    tensor = c.tensor(name)
    stem = _safe(tensor.name)
    contents = [(f"{stem}.descriptor.bin", write_tensor_descriptor(tensor.descriptor, permissive=args.permissive))]
    contents += [(f"{stem}.buffer{i}.bin", bytes(b)) for i, b in enumerate(tensor.buffers)]
    written = outputs.write_into(folder, contents)
    print(f"wrote {tensor.name!r}: " + ", ".join(str(p) for p in written))
    return OK


def dequantize(args: argparse.Namespace) -> int:
    from hurray_decl.cli import outputs
    from hurray_decl.cli.common import region
    from hurray_decl.cli.outputs import write_values
    from hurray_decl.hurray.files import tensor_of

    outputs.target(args.output)
    container, name = _named(_data(args), getattr(args, "name", None), args.permissive)
    write_values(args, tensor_of(container, name), region(getattr(args, "region", None)), f" of {name!r}")
    return OK


# ------------------------------------------------------------------ audit


def _expectations(folder: Path) -> dict[str, str | None]:
    """file -> expected rule (None for valid), from a container manifest's "vectors" and a
    descriptor manifest's "descriptors" entries."""
    path = folder / "manifest.json"
    if not path.is_file():
        return {}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}
    expected: dict[str, str | None] = {}
    if isinstance(manifest, dict):
        for entry in manifest.get("vectors", []) if isinstance(manifest.get("vectors"), list) else []:
            if isinstance(entry, dict) and "file" in entry:
                expected[Path(str(entry["file"])).name] = entry.get("rule") if entry.get("expect") != "valid" else None
    return expected


def has_containers(folder: Path) -> bool:
    try:
        for path in folder.iterdir():
            # a .stream file is read as a stream, whatever it holds
            if path.is_file() and path.suffix not in KINDS[Kind.STREAM].suffixes:
                with open(path, "rb") as f:
                    if f.read(8) == MAGIC:
                        return True
    except OSError:
        return False
    return False


def audit(args: argparse.Namespace) -> int:
    from hurray_decl.hurray.container import validate_container
    from hurray_decl.hurray.tensor import read_tensor_descriptor

    folder = Path(args.folder)
    expected = _expectations(folder)
    report = []
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name != "manifest.json")
    for path in files:
        raw = path.read_bytes()
        kind = CONTAINER if raw[:8] == MAGIC else Kind.DESCRIPTOR
        entry: dict[str, Any] = {"file": path.name, "kind": kind, "verdict": "valid", "code": None, "offset": None,
                                 "message": ""}
        try:
            (validate_container if kind == CONTAINER else read_tensor_descriptor)(raw)
        except HurrayDeclError as err:
            entry.update(verdict="invalid", code=err.code, offset=err.offset, message=str(err))
        if path.name in expected:
            entry["expected"] = expected[path.name]
            entry["agrees"] = expected[path.name] == entry["code"]
        report.append(entry)
    present = {p.name for p in files}
    for name in sorted(set(expected) - present):
        report.append({"file": name, "kind": "missing", "verdict": "missing", "code": None, "offset": None,
                       "message": "listed in manifest.json, not in the folder", "expected": expected[name],
                       "agrees": False})
    summary = {"files": len(files), "valid": sum(e["verdict"] == "valid" for e in report),
               "invalid": sum(e["verdict"] == "invalid" for e in report),
               "missing": sum(e["verdict"] == "missing" for e in report),
               "disagreements": sum(e.get("agrees") is False for e in report)}
    result = {"folder": str(folder), "summary": summary, "files": report}
    if args.format == "json":
        print(json.dumps(result, indent=2))
    else:
        header = ("File", "Kind", "Verdict", "Rule", "Offset", "Expected", "Agrees")
        rows = [(e["file"], e["kind"], e["verdict"], e["code"] or "", "" if e["offset"] is None else str(e["offset"]),
                 ("valid" if e.get("expected") is None else e["expected"]) if "expected" in e else "",
                 "-" if e.get("agrees") is None else "yes" if e["agrees"] else "NO") for e in report]
        head = (f"{summary['files']} files in {folder}: {summary['valid']} valid, {summary['invalid']} invalid, "
                f"{summary['missing']} missing, {summary['disagreements']} disagreeing with the manifest")
        if args.format == "markdown":
            lines = [head, "", "| " + " | ".join(header) + " |", "|---|---|---|---|---:|---|---|"]
            lines += ["| " + " | ".join(r) + " |" for r in rows]
        else:
            widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
            lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip(),
                     "  ".join("-" * w for w in widths)]
            lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows] + ["", head]
        print("\n".join(lines))
    return INVALID if summary["disagreements"] else OK


# ------------------------------------------------------------------ hooks


def register(subparsers: Any) -> None:
    """Add ``extract``, the container handlers of ``inspect``, ``validate``, ``decode``,
    ``dequantize`` and ``extract``, and the container audit of ``audit``."""
    from hurray_decl.cli.detection import handles
    from hurray_decl.cli.inputs import buffer_limit_option, forced_kind_option, index_option

    text = ("write one tensor of a .hrry container (or a frame of a stream) as a descriptor file and one file per "
            "buffer, after validating the whole input; exit 1 if it is invalid")
    extract_cmd = subparsers.add_parser("extract", help=text, description=text)
    extract_cmd.add_argument("input", help="the .hrry file or stream: a file, - for standard input, or hex bytes")
    extract_cmd.add_argument("--name", help="the tensor to extract (optional when the file holds one tensor)")
    extract_cmd.add_argument("-o", "--output", required=True,
                             help="the folder to write into (made when missing, as convert -o DIR is)")
    extract_cmd.add_argument("--permissive", action="store_true", help="read descriptors in permissive mode")
    forced_kind_option(extract_cmd, (Kind.AUTO, Kind.STREAM))
    index_option(extract_cmd)
    buffer_limit_option(extract_cmd)
    extract_cmd.set_defaults(run=extract)
    for name, handler in (("inspect", inspect), ("validate", validate), ("decode", decode),
                          ("dequantize", dequantize), ("extract", extract)):
        handles(subparsers, name, {CONTAINER: handler})
    command = subparsers.choices.get("audit")
    if command is not None:
        command.set_defaults(run=functools.partial(routed, descriptor_commands=command.get_default("run")))


def routed(args: argparse.Namespace, descriptor_commands: Callable[[argparse.Namespace], int]) -> int:
    """``audit`` of a folder holding containers goes to :func:`audit`."""
    if getattr(args, "folder", None) and has_containers(Path(args.folder)):
        return audit(args)
    return descriptor_commands(args)


__all__ = ["audit", "decode", "dequantize", "extract", "inspect", "register", "validate"]
