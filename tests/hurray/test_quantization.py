"""Quantization descriptors: layouts, round trips, and one violating input per bytes-level rule."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import example, given, strategies as st

import hurray_decl as hd
from hurray_decl.errors import HurrayDeclError, OpaqueDataAccess, RegistrationError
from hurray_decl.hurray.quantization import ASSIGNED, tag_class
from hurray_decl.hurray.schemes import BUILTIN
from hurray_decl.hurray.strategies import quantization_descriptors, quantization_payloads
from hurray_decl.hurray.tables.tags import TagClass
from tests.helpers import covers, raises_rule
from tests.hurray.tensor_support import field_bytes
from tests.paths import DESCRIPTORS

VECTOR = DESCRIPTORS / "quant_per_block_int4_128x128.bin"

# Field offsets and the fixed length as the specification's tables print them (RULES.md
# HQ-PT-01, HQ-PC-01, HQ-PB-01, HQ-NF4-01, HQ-MX-01), written out independently of the code.
SPEC_HEADER = {"scheme_tag": 0, "scheme_version": 1, "flags": 2}  # HQ-HDR-01: every payload starts so
SPEC_LAYOUTS = {
    "per_tensor_affine": (16, {"scale": 4, "zero_point": 8, "reserved": 12}),
    "per_channel_affine": (20, {"axis": 4, "scale_buffer_index": 8, "zero_point_buffer_index": 12,
                                "scale_type_tag": 16, "reserved": 17}),
    "per_block_affine": (24, {"axis": 4, "block_size": 8, "scale_buffer_index": 12,
                              "zero_point_buffer_index": 16, "scale_type_tag": 20, "reserved": 21}),
    "nf4": (16, {"axis": 4, "block_size": 8, "scale_buffer_index": 12}),
    "mxfp": (16, {"axis": 4, "block_size": 8, "scale_buffer_index": 12}),
}
LAYOUT_RULES = {"per_tensor_affine": "HQ-PT-01", "per_channel_affine": "HQ-PC-01",
                "per_block_affine": "HQ-PB-01", "nf4": "HQ-NF4-01", "mxfp": "HQ-MX-01"}

WORKED_EXAMPLE = bytes.fromhex("02 01 00 00 00 00 00 00 01 00 00 00 02 00 00 00 03 00 00 00")

# One valid payload per scheme; every violation below patches one field of one of these.
VALID = {
    "per_tensor_affine": bytes.fromhex("01 01 00 00") + struct.pack("<fi4x", 0.5, 3),
    "per_channel_affine": WORKED_EXAMPLE,
    "per_block_affine": field_bytes(VECTOR.read_bytes(), "quantization"),
    "nf4": bytes.fromhex("04 01 00 00") + struct.pack("<III", 0, 64, 1),
    "mxfp": bytes.fromhex("05 01 00 00") + struct.pack("<III", 1, 32, 1),
}


def spec_offset(name: str, field: str) -> int:
    """Where ``field`` of the scheme ``name`` sits in its payload, by the specification's tables."""
    return {**SPEC_HEADER, **SPEC_LAYOUTS[name][1]}[field]


def patch(name: str, field: str, raw: bytes) -> bytes:
    """VALID[name] with ``field`` (at its specification offset) replaced by ``raw``."""
    data = bytearray(VALID[name])
    offset = spec_offset(name, field)
    data[offset:offset + len(raw)] = raw
    return bytes(data)


def u32(value: int) -> bytes:
    return struct.pack("<I", value)


def f32(value: float) -> bytes:
    return struct.pack("<f", value)


NONE = u32(0xFFFF_FFFF)

