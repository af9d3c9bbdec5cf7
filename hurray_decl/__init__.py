"""hurray_decl: a declarative reference codec for Hurray quantization descriptors and
onnx-light portable quantized values."""

from .engine import (
    SCHEMES,
    decode_quantization,
    encode_quantization,
    kernel_for,
    load_quantization,
    register_private_scheme,
    scheme,
    unregister_private_scheme,
)
from .errors import HurrayDeclError
from . import numerics
from .codec import dequantize, quantize
from .convert.hurray import from_awq, from_gguf, from_gguf_file, from_gptq
from .tensor import (
    BufferHandle,
    TensorDescriptor,
    read_tensor_descriptor,
    validate_buffers,
    write_tensor_descriptor,
)
from .schemes.mxfp import MXFP
from .schemes.nf4 import NF4
from .schemes.per_block_affine import PerBlockAffine
from .schemes.per_channel_affine import PerChannelAffine
from .schemes.per_tensor_affine import PerTensorAffine
from .schemes.quantization import Descriptor as QuantizationDescriptor
from .schemes.quantization import OpaqueQuantization, SchemeDescriptor

__all__ = [
    "BufferHandle",
    "HurrayDeclError",
    "TensorDescriptor",
    "dequantize",
    "from_awq",
    "from_gguf",
    "from_gguf_file",
    "from_gptq",
    "numerics",
    "quantize",
    "read_tensor_descriptor",
    "validate_buffers",
    "write_tensor_descriptor",
    "MXFP",
    "NF4",
    "OpaqueQuantization",
    "PerBlockAffine",
    "PerChannelAffine",
    "PerTensorAffine",
    "QuantizationDescriptor",
    "SCHEMES",
    "SchemeDescriptor",
    "decode_quantization",
    "encode_quantization",
    "kernel_for",
    "load_quantization",
    "register_private_scheme",
    "scheme",
    "unregister_private_scheme",
]
