"""Annotated hex dump of a ``.hrry`` file: every byte named, as :class:`~hurray_decl.dump.rows.Row`
rows in file order, so the hex dump's text, Markdown and JSON renderers (and its JSON Schema)
serve containers unchanged.

Header, trailer, index entries and KV entries are named by tracing their declarations; each
tensor's descriptor is dumped by :func:`hurray_decl.hurray.dump.tensor_dump` under the tensor's
name, rebased to its offset in the file. Runs of raw bytes (padding and buffer contents) of
up to 64 bytes get rows of 16; a longer run gets one summary row whose ``size`` covers the
whole run and whose ``hex`` shows its first 16 bytes (the value says so), so that a 200 MB
buffer costs one row while the rows still tile the file exactly once. A KV array whose items
take more than 64 bytes is one summary row of its items too (its first elements shown, the
rest counted), and a long KV string shows its first characters.

:func:`container_stream` produces the rows as it reads the file: the level V checks run in
their order (:meth:`~hurray_decl.hurray.container.reader.Container.checks`), each tensor's just
before its rows, so the verdict is known before the failing row is shown while the first rows
of any file come at once; memory holds one tensor's rows at a time.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

import construct as cs
import numpy as np

from hurray_decl.declare.trace import Span, trace
from hurray_decl.dump.rows import ITEMS_SHOWN, TEXT_SHOWN, UNDECODED, Dump, Row, RowStream, hex_shown, typed
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray import dump as hexdump
from hurray_decl.hurray.container.crc import crc32c
from hurray_decl.hurray.container.declarations import (
    ARRAY_PAYLOAD,
    ENTRY_FIXED,
    FILE_HEADER,
    HEADER_LENGTH,
    INDEX_COUNT,
    INDEX_COUNT_LENGTH,
    INDEX_ENTRY,
    KV_COUNT,
    KV_COUNT_LENGTH,
    KV_ENTRY,
    MIN_FILE_SIZE,
    TRAILER,
    TRAILER_LENGTH,
    FileFlag,
    KVTag,
)
from hurray_decl.hurray.container.reader import Container, open_container

SHOWN = 16  # bytes of hex in a summary row
SUMMARY_AFTER = 64  # raw runs and KV array items longer than this get one summary row
KV_HEAD = cs.Struct(*KV_ENTRY.subcons[:3])  # key_length, key, value_tag
ARRAY_HEAD = cs.Struct(*ARRAY_PAYLOAD.subcons[:2])  # element_tag, count
TEXT_FIELDS = ("magic", "name", "key", "bytes", "trailer_magic")
"""Byte fields shown as text when they are UTF-8."""


def _file_flags(value: int) -> str:
    names = [flag.name for flag in FileFlag if value & flag and flag.name]
    return f"0x{value:08X}" + (f" ({', '.join(names)})" if names else "")


def _value_tag(value: int) -> str:
    try:
        return f"0x{value:02X} ({KVTag(value).name.lower()})"
    except ValueError:
        return f"0x{value:02X}"


def _count(value: int) -> str:
    return "unknown (0xFFFFFFFFFFFFFFFF)" if value == 0xFFFF_FFFF_FFFF_FFFF else str(value)


FORMATTERS: dict[str, Callable[[int], str]] = {
    "file_flags": _file_flags,
    "value_tag": _value_tag,
    "element_tag": _value_tag,
    "tensor_count_hint": _count,
    "index_crc32c": lambda v: f"0x{v:08X}",
}
"""How a container field reads, by field name."""


def _text(value: Any) -> tuple[str, Any, int]:
    """A byte field that is UTF-8 as its quoted text (its first TEXT_SHOWN characters, the rest
    counted), its typed value and the characters elided; other bytes as hex."""
    try:
        text = bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        return hexdump.describe("", value), None, 0
    shown = text[:TEXT_SHOWN]
    more = len(text) - len(shown)
    return repr(shown) + (f"… (+{more} chars)" if more else ""), shown, more


def _span_rows(data: memoryview, spans: list[Span]) -> list[Row]:
    rows = []
    for s in spans:
        leaf = s.path.rsplit(".", 1)[-1]
        if leaf in TEXT_FIELDS and isinstance(s.value, (bytes, bytearray)) and s.value:
            text, value, elided = _text(s.value)
        else:
            text = hexdump.describe(s.path, s.value, FORMATTERS)
            value, elided = typed(s.value)
        rows.append(Row(s.offset, s.size, hex_shown(data, s.offset, s.offset + s.size), s.path, text, value,
                        elided))
    return rows


def raw_rows(data: memoryview, start: int, end: int, label: str, *, scan: bool = True) -> list[Row]:
    """Rows for [start, end) that no field names: rows of 16, or one summary row. ``scan``
    says in a summary whether the bytes are all 0x00 (padding); buffer contents are not read."""
    if end <= start:
        return []
    if end - start <= SUMMARY_AFTER:
        return [Row(p, min(16, end - p), bytes(data[p:min(end, p + 16)]).hex(" ").upper(), label, "")
                for p in range(start, end, 16)]
    zeros = ""
    if scan:
        zeros = "all 0x00; " if not np.any(np.frombuffer(data[start:end], dtype=np.uint8)) else "not all 0x00; "
    value = f"{end - start} bytes, {zeros}first {SHOWN} shown"
    return [Row(start, end - start, bytes(data[start:start + SHOWN]).hex(" ").upper(), label, value)]


def _traced(struct: Any, data: memoryview, start: int, end: int, prefix: str, **params: Any) -> tuple[list[Row], int]:
    spans, _ = trace(struct, bytes(data[start:end]), base=start, prefix=prefix, params=params)
    rows = _span_rows(data, spans)
    return rows, max([start] + [r.offset + r.size for r in rows])


def _tensor_rows(c: Container, data: memoryview, index: int) -> list[Row]:
    e = c.entries[index]
    label = f"tensor[{e.name}]"
    start = e.descriptor_offset
    end = min(start + e.descriptor_length, len(data))
    rows = [replace(r, offset=r.offset + start, field=f"{label}.{r.field}")
            for r in hexdump.tensor_dump(bytes(data[start:end])).rows]
    try:
        _, placement = c.place(index)
    except HurrayDeclError:
        return rows
    for i, (s, t) in enumerate(placement.buffers):
        rows += raw_rows(data, s, t, f"{label}.buffer[{i}]", scan=False)
    return rows


def _kv_entry_rows(c: Container, data: memoryview, k: int, key: str, start: int, end: int) -> list[Row]:
    """The rows of KV entry ``k`` in [start, end): traced whole when its array items are short,
    else its head traced and its items as one summary row."""
    value = c.kv[key]
    prefix = f"kv[{k}]"
    if value.tag != KVTag.ARRAY:
        return _booleans(_traced(KV_ENTRY, data, start, end, prefix)[0], value.tag, prefix)
    rows, p = _traced(KV_HEAD, data, start, end, prefix)
    head, items_at = _traced(ARRAY_HEAD, data, p, end, f"{prefix}.value")
    if end - items_at <= SUMMARY_AFTER:
        return _booleans(_traced(KV_ENTRY, data, start, end, prefix)[0], value.array_tag, prefix)
    items = value.value
    field = f"{prefix}.value.items"
    shown = hexdump.describe(field, list(items[:ITEMS_SHOWN]))
    if len(items) > ITEMS_SHOWN:
        shown = shown[:-1] + f", … (+{len(items) - ITEMS_SHOWN})]"
    text = f"{len(items)} × {KVTag(value.array_tag).name.lower()}: {shown}"
    data_value, _elided = typed(list(items[:ITEMS_SHOWN]))
    summary = Row(items_at, end - items_at, hex_shown(data, items_at, min(end, items_at + SHOWN)), field, text,
                  data_value, len(items) - len(data_value))
    return rows + head + [summary]


def _booleans(rows: list[Row], tag: int, prefix: str) -> list[Row]:
    """A KV bool's rows (a value, or the items of an array) read as booleans, not as the u8 they are."""
    if tag != KVTag.BOOL:
        return rows
    values = (f"{prefix}.value", f"{prefix}.value.items[")
    return [replace(r, data=bool(r.data), value=hexdump.describe(r.field, bool(r.data)))
            if r.field == values[0] or r.field.startswith(values[1]) else r for r in rows]


