"""The original's ``long double`` arithmetic (OD-02): x87 80-bit extended, 64-bit significand.

The reference platform is the original's x86-64 Linux build, where every ``long double``
operation rounds its exact result to a 64-bit significand (round to nearest, ties to even) and
the exponent range is wide enough that no operation on doubles overflows or underflows. Three
computations of the codec use it:

* the affine code value ``((x - offset) / scale) + zero_point``, each step rounded, clamped to
  the code range, then rounded to double (:func:`affine_values`);
* transform sums ``sum += v[k] * M[k][j]`` in index order, each product and partial sum
  rounded, the final sum rounded to double (:func:`row_products`), and the inverse check built
  on the same sums (:func:`inverse_deviation_ok`);
* codebook distances ``error += diff * diff`` with ``diff = residual[j] - table[j]``, compared
  strictly so the first entry wins ties (:func:`nearest_entries`).

Two implementations compute the same bits:

* **native**: ``numpy.longdouble`` when it *is* the x87 format (x86 Linux); chunked.
* **emulated**: everywhere else (and on demand). Each rounded value is held as a double-double
  ``hi + lo``, which represents every 64-bit-significand number of the double range exactly.
  An operation forms its exact result as a sum of doubles with error-free transformations
  (TwoSum, Dekker's TwoProduct), tracks an upper bound of whatever it could not keep exactly,
  and rounds to the 64-bit grid with ties to even. An element whose bound reaches a rounding
  boundary, or whose magnitudes leave the range where the transformations are exact, is
  recomputed by the scalar exact model below (rationals rounded to 64 bits at each step); so
  the result never depends on luck near a tie.

``NATIVE`` says which one runs by default; each function takes ``emulate=`` to choose.
Setting the environment variable ``HURRAY_DECL_EXTENDED=emulate`` makes emulation the default.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from fractions import Fraction

import numpy as np

__all__ = [
    "NATIVE",
    "affine_values",
    "inverse_deviation_ok",
    "native_available",
    "nearest_entries",
    "round64",
    "row_products",
    "row_products_exact",
]

_CHUNK = 1 << 18          # elements per chunk of the vectorised paths
_SPLIT = 134217729.0      # 2^27 + 1, Dekker's splitting constant for binary64
_LOW = 2.0**-900          # below this magnitude (non-zero) the fast path defers to the exact model
_HIGH = 2.0**990          # above it, Dekker's split may overflow: defer as well


def native_available() -> bool:
    """True when ``numpy.longdouble`` is the x87 80-bit format with 64-bit significand rounding."""
    info = np.finfo(np.longdouble)
    if info.nmant != 63 or info.maxexp != 16384:
        return False
    one = np.longdouble(1)
    # 1 + 2^-63 is representable; 1 + 2^-64 is a tie that rounds to even (1).
    return bool(one + np.longdouble(2.0**-63) != one and one + np.longdouble(2.0**-64) == one)


NATIVE: bool = native_available() and os.environ.get("HURRAY_DECL_EXTENDED", "") != "emulate"
"""Whether the native ``longdouble`` path is the default (x86 Linux builds of NumPy)."""


def _use_native(emulate: bool | None) -> bool:
    if emulate is None:
        return NATIVE
    if not emulate and not native_available():
        raise ValueError("numpy.longdouble is not the x87 80-bit format on this platform")
    return not emulate


# --- the scalar exact model (rationals rounded to a 64-bit significand) ------------------------

def round64(value: Fraction) -> Fraction:
    """``value`` rounded to a 64-bit significand, ties to even (no exponent limit)."""
    if value == 0:
        return Fraction(0)
    sign = -1 if value < 0 else 1
    a = abs(value)
    num, den = a.numerator, a.denominator
    e = num.bit_length() - den.bit_length()     # 2^e <= a < 2^(e+2)
    if Fraction(num, den) < Fraction(2) ** e:
        e -= 1
    elif Fraction(num, den) >= Fraction(2) ** (e + 1):
        e += 1
    scaled = a * Fraction(2) ** (63 - e)        # in [2^63, 2^64)
    q, r = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * r
    if twice > scaled.denominator or (twice == scaled.denominator and q % 2):
        q += 1
    return sign * Fraction(q) * Fraction(2) ** (e - 63)


def _to_double(value: Fraction) -> float:
    try:
        return float(value)   # int / int true division: correctly rounded, ties to even
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def _affine_exact(x: float, offset: float, scale: float, zero_point: float) -> float:
    t = round64(Fraction(float(x)) - Fraction(float(offset)))
    t = round64(t / Fraction(float(scale)))
    t = round64(t + Fraction(float(zero_point)))
    return _to_double(t)


def _dot_exact(row: Iterable[float], column: Iterable[float]) -> Fraction:
    total = Fraction(0)
    for a, b in zip(row, column):
        total = round64(total + round64(Fraction(float(a)) * Fraction(float(b))))
    return total


def _distance_exact(residual: Sequence[float], entry: Sequence[float]) -> Fraction:
    total = Fraction(0)
    for r, t in zip(residual, entry):
        diff = round64(Fraction(float(r)) - Fraction(float(t)))
        total = round64(total + round64(diff * diff))
    return total


# --- error-free transformations and the vector rounding -----------------------------------------

def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a):
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def _two_product(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, al * bl - (((p - ah * bh) - al * bh) - ah * bl)


def _exact_product(a, b):
    """``a * b`` as ``p + e`` and the mask where Dekker's product is not exact (range)."""
    with np.errstate(over="ignore", invalid="ignore"):
        p, e = _two_product(a, b)
    return p, e, _risky(a, b, p) | ((p == 0) & (a != 0) & (b != 0))


