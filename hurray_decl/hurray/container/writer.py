"""Writing a ``.hrry`` container in one forward pass (FILE-FORMAT.md § 11, HF-HDR-20).

:class:`ContainerWriter` writes the header first, each tensor as it is added (descriptor,
alignment padding, buffers), then the KV section, the index and the trailer; it never seeks
back, so it writes to pipes as well as files. Everything it writes goes through the same
declarations the reader parses, and it refuses whatever the reader would refuse: bad names
and keys, buffer lists that do not match the descriptor (HF-DATA-23), lengths that do not fit
their fields (HF-META-19), torn or badly nested composites, a count hint that turns out wrong.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, BinaryIO

import construct as cs
import numpy as np

from hurray_decl.declare.model import trusted
from hurray_decl.errors import ArgumentError, HurrayDeclError, RuleViolation
from hurray_decl.hurray.container.composite import CompositeWalk
from hurray_decl.hurray.container.crc import crc32c
from hurray_decl.hurray.container.declarations import (
    DESCRIPTOR_ALIGNMENT,
    ENTRY_FIXED,
    FILE_HEADER,
    HEADER_LENGTH,
    INDEX_COUNT,
    KV_COUNT,
    KV_ENTRY,
    TRAILER,
    U16_MAX,
    U32_MAX,
    UNKNOWN_COUNT,
    FileFlag,
    KVTag,
)
from hurray_decl.hurray.container.model import FileHeader, IndexEntry, KVValue, Trailer
from hurray_decl.hurray.container.reader import (
    ARRAY_HEAD,
    ENTRY_COLUMNS,
    ENTRY_FIELDS,
    FIXED_ITEMS,
    FIXED_STRUCTS,
    Container,
    Skipped,
    align,
    wire_struct,
)
from hurray_decl.hurray.tensor import TensorDescriptor, validate_buffers, write_tensor_descriptor

CHUNK = 1 << 24  # buffers and padding are written in slices of at most 16 MiB
WRITTEN = 1024
"""Descriptors whose bytes a writer keeps (:meth:`ContainerWriter._encoded`)."""


def _build(struct: cs.Construct, values: Any, where: str, **params: Any) -> bytes:
    try:
        return bytes(struct.build(values, **params))  # bytes already: construct is untyped
    except HurrayDeclError as err:
        raise err.rebased(0, where) from None
    except (cs.ConstructError, TypeError, KeyError, OverflowError) as exc:  # a value its field cannot hold
        raise RuleViolation("HF-HDR-02", f"the value does not fit its field: {exc}", path=where) from exc


def _name_bytes(name: Any, where: str, code_empty: str, code_utf8: str, code_long: str) -> bytes:
    if not isinstance(name, str):
        raise ArgumentError(where, "a name is a str", actual=type(name).__name__, expected="str")
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError:
        raise RuleViolation(code_utf8, "a name is not well-formed UTF-8 (lone surrogate)", path=where,
                            actual=repr(name)) from None
    if not raw:
        raise RuleViolation(code_empty, "a name is empty", path=where, actual="''", expected=">= 1 byte")
    if len(raw) > U16_MAX:
        raise RuleViolation(code_long, "a name longer than its u16 length", path=where, actual=len(raw),
                            expected=f"<= {U16_MAX} bytes")
    return raw


class ContainerWriter:
    """Write tensors, then :meth:`finish` with the KV metadata, to a binary ``stream``.

    ``sorted_index`` lists the index by name bytes and sets SORTED_INDEX; ``index_crc`` sets
    HAS_INDEX_CRC32C and writes the checksum (default, HF-DATA-01-S); ``kv_promised`` sets
    HAS_KV_METADATA, and :meth:`finish` then requires KV entries; ``tensor_count_hint`` is the
    number of tensors that will be written, or None for "unknown" (it is checked at finish).
    It writes container minor version 0, reserved bytes as zeros.
    """

    skipped: Skipped = Skipped()
    """What a newer minor's reader skips, written back: minor 0 and zeros here; :func:`rewrite`
    sets the opened file's."""

    def __init__(self, stream: BinaryIO, *, alignment: int = 4096, sorted_index: bool = False,
                 index_crc: bool = True, kv_promised: bool = False, tensor_count_hint: int | None = None,
                 first_descriptor_offset: int = HEADER_LENGTH) -> None:
        if not hasattr(stream, "write"):
            raise ArgumentError("stream", "a binary stream with write()", actual=type(stream).__name__)
        flags = (FileFlag.SORTED_INDEX * bool(sorted_index) | FileFlag.HAS_INDEX_CRC32C * bool(index_crc)
                 | FileFlag.HAS_KV_METADATA * bool(kv_promised))
        hint = UNKNOWN_COUNT if tensor_count_hint is None else tensor_count_hint
        self.header = FileHeader(container_version_minor=self.skipped.minor, file_flags=int(flags),
                                 data_buffer_alignment=alignment, first_descriptor_offset=first_descriptor_offset,
                                 tensor_count_hint=hint)
        self._start(stream, 0, ())
        header = {**self.header.to_wire(), "reserved": self.skipped.reserved,
                  "reserved_header": self.skipped.reserved_header}
        self._write(_build(FILE_HEADER, header, "file -> header"))  # header first (HF-HDR-20)
        self._pad_to(first_descriptor_offset)

    @classmethod
    def resumed(cls, stream: BinaryIO, header: FileHeader, position: int, entries: Sequence[IndexEntry] = (),
                skipped: Skipped | None = None) -> ContainerWriter:
        """A writer that goes on with a file whose header and tensors up to ``position`` (the
        end of its tensor region so far) are already written, ``entries`` being their index
        entries: it writes nothing of its own until :meth:`add` places further tensors there
        and :meth:`finish` writes the tail (KV, index, trailer) after them. ``stream`` takes
        the bytes that go from ``position`` on (an edit in place writes them into the file).
        The header's tensor_count_hint must be the count the file will hold (HF-HDR-16)."""
        writer = cls.__new__(cls)
        if skipped is not None:
            writer.skipped = skipped
        writer.header = header
        writer._start(stream, position, entries)
        return writer

    def _start(self, stream: BinaryIO, position: int, entries: Sequence[IndexEntry]) -> None:
        """The state of a writer at ``position`` of ``stream``, ``entries`` written before it."""
        self.stream, self.position = stream, position
        self.entries: list[IndexEntry] = list(entries)
        self.names: set[bytes] = {e.name.encode("utf-8") for e in self.entries}
        self.walk = CompositeWalk()
        self.finished = False
        self._written: dict[tuple[int, bool], tuple[TensorDescriptor, bytes]] = {}

    def _write(self, data: Any) -> None:
        view = memoryview(data).cast("B")
        for start in range(0, len(view), CHUNK):
            self.stream.write(view[start:start + CHUNK])
        self.position += len(view)

    def _pad_to(self, offset: int) -> None:
        """Zeros up to ``offset``, in slices of at most CHUNK bytes (never one allocation of the gap)."""
        if offset <= self.position:
            return
        zeros = bytes(min(CHUNK, offset - self.position))
        while offset - self.position > len(zeros):
            self._write(zeros)
        self._write(zeros[:offset - self.position])

    def add(self, name: str, descriptor: TensorDescriptor, buffers: Sequence[Any] = (), *,
            permissive: bool = False, head_padding: bool = False) -> IndexEntry:
        """Write one tensor now: its descriptor, then each buffer at its aligned offset.

        Composite members follow their head (pre-order); the buffers are checked against the
        descriptor first (HF-DATA-23) and by the tensor data rules, so nothing is written for a
        tensor the reader would refuse. A composite head gets no A padding (HF-DATA-09) unless
        ``head_padding`` asks for the reference writer's placement (DIFF-02), which readers
        accept (HF-DATA-10); only :func:`rewrite` of a file that has it uses it.
        """
        if self.finished:
            raise ArgumentError("add", "the container is already finished")
        where = f"file -> tensor {name!r}"
        raw = _name_bytes(name, where, "HF-IDX-11", "HF-IDX-12", "HF-IDX-08")
        if raw in self.names:
            raise RuleViolation("HF-IDX-13", "two tensors have the same name", path=where, actual=name)
        if not isinstance(descriptor, TensorDescriptor):
            raise ArgumentError("descriptor", "a TensorDescriptor", actual=type(descriptor).__name__)
        try:
            contents = [memoryview(b).cast("B") for b in buffers]
        except TypeError:
            raise ArgumentError("buffers", "a sequence of bytes-like objects") from None
        if len(contents) != len(descriptor.buffers):
            raise RuleViolation("HF-DATA-23", "one buffer per buffer-table entry", path=f"{where} -> buffers",
                                actual=len(contents), expected=len(descriptor.buffers))
        for i, (content, handle) in enumerate(zip(contents, descriptor.buffers)):
            if len(content) != handle.byte_size:
                raise RuleViolation("HF-DATA-23", "a buffer's length differs from its handle's byte_size",
                                    path=f"{where} -> buffers -> {i}", actual=len(content), expected=handle.byte_size)
        try:
            encoded = self._encoded(descriptor, permissive)
            validate_buffers(descriptor, contents, permissive=permissive)
        except HurrayDeclError as err:
            raise err.rebased(0, f"{where} -> descriptor") from None
        self.walk.item(name, descriptor)  # nesting and the composite's own checks, before writing
        a = self.header.data_buffer_alignment
        start = self.position
        self._write(encoded)
        end = self.position
        if contents:
            data_offset = align(end, a)
            for i, content in enumerate(contents):
                self._pad_to(align(self.position, a) if i else data_offset)
                self._write(content)
            data_length = self.position - data_offset
        else:  # a composite head: no A padding (HF-DATA-09)
            data_offset, data_length = (align(end, a) if head_padding else end), 0
            self._pad_to(data_offset)
        self._pad_to(align(self.position, DESCRIPTOR_ALIGNMENT))
        entry = trusted(IndexEntry, {"name": name, "descriptor_offset": start, "descriptor_length": len(encoded),
                                     "data_offset": data_offset, "data_length": data_length, "flags": 0})
        self.entries.append(entry)
        self.names.add(raw)
        return entry

    def _encoded(self, descriptor: TensorDescriptor, permissive: bool) -> bytes:
        """The descriptor's bytes, written once for each descriptor object added (a model is frozen,
        so the same object gives the same bytes: tensors of one kind share one descriptor)."""
        key = (id(descriptor), permissive)
        known = self._written.get(key)
        if known is not None and known[0] is descriptor:
            return known[1]
        encoded = write_tensor_descriptor(descriptor, permissive=permissive)
        if len(self._written) >= WRITTEN:
            self._written.clear()
        self._written[key] = (descriptor, encoded)
        return encoded

    def finish(self, kv: Mapping[str, Any] | None = None) -> Trailer:
        """Write the KV section (when ``kv`` has entries), the index and the trailer."""
        if self.finished:
            raise ArgumentError("finish", "the container is already finished")
        self.walk.finish()
        header = self.header
        if header.tensor_count_hint not in (UNKNOWN_COUNT, len(self.entries)):
            raise RuleViolation("HF-HDR-16", "tensor_count_hint differs from the tensors written",
                                path="file -> header -> tensor_count_hint", actual=header.tensor_count_hint,
                                expected=len(self.entries))
        kv_bytes = encode_kv(kv or {})
        if self.skipped.kv_section and not kv_bytes:  # a KV section without entries, kept as it was
            kv_bytes = _build(KV_COUNT, {"kv_count": 0}, "file -> kv")
        kv_bytes += self.skipped.kv_tail if kv_bytes else b""
        if header.has(FileFlag.HAS_KV_METADATA) and not kv_bytes:
            raise RuleViolation("HF-META-03", "HAS_KV_METADATA was promised but there is no KV entry",
                                path="file -> kv", expected="at least one KV entry")
        kv_offset = self.position if kv_bytes else 0
        self._write(kv_bytes)
        self._pad_to(align(self.position, DESCRIPTOR_ALIGNMENT))
        entries = self._index_order(self.entries)
        index = _build(INDEX_COUNT, {"index_entry_count": len(entries)}, "file -> index") + encode_entries(entries)
        index += self.skipped.index_tail
        index_offset = self.position
        self._write(index)
        crc = crc32c(index) if header.has(FileFlag.HAS_INDEX_CRC32C) else 0
        trailer = Trailer(index_offset=index_offset, index_length=len(index), kv_offset=kv_offset,
                          kv_length=len(kv_bytes), index_crc32c=crc)
        size = self.position + 40
        wire = {**trailer.to_wire(), "reserved": self.skipped.trailer_reserved}
        self._write(_build(TRAILER, wire, "file -> trailer", file_size=size, file_flags=header.file_flags,
                           minor=self.skipped.minor, index_crc=lambda o, n: crc))
        self.finished = True
        return trailer

    def _index_order(self, entries: list[IndexEntry]) -> list[IndexEntry]:
        """The index: by name bytes under SORTED_INDEX, else in write order."""
        if self.header.has(FileFlag.SORTED_INDEX):
            return sorted(entries, key=lambda e: e.name.encode("utf-8"))
        return entries


