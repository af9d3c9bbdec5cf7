"""Reading a whole tensor descriptor (DIGEST § 5, Appendix A)."""

from __future__ import annotations

import io
from typing import Any

import construct as cs

from ..engine import SCHEMES, decode_quantization
from ..errors import HurrayDeclError, RuleViolation, TruncatedError
from ..schema import field_offsets
from ..trace import Span, trace
from .buffers import BUFFER_COUNT, HANDLE, BufferHandle
from .context import (
    TensorContext,
    check_buffer_table,
    check_composite_member,
    check_descriptor,
    check_extension_flag,
    check_extents,
    check_layout_rank,
    check_quantization,
    check_scalar,
    check_shard,
    check_statistics,
)
from .header import HEADER, HEADER_LENGTH, PREAMBLE, PREAMBLE_LENGTH, Flag, core
from .layouts import CompositeHead, OpaqueLayout, layout_row
from .model import TensorDescriptor
from .sections import (
    COMPOSITE_MEMBER,
    EXTENSION_TYPE,
    QUANTIZATION_LENGTH,
    STATISTICS,
    CompositeMember,
    ExtensionType,
    Shard,
    Statistics,
    shard_fields,
)

_QLEN = cs.Struct(QUANTIZATION_LENGTH)


class _Reader:
    """Parses sections in wire order from the descriptor's own bytes, recording positions."""

    def __init__(self, view: bytes, permissive: bool, spans: list[Span] | None = None) -> None:
        self.view = view
        self.stream = io.BytesIO(view)
        self.permissive = permissive
        self.positions: dict[str, int] = {}
        self.spans = spans  # when a list: every field read is recorded there (for hex dumps)

    @property
    def pos(self) -> int:
        return self.stream.tell()

    def parse(self, struct: cs.Construct, where: str, rule: str) -> Any:
        start = self.pos
        self.positions.setdefault(where, start)
        for name, (offset, _) in field_offsets(struct).items():
            self.positions[f"{where} -> {name}"] = start + offset
        if self.spans is not None:
            found, _ = trace(struct, self.view[start:], base=start, prefix=dotted(where),
                             params={"permissive": self.permissive})
            self.spans.extend(found)
        try:
            value = struct.parse_stream(self.stream, permissive=self.permissive)
        except HurrayDeclError as err:
            raise err.rebased(0, where) from None
        except cs.StreamError as exc:
            raise TruncatedError(
                "HT-HDR-08", "a section ends past descriptor_length", path=where, offset=len(self.view),
                actual=f"{len(self.view)} bytes", expected="more bytes inside descriptor_length",
            ) from exc
        except cs.ConstructError as exc:
            raise RuleViolation(rule, f"cannot read this section: {exc}", path=where, offset=start) from exc
        for name, (offset, size) in field_offsets(struct).items():  # elements of fixed-size arrays
            items = value.get(name) if isinstance(value, dict) else None
            if isinstance(items, list) and items and size > 0:
                for index in range(len(items)):
                    self.positions[f"{where} -> {name} -> {index}"] = start + offset + index * (size // len(items))
        return value

    def take(self, count: int, where: str) -> bytes:
        start = self.pos
        if count > len(self.view) - start:
            raise TruncatedError(
                "HT-HDR-08", "a section ends past descriptor_length", path=where, offset=len(self.view),
                actual=f"{len(self.view) - start} bytes left", expected=f"{count} bytes",
            )
        self.positions[where] = start
        if self.spans is not None and count:
            self.spans.append(Span(start, count, dotted(where), self.view[start:start + count]))
        return self.stream.read(count)

    def locate(self, err: HurrayDeclError) -> HurrayDeclError:
        """Give a context error the offset of the field its path names (longest known prefix)."""
        parts = err.path.split(" -> ")
        for end in range(len(parts), 0, -1):
            key = " -> ".join(parts[:end])
            if key in self.positions:
                return err.located(self.positions[key])
        return err


def dotted(where: str) -> str:
    """``descriptor -> buffers -> 0 -> byte_size`` as the hex dump names it: ``buffers[0].byte_size``."""
    out = ""
    for part in where.split(" -> ")[1:]:
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out


def read_tensor_descriptor(data: bytes, *, permissive: bool = False) -> TensorDescriptor:
    """Decode and validate one tensor descriptor from the start of ``data``.

    Only the first ``descriptor_length`` bytes are read; bytes after them belong to whatever
    follows (HT-HDR-10). Every rule that needs no buffer contents is checked here, the
    quantization payload included (HD-16); :func:`validate_buffers` checks the rest.
    """
    return _read_from(data, permissive, None)


def trace_tensor_descriptor(data: bytes, *, permissive: bool = False) -> tuple[list[Span], HurrayDeclError | None]:
    """The byte spans of every field the reader reads, and the error that stopped it, if any."""
    spans: list[Span] = []
    try:
        _read_from(data, permissive, spans)
    except HurrayDeclError as err:
        if not spans:  # refused before the sections were read: label what the header holds
            spans, _ = trace(HEADER, bytes(data[:HEADER_LENGTH]), params={"permissive": permissive})
        return spans, err
    return spans, None


def _read_from(data: bytes, permissive: bool, spans: list[Span] | None) -> TensorDescriptor:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise RuleViolation("HT-HDR-02", "a descriptor is read from bytes", path="descriptor",
                            actual=type(data).__name__, expected="bytes")
    raw = bytes(data[:PREAMBLE_LENGTH])
    if len(raw) < PREAMBLE_LENGTH:
        raise TruncatedError("HT-HDR-08", "the input ends inside the fixed header", path="descriptor",
                             offset=len(raw), actual=f"{len(raw)} bytes", expected=f">= {PREAMBLE_LENGTH} bytes")
    length = _Reader(raw, permissive).parse(PREAMBLE, "descriptor", "HT-HDR-03").descriptor_length
    # Fields are read from the first descriptor_length bytes; an input that ends sooner is
    # refused where a field runs out, or after the last section (Appendix A).
    r = _Reader(bytes(data[:length]), permissive, spans)
    try:
        return _read(r, length)
    except HurrayDeclError as err:
        raise r.locate(err) from None


def _read(r: _Reader, length: int) -> TensorDescriptor:
    header = r.parse(HEADER, "descriptor", "HT-HDR-03")  # Appendix A steps 1-8
    rank = header.rank
    tag = header.layout_tag
    shape_part = r.parse(core(rank), "descriptor", "HT-HDR-03")  # step 9
    for k in range(rank):
        r.positions[f"descriptor -> shape -> {k}"] = HEADER_LENGTH + 8 * k
    values: dict[str, Any] = dict(
        version_major=header.version_major, version_minor=header.version_minor,
        descriptor_length=header.descriptor_length, flags=header.flags, type_tag=header.type_tag,
        layout_tag=tag, shape=tuple(shape_part.shape), byte_offset=shape_part.byte_offset,
    )
    try:
        row = layout_row(tag)
    except KeyError:
        row = None
    if row is None:  # permissive only: where the layout fields end is unknowable (HT-HDR-17)
        payload = r.take(length - r.pos, "descriptor -> layout")
        descriptor = TensorDescriptor.parsed({**values, "layout": OpaqueLayout.parsed({"payload": payload})})
        check_descriptor(descriptor, permissive=True)
        return descriptor
    check_scalar(rank, tag)  # step 10: a scalar's layout, the layout fields, the rank they need
    wire = r.parse(row.struct(rank), "descriptor -> layout", row.model.rule)
    layout = row.model.from_wire(wire)
    check_layout_rank(row, rank)
    flags = header.flags
    check_extension_flag(header.type_tag, flags)  # step 11

    count = r.parse(cs.Struct(BUFFER_COUNT), "descriptor", "HT-BUFT-01").buffer_count  # step 12
    check_buffer_table(layout, count, shape_part.byte_offset)
    handles = []
    for i in range(count):
        handle = r.parse(HANDLE, f"descriptor -> buffers -> {i}", "HT-BUFT-01")
        handles.append(BufferHandle.from_wire(handle))
    values.update(layout=layout, buffers=tuple(handles))

    if flags & Flag.HAS_QUANTIZATION:  # step 13
        qlen = r.parse(_QLEN, "descriptor", "HT-SEC-01").quantization_length
        start = r.pos
        payload = r.take(qlen, "descriptor -> quantization")
        if isinstance(layout, CompositeHead):
            raise RuleViolation("HT-LAY-76", "a composite head is never quantized", path="descriptor -> flags",
                                offset=10, actual=f"0x{flags:08X}", expected="HAS_QUANTIZATION clear")
        try:
            values["quantization"] = decode_quantization(payload, permissive=r.permissive)
        except HurrayDeclError as err:
            raise err.rebased(start, "descriptor -> quantization") from None
        qrow = SCHEMES.get(payload[0])
        if qrow is not None:
            for name, (offset, _) in qrow.offsets.items():
                r.positions[f"descriptor -> quantization -> {name}"] = start + offset
    t = TensorContext(TensorDescriptor.model_construct(**values), r.permissive)
    check_quantization(t)
    if flags & Flag.HAS_SHARD:  # step 14
        shard = r.parse(cs.Struct(*shard_fields(rank)), "descriptor -> shard", "HT-SEC-03")
        values["shard"] = Shard.from_wire(shard)
        for k in range(rank):
            base = r.positions["descriptor -> shard"]
            r.positions[f"descriptor -> shard -> parent_shape -> {k}"] = base + 8 * k
            r.positions[f"descriptor -> shard -> shard_offset -> {k}"] = base + 8 * (rank + k)
        check_shard(t, values["shard"])
    if flags & Flag.HAS_STATISTICS:  # step 15
        values["statistics"] = Statistics.from_wire(r.parse(STATISTICS, "descriptor -> statistics", "HT-SEC-08"))
        check_statistics(t, values["statistics"])
    if flags & Flag.HAS_EXTENSION_TYPE:  # step 16
        values["extension_type"] = ExtensionType.from_wire(
            r.parse(EXTENSION_TYPE, "descriptor -> extension_type", "HT-SEC-21"))
    if flags & Flag.HAS_COMPOSITE_MEMBER:  # step 17
        values["composite_member"] = CompositeMember.from_wire(
            r.parse(COMPOSITE_MEMBER, "descriptor -> composite_member", "HT-SEC-35"))
        check_composite_member(layout, values["composite_member"], flags)

    rest = len(r.view) - r.pos  # step 18
    if len(r.view) < length:
        raise TruncatedError("HT-HDR-08", "the input is shorter than descriptor_length", path="descriptor",
                             offset=len(r.view), actual=f"{len(r.view)} bytes", expected=f"{length} bytes")
    if rest:
        if header.version_minor == 0:
            raise RuleViolation(
                "HT-HDR-09", "descriptor_length disagrees with the sections it holds",
                path="descriptor -> descriptor_length", offset=6, actual=header.descriptor_length,
                expected=r.pos,
            )
        values["trailing"] = r.take(rest, "descriptor -> trailing")  # newer minor: skipped (HT-HDR-11)
    descriptor = TensorDescriptor.parsed(values)
    t.d = descriptor
    check_extents(t)
    return descriptor


def field_positions(data: bytes, *, permissive: bool = False) -> dict[str, int]:
    """The byte offset of every field the reader parses in the descriptor ``data`` (which it must
    accept), keyed by error path: ``descriptor -> buffers -> 0 -> byte_size``."""
    length = skip_descriptor(data)
    r = _Reader(bytes(data[:length]), permissive)
    _read(r, length)
    return r.positions


def skip_descriptor(data: bytes) -> int:
    """The length of the descriptor at the start of ``data``, from its first 10 bytes (HT-HDR-10)."""
    raw = bytes(data[:PREAMBLE_LENGTH])
    if len(raw) < PREAMBLE_LENGTH:
        raise TruncatedError("HT-HDR-08", "the input ends inside the fixed header", path="descriptor",
                             offset=len(raw))
    return _Reader(raw, False).parse(PREAMBLE, "descriptor", "HT-HDR-03").descriptor_length


__all__ = ["field_positions", "read_tensor_descriptor", "skip_descriptor", "trace_tensor_descriptor"]