def _risky(*arrays: np.ndarray) -> np.ndarray:
    """Non-zero magnitudes outside [2^-900, 2^990], or non-finite: the exact model decides."""
    out = np.zeros((), dtype=bool)
    for a in arrays:
        m = np.abs(a)
        out = out | ~(m <= _HIGH) | ((m < _LOW) & (m != 0))
    return out


def _round_dd(hi, lo, slack):
    """Round ``hi + lo`` (exact value within ``slack`` of it) to a 64-bit significand.

    ``hi + lo`` must satisfy ``|lo| <= ulp(hi) / 2``. Returns the rounded double-double and a
    mask of the elements where ``slack`` reaches the rounding boundary (or ``hi`` is out of the
    safe range), which the caller recomputes exactly.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        m, k = np.frexp(hi)
        below = (np.abs(m) == 0.5) & (lo != 0) & (np.signbit(lo) != np.signbit(hi))
        shift = k.astype(np.int64) - 64 - below     # the 64-bit ulp is 2^shift
        u = np.ldexp(lo, -shift)                     # exact: a power-of-two scaling
        n = np.rint(u)                               # hi / ulp is even, so rint's ties are the value's
        dist = 0.5 - np.abs(u - n)
        margin = np.ldexp(slack, -shift)
        unsure = ((slack > 0) & ((dist <= 4 * margin) | (hi == 0))) | _risky(hi)
        rh = hi + np.ldexp(n, shift)
        rl = np.ldexp(n, shift) - (rh - hi)
    return rh, rl, unsure


def _sum_terms(terms):
    """The 64-bit rounding of the exact sum of ``terms`` (arrays of doubles)."""
    with np.errstate(over="ignore", invalid="ignore"):
        s = terms[0]
        c = np.zeros_like(s)
        slack = np.zeros_like(s)
        for t in terms[1:]:
            s, e = _two_sum(s, t)
            c, ce = _two_sum(c, e)
            slack = slack + np.abs(ce)
        hi, lo = _two_sum(s, c)
    return _round_dd(hi, lo, slack)


def _divide(h, l, s):  # noqa: E741 - (h, l): a double-double's high and low parts, as in the papers
    """The 64-bit rounding of ``(h + l) / s``. No quotient of this kind is a tie, so near a
    boundary the element is handed to the exact model."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        q1 = h / s
        p, pe = _two_product(q1, s)
        r = (h - p) - pe                      # the exact remainder of h (representable)
        q2 = (r + l) / s
        hi, lo = _two_sum(q1, q2)
        slack = np.abs(q2) * 2.0**-50
    rh, rl, unsure = _round_dd(hi, lo, slack)
    return rh, rl, unsure | _risky(h, s, q1, p)


# --- affine values ------------------------------------------------------------------------------

