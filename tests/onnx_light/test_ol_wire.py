"""The protobuf messages, the canonical descriptor and the raw_data layout (OL-WIRE).

Each refusal edits one thing in a valid encoded value. Edits that keep the payload size keep
the generic sizing happy, so the check under test is the one that fires.
"""

from __future__ import annotations

import copy
import importlib.util
import struct
from pathlib import Path

import numpy as np
import onnx
import pytest

from hurray_decl.onnx_light import (
    PARAMETER_REF_FIELD,
    EncodedValueProto,
    ModelProto,
    QuantizationFormat as F,
    TensorProto,
    check_model_values,
    dequantize_tensor_proto,
    dequantize_value,
    make_quantization_plan,
    quantize_array,
    quantize_tensor_proto,
)
from hurray_decl.onnx_light._generated import onnx_light_pb2 as pb
from tests.helpers import covers, raises_rule
from tests.onnx_light.support import D

ROOT = Path(__file__).resolve().parents[2]


def _load_regenerator():
    spec = importlib.util.spec_from_file_location("regenerate_proto", ROOT / "schemas" / "regenerate_proto.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_code_is_current():
    regen = _load_regenerator()
    files = regen.compile_proto()
    assert regen.stale_files(files) == [], "run: python schemas/regenerate_proto.py"


def test_generated_modules_are_one_message_set():
    import generated.onnx_light.onnx_light_pb2 as committed

    assert committed.EncodedValueProto.DESCRIPTOR.full_name == EncodedValueProto.DESCRIPTOR.full_name
    value = quantize_array(np.ones(3, np.float32), make_quantization_plan(F.INT4, 3))
    assert committed.EncodedValueProto.FromString(value.SerializeToString()).raw_data == value.raw_data


# --- message fields --------------------------------------------------------------------------

def _numbers(message) -> dict[str, int]:
    return {f.name: f.number for f in message.DESCRIPTOR.fields}


@covers("OL-WIRE-01")
def test_extension_fields_at_1000():
    t = pb.TypeProto()
    t.struct_type.name = "x"
    assert t.SerializeToString()[:2] == bytes([0xC2, 0x3E])  # key (1000 << 3) | 2 as a varint
    g = pb.GraphProto()
    g.encoded_initializer.add().name = "w"
    assert g.SerializeToString()[:2] == bytes([0xC2, 0x3E])
    m = pb.ModelProto()
    m.struct_types.add().type_id = 1
    assert m.SerializeToString()[:2] == bytes([0xC2, 0x3E])
    assert pb.TypeProto.DESCRIPTOR.fields_by_name["struct_type"].containing_oneof.name == "value"
    assert _numbers(pb.TypeProto)["opaque_type"] == 7


@covers("OL-WIRE-02")
def test_struct_type_fields():
    assert _numbers(pb.StructTypeProto) == {"array": 1, "structure": 2, "bit_packing": 3, "type_ref": 4,
                                            "decoder": 5, "encoder": 6, "name": 7, "doc_string": 8,
                                            "metadata_props": 9, "type_id": 10}
    kinds = [f.name for f in pb.StructTypeProto.DESCRIPTOR.oneofs_by_name["kind"].fields]
    assert kinds == ["array", "structure", "bit_packing", "type_ref"]
    assert _numbers(pb.StructTypeProto.Structure.Field) == {"name": 1, "type": 2, "constant": 4, "doc_string": 3}
    assert _numbers(pb.StructTypeProto.Array) == {"element_type": 1, "dimension": 2}
    assert _numbers(pb.StructTypeProto.BitPacking) == {"component": 1, "dimension": 2}


@covers("OL-WIRE-03")
def test_encoded_value_fields_and_onnx_interop():
    assert _numbers(pb.EncodedValueProto) == {"affine": 1, "struct_type": 2, "logical_type": 3, "raw_data": 4,
                                              "external_data": 5, "data_location": 6, "name": 7,
                                              "doc_string": 8, "parameter_ref": 9}
    assert PARAMETER_REF_FIELD == 9
    value = quantize_array(np.arange(6, dtype=np.float32).reshape(2, 3), make_quantization_plan(F.INT8, 6))
    logical = onnx.TypeProto.FromString(value.logical_type.SerializeToString())
    assert logical.tensor_type.elem_type == 1 and [d.dim_value for d in logical.tensor_type.shape.dim] == [2, 3]
    tensor = onnx.numpy_helper.from_array(np.array([1.5, -2], dtype=np.float32), name="w")
    encoded = quantize_tensor_proto(tensor, make_quantization_plan(F.INT8, 2))
    back = onnx.TensorProto.FromString(dequantize_tensor_proto(encoded).SerializeToString())
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(back), [2, -2])
    assert back.name == "w"
    affine = pb.EncodedValueProto()
    affine.affine.axis = 0
    with raises_rule("OL-WIRE-03"):
        dequantize_value(affine)


