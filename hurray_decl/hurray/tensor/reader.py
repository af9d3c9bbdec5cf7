"""Reading a whole tensor descriptor (DIGEST § 5, Appendix A)."""

from __future__ import annotations

import io
from typing import Any

import construct as cs

from hurray_decl.declare.trace import Span, parse_tree, positions_of, spans_of, trace
from hurray_decl.errors import ArgumentError, HurrayDeclError, TruncatedError
from hurray_decl.hurray.tensor.descriptor import DESCRIPTOR, locate, parse_fast, parse_traced, preamble_fast
from hurray_decl.hurray.tensor.header import HEADER, HEADER_LENGTH, PREAMBLE, PREAMBLE_LENGTH
from hurray_decl.hurray.tensor.model import TensorDescriptor


def read_tensor_descriptor(data: bytes | bytearray | memoryview, *, permissive: bool = False) -> TensorDescriptor:
    """Decode and validate one tensor descriptor from the start of ``data``.

    Only the first ``descriptor_length`` bytes are read; bytes after them belong to whatever
    follows (HT-HDR-10). Every rule that needs no buffer contents is checked here, the
    quantization payload included (HD-16); :func:`validate_buffers` checks the rest.
    """
    if isinstance(data, (bytes, bytearray, memoryview)):
        descriptor = parse_fast(data, permissive)
        if descriptor is not None:
            return descriptor
    return _refused(data, permissive)


def trace_tensor_descriptor(data: bytes, *, permissive: bool = False) -> tuple[list[Span], HurrayDeclError | None]:
    """The byte spans of every field the reader reads, and the error that stopped it, if any."""
    try:
        root, error = _traced(data, permissive)
    except HurrayDeclError as err:  # refused before the sections were read: label what the header holds
        spans, _ = trace(HEADER, bytes(data[:HEADER_LENGTH]), params={"permissive": permissive})
        return spans, err
    return spans_of(root), error


def _length(data: Any, permissive: bool) -> int:
    """descriptor_length, after the rules of the fields before it (HT-HDR-10)."""
    raw = bytes(data[:PREAMBLE_LENGTH])
    if len(raw) < PREAMBLE_LENGTH:
        raise TruncatedError("HT-HDR-08", "the input ends inside the fixed header", path="descriptor",
                             offset=len(raw), actual=f"{len(raw)} bytes", expected=f">= {PREAMBLE_LENGTH} bytes")
    length = preamble_fast(raw, permissive)
    if length is None:  # refused: the interpreted parse raises the rule's error, located
        length = PREAMBLE.parse(raw, permissive=permissive).descriptor_length
    return length


def _preamble(data: Any, permissive: bool) -> bytes:
    """The descriptor's first descriptor_length bytes. Fields are read from them alone; an input
    that ends sooner is refused where a field runs out, or after the last section (Appendix A)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ArgumentError("data", "a descriptor is read from bytes", actual=type(data).__name__,
                            expected="bytes, bytearray or memoryview")
    return bytes(data[:_length(data, permissive)])


def _refused(data: Any, permissive: bool) -> TensorDescriptor:
    """What the compiled parse refused (or could not take), parsed again in rule order: the error
    it raises says which rule refuses, where (an accepted parse is returned). The interpreted
    parse runs first, untraced: a field rule's error already holds its offset. A model's error (a
    rule over several fields, raised without a position) is located by a traced parse that records
    only where named fields start; a cut-short stream is left to the fully traced parse."""
    view = _preamble(data, permissive)
    params = {"permissive": permissive}
    try:
        DESCRIPTOR.parse_stream(io.BytesIO(view), **params)
    except HurrayDeclError as err:
        if err.offset is not None:
            raise
        root, _, error = parse_tree(DESCRIPTOR, io.BytesIO(view), params=params, positions=True)
        if error is not None:
            raise locate(error, positions_of(root)) from None
    except cs.ConstructError:
        pass
    traced = parse_traced(view, permissive)
    if traced[2] is not None:
        raise traced[2]
    return traced[1]


def _traced(data: Any, permissive: bool) -> tuple[Any, HurrayDeclError | None]:
    view = _preamble(data, permissive)
    root, _, error = parse_traced(view, permissive)
    return root, error


def field_positions(data: bytes, *, permissive: bool = False) -> dict[str, int]:
    """The byte offset of every field the reader parses in the descriptor ``data`` (which it must
    accept), keyed by error path: ``descriptor -> buffers -> 0 -> byte_size``."""
    root, error = _traced(data, permissive)
    if error is not None:
        raise error
    return positions_of(root)


def skip_descriptor(data: bytes) -> int:
    """The length of the descriptor at the start of ``data``, from its first 10 bytes (HT-HDR-10)."""
    return _length(data, False)


__all__ = ["field_positions", "read_tensor_descriptor", "skip_descriptor", "trace_tensor_descriptor"]
