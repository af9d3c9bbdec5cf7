"""Cast blocks: each code is the value / scale in a floating dtype (DIGEST.md § 8.2).

DOUBLE stores the double itself. The other dtypes round to float32 first, then FLOAT16 goes
through the original's binary16 converter (OD-12) and BFLOAT16 rounds to the upper 16 bits
half to even. Overflow to infinity is refused (OL-NUM-20).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from hurray_decl.errors import OnnxLightError
from hurray_decl.onnx_light.numerics import narrow

__all__ = ["CAST_WIDTHS", "CAST_DTYPES", "encode", "decode", "calibrate"]

CAST_DTYPES: dict[int, np.dtype] = {
    1: np.dtype("<f4"),                      # FLOAT
    11: np.dtype("<f8"),                     # DOUBLE
    10: np.dtype("<f2"),                     # FLOAT16
    16: np.dtype(ml_dtypes.bfloat16),        # BFLOAT16 (little-endian in memory)
}
CAST_WIDTHS: dict[int, int] = {code: dtype.itemsize for code, dtype in CAST_DTYPES.items()}


def _refuse(code: str, message: str, mask: np.ndarray, values: np.ndarray, path: str) -> None:
    j, k = (int(i) for i in np.argwhere(mask)[0])
    raise OnnxLightError(code, message, path=f"{path} -> blocks[{j}] -> values[{k}]",
                         actual=repr(float(values[j, k])), expected="finite")


def encode(values: np.ndarray, run, path: str) -> np.ndarray:
    cast_type = int(run.layout.cast_type)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        v = values / run.scale[:, None]
        if not np.isfinite(v).all():
            _refuse("OL-NUM-19", "value / scale is not finite", ~np.isfinite(v), values, path)
        if cast_type == 11:
            stored = v
        else:
            stored = narrow(v, cast_type)
            wide = stored.astype(np.float64)
            if not np.isfinite(wide).all():
                _refuse("OL-NUM-20", f"the cast to {CAST_DTYPES[cast_type].name} overflows",
                        ~np.isfinite(wide), values, path)
    blocks = values.shape[0]
    return np.ascontiguousarray(stored.astype(CAST_DTYPES[cast_type])).view(np.uint8).reshape(blocks, -1)


def decode(data: np.ndarray, run, path: str) -> np.ndarray:
    dtype = CAST_DTYPES[int(run.layout.cast_type)]
    stored = np.ascontiguousarray(data).view(dtype).astype(np.float64)
    return stored * run.scale[:, None]


def calibrate(values: np.ndarray, run, path: str) -> np.ndarray:
    """A cast block calibrates to scale 1 (OL-CAL-13)."""
    return np.ones(values.shape[0])
