"""Shared parameter sets on a real onnx.ModelProto, the compact layout and materialization (OL-SHR)."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T, helper

from hurray_decl.onnx_light import (
    EncodedValueProto,
    ModelProto,
    QuantizationFormat as F,
    TypeProto,
    add_quantization_parameters,
    check_model,
    check_model_values,
    dequantize_value,
    make_matmul_nbits_plan,
    make_quantization_plan,
    make_quantization_type,
    make_reference_evaluator,
    make_shared_quantization_type,
    materialize_quantized_value,
    model_to_textproto,
    parameter_catalogue,
    quantize_array,
    quantize_tensor_shared,
    quantize_with_type,
    serialize_for_ort,
    struct_type_proto,
)
from tests.helpers import covers, raises_rule
from tests.onnx_light.support import D, edit_blocks, hx

PREFIX = "onnx_light.quantization.parameters:"
X0 = np.array([-4, -0.5, 0.5, 3.5], np.float32)
X1 = np.array([-8, -1, 1, 7], np.float32)


def onnx_type(struct) -> onnx.TypeProto:
    return onnx.TypeProto.FromString(TypeProto(struct_type=struct).SerializeToString())


def int4_storage():
    return make_quantization_type(make_quantization_plan(F.INT4, 4, block_size=4))


def base_model(inputs=("X0", "X1"), outputs=("Y0", "Y1"), size=4) -> onnx.ModelProto:
    graph = helper.make_graph(
        [], "shared_quantization", [helper.make_tensor_value_info(n, T.FLOAT, [size]) for n in inputs],
        [helper.make_tensor_value_info(n, T.FLOAT, [size]) for n in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ai.rt", 1)])


def common_model(**parameters):
    model = base_model()
    compact = add_quantization_parameters(model, "common", int4_storage(),
                                          helper.make_tensor_type_proto(T.FLOAT, [4]),
                                          scales=parameters.pop("scales", np.array(0.5, np.float32)), **parameters)
    return model, compact


def initializer(model, role, name="common"):
    return next(t for t in model.graph.initializer if t.name == f"{PREFIX}{name}/{role}")


def annotation(model):
    return next(a for a in model.graph.quantization_annotation if a.tensor_name.startswith(PREFIX))


# --- the documented example (acceptance 2) ---------------------------------------------------------

@covers("OL-SHR-12", "OL-SHR-20", "OL-SHR-30")
def test_documented_shared_example():
    """quantized-values.txt § Declaring and selecting a set, run in onnx's reference evaluator."""
    plan = make_quantization_plan(F.INT4, 4, block_size=4)
    storage = make_quantization_type(plan)
    destination = struct_type_proto(storage)    # onnx.TypeProto has no struct_type keyword
    model = base_model()
    compact = add_quantization_parameters(model, "common", storage, helper.make_tensor_type_proto(T.FLOAT, [4]),
                                          scales=np.array(0.5, dtype=np.float32))
    for index in range(2):
        model.graph.node.append(helper.make_node("Quantize", [f"X{index}"], [f"Q{index}"], domain="ai.rt",
                                                 type=destination, parameter_ref="common"))
    model.graph.node.append(helper.make_node("Identity", ["Q1"], ["Q1_copy"]))
    for index, encoded_name in enumerate(("Q0", "Q1_copy")):
        model.graph.node.append(helper.make_node("Dequantize", [encoded_name], [f"Y{index}"], domain="ai.rt",
                                                 dtype=T.FLOAT))
    model.graph.output.append(helper.make_value_info("Q0", struct_type_proto(compact)))
    # Model serialization keeps the declaration, initializers and references.
    loaded = onnx.ModelProto()
    loaded.ParseFromString(model.SerializeToString())
    y0, y1, shared, copy = make_reference_evaluator(loaded).run(["Y0", "Y1", "Q0", "Q1_copy"], {"X0": X0, "X1": X1})
    np.testing.assert_array_equal(y0, [-4, -0.5, 0.5, 3.5])
    np.testing.assert_array_equal(y1, [-4, -1, 1, 3.5])   # saturates: the set's scale is not recalibrated
    assert shared.parameter_ref == "common"
    assert len(shared.raw_data) == 3  # Reserved byte plus four INT4 codes, no scale.
    assert shared.raw_data == hx("00 F8 71") and copy.raw_data == hx("00 E8 72")
    assert copy.parameters is not None and copy.parameter_ref == "common"   # Identity keeps reference and owner
    standalone = materialize_quantized_value(shared)
    assert not standalone.HasField("parameter_ref")
    assert standalone.raw_data == hx("00") + D(0.5) + bytes(16) + hx("F8 71")
    # the graph output is typed with the compact type, not Quantize's full descriptor
    output = TypeProto.FromString(loaded.graph.output[2].type.SerializeToString())
    assert output.struct_type == compact and compact.name == "onnx_light.quantization.shared.v1"


