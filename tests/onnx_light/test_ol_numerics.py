"""Numerical encode and decode (OL-NUM)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hurray_decl.errors import HurrayDeclError
from hurray_decl.onnx_light import (
    OnnxLightTypeError,
    QuantizationFormat as F,
    TensorProto,
    dequantize_tensor_proto,
    dequantize_value,
    make_quantization_plan,
    quantize_array,
    quantize_tensor_proto,
)
from tests.helpers import covers, raises_rule
from tests.onnx_light.support import edit_blocks, edit_layout, roundtrip


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.complex64, np.bool_])
def test_source_dtype(dtype):
    with raises_rule("OL-NUM-01"):
        quantize_array(np.zeros(2, dtype=dtype), make_quantization_plan(F.INT4, 2))
    tensor = TensorProto(dims=[2], data_type=3, raw_data=b"\x01\x02")
    with raises_rule("OL-NUM-01"):
        quantize_tensor_proto(tensor, make_quantization_plan(F.INT4, 2))


def test_source_shape():
    tensor = TensorProto(dims=[-1], data_type=1, raw_data=b"")
    with raises_rule("OL-NUM-02"):
        quantize_tensor_proto(tensor, make_quantization_plan(F.INT4, 0))
    # scalars and empty tensors are fine
    scalar = np.array(2.5, dtype=np.float32)
    plan = edit_blocks(make_quantization_plan(F.INT4, 1), scale=0.5)
    assert roundtrip(scalar, plan)[1].shape == ()
    assert roundtrip(np.zeros((2, 0), np.float16), make_quantization_plan(F.NF4, 0))[1].shape == (2, 0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_source_finite(bad):
    with raises_rule("OL-NUM-03"):
        quantize_array(np.array([1.0, bad]), make_quantization_plan(F.INT4, 2))


def test_external_source():
    tensor = TensorProto(dims=[2], data_type=1, data_location=TensorProto.EXTERNAL)
    tensor.external_data.add(key="location", value="w.bin")
    with raises_rule("OL-NUM-04"):
        quantize_tensor_proto(tensor, make_quantization_plan(F.INT8, 2))
    tensor.raw_data = np.array([1, -1], np.float32).tobytes()   # loaded; metadata stays
    before = tensor.SerializeToString()
    encoded = quantize_tensor_proto(tensor, make_quantization_plan(F.INT8, 2))
    assert tensor.SerializeToString() == before
    np.testing.assert_array_equal(dequantize_value(encoded), [1, -1])


@covers("OL-NUM-05")
def test_source_untouched_results_owned():
    x = np.array([1000.0, -1.0, 2.0, 3.0], dtype=np.float32)
    keep = x.copy()
    plan = make_quantization_plan(F.INT4, 4)
    plan.outliers = [0]
    plan.permutation = [3, 2, 1, 0]
    encoded = quantize_array(x, plan)
    np.testing.assert_array_equal(x, keep)
    decoded = dequantize_value(encoded)
    assert decoded.flags.owndata or decoded.base is None or decoded.flags.writeable
    decoded[:] = 0
    np.testing.assert_array_equal(dequantize_value(encoded), keep)


@covers("OL-NUM-06")
def test_narrow_sources_widen_exactly():
    for dtype in (np.float16, ml_dtypes.bfloat16):
        x = np.array([0.1, -3.3, 1e-3, 7.77], dtype=np.float32).astype(dtype)
        plan = edit_layout(make_quantization_plan(F.TILED_FLOAT, 4), cast_type=11)
        encoded = quantize_array(x, plan)
        stored = np.frombuffer(encoded.raw_data[-32:], dtype="<f8")
        np.testing.assert_array_equal(stored, x.astype(np.float64))


@covers("OL-NUM-07", "OL-NUM-08", "OL-NUM-11")
def test_outliers_then_gather_then_blocks():
    plan = edit_layout(make_quantization_plan(F.TILED_FLOAT, 4, 2), cast_type=11)
    plan.outliers = [2, 0]
    plan.permutation = [1, 2, 3, 0]
    x = np.array([10.0, 20.0, 30.0, 40.0])
    encoded = quantize_array(x, plan)
    raw = encoded.raw_data
    # outlier values in list order, indices into the original order
    assert np.frombuffer(raw[1 + 32:1 + 48], "<i8").tolist() == [2, 0]
    assert np.frombuffer(raw[1 + 48:1 + 64], "<f8").tolist() == [30.0, 10.0]
    body = raw[1 + 64:]
    codes = [np.frombuffer(body[i * 40 + 24:(i + 1) * 40], "<f8").tolist() for i in range(2)]
    assert codes == [[20.0, 0.0], [40.0, 0.0]]   # gathered [x1, x2(zeroed), x3, x0(zeroed)]
    np.testing.assert_array_equal(dequantize_value(encoded), x)


def test_transform_non_finite():
    plan = edit_layout(make_quantization_plan(F.TILED_FLOAT, 2), cast_type=11)
    plan.transform_size = 2
    plan.forward = [1e300, 0, 0, 1]
    plan.inverse = [1e-300, 0, 0, 1]
    with raises_rule("OL-NUM-10"):
        quantize_array(np.array([1e10, 1.0]), plan)


@covers("OL-NUM-12", "OL-NUM-13")
def test_affine_half_way_points_round_to_even_and_clip():
    # exact half-way points round to even; out-of-range values clip (near-ties: test_ol_extended)
    plan = make_quantization_plan(F.INT8, 6)
    got = roundtrip(np.array([0.5, 1.5, 2.5, -0.5, -1000, 1000]), plan)[1]
    assert got.tolist() == [0, 2, 2, -0, -128, 127]


def test_codebook_residual_non_finite():
    plan = edit_blocks(make_quantization_plan(F.NF4, 2), scale=1e-308)
    with raises_rule("OL-NUM-16"):
        quantize_array(np.array([1e308, 0.0]), plan)


@covers("OL-NUM-15", "OL-NUM-17")
def test_codebook_ties_and_partial_vectors():
    # ties keep the first entry, even in a table that is not sorted
    plan = edit_blocks(make_quantization_plan(F.SQUEEZELLM, 1), codebook=[2, 0, -2] + [5] * 13)
    assert quantize_array(np.array([1.0]), plan).raw_data[-1] == 0
    assert quantize_array(np.array([-1.0]), plan).raw_data[-1] == 1
    # a partial final vector compares only its logical component
    plan = make_quantization_plan(F.STQ1_0, 5)
    table = np.zeros((32, 4))
    table[1] = [1, 1, 1, 1]
    table[2] = [3, 50, 50, 50]
    table[3] = [3, 0, 0, 0]
    edit_blocks(plan, codebook=table.ravel().tolist())
    x = np.array([1, 1, 1, 1, 3.0])
    _, decoded = roundtrip(x, plan)
    np.testing.assert_array_equal(decoded, x)
    assert quantize_array(x, plan).raw_data[-2:] == bytes([0x41, 0x00])  # indices 1 then 2 (first of the tie)


@covers("OL-NUM-19", "OL-NUM-21")
def test_cast_double_rounding():
    x = np.array([1 + 2.0**-11 + 2.0**-30, 1 + 2.0**-8 + 2.0**-30])
    half = edit_layout(make_quantization_plan(F.TILED_FLOAT, 1), cast_type=10)
    assert roundtrip(x[:1], half)[1][0] == 1.0          # double -> f32 -> f16 ties to even
    brain = edit_layout(make_quantization_plan(F.TILED_FLOAT, 1), cast_type=16)
    assert roundtrip(x[1:], brain)[1][0] == 1.0
    scaled = edit_blocks(edit_layout(make_quantization_plan(F.TILED_FLOAT, 2), cast_type=10), scale=4.0)
    encoded = quantize_array(np.array([6.0, -2.0]), scaled)
    assert np.frombuffer(encoded.raw_data[-4:], "<f2").tolist() == [1.5, -0.5]
    assert dequantize_value(encoded).tolist() == [6.0, -2.0]
    with raises_rule("OL-NUM-19"):
        quantize_array(np.array([1e308]), edit_blocks(edit_layout(make_quantization_plan(F.TILED_FLOAT, 1),
                                                                  cast_type=11), scale=1e-308))


@pytest.mark.parametrize("cast, value", [(10, 1e10), (10, 65520.0), (16, 3.4e38 * 1.0000001), (1, 1e39)])
def test_cast_overflow(cast, value):
    plan = edit_layout(make_quantization_plan(F.TILED_FLOAT, 1), cast_type=cast)
    with raises_rule("OL-NUM-20"):
        quantize_array(np.array([value]), plan)


def test_reconstruction_overflow():
    plan = edit_blocks(make_quantization_plan(F.INT4, 1), scale=2.0**15)
    with raises_rule("OL-NUM-22"):
        quantize_array(np.array([1.5 * 2**15], dtype=np.float16), plan)
    # a wider intermediate is fine when the final value fits
    plan = edit_blocks(make_quantization_plan(F.SMOOTHQUANT, 2), scale=1e6)
    plan.transform_size = 1
    plan.forward = [1e5]
    plan.inverse = [1e-5]
    x = np.array([1000.0, -1000.0], dtype=np.float16)
    np.testing.assert_array_equal(roundtrip(x, plan)[1], x)


@covers("OL-NUM-24")
def test_decode_needs_no_plan():
    x = np.array([[1.5, -2.0], [0.25, 4.0]], dtype=np.float16)
    plan = edit_blocks(make_quantization_plan(F.INT8, 4), scale=0.25)
    encoded = quantize_array(x, plan)
    decoded = dequantize_value(type(encoded).FromString(encoded.SerializeToString()))
    assert decoded.dtype == np.float16 and decoded.shape == (2, 2)
    back = dequantize_tensor_proto(encoded)
    assert back.data_type == 10 and list(back.dims) == [2, 2]


def test_requested_dtype_overflow():
    plan = edit_layout(make_quantization_plan(F.TILED_FLOAT, 1), cast_type=1)
    encoded = quantize_array(np.array([65536.0], np.float32), plan)
    with raises_rule("OL-NUM-25"):
        dequantize_value(encoded, dtype=np.float16)
    assert dequantize_value(encoded, dtype=ml_dtypes.bfloat16)[0] == 65536


@covers("OL-NUM-26")
def test_explicit_plan_uses_parameters_as_supplied():
    decoded = roundtrip(np.array([100.0, -100.0, 3.4]), make_quantization_plan(F.INT4, 3))[1]
    assert decoded.tolist() == [7, -8, 3]


@covers("OL-NUM-27")
def test_error_types():
    with pytest.raises(ValueError):
        quantize_array(np.array([np.nan]), make_quantization_plan(F.INT4, 1))
    with pytest.raises(TypeError):
        make_quantization_plan("int4", 1)
    with pytest.raises(OnnxLightTypeError):
        make_quantization_plan(2, 1)
    with pytest.raises(HurrayDeclError):
        make_quantization_plan(F.INT4, 1, 0)


def test_tensor_proto_value_fields():
    """Sources stored in float_data, double_data and int32_data (16-bit bit patterns) decode too."""
    import onnx

    plan = make_quantization_plan(F.TILED_FLOAT, 3)
    for code, dtype in ((1, np.float32), (11, np.float64), (10, np.float16), (16, ml_dtypes.bfloat16)):
        values = np.array([1.5, -2.0, 0.25], dtype=dtype)
        tensor = onnx.helper.make_tensor("w", code, [3], values.astype(np.float32).tolist())
        assert not tensor.raw_data
        decoded = dequantize_value(quantize_tensor_proto(tensor, plan))
        assert decoded.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(decoded.astype(np.float64), values.astype(np.float64))


def test_codebook_residual_overflow_after_subtraction():
    # The 80-bit distances pick [1e308, 1e308]; x - entry then leaves the double range.
    plan = edit_layout(make_quantization_plan(F.STQ1_0, 2), entries=2, bits=1, vector_size=2)
    plan = edit_blocks(plan, codebook=[1.7e308, 1.7e308, 1e308, 1e308])
    with raises_rule("OL-NUM-16"):
        quantize_array(np.array([1.7e308, -1.7e308]), plan)
