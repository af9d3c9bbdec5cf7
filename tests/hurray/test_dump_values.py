"""The Hurray dump's value column, field by field: each formatter's exact text (widths, names,
"unassigned", "(empty)", "none"), the spec's names for reserved fields, the rows of a payload
dumped inside its descriptor, and the rows after descriptor_length."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hurray_decl.dump.rows import BEYOND, UNDECODED, Row
from hurray_decl.hurray import dump as hd
from hurray_decl.hurray.tensor.fields import field_span, with_field
from tests.hurray.tensor_support import vector

PER_CHANNEL = bytes.fromhex("0201000000000000010000000200000003000000")


@pytest.mark.parametrize(("field", "value", "text"), [
    ("payload", b"", "(empty)"),
    ("payload", b"\x01\xab", "01 AB"),
    ("payload", bytearray(b"\x0f"), "0F"),
    ("payload", bytes(range(32)), " ".join(f"{i:02X}" for i in range(32))),  # HEX_SHOWN bytes: all shown
    ("payload", bytes(range(35)), " ".join(f"{i:02X}" for i in range(32)) + " … (+3 bytes)"),
    ("symmetric", True, "true"),
    ("symmetric", False, "false"),
    ("minimum", 0.1, "0.1"),
    ("minimum", float("-inf"), "-inf"),
    ("minimum", float("nan"), "nan"),
    ("scale_buffer_index", 0xFFFF_FFFF, "none (0xFFFFFFFF)"),
    ("quantization.zero_point_buffer_index", 0xFFFF_FFFF, "none (0xFFFFFFFF)"),
    ("zero_point_buffer_index", 0xFFFF_FFFE, "4294967294"),
    ("axis", 0xFFFF_FFFF, "4294967295"),
    ("flags", 5, "0x0005"),
    ("quantization.flags", 0x1234, "0x1234"),
    ("scheme_tag", 0x02, "0x02 (per-channel affine)"),
    ("scheme_tag", 0xF0, "0xF0 (private)"),
    ("scheme_tag", 0x00, "0x00 (invalid)"),
    ("scheme_tag", 0x60, "0x60 (reserved nested)"),
    ("scale_type_tag", 0x01, "0x01 (float16)"),
    ("scale_type_tag", 0x05, "0x05 (unassigned)"),
    ("block_size", 7, "7"),
    ("shape", [3, 4], "[3, 4]"),
    ("shape[1]", 4, "4"),
    ("name", "w.a", "w.a"),
])
def test_the_value_column_of_a_payload_field(field: str, value: object, text: str) -> None:
    assert hd.describe(field, value) == text


@pytest.mark.parametrize(("field", "value", "text"), [
    ("flags", 0, "0x00000000"),
    ("flags", 0x1, "0x00000001 (HAS_QUANTIZATION)"),
    ("flags", 0x3, "0x00000003 (HAS_QUANTIZATION, HAS_SHARD)"),
    ("flags", 0x8000_0000, "0x80000000"),
    ("type_tag", 0x03, "0x03 (float32)"),
    ("type_tag", 0x05, "0x05 (unassigned)"),
    ("layout_tag", 0x0B, "0x0B (composite head)"),
    ("layout_tag", 0xEE, "0xEE"),
    ("buffers[1].device_tag", 0x00, "0x00 (CPU)"),
    ("buffers[0].device_tag", 0x7F, "0x7F"),
    ("buffers[0].sync_mode", 0x01, "0x01 (event)"),
    ("buffers[0].memory_class", 0x02, "0x02 (UNIFIED)"),
    ("buffers[0].byte_size", 48, "48"),
    ("scheme_tag", 0x02, "2"),  # a payload field is not formatted by the tensor table
])
def test_the_value_column_of_a_tensor_field(field: str, value: object, text: str) -> None:
    assert hd.describe(field, value, hd.TENSOR_FORMATTERS) == text


@pytest.mark.parametrize(("path", "name"), [
    ("reserved", "_reserved"),
    ("buffers[0].reserved", "buffers[0]._reserved"),
    ("quantization.reserved2", "quantization._reserved2"),
    ("reserved[1]", "_reserved[1]"),
    ("not_reserved", "not_reserved"),
    ("reserved_bits", "reserved_bits"),
    ("shape[0]", "shape[0]"),
])
def test_reserved_fields_take_the_spec_names(path: str, name: str) -> None:
    assert hd.spec_name(path) == name


def test_a_payload_inside_its_descriptor_is_dumped_at_its_place_with_its_prefix() -> None:
    data = vector("quant_per_block_int4_128x128.bin")
    start, size = field_span(data, "quantization")
    alone = hd.quantization_dump(data[start:start + size]).rows
    inside = [r for r in hd.tensor_dump(data).rows if r.field.startswith("quantization.")]
    assert inside == [replace(r, offset=r.offset + start, field="quantization." + r.field) for r in alone]


def test_a_refused_payload_inside_its_descriptor_points_at_its_byte_in_the_descriptor() -> None:
    data = vector("quant_per_block_int4_128x128.bin")
    start, _ = field_span(data, "quantization")
    scale_type, _ = field_span(data, "quantization.scale_type_tag")
    bad = with_field(data, "quantization.scale_type_tag", 0x05)
    dump = hd.tensor_dump(bad)
    assert dump.error is not None and dump.error.offset == scale_type
    assert dump.error.path.startswith("descriptor -> quantization")
    alone = hd.quantization_dump(bad[start:], base=start, prefix="quantization")
    assert alone.error is not None and alone.error.offset == scale_type and alone.rows[0].offset == start
    assert alone.error.path == dump.error.path == "descriptor -> quantization -> scale_type_tag"


def test_bytes_after_descriptor_length_are_labelled_and_nothing_is_undecoded() -> None:
    data = vector("row_major_f32_3x4.bin")
    rows = hd.tensor_dump(data + b"\x01\x02").rows
    assert rows[-1] == Row(len(data), 2, "01 02", BEYOND, "")
    assert UNDECODED not in {r.field for r in rows}
    assert sum(r.size for r in rows) == len(data) + 2


def test_a_short_input_is_undecoded_after_its_last_whole_field() -> None:
    """Cut two bytes into rank: the rows end with layout_tag, then the two bytes undecoded."""
    data = vector("row_major_f32_3x4.bin")
    rank, _ = field_span(data, "rank")
    dump = hd.tensor_dump(data[:rank + 2])
    assert dump.error is not None and (dump.error.code, dump.error.offset) == ("HT-HDR-08", rank + 2)
    assert dump.rows[-2:] == [Row(rank - 1, 1, "01", "layout_tag", "0x01 (row-major)", 1),
                              Row(rank, 2, data[rank:rank + 2].hex(" ").upper(), UNDECODED, "")]


def test_an_input_one_byte_shorter_than_descriptor_length_is_refused_at_its_end() -> None:
    data = vector("row_major_f32_3x4.bin")
    dump = hd.tensor_dump(data[:-1])
    assert dump.error is not None and (dump.error.code, dump.error.offset) == ("HT-HDR-08", len(data) - 1)
    assert BEYOND not in {r.field for r in dump.rows} and sum(r.size for r in dump.rows) == len(data) - 1


def test_an_opaque_payload_needs_permissive_and_four_bytes() -> None:
    raw = bytes([0xF0, 0x01, 0x34, 0x12])
    opened = hd.quantization_dump(raw, permissive=True)
    assert opened.error is None
    assert [(r.field, r.value) for r in opened.rows] == [("scheme_tag", "0xF0 (private)"), ("scheme_version", "1"),
                                                         ("flags", "0x1234")]
    strict = hd.quantization_dump(raw)
    assert strict.error is not None and [r.field for r in strict.rows] == ["scheme_tag", UNDECODED]
    short = hd.quantization_dump(raw[:3], permissive=True)
    assert short.error is not None and [(r.field, r.size) for r in short.rows] == [("scheme_tag", 1), (UNDECODED, 2)]


def test_writer_padding_after_a_payload_is_its_own_row() -> None:
    rows = hd.quantization_dump(PER_CHANNEL + b"\x00\x07").rows
    assert rows[-1] == Row(len(PER_CHANNEL), 2, "00 07", "padding", "00 07")


def test_unknown_kinds_and_formats_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"^kind must be 'tensor' or 'quantization', not 'payload'$"):
        hd.dump(PER_CHANNEL, kind="payload")
    with pytest.raises(ValueError, match=r"^format must be one of text, markdown, json, html, not 'xml'$"):
        hd.hexdump(PER_CHANNEL, kind="quantization", format="xml")
    assert hd.dump(PER_CHANNEL, kind="quantization") == hd.quantization_dump(PER_CHANNEL)
    assert hd.dump(vector("row_major_f32_3x4.bin")) == hd.tensor_dump(vector("row_major_f32_3x4.bin"))


def test_dumps_are_strict_unless_told_otherwise() -> None:
    unassigned = with_field(vector("row_major_f32_3x4.bin"), "type_tag", 0x05)
    strict = hd.tensor_dump(unassigned)
    assert strict.error is not None and strict.error.code == "HE-03"
    assert strict.error.offset == field_span(unassigned, "type_tag")[0]
    assert hd.tensor_dump(unassigned, permissive=True).error is None
    assert str(hd.dump(unassigned).error) == str(strict.error) and hd.dump(unassigned, permissive=True).error is None
    opaque = bytes([0xF0, 0x01, 0x00, 0x00])
    assert hd.dump(opaque, kind="quantization").error is not None
    assert hd.dump(opaque, kind="quantization", permissive=True).error is None


def test_an_input_too_short_for_any_field_is_undecoded_from_its_first_byte() -> None:
    for data in (b"\x48", b"\x48\x52\x52"):
        dump = hd.tensor_dump(data)
        assert dump.rows == [Row(0, len(data), data.hex(" ").upper(), UNDECODED, "")]
        assert dump.error is not None and (dump.error.code, dump.error.offset) == ("HT-HDR-08", len(data))


def test_writer_padding_inside_a_descriptor_is_named_under_its_payload() -> None:
    data = vector("quant_per_block_int4_128x128.bin")
    _, payload = field_span(data, "quantization")  # the payload ends the descriptor
    padded = with_field(with_field(data + bytes(4), "quantization_length", payload + 4), "descriptor_length",
                        len(data) + 4)
    rows = hd.tensor_dump(padded).rows
    assert hd.tensor_dump(padded).error is None
    assert rows[-1] == Row(len(data), 4, "00 00 00 00", "quantization.padding", "00 00 00 00")