# --- declarations -----------------------------------------------------------------------------------

@covers("OL-SHR-01")
def test_declaration_layout():
    model, _ = common_model()
    note = model.graph.quantization_annotation.add()
    note.tensor_name = "weights"                       # an ordinary annotation keeps its meaning
    entry = note.quant_parameter_tensor_names.add()
    entry.key, entry.value = "SCALE_TENSOR", "weights_scale"
    a = annotation(model)
    assert a.tensor_name == PREFIX + "common"
    roles = {e.key: e.value for e in a.quant_parameter_tensor_names}
    assert roles == {r: f"{PREFIX}common/{r}" for r in ("storage_type", "logical_type", "scales")}
    storage = initializer(model, "storage_type")
    assert storage.data_type == T.UINT8 and list(storage.dims) == [len(storage.raw_data)]
    assert list(parameter_catalogue(model)) == ["common"]


def test_role_checks():
    model, _ = common_model()
    entry = annotation(model).quant_parameter_tensor_names.add()
    entry.key, entry.value = "bias", f"{PREFIX}common/scales"
    with raises_rule("OL-SHR-02"):
        parameter_catalogue(model)
    model, _ = common_model()
    entry = annotation(model).quant_parameter_tensor_names.add()
    entry.key, entry.value = "scales", f"{PREFIX}common/scales"
    with raises_rule("OL-SHR-03"):
        parameter_catalogue(model)
    model, _ = common_model()
    entries = annotation(model).quant_parameter_tensor_names
    del entries[[e.key for e in entries].index("scales")]
    with raises_rule("OL-SHR-04"):
        parameter_catalogue(model)
    with raises_rule("OL-SHR-04"):
        common_model(scales=None)


def test_set_names():
    model, _ = common_model()
    with raises_rule("OL-SHR-05"):
        add_quantization_parameters(model, "common", int4_storage(), helper.make_tensor_type_proto(T.FLOAT, [4]),
                                    scales=np.array(1.0, np.float32))
    model, _ = common_model()
    model.graph.quantization_annotation.add().CopyFrom(annotation(model))
    with raises_rule("OL-SHR-05"):
        parameter_catalogue(model)
    with raises_rule("OL-SHR-06"):
        add_quantization_parameters(base_model(), "", int4_storage(), helper.make_tensor_type_proto(T.FLOAT, [4]),
                                    scales=np.array(1.0, np.float32))
    model, _ = common_model()
    annotation(model).tensor_name = PREFIX
    with raises_rule("OL-SHR-06"):
        parameter_catalogue(model)


def test_initializer_checks():
    model, _ = common_model()
    scales = initializer(model, "scales")
    model.graph.initializer.remove(scales)
    with raises_rule("OL-SHR-07"):
        parameter_catalogue(model)
    model, _ = common_model()
    storage = initializer(model, "storage_type")
    storage.data_type = T.INT8
    with raises_rule("OL-SHR-08"):
        parameter_catalogue(model)
    model, _ = common_model()
    logical = initializer(model, "logical_type")
    logical.raw_data = onnx.TypeProto(
        sequence_type=onnx.TypeProto.Sequence(elem_type=helper.make_tensor_type_proto(T.FLOAT, [4]))
    ).SerializeToString()
    logical.dims[0] = len(logical.raw_data)
    with raises_rule("OL-SHR-08"):
        parameter_catalogue(model)
    model, _ = common_model()
    scales = initializer(model, "scales")
    scales.ClearField("raw_data")
    scales.data_location = T.EXTERNAL
    entry = scales.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    with raises_rule("OL-SHR-09"):
        parameter_catalogue(model)
    with raises_rule("OL-SHR-10"):
        common_model(scales=np.array([0.5, 1.0, 2.0], np.float32))   # one block, three scales
    with raises_rule("OL-SHR-10"):
        common_model(zero_points=np.array(0.5, np.float32))         # not an integer zero point


