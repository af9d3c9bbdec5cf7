"""Type-driven encoding and calibration when scales are omitted (OL-CAL)."""

from __future__ import annotations

import copy

import ml_dtypes
import numpy as np
import pytest

from hurray_decl.onnx_light import (
    ModelProto,
    QuantizationFormat as F,
    decode_plan,
    dequantize_value,
    make_quantization_plan,
    make_quantization_type,
    quantize_array,
    quantize_with_type,
)
from tests.helpers import covers, raises_rule
from tests.onnx_light.support import edit_blocks, edit_layout


def type_of(fmt, count, block_size=4, **fields):
    plan = make_quantization_plan(fmt, count, block_size)
    for k, v in fields.items():
        setattr(plan, k, v)
    return make_quantization_type(plan)


def scales_of(encoded):
    plan = decode_plan(encoded)
    return [b.scale for r in plan.runs for b in r.blocks]


X8 = np.array([-8, -4, 0, 7, -16, 0, 8, 14], dtype=np.float32)


@covers("OL-CAL-01")
def test_calibrates_after_outliers_permutation_and_transform():
    t = type_of(F.SMOOTHQUANT, 4, 2, permutation=[0] * 4, outliers=[0], transform_size=2,
                forward=[0] * 4, inverse=[0] * 4)
    x = np.array([1000.0, 1.0, -2.0, 3.0])
    encoded = quantize_with_type(x, t, permutation=np.array([3, 2, 1, 0]), outliers=np.array([0]),
                                 forward=np.diag([2.0, 2.0]), inverse=np.diag([0.5, 0.5]))
    # working vector: zero x0, gather [3, 2, 1, 0] -> [3, -2, 1, 0], times 2 -> [6, -4, 2, 0]
    assert scales_of(encoded) == [6 / 127, 2 / 127]
    np.testing.assert_allclose(dequantize_value(encoded), x, atol=0.03)


@covers("OL-CAL-02")
def test_runs_must_cover_input():
    with raises_rule("OL-CAL-02"):
        quantize_with_type(np.zeros(9, np.float32), type_of(F.INT4, 8))


@covers("OL-CAL-03")
def test_block_defaults():
    encoded = quantize_with_type(np.array([0.0, 15.0, -8.0, 7.0]), type_of(F.GPTQ, 4))
    assert decode_plan(encoded).run(0).block(0).zero_point == 8.0
    plan = make_quantization_plan(F.GPTQ, 4, 4)
    edit_layout(plan, bits=8)
    encoded = quantize_with_type(np.array([0.0, 1.0, -2.0, 3.0]), make_quantization_type(plan))
    assert decode_plan(encoded).run(0).block(0).zero_point == 128.0
    encoded = quantize_with_type(np.array([-1.0, 0.0, 1.0, 0.5]), type_of(F.NF4, 4))
    assert decode_plan(encoded).run(0).block(0).codebook == make_quantization_plan(F.NF4, 4).run(0).block(0).codebook
    # a fixed-table profile whose layout was switched to affine: the table is cleared
    plan = make_quantization_plan(F.NF4, 4, 4)
    edit_layout(plan, method=0, entries=0, signed_codes=1)
    encoded = quantize_with_type(np.array([-1.0, 0.0, 1.0, 0.5]), make_quantization_type(plan))
    block = decode_plan(encoded).run(0).block(0)
    assert block.codebook == [] and block.offset == 0.0 and block.zero_point == 0.0


@pytest.mark.parametrize("name", ["scales", "zero_points", "offsets"])
def test_parameter_rank(name):
    with raises_rule("OL-CAL-04"):
        quantize_with_type(X8, type_of(F.INT4, 8), **{name: np.ones((2, 1))})


@pytest.mark.parametrize("name", ["scales", "zero_points", "offsets"])
def test_parameter_size(name):
    with raises_rule("OL-CAL-05"):
        quantize_with_type(X8, type_of(F.INT4, 8), **{name: np.ones(3)})


