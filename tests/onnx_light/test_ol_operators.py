"""ai.rt::Quantize and ai.rt::Dequantize in onnx's reference evaluator (OL-OP)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T, helper

from hurray_decl.onnx_light import (
    EncodedValueProto,
    ModelProto,
    QuantizationFormat as F,
    QuantizedValue,
    TypeProto,
    add_quantization_parameters,
    decode_plan,
    dequantize_value,
    infer_shapes_model,
    make_matmul_nbits_plan,
    make_quantization_plan,
    make_quantization_type,
    make_reference_evaluator,
    quantization_operators,
    quantize_array,
    quantize_tensor_shared,
)
from tests.helpers import covers, raises_rule
from tests.onnx_light.support import edit_layout

OPSETS = [helper.make_opsetid("", 21), helper.make_opsetid("ai.rt", 1)]
X8 = np.array([-8, -4, 0, 7, -16, 0, 8, 14], np.float32)


def onnx_type(struct) -> onnx.TypeProto:
    return onnx.TypeProto.FromString(TypeProto(struct_type=struct).SerializeToString())


def int4_type(count=8, block=4):
    return make_quantization_type(make_quantization_plan(F.INT4, count, block_size=block))


def run_node(node, *inputs, model=None):
    """Run one node through the bound operator class, as the evaluator would."""
    ops = {cls.__name__: cls for cls in quantization_operators(model)}
    params = {"opsets": {"": 21, "ai.rt": 1}, "new_ops": {}, "log": lambda *a: None, "verbose": 0}
    return ops[node.op_type](node, params).run(*inputs)[0]


def quantize_node(inputs=("X",), output="Q", **attributes):
    attributes.setdefault("type", onnx_type(int4_type()))
    return helper.make_node("Quantize", list(inputs), [output], domain="ai.rt", **attributes)


def dequantize_node(dtype=T.FLOAT):
    return helper.make_node("Dequantize", ["Q"], ["Y"], domain="ai.rt", dtype=dtype)


# --- the graph example (quantized-values.txt § Graph operators) --------------------------------------

@covers("OL-OP-01", "OL-OP-06")
def test_documented_calibration_graph():
    plan = make_quantization_plan(F.INT4, 8, block_size=4)
    destination = onnx.TypeProto.FromString(TypeProto(struct_type=make_quantization_type(plan)).SerializeToString())
    encode = helper.make_node("Quantize", ["X"], ["Q"], domain="ai.rt", type=destination)
    decode = helper.make_node("Dequantize", ["Q"], ["Y"], domain="ai.rt", dtype=T.FLOAT)
    graph = helper.make_graph([encode, decode], "quantization", [helper.make_tensor_value_info("X", T.FLOAT, [8])],
                              [helper.make_tensor_value_info("Y", T.FLOAT, [8])])
    model = helper.make_model(graph, opset_imports=OPSETS)
    y, q = make_reference_evaluator(model).run(["Y", "Q"], {"X": X8})
    np.testing.assert_array_equal(y, X8)
    assert [b.scale for r in decode_plan(q.encoded).runs for b in r.blocks] == [1.0, 2.0]
    assert q.name == "Q" and q.encoded.logical_type.tensor_type.elem_type == T.FLOAT
    # doubling the input doubles the scales; the message equals the explicit-plan encoding
    (q2,) = make_reference_evaluator(model).run(["Q"], {"X": 2 * X8})
    plan_run = plan.run(0)
    blocks = plan_run.blocks
    for block, scale in zip(blocks, [2.0, 4.0]):
        block.scale = scale
    plan_run.blocks = blocks
    plan.set_run(0, plan_run)
    explicit = quantize_array(2 * X8, plan)
    explicit.name = "Q"
    assert q2.encoded.SerializeToString() == explicit.SerializeToString()
    # the encoded output serializes for reuse as an initializer
    assert EncodedValueProto.FromString(q.encoded.SerializeToString()) == q.encoded


@covers("OL-OP-01")
def test_explicit_inputs_in_order():
    scales = np.array([2, 4], np.float32)
    value = run_node(quantize_node(("X", "scales")), X8, scales)
    np.testing.assert_array_equal(value.todense(), [-8, -4, 0, 8, -16, 0, 8, 16])
    int8 = make_quantization_type(make_quantization_plan(F.INT8, 7, 128))
    x = np.array([-40, -1, -0.6, 0, 0.6, 1, 40], np.float32)
    value = run_node(quantize_node(("X", "scales", "zero_points"), type=onnx_type(int8)), x,
                     np.array(0.25, np.float64), np.array(-3, np.float16))
    np.testing.assert_array_equal(value.todense(), [-31.25, -1, -0.5, 0, 0.5, 1, 32.5])
    with raises_rule("OL-OP-01"):
        run_node(quantize_node(tuple("X" for _ in range(10))), *([X8] * 10))


def test_input_types():
    with raises_rule("OL-OP-02"):
        run_node(quantize_node(), X8.astype(np.int32))
    with raises_rule("OL-OP-02"):
        run_node(quantize_node(("X", "scales")), X8, np.array(1, np.int64))
    with raises_rule("OL-OP-02"):
        run_node(quantize_node(("X", "", "", "", "", "permutation")), X8, None, None, None, None,
                 np.arange(8, dtype=np.float32))
    value = run_node(quantize_node(("X", "scales")), X8, np.array([1, 2], ml_dtypes.bfloat16))
    np.testing.assert_array_equal(value.todense(), X8)


def test_attribute_contracts():
    with raises_rule("OL-OP-03"):
        run_node(helper.make_node("Quantize", ["X"], ["Q"], domain="ai.rt"), X8)
    with raises_rule("OL-OP-03"):
        run_node(quantize_node(type=helper.make_tensor_type_proto(T.FLOAT, [8])), X8)
    with raises_rule("OL-OP-04"):
        run_node(quantize_node(parameter_ref=""), X8)
    with raises_rule("OL-OP-05"):
        run_node(quantize_node(output=""), X8)


@covers("OL-OP-03")
def test_type_attribute_may_be_a_catalogue_reference():
    model = helper.make_model(helper.make_graph([], "g", [], []), opset_imports=OPSETS)
    catalogue = ModelProto()
    entry = catalogue.struct_types.add()
    entry.CopyFrom(int4_type())
    entry.type_id = 9
    model.MergeFromString(catalogue.SerializeToString())
    reference = TypeProto()
    reference.struct_type.type_ref = 9
    value = run_node(quantize_node(type=onnx.TypeProto.FromString(reference.SerializeToString())), X8, model=model)
    assert value.encoded.struct_type.type_ref == 9
    np.testing.assert_array_equal(run_node(dequantize_node(), value), X8)


@covers("OL-OP-06")
def test_logical_shape_and_dtype_are_kept():
    x = X8.reshape(2, 4).astype(np.float16)
    value = run_node(quantize_node(), x)
    assert [d.dim_value for d in value.encoded.logical_type.tensor_type.shape.dim] == [2, 4]
    restored = value.todense()
    assert restored.dtype == np.float16 and restored.shape == (2, 4)


# --- Dequantize ---------------------------------------------------------------------------------------

def test_dequantize_dtype_attribute():
    value = run_node(quantize_node(), X8)
    for dtype in (0, T.INT8, T.UINT8):
        with raises_rule("OL-OP-07"):
            run_node(dequantize_node(dtype), value)
    with raises_rule("OL-OP-07"):
        run_node(helper.make_node("Dequantize", ["Q"], ["Y"], domain="ai.rt"), value)
    for dtype, np_dtype in ((T.FLOAT, np.float32), (T.DOUBLE, np.float64), (T.FLOAT16, np.float16),
                            (T.BFLOAT16, ml_dtypes.bfloat16)):
        y = run_node(dequantize_node(dtype), value)
        assert y.dtype == np_dtype
        np.testing.assert_array_equal(y.astype(np.float64), X8)


@covers("OL-OP-08")
def test_dequantize_refuses_overflow():
    value = run_node(quantize_node(type=onnx_type(make_quantization_type(make_quantization_plan(F.TILED_FLOAT, 1)))),
                     np.array([65536.0], np.float32))
    np.testing.assert_array_equal(run_node(dequantize_node(T.FLOAT), value), [65536])
    with raises_rule("OL-OP-08"):
        run_node(dequantize_node(T.FLOAT16), value)


@covers("OL-OP-09")
def test_dequantize_decodes_every_kind():
    portable = quantize_array(X8, make_quantization_plan(F.NF4, 8))
    np.testing.assert_allclose(run_node(dequantize_node(), portable), dequantize_value(portable))
    ort_value = quantize_array(X8.reshape(4, 2), make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT8, 4, 2, 16))
    np.testing.assert_array_equal(run_node(dequantize_node(), ort_value), X8.reshape(4, 2))
    model = helper.make_model(helper.make_graph([], "g", [], []), opset_imports=OPSETS)
    add_quantization_parameters(model, "s", int4_type(), helper.make_tensor_type_proto(T.FLOAT, [8]),
                                scales=np.array([1, 2], np.float32))
    shared = quantize_tensor_shared(X8, model, "s")
    np.testing.assert_array_equal(run_node(dequantize_node(), shared), X8)
    # a bare compact message decodes through the session's catalogue
    np.testing.assert_array_equal(run_node(dequantize_node(), shared.encoded, model=model), X8)
    assert isinstance(run_node(quantize_node(), X8), QuantizedValue)


# --- inference ----------------------------------------------------------------------------------------

@covers("OL-OP-10", "OL-OP-11")
def test_type_and_shape_inference():
    destination = int4_type()
    graph = helper.make_graph(
        [quantize_node(), helper.make_node("Identity", ["Q"], ["Q2"]), dequantize_node(T.FLOAT16),
         helper.make_node("Dequantize", ["W"], ["V"], domain="ai.rt", dtype=T.DOUBLE)],
        "g", [helper.make_tensor_value_info("X", T.FLOAT, [8])], [helper.make_tensor_value_info("Y", T.FLOAT16, None)])
    model = helper.make_model(graph, opset_imports=OPSETS)
    encoded = quantize_array(X8.reshape(2, 4), make_quantization_plan(F.INT4, 8, 4))
    encoded.name = "W"
    bare = ModelProto.FromString(model.SerializeToString())
    bare.graph.encoded_initializer.add().CopyFrom(encoded)
    model = onnx.ModelProto.FromString(bare.SerializeToString())
    inferred = infer_shapes_model(model)
    assert isinstance(inferred, onnx.ModelProto)
    info = {v.name: TypeProto.FromString(v.type.SerializeToString()) for v in inferred.graph.value_info}
    assert info["Q"].struct_type == destination and info["Q2"].struct_type == destination
    assert info["V"].tensor_type.elem_type == T.DOUBLE
    assert [d.dim_value for d in info["V"].tensor_type.shape.dim] == [2, 4]
    assert "Y" not in info                      # a declared output keeps its declaration
    # ONNX's own inference does not know the ai.rt operators: it records nothing for them
    assert not {v.name for v in onnx.shape_inference.infer_shapes(model).graph.value_info} & {"Q", "Q2", "Y", "V"}
    # without a concrete encoded initializer only the dtype is known
    graph2 = helper.make_graph([quantize_node(), dequantize_node(T.FLOAT)], "g2",
                               [helper.make_tensor_value_info("X", T.FLOAT, [8])], [])
    inferred2 = infer_shapes_model(helper.make_model(graph2, opset_imports=OPSETS))
    info2 = {v.name: v.type for v in inferred2.graph.value_info}
    assert info2["Y"].tensor_type.elem_type == T.FLOAT and not info2["Y"].tensor_type.HasField("shape")
    # with parameter_ref, Quantize's physical type is the compact one
    model3 = helper.make_model(helper.make_graph([quantize_node(parameter_ref="s")], "g3",
                                                 [helper.make_tensor_value_info("X", T.FLOAT, [8])], []),
                               opset_imports=OPSETS)
    compact = add_quantization_parameters(model3, "s", int4_type(), helper.make_tensor_type_proto(T.FLOAT, [8]),
                                          scales=np.array(1, np.float32))
    info3 = {v.name: TypeProto.FromString(v.type.SerializeToString())
             for v in infer_shapes_model(model3).graph.value_info}
    assert info3["Q"].struct_type == compact


@covers("OL-OP-12")
def test_make_quantization_type_needs_no_tables():
    plan = make_quantization_plan(F.QUIP_SHARP, 16, 8)
    plan.transform_size = 2                       # sizes only: no matrix values
    described = make_quantization_type(plan)
    assert described.name == "onnx_light.quantization.v1/quip_sharp"
    fields = described.structure.field
    assert [d.dim_value for d in fields[2].type.tensor_type.shape.dim] == [2, 2]
    assert make_quantization_type(edit_layout(make_quantization_plan(F.INT4, 8, 4), bits=3)) != int4_type()


@covers("OL-OP-09")
def test_encoded_output_reused_as_an_initializer():
    """The gallery's last step: serialize an encoded output and decode it as an initializer."""
    (q,) = make_reference_evaluator(helper.make_model(helper.make_graph(
        [quantize_node()], "encode", [helper.make_tensor_value_info("X", T.FLOAT, [8])],
        [helper.make_value_info("Q", onnx.TypeProto())]), opset_imports=OPSETS)).run(["Q"], {"X": X8})
    stored = EncodedValueProto.FromString(q.encoded.SerializeToString())
    stored.name = "W"
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Dequantize", ["W"], ["Y"], domain="ai.rt", dtype=T.FLOAT)], "decode", [],
        [helper.make_tensor_value_info("Y", T.FLOAT, [8])]), opset_imports=OPSETS)
    bare = ModelProto.FromString(model.SerializeToString())
    bare.graph.encoded_initializer.add().CopyFrom(stored)
    model = onnx.ModelProto.FromString(bare.SerializeToString())
    (y,) = make_reference_evaluator(model).run(None, {})
    np.testing.assert_array_equal(y, X8)
    # a compact initializer decodes through the model's parameter set
    add_quantization_parameters(model, "s", int4_type(), helper.make_tensor_type_proto(T.FLOAT, [8]),
                                scales=np.array([1, 2], np.float32))
    compact = quantize_tensor_shared(X8, model, "s").encoded
    compact.name = "W"
    bare = ModelProto.FromString(model.SerializeToString())
    bare.graph.encoded_initializer[0].CopyFrom(compact)
    (y,) = make_reference_evaluator(bare).run(None, {})
    np.testing.assert_array_equal(y, X8)
    compact.raw_data += b"\x00"
    bare.graph.encoded_initializer[0].CopyFrom(compact)
    with raises_rule("OL-SHR-23"):
        make_reference_evaluator(bare)