def test_storage_type_through_catalogue_reference():
    model = base_model()
    entry = ModelProto()
    declared = entry.struct_types.add()
    declared.CopyFrom(int4_storage())
    declared.type_id = 3
    model.MergeFromString(entry.SerializeToString())
    reference = TypeProto()
    reference.struct_type.type_ref = 3
    compact = add_quantization_parameters(model, "common", reference.struct_type,
                                          helper.make_tensor_type_proto(T.FLOAT, [4]), scales=np.array(0.5, np.float32))
    assert quantize_tensor_shared(X0, model, "common").raw_data == hx("00 F8 71")
    assert make_shared_quantization_type(model, "common") == compact


@covers("OL-SHR-11")
def test_check_model_reports_validation_error():
    model, _ = common_model()
    model.graph.quantization_annotation.add().CopyFrom(annotation(model))
    with pytest.raises(onnx.checker.ValidationError) as info:
        check_model(model)
    assert info.value.code == "OL-SHR-05"
    model, _ = common_model()
    assert check_model(model) == 0


# --- encoding with a set ---------------------------------------------------------------------------

@covers("OL-SHR-14", "OL-SHR-34")
def test_quantize_tensor_shared():
    model, _ = common_model()
    value = quantize_tensor_shared(onnx.numpy_helper.from_array(X1, name="w"), model, "common")
    assert value.name == "w" and value.raw_data == hx("00 E8 72")
    with raises_rule("OL-SHR-14"):
        quantize_tensor_shared(X1.astype(np.float16), model, "common")
    with raises_rule("OL-SHR-14"):
        quantize_tensor_shared(np.zeros(5, np.float32), model, "common")
    graph_model, _ = common_model()
    graph_model.graph.node.append(helper.make_node("Quantize", ["X0"], ["w"], domain="ai.rt",
                                                   type=onnx_type(int4_storage()), parameter_ref="common"))
    graph_model.graph.output.append(helper.make_value_info("w", onnx.TypeProto()))
    (from_graph,) = make_reference_evaluator(graph_model).run(["w"], {"X0": X1, "X1": X1})
    assert from_graph.encoded == value.encoded


@covers("OL-SHR-17", "OL-SHR-18", "OL-SHR-19")
def test_compact_value_fields_and_bytes():
    model, compact = common_model()
    value = quantize_tensor_shared(X0, model, "common").encoded
    assert value.HasField("name") and value.name == ""   # OD-13: present and empty, as the original
    assert value.parameter_ref == "common"
    assert value.logical_type == TypeProto.FromString(helper.make_tensor_type_proto(T.FLOAT, [4]).SerializeToString())
    assert value.struct_type == compact
    (local,) = compact.structure.field
    assert local.name == "local" and local.type.tensor_type.elem_type == T.UINT8
    assert [d.dim_value for d in local.type.tensor_type.shape.dim] == [3]
    # portable with an outlier and two runs: the local ranges are the outlier value, then each block's codes
    plan = make_quantization_plan(F.INT4, 6, block_size=4)
    plan.outliers = [5]
    storage = make_quantization_type(plan)
    model = base_model()
    compact = add_quantization_parameters(model, "s", storage, helper.make_tensor_type_proto(T.FLOAT, [2, 3]),
                                          scales=np.array([0.5, 2.0], np.float32), outliers=np.array([5]))
    x = np.array([[1, -1, 0.5], [4, -2, 100]], np.float32)
    shared = quantize_tensor_shared(x, model, "s")
    full = quantize_with_type(x, storage, scales=np.array([0.5, 2.0], np.float32), outliers=np.array([5]))
    start = 1 + 8
    assert shared.raw_data == b"\x00" + full.raw_data[start:start + 8] + full.raw_data[start + 8 + 24:start + 8 + 26] \
        + full.raw_data[-1:]
    assert [d.dim_value for d in compact.structure.field[0].type.tensor_type.shape.dim] == [1 + 8 + 2 + 1]
    assert materialize_quantized_value(shared) == full
    np.testing.assert_array_equal(dequantize_value(shared.encoded, model), dequantize_value(full))


@covers("OL-SHR-18")
def test_ort_compact_values_keep_only_b():
    ort_value = quantize_array(np.zeros((35, 2), np.float32),
                               edit_blocks(make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 35, 2, 16), zero_point=3))
    model = base_model()
    add_quantization_parameters(model, "ort", ort_value.struct_type, helper.make_tensor_type_proto(T.FLOAT, [35, 2]),
                                scales=np.arange(1, 7, dtype=np.float32) / 4, zero_points=np.array(3.0, np.float32))
    x = np.random.default_rng(3).uniform(-1, 1, (35, 2)).astype(np.float32)
    shared = quantize_tensor_shared(x, model, "ort")
    full = materialize_quantized_value(shared)
    assert len(shared.raw_data) == 1 + 48 and shared.raw_data[1:] == full.raw_data[:48]
    np.testing.assert_array_equal(dequantize_value(shared.encoded, model), dequantize_value(full))


