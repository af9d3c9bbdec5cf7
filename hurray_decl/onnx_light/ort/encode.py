"""ORT encoding: parameters rounded to the source dtype, the zero-point storage choice, codes in
the original's extended-precision steps, and the payload ``B | scales | zero_points``
(OL-ORT-09 .. -22, OL-CAL-20).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hurray_decl.onnx_light.methods.affine import affine_codes, ratio_scales
from hurray_decl.onnx_light.numerics import LOGICAL_DTYPES, narrow, to_logical
from hurray_decl.onnx_light.ort.descriptor import ort_type, read_ort_type
from hurray_decl.onnx_light.ort.geometry import (
    FLOATING,
    IMPLICIT,
    ORT_FORMATS,
    PACKED,
    SOURCE_DTYPE_NAMES,
    SOURCE_DTYPES,
    SOURCE_NAMES,
    OrtGeometry,
    check_block_size,
    group_rows,
    is_int,
    ort_error,
    ort_header,
    real_rows,
)
from hurray_decl.onnx_light.packing import pack_bits
from hurray_decl.onnx_light.plan import QuantizationPlan
from hurray_decl.onnx_light.profiles import QuantizationFormat
from hurray_decl.onnx_light.wire import make_logical_type, pb, same_message

__all__ = [
    "encode_ort",
    "ort_payload",
    "quantize_ort",
    "quantize_ort_with_type",
    "round_parameters",
    "source_code",
    "zero_point_storage",
]


def round_parameters(scales: np.ndarray, zero_points: np.ndarray, dtype: int,
                     path: str) -> tuple[np.ndarray, np.ndarray]:
    """Scales and zero points rounded to the source dtype, as float64 (OL-ORT-10, -11, -14)."""
    target = LOGICAL_DTYPES[dtype]
    out = []
    for name, values in (("scale", scales), ("zero_point", zero_points)):
        if not np.isfinite(values).all():
            j = int(np.flatnonzero(~np.isfinite(values))[0])
            raise ort_error("OL-ORT-14", f"a {name} is not finite", f"{path} -> blocks[{j}] -> {name}",
                        repr(float(values[j])), "finite")
        as_double = narrow(values, dtype).astype(np.float64)
        if not np.isfinite(as_double).all():
            j = int(np.flatnonzero(~np.isfinite(as_double))[0])
            raise ort_error("OL-ORT-10", f"a {name} overflows {target.name}", f"{path} -> blocks[{j}] -> {name}",
                        repr(float(values[j])), f"finite in {target.name}")
        out.append(as_double)
    scale, zp = out
    under = (scale == 0) & (scales != 0)
    if under.any():
        j = int(np.flatnonzero(under)[0])
        raise ort_error("OL-ORT-11", f"a non-zero scale underflows to 0 in {target.name}",
                    f"{path} -> blocks[{j}] -> scale", repr(float(scales[j])), "a representable non-zero scale")
    return scale, zp


def zero_point_storage(zero_points: np.ndarray, bits: int) -> str:
    """Implicit when all are the midpoint, packed when all are in-range integers, else float
    (OL-ORT-17)."""
    if np.all(zero_points == float(1 << (bits - 1))):
        return IMPLICIT
    whole = zero_points == np.floor(zero_points)
    if np.all(whole & (zero_points >= 0) & (zero_points <= (1 << bits) - 1)):
        return PACKED
    return FLOATING


def encode_ort(source: np.ndarray, dtype: int, fmt: QuantizationFormat, block_size: int,
               scales: np.ndarray, zero_points: np.ndarray, path: str = "plan") -> pb.EncodedValueProto:
    """Encode a ``[K, N]`` source with one scale and zero point per block (OL-ORT-10 .. -22)."""
    flat = source.astype(np.float64)
    if not np.isfinite(flat).all():
        j = int(np.flatnonzero(~np.isfinite(flat.ravel()))[0])
        raise ort_error("OL-NUM-03", "the source holds a non-finite value", f"source[{j}]",
                    repr(float(flat.ravel()[j])), "finite")
    k, n = flat.shape
    scale, zp = round_parameters(np.asarray(scales, dtype=np.float64), np.asarray(zero_points, dtype=np.float64),
                                 dtype, path)
    bits = ORT_FORMATS[fmt]
    geometry = OrtGeometry(fmt, k, n, block_size, dtype, zero_point_storage(zp, bits))
    rows = group_rows(flat, geometry)
    real = real_rows(geometry)
    zero = scale == 0
    if zero.any():
        busy = zero & (rows != 0).any(axis=1)
        if busy.any():
            j = int(np.flatnonzero(busy)[0])
            raise ort_error("OL-ORT-12", "a zero scale needs a group whose source values are all 0",
                        f"{path} -> blocks[{j}] -> scale", 0.0, "a non-zero scale")
    # Zero-scale blocks (all zeros) encode with scale 1, so that every code there is the zero
    # point, as the original's v = zero point; negative scales divide as they are (OL-ORT-13).
    work_scale = np.where(zero, 1.0, scale)
    codes = affine_codes(rows, work_scale, zp, np.zeros_like(zp), 0, (1 << bits) - 1)
    codes[~real] = 0
    with np.errstate(over="ignore", invalid="ignore"):
        rebuilt = (codes - zp[:, None]) * scale[:, None]
    to_logical(rebuilt[real], dtype, "OL-ORT-16", "reconstruction")
    encoded = pb.EncodedValueProto()
    encoded.struct_type.CopyFrom(ort_type(geometry))
    encoded.logical_type.CopyFrom(make_logical_type(dtype, (k, n)))
    encoded.raw_data = ort_payload(geometry, codes, scale, zp)
    return encoded


def ort_payload(geometry: OrtGeometry, codes: np.ndarray, scale: np.ndarray, zp: np.ndarray) -> bytes:
    target = LOGICAL_DTYPES[geometry.dtype]
    parts = [pack_bits(codes.astype(np.uint32), geometry.bits).tobytes(),
             narrow(scale, geometry.dtype).astype(target.newbyteorder("<")).tobytes()]
    if geometry.zero_points == PACKED:
        table = zp.astype(np.uint32).reshape(geometry.n, geometry.groups)
        parts.append(pack_bits(table, geometry.bits).tobytes())
    elif geometry.zero_points == FLOATING:
        parts.append(narrow(zp, geometry.dtype).astype(target.newbyteorder("<")).tobytes())
    return b"".join(parts)


def _check_plan(plan: QuantizationPlan, shape: Sequence[int], path: str = "plan") -> tuple[int, np.ndarray, np.ndarray]:
    """The block size, scales and zero points of an ORT plan for a ``shape`` source
    (OL-ORT-05 .. -07, -09)."""
    fmt = plan._format
    bits = ORT_FORMATS[fmt]
    matrix = list(plan.matrix_shape)
    if len(matrix) != 2 or not all(is_int(d) and int(d) > 0 for d in matrix):
        raise ort_error("OL-ORT-07", "an ORT plan's matrix_shape must be [K, N] with K, N > 0",
                    f"{path} -> matrix_shape", matrix, "[K, N]")
    if len(shape) != 2 or tuple(int(d) for d in matrix) != tuple(shape):
        raise ort_error("OL-ORT-07", "the source is not the plan's [K, N] matrix", "source -> shape",
                    list(shape), [int(d) for d in matrix])
    runs = plan._runs
    if len(runs) != 1:
        raise ort_error("OL-ORT-05", "an ORT plan has exactly one run", f"{path} -> runs", len(runs), 1)
    layout = runs[0].layout
    block_size = check_block_size(int(layout.count), f"{path} -> runs[0] -> layout -> count")
    if layout.header() != ort_header(block_size, bits):
        raise ort_error("OL-ORT-05", "the ORT run header must be [block_size, 0, bits, 0, 1, 0, 1, 0, 10]",
                    f"{path} -> runs[0] -> layout", list(layout.header()), list(ort_header(block_size, bits)))
    k, n = shape
    run = runs[0]
    if len(run) != n * -(-k // block_size):
        raise ort_error("OL-ORT-06", "an ORT plan has N x ceil(K / block_size) blocks", f"{path} -> runs[0] -> blocks",
                    len(run), n * -(-k // block_size))
    for name in ("permutation", "forward", "inverse", "outliers"):
        if len(getattr(plan, name)):
            raise ort_error("OL-ORT-09", f"ORT layouts have no {name}", f"{path} -> {name}",
                        len(getattr(plan, name)), 0)
    if int(plan.transform_size):
        raise ort_error("OL-ORT-09", "ORT layouts have no transform",
                        f"{path} -> transform_size", plan.transform_size, 0)
    tables = [len(t) for t in run._ragged] if run._codebook is None else [run._codebook.shape[1]] * len(run)
    if any(tables):
        j = next(i for i, t in enumerate(tables) if t)
        raise ort_error("OL-ORT-09", "ORT layouts have no codebook", f"{path} -> blocks[{j}] -> codebook", tables[j], 0)
    params = np.stack([run._scale, run._zero_point, run._offset], axis=1)
    bad = params[:, 2] != 0
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ort_error("OL-ORT-09", "ORT layouts have no offset", f"{path} -> blocks[{j}] -> offset",
                    repr(float(params[j, 2])), 0.0)
    return block_size, params[:, 0].copy(), params[:, 1].copy()


def source_code(array: np.ndarray) -> int:
    for code in SOURCE_DTYPES:
        if array.dtype == LOGICAL_DTYPES[code]:
            return code
    raise ort_error("OL-ORT-08", f"an ORT source is {SOURCE_NAMES}", "source -> dtype", str(array.dtype),
                SOURCE_DTYPE_NAMES)


def quantize_ort(array, plan: QuantizationPlan) -> pb.EncodedValueProto:
    """Encode with an explicit ORT plan: parameters as supplied, rounded to the dtype."""
    source = array if isinstance(array, np.ndarray) else np.asarray(array)
    code = source_code(source)
    block_size, scales, zps = _check_plan(plan, source.shape)
    return encode_ort(source, code, plan._format, block_size, scales, zps)


def quantize_ort_with_type(source: np.ndarray, requested: pb.StructTypeProto, resolved: pb.StructTypeProto,
                           fmt: QuantizationFormat, per_block, *, scales=None, zero_points=None,
                           refused: dict[str, Any] | None = None) -> pb.EncodedValueProto:
    """Encode into an existing ORT value's type, calibrating omitted scales per (column, group).

    ``per_block(value, name, blocks)`` parses a scalar or per-block parameter tensor (OL-CAL-04
    .. -06); ``refused`` names the inputs ORT layouts do not have (OL-ORT-09).
    """
    for name, value in (refused or {}).items():
        if value is not None and np.asarray(value).size:
            raise ort_error("OL-ORT-09", f"ORT layouts take no {name}", name, np.asarray(value).size, "absent")
    code = source_code(source)
    info = read_ort_type(resolved, fmt, "type")
    if source.ndim != 2:
        raise ort_error("OL-ORT-07", "an ORT source is a [K, N] matrix",
                        "source -> shape", list(source.shape), "[K, N]")
    k, n = source.shape
    expected = OrtGeometry(fmt, int(k), int(n), info.block_size, code, info.zero_points)
    if k == 0 or (info.n, info.groups, info.dtype) != (n, expected.groups, code):
        raise ort_error("OL-OP-13", "the ORT destination type does not match this source's matrix or dtype",
                    "type", [info.n, info.groups, info.dtype], [n, expected.groups, code])
    bits = ORT_FORMATS[fmt]
    blocks = n * expected.groups
    zp = per_block(zero_points, "zero_points", blocks)
    if zp is None:
        zp = np.full(blocks, float(1 << (bits - 1)))
    scale = per_block(scales, "scales", blocks)
    if scale is None:
        rows = group_rows(source.astype(np.float64), expected)   # padding rows are 0: they never count
        if not np.isfinite(rows).all():
            raise ort_error("OL-NUM-03", "the source holds a non-finite value", "source", "non-finite", "finite")
        scale = ratio_scales(rows, 0 - zp, (1 << bits) - 1 - zp)
        if not np.isfinite(scale).all():
            j = int(np.flatnonzero(~np.isfinite(scale))[0])
            raise ort_error("OL-CAL-17", "a calibrated scale is not finite", f"type -> blocks[{j}] -> scale",
                        repr(float(scale[j])), "finite")
    encoded = encode_ort(source, code, fmt, info.block_size, scale, zp, "type")
    if not same_message(encoded.struct_type, resolved):
        raise ort_error("OL-OP-13", "the ORT destination type's zero-point storage differs from the result's",
                    "type -> zero_points", info.zero_points,
                    read_ort_type(encoded.struct_type, fmt, "result").zero_points)
    encoded.struct_type.CopyFrom(requested)
    return encoded
