"""The public encode and decode entry points for every onnx-light value (DIGEST.md § 8, 10, 11).

Explicit-plan encoding goes to the portable pipeline (:mod:`.portable`) or the ORT layouts
(:mod:`.ort`). Decoding accepts a self-contained value (portable or ORT, :mod:`.values`), a
compact value with its model, a :class:`~hurray_decl.onnx_light.shared.SharedQuantizedValue`, or
an operator's ``QuantizedValue``: compact ones are materialized through their parameter set first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_decl.onnx_light.ort import MatMulNBitsInputs, quantize_ort
from hurray_decl.onnx_light.plan import QuantizationPlan
from hurray_decl.onnx_light.portable import as_encoded, make_quantization_type, quantize_portable
from hurray_decl.onnx_light.profiles import QuantizationFormat
from hurray_decl.onnx_light.shared import materialize_quantized_value
from hurray_decl.onnx_light.tensors import array_to_tensor, as_tensor, tensor_to_array
from hurray_decl.onnx_light.values import decode_plan_full, dequantize_full, export_full, validate_full
from hurray_decl.onnx_light.wire import pb

__all__ = [
    "decode_plan",
    "dequantize_tensor_proto",
    "dequantize_value",
    "export_matmul_nbits_inputs",
    "make_quantization_type",
    "quantize_array",
    "quantize_tensor_proto",
    "unwrap_value",
    "validate_value",
]


def quantize_array(array, plan: QuantizationPlan) -> pb.EncodedValueProto:
    """Encode a NumPy array with an explicit plan; parameters are used as supplied (OL-NUM-26)."""
    if isinstance(plan, QuantizationPlan) and isinstance(plan._format, QuantizationFormat) \
            and not plan._format.portable and int(plan._format) < len(QuantizationFormat):
        return quantize_ort(array, plan)
    return quantize_portable(array, plan)


def unwrap_value(encoded: Any, model: Any) -> tuple[Any, Any]:
    """The self-contained message and model behind what a caller passes to a decoder.

    A :class:`~hurray_decl.onnx_light.shared.SharedQuantizedValue` is materialized through its
    retained set; an operator's ``QuantizedValue`` brings its model; a compact message is
    materialized through ``model`` (without one it is refused, OL-SHR-29).
    """
    if hasattr(encoded, "materialize"):
        return encoded.materialize(), model
    if hasattr(encoded, "encoded") and hasattr(encoded, "model"):
        return encoded.encoded, encoded.model if model is None else model
    value = as_encoded(encoded)
    if value.HasField("parameter_ref") and model is not None:
        value = materialize_quantized_value(value, model)
    return value, model


def dequantize_value(encoded, model=None, dtype=None) -> np.ndarray:
    """Decode a portable or ORT value to an array of its logical shape and dtype (OL-NUM-24).

    ``dtype`` (a NumPy dtype of the four floating types) overrides the logical dtype. A compact
    value (``parameter_ref``) is decoded through the parameter set its ``model`` declares, or a
    SharedQuantizedValue through its retained set (OL-SHR-29): it is materialized first.
    """
    return dequantize_full(*unwrap_value(encoded, model), dtype)


def decode_plan(encoded, model=None) -> QuantizationPlan:
    """The plan a value was encoded with, rebuilt from its descriptor and payload."""
    return decode_plan_full(*unwrap_value(encoded, model))


def validate_value(encoded, model=None) -> None:
    """Run every decoder check on a self-contained portable or ORT value, without decoding."""
    validate_full(encoded, model)


def export_matmul_nbits_inputs(encoded, model=None) -> MatMulNBitsInputs:
    """Validate an ORT value and copy its bytes into MatMulNBits inputs, without dequantizing.

    Returns ``onnx.TensorProto`` messages when the ``onnx`` package is installed. A portable
    value, the portable ``matmulnbits`` profile included, is refused (OL-ORT-31).
    """
    return export_full(*unwrap_value(encoded, model))


def quantize_tensor_proto(tensor_proto, plan: QuantizationPlan) -> pb.EncodedValueProto:
    """Encode a TensorProto with an explicit plan; keeps name/doc_string presence."""
    t = as_tensor(tensor_proto)
    encoded = quantize_array(tensor_to_array(t), plan)
    if t.HasField("name"):
        encoded.name = t.name
    if t.HasField("doc_string"):
        encoded.doc_string = t.doc_string
    return encoded


def dequantize_tensor_proto(encoded, model=None) -> pb.TensorProto:
    """Decode to a TensorProto with the logical shape and dtype; keeps name/doc_string presence."""
    value, model = unwrap_value(encoded, model)
    array = dequantize_value(value, model)
    tensor = array_to_tensor(array, value.logical_type.tensor_type.elem_type)
    if value.HasField("name"):
        tensor.name = value.name
    if value.HasField("doc_string"):
        tensor.doc_string = value.doc_string
    return tensor