def test_affine_layout_storage_type_is_an_enum():
    """OD-14: AffineLayoutProto.storage_type is TensorProto.DataType, a varint (wire type 0)."""
    field = pb.AffineLayoutProto.DESCRIPTOR.fields_by_name["storage_type"]
    assert field.number == 1 and field.enum_type is not None
    assert field.enum_type.full_name == pb.TensorProto.DataType.DESCRIPTOR.full_name
    value = EncodedValueProto.FromString(bytes.fromhex("0a02" "0803"))   # affine { storage_type: INT8 }
    assert value.affine.storage_type == 3
    assert onnx.TensorProto.INT8 == 3
    with raises_rule("OL-WIRE-03"):   # parsed with the right wire type, still refused by this decoder
        dequantize_value(value)


# --- helpers for editing a valid value -------------------------------------------------------

def int4_value(n: int = 7, **plan_fields) -> EncodedValueProto:
    plan = make_quantization_plan(F.INT4, n)
    for k, v in plan_fields.items():
        setattr(plan, k, v)
    return quantize_array(np.linspace(-3, 3, n).astype(np.float32), plan)


def blocks_of(value_or_type):
    root = value_or_type.struct_type if isinstance(value_or_type, EncodedValueProto) else value_or_type
    return root.structure.field[6].type.struct_type.structure


def element_of(value, run: int = 0):
    return blocks_of(value).field[1 + run].type.struct_type.array.element_type.struct_type.structure


def with_raw(value: EncodedValueProto, raw: bytes) -> EncodedValueProto:
    out = copy.deepcopy(value)
    out.raw_data = raw
    return out


def set_header(value: EncodedValueProto, position: int, number: int) -> EncodedValueProto:
    out = copy.deepcopy(value)
    element_of(out).field[0].constant.int64_data[position] = number
    return out


# --- container rules --------------------------------------------------------------------------

def _model_with(entries) -> ModelProto:
    model = ModelProto()
    for type_id, struct_type in entries:
        entry = model.struct_types.add()
        entry.CopyFrom(struct_type)
        if type_id is not None:
            entry.type_id = type_id
    return model


def test_type_ref_resolves_through_model():
    value = int4_value()
    model = _model_with([(5, value.struct_type)])
    ref = copy.deepcopy(value)
    ref.struct_type.Clear()
    ref.struct_type.type_ref = 5
    np.testing.assert_array_equal(dequantize_value(ref, model), dequantize_value(value))
    with raises_rule("OL-WIRE-05"):
        dequantize_value(ref)
    with raises_rule("OL-WIRE-05"):
        dequantize_value(ref, model=None)
    with raises_rule("OL-WIRE-05"):
        dequantize_value(ref, _model_with([(6, value.struct_type)]))
    both = copy.deepcopy(ref)
    both.struct_type.name = "onnx_light.quantization.v1/int4"
    with raises_rule("OL-WIRE-04"):
        dequantize_value(both, model)
    with raises_rule("OL-WIRE-06"):
        dequantize_value(ref, _model_with([(0, value.struct_type)]))
    with raises_rule("OL-WIRE-06"):
        dequantize_value(ref, _model_with([(None, value.struct_type)]))
    with raises_rule("OL-WIRE-07"):
        dequantize_value(ref, _model_with([(5, value.struct_type), (5, value.struct_type)]))
    inline = copy.deepcopy(value)
    inline.struct_type.type_id = 5
    with raises_rule("OL-WIRE-08"):
        dequantize_value(inline)


def test_external_payloads():
    value = int4_value()
    both = copy.deepcopy(value)
    both.external_data.add(key="location", value="w.bin")
    with raises_rule("OL-WIRE-09"):
        dequantize_value(both)
    external = copy.deepcopy(both)
    external.ClearField("raw_data")
    external.data_location = pb.TensorProto.EXTERNAL
    with raises_rule("OL-WIRE-10"):
        dequantize_value(external)