class _Rewriter(ContainerWriter):
    """A writer that writes back what the opened file's reader skipped, and its index order."""

    def __init__(self, stream: BinaryIO, container: Container, **options: Any) -> None:
        self.skipped = container.skipped
        self.order = {name: i for i, name in enumerate(container.names)}
        super().__init__(stream, **options)

    def _index_order(self, entries: list[IndexEntry]) -> list[IndexEntry]:
        return sorted(entries, key=lambda e: self.order[e.name])


def encode_entries(entries: Sequence[IndexEntry]) -> bytes:
    """The index entries as INDEX_ENTRY builds them one by one, built at once: each fixed-width
    field a NumPy column of the declaration's wire type (:data:`~.reader.ENTRY_COLUMNS`), the names'
    UTF-8 bytes joined, all placed by their offsets in one array. The entries are models, so every
    field is in its wire range; the names were checked when each tensor was added."""
    if not entries:
        return b""
    raws = [e.name.encode("utf-8") for e in entries]
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    sizes = lengths + ENTRY_FIXED
    starts = np.cumsum(sizes) - sizes
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    name_dtype = ENTRY_COLUMNS["name_length"]
    fields = np.empty(len(entries), dtype=np.dtype([(name, ENTRY_COLUMNS[name]) for name in ENTRY_COLUMNS]))
    fields["name_length"] = lengths
    for name in ENTRY_FIELDS:
        fields[name] = np.fromiter((getattr(e, name) for e in entries), dtype=ENTRY_COLUMNS[name], count=len(entries))
    record = fields.view(np.uint8).reshape(len(entries), fields.dtype.itemsize)
    head = name_dtype.itemsize
    total = int(lengths.sum())
    out[(starts[:, None] + np.arange(head)).reshape(-1)] = record[:, :head].reshape(-1)
    name_at = np.arange(total) + np.repeat(starts + head - (np.cumsum(lengths) - lengths), lengths)
    out[name_at] = np.frombuffer(b"".join(raws), dtype=np.uint8)
    tail = record.shape[1] - head
    out[((starts + head + lengths)[:, None] + np.arange(tail)).reshape(-1)] = record[:, head:].reshape(-1)
    return out.tobytes()


