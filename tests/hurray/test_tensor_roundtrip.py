"""Hypothesis: valid tensor descriptors of every layout round-trip byte-exactly (with and without
each optional section, all five schemes with consistent buffer tables); arbitrary bytes raise
only HurrayDeclError, never read past descriptor_length and never allocate in proportion to a
claimed size."""

from __future__ import annotations

import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray import strategies
from hurray_decl.hurray.strategies import SCHEME_NAMES
from hurray_decl.hurray.tensor import TensorDescriptor, read_tensor_descriptor, write_tensor_descriptor
from hurray_decl.hurray.tensor.header import HEADER
from hurray_decl.hurray.tensor.layouts import PRIVATE_LAYOUTS
from tests.hurray.tensor_support import end, field_bytes, u32, u64, with_length
from tests.paths import DESCRIPTORS

PRIVATE_ID = 0x5EED


@pytest.fixture(scope="module", autouse=True)
def _private_layout():
    PRIVATE_LAYOUTS.register(PRIVATE_ID, "round-trip test layout")
    yield
    PRIVATE_LAYOUTS.unregister(PRIVATE_ID)


def tensor_descriptors():
    """Valid descriptors of every layout (private ones under PRIVATE_ID too), from the public strategies."""
    return strategies.tensor_descriptors(private_layout_id=PRIVATE_ID)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tensor_descriptors())
def test_valid_descriptors_round_trip(d):
    data = write_tensor_descriptor(d)
    back = read_tensor_descriptor(data)
    assert write_tensor_descriptor(back) == data
    assert back.replace(descriptor_length=None) == d.replace(descriptor_length=None)
    assert back.descriptor_length == len(data)
    # Bytes after the descriptor are never read (HT-HDR-08, HT-HDR-10).
    assert read_tensor_descriptor(data + b"\xA5" * 9) == back


@settings(max_examples=30)
@given(st.sampled_from(SCHEME_NAMES), st.data())
def test_every_scheme_round_trips_in_a_dense_tensor(scheme, data):
    d = data.draw(strategies.tensor_descriptors(layout="row_major", scheme=scheme))
    encoded = write_tensor_descriptor(d)
    assert write_tensor_descriptor(read_tensor_descriptor(encoded)) == encoded


# ---------------------------------------------------------------- arbitrary and mutated bytes

SEEDS = [p.read_bytes() for p in sorted(DESCRIPTORS.glob("*.bin"))]


def outcome(data: bytes, permissive: bool):
    try:
        return read_tensor_descriptor(data, permissive=permissive)
    except HurrayDeclError as err:
        return err.code


@st.composite
def mutated(draw):
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(data) - 1))
        data[i] = draw(st.integers(0, 255))
    cut = draw(st.integers(0, len(data)))
    return bytes(data[:cut]) if draw(st.booleans()) else bytes(data)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.binary(max_size=200), mutated(), st.builds(lambda t: b"HRRY\x01\x00" + t, st.binary(max_size=120))),
       st.booleans())
def test_arbitrary_bytes_raise_only_hurray_errors(data, permissive):
    result = outcome(data, permissive)
    if len(data) >= end(data, "descriptor_length"):
        length = int.from_bytes(field_bytes(data, "descriptor_length"), "little")
        if HEADER.sizeof() <= length <= len(data):
            # nothing past descriptor_length influences the outcome
            assert outcome(data[:length], permissive) == result
            assert outcome(data[:length] + b"\x00\xFF" * 8, permissive) == result
    if not isinstance(result, str):
        assert write_tensor_descriptor(result, permissive=True) == data[:result.descriptor_length]


# ---------------------------------------------------------------- no allocation in proportion to claimed sizes

HUGE = (1 << 63)
LARGEST = (1 << 64) - 1


def header(type_tag, layout_tag, rank, flags=0):
    return b"HRRY\x01\x00" + u32(0) + u32(flags) + bytes([type_tag, layout_tag]) + u32(rank)


def framed(body: bytes) -> bytes:
    return with_length(body)


def handle_bytes(size, alignment=64):
    return u64(size) + u32(alignment) + bytes(4)


