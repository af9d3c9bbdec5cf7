"""Compact values: encoding with a set, the retained :class:`SharedQuantizedValue`, the checks of
a compact message against its set, and materialization (OL-SHR-14 .. -29, -34).
"""

from __future__ import annotations

import numpy as np

from hurray_decl.onnx_light.numerics import LOGICAL_DTYPES
from hurray_decl.onnx_light.portable import as_encoded
from hurray_decl.onnx_light.shared.parameters import (
    COMPACT_NAME,
    ParameterSet,
    convert_message,
    parameter_set,
    shared_error,
)
from hurray_decl.onnx_light.tensors import tensor_to_array
from hurray_decl.onnx_light.values import dequantize_full
from hurray_decl.onnx_light.wire import pb, resolve_struct_type, same_message

__all__ = [
    "EncodedValue",
    "SharedQuantizedValue",
    "check_shared_value",
    "compact_value",
    "materialize_quantized_value",
    "quantize_tensor_shared",
]


class EncodedValue:
    """An encoded value kept as a private message: what the ai.rt operators put on graph edges."""

    __slots__ = ("_encoded",)

    def __init__(self, encoded) -> None:
        self._encoded = pb.EncodedValueProto()
        self._encoded.CopyFrom(encoded if isinstance(encoded, pb.EncodedValueProto)
                               else pb.EncodedValueProto.FromString(encoded.SerializeToString()))

    @property
    def encoded(self) -> pb.EncodedValueProto:
        """An independent copy of the message."""
        copy = pb.EncodedValueProto()
        copy.CopyFrom(self._encoded)
        return copy

    @property
    def name(self) -> str:
        return self._encoded.name

    @property
    def raw_data(self) -> bytes:
        return self._encoded.raw_data


class SharedQuantizedValue(EncodedValue):
    """A retained compact value together with the parameter set it was encoded with (OL-SHR-33).

    The set is an immutable snapshot: the value outlives, and ignores later edits to, the model
    that declared it. :attr:`encoded` returns an independent copy of the compact message.
    """

    __slots__ = ("_set",)

    def __init__(self, encoded: pb.EncodedValueProto, parameters: ParameterSet) -> None:
        super().__init__(encoded)
        self._set = parameters

    @property
    def parameter_ref(self) -> str:
        return self._encoded.parameter_ref

    @property
    def parameters(self) -> ParameterSet:
        return self._set

    def has_parameter_ref(self) -> bool:
        return True

    def copy(self) -> SharedQuantizedValue:
        """The same value and owner (what Identity passes on, OL-SHR-30)."""
        return SharedQuantizedValue(self._encoded, self._set)

    def materialize(self) -> pb.EncodedValueProto:
        return materialize_quantized_value(self)

    def todense(self) -> np.ndarray:
        """The decoded values (the reference evaluator's test for a non-tensor value)."""
        return dequantize_full(self.materialize())

    def __repr__(self) -> str:
        return (f"SharedQuantizedValue(name={self.name!r}, parameter_ref={self.parameter_ref!r}, "
                f"{len(self.raw_data)} bytes)")


def compact_value(parameters: ParameterSet, array: np.ndarray, name: str | None) -> SharedQuantizedValue:
    """Encode ``array`` with the set and wrap the compact message (OL-SHR-14, -17, -18)."""
    source = np.asarray(array)
    expected = LOGICAL_DTYPES[parameters.dtype]
    if source.dtype != expected or tuple(source.shape) != parameters.shape:
        raise shared_error("OL-SHR-14", "the input's dtype or shape differs from the set's logical type", "source",
                    (str(source.dtype), list(source.shape)), (expected.name, list(parameters.shape)))
    encoded = pb.EncodedValueProto()
    encoded.name = name or ""   # an unnamed source gets a present, empty name (OD-13)
    encoded.struct_type.CopyFrom(parameters.compact_type)
    encoded.logical_type.CopyFrom(parameters.logical)
    encoded.raw_data = parameters.encode(source)
    encoded.parameter_ref = parameters.name
    return SharedQuantizedValue(encoded, parameters)


def quantize_tensor_shared(tensor, model, name: str) -> SharedQuantizedValue:
    """Encode a tensor (array or TensorProto) with the fixed parameters of set ``name`` (OL-SHR-34)."""
    parameters = parameter_set(model, name, "name")
    value_name = None
    if hasattr(tensor, "SerializeToString"):
        proto = convert_message(tensor, pb.TensorProto)
        value_name = proto.name if proto.HasField("name") else None
        tensor = tensor_to_array(proto)
    return compact_value(parameters, tensor, value_name)


def check_shared_value(value: pb.EncodedValueProto, parameters: ParameterSet, model, path: str,
                       codes: tuple[str, str, str] = ("OL-SHR-25", "OL-SHR-24", "OL-SHR-26")) -> None:
    """Logical type, compact type and payload extent against the set, without rebuilding the full
    payload. ``codes`` name the rules reported (materialization: OL-SHR-25/-24/-26; encoded
    initializers: OL-SHR-21/-22/-23)."""
    logical_code, type_code, length_code = codes
    if not same_message(value.logical_type, parameters.logical):
        raise shared_error(logical_code, "the logical type differs from the parameter set's", f"{path} -> logical_type")
    if value.WhichOneof("layout") != "struct_type":
        raise shared_error(type_code, "a compact value's layout is the compact struct type", f"{path} -> layout",
                    value.WhichOneof("layout"), "struct_type")
    local_type = resolve_struct_type(value.struct_type, model, f"{path} -> struct_type")
    if not same_message(local_type, parameters.compact_type):
        raise shared_error(type_code, "the compact storage type differs from the parameter set's",
                    f"{path} -> struct_type", None, f"{COMPACT_NAME} local [{1 + parameters.local_size}]")
    expected = 1 + parameters.local_size
    if len(value.raw_data) != expected:
        raise shared_error(length_code, "the compact payload length is not 1 + the local byte count",
                    f"{path} -> raw_data", len(value.raw_data), expected)


def materialize_quantized_value(value, model=None) -> pb.EncodedValueProto:
    """A self-contained value: the full inline storage type, no parameter_ref (OL-SHR-24 .. -29).

    ``value`` is a :class:`SharedQuantizedValue` (it carries its set) or an EncodedValueProto; a
    proto with ``parameter_ref`` needs the ``model`` that declares its set. A value without
    ``parameter_ref`` is returned as a copy. The source is never changed.
    """
    if isinstance(value, SharedQuantizedValue):
        source, parameters = value._encoded, value._set
    else:
        source = as_encoded(value)
        if not source.HasField("parameter_ref"):
            result = pb.EncodedValueProto()
            result.CopyFrom(source)
            return result
        if model is None:
            raise shared_error("OL-SHR-29", "a compact value is materialized only with the model that declares its set",
                        "value -> parameter_ref", source.parameter_ref, "a model")
        parameters = parameter_set(model, source.parameter_ref, "value -> parameter_ref")
    check_shared_value(source, parameters, model, "value")
    if source.raw_data[:1] != b"\x00":
        raise shared_error("OL-SHR-27", "the compact payload's reserved first byte is not 0", "value -> raw_data",
                    f"0x{source.raw_data[0]:02X}", "0x00").located(0)
    result = pb.EncodedValueProto()
    if source.HasField("name"):
        result.name = source.name
    if source.HasField("doc_string"):
        result.doc_string = source.doc_string
    result.struct_type.CopyFrom(parameters.storage)
    result.logical_type.CopyFrom(parameters.logical)
    result.raw_data = parameters.join(source.raw_data)
    return result
