"""Parameter sets: their declaration in a model, validation, the fixed common bytes, and
:func:`add_quantization_parameters` (OL-SHR-01 .. -10, -33).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from hurray_decl.errors import HurrayDeclError, OnnxLightError
from hurray_decl.onnx_light.calibrate import quantize_with_type
from hurray_decl.onnx_light.numerics import LOGICAL_DTYPES, LOGICAL_TYPES, DataType, spelled
from hurray_decl.onnx_light.ort import ORT_FORMATS
from hurray_decl.onnx_light.profiles import WIRE_PREFIX, parse_quantization_format
from hurray_decl.onnx_light.tensors import array_to_tensor, tensor_to_array
from hurray_decl.onnx_light.wire import (
    BLOCK,
    ROOT,
    add_tensor,
    check_strings,
    field_spans,
    logical_shape,
    model_catalogue,
    pb,
    read_geometry,
    record_bytes,
    resolve_struct_type,
)

__all__ = [
    "COMPACT_NAME",
    "NUMERIC_ROLES",
    "PARAMETERS_PREFIX",
    "ROLES",
    "ParameterSet",
    "add_quantization_parameters",
    "as_pb_model",
    "build_set",
    "compact_type",
    "convert_message",
    "make_shared_quantization_type",
    "parameter_catalogue",
    "parameter_set",
    "shared_error",
]


PARAMETERS_PREFIX = "onnx_light.quantization.parameters:"
"""The annotation-name prefix of a parameter set (OL-SHR-01)."""


ROLES = ("storage_type", "logical_type", "scales", "zero_points", "offsets", "codebooks", "permutation",
         "forward", "inverse", "outliers")
"""The roles a set may map (OL-SHR-02); the last eight are Quantize's optional inputs."""


NUMERIC_ROLES = ROLES[2:]


COMPACT_NAME = "onnx_light.quantization.shared.v1"
"""The root name of a compact storage type (OL-SHR-17)."""


def shared_error(code: str, message: str, path: str, actual: Any = None, expected: Any = None) -> OnnxLightError:
    return OnnxLightError(code, message, path=path, actual=actual, expected=expected)


def as_pb_model(model) -> pb.ModelProto:
    """This package's ModelProto with the same bytes (an ``onnx.ModelProto`` is converted)."""
    if isinstance(model, pb.ModelProto):
        converted = model
    elif not hasattr(model, "SerializeToString"):
        raise shared_error("OL-SHR-29", "expected a ModelProto", "model", type(model).__name__, "ModelProto")
    else:
        converted = convert_message(model, pb.ModelProto)
    check_strings(converted, "model", "OL-WIRE-01")
    return converted


def convert_message(message, cls):
    """``message`` (an onnx message, say) as this package's ``cls``, by its bytes. A field onnx
    leaves unknown that ``cls`` reads as a message, and cannot, is refused (OL-WIRE-01): onnx
    keeps a damaged extension field (number 1000) as unknown bytes."""
    if isinstance(message, cls):
        return message
    try:
        return cls.FromString(message.SerializeToString())
    except DecodeError as exc:
        raise shared_error("OL-WIRE-01", f"the message does not parse as onnx-light's {cls.__name__}: "
                           "an extension field (number 1000) is damaged",
                           cls.__name__.removesuffix("Proto").lower()) from exc


@dataclass(frozen=True)
class ParameterSet:
    """One validated set: its descriptors, parameters and the fixed common bytes (a snapshot)."""

    name: str
    storage: pb.StructTypeProto          # the full storage type, resolved, type_id cleared
    logical: pb.TypeProto
    dtype: int
    shape: tuple[int, ...]
    parameters: Mapping[str, np.ndarray]  # read-only copies, by role
    full: bytes                           # the full payload of an all-zero tensor
    local: tuple[tuple[int, int], ...]    # (start, length) of each local byte range
    compact_type: pb.StructTypeProto = field(repr=False)

    @property
    def local_size(self) -> int:
        return sum(length for _, length in self.local)

    @property
    def common_size(self) -> int:
        return len(self.full) - self.local_size

    def split(self, full: bytes) -> bytes:
        """The compact payload of a full payload: 0x00, then the local ranges in order."""
        return b"\x00" + b"".join(full[start:start + length] for start, length in self.local)

    def common(self, full: bytes) -> bytes:
        parts, at = [], 0
        for start, length in self.local:
            parts.append(full[at:start])
            at = start + length
        parts.append(full[at:])
        return b"".join(parts)

    def join(self, compact: bytes) -> bytes:
        """Interleave the common bytes and a compact payload's local bytes (OL-SHR-28)."""
        parts, at, taken = [], 0, 1
        for start, length in self.local:
            parts.append(self.full[at:start])
            parts.append(compact[taken:taken + length])
            at, taken = start + length, taken + length
        parts.append(self.full[at:])
        return b"".join(parts)

    def encode(self, array: np.ndarray) -> bytes:
        """The compact payload of ``array`` with the set's fixed parameters (OL-SHR-12)."""
        full = quantize_with_type(array, self.storage, **self.parameters).raw_data
        if self.common(full) != self.common(self.full):
            raise shared_error("OL-SHR-12", "encoding changed the set's common bytes", f"parameters:{self.name}")
        return self.split(full)