def test_parameter_dtype():
    for dtype in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16):
        encoded = quantize_with_type(X8, type_of(F.INT4, 8), scales=np.array([1, 2], dtype=dtype),
                                     zero_points=np.array(0, dtype=dtype))
        np.testing.assert_array_equal(dequantize_value(encoded), X8)
    with raises_rule("OL-CAL-06"):
        quantize_with_type(X8, type_of(F.INT4, 8), scales=np.array([1, 2], dtype=np.int32))
    with raises_rule("OL-CAL-06"):
        quantize_with_type(X8, type_of(F.INT4, 8), offsets=np.array([0], dtype=np.int64))


def test_codebooks_size():
    t = type_of(F.SQUEEZELLM, 3, 3)
    encoded = quantize_with_type(np.array([-1.0, 0.0, 1.0]), t, codebooks=np.linspace(-1, 1, 16))
    assert dequantize_value(encoded).tolist() == pytest.approx([-1, 0, 1], abs=0.07)
    with raises_rule("OL-CAL-07"):
        quantize_with_type(np.array([-1.0, 0.0, 1.0]), t, codebooks=np.array([0.0, 1.0]))


def test_index_inputs_dtype_and_rank():
    t = type_of(F.INT4, 4, permutation=[0, 1, 2, 3])
    x = np.ones(4)
    with raises_rule("OL-CAL-08"):
        quantize_with_type(x, t, permutation=np.array([0, 1, 2, 3], dtype=np.int32))
    with raises_rule("OL-CAL-08"):
        quantize_with_type(x, t, permutation=np.array([[0, 1], [2, 3]], dtype=np.int64))
    with raises_rule("OL-CAL-09"):
        quantize_with_type(x, t)
    with raises_rule("OL-CAL-09"):
        quantize_with_type(x, t, permutation=np.array([0, 1, 2], dtype=np.int64))
    with raises_rule("OL-CAL-09"):
        quantize_with_type(x, type_of(F.INT4, 4), outliers=np.array([1], dtype=np.int64))


@pytest.mark.parametrize("shape", [(4,), (1, 4), (4, 1), (1, 2, 2)])
def test_matrix_shapes(shape):
    t = type_of(F.SMOOTHQUANT, 2, 2, transform_size=2, forward=[0] * 4, inverse=[0] * 4)
    eye = np.eye(2)
    with raises_rule("OL-CAL-10"):
        quantize_with_type(np.array([-4.0, 6.0]), t, forward=(2 * eye).reshape(shape), inverse=0.5 * eye)
    with raises_rule("OL-CAL-10"):
        quantize_with_type(np.array([-4.0, 6.0]), t, forward=2 * eye, inverse=(0.5 * eye).reshape(shape))
    encoded = quantize_with_type(np.array([-4.0, 6.0]), t, forward=2 * eye, inverse=0.5 * eye)
    np.testing.assert_allclose(dequantize_value(encoded), [-4, 6], atol=0.05)


def test_scalar_is_not_a_1x1_matrix():
    t = type_of(F.SMOOTHQUANT, 2, 2, transform_size=1, forward=[0], inverse=[0])
    with raises_rule("OL-CAL-10"):
        quantize_with_type(np.array([-4.0, 6.0]), t, forward=np.array(2.0), inverse=np.array([[0.5]]))
    with raises_rule("OL-CAL-10"):
        quantize_with_type(np.array([-4.0, 6.0]), t)


def test_codebook_still_missing():
    with raises_rule("OL-CAL-11"):
        quantize_with_type(np.array([-1.0, 0.0, 1.0]), type_of(F.SQUEEZELLM, 3, 3))


def test_type_must_be_canonical():
    t = type_of(F.INT4, 8)
    blocks = t.structure.field[6].type.struct_type.structure
    blocks.field[1].type.struct_type.array.dimension = 1
    extra = blocks.field.add()
    extra.CopyFrom(blocks.field[1])
    extra.name = "run_1"
    with raises_rule("OL-CAL-12"):
        quantize_with_type(X8, t)