@covers("OL-SHR-16")
def test_shared_type_ref_shares_no_parameters():
    model = base_model()
    catalogue = ModelProto()
    declared = catalogue.struct_types.add()
    declared.CopyFrom(int4_storage())
    declared.type_id = 1
    model.MergeFromString(catalogue.SerializeToString())
    reference = TypeProto()
    reference.struct_type.type_ref = 1
    for index in range(2):
        model.graph.node.append(helper.make_node("Quantize", [f"X{index}"], [f"Q{index}"], domain="ai.rt",
                                                 type=onnx.TypeProto.FromString(reference.SerializeToString())))
        model.graph.node.append(helper.make_node("Dequantize", [f"Q{index}"], [f"Y{index}"], domain="ai.rt",
                                                 dtype=T.FLOAT))
    model.graph.output.extend([helper.make_value_info("Q0", onnx.TypeProto()),
                               helper.make_value_info("Q1", onnx.TypeProto())])
    _, y1, q0, q1 = make_reference_evaluator(model).run(["Y0", "Y1", "Q0", "Q1"], {"X0": X0, "X1": X1})
    np.testing.assert_array_equal(y1, X1)            # calibrated on its own: no saturation
    assert not q0.encoded.HasField("parameter_ref") and q0.encoded.struct_type.type_ref == 1
    assert q0.raw_data[1:9] != q1.raw_data[1:9]       # different scales, each in its own payload


# --- encoded initializers ---------------------------------------------------------------------------

def _with_initializer(mutate):
    model, _ = common_model()
    value = quantize_tensor_shared(X0, model, "common").encoded
    value.name = "q"
    mutate(value)
    bare = ModelProto.FromString(model.SerializeToString())
    bare.graph.encoded_initializer.add().CopyFrom(value)
    return bare


def test_shared_encoded_initializers():
    assert check_model_values(_with_initializer(lambda v: None)) == 1
    with raises_rule("OL-SHR-21"):
        check_model_values(_with_initializer(
            lambda v: v.logical_type.tensor_type.shape.dim[0].__setattr__("dim_value", 5)))
    with raises_rule("OL-SHR-22"):
        check_model_values(_with_initializer(lambda v: v.struct_type.__setattr__("name", "other")))
    with raises_rule("OL-SHR-23"):
        check_model_values(_with_initializer(lambda v: v.__setattr__("raw_data", v.raw_data + b"\x00")))


# --- materialization --------------------------------------------------------------------------------

def test_materialization_refusals():
    model, _ = common_model()
    value = quantize_tensor_shared(X0, model, "common").encoded
    for code, mutate in (
        ("OL-SHR-24", lambda v: v.struct_type.structure.field[0].__setattr__("name", "codes")),
        ("OL-SHR-25", lambda v: v.logical_type.tensor_type.__setattr__("elem_type", T.DOUBLE)),
        ("OL-SHR-26", lambda v: v.__setattr__("raw_data", v.raw_data[:2])),
        ("OL-SHR-27", lambda v: v.__setattr__("raw_data", b"\x01" + v.raw_data[1:])),
    ):
        broken = EncodedValueProto()
        broken.CopyFrom(value)
        mutate(broken)
        with raises_rule(code):
            materialize_quantized_value(broken, model)
    with raises_rule("OL-SHR-29"):
        materialize_quantized_value(value)
    with raises_rule("OL-SHR-29"):
        dequantize_value(value)
    unknown = EncodedValueProto()
    unknown.CopyFrom(value)
    unknown.parameter_ref = "missing"
    with raises_rule("OL-SHR-29"):
        materialize_quantized_value(unknown, model)


@covers("OL-SHR-28")
def test_materialization_result():
    model, _ = common_model()
    value = quantize_tensor_shared(X0, model, "common").encoded
    value.name, value.doc_string = "q", ""
    before = value.SerializeToString()
    full = materialize_quantized_value(value, model)
    assert value.SerializeToString() == before
    assert full.name == "q" and full.HasField("doc_string") and full.doc_string == ""
    assert full.struct_type == int4_storage() and not full.HasField("parameter_ref")
    assert full.raw_data == hx("00") + D(0.5) + bytes(16) + hx("F8 71")
    value.ClearField("name")
    assert not materialize_quantized_value(value, model).HasField("name")


