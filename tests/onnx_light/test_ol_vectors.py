"""DIGEST.md § 14: every test vector, byte for byte when encoding and value for value when decoding."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hurray_decl.onnx_light import (
    QuantizationFormat as F,
    dequantize_value,
    make_quantization_plan,
    make_quantization_type,
    quantize_array,
    quantize_with_type,
)
from tests.helpers import covers
from tests.onnx_light.support import D, edit_blocks, edit_layout, hx, reencode_matches, roundtrip


def header(encoded, run: int = 0) -> list[int]:
    blocks = encoded.struct_type.structure.field[6].type.struct_type.structure
    element = blocks.field[1 + run].type.struct_type.array.element_type.struct_type.structure
    return list(element.field[0].constant.int64_data)


def run_fields(encoded) -> list[tuple[str, int]]:
    blocks = encoded.struct_type.structure.field[6].type.struct_type.structure
    return [(f.name, f.type.struct_type.array.dimension) for f in blocks.field[1:]]


def block_count(encoded) -> int:
    return encoded.struct_type.structure.field[6].type.struct_type.structure.field[0].constant.int64_data[0]


@covers("OL-NUM-12", "OL-NUM-13", "OL-NUM-14", "OL-WIRE-27", "OL-WIRE-33", "OL-WIRE-19", "OL-WIRE-20")
def test_14_1_int4_golden():
    x = np.array([-9, -7.5, -0.5, 0.5, 1.5, 6.5, 8], dtype=np.float32)
    encoded, decoded = roundtrip(x, make_quantization_plan(F.INT4, 7))
    assert encoded.raw_data == hx("00") + D(1) + D(0) + D(0) + hx("88 00 62 07")
    assert len(encoded.raw_data) == 29
    assert header(encoded) == [7, 0, 4, 1, 1, 0, 1, 0, 10]
    assert run_fields(encoded) == [("run_0", 1)] and block_count(encoded) == 1
    assert decoded.tolist() == [-8, -8, 0, 0, 2, 6, 7]


@covers("OL-WIRE-35", "OL-PROF-15")
def test_14_2_base3():
    x = np.array([-1, 0, 1, -1, 1, 1, 0], dtype=np.float32)
    encoded, decoded = roundtrip(x, make_quantization_plan(F.TQ1_0, 7))
    table = D(-1) + D(0) + D(1)
    assert encoded.raw_data == hx("00") + D(1) + D(0) + D(0) + table + hx("B7 05")
    assert len(encoded.raw_data) == 51
    assert header(encoded) == [7, 1, 2, 0, 1, 3, 1, 1, 10]
    np.testing.assert_array_equal(decoded, x)


@covers("OL-NUM-15", "OL-PROF-12", "OL-PROF-14")
def test_14_3_nf4_and_binary():
    encoded, decoded = roundtrip(np.array([-1, 0, 1], dtype=np.float32), make_quantization_plan(F.NF4, 3))
    assert encoded.raw_data[-2:] == hx("70 0F") and len(encoded.raw_data) == 155
    np.testing.assert_array_equal(decoded, [-1, 0, 1])
    encoded, decoded = roundtrip(np.array([-1, 1, 0, 1], dtype=np.float32), make_quantization_plan(F.BINARY, 4))
    assert encoded.raw_data[-1:] == hx("0A")
    assert decoded.tolist() == [-1, 1, -1, 1]


@covers("OL-WIRE-38", "OL-NUM-17", "OL-WIRE-31")
def test_14_4_additive_vector_codebook():
    plan = make_quantization_plan(F.AQLM, 3)
    edit_layout(plan, entries=2, bits=1, vector_size=2)
    edit_blocks(plan, codebook=[0, 0, 10, 20, 0, 0, 1, 2])
    encoded, decoded = roundtrip(np.array([11, 22, 1], dtype=np.float32), plan)
    assert encoded.raw_data[-1:] == hx("0B")
    assert header(encoded) == [3, 1, 1, 1, 2, 2, 2, 0, 10]
    assert len(encoded.raw_data) == 90
    np.testing.assert_array_equal(decoded, [11, 22, 1])


@covers("OL-PROF-17", "OL-PROF-18", "OL-PROF-19", "OL-PROF-20")
def test_14_5_log_and_float_profiles():
    x = np.array([0.125, -0.25, 4, -8], dtype=np.float32)
    np.testing.assert_array_equal(roundtrip(x, make_quantization_plan(F.LOG, 4))[1], x)
    y = np.array([-12, -3, -1, 0, 1, 12], dtype=np.float32)
    for fmt in (F.MXFP4, F.NVFP4, F.MXFP6, F.FP6_LLM, F.FP8_E4M3):
        plan = edit_blocks(make_quantization_plan(fmt, 6), scale=2.0)
        np.testing.assert_array_equal(roundtrip(y, plan)[1], y)


@covers("OL-NUM-07", "OL-NUM-08", "OL-NUM-09", "OL-NUM-23", "OL-PROF-10")
def test_14_6_permutation_rotation_outlier():
    plan = make_quantization_plan(F.QUAROT, 4)
    plan.permutation = [2, 3, 0, 1]
    plan.transform_size = 2
    plan.forward = [1, 1, 1, -1]
    plan.inverse = [0.5, 0.5, 0.5, -0.5]
    plan.outliers = [1]
    x = np.array([[1, 1000], [2, 3]], dtype=np.float32)
    encoded, decoded = roundtrip(x, plan)
    np.testing.assert_array_equal(decoded, x)
    assert reencode_matches(encoded)


@covers("OL-WIRE-24", "OL-PROF-07")
def test_14_7_mixed_precision():
    plan = make_quantization_plan(F.EXL2, 6, block_size=3)
    first = plan.run(0)
    first.layout.bits = 2
    b = first.block(0)
    b.scale, b.offset = 0.25, 1.125
    first.blocks = [b]
    second = plan.run(0)
    second.layout.bits = 5
    b = second.block(0)
    b.scale = 2
    second.blocks = [b]
    plan.runs = [first, second]
    x = np.array([0.625, 1.125, 1.375, -32, 0, 30], dtype=np.float32)
    encoded, decoded = roundtrip(x, plan)
    np.testing.assert_array_equal(decoded, x)
    assert [name for name, _ in run_fields(encoded)] == ["run_0", "run_1"]

    plan = make_quantization_plan(F.INT4, 6, block_size=3)
    runs = []
    for bits, scale in ((4, 0.5), (5, 2)):
        run = plan.run(0)
        run.layout.bits = bits
        block = run.block(0)
        block.scale = scale
        run.blocks = [block]
        runs.append(run)
    plan.runs = runs
    w = np.array([[-4, 0, 3.5], [-32, 0, 30]], dtype=np.float32)
    np.testing.assert_array_equal(roundtrip(w, plan)[1], w)

    plan = edit_blocks(make_quantization_plan(F.INT4, 10, block_size=4), scale=[0.5, 2])
    edit_blocks(plan, 1, scale=4.0)
    x = np.array([0.5, 1, 1.5, 2, 2, 4, 6, 8, 4, 8], dtype=np.float32)
    encoded, decoded = roundtrip(x, plan)
    np.testing.assert_array_equal(decoded, x)
    assert run_fields(encoded) == [("run_0", 2), ("run_2", 1)] and block_count(encoded) == 3


@covers("OL-WIRE-24", "OL-WIRE-18")
def test_14_8_run_merging():
    plan = edit_blocks(make_quantization_plan(F.BINARY, 6, block_size=2), scale=[1, 2, 1])
    run = plan.run(0)
    block = run.block(2)
    block.codebook = [-3, 3]
    run.set_block(2, block)
    plan.set_run(0, run)
    x = np.array([-1, 1, 2, -2, 3, -3], dtype=np.float32)
    single = quantize_array(x, plan)
    whole = plan.run(0)
    head, tail = plan.run(0), plan.run(0)
    head.blocks = whole.blocks[:1]
    tail.blocks = whole.blocks[1:]
    plan.runs = [head, tail]
    split = quantize_array(x, plan)
    assert split.SerializeToString() == single.SerializeToString()
    np.testing.assert_array_equal(dequantize_value(split), x)

    big = make_quantization_plan(F.INT4, 100 * 128)
    described = make_quantization_type(big)
    blocks = described.structure.field[6].type.struct_type.structure
    assert [f.name for f in blocks.field] == ["count", "run_0"]
    assert blocks.field[1].type.struct_type.array.dimension == 100


@covers("OL-WIRE-32", "OL-WIRE-33")
@pytest.mark.parametrize("bits", range(1, 17))
def test_14_9_every_index_width(bits):
    lo = -(1 << (bits - 1))
    codes = lo + (np.arange(19) % (1 << bits))
    x = (codes * 0.25).astype(np.float64)
    plan = edit_layout(edit_blocks(make_quantization_plan(F.EXL2, 19), scale=0.25), bits=bits)
    encoded, decoded = roundtrip(x, plan)
    raw = encoded.raw_data
    assert len(raw) == 25 + -(-19 * bits // 8)
    stream = int.from_bytes(raw[25:], "little")
    for i, c in enumerate(codes):
        assert (stream >> (i * bits)) & ((1 << bits) - 1) == int(c) & ((1 << bits) - 1)
    np.testing.assert_array_equal(decoded, x)
    assert {1: 28, 5: 37, 16: 63}.get(bits, len(raw)) == len(raw)


@covers("OL-WIRE-39", "OL-NUM-19", "OL-NUM-21", "OL-PROF-26")
def test_14_10_cast():
    plan = make_quantization_plan(F.COLUMN_MAJOR, 6)
    plan.permutation = [0, 3, 1, 4, 2, 5]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    encoded, decoded = roundtrip(x, plan)
    assert encoded.raw_data[-24:] == np.array([0, 3, 1, 4, 2, 5], dtype="<f4").tobytes()
    np.testing.assert_array_equal(decoded, x)

    src = np.linspace(-3, 3, 16, dtype=np.float64) / 7
    plan = edit_layout(make_quantization_plan(F.TILED_FLOAT, 16, block_size=4), cast_type=10)
    np.testing.assert_array_equal(roundtrip(src, plan)[1], src.astype(np.float16).astype(np.float64))

    v = np.array([-2, 0.5, 1.5, 4], dtype=np.float32)
    for cast in (10, 16, 1, 11):
        plan = edit_layout(make_quantization_plan(F.TILED_FLOAT, 4), cast_type=cast)
        np.testing.assert_array_equal(roundtrip(v, plan)[1], v)


def _int4_type(count: int = 8):
    return make_quantization_type(make_quantization_plan(F.INT4, count, block_size=4))


@covers("OL-CAL-01", "OL-CAL-14", "OL-CAL-18", "OL-CAL-19")
def test_14_11_calibration_affine():
    x = np.array([-8, -4, 0, 7, -16, 0, 8, 14], dtype=np.float32)
    t = _int4_type()
    calibrated = quantize_with_type(x, t)
    raw = calibrated.raw_data
    assert raw[1:9] == D(1) and raw[1 + 26:1 + 34] == D(2)
    np.testing.assert_array_equal(dequantize_value(calibrated), x)
    explicit = quantize_with_type(x, t, scales=np.array([2, 4], dtype=np.float32))
    np.testing.assert_array_equal(dequantize_value(explicit), [-8, -4, 0, 8, -16, 0, 8, 16])
    doubled = quantize_with_type(2 * x, t)
    plan = edit_blocks(make_quantization_plan(F.INT4, 8, block_size=4), scale=[2, 4])
    from_plan = quantize_array(2 * x, plan)
    assert doubled.HasField("name") and not from_plan.HasField("name")   # OD-13
    from_plan.name = ""
    assert doubled.SerializeToString() == from_plan.SerializeToString()


@covers("OL-CAL-15")
def test_14_11_calibration_nf4():
    x = np.array([-8, -3.3, 0.2, 7, -16, -1.2, 8.5, 14], dtype=np.float32)
    t = make_quantization_type(make_quantization_plan(F.NF4, 8, block_size=4))
    raw = quantize_with_type(x, t).raw_data
    record = 24 + 128 + 2
    assert raw[1:9] == D(8) and raw[1 + record:1 + record + 8] == D(16)


def test_14_11_int8_zero_point():
    plan = edit_blocks(make_quantization_plan(F.INT8, 7), scale=0.25, zero_point=-3.0)
    x = np.array([-40, -1, -0.6, 0, 0.6, 1, 40], dtype=np.float64)
    encoded, decoded = roundtrip(x, plan)
    assert list(np.frombuffer(encoded.raw_data[25:], dtype=np.int8)) == [-128, -7, -5, -3, -1, 1, 127]
    assert decoded.tolist() == [-31.25, -1, -0.5, 0, 0.5, 1, 32.5]


@covers("OL-PROF-25")
def test_14_11_squeezellm_and_smoothquant():
    plan = edit_blocks(make_quantization_plan(F.SQUEEZELLM, 3), codebook=[-1, 0] + list(range(1, 15)))
    np.testing.assert_array_equal(roundtrip(np.array([-1, 0, 1], dtype=np.float32), plan)[1], [-1, 0, 1])
    plan = edit_blocks(make_quantization_plan(F.SMOOTHQUANT, 2), scale=2.0)
    plan.permutation = [1, 0]
    plan.transform_size = 2
    plan.forward = [2, 0, 0, 2]
    plan.inverse = [0.5, 0, 0, 0.5]
    np.testing.assert_array_equal(roundtrip(np.array([-4, 6], dtype=np.float32), plan)[1], [-4, 6])


def test_14_11_outliers_int4():
    plan = make_quantization_plan(F.INT4, 3)
    plan.outliers = [0]
    x = np.array([1000, -1, 1], dtype=np.float32)
    np.testing.assert_array_equal(roundtrip(x, plan)[1], x)


@pytest.mark.parametrize("fmt, scale", [(F.NF4, 1.0), (F.IQ4_NL, 0.02), (F.LOG, 1.0), (F.MXFP4, 2.0),
                                        (F.MXFP6, 2.0), (F.FP8_E4M3, 2.0)])
def test_14_14_nearest_level(fmt, scale):
    from hurray_decl.onnx_light.profiles import PROFILES

    x = np.linspace(-2, 2, 129)
    table = np.array(PROFILES[fmt].table_values) * scale
    expected = table[np.argmin(np.abs(x[:, None] - table[None, :]), axis=1)]
    plan = edit_blocks(make_quantization_plan(fmt, x.size, block_size=x.size), scale=scale)
    np.testing.assert_allclose(roundtrip(x, plan)[1], expected, rtol=0, atol=1e-14)


def test_14_14_affine_formula():
    x = np.linspace(-2, 8, 201)
    plan = edit_blocks(make_quantization_plan(F.GPTQ, x.size, block_size=x.size), scale=0.125, zero_point=3.0,
                       offset=3.141)
    codes = np.clip(np.rint((x - 3.141) / 0.125 + 3), 0, 15)
    np.testing.assert_allclose(roundtrip(x, plan)[1], (codes - 3) * 0.125 + 3.141, rtol=0, atol=1e-15)


@pytest.mark.parametrize("fmt", [f for f in F if f.portable])
def test_14_14_catalogue_sweep(fmt):
    from hurray_decl.onnx_light.profiles import PROFILES

    src = np.array([-1, -1, 0, 0, 1, 1, 1, 1], dtype=np.float32).reshape(4, 2)
    plan = make_quantization_plan(fmt, 8, block_size=4)
    d = PROFILES[fmt]
    if d.learned:
        edit_layout(plan, entries=4, vector_size=2, bits=2)
        table = [-1, -1, 0, 0, 1, 1, -1, 1] if d.books == 1 else [-1, -1, 0, 0, 1, 1, -1, 1, 0, 0, 0, 0, 0, 0, 0, 0]
        edit_blocks(plan, codebook=table)
    if fmt == F.IQ4_NL:
        edit_blocks(plan, scale=0.01)
    if d.needs_transform:
        plan.transform_size = 2
        plan.forward = [1, 0, 0, 1]
        plan.inverse = [1, 0, 0, 1]
    tolerance = 1 if fmt == F.BINARY else 0.14 if fmt == F.IQ4_NL else 1e-6
    decoded = roundtrip(src, plan)[1]
    assert np.max(np.abs(decoded.astype(np.float64) - src)) <= tolerance


def test_bfloat16_source_widened_exactly():
    x = np.array([1.5, -2.25, 3.0], dtype=ml_dtypes.bfloat16)
    plan = edit_layout(make_quantization_plan(F.TILED_FLOAT, 3), cast_type=11)
    _, decoded = roundtrip(x, plan)
    assert decoded.dtype == x.dtype
    np.testing.assert_array_equal(decoded.astype(np.float32), x.astype(np.float32))


def test_14_11_squeezellm_calibration_refusals():
    """squeezellm through the type-driven API: scales of length 2 for one block and a codebook of
    length 2 are refused; the 16-value table with scale 1 is exact."""
    from tests.helpers import raises_rule

    t = make_quantization_type(make_quantization_plan(F.SQUEEZELLM, 3))
    table = np.array([-1, 0] + list(range(1, 15)), dtype=np.float64)
    x = np.array([-1, 0, 1], dtype=np.float32)
    encoded = quantize_with_type(x, t, codebooks=table, scales=np.array([1.0]))
    np.testing.assert_array_equal(dequantize_value(encoded), x)
    with raises_rule("OL-CAL-05"):
        quantize_with_type(x, t, codebooks=table, scales=np.array([1.0, 1.0]))
    with raises_rule("OL-CAL-07"):
        quantize_with_type(x, t, codebooks=np.array([-1.0, 1.0]))
