"""OD-12: FLOAT16 conversions reproduce the original's converter, subnormal branch included."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from hurray_decl.onnx_light import (
    QuantizationFormat as F,
    dequantize_value,
    make_matmul_nbits_plan,
    make_quantization_plan,
    quantize_array,
)
from hurray_decl.onnx_light.numerics import float16_bits
from tests.helpers import covers, raises_rule
from tests.onnx_light.support import edit_blocks, edit_layout


def original_half(x: float) -> int:
    """OD-12 written out for one value: double -> float32 -> binary16 bits."""
    (u,) = struct.unpack("<I", struct.pack("<f", x))
    sign = (u >> 16) & 0x8000
    e32, m32 = (u >> 23) & 0xFF, u & 0x7FFFFF
    if e32 == 0xFF:
        return sign | 0x7C00 | (0x0200 if m32 else 0)
    e = e32 - 127 + 15
    if e >= 31:
        return sign | 0x7C00
    if e <= 0:
        if e < -10:
            return sign
        m = (m32 | 0x800000) >> (1 - e)
        h = m >> 13
        if (m >> 12) & 1 and ((m & 0xFFF) or h & 1):
            h += 1
        return sign | h
    h = (e << 10) | (m32 >> 13)
    rest = m32 & 0x1FFF
    if rest > 0x1000 or (rest == 0x1000 and h & 1):
        h += 1
    return sign | h


def ieee_half(x: float) -> int:
    return int(np.float32(x).astype(np.float16).view(np.uint16))


# 2^-20 * (1 + 2^-5 + 2^-23): the round bit is set and only bits shifted out are non-zero
SUBNORMAL = 2.0**-20 * (1 + 2.0**-5 + 2.0**-23)
VALUES = [SUBNORMAL, -SUBNORMAL, 1.0, 0.1, -2.5e-6, 6.1e-5, 2.0**-24, 2.0**-25, 3.0e-8, 65504.0, 1e-9]


def test_the_vectors_separate_the_original_from_ieee():
    assert original_half(SUBNORMAL) != ieee_half(SUBNORMAL)
    rng = np.random.default_rng(4)
    x = rng.uniform(2.0**-25, 2.0**-14, 200_000).astype(np.float32)
    mine = float16_bits(x)
    theirs = np.array([original_half(float(v)) for v in x[:20000]], dtype=np.uint16)
    np.testing.assert_array_equal(mine[:20000], theirs)
    assert 0 < int((mine != x.astype(np.float16).view(np.uint16)).sum()) < 100


@covers("OL-NUM-19")
def test_cast_to_float16_uses_the_original_converter():
    x = np.array(VALUES)
    plan = edit_layout(make_quantization_plan(F.TILED_FLOAT, x.size), cast_type=10)
    stored = np.frombuffer(quantize_array(x, plan).raw_data[-2 * x.size:], "<u2")
    assert stored.tolist() == [original_half(v) for v in VALUES]


@covers("OL-NUM-25")
def test_float16_output_uses_the_original_converter():
    x = np.array(VALUES)
    plan = edit_layout(make_quantization_plan(F.TILED_FLOAT, x.size), cast_type=11)
    out = dequantize_value(quantize_array(x, plan), dtype=np.float16)
    assert out.view(np.uint16).tolist() == [original_half(v) for v in VALUES]


def test_ort_float16_scale_rounds_like_the_original():
    source = np.zeros((16, 1), np.float16)
    plan = edit_blocks(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 16, 1, 16), scale=SUBNORMAL)
    encoded = quantize_array(source, plan)
    scale = np.frombuffer(encoded.raw_data[8:10], "<u2")[0]
    assert scale == original_half(SUBNORMAL) != ieee_half(SUBNORMAL)


@pytest.mark.parametrize("scale", [2.0**-25 * (1 + 2.0**-22), 2.0**-25 * (1 + 2.0**-13)])
def test_ort_float16_scale_the_original_flushes_is_refused(scale):
    assert original_half(scale) == 0 and ieee_half(scale) != 0   # IEEE would keep 2^-24
    plan = edit_blocks(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 16, 1, 16), scale=scale)
    with raises_rule("OL-ORT-11"):
        quantize_array(np.zeros((16, 1), np.float16), plan)