@covers("OL-CAL-13")
def test_cast_scale_one():
    encoded = quantize_with_type(np.array([3.0, -200.0]), type_of(F.TILED_FLOAT, 2))
    assert scales_of(encoded) == [1.0]


@covers("OL-CAL-14")
def test_affine_rule_with_offset_and_zero_point():
    x = np.array([1.0, 5.0, -3.0, 1.0])
    encoded = quantize_with_type(x, type_of(F.INT4, 4), offsets=np.array(1.0), zero_points=np.array(-2.0))
    # low = -8 + 2 = -6, high = 7 + 2 = 9; c = [0, 4, -4, 0] -> max(4/9, -4/-6)
    assert scales_of(encoded) == [max(4 / 9, 4 / 6)]


def test_vector_codebook_needs_scales():
    t = type_of(F.AQLM, 8, 8)
    with raises_rule("OL-CAL-15"):
        quantize_with_type(np.zeros(8), t, codebooks=np.zeros(4096))
    encoded = quantize_with_type(np.zeros(8), t, codebooks=np.zeros(4096), scales=np.array(1.0))
    assert dequantize_value(encoded).tolist() == [0] * 8


@covers("OL-CAL-16")
def test_zero_and_one_sided_blocks():
    assert scales_of(quantize_with_type(np.zeros(4), type_of(F.INT4, 4))) == [1.0]
    # unsigned codes with zero point 0: low = 0, so negative values cannot set the scale
    encoded = quantize_with_type(np.array([-1.0, -2.0, -3.0, -4.0]), type_of(F.GPTQ, 4),
                                 zero_points=np.array(0.0))
    assert scales_of(encoded) == [1.0]


def test_non_finite_calibrated_scale():
    with raises_rule("OL-CAL-17"):
        quantize_with_type(np.array([1e308, 0, 0, 0]), type_of(F.INT4, 4), offsets=np.array(-1e308))


@covers("OL-CAL-18", "OL-CAL-19")
def test_explicit_parameters_and_caller_type():
    t = type_of(F.INT4, 8)
    explicit = quantize_with_type(X8, t, scales=np.array([2.0, 4.0]))
    assert scales_of(explicit) == [2.0, 4.0]
    # the result keeps the caller's type object; a type_ref stays a type_ref
    model = ModelProto()
    entry = model.struct_types.add()
    entry.CopyFrom(t)
    entry.type_id = 7
    ref = copy.deepcopy(t)
    ref.Clear()
    ref.type_ref = 7
    encoded = quantize_with_type(X8, ref, model=model)
    assert encoded.struct_type.WhichOneof("kind") == "type_ref" and encoded.struct_type.type_ref == 7
    np.testing.assert_array_equal(dequantize_value(encoded, model), X8)
    inline = quantize_with_type(X8, t)
    assert inline.struct_type == t
    plan = edit_blocks(make_quantization_plan(F.INT4, 8, 4), scale=[1, 2])
    assert inline.raw_data == quantize_array(X8, plan).raw_data


def test_unnamed_type_driven_encodes_carry_an_empty_name():
    """OD-13: the type-driven encode writes name present and empty; the plan-driven one none."""
    from hurray_decl.onnx_light import make_matmul_nbits_plan

    x = np.array([1.0, -2.0, 3.0, 0.5])
    plan = make_quantization_plan(F.INT4, 4)
    value = quantize_with_type(x, make_quantization_type(plan))
    assert value.HasField("name") and value.name == ""
    assert b"\x3a\x00" in value.SerializeToString()         # field 7, length 0
    assert not quantize_array(x, plan).HasField("name")
    ort = quantize_array(np.ones((16, 2), np.float32), make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 16, 2, 16))
    again = quantize_with_type(np.ones((16, 2), np.float32), ort.struct_type)
    assert again.HasField("name") and again.name == ""
