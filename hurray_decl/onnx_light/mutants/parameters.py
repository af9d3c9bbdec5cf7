"""Mutants of parameter sets, compact values and the operators' attributes (OL-SHR, OL-OP)."""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_decl.onnx_light.mutants.base import model_case, mutant, value_case
from hurray_decl.onnx_light.mutants.valid import Case, Source, compact_model
from hurray_decl.onnx_light.numerics import DataType
from hurray_decl.onnx_light.shared import PARAMETERS_PREFIX
from hurray_decl.onnx_light.tensors import array_to_tensor
from hurray_decl.onnx_light.wire import pb


def _annotation(model: pb.ModelProto) -> Any:
    return next(a for a in model.graph.quantization_annotation if a.tensor_name.startswith(PARAMETERS_PREFIX))


def _initializer(model: pb.ModelProto, role: str) -> Any:
    wanted = next(e.value for e in _annotation(model).quant_parameter_tensor_names if e.key == role)
    return next(t for t in model.graph.initializer if t.name == wanted)


ANNOTATION = "graph.quantization_annotation[0]"
ROLES = f"{ANNOTATION}.quant_parameter_tensor_names"
"""Where a parameter-set fault is reported: the role that names the faulty initializer."""


@mutant("OL-SHR-02", "a parameter-set role outside the allowed ten")
def _(src: Source) -> Case:
    model = compact_model(src)
    _annotation(model).quant_parameter_tensor_names.add(key=src.choice(("scale", "bias", "g_idx", "")),
                                                        value=_initializer(model, "scales").name)
    return model_case(model, "OL-SHR-02", ANNOTATION, "unknown role")


@mutant("OL-SHR-03", "a role named twice in one parameter set")
def _(src: Source) -> Case:
    model = compact_model(src)
    entries = _annotation(model).quant_parameter_tensor_names
    twin = src.choice(list(entries))
    entries.add().CopyFrom(twin)
    return model_case(model, "OL-SHR-03", ANNOTATION, "role named twice")


@mutant("OL-SHR-04", "a parameter set without scales")
def _(src: Source) -> Case:
    model = compact_model(src)
    entries = _annotation(model).quant_parameter_tensor_names
    kept = [e for e in entries if e.key != "scales"]
    del entries[:]
    entries.extend(kept)
    return model_case(model, "OL-SHR-04", ANNOTATION, "no scales")


@mutant("OL-SHR-05", "two parameter sets with the same name")
def _(src: Source) -> Case:
    model = compact_model(src)
    model.graph.quantization_annotation.add().CopyFrom(_annotation(model))
    return model_case(model, "OL-SHR-05", "graph.quantization_annotation[1]", "duplicate set name")


@mutant("OL-SHR-06", "a parameter set with an empty name")
def _(src: Source) -> Case:
    model = compact_model(src)
    model.graph.quantization_annotation.add().CopyFrom(_annotation(model))
    model.graph.quantization_annotation[-1].tensor_name = PARAMETERS_PREFIX
    return model_case(model, "OL-SHR-06", "graph.quantization_annotation[1]", "empty set name")


@mutant("OL-SHR-07", "a role naming a missing initializer")
def _(src: Source) -> Case:
    model = compact_model(src)
    entry = src.choice(list(_annotation(model).quant_parameter_tensor_names))
    entry.value = entry.value + src.choice(("_missing", "x"))
    return model_case(model, "OL-SHR-07", ANNOTATION, "missing initializer")


@mutant("OL-SHR-08", "a storage_type or logical_type initializer that is not inline rank-1 UINT8 bytes")
def _(src: Source) -> Case:
    model = compact_model(src)
    tensor = _initializer(model, src.choice(("storage_type", "logical_type")))
    how = src.integer(0, 2)
    if how == 0:
        tensor.data_type = src.choice((DataType.FLOAT, DataType.INT8, DataType.INT64))
    elif how == 1:
        tensor.dims[0] += src.integer(1, 5)
    else:
        tensor.raw_data = b"\xff\xff\xff"
        tensor.dims[0] = 3
    return model_case(model, "OL-SHR-08", ANNOTATION, "descriptor initializer malformed")


@mutant("OL-SHR-09", "a numeric parameter left in external data")
def _(src: Source) -> Case:
    model = compact_model(src)
    tensor = _initializer(model, "scales")
    tensor.ClearField("raw_data")
    tensor.data_location = pb.TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value="scales.bin")
    return model_case(model, "OL-SHR-09", ROLES, "external scales")


