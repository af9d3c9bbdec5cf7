"""Numeric helpers: accurate row-vector x matrix products, dtype tables and output conversion.

OD-02: the original sums in C++ ``long double``. hurray_decl computes in float64 and, for the
sums DIGEST.md asks to be evaluated in extended precision (transforms and the inverse check),
uses error-free transformations (TwoProduct by Dekker splitting, TwoSum) so the result is as
accurate as a sum in twice the working precision, then rounded once to double.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ..errors import OnnxLightError

__all__ = [
    "FLOAT", "UINT8", "INT64", "FLOAT16", "DOUBLE", "BFLOAT16",
    "LOGICAL_DTYPES", "dtype_code", "matmul_rows", "to_logical", "two_sum", "two_product",
]

FLOAT, UINT8, INT8, INT64, STRING, FLOAT16, DOUBLE, BFLOAT16 = 1, 2, 3, 7, 8, 10, 11, 16

LOGICAL_DTYPES: dict[int, np.dtype] = {
    FLOAT: np.dtype(np.float32),
    DOUBLE: np.dtype(np.float64),
    FLOAT16: np.dtype(np.float16),
    BFLOAT16: np.dtype(ml_dtypes.bfloat16),
}
"""The floating dtypes a source or a logical output may have (OL-NUM-01, OL-WIRE-15)."""

_SPLIT = 134217729.0  # 2^27 + 1, Dekker's splitting constant for binary64


def dtype_code(dtype: np.dtype) -> int | None:
    """The ONNX code of a NumPy dtype, or None when it is not one of the four floating types."""
    for code, candidate in LOGICAL_DTYPES.items():
        if np.dtype(dtype) == candidate:
            return code
    return None


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s = fl(a + b) and the exact error a + b - s (Knuth's TwoSum)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p = fl(a * b) and the exact error a * b - p (Dekker), barring overflow in the split."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, al * bl - (((p - ah * bh) - al * bh) - ah * bl)


def matmul_rows(rows: np.ndarray, matrix: np.ndarray, chunk: int = 1 << 16) -> np.ndarray:
    """``rows @ matrix`` with compensated (Dot2) accumulation over k, in row chunks."""
    rows = np.asarray(rows, dtype=np.float64)
    matrix = np.asarray(matrix, dtype=np.float64)
    m, n = rows.shape
    out = np.empty((m, matrix.shape[1]), dtype=np.float64)
    step = max(1, chunk // max(1, matrix.shape[1]))
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, m, step):
            part = rows[start:start + step]
            s = np.zeros((part.shape[0], matrix.shape[1]))
            c = np.zeros_like(s)
            for k in range(n):
                p, e = two_product(part[:, k:k + 1], matrix[k:k + 1, :])
                s, q = two_sum(s, p)
                c += q + e
            total = s + c
            # When a product overflowed, the compensation terms are NaN; fall back to the plain sum.
            plain = part @ matrix
            out[start:start + step] = np.where(np.isfinite(total), total, plain)
    return out


def to_logical(values: np.ndarray, code: int, code_name: str, path: str) -> np.ndarray:
    """Convert decoded doubles to the logical dtype; 16-bit types go through float32.

    A non-finite or overflowing result is refused with ``code_name`` (OL-NUM-22 on the encoder's
    reconstruction check, OL-NUM-25 on decoding).
    """
    target = LOGICAL_DTYPES[code]
    with np.errstate(over="ignore", invalid="ignore"):
        if code == DOUBLE:
            out = values.astype(np.float64, copy=True)
        elif code == FLOAT:
            out = values.astype(np.float32)
        else:
            out = values.astype(np.float32).astype(target)
    finite = np.isfinite(out.astype(np.float32) if code in (FLOAT16, BFLOAT16) else out)
    if not finite.all():
        j = int(np.flatnonzero(~finite.ravel())[0])
        raise OnnxLightError(code_name, f"the reconstruction is non-finite or overflows {target.name}",
                             path=f"{path}[{j}]", actual=repr(float(values.ravel()[j])),
                             expected=f"finite in {target.name}")
    return out
