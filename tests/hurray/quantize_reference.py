"""The quantizer as it was before it ran chunk by chunk: whole-array float64 NumPy, kept here
(not in the library) as the reference the chunked quantizer is compared against, bit for bit.

Each function is the previous library code, unchanged but for its imports and warnings kept
quiet; ``quantize`` returns the descriptor's encoded bytes and the buffers, or raises what the
library raised."""

from __future__ import annotations

from typing import Any

import numpy as np

from hurray_decl.errors import ArgumentError, RuleViolation, UnsupportedError
from hurray_decl.hurray.kernels import Geometry, block_order, by_block_row
from hurray_decl.hurray.quantization import scheme
from hurray_decl.hurray.schemes.mxfp import FLOAT32_MAX, MXFP
from hurray_decl.hurray.schemes.nf4 import LEVELS, NF4
from hurray_decl.hurray.schemes.per_block_affine import PerBlockAffine
from hurray_decl.hurray.schemes.per_channel_affine import PerChannelAffine
from hurray_decl.hurray.schemes.per_tensor_affine import PerTensorAffine
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.tables.codes import ScaleType
from hurray_decl.hurray.tables.element_types import BY_NAME
from hurray_decl.hurray.tensor import (
    BufferHandle,
    RowMajor,
    TensorDescriptor,
    validate_buffers,
    write_tensor_descriptor,
)


def cast_up(values: np.ndarray, dtype: Any) -> np.ndarray:
    wanted = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        cast = wanted.astype(dtype)
    low = cast.astype(np.float64) < wanted
    if low.any():
        bits = cast.view(np.dtype(f"u{cast.dtype.itemsize}"))
        cast = np.where(low, (bits + 1).view(cast.dtype), cast)
    return cast


def grouped(array: np.ndarray, axis: int, block: int) -> np.ndarray:
    g = Geometry(tuple(array.shape), axis, block)
    x = np.asarray(array, dtype=np.float64).reshape(g.before, g.extent, g.after)
    if g.padded != g.extent:
        padded = np.full((g.before, g.padded, g.after), np.nan)
        padded[:, : g.extent] = x
        x = padded
    return x.reshape(g.before, g.blocks_per_axis, block, g.after)


def integer_range(storage_name: str) -> tuple[int, int]:
    bounds = storage.element(storage_name).int_range
    if bounds is None:
        raise ValueError(f"{storage_name} is not an integer type")
    return bounds


def affine_calibration(low: Any, high: Any, storage_name: str, symmetric: bool,
                       scale_dtype: Any = "float32") -> tuple[np.ndarray, np.ndarray]:
    qmin, qmax = integer_range(storage_name)
    if symmetric and qmin == 0 and np.nanmin(low, initial=0.0) < 0:
        raise RuleViolation(
            "HQ-ZP-02", "symmetric quantization subtracts no zero point, so unsigned codes cannot hold "
            "negative values; use a signed storage type or symmetric=False",
            path="symmetric", actual=f"{storage_name}, minimum {float(np.nanmin(low))!r}", expected="signed storage")
    low = np.minimum(np.nan_to_num(low, nan=0.0), 0.0)
    high = np.maximum(np.nan_to_num(high, nan=0.0), 0.0)
    if symmetric:
        span = np.maximum(-low, high) / qmax
    else:
        span = (high - low) / (qmax - qmin - 1)
    scales = cast_up(np.where(span > 0, span, 1.0), scale_dtype)
    if symmetric:
        return scales, np.zeros(scales.shape, dtype=np.int64)
    zero_points = qmin - np.floor(low / np.asarray(scales, dtype=np.float64))
    return scales, np.clip(zero_points, qmin, qmax).astype(np.int64)


def affine_codes(x: np.ndarray, scales: Any, zero_points: Any, storage_name: str) -> np.ndarray:
    qmin, qmax = integer_range(storage_name)
    q = np.rint(x / np.asarray(scales, dtype=np.float64)) + zero_points
    q = np.clip(np.nan_to_num(q, nan=0.0), qmin, qmax).astype(np.int64)
    return np.where(np.isnan(x), 0, q)


def per_tensor(x: np.ndarray, options: Any) -> tuple[Any, np.ndarray, tuple[np.ndarray, ...]]:
    scales, zeros = affine_calibration(np.min(x, initial=0.0), np.max(x, initial=0.0),
                                       options.storage, options.symmetric)
    model = PerTensorAffine(scale=float(scales), zero_point=int(zeros))
    return model, affine_codes(x, scales, zeros, options.storage).reshape(-1), ()