# (rule, scheme, field, replacement bytes): each breaks exactly one rule.
VIOLATIONS = [
    ("HQ-HDR-11", "per_tensor_affine", "scheme_version", b"\x02"),
    ("HQ-HDR-11", "mxfp", "scheme_version", b"\xff"),
    ("HQ-HDR-12", "per_block_affine", "scheme_version", b"\x00"),
    ("HQ-HDR-12", "nf4", "scheme_version", b"\x00"),
    ("HQ-HDR-13", "per_tensor_affine", "flags", b"\x01\x00"),
    ("HQ-HDR-13", "per_channel_affine", "flags", b"\x02\x00"),
    ("HQ-HDR-13", "per_block_affine", "flags", b"\x01\x80"),
    ("HQ-HDR-13", "nf4", "flags", b"\x01\x00"),
    ("HQ-HDR-13", "mxfp", "flags", b"\x00\x01"),
    ("HQ-PT-02", "per_tensor_affine", "scale", f32(0.0)),
    ("HQ-PT-02", "per_tensor_affine", "scale", f32(-0.0)),
    ("HQ-PT-03", "per_tensor_affine", "scale", f32(math.inf)),
    ("HQ-PT-03", "per_tensor_affine", "scale", f32(-math.inf)),
    ("HQ-PT-03", "per_tensor_affine", "scale", bytes.fromhex("0000c07f")),
    ("HQ-PT-05", "per_tensor_affine", "reserved", b"\x00\x00\x00\x01"),
    ("HQ-PC-04", "per_channel_affine", "flags", b"\x01\x00"),
    ("HQ-PC-05", "per_channel_affine", "zero_point_buffer_index", NONE),
    ("HQ-PC-06", "per_channel_affine", "scale_type_tag", b"\x01"),
    ("HQ-PC-06", "per_channel_affine", "scale_type_tag", b"\x02"),
    ("HQ-PC-07", "per_channel_affine", "reserved", b"\x00\x00\x80"),
    ("HQ-PB-03", "per_block_affine", "block_size", u32(6)),
    ("HQ-PB-03", "per_block_affine", "block_size", u32(0xFFFF_FFFF)),
    ("HQ-PB-04", "per_block_affine", "block_size", u32(1)),
    ("HQ-PB-04", "per_block_affine", "block_size", u32(0)),
    ("HQ-PB-08", "per_block_affine", "scale_type_tag", b"\x00"),
    ("HQ-PB-08", "per_block_affine", "scale_type_tag", b"\x04"),
    ("HQ-PB-09", "per_block_affine", "reserved", b"\x01\x00\x00"),
    ("HQ-PB-10", "per_block_affine", "zero_point_buffer_index", u32(2)),
    ("HQ-PB-11", "per_block_affine", "flags", b"\x00\x00"),
    ("HQ-NF4-03", "nf4", "block_size", u32(24)),
    ("HQ-NF4-04", "nf4", "block_size", u32(4)),
    ("HQ-MX-03", "mxfp", "block_size", u32(48)),
    ("HQ-MX-04", "mxfp", "block_size", u32(8)),
    ("HQ-MX-05", "mxfp", "block_size", u32(4096)),
    ("HQ-BUF-01", "per_channel_affine", "scale_buffer_index", NONE),
    ("HQ-BUF-01", "nf4", "scale_buffer_index", NONE),
    ("HQ-BUF-01", "mxfp", "scale_buffer_index", NONE),
]


@pytest.mark.parametrize("code, name, field, raw", VIOLATIONS,
                         ids=[f"{c}-{n}-{f}" for c, n, f, _ in VIOLATIONS])
def test_each_violation_raises_its_rule_at_its_field(code, name, field, raw):
    data = patch(name, field, raw)
    # Cross-field rules report the field they constrain; single-field rules the field itself.
    reported = "zero_point_buffer_index" if code in ("HQ-PC-04", "HQ-PB-11") else field
    with raises_rule(code, offset=spec_offset(name, reported), path=reported) as info:
        hd.decode_quantization(data)
    assert str(info.value).startswith(f"[{code}]")
    assert "expected" in str(info.value)


