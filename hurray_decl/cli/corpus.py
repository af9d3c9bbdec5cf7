"""The audit of a folder: verdicts and rule codes for every descriptor in it, checked against its manifest
(what ``audit`` runs, for the Hurray corpus and, through :mod:`hurray_decl.cli.onnx_light`, the onnx-light one).

Which files are audited: every file a ``manifest.json`` lists (paths relative to the folder,
subfolders included), and the files with a suffix in :data:`READERS` (``*.bin``) in the folder
and in the subfolders the manifest names, except in a subfolder holding its own manifest. Other
files (``README.md``, the manifest itself) are not audited.

Manifests: an object whose ``descriptors``, ``files`` or ``vectors`` lists hold entries with a
``file``. An entry's ``expect`` is ``null``, ``"valid"`` or absent for a valid file, a rule code
(or ``"invalid"`` with the code in ``rule``) for an invalid one, or an object of expected
properties (the shared conformance manifest), which are compared with what was read. The
manifest ``convert -o DIR`` writes is read too: its ``tensors`` list holds a ``descriptor`` file
(expected valid) and its ``buffers`` files, which are checked with it (the rules needing buffer
contents), not as descriptors of their own.

A listed file that is missing, a file the manifest does not list and a verdict or property that
differs are disagreements (exit 1). A listed file whose suffix has no reader is reported as
unchecked. A manifest that is not such JSON is a file error (exit 3).

:data:`READERS` holds the reader of each suffix (``*.bin`` descriptors, ``*.stream`` streams):
``check(path, args)`` returns the properties read (a dict, possibly empty) or raises a
HurrayDeclError.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hurray_decl.cli.common import FileProblem, Style, progress_printer
from hurray_decl.cli.inputs import decode_descriptor, read_descriptor
from hurray_decl.cli.kinds import KINDS, Kind

MANIFEST = "manifest.json"
LISTS = ("descriptors", "files", "vectors")
TENSORS = "tensors"
"""The list of the manifest ``convert -o DIR`` writes: ``{"name", "descriptor", "buffers"}`` per tensor."""


def check_descriptor(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Read one descriptor file; its properties, in the shared conformance manifest's terms."""

    descriptor = decode_descriptor(read_descriptor(str(path), quantization=args.quantization).data, args)
    if args.quantization:
        return {}
    from hurray_decl.hurray.tables.element_types import BY_TAG

    element = BY_TAG.get(descriptor.type_tag)
    return {
        "version_major": descriptor.version_major,
        "version_minor": descriptor.version_minor,
        "element_type_tag": descriptor.type_tag,
        "element_type": element.name if element is not None else None,
        "shape": list(descriptor.shape),
        "byte_offset": descriptor.byte_offset,
        "layout_tag": descriptor.layout_tag,
        "buffer_byte_sizes": [b.byte_size for b in descriptor.buffers],
        "has_quantization": descriptor.quantization is not None,
        "has_shard": descriptor.shard is not None,
    }