def encode_kv(kv: Mapping[str, Any]) -> bytes:
    """The KV section of ``kv`` (values are KVValue or plain Python values); b"" when empty.

    Sizes are computed from lengths before anything is encoded: a section over 2^32 - 1 bytes
    is refused without building it (HF-META-19).
    """
    if not isinstance(kv, Mapping):
        raise ArgumentError("kv", "a mapping of str keys to values", actual=type(kv).__name__)
    if not kv:
        return b""
    items = []
    total = 4
    for key, value in kv.items():
        where = f"file -> kv -> {key!r}"
        raw = _name_bytes(key, where, "HF-META-09", "HF-META-10", "HF-META-19")
        try:
            typed = KVValue.of(value)
        except HurrayDeclError as err:
            raise err.rebased(0, where) from None
        total += 2 + len(raw) + 1 + typed.size()
        items.append((raw, typed))
    if total > U32_MAX:
        raise RuleViolation("HF-META-19", "the KV section is longer than kv_length can say", path="file -> kv",
                            actual=total, expected=f"<= {U32_MAX} bytes")
    out = io.BytesIO()
    out.write(_build(KV_COUNT, {"kv_count": len(items)}, "file -> kv"))
    for raw, typed in items:
        out.write(_ENTRY_HEAD.pack(len(raw)) + raw + _TAG.pack(typed.tag))  # key_length, key, value_tag
        if typed.tag in _SCALAR:  # a fixed-width scalar: its wire number
            out.write(_SCALAR[typed.tag].pack(typed.value))
            continue
        if typed.tag != KVTag.ARRAY:  # a string or byte sequence: its length and bytes
            data = typed.value.encode("utf-8") if typed.tag == KVTag.STRING else bytes(typed.value)
            out.write(_LENGTH_FIELD.pack(len(data)) + data)
            continue
        out.write(_ARRAY_HEAD.pack(typed.array_tag, len(typed.value)))  # element_tag, count
        out.write(array_items(typed.array_tag, typed.value))
    return out.getvalue()