def _kv_rows(c: Container, data: memoryview) -> Iterator[Row]:
    t = c.trailer
    part, _ = _traced(KV_COUNT, data, t.kv_offset, t.kv_offset + KV_COUNT_LENGTH, "kv")
    yield from part
    keys = list(c.kv)
    for k, key in enumerate(keys):
        start = c.positions[f"kv -> entries -> {k}"]
        end = c.positions.get(f"kv -> entries -> {k + 1}", c.positions["kv -> end"])
        yield from _kv_entry_rows(c, data, k, key, start, end)


def _index_rows(c: Container, data: memoryview) -> Iterator[Row]:
    t = c.trailer
    part, p = _traced(INDEX_COUNT, data, t.index_offset, t.index_offset + INDEX_COUNT_LENGTH, "index")
    yield from part
    for k, e in enumerate(c.entries):
        part, p = _traced(INDEX_ENTRY, data, p, p + ENTRY_FIXED + len(e.name.encode("utf-8")), f"index[{k}]")
        yield from part


def _trailer_rows(data: memoryview, **params: Any) -> list[Row]:
    size = len(data)
    return _traced(TRAILER, data, size - TRAILER_LENGTH, size, "trailer", file_size=size, **params)[0]


class _Checks:
    """The level V checks of a container, advanced step by step; the first error is kept on the stream."""

    def __init__(self, c: Container, stream: RowStream) -> None:
        self.steps: Iterator[int | None] | None = c.checks()
        self.stream = stream

    def step(self) -> None:
        if self.steps is None:
            return
        try:
            next(self.steps)
        except StopIteration:
            self.steps = None
        except HurrayDeclError as err:
            self.stream.error = err
            self.steps = None

    def finish(self) -> None:
        while self.steps is not None:
            self.step()


