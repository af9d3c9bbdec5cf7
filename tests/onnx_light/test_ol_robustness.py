"""Every public onnx-light decoder: a result or a HurrayDeclError with an OL code, never another
exception. Overflowing sizes and strings that are not UTF-8 are refused with the OL rule of
the sizing or of the message holding them.
"""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, example, given, settings, strategies as st

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T, helper

from hurray_decl.convert.portable import ort_to_portable, to_block_parts
from hurray_decl.errors import HurrayDeclError
from hurray_decl.onnx_light import (
    EncodedValueProto,
    ModelProto,
    QuantizationFormat as F,
    TensorProto,
    add_quantization_parameters,
    check_model,
    check_model_values,
    decode_plan,
    dequantize_tensor_proto,
    dequantize_value,
    export_matmul_nbits_inputs,
    make_matmul_nbits_plan,
    make_quantization_plan,
    make_quantization_type,
    make_shared_quantization_type,
    materialize_quantized_value,
    parameter_catalogue,
    quantize_array,
    quantize_tensor_shared,
)
from hurray_decl.onnx_light.codec import validate_value
from tests.helpers import raises_rule

VALUE_DECODERS = {
    "dequantize_value": dequantize_value,
    "decode_plan": decode_plan,
    "validate_value": validate_value,
    "dequantize_tensor_proto": dequantize_tensor_proto,
    "export_matmul_nbits_inputs": export_matmul_nbits_inputs,
    "ort_to_portable": ort_to_portable,
    "to_block_parts": to_block_parts,
}
MODEL_DECODERS = {
    "check_model": check_model,
    "check_model_values": check_model_values,
    "parameter_catalogue": parameter_catalogue,
    "make_shared_quantization_type": lambda m: make_shared_quantization_type(m, "common"),
    "quantize_tensor_shared": lambda m: quantize_tensor_shared(np.zeros(4, np.float32), m, "common"),
}


def int4_value() -> EncodedValueProto:
    return quantize_array(np.linspace(-3, 3, 4).astype(np.float32), make_quantization_plan(F.INT4, 4))


def ort_value() -> EncodedValueProto:
    return quantize_array(np.ones((16, 2), np.float32), make_matmul_nbits_plan(F.ORT_MATMULNBITS_INT4, 16, 2, 16))


def shared_model() -> ModelProto:
    graph = helper.make_graph([], "g", [], [])
    model = ModelProto.FromString(helper.make_model(graph).SerializeToString())
    storage = make_quantization_type(make_quantization_plan(F.INT4, 4))
    logical = helper.make_tensor_type_proto(T.FLOAT, [4])
    add_quantization_parameters(model, "common", storage, logical, scales=np.array([0.5], np.float32))
    return model


def model_with(value: EncodedValueProto) -> ModelProto:
    model = shared_model()
    model.graph.encoded_initializer.add().CopyFrom(value)
    return model


def ol_only(call, *args) -> None:
    try:
        call(*args)
    except HurrayDeclError as err:
        assert err.code.startswith("OL-") or err.code.startswith("HQ-"), err.code


# --- overflowing sizes ----------------------------------------------------------------------------

@pytest.mark.parametrize("dims", [[2**62 + 1, 4], [2**32, 2**32], [2**63 - 1, 2], [3, 2**62, 2]])
@pytest.mark.parametrize("name", sorted(VALUE_DECODERS))
def test_overflowing_logical_dims_are_refused(name, dims):
    value = int4_value()
    shape = value.logical_type.tensor_type.shape
    del shape.dim[:]
    for d in dims:
        shape.dim.add().dim_value = d
    with raises_rule("OL-WIRE-16"):
        VALUE_DECODERS[name](value)