def test_size_overflow():
    value = int4_value()
    dim = value.struct_type.structure.field[1].type.tensor_type.shape.dim[0]
    dim.dim_value = 2**62
    with raises_rule("OL-WIRE-11"):
        dequantize_value(value)


def test_root_size_zero():
    value = int4_value()
    value.struct_type.ClearField("structure")
    value.struct_type.structure.SetInParent()
    with raises_rule("OL-WIRE-12"):
        dequantize_value(value)


def test_more_than_one_record():
    value = int4_value()
    with raises_rule("OL-WIRE-13"):
        dequantize_value(with_raw(value, value.raw_data * 2))


@pytest.mark.parametrize("name", ["onnx_light.quantization.v2/int4", "int4", "", "onnx_light.quantization/int4"])
def test_root_name_prefix(name):
    value = int4_value()
    value.struct_type.name = name
    with raises_rule("OL-WIRE-14"):
        dequantize_value(value)


@pytest.mark.parametrize("elem_type", [2, 3, 7, 0])
def test_logical_dtype(elem_type):
    value = int4_value()
    value.logical_type.tensor_type.elem_type = elem_type
    with raises_rule("OL-WIRE-15"):
        dequantize_value(value)
    value.logical_type.Clear()
    value.logical_type.opaque_type.name = "x"
    with raises_rule("OL-WIRE-15"):
        dequantize_value(value)


def test_logical_dims():
    value = int4_value()
    value.logical_type.tensor_type.shape.dim[0].dim_param = "N"
    with raises_rule("OL-WIRE-16"):
        dequantize_value(value)
    value.logical_type.tensor_type.shape.dim[0].dim_value = -7
    with raises_rule("OL-WIRE-16"):
        dequantize_value(value)
    value.logical_type.tensor_type.ClearField("shape")
    with raises_rule("OL-WIRE-16"):
        dequantize_value(value)


# --- descriptor structure ----------------------------------------------------------------------

@covers("OL-WIRE-17", "OL-WIRE-18", "OL-WIRE-19", "OL-WIRE-25")
def test_canonical_descriptor_shape():
    plan = make_quantization_plan(F.QUAROT, 6, 4)
    plan.permutation = [5, 4, 3, 2, 1, 0]
    plan.transform_size = 2
    plan.forward = [1, 0, 0, 1]
    plan.inverse = [1, 0, 0, 1]
    plan.outliers = [3]
    value = quantize_array(np.arange(6, dtype=np.float32), plan)
    root = value.struct_type
    names = [f.name for f in root.structure.field]
    assert names == ["reserved", "permutation", "forward", "inverse", "outlier_indices", "outlier_values", "blocks"]
    dims = [[d.dim_value for d in f.type.tensor_type.shape.dim] for f in root.structure.field[:6]]
    assert dims == [[1], [6], [2, 2], [2, 2], [1], [1]]
    assert [f.type.tensor_type.elem_type for f in root.structure.field[:6]] == [2, 7, 11, 11, 7, 11]
    blocks = blocks_of(value)
    count = blocks.field[0]
    assert count.name == "count" and count.constant.data_type == 7 and list(count.constant.dims) == []
    assert list(count.constant.int64_data) == [2]
    assert [(f.name, f.type.struct_type.array.dimension) for f in blocks.field[1:]] == [("run_0", 1), ("run_1", 1)]
    element = element_of(value)
    assert [f.name for f in element.field] == ["parameters", "scale", "zero_point", "offset", "codebook", "codes"]
    for f in element.field[1:]:
        assert f.type.tensor_type.HasField("shape")
    assert [len(f.type.tensor_type.shape.dim) for f in element.field[1:]] == [0, 0, 0, 1, 1]
    assert not root.structure.field[6].type.struct_type.HasField("name")
    assert not blocks.field[1].type.struct_type.HasField("name")
    assert not blocks.field[1].type.struct_type.array.element_type.struct_type.HasField("name")
    assert root.name == "onnx_light.quantization.v1/quarot"
    for message in (root, blocks.field[1].type.struct_type):
        assert not message.HasField("doc_string") and not message.HasField("decoder")


def test_root_field_renamed_or_retyped():
    value = int4_value()
    value.struct_type.structure.field[1].name = "perm"
    with raises_rule("OL-WIRE-17"):
        dequantize_value(value)
    value = int4_value()
    value.struct_type.structure.field[2].type.tensor_type.elem_type = 1
    with raises_rule("OL-WIRE-17"):
        dequantize_value(value)


