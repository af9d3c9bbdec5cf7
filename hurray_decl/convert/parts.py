"""A per-block affine tensor in pieces (:class:`BlockParts`), checked when it is made.

Converters meet here: GGUF, GPTQ and AWQ produce parts, Hurray per-block affine tensors and
ORT MatMulNBits / onnx-light int4/int8 values are built from them and split back into them.

Scales and zero points are given **in the shape of the block grid**: the codes' shape with
``shape[axis]`` replaced by ``ceil(shape[axis] / block_size)``, so that ``scales[i, j]`` is the
scale of the block holding ``codes[i, j * block_size]`` (blocks along axis 1). A wrongly ordered
grid has the wrong shape and is refused. A flat array is accepted only where it cannot be read in
two orders (at most one grid dimension longer than 1); otherwise flat arrays in Hurray block order
(HQ-PB-15: ``b = outer * blocks_per_axis + i_axis // block_size``) go through
:meth:`BlockParts.from_block_order`, which says so in its name. Inside, the parts keep them flat in
that block order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hurray_decl.errors import ArgumentError, RuleViolation
from hurray_decl.hurray.quantization import scheme
from hurray_decl.hurray.tables import storage as element_storage
from hurray_decl.hurray.tables.codes import ScaleType
from hurray_decl.hurray.tables.element_types import BY_NAME

__all__ = ["BlockParts"]

_ROW = scheme("per_block_affine")


def _integers(values: Any, argument: str) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype.kind == "f" and np.array_equal(array, np.floor(array)):
        array = array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise ArgumentError(argument, f"{argument} are integers", actual=str(array.dtype), expected="an integer array")
    shared = array.view()  # shared, not copied (int16 codes stay a quarter of int64's size), and read-only here
    shared.flags.writeable = False
    return shared


def _in_range(values: np.ndarray, storage: str, argument: str, code: str | None) -> None:
    bounds = BY_NAME[storage].int_range
    if bounds is None:  # a float storage: no integer range to keep to
        return
    lo, hi = bounds
    bad = (values < lo) | (values > hi)
    if bad.any():
        j = int(np.flatnonzero(bad.ravel())[0])
        message = f"{argument}[{j}] does not fit {storage}"
        expected = f"{lo} .. {hi}"
        if code is None:
            raise ArgumentError(argument, message, actual=int(values.ravel()[j]), expected=expected)
        raise RuleViolation(code, message, path=f"{argument}[{j}]", actual=int(values.ravel()[j]), expected=expected)


@dataclass(frozen=True, eq=False)  # arrays have no single truth value: parts compare by identity
class BlockParts:
    """Codes in logical order, one scale (and integer zero point) per block of ``block_size`` along ``axis``.

    The codes and zero points are kept as read-only views of the arrays given, in their integer
    type (the converters here give int16 codes). Checked on creation: storage (HQ-PB-14), axis
    (HQ-PB-02), block size (HQ-PB-03/-04; a Hurray tensor also needs it no longer than its axis,
    HQ-PB-05, which ORT values need not), scale type (HQ-PB-08), scales exactly representable in
    it, zero points in the storage range (HQ-PB-22), codes in the storage range, and the grid
    shape of scales and zero points (HQ-PB-15).
    """

    codes: np.ndarray
    storage: str
    axis: int
    block_size: int
    scales: np.ndarray
    scale_type: str
    zero_points: np.ndarray | None = None

    def __post_init__(self) -> None:
        self._normalize(flat_ok=False)

    @classmethod
    def from_block_order(cls, codes: Any, storage: str, axis: int, block_size: int, scales: Any, scale_type: str,
                         zero_points: Any = None) -> BlockParts:
        """Parts from flat scales (and zero points) already in Hurray block order (HQ-PB-15)."""
        parts = object.__new__(cls)
        for name, value in zip(("codes", "storage", "axis", "block_size", "scales", "scale_type", "zero_points"),
                               (codes, storage, axis, block_size, scales, scale_type, zero_points)):
            object.__setattr__(parts, name, value)
        parts._normalize(flat_ok=True)
        return parts

    # --- geometry -----------------------------------------------------------------------------

    @property
    def grid_shape(self) -> tuple[int, ...]:
        """The block grid: the codes' shape with the blocked axis counted in blocks."""
        shape = list(self.codes.shape)
        shape[self.axis] = -(-shape[self.axis] // self.block_size)
        return tuple(shape)

    def grid(self, values: np.ndarray) -> np.ndarray:
        """Flat per-block values (block order) in the grid's shape: ``grid(parts.scales)``."""
        moved = [n for i, n in enumerate(self.grid_shape) if i != self.axis] + [self.grid_shape[self.axis]]
        return np.moveaxis(np.asarray(values).reshape(moved), -1, self.axis)

    def transposed(self) -> BlockParts:
        """A rank-2 tensor's transpose: codes ``[i, j]`` become ``[j, i]``, blocks move with them.

        GGUF and PyTorch store a linear weight as ``(out, in)`` blocked along ``in`` (axis 1);
        ORT MatMulNBits takes ``B = W^T``, ``[K, N]`` blocked along K (axis 0).
        """
        if self.codes.ndim != 2:
            raise ArgumentError("parts", "only a rank-2 tensor has a transpose here", actual=self.codes.ndim,
                                expected=2)
        zeros = None if self.zero_points is None else self.grid(self.zero_points).T
        return BlockParts(self.codes.T, self.storage, 1 - self.axis, self.block_size, self.grid(self.scales).T,
                          self.scale_type, zeros)

    # --- checks -------------------------------------------------------------------------------

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def _block_order(self, values: Any, argument: str, flat_ok: bool) -> np.ndarray:
        array = np.asarray(values)
        grid = self.grid_shape
        count = int(np.prod(grid))
        if array.shape == grid:  # block order walks the blocked axis innermost (HQ-PB-15)
            return np.moveaxis(array, self.axis, -1).reshape(-1)
        unambiguous = sum(n > 1 for n in grid) <= 1
        if array.ndim == 1 and array.size == count and (flat_ok or unambiguous):
            return array
        why = (f"{argument} are given in the block grid's shape {list(grid)} (codes {list(self.codes.shape)}, "
               f"blocks of {self.block_size} along axis {self.axis})")
        if array.ndim == 1 and array.size == count:
            why += "; a flat array could be read in more than one order: pass the grid, or use " \
                   "BlockParts.from_block_order for Hurray block order"
        raise RuleViolation("HQ-PB-15", why, path=argument, actual=list(array.shape), expected=list(grid))

    def _normalize(self, flat_ok: bool) -> None:
        codes = _integers(self.codes, "codes")
        if codes.ndim == 0:
            raise RuleViolation("HQ-PB-02", "per-block affine needs a tensor of rank >= 1", path="codes",
                                actual=0, expected=">= 1")
        self._set("codes", codes)
        if self.storage not in _ROW.storage_types:
            raise RuleViolation(_ROW.storage_rule, f"per-block affine does not store {self.storage!r}",
                                path="storage", actual=self.storage, expected=", ".join(_ROW.storage_types))
        if not isinstance(self.axis, (int, np.integer)) or not -codes.ndim <= self.axis < codes.ndim:
            raise RuleViolation("HQ-PB-02", "axis names a dimension of the codes", path="axis", actual=self.axis,
                                expected=f"0 .. {codes.ndim - 1}")
        self._set("axis", int(self.axis) % codes.ndim)
        block = self.block_size
        if not isinstance(block, (int, np.integer)) or block < 2:
            raise RuleViolation("HQ-PB-04", "block_size is at least 2", path="block_size", actual=block,
                                expected=">= 2")
        if block & (block - 1):
            raise RuleViolation("HQ-PB-03", "block_size is a power of two", path="block_size", actual=block,
                                expected="a power of two")
        self._set("block_size", int(block))
        ScaleType.named(self.scale_type)  # HQ-PB-08 for an unknown name
        scales = self._block_order(self.scales, "scales", flat_ok)
        try:
            wide = scales.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ArgumentError("scales", "scales are numbers", actual=str(scales.dtype),
                                expected=self.scale_type) from exc
        typed = wide.astype(element_storage.dtype(self.scale_type))
        same = (typed.astype(np.float64) == wide) | (np.isnan(typed.astype(np.float64)) & np.isnan(wide))
        if not same.all():
            j = int(np.flatnonzero(~same)[0])
            raise ArgumentError("scales", f"scales[{j}] is not a {self.scale_type} value, so it would be rounded",
                                actual=repr(float(wide[j])), expected=f"a {self.scale_type} value")
        self._set("scales", typed)
        _in_range(codes, self.storage, "codes", None)
        if self.zero_points is not None:
            zeros = _integers(self._block_order(self.zero_points, "zero_points", flat_ok), "zero_points")
            _in_range(zeros, self.storage, "zero_points", "HQ-PB-22")
            self._set("zero_points", zeros)
