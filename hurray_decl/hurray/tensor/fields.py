"""Fields of a tensor descriptor by name, located by the reader's own declaration.

Whoever needs a field's position (mutant generators, the bundled invalid examples, tests)
asks here instead of stating an offset: :func:`field_spans` traces the descriptor as the reader
parses it (refused inputs too, up to the field that stopped the reader) and names every field
by a dotted path with indices as parts: ``flags``, ``shape.1``, ``buffers.0.byte_size``,
``layout.nnz``, ``quantization.block_size`` (the payload field by field, through its scheme's
declaration), ``statistics.value_stddev``. A name that is a prefix of fields (``layout``,
``buffers.1``, ``statistics``) stands for the bytes they cover together. The fixed header's
fields are found in any bytes, even where the reader stops before them.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import Any

from hurray_decl.declare.schema import field_offsets
from hurray_decl.errors import ArgumentError
from hurray_decl.hurray.tensor.header import HEADER
from hurray_decl.hurray.tensor.reader import trace_tensor_descriptor

HEADER_FIELDS: dict[str, tuple[int, int]] = field_offsets(HEADER)
"""name -> (offset, size) of the fixed header's fields, from its declaration."""


FLOAT_FORMATS = {2: "<e", 4: "<f", 8: "<d"}
"""struct formats of the IEEE binary16/32/64 fields, by width."""


def dotted(path: str) -> str:
    """A path as the hex dump writes it (``buffers[0].byte_size``) in this module's names
    (``buffers.0.byte_size``)."""
    return path.replace("[", ".").replace("]", "")


def packed(value: Any, size: int, name: str = "value", *, negative: bool = False) -> bytes:
    """``value`` as the ``size`` bytes of a field: bytes of exactly that size, a float in the
    IEEE format of that width, or an int little-endian; a negative int only with ``negative``
    (two's complement, for the signed fields such as strides)."""
    if isinstance(value, (bytes, bytearray)):
        if len(value) != size:
            raise ArgumentError("value", f"the field {name!r} is {size} bytes wide", actual=f"{len(value)} bytes",
                                expected=f"{size} bytes")
        return bytes(value)
    if isinstance(value, float):
        if size not in FLOAT_FORMATS:
            raise ArgumentError("value", f"the {size}-byte field {name!r} holds no float", actual=value,
                                expected="an int or bytes")
        return struct.pack(FLOAT_FORMATS[size], value)
    low, high = -(1 << (8 * size - 1)) if negative else 0, (1 << (8 * size)) - 1
    if not low <= value <= high:
        raise ArgumentError("value", f"does not fit the {size}-byte field {name!r}", actual=value,
                            expected=f"{low} .. {high}")
    return int(value).to_bytes(size, "little", signed=value < 0)


@lru_cache(maxsize=256)
def _spans(data: bytes, permissive: bool) -> tuple[tuple[str, int, int], ...]:
    """The fields of one traced parse, the quantization payload's included (the trace descends
    into it through its scheme's declaration)."""
    spans, _ = trace_tensor_descriptor(data, permissive=permissive)
    return tuple((dotted(s.path), s.offset, s.size) for s in spans)


def field_spans(data: bytes, *, permissive: bool = True) -> dict[str, tuple[int, int]]:
    """name -> (offset, size) of every field the reader reads in ``data``."""
    return {name: (offset, size) for name, offset, size in _spans(bytes(data), permissive)}


def field_span(data: bytes, name: str, *, permissive: bool = True) -> tuple[int, int]:
    """(offset, size) of the field ``name``, or of the fields under it taken together."""
    known = field_spans(data, permissive=permissive)
    if name in known:
        return known[name]
    if name in HEADER_FIELDS:
        return HEADER_FIELDS[name]
    inside = [known[n] for n in known if n.startswith(name + ".")]
    if not inside:
        raise ArgumentError("name", "no such field in this descriptor", actual=name, expected=", ".join(known))
    start = min(offset for offset, _ in inside)
    return start, max(offset + size for offset, size in inside) - start


def with_field(data: bytes, name: str, value: int | float | bytes, *, permissive: bool = True) -> bytes:
    """``data`` with the field ``name`` overwritten by ``value`` packed to the field's width
    (:func:`packed`; a value of another width is refused, never resized)."""
    offset, size = field_span(data, name, permissive=permissive)
    if offset + size > len(data):
        raise ArgumentError("data", f"the field {name!r} ends past the input", actual=f"{len(data)} bytes",
                            expected=f">= {offset + size} bytes")
    value = packed(value, size, name)
    out = bytearray(data)
    out[offset:offset + size] = value
    return bytes(out)


def with_length(data: bytes) -> bytes:
    """``data`` with descriptor_length set to its actual size (after growing or shrinking it)."""
    return with_field(data, "descriptor_length", len(data))


__all__ = ["HEADER_FIELDS", "dotted", "field_span", "field_spans", "packed", "with_field", "with_length"]
