"""Affine blocks: ``code = round_half_even(clip((x - offset) / scale + zero_point))``.

Decoding is ``(code - zero_point) * scale + offset`` in double (DIGEST.md § 8.2). The code is
computed in float64; where float64 lands within a few ulps of a half-way point, the code is
re-evaluated exactly with rational arithmetic (OD-02), so rounding never depends on the FPU
rounding mode or on float64 error near a tie.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..numerics import two_product, two_sum
from ..packing import pack_bits, sign_extend, unpack_bits

__all__ = ["encode", "decode", "calibrate", "affine_codes", "code_range"]

_NEAR = 2.0**-40  # relative width of the band re-evaluated exactly around a half-way point


def code_range(layout) -> tuple[int, int]:
    """lo..hi of an affine code: signed -2^(b-1)..2^(b-1)-1, unsigned 0..2^b-1 (OL-NUM-12)."""
    bits = int(layout.bits)
    if int(layout.signed_codes):
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def _exact_code(x: float, offset: float, scale: float, zero_point: float, lo: int, hi: int) -> int:
    v = (Fraction(x) - Fraction(offset)) / Fraction(scale) + Fraction(zero_point)
    v = min(max(v, Fraction(lo)), Fraction(hi))
    f = v.numerator // v.denominator
    fr = v - f
    if fr < Fraction(1, 2) or (fr == Fraction(1, 2) and f % 2 == 0):
        return f
    return f + 1


def _exact_steps(values, scale, zero_point, offset) -> np.ndarray:
    """Where float64 computed (x - offset) / scale + zero_point without any rounding (1-D)."""
    centred, e1 = two_sum(values, -offset)
    q = centred / scale
    p, e2 = two_product(q, scale)
    _, e3 = two_sum(q, zero_point)
    return (e1 == 0) & (p == centred) & (e2 == 0) & (e3 == 0)


def affine_codes(values: np.ndarray, scale: np.ndarray, zero_point: np.ndarray,
                 offset: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Signed integer codes [blocks, count] for the values (OL-NUM-12, OL-NUM-13)."""
    with np.errstate(over="ignore", invalid="ignore"):
        centred = values - offset[:, None]
        v = centred / scale[:, None] + zero_point[:, None]
        v = np.clip(v, lo, hi)
        f = np.floor(v)
        fr = v - f
        odd = np.remainder(f, 2) == 1
        codes = f + ((fr > 0.5) | ((fr == 0.5) & odd))
        magnitude = np.abs(centred) / scale[:, None] + np.abs(zero_point)[:, None] + 1.0
        near = (np.abs(fr - 0.5) <= magnitude * _NEAR) & (v > lo) & (v < hi)
        js, ks = np.nonzero(near)
        exact = _exact_steps(values[js, ks], scale[js], zero_point[js], offset[js])
    for j, k in zip(js[~exact], ks[~exact]):
        codes[j, k] = _exact_code(float(values[j, k]), float(offset[j]), float(scale[j]),
                                  float(zero_point[j]), lo, hi)
    return codes.astype(np.int64)


def encode(values: np.ndarray, run, path: str) -> np.ndarray:
    lo, hi = code_range(run.layout)
    codes = affine_codes(values, run.scale, run.zero_point, run.offset, lo, hi)
    bits = int(run.layout.bits)
    return pack_bits((codes & ((1 << bits) - 1)).astype(np.uint32), bits)


def decode(data: np.ndarray, run, path: str) -> np.ndarray:
    layout = run.layout
    bits = int(layout.bits)
    codes = unpack_bits(data, int(layout.count), bits, path)
    if int(layout.signed_codes):
        codes = sign_extend(codes, bits)
    values = codes.astype(np.float64)
    values -= run.zero_point[:, None]
    values *= run.scale[:, None]
    values += run.offset[:, None]
    return values


def calibrate(values: np.ndarray, run, path: str) -> np.ndarray:
    """Largest c / high for c > 0 and c / low for c < 0, with c = x - offset (OL-CAL-14)."""
    lo, hi = code_range(run.layout)
    with np.errstate(over="ignore", invalid="ignore"):
        centred = values - run.offset[:, None]
    return ratio_scales(centred, lo - run.zero_point, hi - run.zero_point)


def ratio_scales(centred: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The calibration rule shared by affine and scalar-codebook blocks (OL-CAL-14 .. -16)."""
    low = np.broadcast_to(np.asarray(low, dtype=np.float64), centred.shape[:1])[:, None]
    high = np.broadcast_to(np.asarray(high, dtype=np.float64), centred.shape[:1])[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        up = np.where((centred > 0) & (high > 0), centred / high, 0.0)
        down = np.where((centred < 0) & (low < 0), centred / low, 0.0)
    scale = np.maximum(up, down).max(axis=1, initial=0.0)
    return np.where(scale == 0, 1.0, scale)
