"""Affine blocks: ``code = round_half_even(clip((x - offset) / scale + zero_point))``.

The value is computed as the original's x86-64 build does (OD-02): each step in 80-bit
extended precision, clamped, rounded to double; the round half to even of DIGEST.md § 8.2 then
runs on that double (``floor``, fraction, parity), independently of any FPU mode. Decoding is
``(code - zero_point) * scale + offset`` in double.
"""

from __future__ import annotations

import numpy as np

from ..extended import affine_values
from ..packing import pack_bits, sign_extend, unpack_bits

__all__ = ["encode", "decode", "calibrate", "affine_codes", "code_range", "nearest_even"]


def code_range(layout) -> tuple[int, int]:
    """lo..hi of an affine code: signed -2^(b-1)..2^(b-1)-1, unsigned 0..2^b-1 (OL-NUM-12)."""
    bits = int(layout.bits)
    if int(layout.signed_codes):
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def nearest_even(v: np.ndarray) -> np.ndarray:
    """The original's NearestEven on doubles: keep ``floor(v)`` when the fraction is below one
    half, or exactly one half with an even floor; otherwise ``floor(v) + 1`` (OL-NUM-13)."""
    f = np.floor(v)
    fr = v - f
    up = (fr > 0.5) | ((fr == 0.5) & (np.remainder(f, 2) == 1))
    return (f + up).astype(np.int64)


def affine_codes(values: np.ndarray, scale: np.ndarray, zero_point: np.ndarray,
                 offset: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Signed integer codes [blocks, count] for the values (OL-NUM-12, OL-NUM-13)."""
    return nearest_even(affine_values(values, offset, scale, zero_point, lo, hi))


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