def per_channel(x: np.ndarray, options: Any) -> tuple[Any, np.ndarray, tuple[np.ndarray, ...]]:
    g = Geometry(x.shape, options.axis, 1)
    x3 = x.reshape(g.before, g.extent, g.after)
    scales, zeros = affine_calibration(x3.min(axis=(0, 2), initial=0.0), x3.max(axis=(0, 2), initial=0.0),
                                       options.storage, options.symmetric)
    codes = affine_codes(x3, scales[None, :, None], zeros[None, :, None], options.storage)
    model = PerChannelAffine(axis=options.axis, scale_buffer_index=1, symmetric=options.symmetric,
                             zero_point_buffer_index=None if options.symmetric else 2)
    parameters = (scales.astype("<f4"),) + (() if options.symmetric else (zeros.astype("<i4"),))
    return model, codes.reshape(-1), parameters


def per_block(x: np.ndarray, options: Any) -> tuple[Any, np.ndarray, tuple[np.ndarray, ...]]:
    g = Geometry(x.shape, options.axis, options.block_size)
    blocks = grouped(x, options.axis, options.block_size)
    scales, zeros = affine_calibration(block_order(np.nanmin(blocks, axis=2, initial=0.0)),
                                       block_order(np.nanmax(blocks, axis=2, initial=0.0)),
                                       options.storage, options.symmetric, storage.dtype(options.scale_type))
    grid = (g.before, g.blocks_per_axis, 1, g.after)
    codes = affine_codes(blocks, by_block_row(scales, g).reshape(grid), by_block_row(zeros, g).reshape(grid),
                         options.storage)
    model = PerBlockAffine(axis=options.axis, block_size=options.block_size, scale_buffer_index=1,
                           symmetric=options.symmetric, zero_point_buffer_index=None if options.symmetric else 2,
                           scale_type_tag=int(ScaleType.named(options.scale_type)))
    parameters = (scales,) + (() if options.symmetric else (zeros.astype("<i4"),))
    return model, codes.reshape(-1), parameters


def nf4(x: np.ndarray, options: Any) -> tuple[Any, np.ndarray, tuple[np.ndarray, ...]]:
    blocks = grouped(x, options.axis, options.block_size)
    absmax = cast_up(np.nanmax(np.abs(blocks), axis=2, initial=0.0), np.float32)
    divisor = absmax[:, :, None, :].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(divisor > 0, blocks / divisor, 0.0)
    levels = np.asarray(LEVELS)
    codes = np.searchsorted((levels[1:] + levels[:-1]) / 2, ratio, side="left")
    codes = np.where(np.isnan(blocks), 0, codes)
    model = NF4(axis=options.axis, block_size=options.block_size, scale_buffer_index=1)
    return model, codes.reshape(-1), (block_order(absmax),)


def _refuse(bad: np.ndarray, absmax: np.ndarray, code: str, why: str, expected: str) -> None:
    if bad.any():
        a, j, i = (int(v) for v in np.argwhere(bad)[0])
        raise RuleViolation(code, f"an MXFP block cannot hold values this large: {why}",
                            path=f"array -> block (outer {a}, block {j}, inner {i})",
                            actual=float(absmax[a, j, i]), expected=expected)


def mxfp(x: np.ndarray, options: Any) -> tuple[Any, np.ndarray, tuple[np.ndarray, ...]]:
    blocks = grouped(x, options.axis, options.block_size)
    kind = storage.element(options.storage)
    bounds = kind.int_range
    if bounds:
        largest = float(bounds[1])
    else:
        table = storage.value_table(options.storage)
        largest = float(table[np.isfinite(table)].max())
    absmax = np.nanmax(np.abs(blocks), axis=2, initial=0.0)
    with np.errstate(divide="ignore"):
        power = np.where(absmax > 0, np.ceil(np.log2(absmax / largest)), 0.0)
    power += absmax > np.ldexp(largest, power.astype(np.int64))
    power -= (absmax > 0) & (absmax <= np.ldexp(largest, power.astype(np.int64) - 1))
    _refuse(power + 127 > 254, absmax, "HQ-MX-10", "its scale would need an exponent byte above 0xFE",
            f"max |x| <= {2.0 ** 127 * largest!r}")
    exponents = np.clip(power + 127, 1, 254).astype(np.uint8)
    scales = np.exp2(exponents.astype(np.float64) - 127)[:, :, None, :]
    values = blocks / scales
    if bounds:
        values = np.clip(np.rint(values), *bounds)
        stored = values
    else:
        stored = np.clip(values, -largest, largest).astype(storage.NARROW_FLOATS[options.storage]).astype(np.float64)
    with np.errstate(invalid="ignore"):
        result = np.nanmax(np.abs(stored) * scales, axis=2, initial=0.0)
    _refuse(result > FLOAT32_MAX, absmax, "HQ-MX-11", "its dequantized values would exceed float32",
            f"max |x| <= {FLOAT32_MAX!r}")
    model = MXFP(axis=options.axis, block_size=options.block_size, scale_buffer_index=1)
    return model, values.reshape(-1), (block_order(exponents),)