@pytest.mark.parametrize("tag, code, cls", [
    (0x00, "HQ-HDR-07", TagClass.INVALID),
    (0xFF, "HQ-HDR-07", TagClass.INVALID),
    (0x06, "HQ-HDR-08", TagClass.UNASSIGNED_TIER1),
    (0x3F, "HQ-HDR-08", TagClass.UNASSIGNED_TIER1),
    (0x40, "HQ-HDR-08", TagClass.UNASSIGNED_TIER2),
    (0x5F, "HQ-HDR-08", TagClass.UNASSIGNED_TIER2),
    (0x60, "HQ-HDR-09", TagClass.RESERVED_NESTED),
    (0x7F, "HQ-HDR-09", TagClass.RESERVED_NESTED),
    (0x80, "HQ-HDR-10", TagClass.RESERVED_FUTURE),
    (0xEF, "HQ-HDR-10", TagClass.RESERVED_FUTURE),
    (0xF0, "HQ-EXT-03", TagClass.PRIVATE),
    (0xFE, "HQ-EXT-03", TagClass.PRIVATE),
])
def test_tag_classes_refused_in_strict_mode(tag, code, cls):
    assert tag_class(tag) is cls
    with raises_rule(code, offset=SPEC_HEADER["scheme_tag"], path="scheme_tag"):
        hd.decode_quantization(bytes([tag, 1, 0, 0]) + bytes(12))


def test_every_tag_byte_has_exactly_one_class():
    classes = [tag_class(t) for t in range(256)]
    assert [t for t in range(256) if classes[t] is TagClass.ASSIGNED] == [1, 2, 3, 4, 5]
    assert {c for c in classes} == set(TagClass)
    assert sum(c is TagClass.PRIVATE for c in classes) == 15


@pytest.mark.parametrize("data", [b"", b"\x03", b"\x03\x01\x01", VALID["per_block_affine"][:23],
                                  VALID["per_tensor_affine"][:15], b"\x06\x01\x00"])
def test_short_payloads_are_truncated_and_never_read_past(data):
    with raises_rule("HQ-HDR-04", offset=len(data)):
        hd.decode_quantization(data, permissive=True)


@covers("HQ-HDR-04")
def test_version_is_checked_before_length():
    # Appendix A order: the version of a 2-byte payload is reported before its length.
    with raises_rule("HQ-HDR-11", offset=SPEC_HEADER["scheme_version"]):
        hd.decode_quantization(b"\x02\x07\x00\x00")


@covers("HQ-HDR-01", "HQ-HDR-02", "HQ-PC-01")
def test_per_channel_worked_example_is_exactly_its_20_bytes():
    model = hd.PerChannelAffine(axis=0, scale_buffer_index=1, zero_point_buffer_index=2)
    assert hd.encode_quantization(model) == WORKED_EXAMPLE
    decoded = hd.decode_quantization(WORKED_EXAMPLE)
    assert decoded == model
    assert (decoded.scheme_tag, decoded.scheme_version, decoded.flags) == (2, 1, 0)
    assert decoded.symmetric is False and decoded.scale_type_tag == 3


@covers("HQ-PB-01")
def test_conformance_vector_per_block_payload():
    payload = VALID["per_block_affine"]
    decoded = hd.decode_quantization(payload)
    assert isinstance(decoded, hd.PerBlockAffine)
    assert (decoded.axis, decoded.block_size, decoded.symmetric) == (1, 128, True)
    assert decoded.scale_buffer_index == 1 and decoded.zero_point_buffer_index is None
    assert decoded.scale_type_tag == 0x01  # float16
    assert hd.encode_quantization(decoded) == payload


@covers("HQ-PT-01", "HQ-PC-01", "HQ-PB-01", "HQ-NF4-01", "HQ-MX-01", "HQ-HDR-02")
@pytest.mark.parametrize("row", BUILTIN, ids=lambda r: r.name)
def test_declared_layout_matches_the_specification_table(row):
    length, fields = SPEC_LAYOUTS[row.name]
    assert row.length == length
    assert {k: row.offsets[k][0] for k in fields} == fields
    assert {k: row.offsets[k][0] for k in SPEC_HEADER} == SPEC_HEADER
    assert row.layout_rule == LAYOUT_RULES[row.name]
    module = __import__(f"hurray_decl.hurray.schemes.{row.name}", fromlist=["LENGTH"])
    assert module.LENGTH == row.length


@covers("HQ-HDR-14")
def test_every_tier_1_scheme_is_implemented():
    tier1 = {row.tag for row in BUILTIN if row.tier == 1}
    assert tier1 == {0x01, 0x02, 0x03} and tier1 <= ASSIGNED


