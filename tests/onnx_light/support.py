"""Helpers shared by the onnx-light tests: plan editing, hex, encode-decode in one call."""

from __future__ import annotations

import numpy as np

from hurray_decl.onnx_light import (
    EncodedValueProto,
    QuantizationPlan,
    decode_plan,
    dequantize_value,
    quantize_array,
)
from hurray_decl.onnx_light.methods.cast import CAST_DTYPES


def hx(text: str) -> bytes:
    """Bytes from a hex string with optional spaces, e.g. ``"88 00 62 07"``."""
    return bytes.fromhex(text.replace(" ", ""))


def D(value: float) -> bytes:
    """A DOUBLE in little-endian bytes."""
    return np.float64(value).tobytes()


def edit_blocks(plan: QuantizationPlan, run_index: int = 0, **fields) -> QuantizationPlan:
    """Set block fields (scale=..., or scale=[per-block list]) on one run, in place."""
    run = plan.run(run_index)
    blocks = run.blocks
    for name, value in fields.items():
        values = value if isinstance(value, (list, tuple)) and name != "codebook" else [value] * len(blocks)
        for block, v in zip(blocks, values):
            setattr(block, name, list(v) if name == "codebook" else v)
    run.blocks = blocks
    plan.set_run(run_index, run)
    return plan


def edit_layout(plan: QuantizationPlan, run_index: int = 0, **fields) -> QuantizationPlan:
    run = plan.run(run_index)
    for name, value in fields.items():
        setattr(run.layout, name, value)
    plan.set_run(run_index, run)
    return plan


def roundtrip(array: np.ndarray, plan: QuantizationPlan) -> tuple[EncodedValueProto, np.ndarray]:
    """Encode, serialize, parse, decode; also check that re-encoding with the decoded plan
    reproduces the descriptor and raw_data bytes."""
    encoded = quantize_array(array, plan)
    wire = encoded.SerializeToString()
    parsed = EncodedValueProto.FromString(wire)
    decoded = dequantize_value(parsed)
    assert decoded.dtype == np.asarray(array).dtype
    assert decoded.shape == np.asarray(array).shape
    return encoded, decoded


def reencode_matches(encoded: EncodedValueProto) -> bool:
    """Decode a value, rebuild its plan, encode the decoded array again and compare bytes."""
    decoded = dequantize_value(encoded)
    again = quantize_array(decoded, decode_plan(encoded))
    return (again.struct_type.SerializeToString(deterministic=True)
            == encoded.struct_type.SerializeToString(deterministic=True)
            and again.raw_data == encoded.raw_data)


def reference(x: np.ndarray, plan) -> np.ndarray:
    """An independent, element-by-element reference of the portable pipeline."""
    flat = x.astype(np.float64).ravel().copy()
    saved = {i: flat[i] for i in plan.outliers}
    for i in plan.outliers:
        flat[i] = 0.0
    if plan.permutation:
        flat = flat[plan.permutation]
    n = plan.transform_size
    if n:
        flat = (flat.reshape(-1, n) @ np.array(plan.forward).reshape(n, n)).ravel()
    out = []
    position = 0
    for run in plan.runs:
        layout = run.layout
        for block in run.blocks:
            values = flat[position:position + layout.count]
            position += layout.count
            if layout.method == 0:
                lo, hi = ((-(1 << (layout.bits - 1)), (1 << (layout.bits - 1)) - 1) if layout.signed_codes
                          else (0, (1 << layout.bits) - 1))
                codes = np.clip(np.rint((values - block.offset) / block.scale + block.zero_point), lo, hi)
                out.extend((codes - block.zero_point) * block.scale + block.offset)
            elif layout.method == 2:
                stored = (values / block.scale).astype(np.float32).astype(CAST_DTYPES[layout.cast_type])
                out.extend(stored.astype(np.float64) * block.scale)
            else:
                table = np.array(block.codebook).reshape(layout.books, layout.entries, layout.vector_size)
                for start in range(0, layout.count, layout.vector_size):
                    r = values[start:start + layout.vector_size] / block.scale
                    w = r.size
                    total = np.zeros(w)
                    for book in table:
                        distances = [float(np.sum((r - e[:w]) ** 2)) for e in book]
                        pick = distances.index(min(distances))
                        total = total + book[pick][:w]
                        r = r - book[pick][:w]
                    out.extend(total * block.scale)
    result = np.array(out)
    if n:
        result = (result.reshape(-1, n) @ np.array(plan.inverse).reshape(n, n)).ravel()
    if plan.permutation:
        back = np.empty_like(result)
        back[plan.permutation] = result
        result = back
    for i, v in saved.items():
        result[i] = v
    return result.reshape(x.shape)
