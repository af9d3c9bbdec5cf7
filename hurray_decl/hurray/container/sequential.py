"""The optional sequential mode (FILE-FORMAT.md § 9.2): a file read front to back from a
stream that cannot seek, every boundary found by offset arithmetic (HF-DATA-24).

With a known ``tensor_count_hint`` the tensors are yielded as they arrive and, at the end of
the file, the running offset must equal kv_offset (or index_offset without KV) (HF-DATA-25,
way 2). With "unknown", the rest of the file is read first and the trailer's offsets end the
region (ways 3 then 1): the last 40 bytes are never taken for tensor data. The random-access
reader (:func:`~.reader.open_container`) is the preferred path (HF-HDR-01-S); it alone reads a
composite head the reference writer padded to A (DIFF-02), since only the index says where
that head's members start.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from hurray_decl.declare.schema import field_offsets
from hurray_decl.errors import HurrayDeclError, RuleViolation, TruncatedError
from hurray_decl.hurray.container.crc import crc32c
from hurray_decl.hurray.container.declarations import (
    DESCRIPTOR_ALIGNMENT,
    FILE_HEADER,
    HEADER_LENGTH,
    TRAILER,
    TRAILER_LENGTH,
    UNKNOWN_COUNT,
)
from hurray_decl.hurray.container.model import FileHeader, Trailer
from hurray_decl.hurray.container.reader import COUNT_HINT_OFFSET, align, parse_at
from hurray_decl.hurray.tensor import TensorDescriptor, read_tensor_descriptor
from hurray_decl.hurray.tensor.header import PREAMBLE, PREAMBLE_LENGTH

DESCRIPTOR_LENGTH = field_offsets(PREAMBLE)["descriptor_length"]
"""(offset, size) of a descriptor's descriptor_length, from the tensor preamble's declaration."""

CHUNK = 1 << 20


class _Stream:
    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.position = 0

    def read(self, count: int, where: str) -> bytes:
        """``count`` bytes, read in chunks: a size claimed by the file is never allocated at once."""
        parts, left = [], count
        while left:
            part = self.stream.read(min(left, CHUNK))
            if not part:
                break
            parts.append(part)
            left -= len(part)
        data = b"".join(parts)
        if len(data) != count:
            raise TruncatedError("HF-DATA-24", "the stream ends inside a tensor", path=where,
                                 offset=self.position + len(data), actual=f"{len(data)} bytes",
                                 expected=f"{count} bytes")
        self.position += count
        return data


def read_sequential(stream: BinaryIO) -> Iterator[tuple[TensorDescriptor, tuple[bytes, ...]]]:
    """Yield (descriptor, buffer contents) in write order from a forward-only ``stream``."""
    s = _Stream(stream)
    head = s.read(HEADER_LENGTH, "file -> header")
    header = FileHeader.from_wire(parse_at(FILE_HEADER, memoryview(head), 0, HEADER_LENGTH, "file -> header",
                                           "HF-HDR-18")[0])
    s.read(header.first_descriptor_offset - HEADER_LENGTH, "file -> padding")
    if header.tensor_count_hint == UNKNOWN_COUNT:  # way 3: the end of the file gives the trailer
        rest = stream.read()
        trailer = _trailer(rest, s.position + len(rest), header)
        region = (trailer.kv_offset if trailer.has_kv else trailer.index_offset) - s.position
        body = _Buffered(rest[:max(region, 0)], s.position)
        while body.position < body.end:
            yield _one(body, header)
        return
    for _ in range(header.tensor_count_hint):  # way 2: after the hinted count, the region must end
        yield _one(s, header)
    rest = stream.read()
    trailer = _trailer(rest, s.position + len(rest), header)
    end = trailer.kv_offset if trailer.has_kv else trailer.index_offset
    if s.position != end:
        raise RuleViolation("HF-DATA-25", "after tensor_count_hint tensors the offset is not where the region ends",
                            path="file -> header -> tensor_count_hint", offset=COUNT_HINT_OFFSET, actual=s.position,
                            expected=end)


class _Buffered(_Stream):
    def __init__(self, data: bytes, start: int) -> None:
        self.data, self.start, self.position = data, start, start
        self.end = start + len(data)

    def read(self, count: int, where: str) -> bytes:
        if self.position + count > self.end:
            raise TruncatedError("HF-DATA-25", "a tensor reaches past the end of the tensor region", path=where,
                                 offset=self.end, actual=f"{self.end - self.position} bytes", expected=f"{count} bytes")
        out = self.data[self.position - self.start:self.position - self.start + count]
        self.position += count
        return out


def _trailer(rest: bytes, size: int, header: FileHeader) -> Trailer:
    """The trailer from the last 40 bytes; ``rest`` is the file's tail from ``size - len(rest)``."""
    if len(rest) < TRAILER_LENGTH:
        raise TruncatedError("HF-DATA-25", "the stream ends before the trailer", path="file", offset=size)
    first = size - len(rest)

    def index_crc(offset: int, length: int) -> int:
        return crc32c(rest[offset - first:offset - first + length]) if offset >= first else -1

    wire, _ = parse_at(TRAILER, memoryview(rest), len(rest) - TRAILER_LENGTH, len(rest), "file -> trailer",
                       "HF-HDR-18", file_size=size, file_flags=header.file_flags,
                       minor=header.container_version_minor, index_crc=index_crc)
    return Trailer.from_wire(wire)


def _one(s: _Stream, header: FileHeader) -> tuple[TensorDescriptor, tuple[bytes, ...]]:
    start = s.position
    preamble = s.read(PREAMBLE_LENGTH, "file -> descriptor")
    at, width = DESCRIPTOR_LENGTH
    length = int.from_bytes(preamble[at:at + width], "little")
    raw = preamble + s.read(max(length - PREAMBLE_LENGTH, 0), "file -> descriptor")
    try:
        descriptor = read_tensor_descriptor(raw)
    except HurrayDeclError as err:
        raise err.rebased(start, "file -> descriptor") from None
    a = header.data_buffer_alignment
    buffers = []
    for i, handle in enumerate(descriptor.buffers):
        s.read(align(s.position, a) - s.position, "file -> padding")
        buffers.append(s.read(handle.byte_size, f"file -> descriptor -> buffers -> {i}"))
    s.read(align(s.position, DESCRIPTOR_ALIGNMENT) - s.position, "file -> padding")
    return descriptor, tuple(buffers)


__all__ = ["read_sequential"]
