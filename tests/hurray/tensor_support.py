"""Builders shared by the tensor-descriptor tests (test_tensor_*.py)."""

from __future__ import annotations

import json
import struct
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


def patch(data: bytes, offset: int, value: bytes) -> bytes:
    """``data`` with ``value`` written over it at ``offset``."""
    out = bytearray(data)
    out[offset:offset + len(value)] = value
    return bytes(out)


def u8(v: int) -> bytes:
    return bytes([v])


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def u64(v: int) -> bytes:
    return struct.pack("<Q", v)


def field_offset(data: bytes, path: str) -> int:
    """Where the field ``path`` (the hex dump's name: ``buffers[0].byte_size``) sits in ``data``,
    as the reader's own declaration traces it."""
    from hurray_decl.tensor.reader import trace_tensor_descriptor

    spans, _ = trace_tensor_descriptor(data, permissive=True)
    found = [span.offset for span in spans if span.path == path]
    assert found, f"no field {path!r} in {[span.path for span in spans]}"
    return found[0]


def layout_start(rank: int) -> int:
    """Offset of the layout fields: fixed header, shape, byte_offset."""
    return 20 + 8 * rank + 8


def with_length(data: bytes) -> bytes:
    """``data`` with descriptor_length set to its actual size (after growing or shrinking it)."""
    return patch(data, 6, u32(len(data)))
