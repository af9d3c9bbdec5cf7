"""Converters from other quantized formats to Hurray per-block affine (0x03).

* GGUF ``Q4_0``, ``Q8_0`` and ``Q4_1`` blocks, as raw block bytes laid out by the ``gguf``
  package or read from a ``.gguf`` file. Blocks run along the last (contiguous) axis.
* GPTQ and AWQ group-quantized linear weights without activation-order permutation.

Every converter reproduces the source's dequantized values bit for bit, or refuses: Q4_1
blocks whose offset ``m`` is not ``-z * d`` for an integer ``z`` (per-block affine has no
fractional zero point), K-quants (two-level scales, HD-05), and GPTQ activation order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .errors import UnsupportedError

GGUF_BLOCK = 32
"""Elements per block of Q4_0, Q4_1 and Q8_0."""

_GGUF_LAYOUTS: dict[str, np.dtype] = {
    "Q4_0": np.dtype([("d", "<f2"), ("qs", "u1", (16,))]),  # 2 + 16 = 18 bytes
    "Q4_1": np.dtype([("d", "<f2"), ("m", "<f2"), ("qs", "u1", (16,))]),  # 2 + 2 + 16 = 20 bytes
    "Q8_0": np.dtype([("d", "<f2"), ("qs", "i1", (32,))]),  # 2 + 32 = 34 bytes
}
"""The block record of each supported GGUF type, as a NumPy structured dtype."""


@dataclass(frozen=True)
class BlockParts:
    """A per-block affine tensor in pieces: codes in logical order, one scale (and zero point) per block."""

    codes: np.ndarray
    storage: str
    axis: int
    block_size: int
    scales: np.ndarray
    scale_type: str
    zero_points: np.ndarray | None


def _gguf_name(ggml_type: Any) -> str:
    name = getattr(ggml_type, "name", ggml_type)
    if not isinstance(name, str):
        raise UnsupportedError("HQ-PB-01", f"unknown GGML type {ggml_type!r}", path="ggml_type", actual=ggml_type)
    if name not in _GGUF_LAYOUTS:
        why = ("K-quants use two-level scales, which per-block affine cannot express (0x60-0x7F is "
               "reserved for them)" if name.endswith("_K") else "only Q4_0, Q4_1 and Q8_0 map onto per-block affine")
        raise UnsupportedError("HQ-PB-01", f"GGML type {name} cannot be converted: {why}", path="ggml_type",
                               actual=name, expected="Q4_0, Q4_1 or Q8_0")
    return name


def gguf_parts(raw: Any, ggml_type: Any, shape: Sequence[int]) -> BlockParts:
    """Split GGUF blocks of a tensor of ``shape`` (NumPy order, blocks along the last axis)."""
    name = _gguf_name(ggml_type)
    shape = tuple(int(n) for n in shape)
    layout = _GGUF_LAYOUTS[name]
    count = int(np.prod(shape))
    if not shape or shape[-1] % GGUF_BLOCK:
        raise UnsupportedError("HQ-PB-05", f"GGUF rows hold whole blocks of {GGUF_BLOCK}", path="shape",
                               actual=shape, expected=f"a last dimension that is a multiple of {GGUF_BLOCK}")
    data = np.frombuffer(memoryview(raw).cast("B"), dtype=np.uint8)
    if data.size != count // GGUF_BLOCK * layout.itemsize:
        raise UnsupportedError("HQ-BUF-09", f"{name} data of {count} elements is {count // GGUF_BLOCK} blocks of "
                               f"{layout.itemsize} bytes", path="raw", actual=data.size,
                               expected=count // GGUF_BLOCK * layout.itemsize)
    blocks = data.view(layout)
    scales = blocks["d"]
    if name == "Q8_0":
        return BlockParts(blocks["qs"].reshape(shape).astype(np.int64), "int8", len(shape) - 1, GGUF_BLOCK,
                          scales, "float16", None)
    nibbles = np.concatenate([blocks["qs"] & 0x0F, blocks["qs"] >> 4], axis=1).astype(np.int64)
    if name == "Q4_0":  # x = d * (q - 8): int4 codes q - 8, symmetric
        return BlockParts((nibbles - 8).reshape(shape), "int4", len(shape) - 1, GGUF_BLOCK, scales, "float16", None)
    # Q4_1: x = d * q + m, which is d * (q - z) exactly when m = -z * d with z in 0..15.
    d = scales.astype(np.float32)
    m = blocks["m"].astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(d != 0, np.rint(-m / d), 0)
    exact = (z >= 0) & (z <= 15) & ((-z.astype(np.float32) * d) == m)
    if not exact.all():
        first = int(np.flatnonzero(~exact)[0])
        raise UnsupportedError(
            "HQ-PB-22",
            f"Q4_1 block {first}: its offset m = {float(m[first])!r} is not -z * d for an integer z in 0..15 "
            f"(d = {float(d[first])!r}); per-block affine has integer zero points, so this block has no exact form",
            path=f"raw -> blocks[{first}] -> m", actual=float(m[first]), expected="-z * d, z an integer in 0..15")
    return BlockParts(nibbles.reshape(shape), "uint4", len(shape) - 1, GGUF_BLOCK, scales, "float16",
                      z.astype(np.int64))


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
    in_features, out_features = q.shape
    if group_size <= 0 or group_size & (group_size - 1) or in_features % group_size:
        raise UnsupportedError("HQ-PB-03", "groups must be a power of two dividing in_features", path="group_size",
                               actual=group_size, expected=f"a power of two dividing {in_features}")
    storage = _STORAGE_BY_BITS[bits]
    if zeros.max(initial=0) > (1 << bits) - 1:
        storage = "uint8"  # a normalized zero point of 2^bits needs a wider zero-point range
    # Block order: b = output column * groups + group, for blocks along axis 0.
    return BlockParts(q, storage, 0, group_size, np.ascontiguousarray(scales.T).reshape(-1), "float16",
                      np.ascontiguousarray(zeros.T).reshape(-1))


def gptq_parts(qweight: Any, qzeros: Any, scales: Any, *, bits: int = 4, group_size: int = 128,
               g_idx: Any = None) -> BlockParts:
    """GPTQ (v1 packing) to per-block affine, zero points normalized from ``zero - 1`` (HQ-ZP-01).

    ``qweight`` int32 (in * bits / 32, out), ``qzeros`` int32 (groups, out * bits / 32), ``scales``
    float16 (groups, out). An activation-order ``g_idx`` is refused.
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
    return _group_parts(q, stored_zeros + 1, np.asarray(scales, dtype=np.float16), bits, group_size)


def awq_parts(qweight: Any, qzeros: Any, scales: Any, *, group_size: int = 128) -> BlockParts:
    """AWQ (GEMM packing, 4-bit) to per-block affine; AWQ stores the zero point as subtracted."""
    q = _unpack_int32(qweight, 4, 1, AWQ_ORDER)
    zeros = _unpack_int32(qzeros, 4, 1, AWQ_ORDER)
    return _group_parts(q, zeros, np.asarray(scales, dtype=np.float16), 4, group_size)
