"""Annotated hex dumps: every byte of a descriptor named by the declaration that reads it.

Rows come from :func:`hurray_decl.declare.trace.trace` over the same Construct declarations the codec
uses; the verdict comes from the codec itself, so the dump and the decoder never disagree.
For an invalid input the rows run up to the failing field, which carries the rule code, and
the bytes after it follow as undecoded rows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hurray_decl.declare.schema import NONE32
from hurray_decl.declare.trace import Span, parse_tree, spans_of
from hurray_decl.dump.render import FORMATS, render
from hurray_decl.dump.rows import (
    BEYOND,
    HEX_SHOWN,
    ITEMS_SHOWN,
    UNDECODED,
    Dump,
    Row,
    hex_shown,
    raw_rows,
    shorten,
    typed,
)
from hurray_decl.hurray import quantization
from hurray_decl.hurray.tables.codes import Code, Device, Flag, MemoryClass, SyncMode
from hurray_decl.hurray.tables.element_types import BY_TAG
from hurray_decl.hurray.tables.tags import tag_range
from hurray_decl.hurray.tensor.header import PREAMBLE_LENGTH
from hurray_decl.hurray.tensor.layouts import LAYOUTS
from hurray_decl.hurray.tensor.reader import skip_descriptor, trace_tensor_descriptor


def _scheme_tag(value: int) -> str:
    row = quantization.SCHEMES.get(value)
    return f"0x{value:02X} ({row.title if row else tag_range(value).cls.value})"


def _type_tag(value: int) -> str:
    known = BY_TAG.get(value)
    return f"0x{value:02X} ({known.name if known else 'unassigned'})"


def _named(table: dict[int, str] | type[Code], width: int = 2) -> Callable[[int], str]:
    """``0x01 (CUDA)``: the code and, when it has one, its title (from an enum or a row table)."""
    if isinstance(table, type):
        table = {int(member): member.title for member in table}
    names = table
    return lambda value: f"0x{value:0{width}X}" + (f" ({names[value]})" if value in names else "")


def _tensor_flags(value: int) -> str:
    names = [flag.name for flag in Flag if value & flag and flag.name]
    return f"0x{value:08X}" + (f" ({', '.join(names)})" if names else "")


QUANTIZATION_FORMATTERS: dict[str, Callable[[int], str]] = {
    "scheme_tag": _scheme_tag,
    "scale_type_tag": _type_tag,
    "flags": lambda v: f"0x{v:04X}",
}
"""How a quantization payload field reads, by field name."""

TENSOR_FORMATTERS: dict[str, Callable[[int], str]] = {
    "flags": _tensor_flags,
    "type_tag": _type_tag,
    "layout_tag": _named({row.tag: row.title for row in LAYOUTS}),
    "device_tag": _named(Device),
    "sync_mode": _named(SyncMode),
    "memory_class": _named(MemoryClass),
}
"""How a tensor descriptor field reads, by field name (the last part of its path)."""


def describe(field: str, value: Any, formatters: dict[str, Callable[[int], str]] = QUANTIZATION_FORMATTERS) -> str:
    """The value column's text for one field: at most HEX_SHOWN bytes of a byte field and
    ITEMS_SHOWN elements of a list, the rest counted."""
    name = field.rsplit(".", 1)[-1].split("[", 1)[0]
    if isinstance(value, (bytes, bytearray, memoryview)):
        shown = bytes(value[:HEX_SHOWN]).hex(" ").upper() or "(empty)"
        return shown + (f" … (+{len(value) - HEX_SHOWN} bytes)" if len(value) > HEX_SHOWN else "")
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    if isinstance(value, int):
        if name.endswith("_buffer_index") and value == NONE32:
            return "none (0xFFFFFFFF)"
        if name in formatters:
            return formatters[name](value)
    if isinstance(value, (list, tuple)):
        items = [describe(field, v, formatters) for v in value[:ITEMS_SHOWN]]
        if len(value) > ITEMS_SHOWN:
            items.append(f"… (+{len(value) - ITEMS_SHOWN})")
        return "[" + ", ".join(items) + "]"
    return shorten(str(value))


_RESERVED = re.compile(r"(?:^|(?<=\.))(reserved\d*)(?=$|[.\[])")


def spec_name(path: str) -> str:
    """``path`` with its fields named as the spec tables write them: reserved bytes are ``_reserved``."""
    return _RESERVED.sub(r"_\1", path)


def _rows(data: bytes, spans: list[Span], start: int, end: int,
          formatters: dict[str, Callable[[int], str]] = QUANTIZATION_FORMATTERS, label: str = UNDECODED) -> list[Row]:
    rows = [
        Row(s.offset, s.size, hex_shown(data, s.offset, s.offset + s.size), spec_name(s.path),
            describe(s.path, s.value, formatters), *typed(s.value))
        for s in spans
    ]
    position = max([start] + [s.offset + s.size for s in spans])
    return rows + raw_rows(data, position, end, label)


def quantization_dump(data: bytes, *, permissive: bool = False, base: int = 0, prefix: str = "") -> Dump:
    """Rows and verdict for a bare quantization payload, from one traced parse of it."""
    data = bytes(data)
    root, _, error = parse_tree(quantization.PAYLOAD, data, params={"permissive": permissive})
    rows = _rows(data, spans_of(root, prefix=prefix), 0, len(data))
    if base:
        rows = [replace(r, offset=r.offset + base) for r in rows]
        if error is not None:
            error = error.rebased(base, "descriptor -> quantization")
    return Dump(rows, error)


def tensor_dump(data: bytes, *, permissive: bool = False) -> Dump:
    """Rows and verdict for a tensor descriptor, from one traced parse; its quantization
    payload is named field by field by its scheme's declaration, inside that parse."""
    data = bytes(data)
    spans, error = trace_tensor_descriptor(data, permissive=permissive)
    rows: list[Row] = []
    position = 0
    payload_end = None  # the end of the quantization payload while its fields are dumped
    for span in spans:
        inside = span.path.startswith("quantization.")
        if payload_end is not None and not inside:
            rows += raw_rows(data, position, payload_end, UNDECODED)  # payload bytes no field covers
            position, payload_end = max(position, payload_end), None
        if inside:
            rows += _rows(data, [span], span.offset, span.offset)
            if payload_end is None:
                payload_end = _payload_end(spans, span)
        else:
            rows += _rows(data, [span], span.offset, span.offset, TENSOR_FORMATTERS)
        position = span.offset + span.size
    if payload_end is not None:
        rows += raw_rows(data, position, payload_end, UNDECODED)
        position = max(position, payload_end)
    end = len(data)
    if error is None and len(data) >= PREAMBLE_LENGTH:  # valid: what follows descriptor_length is not ours
        end = min(len(data), skip_descriptor(data))
    rows += raw_rows(data, position, end, UNDECODED) + raw_rows(data, end, len(data), BEYOND)
    return Dump(rows, error)


def _payload_end(spans: list[Span], first: Span) -> int:
    """Where the payload whose first field is ``first`` ends: quantization_length bytes after
    its length prefix (the span just before the payload)."""
    for span in spans:
        if span.path == "quantization_length" and span.offset + span.size == first.offset:
            return first.offset + int(span.value)
    return first.offset


def dump(data: bytes, *, kind: str = "tensor", permissive: bool = False) -> Dump:
    """Rows and verdict of a descriptor (``kind="quantization"`` for a bare payload)."""
    if kind == "quantization":
        return quantization_dump(data, permissive=permissive)
    if kind == "tensor":
        return tensor_dump(data, permissive=permissive)
    raise ValueError(f"kind must be 'tensor' or 'quantization', not {kind!r}")


def hexdump(data: bytes, *, kind: str = "tensor", format: str = "text", permissive: bool = False) -> str:
    """The annotated hex dump of a descriptor as text, Markdown, JSON or HTML."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    return render(dump(data, kind=kind, permissive=permissive), format)
