"""Numeric helpers: dtype tables and output conversion.

The original's extended-precision steps (OD-02) live in :mod:`.extended`.
"""

from __future__ import annotations

import enum

import ml_dtypes
import numpy as np

from hurray_decl.errors import OnnxLightError

__all__ = [
    "LARGEST",
    "LOGICAL_CODES",
    "LOGICAL_DTYPES",
    "LOGICAL_DTYPE_NAMES",
    "LOGICAL_NAMES",
    "LOGICAL_TYPES",
    "DataType",
    "dtype_code",
    "float16_bits",
    "narrow",
    "spelled",
    "to_logical",
]


class DataType(enum.IntEnum):
    """The ONNX ``TensorProto.DataType`` codes onnx-light reads and writes, each with the NumPy
    type of one element (the names and values are the .proto's; a test checks them against the
    generated module)."""

    _dtype: np.dtype | None

    def __new__(cls, value: int, dtype: object = None) -> DataType:
        member = int.__new__(cls, value)
        member._value_ = value
        member._dtype = None if dtype is None else np.dtype(dtype)  # type: ignore[call-overload]
        return member

    FLOAT = 1, np.float32
    UINT8 = 2, np.uint8
    INT8 = 3, np.int8
    INT64 = 7, np.int64
    STRING = 8, None
    FLOAT16 = 10, np.float16
    DOUBLE = 11, np.float64
    BFLOAT16 = 16, ml_dtypes.bfloat16

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of one element (STRING has none: KeyError)."""
        if self._dtype is None:
            raise KeyError(self.name)
        return self._dtype


LOGICAL_TYPES: tuple[DataType, ...] = (DataType.FLOAT, DataType.DOUBLE, DataType.FLOAT16, DataType.BFLOAT16)
"""The floating data types a source or a logical output may have (OL-NUM-01, OL-WIRE-15), in the
order the messages name them."""

LOGICAL_DTYPES: dict[int, np.dtype] = {code: code.dtype for code in LOGICAL_TYPES}
"""The NumPy dtype of each logical data type."""


def spelled(items: list[str], conjunction: str = "or") -> str:
    """``a, b, c or d``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {conjunction} {items[-1]}"


LOGICAL_NAMES = spelled([code.name for code in LOGICAL_TYPES])
"""``FLOAT, DOUBLE, FLOAT16 or BFLOAT16``, as the messages write the logical types."""
LOGICAL_CODES = spelled([str(int(code)) for code in LOGICAL_TYPES])
"""``1, 11, 10 or 16``: the logical types' codes, as the messages write them."""
LOGICAL_DTYPE_NAMES = spelled([code.dtype.name for code in LOGICAL_TYPES])
"""``float32, float64, float16 or bfloat16``: the logical types' NumPy names."""

LARGEST: dict[int, float] = {code: float(ml_dtypes.finfo(dtype).max) for code, dtype in LOGICAL_DTYPES.items()}
"""The largest finite value of each floating dtype."""

def dtype_code(dtype: np.dtype) -> int | None:
    """The ONNX code of a NumPy dtype, or None when it is not one of the four floating types."""
    for code, candidate in LOGICAL_DTYPES.items():
        if np.dtype(dtype) == candidate:
            return code
    return None


def float16_bits(values) -> np.ndarray:
    """The original's float32 -> binary16 converter, as uint16 bit patterns (OD-12).

    Normal results round half to even on the 13 dropped bits. Below the normal range (biased
    half exponent ``e <= 0``, ``e >= -10``) the 24-bit significand is first shifted right by
    ``1 - e``: the round bit is bit 12 of what is left and the sticky bits are its bits 0..11,
    so bits shifted out earlier do not count. ``e < -10`` gives a signed zero, ``e >= 31`` a
    signed infinity, NaN ``sign | 0x7C00 | 0x0200``.
    """
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    sign = (u >> 16) & 0x8000
    e32 = ((u >> 23) & 0xFF).astype(np.int32)
    m32 = u & 0x007FFFFF
    e = e32 - 127 + 15
    rest = m32 & 0x1FFF
    normal = (np.clip(e, 0, 31).astype(np.uint32) << 10) | (m32 >> 13)
    normal = normal + ((rest > 0x1000) | ((rest == 0x1000) & ((m32 >> 13) & 1 == 1)))
    shifted = (m32 | 0x00800000) >> np.clip(1 - e, 0, 31).astype(np.uint32)
    round_bit = (shifted >> 12) & 1
    sticky = shifted & 0x0FFF
    small = shifted >> 13
    small = small + ((round_bit == 1) & ((sticky != 0) | ((small & 1) == 1)))
    out = np.where(e >= 31, 0x7C00, np.where(e <= 0, np.where(e < -10, 0, small), normal))
    out = np.where(e32 == 0xFF, 0x7C00 | np.where(m32 != 0, 0x0200, 0), out)
    return (sign | out).astype(np.uint16)


def narrow(values, code: int) -> np.ndarray:
    """Doubles in a floating dtype as the original converts them: FLOAT16 and BFLOAT16 through
    float32, FLOAT16 with its own converter (:func:`float16_bits`)."""
    values = np.asarray(values)
    with np.errstate(over="ignore", invalid="ignore"):
        if code == DataType.DOUBLE:
            return values.astype(np.float64, copy=True)
        single = values.astype(np.float32)
    if code == DataType.FLOAT:
        return single
    if code == DataType.FLOAT16:
        return float16_bits(single).view(np.float16).reshape(single.shape)
    return single.astype(LOGICAL_DTYPES[code])


def to_logical(values: np.ndarray, code: int, code_name: str, path: str, first: int = 0) -> np.ndarray:
    """Convert decoded doubles to the logical dtype; 16-bit types go through float32.

    A non-finite or overflowing result is refused with ``code_name`` (OL-NUM-22 on the encoder's
    reconstruction check, OL-NUM-25 on decoding); ``first`` is the flat index of ``values[0]``
    in the whole value, for the message.
    """
    target = LOGICAL_DTYPES[code]
    out = narrow(values, code)
    finite = np.isfinite(out)
    if not finite.all():
        j = int(np.flatnonzero(~finite.ravel())[0])
        raise OnnxLightError(code_name, f"the reconstruction is non-finite or overflows {target.name}",
                             path=f"{path}[{first + j}]", actual=repr(float(values.ravel()[j])),
                             expected=f"finite in {target.name}")
    return out
