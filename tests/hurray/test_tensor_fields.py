"""hurray_decl.hurray.tensor.fields: a descriptor's fields by name, their widths from the declaration."""

from __future__ import annotations

from itertools import pairwise

import pytest

from hurray_decl.errors import ArgumentError
from hurray_decl.hurray.tensor import read_tensor_descriptor
from hurray_decl.hurray.tensor.fields import field_span, field_spans, with_field, with_length
from tests.hurray.tensor_support import vector

BASE = vector("row_major_f32_3x4.bin")
QUANTIZED = vector("quant_per_block_int4_128x128.bin")


def test_fields_follow_each_other_without_gaps():
    """Every byte of an accepted descriptor belongs to exactly one traced field, in wire order."""
    for data in (BASE, QUANTIZED, vector("sharded_f32_8x4.bin"), vector("csr_f32_3x3.bin")):
        leaves = sorted((o, s) for n, (o, s) in field_spans(data).items() if n != "quantization")
        assert leaves[0][0] == 0 and sum(s for _, s in leaves) == len(data)
        assert all(a + s == b for (a, s), (b, _) in pairwise(leaves))


def test_quantization_fields_sit_inside_the_payload():
    start, size = field_span(QUANTIZED, "quantization")
    offset, width = field_span(QUANTIZED, "quantization.block_size")
    assert start < offset and offset + width <= start + size and width == 4
    block = read_tensor_descriptor(QUANTIZED).quantization.block_size
    assert QUANTIZED[offset:offset + width] == block.to_bytes(width, "little")
    patched = with_field(QUANTIZED, "quantization.block_size", 64)
    assert patched[offset:offset + width] == (64).to_bytes(width, "little")
    assert patched[:offset] == QUANTIZED[:offset] and patched[offset + width:] == QUANTIZED[offset + width:]


def test_a_prefix_stands_for_the_fields_under_it():
    assert field_span(BASE, "buffers.0") == (field_span(BASE, "buffers.0.byte_size")[0], 16)
    assert field_span(BASE, "shape") == (field_span(BASE, "shape.0")[0], 16)


def test_header_fields_are_found_in_any_bytes():
    assert field_span(b"XXXX", "descriptor_length") == field_span(BASE, "descriptor_length")
    offset, width = field_span(BASE, "descriptor_length")
    grown = with_length(BASE + bytes(3))
    assert int.from_bytes(grown[offset:offset + width], "little") == len(BASE) + 3
    assert grown[:offset] == BASE[:offset] and grown[offset + width:] == BASE[offset + width:] + bytes(3)


@pytest.mark.parametrize("name, value", [
    ("flags", 1 << 32),  # does not fit a u32
    ("flags", -1),
    ("flags", b"\x00"),  # one byte for a four-byte field
    ("no_such_field", 0),
    ("buffers.1.byte_size", 0),  # only one handle
])
def test_unusable_arguments_are_argument_errors(name, value):
    with pytest.raises(ArgumentError):
        with_field(BASE, name, value)


def test_a_field_past_the_input_is_refused():
    with pytest.raises(ArgumentError):
        with_field(BASE[:12], "flags", 0)
