"""Hurray per-block affine <-> ORT MatMulNBits <-> Hurray, byte for byte where representable."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import hurray_decl as hd
from hurray_decl import onnx_light as ol
from hurray_decl.convert import hurray as hurray_parts
from hurray_decl.convert.portable import from_block_parts, to_block_parts
from hurray_decl.hurray import numerics as tensor_numerics
from tests.helpers import raises_rule

FORMATS = {4: ol.QuantizationFormat.ORT_MATMULNBITS_INT4, 8: ol.QuantizationFormat.ORT_MATMULNBITS_INT8}


@pytest.mark.parametrize("bits", [4, 8])
@settings(max_examples=20)
@given(k=st.integers(16, 80), n=st.integers(1, 4), block=st.sampled_from([16, 32]), seed=st.integers(0, 2**31))
def test_hurray_to_ort_to_hurray_is_byte_identical(bits, k, n, block, seed):
    block = min(block, 1 << (k.bit_length() - 1))
    x = np.random.default_rng(seed).standard_normal((k, n)).astype(np.float32)
    storage = f"uint{bits}"
    descriptor, buffers = tensor_numerics.quantize(x, "per_block_affine", axis=0, block_size=block, storage=storage,
                                         symmetric=False)
    value = from_block_parts(hurray_parts.block_parts(descriptor, buffers), FORMATS[bits])
    again, again_buffers = hurray_parts.from_block_parts(to_block_parts(value, storage=storage, symmetric=False))
    assert hd.write_tensor_descriptor(again) == hd.write_tensor_descriptor(descriptor)
    assert again_buffers == buffers
    assert np.array_equal(ol.dequantize_value(value), hd.dequantize(descriptor, buffers))


@pytest.mark.parametrize("bits", [4, 8])
@settings(max_examples=20)
@given(k=st.integers(16, 80), n=st.integers(1, 4), block=st.sampled_from([16, 32, 64]), seed=st.integers(0, 2**31))
def test_ort_to_hurray_to_ort_is_byte_identical(bits, k, n, block, seed):
    x = np.random.default_rng(seed).standard_normal((k, n)).astype(np.float32)
    value = ol.quantize_array(x, ol.make_matmul_nbits_plan(FORMATS[bits], k, n, block_size=block))
    try:
        descriptor, buffers = hurray_parts.from_block_parts(to_block_parts(value))
    except hd.HurrayDeclError as err:  # a block wider than K: Hurray needs block_size <= shape[axis]
        assert err.code == "HQ-PB-05" and block > k
        return
    back = from_block_parts(hurray_parts.block_parts(descriptor, buffers), FORMATS[bits])
    assert back.SerializeToString() == value.SerializeToString()
    assert np.array_equal(hd.dequantize(descriptor, buffers), ol.dequantize_value(value))


def test_block_parts_need_a_per_block_tensor():
    descriptor, buffers = tensor_numerics.quantize(np.ones((4, 4), np.float32), "per_channel_affine")
    with raises_rule("HQ-PB-01"):
        hurray_parts.block_parts(descriptor, buffers)
