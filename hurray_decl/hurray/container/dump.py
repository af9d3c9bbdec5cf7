"""Annotated hex dump of a ``.hrry`` file: every byte named, as :class:`~hurray_decl.dump.rows.Row`
rows in file order, so the hex dump's text, Markdown and JSON renderers (and its JSON Schema)
serve containers unchanged.

Header, trailer, index entries and KV entries are named by tracing their declarations; each
tensor's descriptor is dumped by :func:`hurray_decl.hurray.dump.tensor_dump` under the tensor's
name, rebased to its offset in the file. Runs of raw bytes (padding and buffer contents) of
up to 64 bytes get rows of 16; a longer run gets one summary row whose ``size`` covers the
whole run and whose ``hex`` shows its first 16 bytes (the value says so), so that a 200 MB
buffer costs one row while the rows still tile the file exactly once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hurray_decl.declare.trace import Span, trace
from hurray_decl.dump.rows import UNDECODED, Dump, Row
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray import dump as hexdump
from hurray_decl.hurray.container.crc import crc32c
from hurray_decl.hurray.container.declarations import (
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
SUMMARY_AFTER = 64  # raw runs longer than this get one summary row


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


def _text(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)) and value:
        try:
            return repr(bytes(value).decode("utf-8"))
        except UnicodeDecodeError:
            return value
    return value


def _span_rows(data: memoryview, spans: list[Span]) -> list[Row]:
    rows = []
    for s in spans:
        leaf = s.path.rsplit(".", 1)[-1]
        value = _text(s.value) if leaf in ("magic", "name", "key", "bytes", "trailer_magic") else s.value
        rows.append(Row(s.offset, s.size, bytes(data[s.offset:s.offset + s.size]).hex(" ").upper(), s.path,
                        hexdump.describe(s.path, value, FORMATTERS)))
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
    rows = [Row(r.offset + start, r.size, r.hex, f"{label}.{r.field}", r.value)
            for r in hexdump.tensor_dump(bytes(data[start:end])).rows]
    try:
        _, placement = c.place(index)
    except HurrayDeclError:
        return rows
    for i, (s, t) in enumerate(placement.buffers):
        rows += raw_rows(data, s, t, f"{label}.buffer[{i}]", scan=False)
    return rows


def container_dump(data: Any) -> Dump:
    """Rows and verdict (level V) of a whole container file."""
    view = memoryview(data).cast("B")
    size = len(view)
    error: HurrayDeclError | None = None
    rows: list[Row] = []
    try:
        c = open_container(view)
    except HurrayDeclError as err:  # what can still be named: the header, and the trailer if there is one
        error = err
        rows, _ = _traced(FILE_HEADER, view, 0, min(size, HEADER_LENGTH), "header")
        if size >= MIN_FILE_SIZE:
            rows += _traced(TRAILER, view, size - TRAILER_LENGTH, size, "trailer", file_size=size,
                            file_flags=int.from_bytes(view[12:16], "little"), minor=view[9],
                            index_crc=lambda o, n: crc32c(view[o:o + n]))[0]
        return Dump(_tile(view, rows), error)
    try:
        c.validate()
    except HurrayDeclError as err:
        error = err
    rows, _ = _traced(FILE_HEADER, view, 0, HEADER_LENGTH, "header")
    for i in c.write_order():
        rows += _tensor_rows(c, view, i)
    t = c.trailer
    if t.has_kv:  # each entry traced over exactly its own bytes (sizes from the parsed values)
        part, p = _traced(KV_COUNT, view, t.kv_offset, t.kv_offset + KV_COUNT_LENGTH, "kv")
        rows += part
        for k, (key, value) in enumerate(c.kv.items()):
            end = p + 2 + len(key.encode("utf-8")) + 1 + value.size()
            part, p = _traced(KV_ENTRY, view, p, end, f"kv[{k}]")
            rows += part
    part, p = _traced(INDEX_COUNT, view, t.index_offset, t.index_offset + INDEX_COUNT_LENGTH, "index")
    rows += part
    for k, e in enumerate(c.entries):
        part, p = _traced(INDEX_ENTRY, view, p, p + ENTRY_FIXED + len(e.name.encode("utf-8")), f"index[{k}]")
        rows += part
    part, _ = _traced(TRAILER, view, size - TRAILER_LENGTH, size, "trailer", file_size=size,
                      file_flags=c.header.file_flags, minor=c.header.container_version_minor,
                      index_crc=lambda o, n: c.trailer.index_crc32c)
    rows += part
    return Dump(_tile(view, rows, gap="padding"), error)


def _tile(data: memoryview, rows: list[Row], gap: str = UNDECODED) -> list[Row]:
    """The rows in offset order, each byte covered once: overlaps dropped, gaps labelled."""
    out: list[Row] = []
    position = 0
    for row in sorted(rows, key=lambda r: (r.offset, -r.size)):
        if row.offset < position:
            continue
        out += raw_rows(data, position, row.offset, gap)
        out.append(row)
        position = row.offset + row.size
    return out + raw_rows(data, position, len(data), gap if position else UNDECODED)


__all__ = ["FORMATTERS", "container_dump", "raw_rows"]
