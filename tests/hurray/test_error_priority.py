"""The first error reported follows DIGEST Appendix A: one test per ordering pair listed there.

Each case puts two faults into one valid descriptor: the earlier step's fault must be the one
reported, and each fault alone must be refused with its own rule (so both are real faults).
Fields are found by path through the reader's declaration (``field_positions``), never by a
hand-written offset.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from itertools import pairwise

import pytest

from hurray_decl import MXFP, NF4, PerBlockAffine, PerChannelAffine, PerTensorAffine
from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.quantization import decode_quantization, encode_quantization
from hurray_decl.hurray.tensor import (
    COO,
    BufferHandle,
    CompositeHead,
    CompositeMember,
    ExtensionType,
    Shard,
    Statistics,
    TensorDescriptor,
    read_tensor_descriptor,
    write_tensor_descriptor,
)
from hurray_decl.hurray.tensor.reader import field_positions
from tests.hurray.tensor_support import at as offset_of, end, field_bytes, patch_field, u8, u32, u64, with_length

Fault = Callable[[bytes, dict], bytes]
"""A fault applied to descriptor bytes, given the field positions of the valid base."""


def at(path: str, raw: bytes) -> Fault:
    """Overwrite the field ``path`` (``buffers -> 0 -> alignment``) with ``raw``."""
    def apply(data: bytes, positions: dict) -> bytes:
        where = positions[f"descriptor -> {path}"]
        return data[:where] + raw + data[where + len(raw):]
    return apply


def cut_inside(path: str) -> Fault:
    """The input ends one byte into the field ``path``."""
    return lambda data, positions: data[:positions[f"descriptor -> {path}"] + 1]


def grow(extra: bytes) -> Fault:
    """Bytes after the last section, counted in descriptor_length."""
    return lambda data, _: with_length(data + extra)


def claim_more(data: bytes, _: dict) -> bytes:
    """descriptor_length 4 bytes more than the input holds."""
    return patch_field(data, "descriptor_length", len(data) + 4)


def handles(*sizes: int) -> tuple[BufferHandle, ...]:
    return tuple(BufferHandle(byte_size=s) for s in sizes)


DENSE = write_tensor_descriptor(TensorDescriptor(type_tag=0x03, shape=(3, 4), buffers=handles(48)))
COO_BASE = write_tensor_descriptor(TensorDescriptor(type_tag=0x03, shape=(4, 4), layout=COO(nnz=1),
                                                    buffers=handles(4, 16)))
HEAD = write_tensor_descriptor(TensorDescriptor(type_tag=0x03, shape=(4,), layout=CompositeHead(
    composition_rule=0x01, member_count=1)))
QUANTIZED = write_tensor_descriptor(TensorDescriptor(
    type_tag=0x10, shape=(4, 8), quantization=PerBlockAffine(axis=1, block_size=4, scale_buffer_index=1,
                                                             symmetric=True, scale_type_tag=3),
    buffers=handles(32, 32), shard=Shard(parent_shape=(8, 8), shard_offset=(0, 0)),
    statistics=Statistics(), composite_member=CompositeMember()))
PRIVATE = write_tensor_descriptor(TensorDescriptor(
    type_tag=0xF3, shape=(4,), buffers=handles(4), statistics=Statistics(),
    extension_type=ExtensionType(bit_width=8), composite_member=CompositeMember()))
_HEAD_PAYLOAD = encode_quantization(PerTensorAffine(scale=1.0))
HEAD_QUANTIZED = with_length(patch_field(HEAD, "flags", 1) + u32(len(_HEAD_PAYLOAD)) + _HEAD_PAYLOAD)

# (Appendix A pair, base, earlier fault and its rule, later fault and its rule)
TENSOR_PAIRS = [
    ("1 truncated < 2 magic", DENSE, cut_inside("descriptor_length"), "HT-HDR-08", at("magic", b"XXXX"), "HT-HDR-04"),
    ("2 magic < 3 version_major", DENSE, at("magic", b"XXXX"), "HT-HDR-04", at("version_major", u8(2)), "HT-HDR-05"),
    ("3 version_major < 4 length", DENSE, at("version_major", u8(2)), "HT-HDR-05",
     at("descriptor_length", u32(12)), "HT-HDR-07"),
    ("4 length < 5 flags", DENSE, at("descriptor_length", u32(12)), "HT-HDR-07", at("flags", u32(1 << 8)),
     "HT-HDR-12"),
    ("5 flags < 6 type_tag", DENSE, at("flags", u32(1 << 8)), "HT-HDR-12", at("type_tag", u8(0x47)), "HE-06"),
    ("5 flags < input shorter than descriptor_length", DENSE, at("flags", u32(1 << 8)), "HT-HDR-12",
     claim_more, "HT-HDR-08"),
    ("6 type_tag < input shorter than descriptor_length", DENSE, at("type_tag", u8(0x47)), "HE-06",
     claim_more, "HT-HDR-08"),
    ("6 type_tag < 7 layout_tag", DENSE, at("type_tag", u8(0x00)), "HE-02", at("layout_tag", u8(0xFF)),
     "HT-HDR-15"),
    ("7 layout_tag < 8 rank", DENSE, at("layout_tag", u8(0xFF)), "HT-HDR-15", at("rank", u32(65)), "HT-HDR-13"),
    ("8 rank < 9 shape (input ends in it)", DENSE, at("rank", u32(65)), "HT-HDR-13", cut_inside("shape -> 1"),
     "HT-HDR-08"),
    ("9 shape < 10 layout (input ends in shape)", COO_BASE, cut_inside("shape -> 1"), "HT-HDR-08",
     at("layout -> reserved", u8(1)), "HT-LAY-21"),
    ("10 layout < 11 extension flag", COO_BASE, at("layout -> reserved", u8(1)), "HT-LAY-21",
     at("flags", u32(0x04)), "HT-SEC-20"),
    ("11 extension flag < 12 buffer table", DENSE, at("flags", u32(0x04)), "HT-SEC-20",
     at("buffer_count", u8(0)), "HT-BUFT-02"),
    ("12 empty table < 18 length", DENSE, at("buffer_count", u8(0)), "HT-BUFT-02", grow(b"\x00"), "HT-HDR-09"),
    ("12 empty table < 13 quantization", DENSE, at("buffer_count", u8(0)), "HT-BUFT-02", at("flags", u32(1)),
     "HT-HDR-08"),
    ("12 head buffers < 12 head byte_offset", HEAD, at("buffer_count", u8(1)), "HT-BUFT-03",
     at("byte_offset", u64(8)), "HT-HDR-20"),
    ("12 handle < 13 quantization slice", QUANTIZED, at("buffers -> 0 -> alignment", u32(48)), "HT-BUFT-12",
     at("quantization_length", u32(1000)), "HT-HDR-08"),
    ("13 cross-check < 14 shard", QUANTIZED, at("quantization -> axis", u32(2)), "HQ-PB-02",
     at("shard -> shard_offset -> 0", u64(7)), "HT-SEC-04"),
    ("14 shard < 15 statistics", QUANTIZED, at("shard -> shard_offset -> 0", u64(7)), "HT-SEC-04",
     at("statistics -> computed_mask", u32(1 << 7)), "HT-SEC-09"),
    ("15 statistics < 16 extension type", PRIVATE, at("statistics -> computed_mask", u32(1 << 7)), "HT-SEC-09",
     at("extension_type -> packing_factor", u8(2)), "HT-SEC-23"),
    ("16 extension type < 17 member", PRIVATE, at("extension_type -> packing_factor", u8(2)), "HT-SEC-23",
     at("composite_member -> member_role", u8(7)), "HT-SEC-36"),
    ("17 member < 18 length", PRIVATE, at("composite_member -> member_role", u8(7)), "HT-SEC-36",
     grow(b"\x00"), "HT-HDR-09"),
    ("17 member < input shorter than descriptor_length", PRIVATE, at("composite_member -> member_role", u8(7)),
     "HT-SEC-36", claim_more, "HT-HDR-08"),
]

# Step 12, each handle: reserved byte, device tag, sync mode, memory class, alignment (power of
# two, then minimum), CPU with sync != 0, then the per-device pair.
HANDLE_STEPS = [
    (at("buffers -> 0 -> reserved", u8(1)), "HT-BUFT-23"),
    (at("buffers -> 0 -> device_tag", u8(0xFF)), "HT-BUFT-14"),
    (at("buffers -> 0 -> sync_mode", u8(3)), "HT-BUFT-17"),
    (at("buffers -> 0 -> memory_class", u8(0x07)), "HT-BUFT-19"),
    (at("buffers -> 0 -> alignment", u32(48)), "HT-BUFT-12"),
    (at("buffers -> 0 -> alignment", u32(32)), "HT-BUFT-13"),
    (at("buffers -> 0 -> sync_mode", u8(1)), "HT-BUFT-18"),
    (at("buffers -> 0 -> memory_class", u8(0x03)), "HT-BUFT-22"),
]
HANDLE_PAIRS = [
    (f"12 handle {a[1]} < {b[1]}", DENSE, *a, *b) for a, b in pairwise(HANDLE_STEPS)
    if not (a[1] in ("HT-BUFT-12",) and b[1] == "HT-BUFT-13")  # the same field: see below
] + [("12 handle HT-BUFT-12 < HT-BUFT-18", DENSE, HANDLE_STEPS[4][0], "HT-BUFT-12", HANDLE_STEPS[6][0],
      "HT-BUFT-18")]


def quantized(q, type_tag=0x10, shape=(4, 8), sizes=(32, 32)) -> bytes:
    return write_tensor_descriptor(TensorDescriptor(type_tag=type_tag, shape=shape, quantization=q,
                                                    buffers=handles(*sizes)))


PT = quantized(PerTensorAffine(scale=1.0), sizes=(32,))
PC = quantized(PerChannelAffine(axis=0, scale_buffer_index=1, symmetric=True), sizes=(32, 16))
PB = quantized(PerBlockAffine(axis=1, block_size=4, scale_buffer_index=1, symmetric=True, scale_type_tag=3))
PB_ASYM = quantized(PerBlockAffine(axis=1, block_size=4, scale_buffer_index=1, zero_point_buffer_index=2,
                                   scale_type_tag=3), sizes=(32, 32, 32))
NF = quantized(NF4(axis=1, block_size=8, scale_buffer_index=1), type_tag=0x49, shape=(4, 16), sizes=(32, 32))
MX = quantized(MXFP(axis=1, block_size=16, scale_buffer_index=1), shape=(4, 32), sizes=(128, 8))
NONE32 = u32(0xFFFF_FFFF)

# Quantization payload steps 1-7, the scheme field orders, then the cross-checks (step 8).
PAYLOAD_PAIRS = [
    ("p4 version < p5 scheme length", PT, at("quantization -> scheme_version", u8(2)), "HQ-HDR-11",
     lambda d, p: _payload_cut(d, p, 10), "HQ-HDR-04"),
    ("p5 scheme length < p6 flags", PT, lambda d, p: _payload_cut(d, p, 10), "HQ-HDR-04",
     at("quantization -> flags", u8(0x80)), "HQ-HDR-13"),
    ("p6 flags < p7 fields", PB, at("quantization -> flags", u8(0x81)), "HQ-HDR-13",
     at("quantization -> block_size", u32(0)), "HQ-PB-04"),
    ("0x01 reserved < scale", PT, at("quantization -> reserved", u8(1)), "HQ-PT-05",
     at("quantization -> scale", struct.pack("<f", float("nan"))), "HQ-PT-03"),
    ("0x01 scale < zero-point range", PT, at("quantization -> scale", u32(0)), "HQ-PT-02",
     at("quantization -> zero_point", u32(1000)), "HQ-PT-04"),
    ("0x02 scale index < scale type", PC, at("quantization -> scale_buffer_index", NONE32), "HQ-BUF-01",
     at("quantization -> scale_type_tag", u8(1)), "HQ-PC-06"),
    ("0x02 scale type < reserved", PC, at("quantization -> scale_type_tag", u8(1)), "HQ-PC-06",
     at("quantization -> reserved", u8(1)), "HQ-PC-07"),
    ("0x02 reserved < symmetric index", PC, at("quantization -> reserved", u8(1)), "HQ-PC-07",
     at("quantization -> zero_point_buffer_index", u32(1)), "HQ-PC-04"),
    ("0x03 block_size < scale type", PB, at("quantization -> block_size", u32(3)), "HQ-PB-03",
     at("quantization -> scale_type_tag", u8(9)), "HQ-PB-08"),
    ("0x03 scale type < reserved", PB, at("quantization -> scale_type_tag", u8(9)), "HQ-PB-08",
     at("quantization -> reserved", u8(1)), "HQ-PB-09"),
    ("0x03 reserved < symmetric index", PB, at("quantization -> reserved", u8(1)), "HQ-PB-09",
     at("quantization -> zero_point_buffer_index", u32(2)), "HQ-PB-10"),
    ("0x03 scale type < scale index NONE32", PB, at("quantization -> scale_type_tag", u8(9)), "HQ-PB-08",
     at("quantization -> scale_buffer_index", NONE32), "HQ-BUF-01"),
    ("0x04 block_size < scale index", NF, at("quantization -> block_size", u32(0)), "HQ-NF4-04",
     at("quantization -> scale_buffer_index", NONE32), "HQ-BUF-01"),
    ("0x05 block_size < scale index", MX, at("quantization -> block_size", u32(0)), "HQ-MX-04",
     at("quantization -> scale_buffer_index", NONE32), "HQ-BUF-01"),
    ("8 storage < axis", PB, at("type_tag", u8(0x03)), "HQ-PB-14", at("quantization -> axis", u32(2)), "HQ-PB-02"),
    ("8 axis < shape/block", PB, at("quantization -> axis", u32(2)), "HQ-PB-02",
     at("quantization -> block_size", u32(16)), "HQ-PB-05"),
    ("8 shape/block < index range", PB, at("quantization -> block_size", u32(16)), "HQ-PB-05",
     at("quantization -> scale_buffer_index", u32(5)), "HQ-BUF-01"),
    ("8 index range < alias", PB_ASYM, at("quantization -> scale_buffer_index", u32(5)), "HQ-BUF-01",
     at("quantization -> zero_point_buffer_index", u32(0)), "HQ-BUF-02"),
    ("8 alias < device (scale index first)", PB_ASYM, at("quantization -> scale_buffer_index", u32(0)),
     "HQ-BUF-02", at("buffers -> 2 -> device_tag", u8(0x01)), "HQ-BUF-06"),
    ("8 device < memory class", PB, at("buffers -> 1 -> device_tag", u8(0x01)), "HQ-BUF-06",
     at("buffers -> 1 -> memory_class", u8(0x02)), "HT-BUFT-25"),
    ("8 memory class < exact sizes", PB, at("buffers -> 1 -> memory_class", u8(0x02)), "HT-BUFT-25",
     at("buffers -> 1 -> byte_size", u64(30)), "HQ-BUF-09"),
    ("8 exact sizes < buffer count", PB_ASYM, at("buffers -> 1 -> byte_size", u64(30)), "HQ-BUF-09",
     lambda d, p: at("quantization -> flags", u8(1))(at("quantization -> zero_point_buffer_index", NONE32)(d, p), p),
     "HT-BUFT-05"),
]


def _payload_cut(data: bytes, positions: dict, keep: int) -> bytes:
    """The quantization payload cut to ``keep`` bytes, quantization_length and length following."""
    start = positions["descriptor -> quantization"]
    prefix = positions["descriptor -> quantization_length"]
    return with_length(data[:prefix] + u32(keep) + data[start:start + keep])


def refused(data: bytes) -> str:
    with pytest.raises(HurrayDeclError) as info:
        read_tensor_descriptor(data)
    return info.value.code


CASES = TENSOR_PAIRS + HANDLE_PAIRS + PAYLOAD_PAIRS


@pytest.mark.parametrize("name, base, first, first_code, second, second_code", CASES, ids=[c[0] for c in CASES])
def test_the_earlier_step_is_reported(name, base, first, first_code, second, second_code):
    positions = field_positions(base)  # the base is valid; faults patch fields at its positions
    assert refused(first(base, positions)) == first_code
    assert refused(second(base, positions)) == second_code
    assert refused(second(first(base, positions), positions)) == first_code, f"{name}: Appendix A order"


def test_alignment_power_of_two_before_its_minimum():
    """The same field breaks both: 48 is not a power of two (and below 64); 32 only below."""
    positions = field_positions(DENSE)
    assert refused(at("buffers -> 0 -> alignment", u32(48))(DENSE, positions)) == "HT-BUFT-12"
    assert refused(at("buffers -> 0 -> alignment", u32(32))(DENSE, positions)) == "HT-BUFT-13"


@pytest.mark.parametrize("payload, code", [
    (b"", "HQ-HDR-04"),  # p1: empty
    (b"\x00\x01", "HQ-HDR-07"),  # p2 tag class before p3 (fewer than 4 bytes)
    (b"\x03\x00\x00", "HQ-HDR-04"),  # p3 fewer than 4 bytes before p4 (version 0)
    (b"\x03\x00\x00\x00", "HQ-HDR-12"),  # p4 version before p5 (scheme length)
])
def test_payload_header_order(payload, code):
    with pytest.raises(HurrayDeclError) as info:
        decode_quantization(payload)
    assert info.value.code == code


def test_quantization_section_sliced_then_head_then_payload():
    """Step 13: the slice (DescriptorTruncated), the head (HT-LAY-76), then the payload."""
    assert refused(HEAD_QUANTIZED) == "HT-LAY-76"
    assert offset_of(HEAD_QUANTIZED, "quantization_length") == end(HEAD, "buffer_count")  # after the empty table
    bad_payload = patch_field(HEAD_QUANTIZED, "quantization.scheme_tag", 0x00)
    assert refused(bad_payload) == "HT-LAY-76"  # the head rule before the payload's tag
    assert decode_quantization(field_bytes(HEAD_QUANTIZED, "quantization")).scale == 1.0
    long_slice = patch_field(HEAD_QUANTIZED, "quantization_length", 1000)
    assert refused(long_slice) == "HT-HDR-08"  # the slice before the head rule