@covers("OL-SHR-33")
def test_snapshot_outlives_model_edits():
    model, _ = common_model()
    shared = quantize_tensor_shared(X0, model, "common")
    copy = shared.encoded
    copy.raw_data = b"\xff"
    assert shared.raw_data == hx("00 F8 71")
    del model.graph.initializer[:]
    del model.graph.quantization_annotation[:]
    assert materialize_quantized_value(shared).raw_data == hx("00") + D(0.5) + bytes(16) + hx("F8 71")
    # a session keeps its snapshot too
    model, _ = common_model()
    model.graph.node.append(helper.make_node("Quantize", ["X0"], ["Q"], domain="ai.rt", type=onnx_type(int4_storage()),
                                             parameter_ref="common"))
    model.graph.node.append(helper.make_node("Dequantize", ["Q"], ["Y0"], domain="ai.rt", dtype=T.FLOAT))
    session = make_reference_evaluator(model)
    initializer(model, "scales").raw_data = np.float32(4.0).tobytes()
    (y0,) = session.run(["Y0"], {"X0": X0, "X1": X1})
    np.testing.assert_array_equal(y0, X0)


# --- scope: nested graphs and functions ---------------------------------------------------------------

@covers("OL-SHR-30")
def test_nested_graph_sees_the_model_catalogue():
    model, _ = common_model()
    branch = lambda name: helper.make_graph(  # noqa: E731
        [helper.make_node("Quantize", ["X1"], [name], domain="ai.rt", type=onnx_type(int4_storage()),
                          parameter_ref="common")],
        f"branch_{name}", [], [helper.make_value_info(name, onnx.TypeProto())])
    model.graph.input.append(helper.make_tensor_value_info("c", T.BOOL, []))
    model.graph.node.append(helper.make_node("If", ["c"], ["Q"], then_branch=branch("t"), else_branch=branch("e")))
    model.graph.node.append(helper.make_node("Dequantize", ["Q"], ["Y1"], domain="ai.rt", dtype=T.FLOAT))
    (y1,) = make_reference_evaluator(model).run(["Y1"], {"X0": X0, "X1": X1, "c": np.array(True)})
    np.testing.assert_array_equal(y1, [-4, -1, 1, 3.5])


def _function_model(call_attributes: dict, default: str | None, required: bool):
    model, _ = common_model()
    quantize = helper.make_node("Quantize", ["x"], ["q"], domain="ai.rt", type=onnx_type(int4_storage()))
    ref = quantize.attribute.add()
    ref.name, ref.type, ref.ref_attr_name = "parameter_ref", onnx.AttributeProto.STRING, "set_name"
    function = helper.make_function("local", "SharedQuantize", ["x"], ["q"], [quantize],
                                    [helper.make_opsetid("ai.rt", 1)],
                                    attributes=["set_name"] if required else [])
    if default is not None:
        function.attribute_proto.append(helper.make_attribute("set_name", default))
    model.functions.append(function)
    model.opset_import.append(helper.make_opsetid("local", 1))
    model.graph.node.append(helper.make_node("SharedQuantize", ["X0"], ["Q"], domain="local", **call_attributes))
    return model


@covers("OL-SHR-31")
def test_function_bound_parameter_ref():
    assert check_model(_function_model({"set_name": "common"}, None, True)) == 0
    # the function body runs with the model's operators and parameter sets
    model = _function_model({"set_name": "common"}, None, True)
    model.graph.node.append(helper.make_node("Dequantize", ["Q"], ["Y0"], domain="ai.rt", dtype=T.FLOAT))
    (y0,) = make_reference_evaluator(model).run(["Y0"], {"X0": X1, "X1": X1})
    np.testing.assert_array_equal(y0, [-4, -1, 1, 3.5])
    assert check_model(_function_model({}, "common", False)) == 0
    with raises_rule("OL-SHR-29"):
        check_model(_function_model({"set_name": "other"}, None, True))
    with raises_rule("OL-SHR-31"):
        check_model(_function_model({}, None, False))       # neither a call-site value nor a default
    model, _ = common_model()
    node = helper.make_node("Quantize", ["X0"], ["Q"], domain="ai.rt", type=onnx_type(int4_storage()))
    ref = node.attribute.add()
    ref.name, ref.type, ref.ref_attr_name = "parameter_ref", onnx.AttributeProto.STRING, "set_name"
    model.graph.node.append(node)
    with raises_rule("OL-SHR-31"):                          # a reference in graph execution scope
        check_model(model)


