"""GPTQ, AWQ and compressed-tensors group-quantized linear weights as per-block affine parts.

Both store a linear weight as ``(in_features, out_features)`` codes packed into int32 words,
with one scale and one zero point per (group of ``group_size`` inputs, output column): blocks
along axis 0, the grid ``(groups, out_features)``. GPTQ stores ``zero - 1`` (normalized here,
HQ-ZP-01); activation order (a permuting ``g_idx``) is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_decl.convert.parts import BlockParts
from hurray_decl.errors import RuleViolation, UnsupportedError

__all__ = ["AWQ_ORDER", "awq_parts", "compressed_tensors_parts", "gptq_parts"]


def _unpack_int32(packed: np.ndarray, bits: int, axis: int, order: Sequence[int] | None = None) -> np.ndarray:
    """Unpack ``32 / bits`` values per int32 along ``axis`` (value i in bits [i*bits, (i+1)*bits))."""
    per = 32 // bits
    words = np.asarray(packed).astype(np.uint32)
    shifts = np.arange(per, dtype=np.uint32) * bits
    values = (np.expand_dims(words, -1) >> shifts) & np.uint32((1 << bits) - 1)
    if order is not None:  # position p of a word holds logical value order[p]
        values = values[..., np.argsort(order)]
    values = np.moveaxis(values, -1, axis + 1) if axis == 0 else values
    new_shape = list(words.shape)
    new_shape[axis] *= per
    return values.reshape(new_shape).astype(np.int64)


_STORAGE_BY_BITS = {2: "uint2", 4: "uint4", 8: "uint8"}
AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)
"""AWQ packs eight 4-bit values per int32 in this interleaved order."""


def _group_parts(q: np.ndarray, zeros: np.ndarray, scales: np.ndarray, bits: int, group_size: int) -> BlockParts:
    """(in, out) codes with groups of ``group_size`` along the input axis 0."""
    in_features, _ = q.shape
    if group_size <= 0 or group_size & (group_size - 1) or in_features % group_size:
        raise RuleViolation("HQ-PB-03", "groups must be a power of two dividing in_features", path="group_size",
                               actual=group_size, expected=f"a power of two dividing {in_features}")
    storage = _STORAGE_BY_BITS[bits]
    if zeros.max(initial=0) > (1 << bits) - 1:
        storage = "uint8"  # a normalized zero point of 2^bits needs a wider zero-point range
    return BlockParts(q, storage, 0, group_size, scales, "float16", zeros)  # both in the (groups, out) grid


def float16_scales(scales: Any, path: str = "scales") -> np.ndarray:
    """``scales`` as float16, the scale type of GPTQ and AWQ; values float16 does not hold exactly
    (a float32 array rounded on the way) are refused, never rounded silently (HQ-PB-08)."""
    array = np.asarray(scales)
    if array.dtype == np.float16:
        return array
    if array.dtype.kind not in "fiu":
        raise RuleViolation("HQ-PB-08", f"{path} holds {array.dtype} values, not scales", path=path,
                            actual=str(array.dtype), expected="float16 values")
    wide = array.astype(np.float64)
    narrow = array.astype(np.float16)
    if not np.array_equal(narrow.astype(np.float64), wide, equal_nan=True):
        raise RuleViolation("HQ-PB-08", f"{path} holds {array.dtype} scales that float16, the scale type of GPTQ "
                            "and AWQ, does not hold exactly", path=path, actual=str(array.dtype),
                            expected="float16 values")
    return narrow


def gptq_parts(qweight: Any, qzeros: Any, scales: Any, *, bits: int = 4, group_size: int = 128,
               g_idx: Any = None, zero_offset: int = 1) -> BlockParts:
    """GPTQ to per-block affine, zero points normalized from ``zero - 1`` (HQ-ZP-01).

    ``qweight`` int32 (in * bits / 32, out), ``qzeros`` int32 (groups, out * bits / 32), ``scales``
    float16 (groups, out). An activation-order ``g_idx`` is refused. ``zero_offset`` is what the
    format adds to a stored zero: 1 for GPTQ's v1 packing, 0 for ``gptq_v2``.
    """
    if bits not in _STORAGE_BY_BITS:
        raise UnsupportedError("HQ-PB-14", f"{bits}-bit GPTQ has no Hurray storage type", path="bits",
                               actual=bits, expected="2, 4 or 8")
    q = _unpack_int32(qweight, bits, 0)
    stored_zeros = _unpack_int32(qzeros, bits, 1)
    if g_idx is not None:
        expected = np.arange(q.shape[0]) // group_size
        if not np.array_equal(np.asarray(g_idx), expected):
            raise UnsupportedError(
                "HQ-PB-15", "g_idx permutes the input axis (activation order): per-block affine blocks are "
                "contiguous, so such a tensor needs a private scheme (0xF0-0xFE)", path="g_idx",
                actual="a permuted group index", expected="g_idx[i] = i // group_size")
    return _group_parts(q, stored_zeros + zero_offset, float16_scales(scales), bits, group_size)


def awq_parts(qweight: Any, qzeros: Any, scales: Any, *, group_size: int = 128) -> BlockParts:
    """AWQ (GEMM packing, 4-bit) to per-block affine; AWQ stores the zero point as subtracted."""
    q = _unpack_int32(qweight, 4, 1, AWQ_ORDER)
    zeros = _unpack_int32(qzeros, 4, 1, AWQ_ORDER)
    return _group_parts(q, zeros, float16_scales(scales), 4, group_size)


def compressed_tensors_parts(packed: Any, scales: Any, shape: Any, *, bits: int, group_size: int, scale_type: str,
                             zero_points: Any = None, g_idx: Any = None) -> BlockParts:
    """compressed-tensors ``pack-quantized`` (vLLM, llm-compressor) to per-block affine.

    ``weight_packed`` int32 ``(out, ceil(in * bits / 32))``: value i of a word at bits
    ``[i * bits, (i + 1) * bits)``, each the signed code ``q`` plus ``2^(bits-1)``; ``weight_shape``
    ``(out, in)``; ``weight_scale`` ``(out, groups)`` (group strategy: groups of ``group_size``
    inputs, the last one maybe partial), ``(out, 1)`` (channel) or one value (tensor); an
    asymmetric ``weight_zero_point`` the signed zero points, packed the same way along the
    output axis (group, channel) or as they are (tensor). The weight is ``(q - zero) * scale``:
    per-block affine ``int{bits}`` codes of the ``(out, in)`` weight blocked along axis 1. A
    channel or tensor scale is repeated over blocks of the largest power of two dividing ``in``
    (exact: every element keeps its scale). An activation-order ``weight_g_idx`` is refused (HQ-PB-15).
    """
    if bits not in (4, 8):
        raise UnsupportedError("HQ-PB-14", f"pack-quantized holds 4- or 8-bit codes, not {bits}", path="num_bits",
                               actual=bits, expected="4 or 8")
    dims = [int(n) for n in np.asarray(shape).reshape(-1)]
    words = np.asarray(packed)
    if len(dims) != 2 or words.ndim != 2 or words.dtype != np.int32 or words.shape[0] != dims[0] \
            or words.shape[1] != -(-dims[1] * bits // 32) or min(dims) < 1:
        raise RuleViolation("HQ-PB-14", "weight_packed holds ceil(in * bits / 32) int32 words a row of weight_shape",
                            path="weight_packed", actual=f"{list(words.shape)} {words.dtype}",
                            expected=f"[{dims[0] if dims else '?'}, ceil(in * {bits} / 32)] int32 for {dims}")
    out_features, in_features = dims
    offset = 1 << (bits - 1)
    q = _unpack_int32(words, bits, 1)[:, :in_features] - offset
    grid = np.asarray(scales).reshape(out_features, -1) if np.asarray(scales).size != 1 else \
        np.asarray(scales).reshape(1, 1)
    groups = grid.shape[1]
    if grid.shape[0] == out_features and groups > 1:  # group strategy
        if group_size < 1 or -(-in_features // group_size) != groups:
            raise RuleViolation("HQ-PB-15", f"weight_scale's {groups} groups are not groups of {group_size} inputs",
                                path="weight_scale", actual=list(np.asarray(scales).shape),
                                expected=f"[{out_features}, ceil({in_features} / group_size)]")
        block, repeat = group_size, 1
    else:  # channel (one scale a row) or tensor (one scale): repeated over blocks that divide the row
        block = in_features & -in_features
        repeat = in_features // block
        grid = np.broadcast_to(grid, (out_features, 1))
    if g_idx is not None and not np.array_equal(np.asarray(g_idx), np.arange(in_features) // block):
        raise UnsupportedError("HQ-PB-15", "weight_g_idx permutes the input axis (activation order): per-block "
                               "affine blocks are contiguous", path="weight_g_idx",
                               actual="a permuted group index", expected="g_idx[i] = i // group_size")
    zeros = None
    if zero_points is not None:
        stored = np.asarray(zero_points)
        if stored.dtype == np.int32 and stored.ndim == 2:  # packed along the output axis
            zeros = _unpack_int32(stored, bits, 0)[:out_features] - offset
        else:
            zeros = stored.astype(np.int64).reshape(-1, 1) if stored.size == 1 else stored.astype(np.int64)
        zeros = np.broadcast_to(zeros.reshape(-1, zeros.shape[-1]), grid.shape)
        zeros = np.repeat(zeros, repeat, axis=1)
    return BlockParts(q, f"int{bits}", 1, block, np.repeat(grid, repeat, axis=1), scale_type, zeros)