@covers("HQ-HDR-06")
def test_dispatch_is_on_the_tag_alone():
    # The same 16 bytes after the tag mean different fields under NF4 and MXFP.
    nf4 = hd.decode_quantization(patch("nf4", "block_size", u32(16)))
    mx = hd.decode_quantization(b"\x05" + patch("nf4", "block_size", u32(16))[1:])
    assert type(nf4) is hd.NF4 and type(mx) is hd.MXFP
    assert (nf4.block_size, mx.block_size) == (16, 16)
    with raises_rule("HQ-HDR-06", offset=SPEC_HEADER["scheme_tag"]):
        hd.scheme("nf4").struct.parse(VALID["mxfp"])


@covers("HQ-HDR-03", "HQ-HDR-05")
@given(quantization_descriptors(), st.binary(max_size=40))
def test_padding_is_kept_and_counted(descriptor, padding):
    payload = hd.encode_quantization(descriptor) + padding
    decoded = hd.decode_quantization(payload)
    assert decoded.padding == padding
    assert hd.encode_quantization(decoded) == payload
    assert len(payload) == hd.scheme(descriptor.scheme_tag).length + len(padding)


@pytest.mark.parametrize("row", BUILTIN, ids=lambda r: r.name)
@given(data=st.data())
def test_round_trip_every_scheme(row, data):
    descriptor = data.draw(quantization_descriptors(row.tag))
    payload = hd.encode_quantization(descriptor)
    assert len(payload) == row.length
    assert hd.decode_quantization(payload) == descriptor
    assert hd.encode_quantization(hd.decode_quantization(payload)) == payload
    assert hd.load_quantization(descriptor.model_dump_json()) == descriptor


def _mutants(payload: bytes, positions: list[int], values: list[int]) -> bytes:
    data = bytearray(payload)
    for pos, val in zip(positions, values):
        if data:
            data[pos % len(data)] = val
    return bytes(data)


@given(st.one_of(st.binary(max_size=40),
                 st.builds(_mutants, quantization_payloads(),
                           st.lists(st.integers(0, 63), max_size=4),
                           st.lists(st.integers(0, 255), max_size=4))),
       st.booleans())
@example(b"\x03\x01\x00\x00" + b"\xff" * 20, False)
@example(b"\x01\x01\x00\x00\x00\x00\x80\xff" + bytes(8), True)
def test_arbitrary_and_mutated_bytes_raise_only_hurray_errors(data, permissive):
    try:
        decoded = hd.decode_quantization(data, permissive=permissive)
    except HurrayDeclError as err:
        assert err.code and err.path.startswith("descriptor")
        assert err.offset is None or 0 <= err.offset <= len(data)
        return
    assert hd.encode_quantization(decoded, permissive=permissive) == data


@covers("HQ-EXT-01")
def test_strict_is_the_default():
    private = bytes([0xF7, 1, 0, 0, 9, 9])
    with raises_rule("HQ-EXT-03"):
        hd.decode_quantization(private)
    assert isinstance(hd.decode_quantization(private, permissive=True), hd.OpaqueQuantization)


@covers("HQ-EXT-02")
@pytest.mark.parametrize("tag", [0x06, 0x45, 0x60, 0x9A, 0xF0])
def test_permissive_mode_keeps_unknown_schemes_opaque(tag):
    payload = bytes([tag, 7, 0x34, 0x12]) + b"\x01\x02\x03"
    opaque = hd.decode_quantization(payload, permissive=True)
    assert (opaque.scheme_tag, opaque.scheme_version, opaque.flags, opaque.payload) == (
        tag, 7, 0x1234, b"\x01\x02\x03")
    assert hd.encode_quantization(opaque, permissive=True) == payload
    with raises_rule("HQ-EXT-02"):
        hd.kernel_for(opaque)
    with pytest.raises(OpaqueDataAccess):
        hd.kernel_for(opaque)


@pytest.mark.parametrize("tag", [0x00, 0xFF])
def test_permissive_mode_never_accepts_invalid_tags(tag):
    with raises_rule("HQ-HDR-07"):
        hd.decode_quantization(bytes([tag, 1, 0, 0]), permissive=True)