def _merged(pieces: list[tuple[int, Iterable[Row]]]) -> Iterator[Row]:
    """The rows of every piece (each in offset order, none before its start) in (offset, -size)
    order, ties in the pieces' order: a stable sort of all rows, but lazy -- a piece is started
    only once every row before its start has gone by."""
    pending = sorted(((start, n, rows) for n, (start, rows) in enumerate(pieces)), key=lambda p: (p[0], p[1]))
    heap: list[tuple[int, int, int, int, Row, Iterator[Row]]] = []
    seq = 0
    at = 0

    def push(n: int, it: Iterator[Row]) -> None:
        nonlocal seq
        row = next(it, None)
        if row is not None:
            heapq.heappush(heap, (row.offset, -row.size, n, seq, row, it))
            seq += 1

    while heap or at < len(pending):
        while at < len(pending) and (not heap or pending[at][0] <= heap[0][0]):
            _, n, rows = pending[at]
            push(n, iter(rows))
            at += 1
        if not heap:
            continue
        _, _, n, _, row, it = heapq.heappop(heap)
        push(n, it)
        yield row


def _tiled(data: memoryview, rows: Iterable[Row], gap: str = UNDECODED) -> Iterator[Row]:
    """The rows in offset order, each byte covered once: overlaps dropped, gaps labelled."""
    position = 0
    for row in rows:
        if row.offset < position:
            continue
        yield from raw_rows(data, position, row.offset, gap)
        yield row
        position = row.offset + row.size
    yield from raw_rows(data, position, len(data), gap if position else UNDECODED)


def _refused_rows(view: memoryview) -> list[Row]:
    """What can still be named of a file that fails level O: the header, and the trailer if there is one."""
    size = len(view)
    rows, _ = _traced(FILE_HEADER, view, 0, min(size, HEADER_LENGTH), "header")
    if size >= MIN_FILE_SIZE:
        rows += _trailer_rows(view, file_flags=int.from_bytes(view[12:16], "little"), minor=view[9],
                              index_crc=lambda o, n: crc32c(view[o:o + n]))
    return sorted(rows, key=lambda r: (r.offset, -r.size))


def _file_rows(c: Container, view: memoryview, stream: RowStream) -> Iterator[Row]:
    checks = _Checks(c, stream)
    checks.step()  # the header's checks, before its rows
    order = c.write_order()
    if not order:
        checks.finish()

    def tensor(position: int, index: int) -> Iterator[Row]:
        checks.step()  # this tensor's checks, before its rows
        yield from sorted(_tensor_rows(c, view, index), key=lambda r: (r.offset, -r.size))
        if position == len(order) - 1:
            checks.finish()  # the sections after the tensors, before the bytes after the last one

    pieces: list[tuple[int, Iterable[Row]]] = [(0, _traced(FILE_HEADER, view, 0, HEADER_LENGTH, "header")[0])]
    pieces += [(c.entries[i].descriptor_offset, tensor(n, i)) for n, i in enumerate(order)]
    t = c.trailer
    if t.has_kv:
        pieces.append((t.kv_offset, _kv_rows(c, view)))
    pieces.append((t.index_offset, _index_rows(c, view)))
    pieces.append((len(view) - TRAILER_LENGTH, _trailer_rows(
        view, file_flags=c.header.file_flags, minor=c.header.container_version_minor,
        index_crc=lambda o, n: c.trailer.index_crc32c)))
    yield from _tiled(view, _merged(pieces), gap="padding")


def container_stream(data: Any) -> RowStream:
    """Rows and verdict (level V) of a whole container file, produced as the file is read."""
    view = memoryview(data).cast("B")

    def produce(stream: RowStream) -> Iterator[Row]:
        try:
            c = open_container(view)
        except HurrayDeclError as err:
            stream.error = err
            yield from _tiled(view, _refused_rows(view))
            return
        yield from _file_rows(c, view, stream)

    return RowStream(produce)


def container_dump(data: Any) -> Dump:
    """Rows and verdict (level V) of a whole container file."""
    return container_stream(data).collect()


__all__ = ["FORMATTERS", "container_dump", "container_stream", "raw_rows"]