def check_stream(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """``audit``'s reader of ``*.stream`` files: the items, T for a tensor and C for a composite."""
    from hurray_decl.hurray.stream import CompositeItem, read_stream

    items = []
    with open(path, "rb") as source:
        for item in read_stream(source):
            items.append("C" if isinstance(item, CompositeItem) else "T")
            del item  # before the next item's buffers arrive
    return {"items": ",".join(items)}


READERS: dict[str, Callable[[Path, argparse.Namespace], dict[str, Any]]] = {
    ".bin": check_descriptor, **dict.fromkeys(KINDS[Kind.STREAM].suffixes, check_stream)}
"""File suffix -> the function that checks such a file (see the module's documentation)."""


def load_manifest(path: Path) -> dict[str, dict[str, Any]]:
    """The manifest's entries by file (relative path), each {"rule": code or None, "properties": dict}."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise FileProblem(f"{path}: not a JSON manifest ({err})") from None
    except OSError as err:
        raise FileProblem(f"{path}: {err.strerror}") from None
    if not isinstance(document, dict) or not any(isinstance(document.get(key), list) for key in (*LISTS, TENSORS)):
        raise FileProblem(f"{path}: a manifest is an object with a list of entries under "
                          f"{', '.join(repr(k) for k in (*LISTS, TENSORS))}")
    entries: dict[str, dict[str, Any]] = {}
    for key in LISTS:
        for number, entry in enumerate(document.get(key) or []):
            if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
                raise FileProblem(f"{path}: {key}[{number}] has no \"file\"")
            expect = entry.get("expect")
            rule, properties = None, {}
            if isinstance(expect, dict):
                properties = expect
            elif expect == "invalid":
                rule = entry.get("rule") or "invalid"
            elif isinstance(expect, str) and expect != "valid":
                rule = expect
            elif expect not in (None, "valid"):
                raise FileProblem(f"{path}: {key}[{number}] has an \"expect\" that is no verdict: {expect!r}")
            entries[entry["file"]] = {"rule": rule, "properties": properties}
    for number, entry in enumerate(document.get(TENSORS) or []):
        buffers = entry.get("buffers", []) if isinstance(entry, dict) else None
        if (not isinstance(entry, dict) or not isinstance(entry.get("descriptor"), str)
                or not isinstance(buffers, list) or not all(isinstance(b, str) for b in buffers)):
            raise FileProblem(f"{path}: {TENSORS}[{number}] has no \"descriptor\" file and \"buffers\" list")
        entries[entry["descriptor"]] = {"rule": None, "properties": {}, "buffers": buffers}
    return entries


def files_to_audit(folder: Path, listed: dict[str, Any]) -> list[str]:
    """The relative paths audited: the listed files and the unlisted ones with a reader's suffix."""
    folders = {folder} | {(folder / name).parent for name in listed}
    found = set(listed)
    for place in folders:
        if place != folder and (place / MANIFEST).is_file():
            continue  # a subfolder with a manifest of its own is audited on its own
        if place.is_dir():
            found |= {p.relative_to(folder).as_posix() for p in place.iterdir()
                      if p.is_file() and p.suffix in READERS}
    buffers = {b for entry in listed.values() for b in entry.get("buffers", ())}  # checked with their descriptor
    return sorted(found - buffers)


def check_buffers(folder: Path, path: Path, buffers: list[str], args: argparse.Namespace) -> None:
    """The rules needing buffer contents, for a descriptor and its buffer files (memory-mapped);
    a missing buffer file is a FileProblem naming it."""
    import mmap

    from hurray_decl.hurray.tensor import read_tensor_descriptor, validate_buffers

    descriptor = read_tensor_descriptor(read_descriptor(str(path)).data, permissive=args.permissive)
    views: list[Any] = []
    try:
        for name in buffers:
            with open(folder / name, "rb") as f:
                size = (folder / name).stat().st_size
                views.append(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b"")
        validate_buffers(descriptor, views, permissive=args.permissive)
    except OSError as err:  # the maps are released with the last view of them (an error may hold one)
        raise FileProblem(f"{folder / name}: {err.strerror or err}") from None


def audit(folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Verdicts for every file of ``folder`` (see the module's documentation)."""
    from hurray_decl.errors import HurrayDeclError

    manifest = folder / MANIFEST
    listed = load_manifest(manifest) if manifest.is_file() else {}
    names = files_to_audit(folder, listed)
    report = []
    show = progress_printer("audit")
    for index, name in enumerate(names, start=1):
        path = folder / name
        entry: dict[str, Any] = {"file": name, "verdict": "valid", "code": None, "offset": None, "message": ""}
        check = READERS.get(path.suffix)
        properties: dict[str, Any] = {}
        if not path.is_file():
            entry.update(verdict="missing", message="listed in the manifest, not in the folder")
        elif check is None:
            entry.update(verdict="unchecked", message=f"no reader for {path.suffix or 'files without a suffix'}")
        else:
            try:
                properties = check(path, args)
                buffers = listed.get(name, {}).get("buffers")
                if buffers:
                    check_buffers(folder, path, buffers, args)
            except HurrayDeclError as err:
                entry.update(verdict="invalid", code=err.code, offset=err.offset, message=str(err))
            except FileProblem as problem:
                entry.update(verdict="missing", message=str(problem))
        if listed:
            expected = listed.get(name)
            if expected is None:
                entry.update(expected="(not listed)", agrees=False)
            elif entry["verdict"] == "unchecked":
                entry["expected"] = expected["rule"]
            else:
                entry["expected"] = expected["rule"]
                differences = [f"{key}: manifest {value!r}, read {properties[key]!r}"
                               for key, value in expected["properties"].items()
                               if key in properties and properties[key] != value]
                if differences:
                    entry["message"] = "; ".join(differences)
                entry["agrees"] = (entry["verdict"] != "missing" and expected["rule"] == entry["code"]
                                   and not differences)
        report.append(entry)
        if show:
            show(index, len(names))
    counts = {"files": len(report)}
    for verdict in ("valid", "invalid", "missing", "unchecked"):
        counts[verdict] = sum(e["verdict"] == verdict for e in report)
    counts["unlisted"] = sum(e.get("expected") == "(not listed)" for e in report)
    counts["disagreements"] = sum(e.get("agrees") is False for e in report)
    return {"folder": str(folder), "kind": Kind.QUANTIZATION if args.quantization else Kind.DESCRIPTOR,
            "manifest": manifest.is_file(), "summary": counts, "descriptors": report}


def summary_line(result: dict[str, Any]) -> str:
    s = result["summary"]
    parts = [f"{s['valid']} valid", f"{s['invalid']} invalid"]
    parts += [f"{s[key]} {key}" for key in ("missing", "unchecked") if s[key]]
    if s["unlisted"]:
        parts.append(f"{s['unlisted']} not in the manifest")
    against = (f"{s['disagreements']} disagreeing with the manifest" if result["manifest"]
               else "no manifest to check against")
    return f"{s['files']} {result['kind']} files in {result['folder']}: {', '.join(parts)}; {against}"


def rows(result: dict[str, Any]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for e in result["descriptors"]:
        agrees = {True: "yes", False: "NO"}.get(e.get("agrees"), "-")
        expected = e.get("expected") or ("valid" if "expected" in e else "")
        out.append((e["file"], e["verdict"], e["code"] or "", "" if e["offset"] is None else str(e["offset"]),
                    expected, agrees))
    return out


HEADER = ("File", "Verdict", "Rule", "Offset", "Expected", "Agrees")


def render_json(result: dict[str, Any], style: Style) -> str:
    return json.dumps(result, indent=2)


def render_markdown(result: dict[str, Any], style: Style) -> str:
    lines = [summary_line(result), "", "| " + " | ".join(HEADER) + " |", "|---|---|---|---:|---|---|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows(result)])


def render_text(result: dict[str, Any], style: Style) -> str:
    table = rows(result)
    widths = [max(len(h), *(len(r[i]) for r in table)) if table else len(h) for i, h in enumerate(HEADER)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(HEADER, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    for r in table:
        line = "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
        lines.append(style.bad(line) if r[5] == "NO" else line)
    return "\n".join(lines + ["", summary_line(result)])


RENDERERS: dict[str, Callable[[dict[str, Any], Style], str]] = {
    "text": render_text, "markdown": render_markdown, "json": render_json}
"""Report format -> renderer: ``--format`` offers these keys, so a renderer added here is offered too."""
PAGES = "html"
"""The ``--format`` that writes pages to a folder (``-o DIR``) instead of a report."""
