"""Container (``.hrry``) commands of ``hurray-decl``.

``register(subparsers)`` adds ``extract``; ``route(args)`` sends ``inspect``, ``validate``,
``decode``, ``audit`` and ``dequantize`` to the container handlers when their input is a container, which
is decided by its first 8 bytes, "HRRYFILE" (HF-HDR-19): such input is never parsed as a
tensor descriptor. Exit codes: 0 valid or done, 1 invalid input (the rule code is printed),
2 usage error (a missing or unknown ``--name``), 3 file or environment error. Output files
are written to a temporary file in the target folder and renamed, after the input was
validated; nothing is left behind on failure.
"""

from __future__ import annotations

import argparse
import functools
import json
import mmap
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hurray_decl.errors import ARGUMENT, HurrayDeclError

OK, INVALID, USAGE, ENVIRONMENT = 0, 1, 2, 3
MAGIC = b"HRRYFILE"
HEX_MAGIC = MAGIC.hex()


def _load(source: str) -> Any:
    """The bytes of ``source`` when it is a container (a file, hex, or ``-``), else None.

    Standard input that is not a container is put back, so the descriptor commands read it.
    """
    if source is None:  # "validate --buffers A B DESC": the descriptor commands take the last file
        return None
    if source == "-":
        head = sys.stdin.buffer.read(len(MAGIC))
        if head == MAGIC:
            return head + sys.stdin.buffer.read()
        from hurray_decl.cli.inputs import peek_stdin

        peek_stdin(head)  # not a container: put back, not read to its end (a stream arrives as it comes)
        return None
    path = Path(source)
    try:
        if path.is_file():
            with open(path, "rb") as f:
                if f.read(8) != MAGIC:
                    return None
                return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError:
        return None  # the descriptor commands report unreadable files
    text = re.sub(r"[\s:]|0x", "", source, flags=re.IGNORECASE)
    if text.lower().startswith(HEX_MAGIC):
        try:
            return bytes.fromhex(text)
        except ValueError:
            return None
    return None


def _say(message: str, stream: Any = None) -> None:
    print(message.replace("\n", " "), file=stream or sys.stdout)


def _refuse(err: HurrayDeclError) -> int:
    if err.code == ARGUMENT:
        _say(f"hurray-decl: error: {err}", sys.stderr)
        return USAGE
    _say(f"invalid {err.code}: {err}")
    return INVALID


def _guarded(run: Callable[[], int]) -> int:
    try:
        return run()
    except HurrayDeclError as err:
        return _refuse(err)
    except OSError as err:
        _say(f"hurray-decl: error: {err.strerror or err}: {err.filename or ''}".rstrip(": "), sys.stderr)
        return ENVIRONMENT


# ------------------------------------------------------------------ inspect, validate


def inspect(args: argparse.Namespace, data: Any) -> int:
    from hurray_decl.dump.render import write
    from hurray_decl.hurray.container.dump import container_stream

    def run() -> int:
        dump = container_stream(data)
        write(dump, sys.stdout, args.format)  # each row printed as it is read
        return INVALID if dump.error is not None else OK
    return _guarded(run)


def validate(args: argparse.Namespace, data: Any) -> int:
    from hurray_decl.hurray.container import validate_container
    from hurray_decl.hurray.tensor.layouts import CompositeHead

    def run() -> int:
        if getattr(args, "buffers", None):
            _say("hurray-decl: error: --buffers: a container holds its buffers; give the .hrry file alone",
                 sys.stderr)
            return USAGE
        c = validate_container(data, permissive=getattr(args, "permissive", False))
        composites = sum(1 for t in c.tensors() if isinstance(t.descriptor.layout, CompositeHead))
        _say(f"valid: container {c.header.container_version_major}.{c.header.container_version_minor}, "
             f"{len(c.entries)} tensors ({composites} composite heads), {len(c.kv)} KV entries")
        return OK
    return _guarded(run)


def decode(args: argparse.Namespace, data: Any) -> int:
    """The whole container as JSON: header, trailer, KV values with their types, and each
    tensor's index entry and decoded descriptor, in index order."""
    from hurray_decl.hurray.container import validate_container

    try:
        c = validate_container(data, permissive=getattr(args, "permissive", False))
    except HurrayDeclError as err:
        print(json.dumps({"error": err.to_dict()}, indent=2))
        return USAGE if err.code == ARGUMENT else INVALID
    document = {
        "header": c.header.model_dump(), "trailer": c.trailer.model_dump(),
        "kv": {key: {"type": v.type_name(), "value": v.plain()} for key, v in c.kv.items()},
        "tensors": [{"entry": e.model_dump(), "descriptor": json.loads(c.tensor(e.name).descriptor.model_dump_json())}
                    for e in c.entries],
    }
    print(json.dumps(document, indent=2))
    return OK


# ------------------------------------------------------------------ outputs


