"""Converters between Hurray per-block affine, GGUF, GPTQ/AWQ, ORT MatMulNBits and onnx-light.

One module per conversion, each over the public APIs of the layers below:

* :mod:`.parts`: :class:`BlockParts`, the checked meeting point of the per-block converters;
* :mod:`.gguf`: GGUF block types as sub-blocks, and their exact per-block affine form;
* :mod:`.group`: GPTQ and AWQ packed linear weights;
* :mod:`.hurray`: those sources as Hurray tensors (``from_gguf``, ``from_gptq``, ...);
* :mod:`.ort`: per-block affine tensors as ORT MatMulNBits values and runnable models;
* :mod:`.onnx_light`: GGUF tensors as onnx-light encoded values, exactly;
* :mod:`.tensors`: one tensor between any two formats, as the ``convert`` command runs it.

Only :class:`BlockParts` is imported with the package; the converters load on first use.
"""

from importlib import import_module
from typing import Any

from hurray_decl.convert.parts import BlockParts

__all__ = ["BlockParts", "GGUF_BLOCK", "AWQ_ORDER", "gguf_parts", "gptq_parts", "awq_parts"]

_LAZY = {"GGUF_BLOCK": "gguf", "gguf_parts": "gguf", "AWQ_ORDER": "group", "gptq_parts": "group",
         "awq_parts": "group"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