def test_large_logical_counts_below_the_bound_fail_on_coverage_not_numpy():
    value = int4_value()
    value.logical_type.tensor_type.shape.dim[0].dim_value = 2**62   # fits 63 bits, not the runs
    with pytest.raises(HurrayDeclError) as info:
        dequantize_value(value)
    assert info.value.code.startswith("OL-")
    ort = ort_value()
    ort.logical_type.tensor_type.shape.dim[0].dim_value = 2**61
    with pytest.raises(HurrayDeclError) as info:
        dequantize_value(ort)
    assert info.value.code.startswith("OL-ORT-")


def test_overflowing_run_sizes_are_refused():
    value = int4_value()
    run = value.struct_type.structure.field[6].type.struct_type.structure.field[1].type.struct_type.array
    run.dimension = 2**63
    with raises_rule("OL-WIRE-11"):   # tensor fields: test_ol_wire.test_size_overflow
        dequantize_value(value)


def test_source_tensor_with_overflowing_dims_is_refused():
    from hurray_decl.onnx_light import quantize_tensor_proto

    tensor = TensorProto(dims=[2**62, 4], data_type=1, raw_data=b"")
    with raises_rule("OL-NUM-02"):
        quantize_tensor_proto(tensor, make_quantization_plan(F.INT4, 0))


@pytest.mark.parametrize("rank", [65, 77])
def test_source_tensor_deeper_than_numpy_is_refused(rank):
    """Found by the onnx-light atheris target: 77 dims of 1 made NumPy raise ValueError."""
    from hurray_decl.onnx_light.tensors import tensor_to_array

    tensor = TensorProto(dims=[1] * rank, data_type=1, float_data=[1.0])
    with raises_rule("HX-01"):
        tensor_to_array(tensor)
    assert tensor_to_array(TensorProto(dims=[1] * 64, data_type=1, float_data=[1.0])).ndim == 64


def test_int64_parameter_with_overflowing_dims_is_refused():
    model = shared_model()
    bad = model.graph.initializer.add(name="x", data_type=7)
    bad.dims.extend([2**62, 4])                      # 2^64 elements claimed, none given
    annotation = model.graph.quantization_annotation[0]
    annotation.quant_parameter_tensor_names.add(key="permutation", value="x")
    with raises_rule("OL-SHR-10"):
        parameter_catalogue(model)


# --- strings that are not UTF-8 --------------------------------------------------------------------

BAD = b"\xff\xfe"


def with_bad_string(message, field_number: int) -> bytes:
    """A message's bytes plus one length-delimited field holding invalid UTF-8."""
    return message.SerializeToString() + bytes([(field_number << 3) | 2, len(BAD)]) + BAD


@pytest.mark.parametrize("field", [7, 8, 9])   # name, doc_string, parameter_ref
@pytest.mark.parametrize("name", sorted(VALUE_DECODERS))
def test_encoded_value_strings_must_be_utf8(name, field):
    value = EncodedValueProto.FromString(with_bad_string(int4_value(), field))
    with raises_rule("OL-WIRE-03"):
        VALUE_DECODERS[name](value)


def test_struct_type_strings_must_be_utf8():
    value = int4_value()
    value.struct_type.ParseFromString(with_bad_string(value.struct_type, 8))   # doc_string
    with raises_rule("OL-WIRE-02"):
        dequantize_value(value)
    value = int4_value()
    field = value.struct_type.structure.field[0]
    field.ParseFromString(with_bad_string(field, 1))                            # a field's name
    with raises_rule("OL-WIRE-02"):
        dequantize_value(value)


@pytest.mark.parametrize("name", sorted(MODEL_DECODERS))
def test_model_strings_must_be_utf8(name):
    model = shared_model()
    graph = model.graph
    graph.ParseFromString(with_bad_string(graph, 2))                            # graph name
    with raises_rule("OL-WIRE-01"):
        MODEL_DECODERS[name](model)
    model = shared_model()
    annotation = model.graph.quantization_annotation[0]
    annotation.ParseFromString(with_bad_string(annotation, 1))                  # tensor_name
    with raises_rule("OL-SHR-01"):
        MODEL_DECODERS[name](model)