def test_count_must_come_first():
    value = int4_value()
    blocks = blocks_of(value)
    blocks.field[0].name = "total"
    with raises_rule("OL-WIRE-18"):
        dequantize_value(value)


def test_block_element_shape():
    value = int4_value()
    field = element_of(value).field[0]
    field.ClearField("constant")
    field.type.tensor_type.elem_type = 2
    field.type.tensor_type.shape.dim.add().dim_value = 0
    with raises_rule("OL-WIRE-19"):
        dequantize_value(value)


@pytest.mark.parametrize("edit", ["dims", "raw", "count", "type"])
def test_parameters_form(edit):
    value = int4_value()
    constant = element_of(value).field[0].constant
    if edit == "dims":
        constant.ClearField("dims")
        constant.dims.extend([3, 3])
    elif edit == "raw":
        constant.raw_data = b""
    elif edit == "count":
        constant.int64_data.append(0)
    else:
        constant.data_type = 6
    with raises_rule("OL-WIRE-20"):
        dequantize_value(value)


@pytest.mark.parametrize("position, number", [(2, -1), (5, 2**32), (8, -5)])
def test_header_range(position, number):
    with raises_rule("OL-WIRE-21"):
        dequantize_value(set_header(int4_value(), position, number))


@pytest.mark.parametrize("position", [3, 7])
def test_header_flags(position):
    with raises_rule("OL-WIRE-22"):
        dequantize_value(set_header(int4_value(), position, 2))


def test_run_dimension_zero():
    value = int4_value()
    blocks = blocks_of(value)
    extra = blocks.field.add()
    extra.CopyFrom(blocks.field[1])
    extra.name = "run_1"
    extra.type.struct_type.array.dimension = 0
    with raises_rule("OL-WIRE-23"):
        dequantize_value(value)


def test_not_canonical():
    # unmerged identical neighbours
    value = quantize_array(np.zeros(8, np.float32), make_quantization_plan(F.INT4, 8, 4))
    blocks = blocks_of(value)
    blocks.field[1].type.struct_type.array.dimension = 1
    second = blocks.field.add()
    second.CopyFrom(blocks.field[1])
    second.name = "run_1"
    with raises_rule("OL-WIRE-26"):
        dequantize_value(value)
    # a wrong run name
    value = int4_value()
    blocks_of(value).field[1].name = "run_3"
    with raises_rule("OL-WIRE-26"):
        dequantize_value(value)
    # names of root fields 0, 3, 5
    for index in (0, 3, 5):
        value = int4_value()
        value.struct_type.structure.field[index].name += "x"
        with raises_rule("OL-WIRE-26"):
            dequantize_value(value)
    # an extra doc_string, an encoder, bit_packing inside
    value = int4_value()
    value.struct_type.doc_string = ""
    with raises_rule("OL-WIRE-26"):
        dequantize_value(value)
    value = int4_value()
    value.struct_type.encoder.name = "f"
    with raises_rule("OL-WIRE-26"):
        dequantize_value(value)
    # a wrong count constant
    value = int4_value()
    blocks_of(value).field[0].constant.int64_data[0] = 2
    with raises_rule("OL-WIRE-26"):
        dequantize_value(value)
    # a name on a nested struct
    value = int4_value()
    value.struct_type.structure.field[6].type.struct_type.name = "blocks"
    with raises_rule("OL-WIRE-26"):
        dequantize_value(value)


# --- raw_data -----------------------------------------------------------------------------------

def test_truncated_and_trailing():
    value = int4_value()
    with raises_rule("OL-WIRE-28"):
        dequantize_value(with_raw(value, value.raw_data[:-1]))
    with raises_rule("OL-WIRE-28"):
        dequantize_value(with_raw(value, b""))
    with raises_rule("OL-WIRE-29"):
        dequantize_value(with_raw(value, value.raw_data + b"\x00"))


def test_reserved_byte():
    value = int4_value()
    with raises_rule("OL-WIRE-30", offset=0):
        dequantize_value(with_raw(value, b"\x01" + value.raw_data[1:]))