def compact_type(local_size: int) -> pb.StructTypeProto:
    """``onnx_light.quantization.shared.v1`` with one field ``local`` UINT8 [1 + local] (OL-SHR-17)."""
    root = pb.StructTypeProto()
    root.name = COMPACT_NAME
    root.structure.SetInParent()
    add_tensor(root.structure, "local", DataType.UINT8, [1 + local_size])
    return root


LOCAL_ROOT, LOCAL_BLOCK = "outlier_values", "codes"
"""The raw_data fields a shared value keeps local (OL-SHR-18); their offsets come from the
field table of :mod:`hurray_decl.onnx_light.wire`."""


def _local_ranges(storage: pb.StructTypeProto, full: bytes) -> tuple[tuple[int, int], ...]:
    """Outlier values and every block's codes (portable), or B (ORT) (OL-SHR-18)."""
    fmt = parse_quantization_format(storage.name[len(WIRE_PREFIX):], path="storage_type -> name")
    if fmt in ORT_FORMATS:
        fields = storage.structure.field
        dims = [d.dim_value for d in fields[1].type.tensor_type.shape.dim]
        return ((0, math.prod(dims)),)
    geometry = read_geometry(storage, "storage_type")
    ranges = []
    root = field_spans(ROOT, geometry)
    start, size = root[LOCAL_ROOT]
    if size:
        ranges.append((start, size))
    at = sum(size for _, size in root.values())
    for run in geometry.runs:
        (codes_at, codes), record = field_spans(BLOCK, run.layout)[LOCAL_BLOCK], record_bytes(run.layout)
        for _ in range(run.blocks):
            if codes:
                ranges.append((at + codes_at, codes))
            at += record
    merged: list[tuple[int, int]] = []
    for start, length in ranges:   # adjacent ranges read the same as one
        if merged and merged[-1][0] + merged[-1][1] == start:
            merged[-1] = (merged[-1][0], merged[-1][1] + length)
        else:
            merged.append((start, length))
    return tuple(merged)


def _descriptor_bytes(tensor: pb.TensorProto, role: str, path: str) -> bytes:
    if (tensor.data_type != DataType.UINT8 or len(tensor.dims) != 1 or not tensor.HasField("raw_data")
            or len(tensor.raw_data) != tensor.dims[0] or len(tensor.external_data)
            or tensor.data_location == pb.TensorProto.EXTERNAL):
        raise shared_error("OL-SHR-08", f"{role} must be an inline rank-1 UINT8 initializer holding its bytes", path,
                    (tensor.data_type, list(tensor.dims)), "UINT8 [byte count], raw_data")
    return tensor.raw_data


def _numeric(tensor: pb.TensorProto, role: str, path: str) -> np.ndarray:
    if not tensor.HasField("raw_data") and (len(tensor.external_data)
                                            or tensor.data_location == pb.TensorProto.EXTERNAL):
        raise shared_error("OL-SHR-09", f"{role} is in external data: load it before validation", path)
    if tensor.data_type in LOGICAL_DTYPES:
        values = tensor_to_array(tensor)
    elif tensor.data_type == DataType.INT64:
        count = math.prod(tensor.dims)   # Python integers: a claimed size never wraps
        values = (np.frombuffer(tensor.raw_data, "<i8").astype(np.int64) if tensor.HasField("raw_data")
                  else np.array(tensor.int64_data, dtype=np.int64))
        if values.size != count:
            raise shared_error("OL-SHR-10", f"{role} holds {values.size} values for dims {list(tensor.dims)}", path)
        values = values.reshape(list(tensor.dims))
    else:
        raise shared_error("OL-SHR-10", f"{role} has an element type Quantize does not take", path, tensor.data_type,
                    spelled([code.name for code in (*LOGICAL_TYPES, DataType.INT64)]))
    values = np.array(values, copy=True)
    values.flags.writeable = False
    return values


