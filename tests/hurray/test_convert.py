"""GGUF, GPTQ and AWQ conversion to per-block affine, checked against the sources' own formulas."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import hurray_decl as hd
from tests.helpers import covers, raises_rule

Q = gguf.GGMLQuantizationType


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.astype(np.float32).view(np.uint32),
                                                 b.astype(np.float32).view(np.uint32))


@pytest.mark.parametrize("kind", [Q.Q4_0, Q.Q8_0, Q.Q5_0, "Q4_0", "Q8_0"])
@settings(max_examples=15)
@given(rows=st.integers(1, 6), blocks=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
def test_gguf_blocks_dequantize_bit_identically(kind, rows, blocks, seed):
    x = np.random.default_rng(seed).standard_normal((rows, 32 * blocks)).astype(np.float32)
    qtype = Q[kind] if isinstance(kind, str) else kind
    raw = gguf.quants.quantize(x, qtype)
    descriptor, buffers = hd.from_gguf(raw, kind, x.shape)
    assert isinstance(descriptor.quantization, hd.PerBlockAffine)
    assert descriptor.quantization.scale_type_tag == 0x01  # the f16 d, kept as it was
    assert same_bits(hd.dequantize(descriptor, buffers), gguf.quants.dequantize(raw, qtype))


def test_q4_1_converts_when_its_offset_is_a_whole_number_of_steps():
    rng = np.random.default_rng(0)
    blocks = np.zeros(4, dtype=[("d", "<f2"), ("m", "<f2"), ("qs", "u1", (16,))])
    blocks["d"] = [0.5, 0.25, 2.0, 0.125]
    blocks["m"] = -np.array([3, 0, 15, 8]) * blocks["d"].astype(np.float32)
    blocks["qs"] = rng.integers(0, 256, (4, 16))
    raw = blocks.view(np.uint8)
    descriptor, buffers = hd.from_gguf(raw, Q.Q4_1, (2, 64))
    assert not descriptor.quantization.symmetric
    assert same_bits(hd.dequantize(descriptor, buffers), gguf.quants.dequantize(raw, Q.Q4_1).reshape(2, 64))


def test_q4_1_with_a_fractional_offset_is_refused():
    x = np.random.default_rng(1).standard_normal((1, 32)).astype(np.float32)
    with raises_rule("HQ-PB-22", path="m"):
        hd.from_gguf(gguf.quants.quantize(x, Q.Q4_1), Q.Q4_1, x.shape)


@pytest.mark.parametrize("kind, code", [(Q.Q4_K, "HQ-HDR-09"), (Q.Q6_K, "HQ-HDR-09"), (Q.IQ4_NL, "HE-03"),
                                        ("F32", "HE-03")])
def test_other_gguf_types_are_refused(kind, code):
    with raises_rule(code):  # K-quants: two-level scales, Hurray's reserved 0x60-0x7F; others: no block converter
        hd.from_gguf(b"", kind, (1, 256))


def test_gguf_shape_and_size_are_checked():  # the caller's arguments disagree: no rule of either format
    with raises_rule("ARGUMENT", path="shape"):
        hd.from_gguf(bytes(18), Q.Q4_0, (1, 30))
    with raises_rule("ARGUMENT", path="raw"):
        hd.from_gguf(bytes(17), Q.Q4_0, (1, 32))


def test_tensor_read_from_a_gguf_file(tmp_path):
    x = np.random.default_rng(2).standard_normal((3, 64)).astype(np.float32)
    raw = gguf.quants.quantize(x, Q.Q4_0)
    path = tmp_path / "model.gguf"
    writer = gguf.GGUFWriter(str(path), "test")
    writer.add_tensor("w", raw, raw_dtype=Q.Q4_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    descriptor, buffers = hd.from_gguf_file(path, "w")
    assert descriptor.shape == (3, 64)
    assert same_bits(hd.dequantize(descriptor, buffers), gguf.quants.dequantize(raw, Q.Q4_0))
    with raises_rule("ARGUMENT", path="tensor_name") as info:
        hd.from_gguf_file(path, "missing")
    assert "'missing'" in str(info.value) and "holds: w" in str(info.value)


# --- GPTQ and AWQ: packed here from codes, then converted ---------------------------------

def pack(values: np.ndarray, bits: int, axis: int, order=None) -> np.ndarray:
    """Pack 32/bits values per int32 along ``axis`` (independent of the converter)."""
    per = 32 // bits
    moved = np.moveaxis(values, axis, -1)
    groups = moved.reshape(*moved.shape[:-1], -1, per).astype(np.uint32)
    if order is not None:
        groups = groups[..., list(order)]
    words = np.zeros(groups.shape[:-1], dtype=np.uint32)
    for i in range(per):
        words |= groups[..., i] << np.uint32(i * bits)
    return np.moveaxis(words, -1, axis).view(np.int32)


@covers("HQ-ZP-01")
@pytest.mark.parametrize("bits", [2, 4, 8])
def test_gptq_zero_points_are_normalized(bits):
    rng = np.random.default_rng(bits)
    in_features, out_features, group = 64, 16, 32
    q = rng.integers(0, 1 << bits, (in_features, out_features))
    stored = rng.integers(0, (1 << bits) - 1, (in_features // group, out_features))  # zero - 1
    scales = rng.uniform(0.01, 1, (in_features // group, out_features)).astype(np.float16)
    descriptor, buffers = hd.from_gptq(pack(q, bits, 0), pack(stored, bits, 1), scales, bits=bits, group_size=group)
    g = np.arange(in_features) // group
    expected = (q - (stored[g] + 1)).astype(np.float32) * scales[g].astype(np.float32)
    assert same_bits(hd.dequantize(descriptor, buffers), expected)


def test_gptq_zero_point_past_the_storage_range_widens_the_storage():
    q = np.full((32, 8), 15)
    stored = np.full((1, 8), 15)  # normalized to 16, outside uint4's zero-point range
    descriptor, buffers = hd.from_gptq(pack(q, 4, 0), pack(stored, 4, 1), np.ones((1, 8), np.float16), group_size=32)
    assert descriptor.type_tag == 0x11  # uint8
    assert np.array_equal(hd.dequantize(descriptor, buffers), np.full((32, 8), -1.0, np.float32))


def test_gptq_activation_order_is_refused():
    q = np.zeros((64, 8), int)
    zeros = np.zeros((2, 8), int)
    g_idx = np.random.default_rng(0).permutation(np.arange(64) // 32)
    with raises_rule("HQ-PB-15", path="g_idx"):
        hd.from_gptq(pack(q, 4, 0), pack(zeros, 4, 1), np.ones((2, 8), np.float16), group_size=32, g_idx=g_idx)
    ordered = hd.from_gptq(pack(q, 4, 0), pack(zeros, 4, 1), np.ones((2, 8), np.float16), group_size=32,
                           g_idx=np.arange(64) // 32)
    assert ordered[0].quantization.block_size == 32


def test_awq_packing_and_zero_points():
    rng = np.random.default_rng(5)
    q = rng.integers(0, 16, (64, 16))
    zeros = rng.integers(0, 16, (2, 16))
    scales = rng.uniform(0.01, 1, (2, 16)).astype(np.float16)
    order = (0, 2, 4, 6, 1, 3, 5, 7)
    descriptor, buffers = hd.from_awq(pack(q, 4, 1, order), pack(zeros, 4, 1, order), scales, group_size=32)
    g = np.arange(64) // 32
    expected = (q - zeros[g]).astype(np.float32) * scales[g].astype(np.float32)
    assert same_bits(hd.dequantize(descriptor, buffers), expected)


@pytest.mark.parametrize("convert", ["gptq", "awq"])
def test_scales_float16_does_not_hold_are_refused_not_rounded(convert):
    q, zeros = np.zeros((32, 8), int), np.zeros((1, 8), int)
    order = (0, 2, 4, 6, 1, 3, 5, 7)
    gptq = convert == "gptq"
    words = (pack(q, 4, 0), pack(zeros, 4, 1)) if gptq else (pack(q, 4, 1, order), pack(zeros, 4, 1, order))
    make = hd.from_gptq if gptq else hd.from_awq
    exact = np.full((1, 8), 0.375, np.float32)  # float16 holds it: taken, as float16
    descriptor, _ = make(*words, exact, group_size=32)
    assert descriptor.quantization.scale_type_tag == 0x01
    inexact = np.full((1, 8), 0.1, np.float32)  # 0.1 rounds in float16
    with raises_rule("HQ-PB-08", path="scales"):
        make(*words, inexact, group_size=32)
    with raises_rule("HQ-PB-08", path="scales"):
        make(*words, np.full((1, 8), "x"), group_size=32)


def test_group_size_must_tile_the_input():
    with raises_rule("HQ-PB-03"):
        hd.from_gptq(pack(np.zeros((64, 8), int), 4, 0), pack(np.zeros((3, 8), int), 4, 1),
                     np.ones((3, 8), np.float16), group_size=24)
    with raises_rule("HQ-PB-14"):
        hd.from_gptq(np.zeros((8, 8), np.int32), np.zeros((1, 1), np.int32), np.ones((1, 8), np.float16), bits=3)
