"""ORT MatMulNBits <-> Hurray per-block parts <-> onnx-light int4/int8: byte-identical round trips for
representable inputs, refusals naming the rule otherwise (issue 8, acceptance 4)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hurray_decl.convert import BlockParts
from hurray_decl.convert.portable import from_block_parts, ort_to_portable, portable_to_ort, to_block_parts
from hurray_decl.errors import UnsupportedError
from hurray_decl.onnx_light import (
    QuantizationFormat as F,
    dequantize_value,
    make_matmul_nbits_plan,
    make_quantization_plan,
    quantize_array,
)
from tests.helpers import raises_rule
from tests.onnx_light.support import edit_blocks

ORT = {2: F.ORT_MATMULNBITS_INT2, 4: F.ORT_MATMULNBITS_INT4, 8: F.ORT_MATMULNBITS_INT8}
SCALE_DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def same_parts(a: BlockParts, b: BlockParts) -> bool:
    arrays = all(np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(x, y)
                 for x, y in ((a.codes, b.codes), (a.scales, b.scales)))
    zps = (a.zero_points is None and b.zero_points is None) or (
        a.zero_points is not None and b.zero_points is not None and np.array_equal(a.zero_points, b.zero_points))
    return arrays and zps and (a.storage, a.axis, a.block_size, a.scale_type) == (b.storage, b.axis, b.block_size,
                                                                                 b.scale_type)


def hurray_parts(rng, shape, axis, block, storage, scale_type, symmetric=False) -> BlockParts:
    bits = int(storage.lstrip("uint"))
    signed = not storage.startswith("u")
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    blocks = int(np.prod(shape)) // shape[axis] * -(-shape[axis] // block)
    scales = (rng.uniform(0.01, 2, blocks) * rng.choice([1, -1], blocks)).astype(SCALE_DTYPES[scale_type])
    zps = None if symmetric else rng.integers(lo, hi + 1, blocks).astype(np.int64)
    return BlockParts.from_block_order(rng.integers(lo, hi + 1, shape).astype(np.int64), storage, axis, block, scales,
                                       scale_type, zps)


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("scale_type", ["float32", "float16", "bfloat16"])
def test_hurray_ort_hurray(bits, scale_type):
    rng = np.random.default_rng(bits)
    for k, block in ((37, 16), (64, 32), (128, 128)):
        parts = hurray_parts(rng, (k, 3), 0, block, f"uint{bits}", scale_type)
        encoded = from_block_parts(parts, ORT[bits])
        assert same_parts(to_block_parts(encoded, storage=f"uint{bits}", symmetric=False), parts)
        decoded = dequantize_value(encoded).astype(np.float64)
        expected = (parts.codes - np.asarray(parts.zero_points).reshape(3, -1).repeat(block, 1)[:, :k].T) \
            * parts.scales.astype(np.float64).reshape(3, -1).repeat(block, 1)[:, :k].T
        np.testing.assert_array_equal(decoded, expected.astype(SCALE_DTYPES[scale_type]).astype(np.float64))


@pytest.mark.parametrize("bits", [4, 8])
def test_symmetric_signed_hurray_through_ort(bits):
    parts = hurray_parts(np.random.default_rng(5), (40, 2), 0, 16, f"int{bits}", "float32", symmetric=True)
    encoded = from_block_parts(parts, ORT[bits])
    assert len(encoded.struct_type.structure.field) == 3            # midpoint zero points: implicit
    assert same_parts(to_block_parts(encoded, storage=f"int{bits}"), parts)


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("zero_points", ["implicit", "packed", "integral float"])
def test_ort_hurray_ort(bits, zero_points):
    rng = np.random.default_rng(bits + len(zero_points))
    k, n, block = 45, 4, 16
    blocks = n * 3
    zps = {"implicit": [1 << (bits - 1)] * blocks, "packed": rng.integers(0, 1 << bits, blocks).tolist()}.get(
        zero_points)
    plan = make_matmul_nbits_plan(ORT[bits], k, n, block)
    if zps is None:   # floating storage whose values happen to be integers in range
        zps = rng.integers(0, 1 << bits, blocks).astype(float).tolist()
        zps[-1] = 0.5
        edit_blocks(plan, scale=rng.uniform(0.1, 1, blocks).tolist(), zero_point=zps)
        encoded = quantize_array(rng.uniform(-1, 1, (k, n)).astype(np.float32), plan)
        with raises_rule("HQ-PB-22"):
            to_block_parts(encoded)
        return
    edit_blocks(plan, scale=rng.uniform(0.1, 1, blocks).tolist(), zero_point=zps)
    encoded = quantize_array(rng.uniform(-2, 2, (k, n)).astype(np.float32), plan)
    for storage in (f"uint{bits}", f"int{bits}"):
        parts = to_block_parts(encoded, storage=storage)
        again = from_block_parts(parts, ORT[bits])
        assert again.SerializeToString() == encoded.SerializeToString()


@pytest.mark.parametrize("fmt, bits", [(F.INT4, 4), (F.INT8, 8)])
@pytest.mark.parametrize("shape, axis, block", [((3, 40), 1, 16), ((40, 3), 0, 16), ((2, 5, 6), 1, 4), ((8,), 0, 8)])
def test_hurray_portable_hurray(fmt, bits, shape, axis, block):
    rng = np.random.default_rng(bits * 7 + axis)
    parts = hurray_parts(rng, shape, axis, block, f"int{bits}", "float32")
    parts = BlockParts.from_block_order(parts.codes, parts.storage, axis, block, np.abs(parts.scales), "float32",
                                        parts.zero_points)
    encoded = from_block_parts(parts, fmt)
    assert encoded.struct_type.name.endswith(f"/int{bits}")
    back = to_block_parts(encoded, symmetric=False)
    assert same_parts(back, parts)
    assert to_block_parts(encoded, storage=f"uint{bits}", symmetric=False).storage == f"uint{bits}"
    again = from_block_parts(back, fmt)
    assert again.SerializeToString() == encoded.SerializeToString()


def test_portable_plan_values_convert():
    rng = np.random.default_rng(11)
    plan = make_quantization_plan(F.INT4, 3 * 32, 16)
    edit_blocks(plan, scale=rng.uniform(0.1, 1, 6).astype(np.float32).tolist(),
                zero_point=rng.integers(-8, 8, 6).tolist())
    encoded = quantize_array(rng.uniform(-2, 2, (3, 32)).astype(np.float32), plan)
    parts = to_block_parts(encoded)
    assert (parts.axis, parts.block_size, parts.storage, parts.codes.shape) == (1, 16, "int4", (3, 32))
    assert from_block_parts(parts, F.INT4).SerializeToString() == encoded.SerializeToString()


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("n", [1, 3])
def test_ort_portable_ort(bits, n):
    rng = np.random.default_rng(n + bits)
    k, blocks = 50, n * 4
    plan = edit_blocks(make_matmul_nbits_plan(ORT[bits], k, n, 16), scale=rng.uniform(0.1, 1, blocks).tolist(),
                       zero_point=rng.integers(0, 1 << bits, blocks).tolist())
    encoded = quantize_array(rng.uniform(-2, 2, (k, n)).astype(np.float16), plan)
    portable = ort_to_portable(encoded)
    assert portable.struct_type.name.endswith("/int4" if bits == 4 else "/int8")
    np.testing.assert_array_equal(dequantize_value(portable), dequantize_value(encoded))
    assert portable_to_ort(portable).SerializeToString() == encoded.SerializeToString()


def test_refusals():
    rng = np.random.default_rng(0)
    parts = hurray_parts(rng, (32, 2), 1, 2, "uint4", "float32")
    with raises_rule("OL-ORT-07"):                      # blocks along N, not K
        from_block_parts(parts, F.ORT_MATMULNBITS_INT4)
    with raises_rule("OL-ORT-03"):                      # ORT blocks are at least 16
        from_block_parts(hurray_parts(rng, (32, 2), 0, 8, "uint4", "float32"), F.ORT_MATMULNBITS_INT4)
    small = quantize_array(np.zeros((5, 2), np.float32), make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 5, 2, 16))
    with raises_rule("HQ-PB-05"):                       # Hurray blocks are no longer than their axis
        to_block_parts(small)
    with raises_rule("HQ-PB-15"):                       # K < block: the block size is lost in onnx-light
        portable_to_ort(ort_to_portable(small))
    with raises_rule("HQ-PB-14"):                       # 8-bit storage into 4-bit codes
        from_block_parts(hurray_parts(rng, (32, 2), 0, 16, "uint8", "float32"), F.ORT_MATMULNBITS_INT4)
    negative = hurray_parts(rng, (8,), 0, 4, "int4", "float32")
    negative = BlockParts(negative.codes, "int4", 0, 4, -np.abs(negative.scales), "float32", negative.zero_points)
    with raises_rule("OL-PLAN-11"):                     # onnx-light scales are > 0
        from_block_parts(negative, F.INT4)
    plan = edit_blocks(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 16, 1, 16), scale=0.0)
    with raises_rule("HQ-PB-13"):                       # a zero ORT scale has no per-block form
        to_block_parts(quantize_array(np.zeros((16, 1), np.float32), plan))
    plan = edit_blocks(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 16, 1, 16), zero_point=2.5)
    with raises_rule("HQ-PB-22"):                       # a fractional zero point
        to_block_parts(quantize_array(np.zeros((16, 1), np.float32), plan))
    value = quantize_array(np.zeros((2, 50), np.float32), make_quantization_plan(F.INT8, 100, 16))
    with raises_rule("HQ-PB-15"):                       # blocks run across rows
        to_block_parts(value)
    plan = edit_blocks(make_quantization_plan(F.INT8, 16, 16), scale=0.1)
    with raises_rule("HQ-PB-08"):                       # 0.1 is not a float32 value
        to_block_parts(quantize_array(np.zeros(16, np.float32), plan))
    with raises_rule("OL-PROF-02"):
        to_block_parts(quantize_array(np.zeros(4, np.float32), make_quantization_plan(F.NF4, 4)))
    with pytest.raises(UnsupportedError) as info:
        from_block_parts(parts, F.NF4)
    assert isinstance(info.value, NotImplementedError) and "int4" in str(info.value)