def build_set(name: str, tensors: Mapping[str, pb.TensorProto], catalogue_model, path: str) -> ParameterSet:
    """Validate one declaration and derive its fixed bytes (OL-SHR-04, -08 .. -10)."""
    for role in ("storage_type", "logical_type"):
        if role not in tensors:
            raise shared_error("OL-SHR-08", f"a parameter set needs a {role}", f"{path} -> {role}", None, role)
    if "scales" not in tensors:
        raise shared_error("OL-SHR-04", "a parameter set needs scales: shared mode never calibrates",
                    f"{path} -> scales", None, "scales")
    storage = pb.StructTypeProto()
    logical = pb.TypeProto()
    try:
        storage.ParseFromString(_descriptor_bytes(tensors["storage_type"], "storage_type", f"{path} -> storage_type"))
        logical.ParseFromString(_descriptor_bytes(tensors["logical_type"], "logical_type", f"{path} -> logical_type"))
    except DecodeError as exc:
        raise shared_error("OL-SHR-08", f"a descriptor does not parse: {exc}", path) from exc
    check_strings(storage, f"{path} -> storage_type", "OL-SHR-08")
    check_strings(logical, f"{path} -> logical_type", "OL-SHR-08")
    resolved = pb.StructTypeProto()
    resolved.CopyFrom(resolve_struct_type(storage, catalogue_model, f"{path} -> storage_type"))
    if logical.WhichOneof("value") != "tensor_type":
        raise shared_error("OL-SHR-08", "logical_type must be a tensor type", f"{path} -> logical_type",
                    logical.WhichOneof("value"), "tensor_type")
    try:
        dtype, shape = logical_shape(logical, f"{path} -> logical_type")
    except OnnxLightError as err:
        raise shared_error("OL-SHR-08", f"logical_type is not a concrete floating tensor type: {err.detail}",
                    err.path, err.actual, err.expected) from err
    parameters = {role: _numeric(tensors[role], role, f"{path} -> {role}")
                  for role in NUMERIC_ROLES if role in tensors}
    if not (isinstance(resolved.name, str) and resolved.name.startswith(WIRE_PREFIX)):
        raise shared_error("OL-SHR-08", "storage_type is not a quantization descriptor",
                           f"{path} -> storage_type -> name",
                    resolved.name, WIRE_PREFIX + "<profile>")
    try:
        zeros = np.zeros(shape, dtype=LOGICAL_DTYPES[dtype])
        full = quantize_with_type(zeros, resolved, **parameters).raw_data
        local = _local_ranges(resolved, full)
    except HurrayDeclError as err:
        raise shared_error("OL-SHR-10", f"the parameters do not fit the storage descriptor: [{err.code}] {err.detail}",
                    f"{path} -> {err.path}", err.actual, err.expected) from err
    local_size = sum(length for _, length in local)
    return ParameterSet(name, resolved, logical, dtype, tuple(shape), MappingProxyType(dict(parameters)), full,
                        local, compact_type(local_size))


def _declarations(model: pb.ModelProto):
    """(set name, role -> initializer name) of every prefixed root annotation (OL-SHR-01 .. -06)."""
    seen: set[str] = set()
    for i, annotation in enumerate(model.graph.quantization_annotation):
        if not annotation.tensor_name.startswith(PARAMETERS_PREFIX):
            continue   # unprefixed annotations keep their ONNX meaning
        name = annotation.tensor_name[len(PARAMETERS_PREFIX):]
        path = f"model -> graph -> quantization_annotation[{i}]"
        if not name:
            raise shared_error("OL-SHR-06", "a parameter set needs a name", f"{path} -> tensor_name",
                        annotation.tensor_name, PARAMETERS_PREFIX + "<name>")
        if name in seen:
            raise shared_error("OL-SHR-05", "two parameter sets share a name", f"{path} -> tensor_name", name, "unique")
        seen.add(name)
        roles: dict[str, str] = {}
        for entry in annotation.quant_parameter_tensor_names:
            if entry.key not in ROLES:
                raise shared_error("OL-SHR-02", "unknown parameter-set role",
                                   f"{path} -> {entry.key}", entry.key, list(ROLES))
            if entry.key in roles:
                raise shared_error("OL-SHR-03", "a role is named twice", f"{path} -> {entry.key}", entry.key, "once")
            roles[entry.key] = entry.value
        yield name, roles, path


def parameter_catalogue(model) -> dict[str, ParameterSet]:
    """Every parameter set a model declares, validated, as owned snapshots (OL-SHR-01 .. -10, -33)."""
    model = as_pb_model(model)
    model_catalogue(model)
    initializers: dict[str, pb.TensorProto] = {}
    for tensor in model.graph.initializer:
        initializers.setdefault(tensor.name, tensor)
    sets: dict[str, ParameterSet] = {}
    for name, roles, path in _declarations(model):
        tensors = {}
        for role, tensor_name in roles.items():
            if tensor_name not in initializers:
                raise shared_error("OL-SHR-07", "a role names a missing root initializer", f"{path} -> {role}",
                            tensor_name, "a root initializer")
            tensors[role] = initializers[tensor_name]
        sets[name] = build_set(name, tensors, model, path)
    return sets


