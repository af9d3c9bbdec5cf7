"""Optional sections: quantization frame, shard, statistics, extension type, composite member (HT-SEC)."""

from __future__ import annotations

import math
import struct

import pytest

from hurray_decl import PerTensorAffine
from hurray_decl.declare.schema import field_offsets
from hurray_decl.hurray.tensor import (
    CSF,
    CSR,
    BlockPaged,
    CompositeHead,
    CompositeMember,
    ExtensionType,
    Shard,
    Statistics,
    TensorDescriptor,
    read_tensor_descriptor,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.common import DYNAMIC
from hurray_decl.hurray.tensor.sections import EXTENSION_TYPE, STATISTICS
from hurray_decl.hurray.tensor.validate import validate_buffers
from tests.helpers import covers, raises_rule
from tests.hurray.tensor_support import (
    at,
    dense,
    encode,
    field_bytes,
    handle,
    patch_field,
    roundtrip,
    u32,
    vector,
    with_length,
)

SHARDED = vector("sharded_f32_8x4.bin")


@covers("HT-SEC-01", "HT-SEC-02")
def test_quantization_section_present_iff_flag():
    d = read_tensor_descriptor(vector("quant_per_block_int4_128x128.bin"))
    assert d.flags & 1 and d.quantization is not None
    with raises_rule("HT-SEC-01"):
        write_tensor_descriptor(dense(flags=1))
    with raises_rule("HT-SEC-01"):
        write_tensor_descriptor(dense(type_tag=0x10, sizes=(12,), flags=0,
                                      quantization=PerTensorAffine(scale=1.0)))


@covers("HT-SEC-03")
def test_shard_section():
    d = read_tensor_descriptor(SHARDED)
    assert d.shard == Shard(parent_shape=(8, 8), shard_offset=(0, 4))
    assert encode(d) == SHARDED
    with raises_rule("HT-SEC-03"):
        write_tensor_descriptor(dense(flags=2))
    with raises_rule("HT-SEC-03"):
        write_tensor_descriptor(dense(shard=Shard(parent_shape=(3,), shard_offset=(0,))))


def test_shard_bounds():
    with raises_rule("HT-SEC-04", offset=at(SHARDED, "shard.shard_offset.1")):
        read_tensor_descriptor(patch_field(SHARDED, "shard.shard_offset.1", 5))
    # computed exactly: a huge offset does not wrap around
    with raises_rule("HT-SEC-04"):
        write_tensor_descriptor(dense(shard=Shard(parent_shape=(3, 2**64 - 2), shard_offset=(0, 2**64 - 2))))


def test_shard_and_dynamic():
    with raises_rule("HT-SEC-05", offset=at(SHARDED, "shard.parent_shape.0")):
        read_tensor_descriptor(patch_field(SHARDED, "shard.parent_shape.0", DYNAMIC))
    with raises_rule("HT-SEC-05"):
        write_tensor_descriptor(dense(shape=(DYNAMIC, 4), sizes=(0,),
                                      shard=Shard(parent_shape=(8, 4), shard_offset=(0, 0))))


def test_shard_forbidden_on_paged_and_csf():
    paged = TensorDescriptor(type_tag=0x03, shape=(8, 2, 4), layout=BlockPaged(page_size=4, num_pages=2),
                             buffers=(handle(256), handle(0), handle(4)),
                             shard=Shard(parent_shape=(8, 2, 4), shard_offset=(0, 0, 0)))
    with raises_rule("HT-SEC-06"):
        write_tensor_descriptor(paged)
    csf = TensorDescriptor(type_tag=0x03, shape=(2, 2, 2), layout=CSF(nnz=0, mode_order=(0, 1, 2)),
                           buffers=(handle(0), handle(16), handle(0), handle(8), handle(0), handle(8), handle(0)),
                           shard=Shard(parent_shape=(2, 2, 2), shard_offset=(0, 0, 0)))
    with raises_rule("HT-SEC-07"):
        write_tensor_descriptor(csf)


STATS = Statistics(computed_mask=0x3F, nnz=12, sparsity_ratio=0.0, value_min=-1.5, value_max=2.0,
                   value_abs_max=2.0, value_mean=0.25, value_stddev=1.0, nm_n=2, nm_m=4, has_nan=0, has_inf=1)


@covers("HT-SEC-08")
def test_statistics_layout():
    assert STATISTICS.sizeof() == 72
    assert {k: v[0] for k, v in field_offsets(STATISTICS).items()} == {
        "computed_mask": 0, "reserved": 4, "nnz": 8, "sparsity_ratio": 16, "value_min": 24, "value_max": 32,
        "value_abs_max": 40, "value_mean": 48, "value_stddev": 56, "nm_n": 64, "nm_m": 65, "has_nan": 66,
        "has_inf": 67, "reserved2": 68}
    data = encode(dense(statistics=STATS))
    assert field_bytes(data, "statistics.computed_mask") == u32(0x3F)
    assert field_bytes(data, "statistics.value_min") == struct.pack("<d", -1.5)
    assert roundtrip(dense(statistics=STATS)).statistics == STATS


def _stats_bytes(**fields) -> bytes:
    return encode(dense(statistics=STATS.model_copy(update=fields)))


@pytest.mark.parametrize("code, field, value", [
    ("HT-SEC-09", "computed_mask", 1 << 6),
    ("HT-SEC-10", "reserved", u32(1)),
    ("HT-SEC-11", "reserved2", b"\x00\x01\x00\x00"),
    ("HT-SEC-14", "value_stddev", struct.pack("<d", -0.5)),
    ("HT-SEC-14", "value_stddev", struct.pack("<d", math.nan)),
    ("HT-SEC-15", "nm_m", 1),
    ("HT-SEC-08", "has_nan", 2),
    ("HT-SEC-08", "has_inf", 0xFF),
])
def test_statistics_refusals(code, field, value):
    data = encode(dense(statistics=STATS))
    with raises_rule(code, offset=at(data, f"statistics.{field}")):
        read_tensor_descriptor(patch_field(data, f"statistics.{field}", value))


@covers("HT-SEC-12", "HT-SEC-13")
def test_unknown_statistics_are_never_checked():
    odd = Statistics(computed_mask=0, nnz=99, value_min=5.0, value_max=-5.0, value_stddev=-3.0, nm_n=9, nm_m=1,
                     has_nan=7, has_inf=9, sparsity_ratio=math.inf)
    back = roundtrip(dense(statistics=odd))
    assert back.statistics.known("value_stddev") is None and back.statistics.known("nm_n") is None
    assert back.statistics.value_stddev == -3.0
    # Valid but inconsistent values (min > max, abs_max wrong) are hints only and decide nothing.
    hint = STATS.model_copy(update=dict(value_min=9.0, value_abs_max=0.0, sparsity_ratio=7.0))
    validate_buffers(roundtrip(dense(statistics=hint)), [bytes(48)])


def test_statistics_nnz_matches_sparse_layouts():
    csr = TensorDescriptor(type_tag=0x03, shape=(3, 3), layout=CSR(nnz=2),
                           buffers=(handle(8), handle(16), handle(32)),
                           statistics=Statistics(computed_mask=1, nnz=3))
    with raises_rule("HT-SEC-16"):
        write_tensor_descriptor(csr)
    roundtrip(csr.replace(statistics=Statistics(computed_mask=1, nnz=2)))
    roundtrip(csr.replace(statistics=Statistics(computed_mask=0, nnz=3)))


@covers("HT-SEC-17", "HT-SEC-18")
def test_writer_adds_no_statistics_of_its_own():
    assert encode(dense()) == vector("row_major_f32_3x4.bin")  # no section unless given
    assert Statistics().computed_mask == 0  # nothing is claimed known unless set
    data = encode(dense(statistics=Statistics(computed_mask=0x04, value_min=1.0, value_max=2.0, value_abs_max=2.0)))
    assert field_bytes(data, "statistics.computed_mask") == u32(0x04)


EXT = ExtensionType(bit_width=4, packing_factor=2, is_float=0, is_signed=1)


def private(**fields) -> TensorDescriptor:
    values = dict(type_tag=0xF3, shape=(5,), buffers=(handle(3),), extension_type=EXT)
    values.update(fields)
    return TensorDescriptor(**values)


@covers("HT-SEC-21", "HE-07")
def test_extension_type_layout():
    assert EXTENSION_TYPE.sizeof() == 20
    assert {k: v[0] for k, v in field_offsets(EXTENSION_TYPE).items()} == {
        "bit_width": 0, "packing_factor": 4, "is_float": 5, "is_signed": 6, "sign_bits": 7, "exponent_bits": 8,
        "mantissa_bits": 9, "reserved": 10, "exponent_bias": 12, "has_nan": 16, "has_inf": 17, "reserved2": 18}
    back = roundtrip(private())
    assert back.extension_type == EXT and back.flags == 4
    with raises_rule("HT-SEC-21"):  # flag without the section
        write_tensor_descriptor(private(extension_type=None, flags=4))


def test_extension_flag_matches_the_type_tag():
    with raises_rule("HT-SEC-19"):
        write_tensor_descriptor(private(extension_type=None))
    with raises_rule("HT-SEC-20"):
        write_tensor_descriptor(dense(extension_type=EXT))
    data = encode(private())
    with raises_rule("HT-SEC-19"):
        read_tensor_descriptor(patch_field(data, "flags", 0))


FLOAT_EXT = ExtensionType(bit_width=16, packing_factor=1, is_float=1, sign_bits=1, exponent_bits=5,
                          mantissa_bits=10, exponent_bias=15, has_nan=1, has_inf=1)


@pytest.mark.parametrize("code, base, field, value", [
    ("HT-SEC-22", EXT, "bit_width", 0),
    ("HT-SEC-23", FLOAT_EXT, "packing_factor", 2),
    ("HT-SEC-24", EXT, "bit_width", 3),
    ("HT-SEC-24", EXT, "bit_width", 6),
    ("HT-SEC-25", EXT, "packing_factor", 4),
    ("HT-SEC-34", FLOAT_EXT, "bit_width", 12),
    ("HT-SEC-21", EXT, "is_float", 2),
    ("HT-SEC-21", EXT, "is_signed", 2),
    ("HT-SEC-26", FLOAT_EXT, "is_signed", 1),
    ("HT-SEC-27", FLOAT_EXT, "sign_bits", 2),
    ("HT-SEC-28", EXT, "sign_bits", 1),
    ("HT-SEC-29", EXT, "exponent_bits", 1),
    ("HT-SEC-30", EXT, "mantissa_bits", 1),
    ("HT-SEC-32", EXT, "reserved", b"\x00\x01"),
    ("HT-SEC-31", EXT, "exponent_bias", 7),
    ("HT-SEC-21", EXT, "has_nan", 3),
    ("HT-SEC-21", EXT, "has_inf", 3),
    ("HT-SEC-33", EXT, "reserved2", b"\x00\x01"),
])
def test_extension_type_refusals(code, base, field, value):
    d = private(extension_type=base, buffers=(handle(3 if base is EXT else 10),))
    data = encode(d)
    with raises_rule(code, offset=at(data, f"extension_type.{field}")):
        read_tensor_descriptor(patch_field(data, f"extension_type.{field}", value))


def test_private_type_sizes_from_its_section():
    """HT-SEC-34: ceil(N / packing_factor) for sub-byte widths, N * bit_width / 8 otherwise."""
    with raises_rule("HT-SEC-34"):
        write_tensor_descriptor(private(buffers=(handle(2),)))
    roundtrip(private(extension_type=FLOAT_EXT, buffers=(handle(10),)))
    with raises_rule("HT-SEC-34"):
        write_tensor_descriptor(private(extension_type=FLOAT_EXT, buffers=(handle(9),)))


@covers("HT-SEC-35")
def test_composite_member_section():
    d = roundtrip(dense(statistics=STATS, composite_member=CompositeMember(member_role=1)))
    data = encode(d)
    assert field_bytes(data, "composite_member") == b"\x01" + bytes(15) and d.flags == 0x18
    with raises_rule("HT-SEC-36", offset=at(data, "composite_member.member_role")):
        read_tensor_descriptor(patch_field(data, "composite_member.member_role", 2))
    with raises_rule("HT-SEC-37", offset=at(data, "composite_member.reserved")):  # its last byte set
        read_tensor_descriptor(patch_field(data, "composite_member.reserved", bytes(14) + b"\x01"))


def test_sections_follow_wire_order():
    """Statistics (bit 3) come before the extension type (bit 2) on the wire (HT-HDR-02)."""
    d = private(statistics=Statistics(computed_mask=1, nnz=5), composite_member=CompositeMember())
    data = encode(d)
    assert field_bytes(data, "extension_type") == field_bytes(encode(private()), "extension_type")
    assert at(data, "statistics") < at(data, "extension_type") < at(data, "composite_member")
    assert roundtrip(d).flags == 0x1C


def test_head_carries_no_member_section():
    head = TensorDescriptor(type_tag=0x03, shape=(8, 8), layout=CompositeHead(composition_rule=1, member_count=2),
                            composite_member=CompositeMember())
    with raises_rule("HT-SEC-38"):
        write_tensor_descriptor(head)
    data = vector("composite_head_partition.bin")
    flagged = with_length(patch_field(data, "flags", 0x10) + bytes(16))
    with raises_rule("HT-SEC-38"):
        read_tensor_descriptor(flagged)