@covers("OL-WIRE-31", "OL-WIRE-32")
def test_code_counts():
    from hurray_decl.onnx_light import QuantizationBlockLayout as L

    assert L(7, 0, 4).code_bytes == 4
    base3 = L(7, 1, 2, 0, 1, 3, 1, 1)
    assert (base3.code_bytes, base3.table_size) == (2, 3)
    additive = L(7, 1, 2, 1, 2, 3, 4)
    assert (additive.code_count, additive.table_size) == (4, 24)
    assert L(7, 2, 4, 1, 1, 0, 1, 0, 10).code_bytes == 14
    assert [L(3, 2, cast_type=c).code_bytes for c in (1, 11, 10, 16)] == [12, 24, 6, 6]


def test_padding_bits():
    value = int4_value()
    with raises_rule("OL-WIRE-34"):
        dequantize_value(with_raw(value, value.raw_data[:-1] + b"\xff"))
    value = quantize_array(np.array([-1, 0, 1], np.float32), make_quantization_plan(F.TQ2_0, 3))
    with raises_rule("OL-WIRE-34"):
        dequantize_value(with_raw(value, value.raw_data[:-1] + bytes([value.raw_data[-1] | 0x40])))


def test_base3_bytes():
    value = quantize_array(np.array([-1, 0, 1, -1, 1, 1, 0], np.float32), make_quantization_plan(F.TQ1_0, 7))
    with raises_rule("OL-WIRE-36"):
        dequantize_value(with_raw(value, value.raw_data[:-2] + b"\xf3" + value.raw_data[-1:]))
    with raises_rule("OL-WIRE-37"):
        dequantize_value(with_raw(value, value.raw_data[:-1] + bytes([2 + 3 * 1 + 9 * 1])))


def test_index_beyond_entries():
    value = quantize_array(np.array([-1, 0, 1], np.float32), make_quantization_plan(F.TQ2_0, 3))
    raw = value.raw_data[:-1] + bytes([value.raw_data[-1] | 0x03])
    with raises_rule("OL-NUM-18"):
        dequantize_value(with_raw(value, raw))


@covers("OL-WIRE-40")
def test_empty_tensor():
    value = quantize_array(np.zeros((0, 3), np.float32), make_quantization_plan(F.INT4, 0))
    assert value.raw_data == b"\x00"
    blocks = blocks_of(value)
    assert [f.name for f in blocks.field] == ["count"] and list(blocks.field[0].constant.int64_data) == [0]
    dims = [[d.dim_value for d in f.type.tensor_type.shape.dim] for f in value.struct_type.structure.field[1:6]]
    assert dims == [[0], [0, 0], [0, 0], [0], [0]]
    assert dequantize_value(value).shape == (0, 3)


@covers("OL-WIRE-41")
def test_name_and_doc_string_presence():
    plan = make_quantization_plan(F.INT8, 2)
    tensor = TensorProto(dims=[2], data_type=1, raw_data=np.zeros(2, np.float32).tobytes())
    encoded = quantize_tensor_proto(tensor, plan)
    assert not encoded.HasField("name") and not encoded.HasField("doc_string")
    back = dequantize_tensor_proto(encoded)
    assert not back.HasField("name") and not back.HasField("doc_string")
    tensor.name, tensor.doc_string = "", ""
    encoded = quantize_tensor_proto(tensor, plan)
    assert encoded.HasField("name") and encoded.HasField("doc_string")
    back = dequantize_tensor_proto(encoded)
    assert back.HasField("name") and back.HasField("doc_string") and back.name == ""
    tensor.ClearField("doc_string")
    tensor.name = "w"
    back = dequantize_tensor_proto(quantize_tensor_proto(tensor, plan))
    assert back.name == "w" and not back.HasField("doc_string")


def test_model_check_nested_graphs():
    good = int4_value()
    good.name = "w"
    model = ModelProto()
    model.graph.encoded_initializer.add().CopyFrom(good)
    node = model.graph.node.add(op_type="If")
    branch = node.attribute.add(name="then_branch")
    branch.g.encoded_initializer.add().CopyFrom(good)
    assert check_model_values(model) == 2
    bad = with_raw(good, good.raw_data + b"\x00")
    branch.g.encoded_initializer.add().CopyFrom(bad)
    with raises_rule("OL-WIRE-29") as info:
        check_model_values(model)
    assert "then_branch" in info.value.path
    ref = copy.deepcopy(good)
    ref.struct_type.Clear()
    ref.struct_type.type_ref = 9
    del branch.g.encoded_initializer[-1]
    model.graph.encoded_initializer.add().CopyFrom(ref)
    with raises_rule("OL-WIRE-05"):
        check_model_values(model)
    model.struct_types.add().CopyFrom(good.struct_type)
    model.struct_types[0].type_id = 9
    assert check_model_values(model) == 3