def parameter_set(model, name: str, path: str = "parameter_ref") -> ParameterSet:
    sets = parameter_catalogue(model)
    if name not in sets:
        raise shared_error("OL-SHR-29", "the model declares no parameter set of this name", path, name, sorted(sets))
    return sets[name]


def make_shared_quantization_type(model, name: str) -> pb.StructTypeProto:
    """The compact storage type of a declared set."""
    result = pb.StructTypeProto()
    result.CopyFrom(parameter_set(model, name).compact_type)
    return result


def _parameter_tensor(value, role: str) -> pb.TensorProto:
    if hasattr(value, "SerializeToString"):
        return convert_message(value, pb.TensorProto)
    array = np.asarray(value)
    if array.dtype == np.int64:
        tensor = pb.TensorProto()
        tensor.dims.extend(array.shape)
        tensor.data_type = DataType.INT64
        tensor.raw_data = np.ascontiguousarray(array).astype("<i8").tobytes()
        return tensor
    for code, dtype in LOGICAL_DTYPES.items():
        if array.dtype == dtype:
            return array_to_tensor(array, code)
    floats = ", ".join(code.name for code in LOGICAL_TYPES)
    raise shared_error("OL-SHR-10", f"{role} must be {floats} or (for indices) {DataType.INT64.name}", role,
                str(array.dtype), "a floating or int64 array")


def add_quantization_parameters(model, name: str, storage_type, logical_type, *, scales,
                                zero_points=None, offsets=None, codebooks=None, permutation=None,
                                forward=None, inverse=None, outliers=None) -> pb.StructTypeProto:
    """Declare the set ``name`` in ``model`` (in place) and return its compact type (OL-SHR-20).

    ``model`` is an ``onnx.ModelProto`` or this package's; ``storage_type`` a StructTypeProto
    (inline or a type_ref into the model's catalogue); ``logical_type`` a tensor TypeProto.
    The numerical arguments take Quantize's input dtypes and shapes; ``scales`` is required.
    """
    if not isinstance(name, str) or not name:
        raise shared_error("OL-SHR-06", "a parameter set needs a non-empty name",
                           "name", repr(name), "a non-empty string")
    if scales is None:
        raise shared_error("OL-SHR-04", "scales is required: shared mode never calibrates", "scales", None, "a tensor")
    if not hasattr(model, "graph"):
        raise shared_error("OL-SHR-29", "expected a ModelProto", "model", type(model).__name__, "ModelProto")
    given = dict(scales=scales, zero_points=zero_points, offsets=offsets, codebooks=codebooks,
                 permutation=permutation, forward=forward, inverse=inverse, outliers=outliers)
    tensors = [("storage_type", _uint8_tensor(convert_message(storage_type, pb.StructTypeProto).SerializeToString())),
               ("logical_type", _uint8_tensor(convert_message(logical_type, pb.TypeProto).SerializeToString()))]
    tensors += [(role, _parameter_tensor(value, role)) for role, value in given.items() if value is not None]
    trial = as_pb_model(model)
    trial = pb.ModelProto.FromString(trial.SerializeToString())   # validate on a copy first
    existing = {t.name for t in trial.graph.initializer}
    annotation = trial.graph.quantization_annotation.add()
    annotation.tensor_name = PARAMETERS_PREFIX + name
    for role, tensor in tensors:
        tensor.name = f"{PARAMETERS_PREFIX}{name}/{role}"
        if tensor.name in existing:
            raise shared_error("OL-SHR-05", "the model already holds this set's initializers",
                               f"initializer {tensor.name}",
                        tensor.name, "a new set name")
        trial.graph.initializer.add().CopyFrom(tensor)
        entry = annotation.quant_parameter_tensor_names.add()
        entry.key, entry.value = role, tensor.name
    sets = parameter_catalogue(trial)
    for _role, tensor in tensors:
        model.graph.initializer.add().ParseFromString(tensor.SerializeToString())
    model.graph.quantization_annotation.add().ParseFromString(annotation.SerializeToString())
    result = pb.StructTypeProto()
    result.CopyFrom(sets[name].compact_type)
    return result


def _uint8_tensor(data: bytes) -> pb.TensorProto:
    tensor = pb.TensorProto()
    tensor.dims.append(len(data))
    tensor.data_type = DataType.UINT8
    tensor.raw_data = data
    return tensor
