"""Tensor descriptor framing: the fixed header, shape and byte_offset, type tags, the
quantization section frame and minor-version trailing bytes (HT-HDR, HE tag rules)."""

from __future__ import annotations

import pytest

from hurray_decl import PerBlockAffine, PerTensorAffine
from hurray_decl.errors import OpaqueDataAccess, TruncatedError
from hurray_decl.hurray.tensor import (
    COO,
    ColumnMajor,
    OpaqueLayout,
    TensorDescriptor,
    read_tensor_descriptor,
    skip_descriptor,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.common import DYNAMIC
from hurray_decl.hurray.tensor.validate import validate_buffers
from tests.helpers import covers, raises_rule
from tests.hurray.tensor_support import (
    at,
    dense,
    encode,
    end,
    handle,
    patch_field,
    roundtrip,
    vector,
    with_length,
)

BASE = vector("row_major_f32_3x4.bin")  # 61 bytes: header, shape[2], byte_offset, one buffer handle


@covers("HT-HDR-01", "HT-HDR-02", "HT-HDR-03")
def test_header_fields_little_endian_in_wire_order():
    d = read_tensor_descriptor(BASE)
    assert (d.version_major, d.version_minor, d.descriptor_length, d.flags) == (1, 0, 61, 0)
    assert (d.type_tag, d.layout_tag, d.rank, d.shape, d.byte_offset) == (3, 1, 2, (3, 4), 0)
    assert encode(dense()) == BASE  # writers emit 1.0 and derive length and flags


@pytest.mark.parametrize("code, field, value", [
    ("HT-HDR-04", "magic", b"HRRX"),
    ("HT-HDR-05", "version_major", 2),
    ("HT-HDR-06", "version_major", 0),
    ("HT-HDR-07", "descriptor_length", 19),
    ("HT-HDR-12", "flags", 1 << 5),
    ("HT-HDR-12", "flags", 1 << 31),
    ("HE-02", "type_tag", 0x00),
    ("HE-02", "type_tag", 0xFF),
    ("HE-03", "type_tag", 0x05),
    ("HE-05", "type_tag", 0x80),
    ("HE-05", "type_tag", 0xEF),
    ("HE-06", "type_tag", 0x47),
    ("HT-HDR-15", "layout_tag", 0x00),
    ("HT-HDR-15", "layout_tag", 0xFF),
    ("HT-HDR-16", "layout_tag", 0x0C),
    ("HT-HDR-16", "layout_tag", 0x41),
    ("HT-HDR-16", "layout_tag", 0x80),
    ("HT-HDR-13", "rank", 65),
])
def test_header_field_refused(code, field, value):
    with raises_rule(code, offset=at(BASE, field), path=field):
        read_tensor_descriptor(patch_field(BASE, field, value))


def test_tag_0x47_is_refused_even_when_permissive():
    with raises_rule("HE-06"):
        read_tensor_descriptor(patch_field(BASE, "type_tag", 0x47), permissive=True)
    with raises_rule("HE-02"):
        read_tensor_descriptor(patch_field(BASE, "type_tag", 0x00), permissive=True)


def test_unrecognised_type_permissive_keeps_framing_but_never_data():
    data = patch_field(BASE, "type_tag", 0x30)
    d = read_tensor_descriptor(data, permissive=True)
    assert d.type_tag == 0x30 and d.shape == (3, 4)
    assert write_tensor_descriptor(d, permissive=True) == data
    with raises_rule("HE-04"):
        validate_buffers(d, [bytes(48)])
    with pytest.raises(OpaqueDataAccess):
        validate_buffers(d, [bytes(48)])


@covers("HE-09")
@pytest.mark.parametrize("tag, size", [(0x01, 24), (0x02, 24), (0x03, 48), (0x04, 96), (0x10, 12), (0x11, 12),
                                       (0x12, 24), (0x13, 24), (0x14, 48), (0x15, 48), (0x16, 96), (0x17, 96),
                                       (0x20, 2)])
def test_every_tier1_type_is_read(tag, size):
    roundtrip(dense(type_tag=tag, sizes=(size,)))


def test_truncation_and_descriptor_length():
    inside_length = at(BASE, "descriptor_length") + 3  # the input ends inside descriptor_length
    with raises_rule("HT-HDR-08", offset=inside_length):
        read_tensor_descriptor(BASE[:inside_length])
    with raises_rule("HT-HDR-08", offset=len(BASE) - 1):
        read_tensor_descriptor(BASE[:-1])
    # A descriptor_length that stops inside the buffer table: the handle is truncated there.
    inside_handle = at(BASE, "buffers.0.byte_size") + 5
    with raises_rule("HT-HDR-08", offset=inside_handle):
        read_tensor_descriptor(patch_field(BASE, "descriptor_length", inside_handle))
    # Bytes after descriptor_length are not the descriptor's (HT-HDR-10).
    assert read_tensor_descriptor(BASE + b"\xFF" * 7).descriptor_length == len(BASE)


@covers("HT-HDR-10")
def test_skip_from_the_preamble_alone():
    assert skip_descriptor(BASE[:end(BASE, "descriptor_length")]) == len(BASE)
    stream = BASE + vector("row_major_int8_5.bin")
    second = stream[skip_descriptor(stream):]
    assert read_tensor_descriptor(second).shape == (5,)


def test_length_must_match_the_sections_at_minor_zero():
    with raises_rule("HT-HDR-09", offset=at(BASE, "descriptor_length")):
        read_tensor_descriptor(with_length(BASE + b"\x00"))
    with raises_rule("HT-HDR-09"):
        write_tensor_descriptor(dense(descriptor_length=60))


@covers("HT-HDR-11")
def test_newer_minor_skips_trailing_bytes():
    data = with_length(patch_field(BASE, "version_minor", 3) + b"\xAB\xCD")
    d = read_tensor_descriptor(data)
    assert d.version_minor == 3 and d.trailing == b"\xAB\xCD"
    with raises_rule("HT-HDR-12"):  # unknown flag bits stay refused at any minor
        read_tensor_descriptor(patch_field(data, "flags", 1 << 7))
    assert write_tensor_descriptor(d, permissive=True) == data
    assert write_tensor_descriptor(d) == data  # what the reader accepts is written back
    assert write_tensor_descriptor(read_tensor_descriptor(data, permissive=True)) == data
    with raises_rule("HT-HDR-03"):  # a writer's own descriptors are 1.0 (HT-HDR-03)
        write_tensor_descriptor(d, writer_rules=True)


def test_rank_bounds():
    with raises_rule("HT-HDR-13"):
        write_tensor_descriptor(dense(shape=(1,) * 65, sizes=(4,)))


@covers("HT-HDR-14")
def test_rank_0_and_64_are_read():
    roundtrip(dense(shape=(), sizes=(4,)))
    roundtrip(dense(shape=(1,) * 64, sizes=(4,)))


@covers("HT-HDR-17")
def test_unrecognised_layout_permissive():
    data = patch_field(BASE, "layout_tag", 0x0C)
    d = read_tensor_descriptor(data, permissive=True)
    assert isinstance(d.layout, OpaqueLayout) and d.buffers == () and d.shape == (3, 4)
    assert write_tensor_descriptor(d, permissive=True) == data
    with raises_rule("HT-HDR-17"):
        validate_buffers(d, [])
    with raises_rule("HT-HDR-16"):
        write_tensor_descriptor(d)


@covers("HT-HDR-18")
def test_dynamic_dimensions_are_never_sized():
    roundtrip(dense(shape=(DYNAMIC, 4), sizes=(0,)))
    q = PerBlockAffine(axis=1, block_size=4, scale_buffer_index=1, symmetric=True)
    roundtrip(dense(type_tag=0x10, shape=(DYNAMIC, 8), sizes=(0, 0), quantization=q))


def test_byte_offset_rules():
    with raises_rule("HT-HDR-19", offset=at(BASE, "byte_offset")):
        read_tensor_descriptor(patch_field(BASE, "byte_offset", 49))
    roundtrip(dense(byte_offset=16, sizes=(64,)))
    with raises_rule("HE-21"):
        write_tensor_descriptor(dense(byte_offset=16, sizes=(63,)))
    coo = TensorDescriptor(type_tag=0x03, shape=(4,), layout=COO(nnz=1), byte_offset=4,
                           buffers=(handle(4), handle(8)))
    with raises_rule("HT-HDR-20"):
        write_tensor_descriptor(coo)


def test_scalar_is_row_major_only():
    with raises_rule("HT-HDR-21"):
        write_tensor_descriptor(dense(shape=(), sizes=(4,), layout=ColumnMajor()))
    data = encode(dense(shape=(), sizes=(4,)))
    with raises_rule("HT-HDR-21", offset=at(data, "layout_tag")):
        read_tensor_descriptor(patch_field(data, "layout_tag", 0x02))


@covers("HT-HDR-22")
def test_empty_tensors_are_complete_descriptors():
    d = read_tensor_descriptor(vector("empty_f32_0x4.bin"))
    assert d.shape == (0, 4) and d.buffers[0].byte_size == 0
    q = PerBlockAffine(axis=0, block_size=64, scale_buffer_index=1, zero_point_buffer_index=2)
    roundtrip(dense(type_tag=0x48, shape=(0, 3), sizes=(0, 0, 0), quantization=q))
    with raises_rule("HT-BUFT-02"):  # the other rules still apply
        write_tensor_descriptor(dense(shape=(0, 4), sizes=()))


def test_quantization_errors_carry_whole_descriptor_positions():
    data = vector("quant_per_block_int4_128x128.bin")
    with raises_rule("HQ-PB-03", offset=at(data, "quantization.block_size"), path="quantization -> block_size"):
        read_tensor_descriptor(patch_field(data, "quantization.block_size", 100))
    with raises_rule("HQ-HDR-12", offset=at(data, "quantization.scheme_version")):
        read_tensor_descriptor(patch_field(data, "quantization.scheme_version", 0))
    short = len(data) - at(data, "quantization") - 4
    with raises_rule("HQ-HDR-04"):  # quantization_length shorter than the scheme
        read_tensor_descriptor(with_length(patch_field(data, "quantization_length", short)[:-4]))
    with raises_rule("HT-HDR-08"):  # quantization_length past descriptor_length
        read_tensor_descriptor(patch_field(data, "quantization_length", short + 5))


@covers("HQ-HDR-05")
def test_quantization_padding_survives_inside_the_tensor():
    q = PerTensorAffine(scale=0.5, zero_point=3, padding=b"\x01\x02")
    d = roundtrip(dense(type_tag=0x10, sizes=(12,), quantization=q))
    assert d.quantization.padding == b"\x01\x02"


def test_truncated_errors_are_typed():
    with pytest.raises(TruncatedError):
        read_tensor_descriptor(b"HRRY")


def test_context_errors_name_the_field_and_its_byte():
    data = vector("quant_per_block_int4_128x128.bin")
    with raises_rule("HQ-BUF-09", offset=at(data, "buffers.1.byte_size"), path="buffers -> 1 -> byte_size"):
        read_tensor_descriptor(patch_field(data, "buffers.1.byte_size", 128))
    with raises_rule("HQ-PB-05", offset=at(data, "quantization.block_size"), path="quantization -> block_size"):
        read_tensor_descriptor(patch_field(data, "shape.1", 64))
    with raises_rule("HQ-BUF-02", offset=at(data, "quantization.scale_buffer_index"),
                     path="quantization -> scale_buffer_index"):
        read_tensor_descriptor(patch_field(data, "quantization.scale_buffer_index", 0))
    with raises_rule("HT-BUFT-05", offset=at(data, "buffer_count"), path="buffer_count"):
        grown = patch_field(data, "buffer_count", 3)
        last = end(data, "buffers")  # a third handle, a copy of the second
        read_tensor_descriptor(with_length(grown[:last] + grown[at(data, "buffers.1"):last] + grown[last:]))
