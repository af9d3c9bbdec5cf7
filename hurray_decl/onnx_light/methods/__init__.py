"""The block methods, one registered row each, and the dispatch on a run's ``method``.

A row supplies three NumPy kernels that each work on a whole run (``[blocks, count]`` values,
``[blocks, C]`` code bytes): ``encode``, ``decode`` and ``calibrate``. The engine never lists
the methods itself: it looks the row up in :data:`METHODS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hurray_decl.errors import OnnxLightError
from hurray_decl.onnx_light.methods import affine, cast, codebook
from hurray_decl.onnx_light.profiles import QuantizationMethod
from hurray_decl.registry import Table

__all__ = ["METHODS", "MethodRow", "method_row"]


@dataclass(frozen=True)
class MethodRow:
    """One block method: its header code (whose name the row's is) and run-wide kernels."""

    code: QuantizationMethod
    encode: Callable[..., np.ndarray]     # (values [B, count], run, path) -> code bytes [B, C]
    decode: Callable[..., np.ndarray]     # (code bytes [B, C], run, path) -> values [B, count]
    calibrate: Callable[..., np.ndarray]  # (values [B, count], run, path) -> scales [B]
    magnitude: Callable[..., float] | None = None  # run -> a bound of |decoded| over the run, or None

    @property
    def name(self) -> str:
        return self.code.wire_name


METHODS: Table[int, MethodRow] = Table("onnx-light block method", "OL-PLAN-07")
for _row in (
    MethodRow(QuantizationMethod.AFFINE, affine.encode, affine.decode, affine.calibrate, affine.magnitude),
    MethodRow(QuantizationMethod.CODEBOOK, codebook.encode, codebook.decode, codebook.calibrate, codebook.magnitude),
    MethodRow(QuantizationMethod.CAST, cast.encode, cast.decode, cast.calibrate),
):
    METHODS.register(int(_row.code), _row)  # plain int keys: the error lists them as numbers


def method_row(method: int, path: str) -> MethodRow:
    row = METHODS.get(int(method))
    if row is None:
        raise OnnxLightError("OL-PLAN-07", "unknown block method", path=f"{path} -> method",
                             actual=method, expected=METHODS.keys())
    return row
