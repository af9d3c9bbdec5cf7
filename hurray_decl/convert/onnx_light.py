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

from hurray_decl.convert.gguf import SubBlocks, sub_blocks
from hurray_decl.errors import RuleViolation
from hurray_decl.onnx_light import (
    PROFILES as PROFILE_DEFAULTS,
    EncodedValueProto,
    QuantizationFormat,
    TensorProto,
    make_quantization_plan,
    make_quantization_type,
    quantize_with_type,
)

__all__ = ["PROFILES", "gguf_to_onnx_light", "sub_blocks_to_onnx_light"]

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
    S = sb.scales.astype(np.float64)
    O = np.zeros_like(S) if sb.offsets is None else sb.offsets.astype(np.float64)  # noqa: E741 - GGUF's name, beside S
    for name, values, code in (("S", S, "OL-PLAN-10"), ("O", O, "OL-PLAN-13")):
        if not np.isfinite(values).all():
            j = int(np.flatnonzero(~np.isfinite(values))[0])
            raise RuleViolation(code, f"{row.name} sub-block {j} has a non-finite {name} (an infinite or NaN d); "
                                "onnx-light parameters are finite", path=f"raw -> sub_blocks[{j}] -> {name}",
                                actual=repr(float(values[j])), expected="finite")
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
    # gguf's value at q = 0 is -0 when S < 0 and nothing non-zero is added (O absent or -0).
    negative_zero = negative & (O == 0) & (np.signbit(O) | (sb.offsets is None))
    offset = np.where(O != 0, O, np.where(negative_zero, -TINY, 0.0))
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