def test_encoded_initializer_strings_must_be_utf8():
    value = EncodedValueProto.FromString(with_bad_string(int4_value(), 7))
    for call in (check_model, check_model_values, parameter_catalogue):
        with raises_rule("OL-WIRE-03"):
            call(model_with(value))


def test_materialize_and_shared_strings():
    model = shared_model()
    compact = quantize_tensor_shared(np.zeros(4, np.float32), model, "common").encoded
    bad = EncodedValueProto.FromString(with_bad_string(compact, 8))
    with raises_rule("OL-WIRE-03"):
        materialize_quantized_value(bad, model)
    with raises_rule("OL-WIRE-03"):
        dequantize_value(bad, model)


# --- arbitrary bytes and mutated messages ----------------------------------------------------------

SEEDS = {"int4": int4_value().SerializeToString(), "ort": ort_value().SerializeToString()}


@st.composite
def mutated(draw, seed: bytes):
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "cut", "insert"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[at:at + draw(st.integers(1, 8))]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


def value_inputs():
    return st.one_of(st.binary(max_size=200), mutated(SEEDS["int4"]), mutated(SEEDS["ort"]))


@given(value_inputs())
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@example(with_bad_string(int4_value(), 7))
def test_value_decoders_on_arbitrary_bytes(data):
    try:
        value = EncodedValueProto.FromString(data)
    except DecodeError:
        return
    for call in VALUE_DECODERS.values():
        ol_only(call, value)
    ol_only(materialize_quantized_value, value, shared_model())


MODEL_SEED = model_with(int4_value()).SerializeToString()


@given(st.one_of(st.binary(max_size=200), mutated(MODEL_SEED)))
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], max_examples=40)
def test_model_decoders_on_arbitrary_bytes(data):
    try:
        model = ModelProto.FromString(data)
    except DecodeError:
        return
    for call in MODEL_DECODERS.values():
        ol_only(call, model)


def test_the_first_string_that_is_not_utf8_is_named_by_its_path():
    """Fields in declaration order, depth first; a repeated string by its index."""
    from hurray_decl.onnx_light._generated.onnx_light_pb2 import NodeProto
    from hurray_decl.onnx_light.wire import check_strings

    node = NodeProto.FromString(b"\x0a\x01a" + bytes([0x0A, len(BAD)]) + BAD + bytes([0x12, 3]) + b"\xc3\x28z")
    with raises_rule("OL-WIRE-03") as caught:
        check_strings(node, "node", "OL-WIRE-03")
    assert caught.value.path == "node -> input[1]" and caught.value.actual == BAD.hex(" ")
    node = NodeProto.FromString(bytes([0x12, 3]) + b"\xc3\x28z")
    with raises_rule("OL-WIRE-03") as caught:
        check_strings(node, "node", "OL-WIRE-03")
    assert caught.value.path == "node -> output[0]" and caught.value.actual == "c3 28 7a"


DAMAGED_EXTENSION = b"\xc2\x3e\x02\xff\xff"
"""Field 1000 (onnx-light's extension number), length-delimited, holding a bad key: onnx keeps it
as an unknown field, onnx-light reads it as a message and cannot."""


def test_an_onnx_model_with_a_damaged_extension_field_is_refused_under_its_rule():
    model = onnx.ModelProto.FromString(b"\x08\x01" + DAMAGED_EXTENSION)
    with pytest.raises(HurrayDeclError) as caught:
        check_model(model)
    assert caught.value.code == "OL-WIRE-01" and caught.value.path == "model"
    assert "extension field (number 1000)" in caught.value.detail


def test_an_onnx_type_with_a_damaged_extension_field_is_refused_when_converted():
    from hurray_decl.onnx_light.shared.parameters import convert_message
    from hurray_decl.onnx_light.wire import pb

    with pytest.raises(HurrayDeclError) as caught:
        convert_message(onnx.TypeProto.FromString(DAMAGED_EXTENSION), pb.TypeProto)
    assert caught.value.code == "OL-WIRE-01" and caught.value.path == "type"
