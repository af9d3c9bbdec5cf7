"""onnx-light portable quantized values: profiles, plans, the canonical wire form and the codec.

hurray_decl reads and writes onnx-light ``EncodedValueProto`` messages (a self-describing
``StructTypeProto`` plus ``raw_data``) byte for byte as onnx-light does, for the 40 portable
profiles, without the onnx-light runtime. Spec: onnx-light/quantized-values.txt and DIGEST.md.
"""

from __future__ import annotations

from ._generated.onnx_light_pb2 import (
    EncodedValueProto,
    ModelProto,
    StructTypeProto,
    TensorProto,
    TypeProto,
)
from .calibrate import quantize_with_type
from .codec import decode_plan, dequantize_value, make_quantization_type, quantize_array
from ..errors import OnnxLightTypeError
from .methods import METHODS, MethodRow
from .model import check_model_values
from .plan import (
    QuantizationBlockLayout,
    QuantizationBlockParameters,
    QuantizationPlan,
    QuantizationRun,
    make_quantization_plan,
)
from .profiles import (
    PROFILES,
    QuantizationFormat,
    QuantizationMethod,
    parse_quantization_format,
    quantization_format_name,
    quantization_formats,
)
from .tensors import dequantize_tensor_proto, quantize_tensor_proto
from .wire import PARAMETER_REF_FIELD

__all__ = [
    "QuantizationFormat",
    "QuantizationMethod",
    "QuantizationBlockLayout",
    "QuantizationBlockParameters",
    "QuantizationRun",
    "QuantizationPlan",
    "PROFILES",
    "METHODS",
    "MethodRow",
    "PARAMETER_REF_FIELD",
    "OnnxLightTypeError",
    "quantization_formats",
    "quantization_format_name",
    "parse_quantization_format",
    "make_quantization_plan",
    "make_quantization_type",
    "quantize_array",
    "dequantize_value",
    "decode_plan",
    "quantize_tensor_proto",
    "dequantize_tensor_proto",
    "quantize_with_type",
    "check_model_values",
    "EncodedValueProto",
    "StructTypeProto",
    "TypeProto",
    "TensorProto",
    "ModelProto",
]
