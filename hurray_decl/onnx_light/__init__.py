"""onnx-light quantized values: profiles, plans, the canonical wire form and the codec.

hurray_decl reads and writes onnx-light ``EncodedValueProto`` messages (a self-describing
``StructTypeProto`` plus ``raw_data``) byte for byte as onnx-light does, for the 40 portable
profiles and the three ORT MatMulNBits input layouts, without the onnx-light runtime. It also
declares model-level shared parameter sets (compact values), runs the ``ai.rt`` Quantize and
Dequantize operators in ``onnx.reference.ReferenceEvaluator`` (imported on first use: they need
``onnx``) and converts between ORT, onnx-light int4/int8 and Hurray per-block parts.
Spec: onnx-light/quantized-values.txt and DIGEST.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hurray_decl.errors import OnnxLightTypeError
from hurray_decl.lazy_modules import lazy_names
from hurray_decl.onnx_light._generated.onnx_light_pb2 import (
    EncodedValueProto,
    ModelProto,
    StructTypeProto,
    TensorProto,
    TypeProto,
)
from hurray_decl.onnx_light.calibrate import quantize_with_type
from hurray_decl.onnx_light.codec import (
    decode_plan,
    dequantize_tensor_proto,
    dequantize_value,
    export_matmul_nbits_inputs,
    make_quantization_type,
    quantize_array,
    quantize_tensor_proto,
)
from hurray_decl.onnx_light.methods import METHODS, MethodRow
from hurray_decl.onnx_light.model import check_model, check_model_values, model_to_textproto, serialize_for_ort
from hurray_decl.onnx_light.ort import MatMulNBitsInputs, make_matmul_nbits_plan
from hurray_decl.onnx_light.plan import (
    QuantizationBlockLayout,
    QuantizationBlockParameters,
    QuantizationPlan,
    QuantizationRun,
    make_quantization_plan,
)
from hurray_decl.onnx_light.profiles import (
    PROFILES,
    QuantizationFormat,
    QuantizationMethod,
    parse_quantization_format,
    quantization_format_name,
    quantization_formats,
)
from hurray_decl.onnx_light.shared import (
    ParameterSet,
    SharedQuantizedValue,
    add_quantization_parameters,
    make_shared_quantization_type,
    materialize_quantized_value,
    parameter_catalogue,
    quantize_tensor_shared,
)
from hurray_decl.onnx_light.wire import PARAMETER_REF_FIELD

__all__ = [
    "METHODS",
    "PARAMETER_REF_FIELD",
    "PROFILES",
    "EncodedValueProto",
    "MatMulNBitsInputs",
    "MethodRow",
    "ModelProto",
    "OnnxLightTypeError",
    "ParameterSet",
    "QuantizationBlockLayout",
    "QuantizationBlockParameters",
    "QuantizationFormat",
    "QuantizationMethod",
    "QuantizationPlan",
    "QuantizationRun",
    "SharedQuantizedValue",
    "StructTypeProto",
    "TensorProto",
    "TypeProto",
    "add_quantization_parameters",
    "check_model",
    "check_model_values",
    "decode_plan",
    "dequantize_tensor_proto",
    "dequantize_value",
    "export_matmul_nbits_inputs",
    "make_matmul_nbits_plan",
    "make_quantization_plan",
    "make_quantization_type",
    "make_shared_quantization_type",
    "materialize_quantized_value",
    "model_to_textproto",
    "parameter_catalogue",
    "parse_quantization_format",
    "quantization_format_name",
    "quantization_formats",
    "quantize_array",
    "quantize_tensor_proto",
    "quantize_tensor_shared",
    "quantize_with_type",
    "serialize_for_ort",
]

# Not in __all__, so that ``import *`` works without onnx installed: the TYPE_CHECKING imports at the end.
_OPERATOR_NAMES = set(lazy_names({
    "hurray_decl.onnx_light.operators": (
        "Dequantize", "QuantizationEvaluator", "Quantize", "QuantizedValue", "infer_shapes_model",
        "make_reference_evaluator", "quantization_operators", "struct_type_proto",
    ),
}))


def __getattr__(name: str) -> Any:
    """The ai.rt operators need the ``onnx`` package: they are imported on first use."""
    if name in _OPERATOR_NAMES:
        from hurray_decl.onnx_light import operators

        return getattr(operators, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:  # the operator names, as a type checker sees them (imported by __getattr__ at run time)
    from hurray_decl.onnx_light.operators import (
        Dequantize as Dequantize,
        QuantizationEvaluator as QuantizationEvaluator,
        Quantize as Quantize,
        QuantizedValue as QuantizedValue,
        infer_shapes_model as infer_shapes_model,
        make_reference_evaluator as make_reference_evaluator,
        quantization_operators as quantization_operators,
        struct_type_proto as struct_type_proto,
    )