SCHEMES = {"per_tensor_affine": per_tensor, "per_channel_affine": per_channel, "per_block_affine": per_block,
           "nf4": nf4, "mxfp": mxfp}


class Options:
    def __init__(self, axis: int, block_size: int, storage: str, symmetric: bool, scale_type: str) -> None:
        self.axis, self.block_size, self.storage = axis, block_size, storage
        self.symmetric, self.scale_type = symmetric, scale_type


def options(row_name: str, shape: tuple[int, ...], axis: int | None, block_size: int | None,
            storage_name: str | None, symmetric: bool, scale_type: str) -> Options:
    defaults = scheme(row_name).quantize_defaults
    axis = defaults.get("axis", 0) if axis is None else axis
    rank = max(len(shape), 1)
    if not -rank <= axis < rank:
        raise RuleViolation("HQ-PB-02", "axis must name a dimension of the array", path="axis",
                            actual=axis, expected=f"-{rank} <= axis < {rank}")
    axis %= rank
    if block_size is None:
        block_size = defaults.get("block_size", 1)
    if storage_name is None:
        storage_name = defaults.get("storage", "int8" if symmetric else "uint8")
    row = scheme(row_name)
    if storage_name not in row.storage_types:
        raise RuleViolation(row.storage_rule, f"{row.title} does not store {storage_name!r}", path="storage",
                            actual=storage_name, expected=", ".join(row.storage_types))
    ScaleType.named(scale_type)
    return Options(axis, int(block_size), storage_name, bool(symmetric), scale_type)


def quantize(array: Any, scheme_name: str, *, axis: int | None = None, block_size: int | None = None,
             storage: str | None = None, symmetric: bool = True,
             scale_type: str = "float32") -> tuple[bytes, list[bytes]]:
    """The previous ``numerics.quantize``: (encoded descriptor, buffers)."""
    row = scheme(scheme_name)
    if row.quantize is None:
        raise UnsupportedError("HQ-EXT-03", f"{row.title} has no quantizer", path="scheme", actual=row.name)
    try:
        x = np.asarray(array)
    except (TypeError, ValueError) as exc:
        raise ArgumentError("array", f"quantize takes a numeric array: {exc}", actual=type(array).__name__,
                            expected="a float or integer array") from exc
    if x.dtype.kind not in "fiu":
        raise ArgumentError("array", "quantize takes real numbers", actual=str(x.dtype),
                            expected="a float or integer array")
    x = x.astype(np.float64)
    if not np.isfinite(x).all():
        bad = int(np.flatnonzero(~np.isfinite(x.reshape(-1)))[0])
        raise RuleViolation("HQ-PT-03", "a value to quantize is NaN or infinite; no finite scale maps it",
                            path=f"array -> [{bad}]", actual=float(x.reshape(-1)[bad]), expected="finite values")
    chosen = options(row.name, x.shape, axis, block_size, storage, symmetric, scale_type)
    model, elements, parameters = SCHEMES[row.name](x, chosen)
    buffers = [storage_encode(elements, chosen.storage)] + [np.ascontiguousarray(p).tobytes() for p in parameters]
    descriptor = TensorDescriptor(
        type_tag=BY_NAME[chosen.storage].tag,
        shape=tuple(int(n) for n in x.shape),
        layout=RowMajor(),
        buffers=tuple(BufferHandle(byte_size=len(b)) for b in buffers),
        quantization=model,
    )
    encoded = write_tensor_descriptor(descriptor)
    validate_buffers(descriptor, buffers)
    return encoded, buffers


def storage_encode(values: np.ndarray, name: str) -> bytes:
    with np.errstate(invalid="ignore", over="ignore"):  # MXFP padding is NaN (refused after, HQ-MX-08)
        return storage.encode(values, name)
