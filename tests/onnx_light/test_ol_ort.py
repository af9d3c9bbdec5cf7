"""ORT MatMulNBits layouts: plan factory, encoding, goldens, decoding checks and export (OL-ORT)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hurray_decl.onnx_light import (
    ModelProto,
    QuantizationFormat as F,
    decode_plan,
    dequantize_value,
    export_matmul_nbits_inputs,
    make_matmul_nbits_plan,
    make_quantization_plan,
    quantize_array,
    quantize_with_type,
)
from hurray_decl.onnx_light.ort import ORT_FORMATS
from tests.helpers import covers, raises_rule
from tests.onnx_light.support import edit_blocks, edit_layout, hx

ORT = {2: F.ORT_MATMULNBITS_INT2, 4: F.ORT_MATMULNBITS_INT4, 8: F.ORT_MATMULNBITS_INT8}
BF16 = np.dtype(ml_dtypes.bfloat16)


def golden(bits: int):
    """§ 14.13: K = 35, N = 2, block 16; block (c, g) has scale 0.5 (g + 1), zero point c + g + 1,
    element [row, col] code row + col (both masked to bits)."""
    mask = (1 << bits) - 1
    k, n, size, groups = 35, 2, 16, 3
    scales = [0.5 * (g + 1) for c in range(n) for g in range(groups)]
    zps = [(c + g + 1) & mask for c in range(n) for g in range(groups)]
    x = np.empty((k, n), dtype=np.float32)
    for row in range(k):
        for col in range(n):
            b = col * groups + row // size
            x[row, col] = (((row + col) & mask) - zps[b]) * scales[b]
    plan = edit_blocks(make_matmul_nbits_plan(ORT[bits], k, n, size), scale=scales, zero_point=zps)
    return x, plan


# --- plan factory ------------------------------------------------------------------------------

def test_factory_refusals():
    with raises_rule("OL-ORT-01"):
        make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 0, 2, 16)
    with raises_rule("OL-ORT-01"):
        make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 4, 0, 16)
    with raises_rule("OL-ORT-02"):
        make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 4, 2, 24)
    for size in (0, 8):
        with raises_rule("OL-ORT-03"):
            make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 4, 2, size)
    with raises_rule("OL-ORT-04"):
        make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 4, 2, 2**32)
    with raises_rule("OL-ORT-05"):
        make_matmul_nbits_plan(F.INT4, 4, 2, 16)
    with raises_rule("OL-PROF-04"):
        make_matmul_nbits_plan("ort_matmulnbits_int4", 4, 2, 16)
    assert make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 4, 2, 2**31).run(0).layout.count == 2**31


@covers("OL-ORT-05", "OL-ORT-06")
@pytest.mark.parametrize("bits", [2, 4, 8])
def test_factory_plan(bits):
    plan = make_matmul_nbits_plan(ORT[bits], 35, 3, block_size=16)
    assert plan.matrix_shape == [35, 3]
    (run,) = plan.runs
    assert run.layout.header() == (16, 0, bits, 0, 1, 0, 1, 0, 10)
    assert len(run.blocks) == 3 * 3
    assert all((b.scale, b.zero_point, b.offset, b.codebook) == (1.0, 2 ** (bits - 1), 0.0, [])
               for b in run.blocks)


def test_changed_header_and_block_count_are_refused():
    x = np.zeros((35, 2), np.float32)
    with raises_rule("OL-ORT-05"):
        quantize_array(x, edit_layout(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 35, 2, 16), bits=3))
    with raises_rule("OL-ORT-05"):
        quantize_array(x, edit_layout(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 35, 2, 16), signed_codes=1))
    plan = make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 35, 2, 16)
    plan.runs = []
    with raises_rule("OL-ORT-05"):
        quantize_array(x, plan)
    plan = make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 35, 2, 16)
    run = plan.run(0)
    run.blocks = []
    plan.set_run(0, run)
    with raises_rule("OL-ORT-06"):  # no blocks
        quantize_array(x, plan)


def test_source_geometry_and_dtype():
    plan = make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 4, 2, 16)
    with raises_rule("OL-ORT-07"):
        quantize_array(np.zeros(8, np.float32), plan)   # 1-D source
    with raises_rule("OL-ORT-07"):
        quantize_array(np.zeros((2, 4), np.float32), plan)
    plan.matrix_shape = [1, 1]
    with raises_rule("OL-ORT-07"):
        quantize_array(np.zeros((4, 2), np.float32), plan)
    with raises_rule("OL-ORT-08"):
        quantize_array(np.zeros((4, 2), np.float64), make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 4, 2, 16))
    with raises_rule("OL-NUM-03"):
        quantize_array(np.full((4, 2), np.inf, np.float32), make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 4, 2, 16))


def test_refused_plan_parts():
    x = np.zeros((4, 2), np.float32)
    fresh = lambda: make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 4, 2, 16)  # noqa: E731
    with raises_rule("OL-ORT-09"):
        quantize_array(x, edit_blocks(fresh(), offset=1.0))
    plan = fresh()
    plan.outliers = [0]
    with raises_rule("OL-ORT-09"):
        quantize_array(x, plan)
    plan = fresh()
    plan.permutation = list(range(8))
    with raises_rule("OL-ORT-09"):
        quantize_array(x, plan)
    plan = fresh()
    plan.transform_size, plan.forward, plan.inverse = 2, [1, 0, 0, 1], [1, 0, 0, 1]
    with raises_rule("OL-ORT-09"):
        quantize_array(x, plan)
    with raises_rule("OL-ORT-09"):
        quantize_array(x, edit_blocks(fresh(), codebook=[1.0, 2.0]))


# --- parameters ----------------------------------------------------------------------------------

@covers("OL-ORT-10")
@pytest.mark.parametrize("dtype, zp_kind", [(np.float16, "float"), (BF16, "implicit")])
def test_parameter_rounding(dtype, zp_kind):
    plan = edit_blocks(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT8, 3, 1, 16), scale=0.10001, zero_point=128.3)
    encoded = quantize_array(np.array([[0.5], [-1], [2]], dtype=dtype), plan)
    inputs = export_matmul_nbits_inputs(encoded)
    scale = np.frombuffer(inputs.scales.raw_data, dtype=dtype)[0]
    assert scale == np.float32(0.10001).astype(dtype)
    if zp_kind == "float":
        assert np.frombuffer(inputs.zero_points.raw_data, dtype=dtype)[0] == 128.25
    else:
        assert inputs.zero_points is None
    with raises_rule("OL-ORT-10"):
        quantize_array(np.zeros((3, 1), np.float16),
                       edit_blocks(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT8, 3, 1, 16), scale=1e6))


def test_scale_checks():
    x = np.array([[1.0], [0], [0]], np.float32)
    fresh = lambda: make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 3, 1, 16)  # noqa: E731
    with raises_rule("OL-ORT-11"):
        quantize_array(x, edit_blocks(fresh(), scale=1e-100))
    with raises_rule("OL-ORT-12"):
        quantize_array(x, edit_blocks(fresh(), scale=0.0))
    with raises_rule("OL-ORT-14"):
        quantize_array(x, edit_blocks(fresh(), scale=np.inf))
    with raises_rule("OL-ORT-14"):
        quantize_array(x, edit_blocks(fresh(), zero_point=np.nan))
    with raises_rule("OL-ORT-16"):
        quantize_array(np.full((3, 1), 60000, np.float16),
                       edit_blocks(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 3, 1, 16), scale=40000.0,
                                   zero_point=0))


@covers("OL-ORT-12")
def test_zero_scale_on_zero_group_codes_the_zero_point():
    plan = edit_blocks(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 3, 1, 16), scale=0.0, zero_point=5)
    encoded = quantize_array(np.zeros((3, 1), np.float32), plan)
    assert encoded.raw_data[:2] == hx("55 05")
    assert (dequantize_value(encoded) == 0).all()


@covers("OL-ORT-13", "OL-ORT-15")
def test_negative_scale_and_rounding():
    plan = edit_blocks(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 6, 1, 16), scale=-0.5)
    x = np.array([[1.0], [-1], [0.25], [0.75], [-100], [100]], np.float32)
    # x / -0.5 + 8: 6, 10, 7.5 -> 8 (even), 6.5 -> 6 (even), clipped to 15 and 0
    encoded = quantize_array(x, plan)
    assert encoded.raw_data[:3] == hx("A6 68 0F")
    np.testing.assert_array_equal(dequantize_value(encoded).ravel(), [1, -1, 0, 1, -3.5, 4])


# --- goldens (§ 14.13) ---------------------------------------------------------------------------

@covers("OL-ORT-17", "OL-ORT-18", "OL-ORT-19", "OL-ORT-20", "OL-ORT-21", "OL-ORT-22", "OL-ORT-29")
@pytest.mark.parametrize("bits, first, zp_bytes, b_dims, total", [
    (2, "E4", "39 0E", [2, 3, 4], 50),
    (4, "10", "21 03 32 04", [2, 3, 8], 76),
    (8, "00", "01 02 03 02 03 04", [2, 3, 16], 126),
])
def test_golden(bits, first, zp_bytes, b_dims, total):
    x, plan = golden(bits)
    encoded = quantize_array(x, plan)
    raw = encoded.raw_data
    assert len(raw) == total
    assert raw[:1] == hx(first)
    b = int(np.prod(b_dims))
    assert raw[b:b + 24] == np.array([0.5, 1, 1.5, 0.5, 1, 1.5], "<f4").tobytes()
    assert raw[b + 24:] == hx(zp_bytes)
    assert encoded.struct_type.name == f"onnx_light.quantization.v1/ort_matmulnbits_int{bits}"
    fields = encoded.struct_type.structure.field
    assert [f.name for f in fields] == ["parameters", "B", "scales", "zero_points"]
    assert list(fields[0].constant.int64_data) == [bits, 16] and list(fields[0].constant.dims) == [2]
    assert [d.dim_value for d in fields[1].type.tensor_type.shape.dim] == b_dims
    assert fields[3].type.tensor_type.elem_type == 2
    assert [d.dim_value for d in encoded.logical_type.tensor_type.shape.dim] == [35, 2]
    # every code sits where OL-ORT-21 says
    groups, blob, per = 3, 16 * bits // 8, 8 // bits
    for row in range(35):
        for col in range(2):
            g, w = divmod(row, 16)
            byte = raw[(col * groups + g) * blob + w // per]
            assert (byte >> ((w % per) * bits)) & ((1 << bits) - 1) == (row + col) & ((1 << bits) - 1)
    np.testing.assert_array_equal(dequantize_value(encoded), x)
    inputs = export_matmul_nbits_inputs(encoded)
    assert list(inputs.weights.dims) == b_dims and inputs.weights.raw_data == raw[:b]
    assert list(inputs.scales.dims) == [2, 3]
    assert inputs.zero_points.raw_data == hx(zp_bytes)
    assert (inputs.k, inputs.n, inputs.bits, inputs.block_size) == (35, 2, bits, 16)


@covers("OL-ORT-17")
def test_implicit_zero_points():
    encoded = quantize_array(np.array([[-1, 1], [0, 2], [1, 3]], np.float32),
                             make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 3, 2, 16))
    assert encoded.raw_data == hx("87 09") + bytes(6) + hx("A9 0B") + bytes(6) + np.ones(2, "<f4").tobytes()
    assert len(encoded.struct_type.structure.field) == 3
    assert export_matmul_nbits_inputs(encoded).zero_points is None
    np.testing.assert_array_equal(dequantize_value(encoded), [[-1, 1], [0, 2], [1, 3]])


@covers("OL-ORT-17")
def test_floating_zero_points():
    plan = edit_blocks(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 3, 2, 16), scale=[-0.5, 0.5],
                       zero_point=[3.25, 4.5])
    x = np.array([1.625, -2.25, 0.125, 0.25, -1.875, 2.75], np.float32).reshape(3, 2)
    encoded = quantize_array(x, plan)
    np.testing.assert_array_equal(dequantize_value(encoded), x)
    zp = export_matmul_nbits_inputs(encoded).zero_points
    assert zp.data_type == 1 and np.frombuffer(zp.raw_data, "<f4").tolist() == [3.25, 4.5]
    # one out-of-range integer also selects floating storage for every zero point
    plan = edit_blocks(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT2, 3, 2, 16), zero_point=[1, 4])
    zp = export_matmul_nbits_inputs(quantize_array(np.zeros((3, 2), np.float32), plan)).zero_points
    assert zp.data_type == 1 and list(zp.dims) == [2, 1]


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_documented_example_shapes(bits):
    weights = (np.arange(35 * 3).reshape(35, 3) % 3 - 1).astype(np.float32)
    inputs = export_matmul_nbits_inputs(quantize_array(weights, make_matmul_nbits_plan(ORT[bits], 35, 3, 16)))
    assert list(inputs.weights.dims) == [3, 3, 16 * bits // 8] and list(inputs.scales.dims) == [3, 3]
    assert inputs.zero_points is None
    packed = edit_blocks(make_matmul_nbits_plan(ORT[bits], 35, 3, 16), zero_point=1)
    zp = export_matmul_nbits_inputs(quantize_array(weights, packed)).zero_points
    assert list(zp.dims) == [3, -(-3 * bits // 8)]
    floating = edit_blocks(make_matmul_nbits_plan(ORT[bits], 35, 3, 16), zero_point=1.5)
    assert list(export_matmul_nbits_inputs(quantize_array(weights, floating)).zero_points.dims) == [3, 3]


# --- decoding checks ------------------------------------------------------------------------------

def _golden_value(bits=4):
    x, plan = golden(bits)
    return quantize_array(x, plan)


@covers("OL-ORT-23")
def test_weight_padding():
    value = _golden_value()
    raw = bytearray(value.raw_data)
    raw[2 * 8 + 7] = 0x10   # column 0, group 2, row 35 (K = 35): a padding code
    value.raw_data = bytes(raw)
    with raises_rule("OL-ORT-23", offset=2 * 8 + 7):
        dequantize_value(value)
    with raises_rule("OL-ORT-23"):
        export_matmul_nbits_inputs(value)


@covers("OL-ORT-24")
def test_zero_point_padding():
    value = _golden_value(4)   # G = 3 nibbles per column: the top nibble of each column's 2nd byte is spare
    raw = bytearray(value.raw_data)
    raw[48 + 24 + 1] |= 0x50
    value.raw_data = bytes(raw)
    with raises_rule("OL-ORT-24", offset=48 + 24 + 1):
        dequantize_value(value)
    with raises_rule("OL-ORT-24"):
        export_matmul_nbits_inputs(value)


def test_descriptor_checks():
    value = _golden_value()
    value.struct_type.structure.field[0].constant.int64_data[0] = 2
    with raises_rule("OL-ORT-25"):
        dequantize_value(value)
    value = _golden_value()
    value.struct_type.structure.field[3].name = "zero_point"
    with raises_rule("OL-ORT-26"):
        dequantize_value(value)
    value = _golden_value()
    value.struct_type.structure.field[1].name = "W"
    with raises_rule("OL-ORT-27"):
        dequantize_value(value)
    value = _golden_value()
    value.struct_type.structure.field[1].type.tensor_type.shape.dim[2].dim_value = 9
    with raises_rule("OL-ORT-27"):
        dequantize_value(value)
    value = _golden_value()
    value.raw_data = value.raw_data[:-1]
    with raises_rule("OL-ORT-28"):
        dequantize_value(value)
    value = _golden_value()
    value.raw_data = value.raw_data + b"\x00"
    with raises_rule("OL-ORT-28"):
        export_matmul_nbits_inputs(value)
    value = _golden_value()
    value.logical_type.tensor_type.elem_type = 11
    with raises_rule("OL-ORT-08"):
        dequantize_value(value)


def test_stored_nan_scale():
    value = quantize_array(np.zeros((3, 2), np.float32), make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 3, 2, 16))
    value.raw_data = value.raw_data[:16] + hx("00 00 C0 7F") + value.raw_data[20:]
    with raises_rule("OL-ORT-14", offset=16):
        dequantize_value(value)


# --- export ----------------------------------------------------------------------------------------

@covers("OL-ORT-30")
def test_export_through_catalogue_reference():
    value = _golden_value(2)
    model = ModelProto()
    entry = model.struct_types.add()
    entry.CopyFrom(value.struct_type)
    entry.type_id = 7
    referenced = type(value)()
    referenced.CopyFrom(value)
    referenced.struct_type.Clear()
    referenced.struct_type.type_ref = 7
    inputs = export_matmul_nbits_inputs(referenced, model)
    direct = export_matmul_nbits_inputs(value)
    assert inputs == direct
    np.testing.assert_array_equal(dequantize_value(referenced, model), dequantize_value(value))


def test_export_refuses_portable_values():
    for fmt in (F.MATMULNBITS, F.INT4):
        value = quantize_array(np.zeros(4, np.float32), make_quantization_plan(fmt, 4))
        with raises_rule("OL-ORT-31"):
            export_matmul_nbits_inputs(value)


def test_decode_plan_round_trip():
    x, plan = golden(8)
    encoded = quantize_array(x, plan)
    again = quantize_array(dequantize_value(encoded), decode_plan(encoded))
    assert again.raw_data == encoded.raw_data and again.struct_type == encoded.struct_type


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_sixteen_bit_sources(dtype):
    x, plan = golden(4)
    encoded = quantize_array(x.astype(dtype), plan)
    assert encoded.logical_type.tensor_type.elem_type == (10 if dtype == np.float16 else 16)
    assert len(encoded.raw_data) == 48 + 12 + 4
    np.testing.assert_array_equal(dequantize_value(encoded), x.astype(dtype))


# --- calibration (OL-CAL-20) ----------------------------------------------------------------------

@covers("OL-CAL-20")
@pytest.mark.parametrize("bits", [2, 4, 8])
def test_ort_calibration(bits):
    x = np.array([-1, -2, 0, 0, 1, 2], np.float32).reshape(3, 2)
    destination = quantize_array(np.zeros((3, 2), np.float32), make_matmul_nbits_plan(ORT[bits], 3, 2, 16))
    encoded = quantize_with_type(x, destination.struct_type)
    np.testing.assert_allclose(dequantize_value(encoded), x, atol=1e-6)
    scales = [b.scale for b in decode_plan(encoded).run(0).blocks]
    mid = 2 ** (bits - 1)
    expected = [max(1 / (2**bits - 1 - mid), 1 / mid), max(2 / (2**bits - 1 - mid), 2 / mid)]
    assert scales == [float(np.float32(s)) for s in expected]
    if bits == 2:
        assert scales == [1.0, 2.0]


@covers("OL-CAL-20")
def test_ort_calibration_excludes_padding_and_uses_explicit_zero_points():
    x = np.array([[3.0], [6.0]], np.float32)
    destination = quantize_array(np.zeros((2, 1), np.float32),
                                 edit_blocks(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 2, 1, 16), zero_point=3))
    encoded = quantize_with_type(x, destination.struct_type, zero_points=np.array(3.0, np.float32))
    # high = 15 - 3 = 12: scale 6 / 12 = 0.5; the 14 zero padding rows change nothing
    assert decode_plan(encoded).run(0).block(0).scale == 0.5
    np.testing.assert_array_equal(dequantize_value(encoded), x)
    with raises_rule("OL-ORT-09"):
        quantize_with_type(x, destination.struct_type, offsets=np.array(1.0, np.float32))


@covers("OL-OP-13")
def test_ort_destination_must_match():
    destination = quantize_array(np.zeros((3, 2), np.float32),
                                 make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 3, 2, 16)).struct_type
    with raises_rule("OL-OP-13"):
        quantize_with_type(np.zeros((3, 3), np.float32), destination)     # N differs
    with raises_rule("OL-OP-13"):
        quantize_with_type(np.zeros((40, 2), np.float32), destination)    # G differs
    with raises_rule("OL-OP-13"):
        quantize_with_type(np.zeros((3, 2), np.float16), destination)     # scale dtype differs
    with raises_rule("OL-OP-13"):                                        # zero-point storage differs
        quantize_with_type(np.zeros((3, 2), np.float32), destination, zero_points=np.array(3.0, np.float32))
    with raises_rule("OL-OP-13"):
        from hurray_decl.onnx_light import make_quantization_type
        make_quantization_type(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 3, 2, 16))
    assert set(ORT_FORMATS) == set(ORT.values())


# --- property test ---------------------------------------------------------------------------------

from hypothesis import (
    given,
    strategies as st,
)

from hurray_decl.convert.portable import from_block_parts, to_block_parts


@st.composite
def ort_cases(draw):
    bits = draw(st.sampled_from([2, 4, 8]))
    block = draw(st.sampled_from([16, 32]))
    k, n = draw(st.integers(1, 70)), draw(st.integers(1, 4))
    dtype = draw(st.sampled_from([np.dtype(np.float32), np.dtype(np.float16), BF16]))
    blocks = n * -(-k // block)
    # dyadic parameters and values: exact in every dtype, so the reference below is exact too
    scales = [draw(st.sampled_from([-2.0, -0.25, 0.125, 0.5, 1.0, 4.0])) for _ in range(blocks)]
    kind = draw(st.sampled_from(["implicit", "packed", "float"]))
    hi = (1 << bits) - 1
    if kind == "implicit":
        zps = [float(1 << (bits - 1))] * blocks
    elif kind == "packed":
        zps = [float(draw(st.integers(0, hi))) for _ in range(blocks)]
    else:
        zps = [draw(st.integers(0, hi)) + 0.5 for _ in range(blocks)]
    x = np.array([draw(st.integers(-64, 64)) / 8 for _ in range(k * n)], dtype=np.float64).reshape(k, n)
    return bits, block, dtype, scales, zps, x.astype(dtype)


@given(ort_cases())
def test_random_ort_values_match_the_formula(case):
    bits, block, dtype, scales, zps, x = case
    k, n = x.shape
    plan = edit_blocks(make_matmul_nbits_plan(ORT[bits], k, n, block), scale=scales, zero_point=zps)
    encoded = quantize_array(x, plan)
    g = -(-k // block)
    zps = np.array(zps, np.float32).astype(dtype).astype(np.float64).tolist()   # rounded to the dtype (OL-ORT-10)
    s = np.array(scales).reshape(n, g).repeat(block, 1)[:, :k].T
    z = np.array(zps).reshape(n, g).repeat(block, 1)[:, :k].T
    codes = np.clip(np.rint(x.astype(np.float64) / s + z), 0, (1 << bits) - 1)
    np.testing.assert_array_equal(dequantize_value(encoded).astype(np.float64), (codes - z) * s)
    assert len(encoded.raw_data) == n * g * block * bits // 8 + n * g * dtype.itemsize + (
        0 if all(v == 1 << (bits - 1) for v in zps) else
        n * -(-g * bits // 8) if all(v == int(v) for v in zps) else n * g * dtype.itemsize)
    again = quantize_array(dequantize_value(encoded), decode_plan(encoded))
    assert again.SerializeToString() == encoded.SerializeToString()
    if all(v == int(v) for v in zps) and k >= block:
        assert from_block_parts(to_block_parts(encoded), ORT[bits]).SerializeToString() == encoded.SerializeToString()


from google.protobuf.message import DecodeError
from hypothesis import assume

from hurray_decl.errors import HurrayDeclError
from hurray_decl.onnx_light import StructTypeProto


@given(ort_cases(), st.data())
def test_mutated_ort_values_raise_only_hurray_errors(case, data):
    bits, block, _, scales, zps, x = case
    plan = edit_blocks(make_matmul_nbits_plan(ORT[bits], *x.shape, block), scale=scales, zero_point=zps)
    encoded = quantize_array(x, plan)
    mutated = type(encoded)()
    mutated.CopyFrom(encoded)
    if data.draw(st.booleans()):
        raw = bytearray(encoded.raw_data)
        for _ in range(data.draw(st.integers(1, 3))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        if data.draw(st.booleans()):
            raw = raw[: data.draw(st.integers(0, len(raw)))] + bytes(data.draw(st.integers(0, 3)))
        mutated.raw_data = bytes(raw)
    else:
        wire = bytearray(encoded.struct_type.SerializeToString())
        for _ in range(data.draw(st.integers(1, 3))):
            wire[data.draw(st.integers(0, len(wire) - 1))] = data.draw(st.integers(0, 255))
        try:
            mutated.struct_type.CopyFrom(StructTypeProto.FromString(bytes(wire)))
        except DecodeError:
            assume(False)
    for call in (dequantize_value, export_matmul_nbits_inputs, to_block_parts):
        try:
            call(mutated)
        except HurrayDeclError:
            pass