CLAIMS = {
    "rank 64 of 2^63": framed(header(0x03, 0x01, 64) + u64(HUGE) * 64 + u64(0) + b"\x01" + handle_bytes(LARGEST)),
    "2^64-1 byte buffer": framed(header(0x03, 0x01, 1) + u64(1 << 61) + u64(0) + b"\x01" + handle_bytes(LARGEST)),
    "morton bits 2^32-1": framed(header(0x03, 0x05, 64) + u64(HUGE) * 64 + u64(0) + u32(2**32 - 1) * 64 + b"\x01"
                                 + handle_bytes(LARGEST)),
    "hilbert order 2^32-1": framed(header(0x03, 0x40, 64) + u64(HUGE) * 64 + u64(0) + u32(2**32 - 1) + u32(64)
                                   + b"\x01" + handle_bytes(LARGEST)),
    "tiled huge tiles": framed(header(0x03, 0x04, 64) + u64(HUGE) * 64 + u64(0) + u64(HUGE) * 64 + b"\x01\x01\x00\x00"
                               + b"\x01" + handle_bytes(LARGEST)),
    "strided huge strides": framed(header(0x03, 0x03, 64) + u64(HUGE) * 64 + u64(0) + u64(HUGE - 1) * 64 + b"\x01"
                                   + handle_bytes(LARGEST)),
    "coo 2^64-1 entries": framed(header(0x03, 0x06, 64) + u64(HUGE) * 64 + u64(0) + u64(LARGEST) + bytes(8)
                                 + b"\x02" + handle_bytes(LARGEST) + handle_bytes(LARGEST)),
    "per-block 2^63 axis": framed(header(0x48, 0x01, 64, flags=1) + u64(HUGE) * 64 + u64(0) + b"\x02"
                                  + handle_bytes(LARGEST) + handle_bytes(LARGEST) + u32(24)
                                  + bytes([3, 1, 1, 0]) + u32(5) + u32(2) + u32(1) + u32(0xFFFFFFFF)
                                  + b"\x03\x00\x00\x00"),
    "paged 2^64-1 pages": framed(header(0x03, 0x0A, 3) + u64(HUGE) * 3 + u64(0) + u32(2**32 - 1) + u64(LARGEST)
                                 + u32(0) + u32(2**32 - 1) + b"\x02" + u32(0) + b"\x00" + bytes(6) + b"\x03"
                                 + handle_bytes(LARGEST) * 3),
    "claimed length 4 GiB": b"HRRY\x01\x00" + u32(2**32 - 1) + u32(0) + b"\x03\x01" + u32(0) + u64(0) + b"\x01"
                            + handle_bytes(0),
    "quantization_length 2^32-1": framed(header(0x10, 0x01, 1, flags=1) + u64(4) + u64(0) + b"\x01"
                                         + handle_bytes(4) + u32(2**32 - 1) + b"\x01\x01"),
    "extension_data_length 2^32-1": framed(header(0x03, 0xF3, 1) + u64(4) + u64(0) + u64(7) + u32(2**32 - 1)
                                           + bytes(30)),
}
EXPECTED = {"rank 64 of 2^63": "HE-21", "morton bits 2^32-1": "HT-LAY-19", "hilbert order 2^32-1": "HT-LAY-81",
            "tiled huge tiles": "HT-LAY-13", "strided huge strides": "HT-LAY-05", "coo 2^64-1 entries": "HT-LAY-87",
            "per-block 2^63 axis": "HQ-BUF-09", "paged 2^64-1 pages": "HT-LAY-91", "claimed length 4 GiB": "HT-HDR-08",
            "quantization_length 2^32-1": "HT-HDR-08", "extension_data_length 2^32-1": "HT-HDR-08"}


@pytest.mark.parametrize("name", sorted(CLAIMS))
def test_huge_claims_cost_nothing(name):
    data = CLAIMS[name]
    tracemalloc.start()
    start = time.process_time()  # this process's CPU time: what the claim could cost, whatever else runs
    try:
        result = outcome(data, name.startswith("extension"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.process_time() - start < 2.0
    assert peak < 2_000_000, f"{name}: peak {peak} bytes"
    if name in EXPECTED:
        assert result == EXPECTED[name]
    else:
        assert isinstance(result, TensorDescriptor) and result.buffers[0].byte_size == LARGEST
