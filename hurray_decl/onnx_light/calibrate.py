"""Type-driven encoding with calibration when scales are omitted (DIGEST.md § 8.5, OL-CAL).

``quantize_with_type(array, struct_type, scales=None, ...)`` is the Python form of the C++
``QuantizeTensor(input, type, parameters, catalogue)`` and of ``ai.rt::Quantize``: the runs are
rebuilt from the type, every block starts from the profile's defaults, explicit inputs override
them, and each block without an explicit scale is calibrated from the values left after outlier
removal, permutation and the forward transform.
"""

from __future__ import annotations

import numpy as np

from hurray_decl.errors import OnnxLightError
from hurray_decl.onnx_light.methods import method_row
from hurray_decl.onnx_light.numerics import LOGICAL_DTYPE_NAMES, LOGICAL_DTYPES, LOGICAL_NAMES
from hurray_decl.onnx_light.ort import quantize_ort_with_type
from hurray_decl.onnx_light.plan import QuantizationPlan, RunArrays
from hurray_decl.onnx_light.portable import Prepared, encode_prepared, forward_values, prepare_plan, source_array
from hurray_decl.onnx_light.profiles import PROFILES, WIRE_PREFIX, QuantizationMethod, parse_quantization_format
from hurray_decl.onnx_light.validate import validate_layout
from hurray_decl.onnx_light.wire import canonical_type, pb, read_geometry, resolve_struct_type, same_message

__all__ = ["quantize_with_type"]

_FLOAT_DTYPES = tuple(LOGICAL_DTYPES.values())


def _fail(code: str, message: str, path: str, actual=None, expected=None) -> OnnxLightError:
    return OnnxLightError(code, message, path=path, actual=actual, expected=expected)


def _float_input(value, name: str) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype not in _FLOAT_DTYPES:
        raise _fail("OL-CAL-06", f"{name} must be {LOGICAL_NAMES}", name, str(array.dtype), LOGICAL_DTYPE_NAMES)
    return array


def _per_block(value, name: str, blocks: int) -> np.ndarray | None:
    """A scalar or rank-1 tensor with one value per block (OL-CAL-04 .. -06)."""
    if value is None:
        return None
    array = _float_input(value, name)
    if array.ndim > 1:
        raise _fail("OL-CAL-04", f"{name} must be a scalar or rank 1", name, array.shape, "rank <= 1")
    if array.size not in (1, blocks):
        raise _fail("OL-CAL-05", f"{name} needs 1 value or one per block", name, array.size, f"1 or {blocks}")
    return np.broadcast_to(array.astype(np.float64).ravel(), (blocks,)).copy()


def _indices(value, name: str, size: int) -> np.ndarray:
    """Permutation or outliers: INT64 rank 1 of the type's length, required when non-zero."""
    if value is None:
        if size:
            raise _fail("OL-CAL-09", f"{name} is required: the type declares {size} entries", name, None, size)
        return np.zeros(0, dtype=np.int64)
    array = np.asarray(value)
    if array.dtype != np.int64 or array.ndim != 1:
        raise _fail("OL-CAL-08", f"{name} must be INT64 of rank 1", name, (str(array.dtype), array.ndim),
                    "int64, rank 1")
    if array.size != size:
        raise _fail("OL-CAL-09", f"{name} length differs from the type's", name, array.size, size)
    return array.copy()


def _matrix(value, name: str, n: int) -> np.ndarray:
    """forward / inverse: rank 2, shape exactly [n, n] (OL-CAL-10)."""
    if value is None:
        if n:
            raise _fail("OL-CAL-10", f"{name} is required as an [{n}, {n}] tensor", name, None, [n, n])
        return np.zeros(0)
    array = _float_input(value, name)
    if array.shape != (n, n):
        raise _fail("OL-CAL-10", f"{name} must have shape exactly [{n}, {n}]", name, list(array.shape), [n, n])
    return array.astype(np.float64).ravel()


def _ort_format(resolved: pb.StructTypeProto):
    """The ORT profile a type names, or None for portable (and unreadable) names."""
    if isinstance(resolved.name, str) and resolved.name.startswith(WIRE_PREFIX):
        try:
            fmt = parse_quantization_format(resolved.name[len(WIRE_PREFIX):])
        except OnnxLightError:
            return None   # read_geometry reports the unknown name
        if not fmt.portable:
            return fmt
    return None