def test_function_call_omitting_required_attribute():
    with raises_rule("OL-SHR-32"):
        check_model(_function_model({}, None, True))


# --- serializations that cannot hold the extensions -----------------------------------------------------

def test_ort_serialization_refuses_extensions():
    plain = base_model()
    assert serialize_for_ort(plain) == plain.SerializeToString()
    model, _ = common_model()
    with raises_rule("OL-SHR-35"):
        serialize_for_ort(model)
    with raises_rule("OL-SHR-35"):
        serialize_for_ort(_with_initializer(lambda v: None))


def test_textproto_refuses_structured_values():
    assert "shared_quantization" in model_to_textproto(base_model())
    with raises_rule("OL-SHR-36"):
        model_to_textproto(_with_initializer(lambda v: None))
    model = base_model()
    model.graph.output.append(helper.make_value_info("Q", onnx_type(int4_storage())))
    with raises_rule("OL-SHR-36"):
        model_to_textproto(model)


def test_parameter_ref_takes_no_optional_input_and_the_set_type():
    model, _ = common_model()
    node = helper.make_node("Quantize", ["X0", "s"], ["Q"], domain="ai.rt", type=onnx_type(int4_storage()),
                            parameter_ref="common")
    model.graph.node.append(node)
    model.graph.output.append(helper.make_value_info("Q", onnx.TypeProto()))
    session = make_reference_evaluator(model)
    with raises_rule("OL-SHR-13"):
        session.run(["Q"], {"X0": X0, "X1": X1, "s": np.array(0.25, np.float32)})
    (q,) = session.run(["Q"], {"X0": X0, "X1": X1, "s": np.zeros(0, np.float32)})   # an empty input is allowed
    assert q.raw_data == hx("00 F8 71")
    model, _ = common_model()
    other = make_quantization_type(make_quantization_plan(F.INT4, 4, block_size=2))
    model.graph.node.append(helper.make_node("Quantize", ["X0"], ["Q"], domain="ai.rt", type=onnx_type(other),
                                             parameter_ref="common"))
    model.graph.output.append(helper.make_value_info("Q", onnx.TypeProto()))
    with raises_rule("OL-SHR-15"):
        make_reference_evaluator(model).run(["Q"], {"X0": X0, "X1": X1})


def test_decoders_accept_retained_values():
    model, _ = common_model()
    shared = quantize_tensor_shared(X1, model, "common")
    np.testing.assert_array_equal(dequantize_value(shared), [-4, -1, 1, 3.5])
    ort_value = quantize_array(np.zeros((3, 2), np.float32), make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 3, 2, 16))
    model = base_model()
    add_quantization_parameters(model, "ort", ort_value.struct_type, helper.make_tensor_type_proto(T.FLOAT, [3, 2]),
                                scales=np.array(0.5, np.float32))
    shared = quantize_tensor_shared(np.array([[1, -1], [0.5, 2], [0, 0]], np.float32), model, "ort")
    from hurray_decl.onnx_light import export_matmul_nbits_inputs
    assert export_matmul_nbits_inputs(shared).weights.raw_data == shared.raw_data[1:]
    assert export_matmul_nbits_inputs(shared.encoded, model) == export_matmul_nbits_inputs(shared)


@covers("OL-SHR-17", "OL-SHR-19")
def test_kernel_vector_double_scale():
    """§ 14.12 kernel test: int4, 3 elements, a shared DOUBLE scale of 2."""
    storage = make_quantization_type(make_quantization_plan(F.INT4, 3))
    model = base_model(inputs=("X0",), outputs=("Y0",), size=3)
    compact = add_quantization_parameters(model, "k", storage, helper.make_tensor_type_proto(T.FLOAT, [3]),
                                          scales=np.array(2.0, np.float64))
    model.graph.node.append(helper.make_node("Quantize", ["X0"], ["Q"], domain="ai.rt", type=onnx_type(storage),
                                             parameter_ref="k"))
    model.graph.node.append(helper.make_node("Dequantize", ["Q"], ["Y0"], domain="ai.rt", dtype=T.FLOAT))
    x = np.array([-2, 0, 2], np.float32)
    y, q = make_reference_evaluator(model).run(["Y0", "Q"], {"X0": x})
    np.testing.assert_array_equal(y, x)
    assert len(q.raw_data) == 3 and q.encoded.struct_type == compact
    assert compact == make_shared_quantization_type(model, "k")