def test_permissive_mode_still_checks_known_schemes():
    with raises_rule("HQ-HDR-13"):
        hd.decode_quantization(patch("nf4", "flags", b"\x04\x00"), permissive=True)


@pytest.mark.parametrize("tag, code", [(0x60, "HQ-HDR-09"), (0xA0, "HQ-HDR-10"), (0xF5, "HQ-EXT-04"),
                                       (0x20, "HQ-HDR-08")])
def test_writer_never_emits_unusable_tags(tag, code):
    opaque = hd.OpaqueQuantization(scheme_tag=tag, payload=b"\x00")
    with raises_rule(code, offset=SPEC_HEADER["scheme_tag"]):
        hd.encode_quantization(opaque)


@pytest.mark.parametrize("cls, fields, code, field", [
    (hd.PerBlockAffine, dict(axis=0, block_size=3, scale_buffer_index=1, flags=1), "HQ-PB-03", "block_size"),
    (hd.PerBlockAffine, dict(axis=0, block_size=0, scale_buffer_index=1, flags=1), "HQ-PB-04", "block_size"),
    (hd.NF4, dict(axis=0, block_size=0, scale_buffer_index=1), "HQ-NF4-04", "block_size"),
    (hd.MXFP, dict(axis=0, block_size=0, scale_buffer_index=1), "HQ-MX-04", "block_size"),
    (hd.NF4, dict(scheme_version=0, axis=0, block_size=64, scale_buffer_index=1), "HQ-HDR-12", "scheme_version"),
    (hd.MXFP, dict(flags=1, axis=0, block_size=32, scale_buffer_index=1), "HQ-HDR-13", "flags"),
    (hd.PerTensorAffine, dict(scale=float("nan")), "HQ-PT-03", "scale"),
    (hd.PerTensorAffine, dict(scale=float("-inf")), "HQ-PT-03", "scale"),
    (hd.PerTensorAffine, dict(scale=0.0), "HQ-PT-02", "scale"),
    (hd.PerTensorAffine, dict(scale=-0.0), "HQ-PT-02", "scale"),
    (hd.PerChannelAffine, dict(axis=0, scale_buffer_index=1, flags=1, scale_type_tag=2), "HQ-PC-06",
     "scale_type_tag"),
])
def test_models_and_writer_refuse_what_the_reader_refuses(cls, fields, code, field):
    """A model is refused when built with a value its bytes could not hold, with the reader's
    code; one that bypassed validation (model_construct) is refused by the writer alike."""
    with raises_rule(code, path=field):
        cls(**fields)
    with raises_rule(code, path=field):
        hd.encode_quantization(cls.model_construct(**fields))


@pytest.mark.parametrize("kwargs, code", [
    ({"symmetric": True, "zero_point_buffer_index": 2}, "HQ-PB-10"),
    ({"symmetric": False}, "HQ-PB-11"),
    ({"symmetric": True, "flags": 0}, "HQ-PB-01"),
])
def test_model_refuses_inconsistent_symmetry(kwargs, code):
    with raises_rule(code):
        hd.PerBlockAffine(axis=0, block_size=32, scale_buffer_index=1, **kwargs)


@covers("HQ-PT-06")
def test_symmetric_per_tensor_is_written_with_zero_point_zero():
    model = hd.PerTensorAffine(scale=2.0, symmetric=True)
    assert model.zero_point == 0 and model.symmetric
    zero_point = spec_offset("per_tensor_affine", "zero_point")
    assert hd.encode_quantization(model)[zero_point:zero_point + 4] == bytes(4)
    with raises_rule("HQ-PT-06", path="zero_point"):
        hd.PerTensorAffine(scale=2.0, zero_point=5, symmetric=True)


def test_float32_fields_refuse_values_they_cannot_hold():
    with raises_rule("HQ-PT-01", path="scale"):
        hd.PerTensorAffine(scale=0.1)


def test_model_field_ranges_are_checked_with_the_layout_rule():
    with raises_rule("HQ-NF4-01", path="axis"):
        hd.NF4(axis=1 << 32, block_size=64, scale_buffer_index=1)
    with raises_rule("HQ-MX-01", path="block_size"):
        hd.load_quantization('{"scheme_tag": 5, "axis": 0, "block_size": "x", "scale_buffer_index": 1}')


