"""GGUF tensors as onnx-light encoded values that decode to gguf's float32 values, bit for bit.

onnx-light's affine blocks decode ``(code - zero_point) * scale + offset`` in double, then round
to the logical float32 (OL-NUM-14). Each GGUF sub-block ``S * q (+ O)`` becomes one block of the
profile that holds its codes (:data:`PROFILES`: int4 for Q4_0 and Q4_1, int8 for Q5_0, Q5_1 and
Q8_0, q2_k .. q6_k for the K-quants, whose sub-block scale ``S = d * sc`` and offset ``O = -dmin * m`` are exact
float32 products), with

* ``scale = |S|`` (onnx-light scales are > 0, OL-PLAN-11): a negative ``S`` mirrors the codes
  (``code - zp = -q``), a zero ``S`` gives a block of one value (``O``, or signed zeros coded
  with scale 2^-1074, which rounds to +-0 in float32);
* ``offset = O``. ``S * q`` and ``S * q + O`` are exact in double (at most 52 significant bits
  above 2^-24), so the one rounding left is the double -> float32 one, which is gguf's own
  float32 rounding. Where gguf's zero is -0 (``S < 0``, ``q = 0``, no offset), the offset is
  -2^-1074: it vanishes from every non-zero value and turns the zero into -0.

The codes are then recovered exactly by onnx-light's own encoder from the double values
(``(x - offset) / scale + zp`` is an integer), and the value is declared float32. Every value is
checked against gguf's formula, signed zeros included, before encoding.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_decl.convert.gguf import (
    GGUF_TYPES,
    SubBlocks,
    gguf_type,
    no_gguf_form,
    sub_block_blocks,
    sub_blocks,
    zero_codes,
)
from hurray_decl.convert.portable import affine_blocks
from hurray_decl.errors import ArgumentError, RuleViolation
from hurray_decl.onnx_light import (
    PROFILES as PROFILE_DEFAULTS,
    EncodedValueProto,
    QuantizationFormat,
    TensorProto,
    make_quantization_plan,
    make_quantization_type,
    quantize_with_type,
)
from hurray_decl.onnx_light.codec import dequantize_value

__all__ = ["PROFILES", "gguf_to_onnx_light", "onnx_light_to_gguf", "sub_blocks_to_onnx_light"]

F = QuantizationFormat
PROFILES = {"Q4_0": F.INT4, "Q4_1": F.INT4, "Q5_0": F.INT8, "Q5_1": F.INT8, "Q8_0": F.INT8, "Q2_K": F.Q2_K,
            "Q3_K": F.Q3_K, "Q4_K": F.Q4_K, "Q5_K": F.Q5_K, "Q6_K": F.Q6_K}
"""The onnx-light profile (signed affine codes at least as wide as the type's) holding each GGML type."""

TINY = np.float64(2.0 ** -1074)
"""The smallest positive double: times a small integer it rounds to a signed float32 zero."""


def _parameters(sb: SubBlocks) -> tuple[np.ndarray, ...]:
    """Per-block (scale, zero point, offset) and per-element codes, all exact."""
    row = sb.type
    lo = -(1 << (PROFILE_DEFAULTS[PROFILES[row.name]].bits - 1))  # the profile's smallest signed code
    for name, values, code in (("S", sb.scales, "OL-PLAN-10"), ("O", sb.offsets, "OL-PLAN-13")):
        # checked in float32, before the cast: a signalling NaN cast to float64 raises NumPy's warning
        if values is not None and not np.isfinite(values).all():
            j = int(np.flatnonzero(~np.isfinite(values))[0])
            raise RuleViolation(code, f"{row.name} sub-block {j} has a non-finite {name} (an infinite or NaN d); "
                                "onnx-light parameters are finite", path=f"raw -> sub_blocks[{j}] -> {name}",
                                actual=repr(float(values[j])), expected="finite")
    S = sb.scales.astype(np.float64)
    O = np.zeros_like(S) if sb.offsets is None else sb.offsets.astype(np.float64)  # noqa: E741 - GGUF's name, beside S
    positive, negative = S > 0, S < 0
    constant = ~(positive | negative)
    q = sb.codes
    reference = sb.reference().reshape(q.shape)
    zp = np.where(positive, lo - row.low, np.where(negative, lo + row.high, 0)).astype(np.int64)
    codes = np.where(positive[:, None], q + (lo - row.low), (lo + row.high) - q)
    # A zero S: the block is O everywhere (code = zp, scale 1), or signed zeros (code -1 for -0, scale 2^-1074).
    offset_only = constant & (O != 0)
    codes[constant] = np.where(offset_only[constant][:, None], 0, -np.signbit(reference[constant]).astype(np.int64))
    scale = np.where(constant, np.where(offset_only, 1.0, TINY), np.abs(S))
    # gguf's value at q = 0 is -0 when S < 0 and nothing non-zero is added (O absent or -0); an
    # offset -0 otherwise is kept as itself (it changes no value, and gives the block's m back).
    negative_zero = negative & (O == 0) & (np.signbit(O) | (sb.offsets is None))
    offset = np.where(O != 0, O, np.where(negative_zero, -TINY, np.where(np.signbit(O), -0.0, 0.0)))
    return codes, scale, zp.astype(np.float64), offset, reference


def sub_blocks_to_onnx_light(sb: SubBlocks) -> EncodedValueProto:
    """The onnx-light value (logical float32, ``sb.shape``) of GGUF sub-blocks."""
    codes, scale, zp, offset, reference = _parameters(sb)
    exact = (codes - zp[:, None]) * scale[:, None] + offset[:, None]   # the double decode, OL-NUM-14
    same = exact.astype(np.float32).view(np.uint32) == reference.view(np.uint32)
    if not same.all():  # the derivation in the module docstring says this cannot happen
        j = int(np.flatnonzero(~same.ravel())[0])
        raise RuleViolation("OL-NUM-14", f"{sb.type.name} element {j} has no exact onnx-light form",
                            path=f"raw -> elements[{j}]", actual=float(exact.ravel()[j]),
                            expected=float(reference.ravel()[j]))
    count = int(exact.size)
    plan = make_quantization_plan(PROFILES[sb.type.name], count, block_size=sb.type.sub_block)
    value = quantize_with_type(exact.reshape(sb.shape), make_quantization_type(plan), scales=scale, zero_points=zp,
                               offsets=offset)
    value.logical_type.tensor_type.elem_type = TensorProto.FLOAT  # the doubles round to gguf's float32
    return value


def gguf_to_onnx_light(raw: Any, ggml_type: Any, shape: Sequence[int]) -> EncodedValueProto:
    """GGUF blocks (:data:`PROFILES`' types; blocks along the last axis) as an onnx-light value."""
    return sub_blocks_to_onnx_light(sub_blocks(raw, ggml_type, shape))


def onnx_light_to_gguf(value: EncodedValueProto, model: Any = None, ggml_type: str | None = None) -> tuple[str, Any]:
    """An onnx-light affine value as GGUF blocks whose values are its float32 values, bit for bit.

    The inverse of :func:`gguf_to_onnx_light`: each block of ``(code - zp) * scale + offset`` is a
    sub-block ``S * q (+ O)`` with ``S = scale`` and ``q = code - zp``, or ``S = -scale`` and
    ``q = zp - code`` when only that is in the type's code range; a block whose codes all equal its
    zero point, or whose scale is 2^-1074, has ``S = 0``; an offset of +-2^-1074 is 0. The GGML
    type is ``ggml_type`` (the type the tensor came from, when recorded), else the first of the
    profile's types (:data:`PROFILES`) that holds every value. Returns the type and the bytes.
    """
    blocks = affine_blocks(value, model)
    names = [ggml_type] if ggml_type else [n for n, f in PROFILES.items() if f == blocks.format]
    if not names:
        raise no_gguf_form("GGUF", f"{blocks.format.wire_name} values have no GGML type; the converted profiles are "
                           f"{', '.join(sorted({f.wire_name for f in PROFILES.values()}))}", "value -> struct_type",
                           blocks.format.wire_name)
    target = np.asarray(dequantize_value(value, model, np.float32), dtype=np.float32).reshape(-1)
    for i, name in enumerate(names):
        try:
            return name, _blocks(gguf_type(name), blocks, target)
        except ArgumentError:
            if i == len(names) - 1:  # the last candidate's reason is the one reported
                raise
    raise no_gguf_form("GGUF", "no candidate type", "ggml_type")  # not reached: names is not empty


def _blocks(row, blocks, target: np.ndarray) -> Any:
    if row.name not in GGUF_TYPES or (blocks.counts != row.sub_block).any():
        raise no_gguf_form(row.name, f"its sub-blocks are {row.sub_block} elements", "value -> blocks",
                           blocks.counts[:4].tolist(), row.sub_block)
    codes = blocks.codes.reshape(-1, row.sub_block)
    zp = blocks.zero_points.astype(np.int64)
    if (zp != blocks.zero_points).any():
        raise no_gguf_form(row.name, "a zero point is not an integer", "value -> zero_points")
    q = codes - zp[:, None]
    S = blocks.scales.astype(np.float32)
    # gguf_to_onnx_light's zero points say the sign of S; any other value is read as S > 0 where it can be
    lo = -(1 << (PROFILE_DEFAULTS[blocks.format].bits - 1))
    out = (zp == lo + row.high) | ((q < row.low) | (q > row.high)).any(axis=1)
    q[out], S[out] = -q[out], -S[out]
    zero = (blocks.scales == TINY) | np.all(q == 0, axis=1)
    S[zero] = 0
    O = np.where(np.abs(blocks.offsets) == TINY, np.copysign(0.0, blocks.offsets), blocks.offsets)  # noqa: E741
    O32 = O.astype(np.float32)
    if (O32.astype(np.float64) != O).any():
        raise no_gguf_form(row.name, "an offset is not a float32 value", "value -> offsets")
    q, S = zero_codes(row, q, S, O32 if row.has_offset else None, target.reshape(q.shape))
    return sub_block_blocks(row, blocks.shape, q, S, O32, target)
