"""Mutant bytes made through the declarations, never through offsets written by hand.

A mutant starts from a valid descriptor that :func:`~hurray_decl.hurray.tensor.write_tensor_descriptor`
wrote. :func:`fields` asks the reader's trace where every field sits (offset and size, by the
names of :mod:`hurray_decl.hurray.tensor.fields`: ``buffers.0.byte_size``, ``layout.nested.inner_layout``,
``quantization.block_size``), and :func:`patched` replaces the bytes of one field with a value
packed to the width the declaration gives it.

A few mutants change the structure itself (the rank, the number of buffers, which sections are
present), which no single field can. :func:`assembled` builds those from the declarations of
the parts the model holds (the framing, the layout row's fields, each handle, each section in
the wire order of :data:`~hurray_decl.hurray.tensor.model.SECTION_FLAGS`), with none of the context
checks the writer makes, so a rule *between* parts can be broken.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import construct as cs

from hurray_decl.hurray.quantization import encode_quantization
from hurray_decl.hurray.tensor import BufferHandle, TensorDescriptor
from hurray_decl.hurray.tensor.buffers import BUFFER_COUNT, MIN_ALIGNMENT
from hurray_decl.hurray.tensor.fields import dotted, field_spans, packed
from hurray_decl.hurray.tensor.model import SECTION_FLAGS
from hurray_decl.hurray.tensor.sections import QUANTIZATION_LENGTH

Fields = Mapping[str, tuple[int, int]]

def fields(data: bytes) -> dict[str, tuple[int, int]]:
    """(offset, size) of every field of the valid descriptor ``data``, by dotted name
    (:func:`hurray_decl.hurray.tensor.fields.field_spans`: ``buffers.0.byte_size``, ``quantization.block_size``)."""
    return field_spans(data, permissive=False)


def patched(data: bytes, path: str, value: Any, where: Fields | None = None) -> bytes:
    """``data`` with the field at ``path`` (either spelling: ``buffers[0].byte_size`` or
    ``buffers.0.byte_size``) replaced by ``value`` packed to its width, located in ``where``
    or in ``data`` itself, which must then be a valid descriptor."""
    offset, size = (where if where is not None else fields(data))[dotted(path)]
    return data[:offset] + packed(value, size, path, negative=True) + data[offset + size:]


def value_at(data: bytes, path: str, where: Fields) -> int:
    """The unsigned integer stored in the field at ``path``."""
    offset, size = where[dotted(path)]
    return int.from_bytes(data[offset:offset + size], "little")


def _built(declaration: cs.Construct, values: Any) -> bytes:
    return declaration.build(values, permissive=True)


def assembled(d: TensorDescriptor) -> bytes:
    """``d`` written part by part with each part's own declaration and no context check."""
    body = [_built(d.layout.wire_declaration(), d.layout.to_wire()),
            _built(cs.Struct(BUFFER_COUNT), {"buffer_count": len(d.buffers)})]
    body += [_built(h.wire_declaration(), h.to_wire()) for h in d.buffers]
    for name, _flag, _rule in SECTION_FLAGS:
        section = getattr(d, name)
        if section is None:
            continue
        if name == "quantization":
            payload = encode_quantization(section, permissive=True)
            body += [_built(cs.Struct(QUANTIZATION_LENGTH), {"quantization_length": len(payload)}), payload]
        else:
            body.append(_built(section.wire_declaration(), section.to_wire()))
    framing = d.wire_declaration()
    values = d.wire_values()
    values["descriptor_length"] = framing.sizeof(**values) + sum(len(part) for part in body)
    return _built(framing, values) + b"".join(body)


def resized(h: BufferHandle, size: int) -> BufferHandle:
    """A handle holding ``size`` bytes, its alignment raised to the minimum when it becomes non-empty."""
    alignment = h.alignment if size == 0 or h.alignment >= MIN_ALIGNMENT else MIN_ALIGNMENT
    return h.model_copy(update={"byte_size": size, "alignment": alignment})