def test_load_quantization_needs_a_tag():
    with raises_rule("HQ-HDR-02"):
        hd.load_quantization({"axis": 1})
    with raises_rule("HQ-HDR-02"):
        hd.load_quantization("{not json")


def test_json_dump_uses_spec_field_names():
    dumped = hd.decode_quantization(VALID["per_block_affine"] + b"\xab").model_dump(mode="json")
    assert dumped == {"scheme_tag": 3, "scheme_version": 1, "flags": 1, "padding": "ab", "axis": 1,
                      "block_size": 128, "scale_buffer_index": 1, "zero_point_buffer_index": None,
                      "scale_type_tag": 1, "symmetric": True}


# --- private schemes ---------------------------------------------------------------------

from typing import Literal

import construct as cs

from hurray_decl.declare.model import U32
from hurray_decl.hurray.schemes.quantization import SchemeDescriptor


class GroupPermuted(SchemeDescriptor):
    scheme_tag: Literal[0xF3] = 0xF3
    group_size: U32
    permutation_buffer_index: U32


@pytest.fixture
def private_scheme():
    row = hd.register_private_scheme(
        0xF3, name="group_permuted",
        fields=["group_size" / cs.Int32ul * "elements per group",
                "permutation_buffer_index" / cs.Int32ul * "buffer holding the permutation"],
        model=GroupPermuted, kernel=lambda *a: None, flags_defined={0: "ORDERED"},
    )
    yield row
    hd.unregister_private_scheme(0xF3)


@covers("HQ-EXT-03")
def test_registered_private_scheme_decodes_and_encodes(private_scheme):
    payload = bytes([0xF3, 1, 1, 0]) + struct.pack("<II", 128, 2) + b"\xee"
    decoded = hd.decode_quantization(payload)
    assert isinstance(decoded, GroupPermuted)
    assert (decoded.group_size, decoded.permutation_buffer_index, decoded.padding) == (128, 2, b"\xee")
    assert hd.encode_quantization(decoded) == payload
    assert hd.kernel_for(decoded) is private_scheme.kernel
    assert private_scheme.length == 12
    with raises_rule("HQ-HDR-13", offset=SPEC_HEADER["flags"]):
        hd.decode_quantization(bytes([0xF3, 1, 2, 0]) + bytes(8))


@pytest.mark.parametrize("tag", [0x01, 0x06, 0x60, 0xEF, 0xFF, 0x100])
def test_private_registration_outside_the_private_range_is_refused(tag):
    with pytest.raises(RegistrationError) as info:
        hd.register_private_scheme(tag, name="x", fields=[], model=GroupPermuted)
    assert info.value.code == "HQ-EXT-03"
    assert hd.SCHEMES.get(tag) is None or tag in ASSIGNED


def test_private_registration_twice_is_refused(private_scheme):
    with pytest.raises(RegistrationError):
        hd.register_private_scheme(0xF3, name="again", fields=[], model=GroupPermuted)
    assert hd.scheme(0xF3).name == "group_permuted"


def test_built_in_schemes_cannot_be_unregistered():
    with pytest.raises(RegistrationError):
        hd.unregister_private_scheme(0x02)


def test_scheme_lookup_by_unknown_name():
    with raises_rule("HQ-HDR-08"):
        hd.scheme("per_row_affine")


def test_reader_and_writer_report_the_same_rule_when_several_fail():
    # block_size 3 is below MXFP's minimum (innermost rule) and not a power of two.
    payload = b"\x05\x01\x00\x00" + struct.pack("<III", 0, 3, 1)
    with raises_rule("HQ-MX-04", offset=spec_offset("mxfp", "block_size")):
        hd.decode_quantization(payload)
    with raises_rule("HQ-MX-04", path="block_size"):  # a model has no byte offsets
        hd.MXFP(axis=0, block_size=3, scale_buffer_index=1)
    with raises_rule("HQ-MX-04", path="block_size"):
        hd.encode_quantization(hd.MXFP.model_construct(axis=0, block_size=3, scale_buffer_index=1))
