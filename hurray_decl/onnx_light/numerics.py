"""Numeric helpers: dtype tables and output conversion.

The original's extended-precision steps (OD-02) live in :mod:`.extended`.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ..errors import OnnxLightError

__all__ = [
    "FLOAT", "UINT8", "INT64", "FLOAT16", "DOUBLE", "BFLOAT16",
    "LOGICAL_DTYPES", "dtype_code", "to_logical",
]

FLOAT, UINT8, INT8, INT64, STRING, FLOAT16, DOUBLE, BFLOAT16 = 1, 2, 3, 7, 8, 10, 11, 16

LOGICAL_DTYPES: dict[int, np.dtype] = {
    FLOAT: np.dtype(np.float32),
    DOUBLE: np.dtype(np.float64),
    FLOAT16: np.dtype(np.float16),
    BFLOAT16: np.dtype(ml_dtypes.bfloat16),
}
"""The floating dtypes a source or a logical output may have (OL-NUM-01, OL-WIRE-15)."""

def dtype_code(dtype: np.dtype) -> int | None:
    """The ONNX code of a NumPy dtype, or None when it is not one of the four floating types."""
    for code, candidate in LOGICAL_DTYPES.items():
        if np.dtype(dtype) == candidate:
            return code
    return None


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
