"""Builders shared by the tensor-descriptor tests (test_tensor_*.py)."""

from __future__ import annotations

import json
import struct
from typing import Any

from hurray_decl.hurray.tensor import (
    BufferHandle,
    RowMajor,
    TensorDescriptor,
    read_tensor_descriptor,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.fields import HEADER_FIELDS, field_span, field_spans, with_field, with_length  # noqa: F401
from tests.paths import CONFORMANCE


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
# Tests never state where a field sits: they ask the reader's own declaration
# (hurray_decl.hurray.tensor.fields). Names are dotted paths with indices as parts (``flags``,
# ``shape.1``, ``buffers.0.byte_size``, ``layout.nnz``, ``quantization.block_size``); a name that
# is a prefix of fields (``layout``, ``buffers.1``, ``statistics``) stands for the bytes they
# cover together. A value of the wrong width is an error, never resized.


def fields(data: bytes, *, permissive: bool = True) -> dict[str, tuple[int, int]]:
    """name -> (offset, size) of every field the reader reads in ``data``; for a refused input,
    the fields up to the one that stopped it."""
    return field_spans(data, permissive=permissive)


def header_field(name: str) -> tuple[int, int]:
    """(offset, size) of a fixed-header field, from the header's declaration: the same in any
    bytes, read or not (for mutating arbitrary inputs without tracing each one)."""
    return HEADER_FIELDS[name]


def span(data: bytes, name: str, *, permissive: bool = True) -> tuple[int, int]:
    """(offset, size) of the field ``name``, or of the fields under it taken together."""
    return field_span(data, name, permissive=permissive)


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
    bytes of exactly that width."""
    return with_field(data, name, value, permissive=permissive)