def affine_values(values: np.ndarray, offset: np.ndarray, scale: np.ndarray, zero_point: np.ndarray,
                  lo: float, hi: float, *, emulate: bool | None = None, shortcut: bool = True) -> np.ndarray:
    """``clamp(((x - offset) / scale) + zero_point)`` in 80-bit steps, rounded to double.

    ``values`` is ``[blocks, count]``; ``offset``, ``scale``, ``zero_point`` are ``[blocks]``.
    The result is float64 ``[blocks, count]`` in ``[lo, hi]`` (clamping commutes with the
    monotonic rounding to double, since ``lo`` and ``hi`` are integers).

    Only the rounding of the result to an integer code matters to the codec, so the plain
    float64 evaluation is kept wherever it lies farther from a half-integer than its error
    bound: the 80-bit value rounds to a double on the same side, and both give the same code.
    Everything else (near a half-integer, or an intermediate out of the double range) is
    evaluated exactly as the original does; ``shortcut=False`` evaluates every element so.
    ``values`` may be float32 (widened exactly); callers chunk large inputs.
    """
    values = np.asarray(values)
    _blocks, _count = values.shape  # one row per block
    out = np.empty(values.shape, dtype=np.float64)
    if values.size == 0:
        return out
    native = _use_native(emulate)
    offset = np.asarray(offset, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    zero_point = np.asarray(zero_point, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if offset.any():
            np.subtract(values, offset[:, None], out=out)
        else:
            out[...] = values      # x - 0 is exact
        out /= scale[:, None]
        out += zero_point[:, None]
        # With |lo|, |hi|, |zero_point| <= 2^16, the code depends on the value only while
        # |d| <= 2^17 + 1, and there |d - V| < 2^-31 (|q| <= 2^18): only values within 2^-31 of a
        # half-integer, or not finite, need the exact steps.
        near = np.rint(out)
        np.subtract(out, near, out=near)
        np.abs(near, out=near)
        unsure = ~(near < 0.5 - 2.0**-31)
        if not shortcut or max(abs(lo), abs(hi)) > 2**16:
            unsure[...] = True
        else:
            unsure[np.abs(zero_point) > 2**16] = True
    js, ks = np.nonzero(unsure) if unsure.any() else ((), ())
    if len(js):
        xs = values[js, ks].astype(np.float64)
        os_, ss, zs = offset[js], scale[js], zero_point[js]
        if native:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                w = xs.astype(np.longdouble)
                w -= os_
                w /= ss
                w += zs
                out[js, ks] = w.astype(np.float64)
        else:
            out[js, ks] = _affine_emulated(xs[None], os_[None], ss[None], zs[None])[0]
    np.maximum(out, lo, out=out)
    np.minimum(out, hi, out=out)
    return out


def _affine_emulated(x, o, s, z) -> np.ndarray:
    th, tl, u1 = _sum_terms([x, -o])
    qh, ql, u2 = _divide(th, tl, s)
    vh, vl, u3 = _sum_terms([qh, z, ql])
    with np.errstate(over="ignore", invalid="ignore"):
        d = vh + vl                        # the correctly rounded double of the 64-bit value
    unsure = u1 | u2 | u3 | _risky(x, o, z)
    for j, k in zip(*np.nonzero(unsure)):
        d[j, k] = _affine_exact(float(x[j, k]), float(o[j, k]), float(s[j, k]), float(z[j, k]))
    return d


# --- transform sums -------------------------------------------------------------------------------

def _dot_native(rows: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Sequential 80-bit sums ``sum_k rows[:, k] * matrix[k, :]`` as longdouble [m, n]."""
    m, n = rows.shape
    total = np.zeros((m, matrix.shape[1]), dtype=np.longdouble)
    wide = matrix.astype(np.longdouble)
    for k in range(n):
        total += rows[:, k:k + 1].astype(np.longdouble) * wide[k:k + 1, :]
    return total


def _dot_emulated(rows: np.ndarray, matrix: np.ndarray):
    """The same sums as double-doubles ``(hi, lo)``; exact-model fallback where unsure."""
    m, n = rows.shape
    shape = (m, matrix.shape[1])
    sh, sl = np.zeros(shape), np.zeros(shape)
    unsure = np.zeros(shape, dtype=bool)
    for k in range(n):
        a = np.broadcast_to(rows[:, k:k + 1], shape)
        b = np.broadcast_to(matrix[k:k + 1, :], shape)
        p, e, risky = _exact_product(a, b)
        ph, pl, u1 = _sum_terms([p, e])
        sh, sl, u2 = _sum_terms([sh, ph, sl, pl])
        unsure |= risky | u1 | u2
    for i, j in zip(*np.nonzero(unsure)):
        exact = _dot_exact(rows[i], matrix[:, j])
        h = _to_double(exact)
        sh[i, j] = h
        sl[i, j] = _to_double(exact - Fraction(h)) if np.isfinite(h) else 0.0
    return sh, sl


def row_products(rows: np.ndarray, matrix: np.ndarray, *, emulate: bool | None = None) -> np.ndarray:
    """``rows @ matrix`` summed as the original does, rounded to double (inf where it overflows)."""
    rows = np.asarray(rows, dtype=np.float64)
    matrix = np.asarray(matrix, dtype=np.float64)
    m = rows.shape[0]
    out = np.empty((m, matrix.shape[1]), dtype=np.float64)
    native = _use_native(emulate)
    step = max(1, _CHUNK // max(1, matrix.shape[1] * 2))
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, m, step):
            part = rows[start:start + step]
            if native:
                out[start:start + step] = _dot_native(part, matrix).astype(np.float64)
            else:
                sh, sl = _dot_emulated(part, matrix)
                out[start:start + step] = sh + sl
    return out


def row_products_exact(rows: Sequence[Sequence[float]], matrix: Sequence[Sequence[float]]) -> list[list[float]]:
    """The scalar exact model of :func:`row_products` (slow; for checks and small inputs)."""
    cols = list(zip(*matrix))
    return [[_to_double(_dot_exact(r, c)) for c in cols] for r in rows]


_TOLERANCE = round64(Fraction(1, 10**6))   # the literal 1e-6L


def inverse_deviation_ok(forward: np.ndarray, inverse: np.ndarray, *,
                         emulate: bool | None = None) -> np.ndarray:
    """``|sum_k F[i][k] * I[k][j] - delta_ij| <= 1e-6L`` in 80-bit, per (i, j) (OL-PLAN-34)."""
    forward = np.asarray(forward, dtype=np.float64)
    inverse = np.asarray(inverse, dtype=np.float64)
    n = forward.shape[0]
    eye = np.eye(n)
    if _use_native(emulate):
        total = _dot_native(forward, inverse)
        tolerance = np.longdouble(float(_TOLERANCE)) + np.longdouble(float(_TOLERANCE - Fraction(float(_TOLERANCE))))
        return np.abs(total - eye.astype(np.longdouble)) <= tolerance
    sh, sl = _dot_emulated(forward, inverse)
    dh, dl, unsure = _sum_terms([sh, -eye, sl])
    th = float(_TOLERANCE)
    tl = float(_TOLERANCE - Fraction(th))
    sign = np.where(np.signbit(dh), -1.0, 1.0)
    with np.errstate(invalid="ignore"):
        ok = ((sign * dh - th) + (sign * dl - tl)) <= 0
    for i, j in zip(*np.nonzero(unsure | ~np.isfinite(sh))):
        exact = round64(_dot_exact(forward[i], inverse[:, j]) - int(i == j))
        ok[i, j] = abs(exact) <= _TOLERANCE
    return ok


# --- codebook distances ---------------------------------------------------------------------------

def nearest_entries(residual: np.ndarray, table: np.ndarray, mask: np.ndarray, *,
                    emulate: bool | None = None) -> np.ndarray:
    """The first entry with the smallest 80-bit squared distance, per vector.

    ``residual`` is ``[b, nvec, v]``, ``table`` ``[b, E, v]``, ``mask`` ``[nvec, v]`` (the
    logical components). Returns int64 ``[b, nvec]``. Distances accumulate component by
    component: ``diff = r - t`` and ``diff * diff`` and each partial sum rounded to 64 bits.
    """
    if _use_native(emulate):
        return _nearest_native(residual, table, mask)
    return _nearest_emulated(residual, table, mask)


def _nearest_native(residual, table, mask):
    b, nvec, v = residual.shape
    err = np.zeros((b, nvec, table.shape[1]), dtype=np.longdouble)
    for j in range(v):
        diff = residual[:, :, None, j].astype(np.longdouble) - table[:, None, :, j]
        diff *= mask[None, :, None, j]
        err += diff * diff
    return np.argmin(err, axis=2)


def _nearest_emulated(residual, table, mask):
    b, nvec, v = residual.shape
    entries = table.shape[1]
    shape = (b, nvec, entries)
    eh, el = np.zeros(shape), np.zeros(shape)
    unsure = np.zeros(shape, dtype=bool)
    for j in range(v):
        r = np.broadcast_to(residual[:, :, None, j] * mask[None, :, None, j], shape)
        t = np.broadcast_to(table[:, None, :, j] * mask[None, :, None, j], shape)
        dh, dl, u1 = _sum_terms([r, -t])
        p1, e1, r1 = _exact_product(dh, dh)
        p2, e2, r2 = _exact_product(2.0 * dh, dl)
        p3, e3, r3 = _exact_product(dl, dl)
        qh, ql, u2 = _sum_terms([p1, p2, e1, p3, e2, e3])
        eh, el, u3 = _sum_terms([eh, qh, el, ql])
        unsure |= u1 | u2 | u3 | r1 | r2 | r3
    best = np.zeros((b, nvec), dtype=np.int64)
    bh, bl = eh[:, :, 0].copy(), el[:, :, 0].copy()
    for e in range(1, entries):
        with np.errstate(invalid="ignore"):
            less = ((eh[:, :, e] - bh) + (el[:, :, e] - bl)) < 0
        best = np.where(less, e, best)
        bh = np.where(less, eh[:, :, e], bh)
        bl = np.where(less, el[:, :, e], bl)
    for i, k in zip(*np.nonzero(unsure.any(axis=2))):
        use = mask[k]
        errors = [_distance_exact(residual[i, k][use], table[i, e][use]) for e in range(entries)]
        best[i, k] = min(range(entries), key=lambda e: (errors[e], e))
    return best
