"""Per-block affine tensors as ORT MatMulNBits values, inputs and runnable models.

The public path from a GGUF tensor to onnxruntime::

    descriptor, buffers = hurray_decl.from_gguf_file("model.gguf", "blk.0.ffn_up.weight")
    value = tensor_to_matmul_nbits(descriptor, buffers)        # an ORT MatMulNBits value
    model = matmul_nbits_model([("ffn_up", value)])           # one MatMulNBits node per weight

A linear weight ``W`` stored ``(N, K)`` and blocked along ``K`` (axis 1: GGUF, PyTorch) becomes
``B = W^T``, the ``[K, N]`` matrix MatMulNBits multiplies by (``Y = A @ B = A @ W^T``), through
:meth:`BlockParts.transposed`; parts already ``[K, N]`` along axis 0 are taken as they are.
Codes and scales are copied, never re-quantized.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_decl.convert.hurray import block_parts
from hurray_decl.convert.parts import BlockParts
from hurray_decl.convert.portable import from_block_parts
from hurray_decl.errors import ArgumentError
from hurray_decl.onnx_light import (
    EncodedValueProto,
    ModelProto,
    export_matmul_nbits_inputs,
)
from hurray_decl.onnx_light.ort import ORT_FORMATS as ORT_WIDTHS

__all__ = [
    "MODEL_INPUT",
    "MODEL_OUTPUT",
    "ORT_FORMATS",
    "empty_model",
    "matmul_nbits_model",
    "tensor_to_matmul_nbits",
    "to_matmul_nbits",
]

ORT_FORMATS = {bits: fmt for fmt, bits in ORT_WIDTHS.items()}
"""The MatMulNBits profile for each code width (the inverse of the onnx-light table)."""

MODEL_INPUT = "{name}.A"
MODEL_OUTPUT = "{name}.Y"
"""Names of each node's activation input ``[M, K]`` and output ``[M, N]`` in :func:`matmul_nbits_model`."""

IR_VERSION = 9
"""The ONNX IR version of the models written here (onnxruntime 1.17 and later read it)."""


def to_matmul_nbits(parts: BlockParts, *, scale_type: str | None = None) -> EncodedValueProto:
    """An ORT MatMulNBits value from per-block parts: ``[K, N]`` along axis 0, or a ``(N, K)`` weight along axis 1.

    ``scale_type`` (``float32``, ``float16``, ``bfloat16``) re-types the scales, which is also
    the matrix dtype; it must hold every scale exactly. By default the scales keep their type.
    """
    if not isinstance(parts, BlockParts):
        raise ArgumentError("parts", "to_matmul_nbits takes BlockParts", actual=type(parts).__name__,
                            expected="BlockParts")
    if parts.codes.ndim == 2 and parts.axis == 1:
        parts = parts.transposed()
    if scale_type is not None and scale_type != parts.scale_type:
        parts = BlockParts.from_block_order(parts.codes, parts.storage, parts.axis, parts.block_size,
                                            parts.scales.astype(np.float64), scale_type, parts.zero_points)
    bits = int(parts.storage.lstrip("uint"))
    return from_block_parts(parts, ORT_FORMATS[bits])


def tensor_to_matmul_nbits(descriptor: Any, buffers: Sequence[Any], *,
                           scale_type: str | None = None) -> EncodedValueProto:
    """A row-major per-block affine Hurray tensor as an ORT MatMulNBits value (see :func:`to_matmul_nbits`)."""
    return to_matmul_nbits(block_parts(descriptor, buffers), scale_type=scale_type)


def _int_attribute(node: Any, name: str, value: int) -> None:
    attribute = node.attribute.add()
    attribute.name = name
    attribute.type = 2  # AttributeProto.INT
    attribute.i = int(value)


def empty_model(name: str, *, com_microsoft: bool = False) -> ModelProto:
    """An ONNX model with an empty graph ``name``: IR 9, opset 17 (and com.microsoft 1)."""
    model = ModelProto()
    model.ir_version = IR_VERSION
    for domain, version in (("", 17),) + ((("com.microsoft", 1),) if com_microsoft else ()):
        opset = model.opset_import.add()
        opset.domain, opset.version = domain, version
    model.producer_name = "hurray_decl"
    model.graph.name = name
    return model


def matmul_nbits_model(weights: Sequence[tuple[str, EncodedValueProto]]) -> ModelProto:
    """An ONNX model with one ``com.microsoft::MatMulNBits`` node per named ORT value.

    Node ``name`` reads ``{name}.A`` ``[M, K]`` and writes ``{name}.Y`` ``[M, N]``; its
    initializers are ``{name}.B``, ``{name}.scales`` and, when stored, ``{name}.zero_points``.
    The model holds only standard ONNX fields, so onnxruntime loads its bytes directly.
    """
    model = empty_model("matmul_nbits", com_microsoft=True)
    graph = model.graph
    for name, value in weights:
        inputs = export_matmul_nbits_inputs(value)
        node = graph.node.add()
        node.op_type, node.domain, node.name = "MatMulNBits", "com.microsoft", name
        node.input.append(MODEL_INPUT.format(name=name))
        for role, tensor in (("B", inputs.weights), ("scales", inputs.scales), ("zero_points", inputs.zero_points)):
            if tensor is None:
                continue
            initializer = graph.initializer.add()
            initializer.ParseFromString(tensor.SerializeToString())
            initializer.name = f"{name}.{role}"
            node.input.append(initializer.name)
        node.output.append(MODEL_OUTPUT.format(name=name))
        for attribute, number in (("K", inputs.k), ("N", inputs.n), ("bits", inputs.bits),
                                  ("block_size", inputs.block_size)):
            _int_attribute(node, attribute, number)
        dtype = inputs.scales.data_type
        for values, value_name, width in ((graph.input, node.input[0], inputs.k),
                                          (graph.output, node.output[0], inputs.n)):
            info = values.add()
            info.name = value_name
            tensor_type = info.type.tensor_type
            tensor_type.elem_type = dtype
            rows, columns = tensor_type.shape.dim.add(), tensor_type.shape.dim.add()
            rows.dim_param, columns.dim_value = "M", int(width)
    return model
