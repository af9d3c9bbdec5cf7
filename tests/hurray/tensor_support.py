"""Builders shared by the tensor-descriptor tests (test_tensor_*.py)."""

from __future__ import annotations

import json
import struct
from functools import lru_cache
from pathlib import Path
from typing import Any

from hurray_decl.tensor import BufferHandle, RowMajor, TensorDescriptor, read_tensor_descriptor, write_tensor_descriptor

REPO = Path(__file__).resolve().parents[2]
CONFORMANCE = REPO.parent / "shared" / "conformance" / "hurray"
"""The golden vectors, read in place from ../shared (never copied into the repository)."""


def manifest() -> list[dict[str, Any]]:
    return json.loads((CONFORMANCE / "manifest.json").read_text())["descriptors"]


def vector(name: str) -> bytes:
    return (CONFORMANCE / "descriptors" / name).read_bytes()


def handle(size: int = 0, **fields: Any) -> BufferHandle:
    return BufferHandle(byte_size=size, **fields)


def dense(type_tag: int = 0x03, shape: tuple[int, ...] = (3, 4), sizes: tuple[int, ...] | None = None,
          layout: Any = None, **fields: Any) -> TensorDescriptor:
    """A valid descriptor by default: row-major float32 [3, 4] with one 48-byte buffer."""
    if sizes is None:
        sizes = (48,)
    return TensorDescriptor(type_tag=type_tag, shape=shape, layout=layout or RowMajor(),
                            buffers=tuple(handle(s) for s in sizes), **fields)


def encode(d: TensorDescriptor, **kw: Any) -> bytes:
    return write_tensor_descriptor(d, **kw)


def roundtrip(d: TensorDescriptor, **kw: Any) -> TensorDescriptor:
    """Write, read and write again: the bytes must agree and the model must survive."""
    data = write_tensor_descriptor(d, **kw)
    back = read_tensor_descriptor(data, **kw)
    assert write_tensor_descriptor(back, **kw) == data
    assert back.model_copy(update={"descriptor_length": d.descriptor_length}) == d
    return back


def u8(v: int) -> bytes:
    return bytes([v])


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def u64(v: int) -> bytes:
    return struct.pack("<Q", v)


# ---------------------------------------------------------------- fields by name, never by offset
#
# Tests never state where a field sits: they ask the reader's own declaration. Names are dotted
# paths with indices as parts (``flags``, ``shape.1``, ``buffers.0.byte_size``, ``layout.nnz``,
# ``quantization.block_size``, ``statistics.value_stddev``); a name that is a prefix of fields
# (``layout``, ``buffers.1``, ``statistics``, ``shape``) stands for the bytes they cover together.


def _dotted(path: str) -> str:
    return path.replace("[", ".").replace("]", "")


@lru_cache(maxsize=256)
def _spans(data: bytes, permissive: bool) -> tuple[tuple[str, int, int], ...]:
    from hurray_decl.engine import SCHEMES
    from hurray_decl.tensor.reader import trace_tensor_descriptor
    from hurray_decl.trace import trace

    spans, _ = trace_tensor_descriptor(data, permissive=permissive)
    out = [(_dotted(s.path), s.offset, s.size) for s in spans]
    for s in spans:  # the quantization payload, field by field through its scheme's declaration
        row = SCHEMES.get(data[s.offset]) if s.path == "quantization" and s.size else None
        if row is not None and not any(name.startswith("quantization.") for name, _, _ in out):
            found, _ = trace(row.struct, data[s.offset:s.offset + min(s.size, row.length)], base=s.offset,
                             prefix="quantization")
            out += [(_dotted(f.path), f.offset, f.size) for f in found]
    return tuple(out)


def fields(data: bytes, *, permissive: bool = True) -> dict[str, tuple[int, int]]:
    """name -> (offset, size) of every field the reader reads in ``data``; for a refused input,
    the fields up to the one that stopped it."""
    return {name: (offset, size) for name, offset, size in _spans(bytes(data), permissive)}


@lru_cache(maxsize=1)
def _header_fields() -> dict[str, tuple[int, int]]:
    from hurray_decl.schema import field_offsets
    from hurray_decl.tensor.header import HEADER

    return field_offsets(HEADER)


def header_field(name: str) -> tuple[int, int]:
    """(offset, size) of a fixed-header field, from the header's declaration: the same in any
    bytes, read or not (for mutating arbitrary inputs without tracing each one)."""
    return _header_fields()[name]


def span(data: bytes, name: str, *, permissive: bool = True) -> tuple[int, int]:
    """(offset, size) of the field ``name``, or of the fields under it taken together. The fixed
    header's fields are found in any bytes, even where the reader stops before them."""
    known = fields(data, permissive=permissive)
    if name in known:
        return known[name]
    if name in _header_fields():
        return header_field(name)
    inside = [known[n] for n in known if n.startswith(name + ".")]
    assert inside, f"no field {name!r} in {sorted(known)}"
    start = min(offset for offset, _ in inside)
    return start, max(offset + size for offset, size in inside) - start


def at(data: bytes, name: str, *, permissive: bool = True) -> int:
    """Where the field ``name`` starts in the descriptor ``data``."""
    return span(data, name, permissive=permissive)[0]


def end(data: bytes, name: str, *, permissive: bool = True) -> int:
    """Where the field ``name`` ends (the offset of the byte after it)."""
    offset, size = span(data, name, permissive=permissive)
    return offset + size


def field_bytes(data: bytes, name: str) -> bytes:
    """The bytes of the field ``name``."""
    offset, size = span(data, name)
    return bytes(data[offset:offset + size])


def patch_field(data: bytes, name: str, value: int | bytes, *, permissive: bool = True) -> bytes:
    """``data`` with the field ``name`` overwritten: an int little-endian in the field's width, or
    bytes of exactly that width (anything else is an error, never a silent resize)."""
    offset, size = span(data, name, permissive=permissive)
    if offset + size > len(data):
        raise ValueError(f"the field {name!r} ends past the {len(data)} bytes given")
    if isinstance(value, int):
        if not 0 <= value < 1 << (8 * size):
            raise ValueError(f"{value} does not fit the {size}-byte field {name!r}")
        value = value.to_bytes(size, "little")
    if len(value) != size:
        raise ValueError(f"{len(value)} bytes for the {size}-byte field {name!r}")
    out = bytearray(data)
    out[offset:offset + size] = value
    return bytes(out)


def with_length(data: bytes) -> bytes:
    """``data`` with descriptor_length set to its actual size (after growing or shrinking it)."""
    return patch_field(data, "descriptor_length", len(data))
