"""Writing a tensor descriptor: the same declarations as the reader, built instead of parsed,
after the same context checks, so that nothing the reader refuses is ever emitted."""

from __future__ import annotations

from typing import Any

import construct as cs

from ..engine import encode_quantization
from ..errors import HurrayDeclError, RuleViolation
from .buffers import HANDLE, MAX_BUFFERS
from .context import check_descriptor
from .header import HEADER, HEADER_LENGTH, MAGIC, core
from .layouts import OpaqueLayout, PrivateLayout, row_of
from .model import TensorDescriptor
from .sections import COMPOSITE_MEMBER, EXTENSION_TYPE, QUANTIZATION_LENGTH, STATISTICS, shard_fields

_QLEN = cs.Struct(QUANTIZATION_LENGTH)


def _build(struct: cs.Construct, values: Any, where: str, rule: str, permissive: bool) -> bytes:
    try:
        return struct.build(values, permissive=permissive)
    except HurrayDeclError as err:
        raise err.rebased(0, where) from None
    except (cs.ConstructError, TypeError, KeyError) as exc:
        raise RuleViolation(rule, f"the values do not fit the encoding: {exc}", path=where) from exc


def write_tensor_descriptor(descriptor: TensorDescriptor, *, permissive: bool = False,
                            writer_rules: bool = False) -> bytes:
    """Encode ``descriptor`` byte-exactly, refusing anything :func:`read_tensor_descriptor` refuses.

    Whatever the reader accepts in a mode, the writer writes back byte for byte in that mode:
    a newer minor version with its trailing bytes, writer padding, over-sized sparse arrays.
    ``permissive=True`` is needed to write back a descriptor read in permissive mode (an
    unrecognised layout, scheme or private id); its opaque parts are written as they were read.

    ``writer_rules=True`` also applies the rules RULES.md gives writers alone, for a descriptor
    you made rather than read: version 1.0 (HT-HDR-03), component arrays sized exactly
    (HT-LAY-61, HT-LAY-92) and the u64 block table for more than 2^32 pages (HT-LAY-62).
    """
    if not isinstance(descriptor, TensorDescriptor):
        raise RuleViolation("HT-HDR-02", "write_tensor_descriptor takes a TensorDescriptor", path="descriptor",
                            actual=type(descriptor).__name__, expected="TensorDescriptor")
    d = descriptor.checked()  # a model_construct / model_copy(update=...) result is validated again
    if len(d.buffers) > MAX_BUFFERS:
        raise RuleViolation("HT-BUFT-11", "more than 255 buffers: split the data across descriptors",
                            path="descriptor -> buffer_count", actual=len(d.buffers), expected=f"<= {MAX_BUFFERS}")
    if d.version_minor == 0 and d.trailing:
        raise RuleViolation("HT-HDR-09", "a version 1.0 descriptor has no bytes after its sections",
                            path="descriptor -> trailing", actual=len(d.trailing), expected=0)
    if d.version_minor != 0 and writer_rules:
        raise RuleViolation("HT-HDR-03", "writers emit version 1.0", path="descriptor -> version_minor",
                            actual=d.version_minor, expected=0)
    if isinstance(d.layout, PrivateLayout) and not d.layout.registered and not permissive:
        raise RuleViolation("HT-LAY-86", "a private layout is written only under an agreed extension_layout_id",
                            path="descriptor -> layout -> extension_layout_id",
                            actual=d.layout.extension_layout_id, expected="a registered id")
    header = {
        "magic": MAGIC, "version_major": d.version_major, "version_minor": d.version_minor,
        "descriptor_length": HEADER_LENGTH, "flags": d.flags, "type_tag": d.type_tag, "layout_tag": d.layout_tag,
        "rank": d.rank,
    }
    _build(HEADER, header, "descriptor", "HT-HDR-03", permissive)  # header rules first, as the reader
    check_descriptor(d, permissive=permissive, writer_rules=writer_rules)
    rank = d.rank
    parts: list[bytes] = []
    body = core(rank)
    parts.append(_build(body, {"shape": list(d.shape), "byte_offset": d.byte_offset}, "descriptor", "HT-HDR-02",
                        permissive))
    if isinstance(d.layout, OpaqueLayout):
        if not permissive:
            raise RuleViolation("HT-HDR-16", "an unrecognised layout is written back only in permissive mode",
                                path="descriptor -> layout_tag", actual=d.layout_tag)
        parts.append(d.layout.payload)
    else:
        row = row_of(d.layout)
        parts.append(_build(row.struct(rank), d.layout.to_wire(), "descriptor -> layout", d.layout.rule,
                            permissive))
        parts.append(bytes([len(d.buffers)]))
        for i, handle in enumerate(d.buffers):
            parts.append(_build(HANDLE, handle.to_wire(), f"descriptor -> buffers -> {i}", "HT-BUFT-01",
                                permissive))
        if d.quantization is not None:
            try:
                payload = encode_quantization(d.quantization, permissive=permissive)
            except HurrayDeclError as err:
                raise err.rebased(0, "descriptor -> quantization") from None
            parts.append(_build(_QLEN, {"quantization_length": len(payload)}, "descriptor", "HT-SEC-01",
                                permissive))
            parts.append(payload)
        if d.shard is not None:
            parts.append(_build(cs.Struct(*shard_fields(rank)), d.shard.to_wire(), "descriptor -> shard",
                                "HT-SEC-03", permissive))
        if d.statistics is not None:
            parts.append(_build(STATISTICS, d.statistics.to_wire(), "descriptor -> statistics", "HT-SEC-08",
                                permissive))
        if d.extension_type is not None:
            parts.append(_build(EXTENSION_TYPE, d.extension_type.to_wire(), "descriptor -> extension_type",
                                "HT-SEC-21", permissive))
        if d.composite_member is not None:
            parts.append(_build(COMPOSITE_MEMBER, d.composite_member.to_wire(), "descriptor -> composite_member",
                                "HT-SEC-35", permissive))
    parts.append(d.trailing)
    length = HEADER_LENGTH + sum(len(p) for p in parts)
    if d.descriptor_length is not None and d.descriptor_length != length:
        raise RuleViolation("HT-HDR-09", "descriptor_length disagrees with the sections it holds",
                            path="descriptor -> descriptor_length", actual=d.descriptor_length, expected=length)
    header["descriptor_length"] = length
    return _build(HEADER, header, "descriptor", "HT-HDR-03", permissive) + b"".join(parts)
