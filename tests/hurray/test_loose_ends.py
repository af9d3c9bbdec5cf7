"""Promises kept exactly: one traced parse for a descriptor and its quantization payload, coded
errors from the JSON and bytes entry points, no warning from a documented result, messages in
plain words, and the writer keeping what an opaque descriptor carries."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from hurray_decl.declare import trace as trace_module
from hurray_decl.errors import ARGUMENT, HurrayDeclError
from hurray_decl.hurray import dump as dump_module
from hurray_decl.hurray import quantization
from hurray_decl.hurray.dump import tensor_dump
from hurray_decl.hurray.schemes.mxfp import MXFP
from hurray_decl.hurray.tensor import BufferHandle, TensorDescriptor, read_tensor_descriptor, write_tensor_descriptor
from hurray_decl.hurray.tensor import descriptor as descriptor_module
from hurray_decl.hurray.tensor import fields as fields_module
from hurray_decl.hurray.tensor.reader import field_positions

# ------------------------------------------------------------------ one trace


def _mxfp(padding: bytes = b"\x00\x07\x00", **fields) -> bytes:
    q = MXFP(axis=1, block_size=16, scale_buffer_index=1, padding=padding)
    d = TensorDescriptor(type_tag=0x10, shape=(4, 32), quantization=q,
                         buffers=(BufferHandle(byte_size=128), BufferHandle(byte_size=8)))
    return write_tensor_descriptor(d)


@pytest.fixture
def parses(monkeypatch):
    """Counts traced parses (the one entry point, parse_tree, as the descriptor and the bare
    payload reach it), every parse of a payload's fields inside them, and untraced decodes of a
    payload; a separate trace of a scheme's declaration fails the test."""
    counts = {"traced": 0, "payload parts": 0, "untraced": 0}
    tree = trace_module.parse_tree
    inside = trace_module.parse_inside

    def counted_tree(*args, **kwargs):
        counts["traced"] += 1
        return tree(*args, **kwargs)

    def counted_inside(*args, **kwargs):
        counts["payload parts"] += 1
        return inside(*args, **kwargs)

    decode = quantization.decode_quantization

    def untraced(*args, **kwargs):
        counts["untraced"] += 1
        return decode(*args, **kwargs)

    def forbidden(*args, **kwargs):
        raise AssertionError("a declaration was traced outside the descriptor's traced parse")

    monkeypatch.setattr(trace_module, "parse_tree", counted_tree)
    monkeypatch.setattr(descriptor_module, "parse_tree", counted_tree)
    monkeypatch.setattr(dump_module, "parse_tree", counted_tree)
    monkeypatch.setattr(quantization, "parse_inside", counted_inside)
    monkeypatch.setattr(quantization, "decode_quantization", untraced)
    monkeypatch.setattr(trace_module, "trace", forbidden)
    fields_module._spans.cache_clear()
    yield counts
    fields_module._spans.cache_clear()


def test_dump_field_spans_and_positions_each_come_from_one_traced_parse(parses):
    data = _mxfp()
    rows = tensor_dump(data).rows
    assert parses == {"traced": 1, "payload parts": 2, "untraced": 0}  # the fields, the padding
    spans = fields_module.field_spans(data)
    assert parses == {"traced": 2, "payload parts": 4, "untraced": 0}
    positions = field_positions(data)
    assert parses == {"traced": 3, "payload parts": 6, "untraced": 0}
    by_field = {r.field: r.offset for r in rows}
    for name in ("scheme_tag", "flags", "axis", "block_size", "scale_buffer_index", "padding"):
        offset = spans[f"quantization.{name}"][0]
        assert by_field[f"quantization.{name}"] == offset == positions[f"descriptor -> quantization -> {name}"]
    assert data[spans["quantization.padding"][0]:][:3] == b"\x00\x07\x00"


@pytest.mark.rules("HQ-MX-03")
def test_a_payload_rule_error_is_located_by_the_same_parse(parses):
    good = _mxfp()
    offset, width = fields_module.field_span(good, "quantization.block_size")
    parses["traced"] = parses["payload parts"] = 0
    bad = good[:offset] + (24).to_bytes(width, "little") + good[offset + width:]  # not a power of two
    dump = tensor_dump(bad)
    assert parses["traced"] == 1 and parses["untraced"] == 0
    assert dump.error is not None and dump.error.offset == offset
    assert dump.error.path == "descriptor -> quantization -> block_size"
    failing = [r for r in dump.rows if r.field == "quantization.block_size"]
    assert failing and failing[0].offset == offset


@pytest.mark.rules("HQ-BUF-01")
def test_a_context_error_inside_the_payload_is_located_by_the_trace(parses):
    good = _mxfp()
    offset, width = fields_module.field_span(good, "quantization.scale_buffer_index")
    parses["traced"] = parses["untraced"] = 0
    bad = good[:offset] + (5).to_bytes(width, "little") + good[offset + width:]
    with pytest.raises(HurrayDeclError) as info:
        read_tensor_descriptor(bad)
    assert parses["traced"] == 1  # the compiled parse refused it; one traced parse says where
    assert parses["untraced"] == 1
    assert info.value.offset == offset, info.value


def test_a_bare_payload_dump_is_one_traced_parse(parses):
    data = _mxfp()
    start = fields_module.field_span(data, "quantization.scheme_tag")[0]
    parses["traced"] = parses["payload parts"] = 0
    rows = dump_module.quantization_dump(data[start:start + 16 + 3]).rows
    assert parses == {"traced": 1, "payload parts": 2, "untraced": 0}
    assert [r.field for r in rows] == ["scheme_tag", "scheme_version", "flags", "axis", "block_size",
                                       "scale_buffer_index", "padding"]
