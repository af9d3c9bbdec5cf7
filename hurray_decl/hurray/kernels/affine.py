"""The arithmetic the affine schemes share when they quantize: calibration of scales and
zero points from each group's range, codes ``round(x / s) + z``, scales cast up to their type,
and per-block values in the schemes' block order."""

from __future__ import annotations

from typing import Any

from hurray_decl.errors import RuleViolation
from hurray_decl.hurray.kernels.plan import Geometry
from hurray_decl.hurray.tables import storage
from hurray_decl.lazy_modules import numpy as np


def block_order(per_block: np.ndarray) -> np.ndarray:
    """(A, nb, B) per-block values in the scheme's block order b = (a * B + i_after) * nb + j."""
    return np.ascontiguousarray(per_block.transpose(0, 2, 1)).ravel()


def by_block_row(block_values: np.ndarray, geometry: Geometry) -> np.ndarray:
    """Per-block values (block order) rearranged as (A * nb, 1, B): one row per block row."""
    g = geometry
    return np.ascontiguousarray(
        np.asarray(block_values).reshape(g.before, g.after, g.blocks_per_axis).transpose(0, 2, 1)
    ).reshape(g.block_rows, 1, g.after)


def integer_range(storage_name: str) -> tuple[int, int]:
    bounds = storage.element(storage_name).int_range
    if bounds is None:
        raise ValueError(f"{storage_name} is not an integer type")
    return bounds


def refuse_unsigned_negatives(minimum: Any, storage_name: str, symmetric: bool) -> None:
    """HQ-ZP-02: symmetric codes of an unsigned type cannot hold a negative minimum."""
    qmin, _ = integer_range(storage_name)
    if symmetric and qmin == 0 and np.nanmin(minimum, initial=0.0) < 0:
        raise RuleViolation(
            "HQ-ZP-02", "symmetric quantization subtracts no zero point, so unsigned codes cannot hold "
            "negative values; use a signed storage type or symmetric=False",
            path="symmetric", actual=f"{storage_name}, minimum {float(np.nanmin(minimum))!r}",
            expected="signed storage")


def affine_calibration(low: np.ndarray, high: np.ndarray, storage_name: str, symmetric: bool,
                       scale_dtype: Any = "float32") -> tuple[np.ndarray, np.ndarray]:
    """Scales and zero points from each group's minimum and maximum.

    Symmetric: ``s = max|x| / qmax``, ``z = 0``. Asymmetric: the range [min(x, 0), max(x, 0)]
    spread over ``qmax - qmin - 1`` steps, ``z = qmin - floor(lo / s)``: one spare step keeps
    every code of the group inside the storage range whatever the rounding. Scales are cast to
    the scale type first (rounding up, :func:`cast_up`) and the codes are computed with the cast
    scale; an all-zero group gets scale 1. Computed in float64 whatever the input's type; the
    minima and maxima are finite (the quantizer refuses NaN and infinities first, HQ-PT-03).
    """
    qmin, qmax = integer_range(storage_name)
    low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    refuse_unsigned_negatives(low, storage_name, symmetric)
    low = np.minimum(low, 0.0)
    high = np.maximum(high, 0.0)
    if symmetric:
        span = np.maximum(-low, high) / qmax
    else:
        span = (high - low) / (qmax - qmin - 1)
    scales = cast_up(np.where(span > 0, span, 1.0), scale_dtype)
    if symmetric:
        return scales, np.zeros(scales.shape, dtype=np.int64)
    zero_points = qmin - np.floor(low / np.asarray(scales, dtype=np.float64))
    return scales, np.clip(zero_points, qmin, qmax).astype(np.int64)


def code_type(storage_name: str) -> np.dtype:
    """The NumPy integer type of an integer storage type's codes (int8 / uint8 up to 8 bits)."""
    qmin, _ = integer_range(storage_name)
    return np.dtype(f"{'i' if qmin < 0 else 'u'}{max(1, storage.element(storage_name).bits // 8)}")


def affine_codes(values: np.ndarray, scales: np.ndarray, zero_points: np.ndarray | None,
                 storage_name: str) -> np.ndarray:
    """Codes ``round(x / s) + z`` (half to even) clipped to the storage range, as integral
    floats (:class:`Codes` converts them as it packs); ``scales`` and ``zero_points`` broadcast
    over ``values``, None for a symmetric group (``|x| / s <= qmax`` by calibration: nothing to clip).

    The quotient is float64's, computed in float32 when that gives the same integer: ``x``
    float32, ``s`` float16 or bfloat16, codes of at most 8 bits. Rounding is monotonic and
    half-integers are float32 values, so a float32 quotient ``q`` rounds differently only if it
    lands on ``n + 1/2`` while the exact one does not. With ``s`` of at most 11 significant bits
    and ``|q| < 2^12``, ``x - (n + 1/2) s`` is a multiple of ``ulp(x) >= 2^(e(q) + e(s) - 23)``,
    so unless zero the exact quotient is more than ``2^(e(q) - 24)``, half an ulp of ``q``, away
    from ``n + 1/2``: every rounding, ties included, is the float64 one."""
    qmin, qmax = integer_range(storage_name)
    scales = np.asarray(scales)
    narrow = values.dtype == np.float32 and scales.dtype.itemsize == 2 and storage.element(storage_name).bits <= 8
    scales = scales.astype(np.float32 if narrow else np.float64)
    if scales.ndim == 4 and scales.shape[2:] == (1, 1):  # one scale per block of one lane:
        scales = np.repeat(scales, values.shape[2], axis=2)  # a contiguous divide (a broadcast one loops per block)
    q: np.ndarray = np.divide(values, scales)
    np.rint(q, out=q)
    if zero_points is not None:
        q += np.asarray(zero_points).astype(q.dtype)
        np.clip(q, qmin, qmax, out=q)
    return q


def cast_up(values: np.ndarray, dtype: Any) -> np.ndarray:
    """Positive ``values`` in ``dtype`` (float16, bfloat16, float32), rounded up, never down.

    A scale rounded down could push the extreme value of its group one code past the storage
    range; rounding up keeps every code inside it. Past the type's range: infinity (which the
    scale rules refuse, HQ-PB-12), without NumPy's overflow warning.
    """
    wanted = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        cast = wanted.astype(dtype)
    widened = cast.astype(np.float32) if cast.dtype.itemsize == 2 else cast  # exact; NumPy widens 16-bit
    low = widened.astype(np.float64) < wanted  # floats to float32 several times faster than to float64
    if low.any():
        bits = cast.view(np.dtype(f"u{cast.dtype.itemsize}"))
        cast = np.where(low, (bits + 1).view(cast.dtype), cast)
    return cast


def padded_codes(codes: np.ndarray, geometry: Geometry) -> np.ndarray:
    """Logical codes in stored order, each partial final block padded with code 0 (HQ-PB-18)."""
    g = geometry
    x = np.asarray(codes).reshape(g.before, g.extent, g.after)
    if g.padded == g.extent:
        return x.ravel()
    stored = np.zeros((g.before, g.padded, g.after), dtype=x.dtype)
    stored[:, : g.extent] = x
    return stored.ravel()
