"""``diff A B``: two inputs of one kind compared field by field.

Each input is read as ``inspect`` reads it: its kind detected from the bytes, then the rows of
the dump ``inspect`` prints (:data:`DUMPS`, one entry per kind, calling the same dump function
on the same bytes). The rows of A and B are paired by field path (the n-th row named ``padding``
with the n-th), and a pair differs when its bytes do (``change`` "bytes", a size included) or,
the bytes alike, its value's text does ("text": a length prefix naming what it now frames). A field of more than
:data:`~hurray_decl.dump.rows.HEX_SHOWN` bytes (tensor data, padding) is compared in chunks and
shown by its SHA-256 and its first differing byte, never whole. A field one side has and the
other does not (a dump that stops at a refused field, a tensor only one file holds) is listed
as such.

Exit 0 when the two windows are the same bytes, 1 when they differ (every differing field
listed, and the first differing byte even if no row names it), 2 when they are of different kinds
or of a kind no dump reads (GGUF, safetensors, empty input). An invalid input is compared as far
as its dump goes and its verdict is printed with its rule code.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from hurray_decl.cli.common import INVALID, OK, CommandError, UsageError, integer_at_least, one_line, verdict
from hurray_decl.cli.kinds import FORCED, ONNX_LIGHT, Kind, title

WIDTH = 100
"""Columns of every text line (as the dumps' tables)."""
CHUNK = 1 << 20
"""Bytes compared at a time in a large field."""


def _descriptor(args: argparse.Namespace, data: Any) -> Any:
    from hurray_decl.hurray.dump import tensor_dump

    return tensor_dump(data)  # the bytes after descriptor_length, if any, are rows of their own


def _quantization(args: argparse.Namespace, data: Any) -> Any:
    from hurray_decl.hurray.dump import quantization_dump

    return quantization_dump(bytes(data))


def _container(args: argparse.Namespace, data: Any) -> Any:
    from hurray_decl.hurray.container.dump import container_dump

    return container_dump(data)


def _stream(args: argparse.Namespace, data: Any) -> Any:
    from hurray_decl.hurray.stream.dump import stream_dump

    return stream_dump(data)  # the window's bytes, as inspect's reader reads them (from a view: no copy)


def _onnx_light(args: argparse.Namespace, data: Any) -> Any:
    from hurray_decl.onnx_light.dump import dump

    return dump(bytes(data), kind=args.detected.kind)


DUMPS: dict[Kind, Callable[[argparse.Namespace, Any], Any]] = {
    Kind.DESCRIPTOR: _descriptor, Kind.QUANTIZATION: _quantization, Kind.CONTAINER: _container, Kind.STREAM: _stream,
    **{kind: _onnx_light for kind in ONNX_LIGHT},
}
"""The kinds ``diff`` reads and the dump ``inspect`` makes of each (the same function)."""


@dataclass
class Side:
    """One input: its name as given, its kind, its window's bytes and its dump."""

    name: str
    kind: Kind
    data: Any
    dump: Any


def read_side(source: str, letter: str, forced: Kind, quantization: bool) -> tuple[argparse.Namespace, Side]:
    """``source`` detected (or read as ``forced``), its window read, not yet dumped (its ``dump``
    None); a problem with it names the argument (``A`` or ``B``)."""
    from hurray_decl.cli.detection import detect
    from hurray_decl.cli.inputs import window_data

    args = argparse.Namespace(input=source, kind=forced, offset=0, length=None, quantization=quantization,
                              permissive=False, name=None, command="diff")
    try:
        found = detect(args)
        args = argparse.Namespace(**vars(args), detected=found)  # this side's own arguments, as dispatch hands them on
        kind = found.kind
        if kind not in DUMPS:
            takes = ", ".join(title(k) for k in DUMPS)
            raise UsageError(f"argument INPUT: diff does not take {title(kind)} input ({source}; it takes {takes})")
        data = window_data(args)
    except CommandError as err:
        raise type(err)(str(err).replace("argument INPUT", f"argument {letter}", 1)) from None
    return args, Side(source, kind, data, None)


def first_difference(a: Any, b: Any) -> int | None:
    """The index of the first byte where ``a`` and ``b`` differ (one ending first counts as a
    difference at its end), or None when they are equal: compared a chunk at a time."""
    import numpy as np

    common = min(len(a), len(b))
    for start in range(0, common, CHUNK):
        end = min(common, start + CHUNK)
        x, y = bytes(a[start:end]), bytes(b[start:end])
        if x != y:
            return start + int(np.argmax(np.frombuffer(x, np.uint8) != np.frombuffer(y, np.uint8)))
    return None if len(a) == len(b) else common


def digest(data: Any) -> str:
    import hashlib

    h = hashlib.sha256()
    for start in range(0, len(data), CHUNK):
        h.update(data[start:start + CHUNK])
    return h.hexdigest()


def keyed(rows: list[Any]) -> dict[tuple[str, int], Any]:
    """The rows by (field, occurrence): the n-th row of a field name pairs with the other side's n-th."""
    seen: dict[str, int] = {}
    out = {}
    for row in rows:
        n = seen.get(row.field, 0)
        seen[row.field] = n + 1
        out[(row.field, n)] = row
    return out


def shown(row: Any, data: Any, large: bool) -> dict[str, Any]:
    """One side of a difference: the row as ``inspect --format json`` gives it, with the SHA-256 of
    its bytes for a field larger than a row's hex."""
    document = row.to_json()
    if large:
        document["sha256"] = digest(data[row.offset:row.offset + row.size])
    return document


def differences(a: Side, b: Side) -> Iterator[dict[str, Any]]:
    """Each field that differs between the two dumps, in A's row order then B's extra rows."""
    from hurray_decl.dump.rows import HEX_SHOWN

    rows_a, rows_b = keyed(list(a.dump.rows)), keyed(list(b.dump.rows))
    for key, ra in rows_a.items():
        rb = rows_b.get(key)
        if rb is None:
            yield {"field": key[0], "change": "only in A", "a": shown(ra, a.data, ra.size > HEX_SHOWN), "b": None}
            continue
        at = first_difference(a.data[ra.offset:ra.offset + ra.size], b.data[rb.offset:rb.offset + rb.size])
        if at is None and ra.value == rb.value:
            continue
        large = max(ra.size, rb.size) > HEX_SHOWN
        yield {"field": key[0], "change": "text" if at is None else "bytes",
               "a": shown(ra, a.data, large), "b": shown(rb, b.data, large),
               "first_difference": None if at is None else {"a": ra.offset + at, "b": rb.offset + at}}
    for key, rb in rows_b.items():
        if key not in rows_a:
            yield {"field": key[0], "change": "only in B", "a": None, "b": shown(rb, b.data, rb.size > HEX_SHOWN)}


def summary(side: Side) -> dict[str, Any]:
    from hurray_decl.dump.rows import verdict_json

    return {"file": side.name, "kind": side.kind, "size": len(side.data), "rows": len(side.dump.rows),
            **verdict_json(side.dump.error)}


def covering(side: Side, offset: int) -> dict[str, Any] | None:
    """The row of ``side`` holding byte ``offset`` (None past its rows)."""
    row = next((r for r in side.dump.rows if r.offset <= offset < r.offset + r.size), None)
    return None if row is None else row.to_json()


def compare(a: Side, b: Side) -> dict[str, Any]:
    """The JSON document of the comparison: both inputs' summaries, the verdict, the first differing
    byte with the row holding it on each side, and every differing field."""
    listed = list(differences(a, b))
    at = first_difference(a.data, b.data)
    first = None if at is None else {"byte": at, "a": covering(a, at), "b": covering(b, at)}
    return {"a": summary(a), "b": summary(b), "verdict": "same" if at is None else "different",
            "first_difference": first, "differences": listed}


def wrapped(text: str, indent: str = "  ", more: str = "      ") -> list[str]:
    return textwrap.wrap(one_line(text, 10 * WIDTH), WIDTH, initial_indent=indent, subsequent_indent=more,
                         break_on_hyphens=False) or [indent.rstrip()]


def side_line(letter: str, row: dict[str, Any] | None) -> str:
    if row is None:
        return f"{letter}: (no such field)"
    where = f"{letter} at byte {row['offset']} ({row['size']} byte{'s' * (row['size'] != 1)}):"
    if "sha256" in row:
        return f"{where} sha256 {row['sha256'][:16]}"
    return f"{where} {row['hex']}" + (f" = {row['text']}" if row["text"] else "")


RUN = 3
"""Consecutive fields only one side has that the text lists as one line (a dump that stopped)."""


def entries(listed: list[dict[str, Any]]) -> Iterator[dict[str, Any] | list[dict[str, Any]]]:
    """The differences as the text lists them: each on its own, but a run of at least :data:`RUN`
    fields that only one side has as one list."""
    run: list[dict[str, Any]] = []
    for item in [*listed, None]:
        if item is not None and item["change"].startswith("only") and (not run or run[0]["change"] == item["change"]):
            run.append(item)
            continue
        if len(run) >= RUN:
            yield run
        else:
            yield from run
        run = [item] if item is not None and item["change"].startswith("only") else []
        if item is not None and not run:
            yield item


def text_lines(document: dict[str, Any], sides: tuple[Side, Side], limit: int) -> Iterator[str]:
    for letter, side in zip(("A", "B"), sides):
        s = document[letter.lower()]
        state = "valid" if side.dump.error is None else verdict(side.dump.error)
        yield from wrapped(f"{letter}: {s['file']}: {title(s['kind'])}, {s['size']} bytes, {s['rows']} rows; "
                           f"{state}", "", "  ")
    listed = document["differences"]
    for number, entry in enumerate(entries(listed)):
        if limit and number == limit:
            yield "... and more differing fields (--limit 0 lists every one, --format json too)"
            break
        if isinstance(entry, list):  # a run of fields one side has and the other has not
            letter = entry[0]["change"][-1]
            rows = [item[letter.lower()] for item in entry]
            yield from wrapped(f"only in {letter}: {len(entry)} fields at bytes {rows[0]['offset']}-"
                               f"{rows[-1]['offset'] + rows[-1]['size'] - 1}, from {entry[0]['field']} to "
                               f"{entry[-1]['field']}", "", "  ")
            continue
        yield from wrapped(f"{entry['field']} ({entry['change']})", "", "  ")
        for letter in ("A", "B"):
            yield from wrapped(side_line(letter, entry[letter.lower()]))
        first = entry.get("first_difference")
        if first is not None and (entry["a"]["size"] > 1 or entry["b"]["size"] > 1):
            yield from wrapped(f"first differing byte: A {first['a']}, B {first['b']}")
    at = document["first_difference"]
    if at is None:
        yield f"same: {document['a']['size']} bytes, {document['a']['rows']} rows alike"
    else:
        held = "; ".join(f"{letter}'s {row['field']} (at byte {row['offset']})"
                         for letter, row in (("A", at["a"]), ("B", at["b"])) if row is not None)
        yield from wrapped(f"different: {len(listed)} field{' differs' if len(listed) == 1 else 's differ'}; the "
                           f"first differing byte is byte {at['byte']}" + (f", in {held}" if held else ""), "", "  ")


def cmd_diff(args: argparse.Namespace) -> int:
    if args.a == "-" and args.b == "-":
        raise UsageError("argument B: standard input can be only one of the two inputs")
    forced = Kind(args.kind)
    (read_a, a), (read_b, b) = read_side(args.a, "A", forced, args.quantization), \
        read_side(args.b, "B", forced, args.quantization)
    if a.kind != b.kind:
        raise UsageError(f"argument B: {args.b} is {title(b.kind)} and {args.a} is {title(a.kind)}: "
                         "diff compares two inputs of one kind")
    for read, side in ((read_a, a), (read_b, b)):  # the rows inspect makes of each
        side.dump = DUMPS[side.kind](read, side.data)
    document = compare(a, b)
    if args.format == "json":
        print(json.dumps(document, indent=2))
    else:
        sys.stdout.write("\n".join(text_lines(document, (a, b), args.limit)) + "\n")
    return OK if document["first_difference"] is None else INVALID


def register(sub: Any) -> None:
    kinds = ", ".join(title(kind) for kind in DUMPS)
    command = sub.add_parser(
        "diff", help="compare two inputs of one kind field by field: exit 0 same, 1 different",
        description=f"Compare two inputs of one kind ({kinds}) field by field, from the rows inspect "
                    "dumps: each field that differs with both values and both byte offsets; a field "
                    "larger than a row's hex by its SHA-256 and its first differing byte. Exit 0 same "
                    "bytes, 1 different, 2 inputs of two kinds or of a kind diff does not read.")
    command.add_argument("a", metavar="A", help="the first input: a file, - for standard input, or hex bytes")
    command.add_argument("b", metavar="B", help="the second input, of the same kind")
    command.add_argument("--kind", choices=FORCED, default=Kind.AUTO,
                         help="read both inputs as this kind (default: detect each from its bytes; a damaged "
                              "copy may look like another kind)")
    command.add_argument("--quantization", action="store_true",
                         help="both inputs are bare quantization payloads (as inspect --quantization reads them)")
    command.add_argument("--format", choices=("text", "json"), default="text",
                         help="lines within 100 columns (text, default) or one JSON document")
    command.add_argument("--limit", type=integer_at_least(0), default=20, metavar="N",
                         help="text: list at most N differing fields (default 20; 0 lists every one)")
    command.set_defaults(run=cmd_diff)