_LENGTH = np.dtype("<u4")  # a string's or byte sequence's u32 length (SCALAR_PAYLOADS)


_SCALAR = FIXED_STRUCTS
"""Each fixed-width scalar tag's wire number (the declaration's)."""
_LENGTH_FIELD = struct.Struct("<" + _LENGTH.char)
_ENTRY_HEAD = wire_struct(KV_ENTRY.subcons[0])
_TAG = wire_struct(KV_ENTRY.subcons[2])
_ARRAY_HEAD = wire_struct(*ARRAY_HEAD.subcons)
"""key_length; value_tag; an array's element_tag and count: the entry's fixed fields, packed at once."""


def array_items(tag: int, values: Sequence[Any]) -> bytes:
    """The items of a KV array of element ``tag`` (checked values, :class:`KVValue`), as
    ``ARRAY_PAYLOAD`` builds them: fixed-width elements as one NumPy array of the declaration's
    wire type, strings and byte sequences as their lengths and bytes joined in one pass."""
    if tag in FIXED_ITEMS:
        return np.asarray(values, dtype=FIXED_ITEMS[tag][0]).tobytes()
    raws = [v.encode("utf-8") for v in values] if tag == KVTag.STRING else [bytes(v) for v in values]
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    starts = np.cumsum(lengths + 4) - (lengths + 4)  # where each length field goes
    out = np.empty(int(lengths.sum()) + 4 * len(raws), dtype=np.uint8)
    text = np.ones(len(out), dtype=bool)
    text[(starts[:, None] + np.arange(4)).reshape(-1)] = False
    out[~text] = lengths.astype(_LENGTH).view(np.uint8)  # u32 little-endian, in element order
    out[text] = np.frombuffer(b"".join(raws), dtype=np.uint8)
    return out.tobytes()


