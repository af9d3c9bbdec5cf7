"""Converters between Hurray per-block affine, GGUF, GPTQ/AWQ, ORT MatMulNBits and onnx-light.

One module per conversion, each over the public APIs of the layers below:

* :mod:`.parts`: :class:`BlockParts`, the checked meeting point of the per-block converters;
* :mod:`.gguf`: GGUF block types as sub-blocks, and their exact per-block affine form;
* :mod:`.group`: GPTQ and AWQ packed linear weights;
* :mod:`.ort`: per-block affine tensors as ORT MatMulNBits values and inputs;
* :mod:`.onnx_light`: GGUF tensors as onnx-light encoded values, exactly.

Only the light modules are imported here; :mod:`.ort` and :mod:`.onnx_light` load onnx-light.
"""

from .gguf import GGUF_BLOCK, gguf_parts
from .group import AWQ_ORDER, awq_parts, gptq_parts
from .parts import BlockParts

__all__ = ["BlockParts", "GGUF_BLOCK", "AWQ_ORDER", "gguf_parts", "gptq_parts", "awq_parts"]