def _safe(name: str) -> str:
    """A file-name stem for a tensor name (names may hold '/', spaces or anything UTF-8)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".") or "tensor"


class _Outputs:
    """Files written as temporaries in their folder and renamed together at the end."""

    def __init__(self, folder: Path) -> None:
        if not folder.is_dir():
            raise OSError(2, "no such folder", str(folder))
        self.folder = folder
        self.pending: list[tuple[str, Path]] = []

    def temporary(self, final: Path) -> str:
        fd, temp = tempfile.mkstemp(prefix=f".{final.name}.", dir=final.parent)
        os.close(fd)
        self.pending.append((temp, final))
        return temp

    def commit(self) -> list[Path]:
        for temp, final in self.pending:
            os.replace(temp, final)
        done = [final for _, final in self.pending]
        self.pending = []
        return done

    def discard(self) -> None:
        for temp, _ in self.pending:
            try:
                os.unlink(temp)
            except FileNotFoundError:
                pass


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
    return c, name


def _tensor(data: Any, name: str | None, permissive: bool) -> Any:
    c, name = _named(data, name, permissive)
    return c.tensor(name)


def extract(args: argparse.Namespace) -> int:
    from hurray_decl.hurray.tensor import write_tensor_descriptor

    def run() -> int:
        data = _load(args.input)
        if data is None:
            _say(f"hurray-decl: error: {args.input!r} is not a .hrry container (no HRRYFILE magic)", sys.stderr)
            return USAGE
        tensor = _tensor(data, args.name, args.permissive)
        outputs = _Outputs(Path(args.output))
        stem = _safe(tensor.name)
        try:
            files = [(outputs.temporary(outputs.folder / f"{stem}.descriptor.bin"),
                      write_tensor_descriptor(tensor.descriptor, permissive=args.permissive))]
            files += [(outputs.temporary(outputs.folder / f"{stem}.buffer{i}.bin"), b)
                      for i, b in enumerate(tensor.buffers)]
            for temp, content in files:
                with open(temp, "wb") as f:
                    f.write(content)
            written = outputs.commit()
        finally:
            outputs.discard()
        _say(f"wrote {tensor.name!r}: " + ", ".join(str(p) for p in written))
        return OK
    return _guarded(run)


def dequantize(args: argparse.Namespace, data: Any) -> int:
    import numpy as np

    from hurray_decl.cli.dequantize import region, streamed, values_of
    from hurray_decl.hurray.files import tensor_of

    def run() -> int:
        if args.buffers:
            _say("hurray-decl: error: buffers: a container holds its buffers; use --name", sys.stderr)
            return USAGE
        container, name = _named(data, getattr(args, "name", None), args.permissive)
        tensor = tensor_of(container, name)
        values = values_of(tensor, region(getattr(args, "region", None)))  # every refusal before the output exists
        prepared: Any = streamed(tensor) if values is None else None
        final = Path(args.output)
        outputs = _Outputs(final.parent if str(final.parent) else Path("."))
        try:
            temp = outputs.temporary(final)
            if values is not None:
                with open(temp, "wb") as stream:
                    np.save(stream, values, allow_pickle=False)
                kind = str(values.dtype)
            else:
                out = np.lib.format.open_memmap(temp, mode="w+", dtype=np.float32, shape=tensor.shape)
                prepared.run(out)
                out.flush()
                del out
                kind = "float32"
            outputs.commit()
        finally:
            outputs.discard()
        _say(f"wrote {kind} {list(tensor.shape if values is None else values.shape)} of {tensor.name!r} to {final}")
        return OK
    return _guarded(run)



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
            if path.is_file() and path.suffix != ".stream":  # a .stream file is read as a stream, whatever it holds
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
        kind = "container" if raw[:8] == MAGIC else "descriptor"
        entry: dict[str, Any] = {"file": path.name, "kind": kind, "verdict": "valid", "code": None, "offset": None,
                                 "message": ""}
        try:
            (validate_container if kind == "container" else read_tensor_descriptor)(raw)
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


def route(args: argparse.Namespace) -> Callable[[argparse.Namespace], int] | None:
    """The container handler for ``args`` when its input is a container, else None."""
    command = getattr(args, "command", None)
    if command in ("inspect", "validate", "decode"):
        data = _load(args.input)
        if data is not None:
            handler = {"inspect": inspect, "validate": validate, "decode": decode}[command]
            return lambda a: handler(a, data)
    elif command == "dequantize":
        data = _load(args.input)
        if data is not None:
            return lambda a: dequantize(a, data)
    elif command == "audit" and getattr(args, "folder", None) and has_containers(Path(args.folder)):
        return audit
    return None


def register(subparsers: Any) -> None:
    """Add ``extract``, and route the container inputs of the commands in :data:`ROUTED` here."""
    text = ("write one tensor of a .hrry container as a descriptor file and one file per buffer, "
            "after validating the whole container; exit 1 if it is invalid")
    extract_cmd = subparsers.add_parser("extract", help=text, description=text)
    extract_cmd.add_argument("input", help="the .hrry file")
    extract_cmd.add_argument("--name", help="the tensor to extract (optional when the file holds one tensor)")
    extract_cmd.add_argument("-o", "--output", required=True, help="the existing folder to write into")
    extract_cmd.add_argument("--permissive", action="store_true", help="read descriptors in permissive mode")
    extract_cmd.set_defaults(run=extract)
    for name in ROUTED:
        command = subparsers.choices.get(name)
        if command is not None:
            command.set_defaults(run=functools.partial(routed, descriptor_commands=command.get_default("run")))


ROUTED = ("inspect", "validate", "decode", "dequantize", "audit")
"""The commands that also read containers: a .hrry input goes to this module's handler."""


def routed(args: argparse.Namespace, descriptor_commands: Callable[[argparse.Namespace], int]) -> int:
    return (route(args) or descriptor_commands)(args)

__all__ = ["audit", "decode", "dequantize", "extract", "inspect", "register", "route", "validate"]
