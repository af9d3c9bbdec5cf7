"""Converters between Hurray per-block affine, GGUF, GPTQ/AWQ, ORT MatMulNBits and onnx-light.

One module per conversion, each over the public APIs of the layers below:

* :mod:`.parts`: :class:`BlockParts`, the checked meeting point of the per-block converters;
* :mod:`.gguf`: GGUF block types as sub-blocks, and their exact per-block affine form;
* :mod:`.group`: GPTQ and AWQ packed linear weights;
* :mod:`.hurray`: those sources as Hurray tensors (``from_gguf``, ``from_gptq``, ...);
* :mod:`.ort`: per-block affine tensors as ORT MatMulNBits values and runnable models;
* :mod:`.onnx_light`: GGUF tensors as onnx-light encoded values, exactly, and back to GGUF blocks;
* :mod:`.codebook`: NF4 and MXFP between Hurray and onnx-light's nf4 / mxfp4 / mxfp6 values;
* :mod:`.metadata`: model metadata between GGUF KV, container KV and ONNX ``metadata_props``;
* :mod:`.tensors`: one tensor between any two formats, as the ``convert`` command runs it;
* :mod:`.safetensors`: safetensors files in and out, every dtype, ``__metadata__`` kept;
* :mod:`.checkpoints`: GPTQ / AWQ safetensors checkpoints read whole;
* :mod:`.sources`: GGUF and safetensors models (split and sharded ones too) opened by path as tensors (``hd.open``);
* :mod:`.model_quantize`: whole-model quantize of ``.npz``, safetensors and ONNX models, with errors.

Only :class:`BlockParts` is imported with the package; the converters load on first use.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from hurray_decl.convert.parts import BlockParts
from hurray_decl.lazy_modules import lazy_names

_LAZY = lazy_names({
    "hurray_decl.convert.checkpoints": ("read_checkpoint",),
    "hurray_decl.convert.gguf": ("GGUF_BLOCK", "gguf_parts"),
    "hurray_decl.convert.group": ("AWQ_ORDER", "awq_parts", "gptq_parts"),
    "hurray_decl.convert.model_quantize": ("quantize_tensor", "read_model"),
    "hurray_decl.convert.safetensors": ("open_safetensors", "write_safetensors"),
})
"""The converters' names, imported on first use (the TYPE_CHECKING imports at the end name the same)."""

__all__ = ["BlockParts", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attribute = _LAZY[name]
        return getattr(import_module(module), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    from hurray_decl.convert.checkpoints import read_checkpoint as read_checkpoint
    from hurray_decl.convert.gguf import GGUF_BLOCK as GGUF_BLOCK, gguf_parts as gguf_parts
    from hurray_decl.convert.group import AWQ_ORDER as AWQ_ORDER, awq_parts as awq_parts, gptq_parts as gptq_parts
    from hurray_decl.convert.model_quantize import quantize_tensor as quantize_tensor, read_model as read_model
    from hurray_decl.convert.safetensors import (
        open_safetensors as open_safetensors,
        write_safetensors as write_safetensors,
    )
