"""Conversion between ORT MatMulNBits values, onnx-light int4/int8 affine runs and Hurray per-block
affine (:class:`hurray_decl.convert.BlockParts`), wherever the target can express the source.

All three describe ``x = scale[b] * (q - z[b])`` over blocks of ``K`` elements along one axis:

* Hurray per-block: codes in logical order, blocks ``b = outer * ceil(S / K) + i_axis // K`` with
  ``outer`` the row-major index over the other axes, integer zero points, non-zero scales
  (float16, bfloat16 or float32), storage int/uint 2, 4 or 8.
* ORT MatMulNBits: a ``[K, N]`` matrix blocked along axis 0 in exactly that order, unsigned codes,
  a power-of-two block of at least 16, scales in the matrix dtype.
* onnx-light ``int4`` / ``int8``: signed codes in contiguous blocks of the flattened, possibly
  permuted, values. Blocks along axis ``a`` are contiguous after the permutation that moves ``a``
  last (none when ``a`` already is), so each row of the other axes is ``S // K`` full blocks and
  one partial block.

Codes and scales are copied, never re-quantized, so a representable input converts and comes
back byte for byte. Anything else is refused with :class:`~hurray_decl.errors.UnsupportedError`
carrying the code of the rule the target cannot satisfy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hurray_decl.convert.parts import BlockParts
from hurray_decl.errors import UnsupportedError
from hurray_decl.onnx_light.codec import unwrap_value
from hurray_decl.onnx_light.numerics import LOGICAL_DTYPES, LOGICAL_NAMES, DataType, to_logical
from hurray_decl.onnx_light.ort import (
    FLOATING,
    ORT_FORMATS,
    OrtGeometry,
    check_block_size,
    ort_payload,
    ort_type,
    read_ort,
    zero_point_storage,
)
from hurray_decl.onnx_light.ort.geometry import SOURCE_DTYPE_NAMES, SOURCE_DTYPES, SOURCE_NAMES
from hurray_decl.onnx_light.packing import pack_bits, sign_extend, unpack_bits
from hurray_decl.onnx_light.plan import QuantizationBlockLayout, RunArrays
from hurray_decl.onnx_light.portable import Prepared, build_payload, decode_runs, open_value, read_portable, reconstruct
from hurray_decl.onnx_light.profiles import PROFILES, QuantizationFormat, QuantizationMethod
from hurray_decl.onnx_light.wire import canonical_type, make_logical_type, pb

__all__ = ["PORTABLE_FORMATS", "AffineBlocks", "affine_blocks", "from_block_parts", "ort_to_portable",
           "portable_to_ort", "to_block_parts"]

PORTABLE_FORMATS = {QuantizationFormat.INT4: 4, QuantizationFormat.INT8: 8}
"""The onnx-light affine profiles these conversions read and write: signed codes, zero point 0."""

SCALE_DATA_TYPES: dict[str, int] = {code.dtype.name: code for code in SOURCE_DTYPES}
"""The onnx-light data type of each scale type name (the Hurray scale_type_tag code space is
:class:`hurray_decl.hurray.tables.codes.ScaleType`)."""
_SCALE_NAMES = {code: name for name, code in SCALE_DATA_TYPES.items()}
_STORAGE = {f"{sign}int{bits}": (bits, sign == "") for bits in (2, 4, 8) for sign in ("", "u")}
"""Hurray per-block storage names: (bits, signed)."""


def _refuse(code: str, why: str, path: str, actual=None, expected=None) -> UnsupportedError:
    return UnsupportedError(code, why, path=path, actual=actual, expected=expected)




def _storage(name: str) -> tuple[int, bool]:
    if name not in _STORAGE:
        raise _refuse("HQ-PB-14", "per-block affine storage is int8, uint8, int4, uint4, int2 or uint2", "storage",
                      name, sorted(_STORAGE))
    return _STORAGE[name]


def _finish(codes: np.ndarray, zps: np.ndarray, bits: int, signed_source: bool, storage: str | None,
            symmetric: bool | None, scales: np.ndarray, scale_type: str, axis: int, block: int):
    """Shift codes and zero points to the requested storage and pack the BlockParts."""
    target = storage or f"{'' if signed_source else 'u'}int{bits}"
    target_bits, signed = _storage(target)
    if target_bits != bits:
        raise _refuse("HQ-PB-14", f"{bits}-bit codes need {bits}-bit storage", "storage", target,
                      f"int{bits}/uint{bits}")
    shift = 0 if signed == signed_source else (-(1 << (bits - 1)) if signed else 1 << (bits - 1))
    codes = codes + shift
    zps = zps + shift
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if ((zps < lo) | (zps > hi)).any():
        j = int(np.flatnonzero((zps < lo) | (zps > hi))[0])
        raise _refuse("HQ-PB-22", f"a zero point is outside the {target} range, so per-block affine cannot "
                      "subtract it", f"zero_points[{j}]", int(zps[j]), f"{lo} .. {hi}")
    all_zero = bool((zps == 0).all())
    if symmetric and not all_zero:
        raise _refuse("HQ-PB-22", "a symmetric tensor needs every zero point to be 0", "zero_points",
                      int(zps[np.flatnonzero(zps)[0]]), 0)
    zero_points = None if (all_zero if symmetric is None else symmetric) else zps.astype(np.int64)
    return BlockParts.from_block_order(codes.astype(np.int64), target, axis, block, scales, scale_type, zero_points)


# --- ORT ---------------------------------------------------------------------------------------------

def _ort_parts(opened, storage, symmetric):
    value = read_ort(opened.resolved, opened.format, opened.dtype, opened.shape, opened.value.raw_data)
    g = value.geometry
    zps = value.zero_points.ravel()
    if g.zero_points == FLOATING and (zps != np.floor(zps)).any():
        j = int(np.flatnonzero(zps != np.floor(zps))[0])
        raise _refuse("HQ-PB-22", "a fractional zero point has no per-block affine form (zero points are "
                      "integers)", f"zero_points[{j}]", float(zps[j]), "an integer")
    scales = value.scales.ravel()
    if (scales.astype(np.float64) == 0).any():
        j = int(np.flatnonzero(scales.astype(np.float64) == 0)[0])
        raise _refuse("HQ-PB-13", "a zero scale has no per-block affine form", f"scales[{j}]", 0.0, "non-zero")
    codes = value.codes.astype(np.int64).reshape(g.n, g.groups * g.block_size)[:, :g.k].T
    return _finish(np.ascontiguousarray(codes), zps.astype(np.int64), g.bits, False, storage, symmetric,
                   scales.copy(), _SCALE_NAMES[g.dtype], 0, g.block_size)


def _ort_from_parts(parts, fmt: QuantizationFormat) -> pb.EncodedValueProto:
    bits = ORT_FORMATS[fmt]
    codes, zps, block = _common_checks(parts, bits)
    if codes.ndim != 2 or parts.axis != 0:
        raise _refuse("OL-ORT-07", "an ORT value is a [K, N] matrix blocked along K (axis 0)", "axis",
                      (codes.ndim, parts.axis), "rank 2, axis 0")
    block = check_block_size(block)
    k, n = codes.shape
    if k == 0 or n == 0:
        raise _refuse("OL-ORT-01", "an ORT matrix has K, N > 0", "codes", list(codes.shape), "K, N > 0")
    dtype = _scale_code(parts)
    scales = np.asarray(parts.scales, dtype=LOGICAL_DTYPES[dtype]).ravel()
    geometry = OrtGeometry(fmt, k, n, block, dtype, zero_point_storage(zps.astype(np.float64), bits))
    if scales.size != n * geometry.groups or zps.size != scales.size:
        raise _refuse("OL-ORT-06", "one scale and zero point per (column, K-group) block", "scales",
                      scales.size, n * geometry.groups)
    rows = np.zeros((n, geometry.groups * block), dtype=np.int64)
    rows[:, :k] = codes.T
    rows = rows.reshape(n * geometry.groups, block)
    wide = scales.astype(np.float64)
    real = np.zeros_like(rows, dtype=bool).reshape(n, -1)
    real[:, :k] = True
    to_logical(((rows - zps[:, None]) * wide[:, None])[real.reshape(rows.shape)], dtype, "OL-ORT-16", "reconstruction")
    encoded = pb.EncodedValueProto()
    encoded.struct_type.CopyFrom(ort_type(geometry))
    encoded.logical_type.CopyFrom(make_logical_type(dtype, (k, n)))
    encoded.raw_data = ort_payload(geometry, rows, wide, zps.astype(np.float64))
    return encoded


# --- portable int4 / int8 -------------------------------------------------------------------------------

def _moved_order(shape: tuple[int, ...], axis: int) -> np.ndarray:
    """Flat indices in the order that walks ``axis`` innermost: the gather permutation."""
    return np.moveaxis(np.arange(int(np.prod(shape))).reshape(shape), axis, -1).ravel()


def _block_counts(shape: tuple[int, ...], axis: int, block: int) -> np.ndarray:
    size = shape[axis]
    outer = int(np.prod(shape)) // size if size else 0
    per_row = [block] * (size // block) + ([size % block] if size % block else [])
    return np.tile(np.array(per_row, dtype=np.int64), outer)


def _portable_parts(opened, model, storage, symmetric, scale_type):
    fmt = opened.format
    bits = PORTABLE_FORMATS[fmt]
    decoded = read_portable(opened.value, model, opened)
    p = decoded.prepared
    shape = decoded.shape
    if p.transform or p.outliers.size:
        raise _refuse("HQ-PB-22", "transforms and outliers have no per-block affine form", "value",
                      (p.transform, int(p.outliers.size)), "none")
    if not shape or int(np.prod(shape)) == 0:
        raise _refuse("HQ-PB-02", "per-block affine needs a non-empty tensor with an axis", "value -> logical_type",
                      list(shape), "rank >= 1, elements > 0")
    counts = np.concatenate([np.full(r.blocks, int(r.layout.count)) for r in p.runs])
    offsets = np.concatenate([r.offset for r in p.runs])
    if (offsets != 0).any():
        raise _refuse("HQ-PB-22", "a block offset has no per-block affine form", "offset",
                      float(offsets[np.flatnonzero(offsets)[0]]), 0.0)
    identity = p.permutation.size == 0
    axis = None
    for candidate in reversed(range(len(shape))):
        order = _moved_order(shape, candidate)
        same = np.array_equal(order, np.arange(order.size)) if identity else np.array_equal(order, p.permutation)
        block = int(counts[0])
        if same and 2 <= block <= shape[candidate] and not block & (block - 1) \
                and np.array_equal(_block_counts(shape, candidate, block), counts):
            axis = candidate
            break
    if axis is None:
        raise _refuse("HQ-PB-15", "the blocks are not contiguous blocks of one power-of-two size along one axis",
                      "value -> blocks", counts[:8].tolist(), "ceil(S / K) blocks per row along one axis")
    flat = []
    for run, data, i in zip(p.runs, decoded.codes, range(len(p.runs))):
        unpacked = unpack_bits(data, int(run.layout.count), bits, f"value -> runs[{i}]")
        flat.append(sign_extend(unpacked, bits).astype(np.int64).ravel())
    work = np.concatenate(flat)
    codes = np.empty_like(work)
    if identity:
        codes = work
    else:
        codes[p.permutation] = work
    scales = np.concatenate([r.scale for r in p.runs])
    name = scale_type or "float32"
    if name not in SCALE_DATA_TYPES:
        raise _refuse("HQ-PB-08", "per-block affine scales are float16, bfloat16 or float32", "scale_type", name,
                      sorted(SCALE_DATA_TYPES))
    with np.errstate(over="ignore"):   # an overflow is not exact: refused just below
        narrow = scales.astype(np.float32).astype(LOGICAL_DTYPES[SCALE_DATA_TYPES[name]])
    if (narrow.astype(np.float64) != scales).any():
        j = int(np.flatnonzero(narrow.astype(np.float64) != scales)[0])
        raise _refuse("HQ-PB-08", f"a scale is not exactly representable as {name}", f"scales[{j}]",
                      repr(float(scales[j])), f"a {name} value")
    zps = np.concatenate([r.zero_point for r in p.runs]).astype(np.int64)
    return _finish(codes.reshape(shape), zps, bits, True, storage, symmetric, narrow, name, axis, int(counts[0]))


@dataclass(frozen=True)
class AffineBlocks:
    """An onnx-light affine value's blocks in flat element order: ``(code - zero_point) * scale + offset``.

    ``counts``, ``scales``, ``zero_points`` and ``offsets`` have one entry per block (float64,
    as the payload holds them); ``codes`` one per element (int64, signed when the profile is).
    """

    format: QuantizationFormat
    shape: tuple[int, ...]
    dtype: int
    counts: np.ndarray
    scales: np.ndarray
    zero_points: np.ndarray
    offsets: np.ndarray
    codes: np.ndarray


def affine_blocks(encoded, model=None) -> AffineBlocks:
    """The blocks of a portable affine onnx-light value (int4, int8, q2_k .. q6_k, ...) in element order.

    Refused: other methods (OL-PROF-02), and values with a permutation, a transform or outliers,
    whose blocks are not contiguous runs of the logical elements (HQ-PB-15).
    """
    encoded, model = unwrap_value(encoded, model)
    opened = open_value(encoded, model)
    fmt = opened.format
    if fmt is None or not fmt.portable or PROFILES[fmt].method != QuantizationMethod.AFFINE:
        raise _refuse("OL-PROF-02", "only portable affine values have blocks of codes, scales and offsets",
                      "value -> struct_type -> name", opened.resolved.name, "a portable affine profile")
    decoded = read_portable(opened.value, model, opened)
    p = decoded.prepared
    if p.transform or p.outliers.size or p.permutation.size:
        raise _refuse("HQ-PB-15", "a permutation, a transform or outliers move values out of contiguous blocks",
                      "value", (int(p.permutation.size), p.transform, int(p.outliers.size)), "none")
    codes = []
    for i, (run, data) in enumerate(zip(p.runs, decoded.codes)):
        bits = int(run.layout.bits)
        unpacked = unpack_bits(data, int(run.layout.count), bits, f"value -> runs[{i}]")
        codes.append((sign_extend(unpacked, bits) if run.layout.signed_codes else unpacked).astype(np.int64).ravel())
    counts = np.concatenate([np.full(r.blocks, int(r.layout.count), np.int64) for r in p.runs])
    return AffineBlocks(fmt, tuple(decoded.shape), int(opened.dtype), counts,
                        np.concatenate([r.scale for r in p.runs]), np.concatenate([r.zero_point for r in p.runs]),
                        np.concatenate([r.offset for r in p.runs]), np.concatenate(codes))


def _portable_from_parts(parts, fmt: QuantizationFormat, dtype: int) -> pb.EncodedValueProto:
    bits = PORTABLE_FORMATS[fmt]
    codes, zps, block = _common_checks(parts, bits, signed=True)
    shape = tuple(codes.shape)
    axis = int(parts.axis)
    if not shape or axis >= len(shape) or codes.size == 0:
        raise _refuse("HQ-PB-02", "the axis must exist in a non-empty tensor", "axis", axis, f"< {len(shape)}")
    counts = _block_counts(shape, axis, block)
    scales = np.asarray(parts.scales).astype(np.float64).ravel()
    if scales.size != counts.size or zps.size != counts.size:
        raise _refuse("HQ-PB-15", "one scale and zero point per block", "scales", scales.size, counts.size)
    if (scales <= 0).any() or not np.isfinite(scales).all():
        j = int(np.flatnonzero((scales <= 0) | ~np.isfinite(scales))[0])
        raise _refuse("OL-PLAN-11", "onnx-light affine scales are finite and > 0", f"scales[{j}]",
                      repr(float(scales[j])), "> 0")
    order = _moved_order(shape, axis)
    permutation = np.zeros(0, np.int64) if np.array_equal(order, np.arange(order.size)) else order.astype(np.int64)
    work = codes.ravel()[order]
    runs, packed, start, first = [], [], 0, 0
    # consecutive blocks of one size form a run; the descriptor merges equal neighbours anyway
    boundaries = np.flatnonzero(np.diff(counts)) + 1
    for stop in boundaries.tolist() + [counts.size]:
        count, blocks = int(counts[first]), stop - first
        layout = QuantizationBlockLayout(count, 0, bits, 1, 1, 0, 1, 0, 10)
        sl = slice(first, stop)
        runs.append(RunArrays(layout, scales[sl].copy(), zps[sl].astype(np.float64), np.zeros(blocks),
                              np.zeros((blocks, 0))))
        values = work[start:start + count * blocks].reshape(blocks, count)
        packed.append(pack_bits((values & ((1 << bits) - 1)).astype(np.uint32), bits))
        start += count * blocks
        first = stop
    prepared = Prepared(fmt, runs, permutation, np.zeros(0, np.int64), 0, np.zeros(0), np.zeros(0))
    decoded = reconstruct(decode_runs(prepared, packed, codes.size, "parts"), prepared, np.zeros(0))
    to_logical(decoded, dtype, "OL-NUM-22", "reconstruction")
    geometry = prepared.geometry()
    encoded = pb.EncodedValueProto()
    encoded.struct_type.CopyFrom(canonical_type(geometry))
    encoded.logical_type.CopyFrom(make_logical_type(dtype, shape))
    encoded.raw_data = build_payload(geometry, prepared, np.zeros(0), packed)
    return encoded


# --- shared checks and the public functions --------------------------------------------------------

def _common_checks(parts, bits: int, signed: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
    """Codes and zero points shifted to ``signed`` ``bits``-bit form, and the block size."""
    part_bits, part_signed = _storage(parts.storage)
    if part_bits != bits:
        raise _refuse("HQ-PB-14", f"{part_bits}-bit storage does not convert to {bits}-bit codes", "storage",
                      parts.storage, f"int{bits} or uint{bits}")
    block = int(parts.block_size)
    if block < 2 or block & (block - 1):
        raise _refuse("HQ-PB-03", "block_size must be a power of two >= 2", "block_size", block, "a power of two")
    codes = np.asarray(parts.codes).astype(np.int64)
    zps = (np.zeros(np.asarray(parts.scales).size, np.int64) if parts.zero_points is None
           else np.asarray(parts.zero_points).astype(np.int64).ravel())
    shift = 0 if part_signed == signed else (-(1 << (bits - 1)) if signed else 1 << (bits - 1))
    codes, zps = codes + shift, zps + shift
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    for name, values in (("codes", codes.ravel()), ("zero_points", zps)):
        bad = (values < lo) | (values > hi)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise _refuse("OL-PLAN-16" if signed else "OL-ORT-15", f"a {name} value does not fit "
                          f"{'signed' if signed else 'unsigned'} {bits}-bit codes", f"{name}[{j}]", int(values[j]),
                          f"{lo} .. {hi}")
    return codes, zps, block


def _scale_code(parts) -> int:
    if parts.scale_type not in SCALE_DATA_TYPES:
        raise _refuse("OL-ORT-08", f"ORT scales are {SOURCE_DTYPE_NAMES}", "scale_type", parts.scale_type,
                      sorted(SCALE_DATA_TYPES))
    return SCALE_DATA_TYPES[parts.scale_type]


def to_block_parts(encoded, model=None, *, storage: str | None = None, symmetric: bool | None = None,
                   scale_type: str | None = None):
    """Split an ORT MatMulNBits value or an onnx-light int4/int8 value into ``BlockParts``.

    ``storage`` picks the Hurray storage name (default: ``uint<bits>`` for ORT, ``int<bits>`` for
    onnx-light); codes and zero points are shifted by ``2^(bits-1)`` between signed and unsigned.
    ``symmetric`` (default: when every zero point is 0) returns ``zero_points=None``. ORT scales
    keep the matrix dtype; onnx-light scales become ``scale_type`` (default float32) when exact.
    """
    encoded, model = unwrap_value(encoded, model)
    opened = open_value(encoded, model)
    if opened.format in ORT_FORMATS:
        parts = _ort_parts(opened, storage, symmetric)
        if parts.block_size > parts.codes.shape[0]:
            raise _refuse("HQ-PB-05", "per-block affine refuses a block_size larger than the blocked axis (K)",
                          "block_size", parts.block_size, f"<= K = {parts.codes.shape[0]}")
        return parts
    if opened.format in PORTABLE_FORMATS:
        return _portable_parts(opened, model, storage, symmetric, scale_type)
    raise _refuse("OL-PROF-02", "only ort_matmulnbits_int2/int4/int8, int4 and int8 values convert to per-block "
                  "affine parts", "value -> struct_type -> name", opened.resolved.name,
                  "ort_matmulnbits_*, int4 or int8")


def from_block_parts(parts, format: QuantizationFormat, *, dtype=None) -> pb.EncodedValueProto:
    """Build an ORT MatMulNBits value or an onnx-light int4/int8 value from ``BlockParts``.

    ORT values take the scales' dtype as their matrix dtype. onnx-light values take ``dtype`` (a
    NumPy floating dtype, default float32) as their logical dtype.
    """
    if not isinstance(format, QuantizationFormat):
        raise _refuse("OL-PROF-04", "format must be a QuantizationFormat", "format", repr(format), "QuantizationFormat")
    if format in ORT_FORMATS:
        return _ort_from_parts(parts, format)
    if format in PORTABLE_FORMATS:
        code: int = DataType.FLOAT
        if dtype is not None:
            matches = [c for c, d in LOGICAL_DTYPES.items() if np.dtype(dtype) == d]
            if not matches:
                raise _refuse("OL-NUM-01", f"the logical dtype is {LOGICAL_NAMES}", "dtype",
                              str(dtype), "a floating dtype")
            code = matches[0]
        return _portable_from_parts(parts, format, code)
    raise _refuse("OL-PROF-02", "parts convert only to ort_matmulnbits_int2/int4/int8, int4 or int8", "format",
                  format.wire_name, "ort_matmulnbits_*, int4 or int8")


def ort_to_portable(encoded, model=None) -> pb.EncodedValueProto:
    """An ORT int4/int8 value as an onnx-light int4/int8 value with the same decoded values.

    The blocks run along K, so the onnx-light value gathers the matrix column by column (a
    permutation) unless N is 1. Fractional zero points and zero or negative scales are refused.
    """
    opened = open_value(encoded, model)
    if opened.format not in (QuantizationFormat.ORT_MATMULNBITS_INT4, QuantizationFormat.ORT_MATMULNBITS_INT8):
        raise _refuse("OL-PROF-02", "only ort_matmulnbits_int4 and _int8 convert to onnx-light int4/int8",
                      "value -> struct_type -> name", opened.resolved.name, "ort_matmulnbits_int4 or _int8")
    parts = _ort_parts(opened, None, False)
    target = QuantizationFormat.INT4 if ORT_FORMATS[opened.format] == 4 else QuantizationFormat.INT8
    return _portable_from_parts(parts, target, opened.dtype)


def portable_to_ort(encoded, model=None) -> pb.EncodedValueProto:
    """An onnx-light int4/int8 ``[K, N]`` value blocked along K as an ORT int4/int8 value.

    The block size is read from the runs, so each column needs at least one full block (K at
    least the block size); scales must be exact in the matrix dtype.
    """
    opened = open_value(encoded, model)
    if opened.format not in PORTABLE_FORMATS:
        raise _refuse("OL-PROF-02", "only int4 and int8 values convert to ORT MatMulNBits",
                      "value -> struct_type -> name", opened.resolved.name, "int4 or int8")
    if opened.dtype == DataType.DOUBLE:
        raise _refuse("OL-ORT-08", f"an ORT matrix is {SOURCE_NAMES}", "value -> logical_type", DataType.DOUBLE.name,
                      SOURCE_DTYPE_NAMES)
    parts = _portable_parts(opened, model, None, False, _SCALE_NAMES[opened.dtype])
    target = (QuantizationFormat.ORT_MATMULNBITS_INT4 if PORTABLE_FORMATS[opened.format] == 4
              else QuantizationFormat.ORT_MATMULNBITS_INT8)
    return _ort_from_parts(parts, target)

