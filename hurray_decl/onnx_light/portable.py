"""Encoding and decoding portable onnx-light values (DIGEST.md § 8): the pipeline pieces.

Encoding: validate the plan, read the source, save and zero the outliers, gather through the
permutation, apply the forward transform, encode every run with its registered method, then
(unless every block's magnitude is bounded) decode the result again and refuse a reconstruction
that is not finite in the source dtype.

Decoding: check the message, resolve the type, size it, interpret and re-canonicalize the
descriptor, parse raw_data with the Construct schema built from it, validate every block, decode
each run, undo the transform, scatter through the permutation and restore the outliers.

This module knows neither ORT layouts nor parameter sets; :mod:`.values` dispatches between
portable and ORT values and :mod:`.codec` adds compact values on top.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import construct as cs
import numpy as np

from hurray_decl.errors import HurrayDeclError, OnnxLightError
from hurray_decl.onnx_light.extended import row_products
from hurray_decl.onnx_light.methods import method_row
from hurray_decl.onnx_light.numerics import (
    LARGEST,
    LOGICAL_DTYPE_NAMES,
    LOGICAL_DTYPES,
    LOGICAL_NAMES,
    DataType,
    dtype_code,
    narrow,
    to_logical,
)
from hurray_decl.onnx_light.plan import QuantizationPlan, RunArrays
from hurray_decl.onnx_light.profiles import WIRE_PREFIX, QuantizationFormat, parse_quantization_format
from hurray_decl.onnx_light.validate import validate_geometry, validate_layout, validate_run
from hurray_decl.onnx_light.wire import (
    Geometry,
    RunGeometry,
    block_dtype,
    canonical_type,
    check_strings,
    logical_shape,
    make_logical_type,
    merge_runs,
    model_catalogue,
    payload_schema,
    pb,
    read_geometry,
    resolve_struct_type,
    same_message,
    struct_bits,
)

__all__ = [
    "Decoded",
    "Opened",
    "Prepared",
    "as_encoded",
    "build_payload",
    "decode_chunked",
    "decode_runs",
    "dequantize_portable",
    "element_count",
    "encode_prepared",
    "forward_values",
    "make_quantization_type",
    "open_value",
    "portable_plan",
    "prepare_plan",
    "quantize_portable",
    "read_portable",
    "reconstruct",
    "requested_code",
    "run_slices",
    "source_array",
]


@dataclass
class Prepared:
    """A validated plan in array form, ready to encode ``count`` elements."""

    format: QuantizationFormat
    runs: list[RunArrays]
    permutation: np.ndarray   # int64 [P]
    outliers: np.ndarray      # int64 [O]
    transform: int
    forward: np.ndarray       # float64 [n*n]
    inverse: np.ndarray       # float64 [n*n]

    def geometry(self) -> Geometry:
        return Geometry(self.format, int(self.permutation.size), self.transform, int(self.outliers.size),
                        tuple(RunGeometry(r.layout, r.blocks) for r in self.runs))


def _int_array(values, name: str, code: str) -> np.ndarray:
    try:
        array = np.asarray(values)
        if array.size == 0:
            return np.zeros(0, dtype=np.int64)
        if array.dtype.kind not in "iu" and not (array.dtype.kind == "f" and np.all(array == np.floor(array))):
            raise TypeError(array.dtype)
        return array.astype(np.int64).ravel()
    except (TypeError, ValueError, OverflowError) as exc:
        raise OnnxLightError(code, f"{name} must hold integer indices", path=f"plan -> {name}") from exc


def _float_array(values, name: str) -> np.ndarray:
    try:
        return np.asarray(values, dtype=np.float64).ravel()
    except (TypeError, ValueError) as exc:
        raise OnnxLightError("OL-PLAN-33", f"{name} must hold numbers", path=f"plan -> {name}") from exc


def prepare_plan(plan: QuantizationPlan, count: int, runs: list[RunArrays] | None = None) -> Prepared:
    """Validate a plan for ``count`` elements and convert it to arrays (OL-PLAN, OL-PROF-03)."""
    if not isinstance(plan, QuantizationPlan):
        raise OnnxLightError("OL-PLAN-27", "expected a QuantizationPlan", path="plan",
                             actual=type(plan).__name__)
    fmt = plan._format
    if runs is None:
        runs = []
        for i, run in enumerate(plan._runs):
            validate_layout(run.layout, f"plan -> runs[{i}] -> layout")
            runs.append(RunArrays.from_run(run, f"plan -> runs[{i}]"))
    for i, arrays in enumerate(runs):
        validate_run(arrays, f"plan -> runs[{i}]")
    prepared = Prepared(
        fmt, runs,
        _int_array(plan.permutation, "permutation", "OL-PLAN-28"),
        _int_array(plan.outliers, "outliers", "OL-PLAN-29"),
        int(plan.transform_size),
        _float_array(plan.forward, "forward"),
        _float_array(plan.inverse, "inverse"),
    )
    validate_geometry(fmt, runs, count, prepared.permutation, prepared.outliers, prepared.transform,
                      prepared.forward, prepared.inverse, plan.matrix_shape)
    return prepared


def forward_values(flat: np.ndarray, prepared: Prepared) -> tuple[np.ndarray, np.ndarray]:
    """Steps 3-5 of § 8.1 on a copy: save and zero outliers, gather, forward transform."""
    work = flat.astype(np.float64, copy=True)
    saved = work[prepared.outliers].copy()
    work[prepared.outliers] = 0.0
    if prepared.permutation.size:
        work = work[prepared.permutation]
    n = prepared.transform
    if n:
        work = row_products(work.reshape(-1, n), prepared.forward.reshape(n, n)).ravel()
        if not np.isfinite(work).all():
            j = int(np.flatnonzero(~np.isfinite(work))[0])
            raise OnnxLightError("OL-NUM-10", "the forward transform result is not finite",
                                 path=f"value -> transformed[{j}]", actual=repr(float(work[j])), expected="finite")
    return work, saved


def run_slices(runs: Sequence[RunArrays]):
    start = 0
    for run in runs:
        size = int(run.layout.count) * run.blocks
        yield run, start, start + size
        start += size


def reconstruct(values: np.ndarray, prepared: Prepared, saved: np.ndarray) -> np.ndarray:
    """Steps 5-7 of § 8.4: inverse transform, scatter, restore outliers."""
    n = prepared.transform
    if n:
        values = row_products(values.reshape(-1, n), prepared.inverse.reshape(n, n)).ravel()
    if prepared.permutation.size:
        out = np.empty_like(values)
        out[prepared.permutation] = values
        values = out
    if prepared.outliers.size:
        values[prepared.outliers] = saved
    return values


def decode_runs(prepared: Prepared, codes: Sequence[np.ndarray], count: int, path: str) -> np.ndarray:
    if len(codes) == 1:
        run = prepared.runs[0]
        return method_row(run.layout.method, path).decode(codes[0], run, f"{path}[0]").reshape(count)
    out = np.empty(count, dtype=np.float64)
    for (run, start, stop), data, i in zip(run_slices(prepared.runs), codes, range(len(codes))):
        row = method_row(run.layout.method, path)
        out[start:stop] = row.decode(data, run, f"{path}[{i}]").ravel()
    return out


# --- encoding --------------------------------------------------------------------------------

def source_array(array) -> tuple[np.ndarray, int]:
    if not isinstance(array, np.ndarray):
        array = np.asarray(array)
    code = dtype_code(array.dtype)
    if code is None:
        raise OnnxLightError("OL-NUM-01", f"the source dtype is not {LOGICAL_NAMES}",
                             path="source -> dtype", actual=str(array.dtype), expected=LOGICAL_DTYPE_NAMES)
    return array, code


def encode_prepared(array: np.ndarray, code: int, prepared: Prepared) -> pb.EncodedValueProto:
    # float32 and float64 sources are read in place (the kernels widen them exactly, OL-NUM-06);
    # the 16-bit ones are widened first. The source is never written.
    flat = array.reshape(-1)
    if code not in (DataType.FLOAT, DataType.DOUBLE):
        flat = flat.astype(np.float64)
    if not np.isfinite(flat).all():
        j = int(np.flatnonzero(~np.isfinite(flat))[0])
        raise OnnxLightError("OL-NUM-03", "the source holds a non-finite value", path=f"source[{j}]",
                             actual=repr(float(flat[j])), expected="finite")
    if prepared.outliers.size or prepared.permutation.size or prepared.transform:
        work, saved = forward_values(flat, prepared)
    else:
        work, saved = flat, np.zeros(0)
    codes = []
    for i, (run, start, stop) in enumerate(run_slices(prepared.runs)):
        row = method_row(run.layout.method, f"plan -> runs[{i}]")
        codes.append(row.encode(work[start:stop].reshape(run.blocks, -1), run, f"plan -> runs[{i}]"))
    # Reconstruction check (OL-NUM-22): decode what was written and convert to the source dtype,
    # unless every block's decoded magnitude is bounded below the dtype's largest finite value.
    if not reconstruction_bounded(prepared, code):
        decoded = reconstruct(decode_runs(prepared, codes, flat.size, "plan -> runs"), prepared, saved)
        to_logical(decoded, code, "OL-NUM-22", "reconstruction")
    geometry = prepared.geometry()
    encoded = pb.EncodedValueProto()
    encoded.struct_type.CopyFrom(canonical_type(geometry))
    encoded.logical_type.CopyFrom(make_logical_type(code, array.shape))
    encoded.raw_data = build_payload(geometry, prepared, saved, codes)
    return encoded


def reconstruction_bounded(prepared: Prepared, code: int) -> bool:
    """Whether no decoded value can overflow the source dtype (no transform; every method bounds
    its blocks' magnitudes)."""
    if prepared.transform:
        return False
    limit = LARGEST[code]
    for run in prepared.runs:
        bound = method_row(run.layout.method, "plan").magnitude
        if bound is None or not bound(run) < limit:
            return False
    return True


def build_payload(geometry: Geometry, prepared: Prepared, saved: np.ndarray, codes) -> bytes:
    records: dict[str, np.ndarray] = {}
    first = 0
    pending: list[np.ndarray] = []
    pending_header = None
    pending_first = 0
    for run, data in zip(prepared.runs, codes):
        record = np.zeros(run.blocks, dtype=block_dtype(run.layout))
        record["scale"] = run.scale
        record["zero_point"] = run.zero_point
        record["offset"] = run.offset
        record["codebook"] = run.codebook.reshape(run.blocks, -1)
        record["codes"] = data
        if pending and pending_header == run.layout.header():
            pending.append(record)
        else:
            if pending:
                records[f"run_{pending_first}"] = np.concatenate(pending)
            pending, pending_header, pending_first = [record], run.layout.header(), first
        first += run.blocks
    if pending:
        records[f"run_{pending_first}"] = np.concatenate(pending)
    return payload_schema(geometry).build(dict(
        reserved=0,
        permutation=prepared.permutation,
        forward=prepared.forward,
        inverse=prepared.inverse,
        outlier_indices=prepared.outliers,
        outlier_values=saved,
        blocks=records,
    ))


def quantize_portable(array, plan: QuantizationPlan) -> pb.EncodedValueProto:
    """Encode a NumPy array with an explicit portable plan (OL-NUM-26)."""
    source, code = source_array(array)
    prepared = prepare_plan(plan, int(source.size))
    return encode_prepared(source, code, prepared)


def make_quantization_type(plan: QuantizationPlan) -> pb.StructTypeProto:
    """The canonical descriptor of a portable plan; tables need not be filled in (OL-OP-12).

    An ORT plan has no descriptor of its own: its type depends on the source dtype and the
    zero-point storage, so the destination of an ORT encode is an existing ORT value's type
    (OL-OP-13).
    """
    if not plan._format.portable:
        raise OnnxLightError("OL-OP-13", "an ORT destination type is the struct_type of an existing ORT value",
                             path="plan -> format", actual=plan._format.wire_name, expected="a portable profile")
    runs = []
    for i, run in enumerate(plan._runs):
        validate_layout(run.layout, f"plan -> runs[{i}] -> layout")
        runs.append(RunGeometry(run.layout, len(run)))
    return canonical_type(Geometry(plan._format, len(plan.permutation), int(plan.transform_size),
                                   len(plan.outliers), tuple(runs)))


# --- decoding --------------------------------------------------------------------------------

def as_encoded(encoded) -> pb.EncodedValueProto:
    """This package's EncodedValueProto for what a caller passes, its strings checked (OL-WIRE-03)."""
    if isinstance(encoded, pb.EncodedValueProto):
        value = encoded
    elif hasattr(encoded, "SerializeToString"):
        value = pb.EncodedValueProto.FromString(encoded.SerializeToString())
    else:
        raise OnnxLightError("OL-WIRE-03", "expected an EncodedValueProto", path="value",
                             actual=type(encoded).__name__)
    check_strings(value, "value", "OL-WIRE-03")
    return value


@dataclass
class Decoded:
    prepared: Prepared
    codes: list[np.ndarray]
    saved: np.ndarray
    dtype_code: int
    shape: tuple[int, ...]


@dataclass
class Opened:
    """A value whose message-level checks passed, with its type resolved."""

    value: pb.EncodedValueProto
    resolved: pb.StructTypeProto
    dtype: int
    shape: tuple[int, ...]
    format: QuantizationFormat | None   # the profile named by the root, when it parses


def open_value(encoded, model) -> Opened:
    """The checks every decoder shares: layout, payload location, type_ref, logical type.

    A value with ``parameter_ref`` is refused: it decodes only through its model (OL-SHR-29).
    """
    value = as_encoded(encoded)
    path = "value"
    if value.HasField("parameter_ref"):
        raise OnnxLightError("OL-SHR-29", "a compact value needs its model's parameter set; the plain "
                             "decoder refuses parameter_ref", path=f"{path} -> parameter_ref",
                             actual=value.parameter_ref)
    if value.WhichOneof("layout") != "struct_type":
        raise OnnxLightError("OL-WIRE-03", "the value has no struct_type layout", path=f"{path} -> layout",
                             actual=value.WhichOneof("layout"), expected="struct_type")
    if value.HasField("raw_data") and len(value.external_data):
        raise OnnxLightError("OL-WIRE-09", "raw_data and external_data are mutually exclusive",
                             path=f"{path} -> external_data")
    if not value.HasField("raw_data") and (len(value.external_data) or value.data_location == 1):
        raise OnnxLightError("OL-WIRE-10", "the payload is external and not loaded", path=f"{path} -> raw_data")
    resolved = resolve_struct_type(value.struct_type, model, f"{path} -> struct_type")
    dtype, shape = logical_shape(value.logical_type, f"{path} -> logical_type")
    fmt = None
    if isinstance(resolved.name, str) and resolved.name.startswith(WIRE_PREFIX):
        fmt = parse_quantization_format(resolved.name[len(WIRE_PREFIX):], path=f"{path} -> struct_type -> name")
    return Opened(value, resolved, dtype, shape, fmt)


def read_portable(encoded, model, opened: Opened | None = None) -> Decoded:
    opened = opened if opened is not None else open_value(encoded, model)
    value, resolved, dtype, shape = opened.value, opened.resolved, opened.dtype, opened.shape
    path = "value"
    raw = value.raw_data
    catalogue = model_catalogue(model) if model is not None else {}
    bits = struct_bits(resolved, catalogue, f"{path} -> struct_type")
    if bits == 0 or bits % 8:
        raise OnnxLightError("OL-WIRE-12", "the root size is 0 or not a whole number of bytes",
                             path=f"{path} -> struct_type", actual=bits, expected="a positive multiple of 8")
    root = bits // 8
    if len(raw) < root:
        raise OnnxLightError("OL-WIRE-28", "raw_data is truncated", path=f"{path} -> raw_data",
                             offset=len(raw), actual=len(raw), expected=root)
    if len(raw) > root:
        code = "OL-WIRE-13" if len(raw) % root == 0 else "OL-WIRE-29"
        message = "raw_data holds more than one record" if code == "OL-WIRE-13" else "trailing bytes after the payload"
        raise OnnxLightError(code, message, path=f"{path} -> raw_data", offset=root, actual=len(raw), expected=root)
    geometry = read_geometry(resolved, f"{path} -> struct_type")
    for i, run in enumerate(geometry.runs):
        validate_layout(run.layout, f"{path} -> blocks -> runs[{i}] -> parameters")
    if not same_message(canonical_type(geometry), resolved):
        raise OnnxLightError("OL-WIRE-26", "the descriptor is not the canonical schema of its own runs",
                             path=f"{path} -> struct_type")
    try:
        parsed = payload_schema(geometry).parse(raw, buffer=raw)   # arrays view raw, uncopied
    except HurrayDeclError as err:
        raise err.rebased(0, path) from None
    except cs.ConstructError as exc:  # the length was checked above; this is a guard
        raise OnnxLightError("OL-WIRE-28", f"raw_data does not parse: {exc}", path=f"{path} -> raw_data") from exc
    runs, codes = [], []
    for run, (_name, records) in zip(merge_runs(geometry.runs),
                                    ((k, v) for k, v in parsed.blocks.items() if k.startswith("run_"))):
        runs.append(RunArrays(run.layout, records["scale"].copy(), records["zero_point"].copy(),
                              records["offset"].copy(), records["codebook"].reshape(run.blocks, -1).copy()))
        codes.append(records["codes"].reshape(run.blocks, -1))
    count = element_count(shape)
    for i, arrays in enumerate(runs):
        validate_run(arrays, f"{path} -> blocks -> run[{i}]")
    prepared = Prepared(geometry.format, runs, parsed.permutation.astype(np.int64),
                        parsed.outlier_indices.astype(np.int64), geometry.transform,
                        parsed.forward.astype(np.float64), parsed.inverse.astype(np.float64))
    validate_geometry(prepared.format, runs, count, prepared.permutation, prepared.outliers,
                      prepared.transform, prepared.forward, prepared.inverse, ())
    return Decoded(prepared, codes, parsed.outlier_values.astype(np.float64), dtype, shape)


def element_count(shape: Sequence[int]) -> int:
    """The product of a checked logical shape, in Python integers (logical_shape bounds it)."""
    count = 1
    for d in shape:
        count *= int(d)
    return count


def requested_code(dtype, default: int) -> int:
    if dtype is None:
        return default
    code = dtype_code(np.dtype(dtype))
    if code is None:
        raise OnnxLightError("OL-NUM-25", "the requested dtype is not one of the four floating types",
                             path="dtype", actual=str(dtype))
    return code


_DECODE_CHUNK = 1 << 16   # elements decoded at once: the doubles of a chunk stay in cache


def decode_chunked(prepared: Prepared, codes: Sequence[np.ndarray], count: int, code: int) -> np.ndarray:
    """Decode run by run, a few blocks at a time, straight into the logical dtype (no transform,
    permutation or outliers: every block's values land in place, as they are)."""
    out = np.empty(count, dtype=LOGICAL_DTYPES[code])
    for i, ((run, start, _), data) in enumerate(zip(run_slices(prepared.runs), codes)):
        row = method_row(run.layout.method, "value -> blocks")
        # Where every block's magnitude is bounded below the dtype's largest value, no value
        # can overflow, and the finite check is skipped.
        bounded = row.magnitude is not None and row.magnitude(run) < LARGEST[code]
        size = int(run.layout.count)
        step = max(1, _DECODE_CHUNK // max(1, size))
        for j in range(0, run.blocks, step):
            values = row.decode(data[j:j + step], run.part(j, j + step), f"value -> blocks[{i}]")
            at = start + j * size
            target = out[at:at + values.size].reshape(values.shape)
            with np.errstate(over="ignore", invalid="ignore"):   # an overflow is refused just below
                if code in (DataType.FLOAT, DataType.DOUBLE):
                    target[...] = values        # the assignment rounds to nearest, as astype does
                else:
                    target[...] = narrow(values, code)
            if not bounded and not np.isfinite(target).all():
                to_logical(values, code, "OL-NUM-25", "value", at)   # raises, naming the value
    return out


def dequantize_portable(opened: Opened, model, dtype=None) -> np.ndarray:
    """The values of an opened portable value, in its logical shape and dtype (or ``dtype``)."""
    decoded = read_portable(opened.value, model, opened)
    count = element_count(decoded.shape)
    code = requested_code(dtype, decoded.dtype_code)
    prepared = decoded.prepared
    if prepared.transform or prepared.permutation.size or prepared.outliers.size:
        # The restored outliers replace decoded values before the dtype check, as in the original.
        values = decode_runs(prepared, decoded.codes, count, "value -> blocks")
        values = reconstruct(values, prepared, decoded.saved)
        return to_logical(values, code, "OL-NUM-25", "value").reshape(decoded.shape)
    return decode_chunked(prepared, decoded.codes, count, code).reshape(decoded.shape)


def portable_plan(opened: Opened, model) -> QuantizationPlan:
    """The plan an opened portable value was encoded with."""
    p = read_portable(opened.value, model, opened).prepared
    return QuantizationPlan(p.format, [r.to_run() for r in p.runs],
                            permutation=p.permutation.tolist(), transform_size=p.transform,
                            forward=p.forward.tolist(), inverse=p.inverse.tolist(),
                            outliers=p.outliers.tolist())
