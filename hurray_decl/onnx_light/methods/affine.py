"""Affine blocks: ``code = round_half_even(clip((x - offset) / scale + zero_point))``.

The value is computed as the original's x86-64 build does (OD-02): each step in 80-bit
extended precision, clamped, rounded to double; the round half to even of DIGEST.md § 8.2 then
runs on that double (``floor``, fraction, parity), independently of any FPU mode. Decoding is
``(code - zero_point) * scale + offset`` in double.
"""

from __future__ import annotations

import numpy as np

from hurray_decl.onnx_light.extended import affine_values
from hurray_decl.onnx_light.packing import check_padding, decode_bytes, pack_bits, sign_extend, unpack_bits

__all__ = ["affine_codes", "calibrate", "code_range", "decode", "encode", "magnitude", "nearest_even"]


def code_range(layout) -> tuple[int, int]:
    """lo..hi of an affine code: signed -2^(b-1)..2^(b-1)-1, unsigned 0..2^b-1 (OL-NUM-12)."""
    bits = int(layout.bits)
    if int(layout.signed_codes):
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def nearest_even(v: np.ndarray) -> np.ndarray:
    """The original's NearestEven on doubles (OL-NUM-13): keep ``floor(v)`` when the fraction is
    below one half, or exactly one half with an even floor; otherwise ``floor(v) + 1``.

    ``v - floor(v)`` is exact for every double, so this is round half to even on the double,
    which ``numpy.rint`` computes (in the default rounding mode, which NumPy never changes).
    """
    return np.rint(v).astype(np.int32)


def affine_codes(values: np.ndarray, scale: np.ndarray, zero_point: np.ndarray,
                 offset: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Signed integer codes [blocks, count] for the values (OL-NUM-12, OL-NUM-13)."""
    return nearest_even(affine_values(values, offset, scale, zero_point, lo, hi))


_CHUNK = 1 << 17   # values encoded at once: a chunk's temporaries stay in cache


def encode(values: np.ndarray, run, path: str) -> np.ndarray:
    layout = run.layout
    lo, hi = code_range(layout)
    bits = int(layout.bits)
    blocks, count = values.shape
    out = np.empty((blocks, layout.code_bytes), dtype=np.uint8)
    step = max(1, _CHUNK // max(1, count))
    for j in range(0, blocks, step):
        sl = slice(j, j + step)
        codes = affine_codes(values[sl], run.scale[sl], run.zero_point[sl], run.offset[sl], lo, hi)
        codes &= (1 << bits) - 1
        out[sl] = pack_bits(codes, bits)
    return out


def decode(data: np.ndarray, run, path: str) -> np.ndarray:
    layout = run.layout
    bits = int(layout.bits)
    count = int(layout.count)
    signed = bool(int(layout.signed_codes))
    if 8 % bits == 0:
        # Whole bytes hold whole codes: one table lookup per byte gives its codes as doubles.
        check_padding(data, count, bits, path)
        values = decode_bytes(data, count, bits, signed)
    else:
        codes = unpack_bits(data, count, bits, path)
        if signed:
            codes = sign_extend(codes, bits)
        values = codes.astype(np.float64)
    if run.zero_point.any():
        values -= run.zero_point[:, None]
    values *= run.scale[:, None]
    if run.offset.any():   # + 0.0 changes nothing here: the scale is positive, so no -0.0 arises
        values += run.offset[:, None]
    return values


def magnitude(run) -> float:
    """An upper bound of |(code - zero_point) * scale + offset| over every code of the run."""
    lo, hi = code_range(run.layout)
    if not run.blocks:
        return 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        span = max(hi - float(run.zero_point.min()), float(run.zero_point.max()) - lo)
        return (span * float(np.abs(run.scale).max()) + float(np.abs(run.offset).max())) * (1 + 2.0**-40)


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
