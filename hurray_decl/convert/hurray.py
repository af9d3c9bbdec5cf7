"""GGUF, GPTQ and AWQ weights as Hurray per-block affine tensors, bit for bit or refused.

Each function splits its source into :class:`~hurray_decl.convert.parts.BlockParts`
(:mod:`.gguf`, :mod:`.group`) and builds the tensor with :func:`hurray_decl.tensor_numerics.from_block_parts`,
which checks it by the same rules as any input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ..tensor_numerics import from_block_parts
from ..errors import ArgumentError
from ..tensor import TensorDescriptor
from .gguf import gguf_parts, read_gguf
from .group import awq_parts, gptq_parts

__all__ = ["from_gguf", "from_gguf_file", "from_gptq", "from_awq"]


def from_gguf(raw: Any, ggml_type: Any, shape: Sequence[int]) -> tuple[TensorDescriptor, list[bytes]]:
    """GGUF Q4_0 / Q4_1 / Q8_0 blocks (blocks along the last axis of ``shape``) as per-block affine."""
    return from_block_parts(gguf_parts(raw, ggml_type, shape))


def from_gguf_file(path: str | Path, tensor_name: str) -> tuple[TensorDescriptor, list[bytes]]:
    """One tensor of a ``.gguf`` file (read with the ``gguf`` package) as per-block affine.

    A name the file does not hold is an :class:`~hurray_decl.errors.ArgumentError` listing the
    names it does hold.
    """
    tensors = read_gguf(path)
    for tensor in tensors:
        if tensor.name == tensor_name:
            return from_gguf(tensor.data, tensor.type_name, tensor.shape)
    names = [t.name for t in tensors]
    shown = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
    raise ArgumentError("tensor_name", f"{path} has no tensor named {tensor_name!r}; it holds: {shown or 'none'}",
                        actual=tensor_name)


def from_gptq(qweight: Any, qzeros: Any, scales: Any, *, bits: int = 4, group_size: int = 128,
              g_idx: Any = None) -> tuple[TensorDescriptor, list[bytes]]:
    """A GPTQ linear weight (in_features, out_features) as per-block affine along axis 0."""
    return from_block_parts(gptq_parts(qweight, qzeros, scales, bits=bits, group_size=group_size, g_idx=g_idx))


def from_awq(qweight: Any, qzeros: Any, scales: Any, *, group_size: int = 128) -> tuple[TensorDescriptor, list[bytes]]:
    """An AWQ (GEMM packing) linear weight (in_features, out_features) as per-block affine along axis 0."""
    return from_block_parts(awq_parts(qweight, qzeros, scales, group_size=group_size))
