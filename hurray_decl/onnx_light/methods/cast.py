"""Cast blocks: each code is the value / scale in a floating dtype (DIGEST.md § 8.2).

DOUBLE stores the double itself. The other dtypes round to float32 first, then FLOAT16 goes
through the original's binary16 converter (OD-12) and BFLOAT16 rounds to the upper 16 bits
half to even. Overflow to infinity is refused (OL-NUM-20).
"""

from __future__ import annotations

import numpy as np

from hurray_decl.errors import OnnxLightError
from hurray_decl.onnx_light.numerics import LOGICAL_TYPES, DataType, narrow

__all__ = ["CAST_DTYPES", "CAST_WIDTHS", "calibrate", "decode", "encode"]

CAST_DTYPES: dict[int, np.dtype] = {code: code.dtype.newbyteorder("<") for code in LOGICAL_TYPES}
"""The stored (little-endian) dtype of each cast type: the logical data types."""
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
        if cast_type == DataType.DOUBLE:
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