def write_container(tensors: Iterable[tuple[str, TensorDescriptor, Sequence[Any]]], kv: Mapping[str, Any] | None = None,
                    **options: Any) -> bytes:
    """The bytes of a container holding ``tensors`` ((name, descriptor, buffers), in write
    order) and ``kv``; ``options`` are :class:`ContainerWriter`'s."""
    out = io.BytesIO()
    writer = ContainerWriter(out, **options)
    for name, descriptor, buffers in tensors:
        writer.add(name, descriptor, buffers)
    writer.finish(kv)
    return out.getvalue()


def rewrite(container: Container, stream: BinaryIO | None = None, *, canonical: bool = False) -> bytes | None:
    """Write ``container`` again with this writer: same header options, tensors in write order,
    the same KV values and index order, and what a reader of a newer minor version skipped
    (the minor itself, reserved bytes, bytes left inside the index and KV sections), so that a
    valid file comes back byte for byte. ``canonical=True`` writes every composite head at the
    spec placement (HF-DATA-09) even where the file had the reference writer's A padding.

    The file's layout is checked first (level V; the data rules as each tensor is written), so
    a file that is not valid is refused with its rule before anything is written, and nothing
    is padded up to an offset the file claims but does not hold."""
    container.validate(data=False)
    h = container.header
    out = stream if stream is not None else io.BytesIO()
    writer = _Rewriter(
        out, container, alignment=h.data_buffer_alignment, sorted_index=h.has(FileFlag.SORTED_INDEX),
        index_crc=h.has(FileFlag.HAS_INDEX_CRC32C), kv_promised=h.has(FileFlag.HAS_KV_METADATA),
        tensor_count_hint=None if h.tensor_count_hint == UNKNOWN_COUNT else h.tensor_count_hint,
        first_descriptor_offset=h.first_descriptor_offset)
    for tensor in container.tensors():
        padded = not tensor.buffers and tensor.entry.data_offset != tensor.placement.descriptor_end
        writer.add(tensor.name, tensor.descriptor, tensor.buffers, permissive=container.permissive,
                   head_padding=padded and not canonical)
    writer.finish(container.kv)
    return out.getvalue() if stream is None and isinstance(out, io.BytesIO) else None


__all__ = ["ContainerWriter", "array_items", "encode_kv", "rewrite", "write_container"]