@mutant("OL-SHR-10", "parameters that do not fit the storage descriptor")
def _(src: Source) -> Case:
    model = compact_model(src)
    tensor = _initializer(model, "scales")
    count = (tensor.dims[0] if len(tensor.dims) else 1) + src.integer(1, 3)
    tensor.CopyFrom(array_to_tensor(np.ones(count, np.float32), DataType.FLOAT))
    tensor.name = _initializer_name(model, "scales")
    return model_case(model, "OL-SHR-10", ROLES, "scales of the wrong size")


def _initializer_name(model: pb.ModelProto, role: str) -> str:
    return str(next(e.value for e in _annotation(model).quant_parameter_tensor_names if e.key == role))


def _compact(model: pb.ModelProto) -> Any:
    return next(v for v in model.graph.encoded_initializer if v.HasField("parameter_ref"))


COMPACT = "graph.encoded_initializer[0]"


@mutant("OL-SHR-21", "a compact initializer whose logical type differs from its set's")
def _(src: Source) -> Case:
    model = compact_model(src)
    dims = _compact(model).logical_type.tensor_type.shape.dim
    dims[0].dim_value += src.integer(1, 4)
    return model_case(model, "OL-SHR-21", COMPACT, "compact logical type changed")


@mutant("OL-SHR-22", "a compact initializer whose compact type differs from its set's")
def _(src: Source) -> Case:
    model = compact_model(src)
    local = _compact(model).struct_type.structure.field[0]
    if src.coin():
        local.type.tensor_type.shape.dim[0].dim_value += src.integer(1, 4)
    else:
        local.name = "locals"
    return model_case(model, "OL-SHR-22", COMPACT, "compact type changed")


@mutant("OL-SHR-23", "a compact initializer whose payload extent differs from its set's")
def _(src: Source) -> Case:
    model = compact_model(src)
    value = _compact(model)
    value.raw_data = value.raw_data + bytes(src.integer(1, 4)) if src.coin() else value.raw_data[:-1]
    return model_case(model, "OL-SHR-23", COMPACT, "compact payload length")


@mutant("OL-SHR-27", "a compact payload whose first byte is not 0")
def _(src: Source) -> Case:
    model = compact_model(src)
    value = _compact(model)
    value.raw_data = bytes([src.integer(1, 255)]) + value.raw_data[1:]
    return model_case(model, "OL-SHR-27", f"{COMPACT}.raw_data", "compact reserved byte set")


@mutant("OL-SHR-29", "a compact value without the model that declares its set")
def _(src: Source) -> Case:
    model = compact_model(src)
    if src.coin():
        return value_case(_compact(model), "OL-SHR-29", "parameter_ref", "compact value alone")
    _compact(model).parameter_ref = src.choice(("other", "common2", ""))
    return model_case(model, "OL-SHR-29", COMPACT, "undeclared parameter set")


def _quantize_node(model: pb.ModelProto, graph: Any = None) -> Any:
    graph = model.graph if graph is None else graph
    node = graph.node.add(op_type="Quantize", domain="ai.rt", input=["x"], output=["q"])
    attribute = node.attribute.add(name="type", type=13)
    attribute.tp.struct_type.CopyFrom(_annotation_storage(model))
    return node


def _annotation_storage(model: pb.ModelProto) -> pb.StructTypeProto:
    storage = pb.StructTypeProto()
    storage.ParseFromString(_initializer(model, "storage_type").raw_data)
    return storage


@mutant("OL-SHR-31", "a parameter_ref attribute reference unresolved in graph scope")
def _(src: Source) -> Case:
    model = compact_model(src)
    node = _quantize_node(model)
    node.attribute.add(name="parameter_ref", type=3, ref_attr_name=src.choice(("set_name", "p")))
    return model_case(model, "OL-SHR-31", "graph.node[0]", "unresolved attribute reference")


@mutant("OL-SHR-32", "a function call that omits a required function attribute")
def _(src: Source) -> Case:
    model = compact_model(src)
    function = model.functions.add(name="SharedQuantize", domain="local", input=["x"], output=["q"],
                                   attribute=["set_name"])
    function.opset_import.add(domain="ai.rt", version=1)
    model.opset_import.add(domain="local", version=1)
    model.graph.node.add(op_type="SharedQuantize", domain="local", input=["X"], output=["Q"])
    return model_case(model, "OL-SHR-32", "graph.node[0]", "required function attribute omitted")


@mutant("OL-OP-04", "a Quantize node whose parameter_ref attribute is empty")
def _(src: Source) -> Case:
    model = compact_model(src)
    node = _quantize_node(model)
    node.attribute.add(name="parameter_ref", type=3, s=b"")
    return model_case(model, "OL-OP-04", "graph.node[0]", "empty parameter_ref")
