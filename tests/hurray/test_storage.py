"""Element storage: packing, sizes and value maps, checked against the specification's examples
and against value maps computed here from the sign/exponent/mantissa formula."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, strategies as st

from hurray_decl.hurray.tables import storage
from tests.helpers import covers


def raw(hexbytes: str) -> np.ndarray:
    return np.frombuffer(bytes.fromhex(hexbytes), dtype=np.uint8)


@covers("HE-12", "HE-14", "HE-16", "HE-18")
@pytest.mark.parametrize("name, codes, packed", [
    ("uint4", [5, 12, 3], "c503"),
    ("uint2", [3, 1, 2], "27"),
    ("bool", [1, 0, 1, 1, 0], "0d"),
    ("float6_e2m3", [1, 2, 4, 8], "814020"),
])
def test_packing_examples_of_the_digest(name, codes, packed):
    bits = storage.element(name).bits
    assert storage.pack_codes(np.array(codes), bits).hex() == packed
    assert storage.unpack_codes(raw(packed), bits, len(codes)).tolist() == codes


@covers("HE-14", "HE-16")
def test_signed_sub_byte_codes():
    assert storage.decode(raw("8f"), "int4", 2).tolist() == [-1, -8]
    assert storage.decode(raw("e4"), "int2", 4).tolist() == [0, 1, -2, -1]


@covers("HE-13", "HE-15", "HE-17", "HE-19")
@pytest.mark.parametrize("name", ["bool", "uint2", "int2", "uint4", "int4", "float4_e2m1",
                                  "float6_e2m3", "float6_e3m2"])
@given(data=st.data())
def test_sub_byte_round_trip_leaves_unused_bits_zero(name, data):
    kind = storage.element(name)
    codes = np.array(data.draw(st.lists(st.integers(0, (1 << kind.bits) - 1), max_size=23)), dtype=np.uint8)
    packed = storage.pack_codes(codes, kind.bits)
    assert len(packed) == storage.byte_size(name, codes.size)
    assert storage.unpack_codes(np.frombuffer(packed, np.uint8), kind.bits, codes.size).tolist() == codes.tolist()
    # Every bit past the last element is zero.
    used_bits = codes.size * kind.bits
    as_int = int.from_bytes(packed, "little")
    assert as_int >> used_bits == 0


@covers("HE-21", "HE-20")
@pytest.mark.parametrize("name, count, size", [
    ("int8", 5, 5), ("float32", 3, 12), ("complex128", 2, 32), ("bool", 9, 2), ("uint2", 5, 2),
    ("int4", 3, 2), ("float6_e3m2", 5, 6), ("float6_e2m3", 4, 3), ("float6_e2m3", 1, 3), ("int4", 0, 0),
])
def test_contiguous_sizes(name, count, size):
    assert storage.byte_size(name, count) == size


@covers("HE-22")
def test_elements_are_addressed_from_the_first_byte_given():
    data = raw("ff 21 43")  # a byte before the tensor, then uint4 1, 2, 3, 4
    assert storage.decode(data[1:], "uint4", 4).tolist() == [1, 2, 3, 4]


def formula_values(sign_bit: int, exp_bits: int, man_bits: int, bias: int) -> list[float]:
    """Values of all codes by DIGEST § 4.5's general rule (no special codes)."""
    values = []
    for code in range(1 << (1 + exp_bits + man_bits)):
        sign = -1.0 if code >> sign_bit & 1 else 1.0
        e = code >> man_bits & ((1 << exp_bits) - 1)
        m = code & ((1 << man_bits) - 1)
        mag = (m / (1 << man_bits)) * 2.0 ** (1 - bias) if e == 0 else (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
        values.append(sign * mag)
    return values


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


@covers("HE-23", "HE-24", "HE-27", "HE-28", "HE-29")
@pytest.mark.parametrize("name, layout, specials, largest", [
    ("float8_e4m3", (7, 4, 3, 7), {0x7F: math.nan, 0xFF: math.nan}, 448.0),
    ("float8_e5m2", (7, 5, 2, 15), {0x7C: math.inf, 0xFC: -math.inf, **{c: math.nan for c in (
        0x7D, 0x7E, 0x7F, 0xFD, 0xFE, 0xFF)}}, 57344.0),
    ("float4_e2m1", (3, 2, 1, 1), {}, 6.0),
    ("float6_e2m3", (5, 2, 3, 1), {}, 7.5),
    ("float6_e3m2", (5, 3, 2, 3), {}, 28.0),
])
def test_value_maps(name, layout, specials, largest):
    table = storage.value_table(name)
    expected = formula_values(*layout)
    expected = [specials.get(code, value) for code, value in enumerate(expected)]
    mismatches = [(c, float(t), e) for c, (t, e) in enumerate(zip(table, expected)) if not same(float(t), e)]
    assert not mismatches, f"first mismatch (code, ours, formula): {mismatches[0]}"
    assert np.nanmax(table[np.isfinite(table)]) == largest


@covers("HE-25")
def test_e8m0_is_a_power_of_two():
    table = storage.value_table("float8_e8m0")
    assert all(table[e] == 2.0 ** (e - 127) for e in range(1, 255))


@covers("HE-30")
@pytest.mark.parametrize("name, largest", [("float4_e2m1", 6.0), ("float6_e2m3", 7.5), ("float6_e3m2", 28.0)])
def test_encoding_clamps_to_the_largest_magnitude(name, largest):
    packed = storage.encode(np.array([1e9, -1e9, largest * 1.01]), name)
    assert storage.decode(np.frombuffer(packed, np.uint8), name, 3).tolist() == [largest, -largest, largest]


@covers("HE-01", "HE-11", "HE-31")
def test_whole_byte_types_are_little_endian():
    assert storage.decode(raw("0102"), "int16", 1).tolist() == [0x0201]
    assert storage.decode(raw("00c0"), "bfloat16", 1).tolist() == [-2.0]  # top half of f32 -2.0
    assert storage.decode(raw("003c"), "float16", 1).tolist() == [1.0]
    pair = struct.pack("<ff", 1.5, -2.0)
    assert storage.decode(np.frombuffer(pair, np.uint8), "complex64", 1).tolist() == [complex(1.5, -2.0)]
    assert storage.decode(raw("ffffffff"), "uint32", 1).tolist() == [0xFFFF_FFFF]


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32"])
def test_scale_checks_on_the_bits_agree_with_float32_for_every_value(name):
    """The checks dequantization runs on 16-bit scales read the bits (no float32 copy): for every
    one of the 65536 bit patterns (and float32's specials), the same NaN/infinity and zero masks as
    comparing the float32 values; a mask shifted by one bit position would disagree here."""
    if name == "float32":
        values = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 1e-45, 3.4e38], dtype=np.float32)
    else:
        values = np.arange(1 << 16, dtype=np.uint16).view(storage.dtype(name))
    wide = values.astype(np.float32)
    assert np.array_equal(storage.not_finite(values), ~np.isfinite(wide))
    assert np.array_equal(storage.is_zero(values), wide == 0)
    assert storage.not_finite(values).sum() == {"float16": 2048, "bfloat16": 256, "float32": 3}[name]