def quantize_with_type(array, struct_type, *, scales=None, zero_points=None, offsets=None,
                       codebooks=None, permutation=None, forward=None, inverse=None, outliers=None,
                       model=None) -> pb.EncodedValueProto:
    """Encode ``array`` into the requested type, calibrating omitted scales.

    A portable type is rebuilt run by run (OL-CAL); an ORT type is an existing ORT value's
    struct_type and is calibrated per (column, K-group) (OL-CAL-20, OL-OP-13).
    """
    source, code = source_array(array)
    if isinstance(struct_type, pb.StructTypeProto):
        requested = struct_type
    elif hasattr(struct_type, "SerializeToString"):
        requested = pb.StructTypeProto.FromString(struct_type.SerializeToString())
    else:
        raise _fail("OL-CAL-12", "the type must be a StructTypeProto", "type", type(struct_type).__name__,
                    "StructTypeProto")
    resolved = resolve_struct_type(requested, model, "type")
    fmt = _ort_format(resolved)
    if fmt is not None:
        refused = dict(offsets=offsets, codebooks=codebooks, permutation=permutation, forward=forward,
                       inverse=inverse, outliers=outliers)
        encoded = quantize_ort_with_type(source, requested, resolved, fmt, _per_block, scales=scales,
                                         zero_points=zero_points, refused=refused)
        encoded.name = ""   # an array has no name: present and empty, as the original writes (OD-13)
        return encoded
    geometry = read_geometry(resolved, "type")
    for i, run in enumerate(geometry.runs):
        validate_layout(run.layout, f"type -> blocks -> runs[{i}] -> parameters")
    count = int(source.size)
    covered = sum(int(r.layout.count) * r.blocks for r in geometry.runs)
    if covered != count:
        raise _fail("OL-CAL-02", "the type's runs do not cover the input exactly", "type -> blocks",
                    covered, count)
    total = geometry.total_blocks
    scale_in = _per_block(scales, "scales", total)
    zp_in = _per_block(zero_points, "zero_points", total)
    offset_in = _per_block(offsets, "offsets", total)
    table_size = sum(r.blocks * r.layout.table_size for r in geometry.runs)
    table_in = None
    if codebooks is not None:
        table_in = _float_input(codebooks, "codebooks").astype(np.float64).ravel()
        if table_in.size != table_size:
            raise _fail("OL-CAL-07", "codebooks must hold every block's table, concatenated",
                        "codebooks", table_in.size, table_size)
    perm = _indices(permutation, "permutation", geometry.permutation)
    outl = _indices(outliers, "outliers", geometry.outliers)
    fwd = _matrix(forward, "forward", geometry.transform)
    inv = _matrix(inverse, "inverse", geometry.transform)

    defaults = PROFILES[geometry.format]
    runs: list[RunArrays] = []
    first, table_at = 0, 0
    for i, run in enumerate(geometry.runs):
        layout, blocks = run.layout, run.blocks
        method = int(layout.method)
        if method == QuantizationMethod.AFFINE and not int(layout.signed_codes):
            zp = float(1 << (int(layout.bits) - 1))
        else:
            zp = 0.0
        size = layout.table_size
        if table_in is not None:
            table = table_in[table_at:table_at + blocks * size].reshape(blocks, size)
        elif method == QuantizationMethod.CODEBOOK:
            fixed = np.asarray(defaults.table_values, dtype=np.float64)
            if fixed.size != size:
                raise _fail("OL-CAL-11", "this codebook block requires explicit codebooks",
                            f"type -> blocks -> runs[{i}]", fixed.size, size)
            table = np.broadcast_to(fixed, (blocks, size)).copy()
        else:
            table = np.zeros((blocks, 0))
        table_at += blocks * size
        sl = slice(first, first + blocks)
        runs.append(RunArrays(
            layout,
            scale_in[sl].copy() if scale_in is not None else np.ones(blocks),
            zp_in[sl].copy() if zp_in is not None else np.full(blocks, zp),
            offset_in[sl].copy() if offset_in is not None else np.zeros(blocks),
            table,
        ))
        first += blocks

    plan = QuantizationPlan(geometry.format, permutation=perm, transform_size=geometry.transform,
                            forward=fwd, inverse=inv, outliers=outl)
    prepared = prepare_plan(plan, count, runs)
    if not same_message(canonical_type(prepared.geometry()), resolved):
        raise _fail("OL-CAL-12", "the type is not the canonical schema of the rebuilt plan", "type")
    if scale_in is None:
        _calibrate(source, prepared)
    encoded = encode_prepared(source, code, prepared)
    encoded.struct_type.CopyFrom(requested)   # the caller's own type: a type_ref stays one (OL-CAL-19)
    encoded.name = ""   # an array has no name: present and empty, as the original writes (OD-13)
    return encoded


def _calibrate(source: np.ndarray, prepared: Prepared) -> None:
    """Set each block's scale from the transformed values (OL-CAL-01, -13 .. -17)."""
    flat = source.astype(np.float64).ravel()
    if not np.isfinite(flat).all():
        return  # encode_prepared refuses the source with OL-NUM-03
    work, _ = forward_values(flat, prepared)
    start = 0
    for i, run in enumerate(prepared.runs):
        stop = start + int(run.layout.count) * run.blocks
        row = method_row(run.layout.method, f"type -> runs[{i}]")
        scale = row.calibrate(work[start:stop].reshape(run.blocks, -1), run, f"type -> runs[{i}]")
        if not np.isfinite(scale).all():
            j = int(np.flatnonzero(~np.isfinite(scale))[0])
            raise _fail("OL-CAL-17", "a calibrated scale is not finite", f"type -> runs[{i}] -> blocks[{j}] -> scale",
                        repr(float(scale[j])), "finite")
        run.scale = scale.astype(np.float64)
        start = stop