@covers("OL-WIRE-42")
def test_model_check_counts_values():
    model = ModelProto()
    assert check_model_values(model) == 0


# --- decoder-side plan rules ("both") ----------------------------------------------------------

def _patch(value: EncodedValueProto, offset: int, data: bytes) -> EncodedValueProto:
    raw = bytearray(value.raw_data)
    raw[offset:offset + len(data)] = data
    return with_raw(value, bytes(raw))


@pytest.mark.parametrize("expect, at, data", [
    (lambda: raises_rule("OL-PLAN-10"), 1, D(float("nan"))),
    (lambda: raises_rule("OL-PLAN-11"), 1, D(0.0)),
    (lambda: raises_rule("OL-PLAN-11"), 1, D(-1.0)),
    (lambda: raises_rule("OL-PLAN-12"), 9, D(float("inf"))),
    (lambda: raises_rule("OL-PLAN-13"), 17, D(float("nan"))),
    (lambda: raises_rule("OL-PLAN-15"), 9, D(0.5)),
    (lambda: raises_rule("OL-PLAN-16"), 9, D(8.0)),
])
def test_decoder_block_checks(expect, at, data):
    with expect():
        dequantize_value(_patch(int4_value(), at, data))


def test_decoder_plan_checks():
    value = int4_value(2, permutation=[1, 0])
    with raises_rule("OL-PLAN-28"):
        dequantize_value(_patch(value, 1, struct.pack("<qq", 0, 0)))
    value = int4_value(2, outliers=[1])
    with raises_rule("OL-PLAN-29"):
        dequantize_value(_patch(value, 1, struct.pack("<q", 2)))
    value = int4_value(2, transform_size=1, forward=[2.0], inverse=[0.5])
    with raises_rule("OL-PLAN-34"):
        dequantize_value(_patch(value, 1, D(1.0)))
    value = int4_value(2)
    value.struct_type.name = "onnx_light.quantization.v1/quarot"
    with raises_rule("OL-PLAN-35"):
        dequantize_value(value)
    value = int4_value(2)
    value.logical_type.tensor_type.shape.dim[0].dim_value = 3
    with raises_rule("OL-PLAN-27"):
        dequantize_value(value)
    value = set_header(int4_value(4), 0, 3)  # count 3 used for 4 elements; the payload stays 25 + 2 bytes
    with raises_rule("OL-PLAN-27"):
        dequantize_value(value)


def test_decoder_layout_checks():
    with raises_rule("OL-PLAN-07"):
        dequantize_value(set_header(int4_value(), 1, 99))
    with raises_rule("OL-PLAN-08"):
        dequantize_value(set_header(int4_value(), 2, 0))
    for cast in (0, 3, 8, 2**31 - 1):
        with raises_rule("OL-PLAN-09"):
            dequantize_value(set_header(int4_value(), 8, cast))
    with raises_rule("OL-PLAN-05"):
        dequantize_value(set_header(int4_value(), 0, 0))


def test_compact_values_need_their_model():
    value = int4_value()
    value.parameter_ref = "common"
    with raises_rule("OL-SHR-29"):
        dequantize_value(value)


@pytest.mark.parametrize("fmt, count, block", [(F.INT4, 7, 4), (F.AQLM, 0, 4), (F.TQ1_0, 11, 5), (F.TILED_FLOAT, 3, 2)])
def test_payload_schema_is_symmetric(fmt, count, block):
    """parse, build and sizeof of the run-time Construct schema agree on a real payload."""
    from hurray_decl.onnx_light.wire import payload_schema, read_geometry

    plan = make_quantization_plan(fmt, count, block)
    if fmt == F.AQLM:
        plan = make_quantization_plan(fmt, 0)
    value = quantize_array(np.linspace(-1, 1, count).astype(np.float32), plan)
    schema = payload_schema(read_geometry(value.struct_type))
    parsed = schema.parse(value.raw_data)
    assert schema.build(parsed) == value.raw_data
    assert schema.sizeof() == len(value.raw_data)
    with raises_rule("OL-WIRE-30"):
        schema.build(dict(parsed, reserved=1))
