"""ORT MatMulNBits input layouts: profiles ort_matmulnbits_int2/int4/int8 (DIGEST.md § 10).

These values pack the ``B``, ``scales`` and optional ``zero_points`` inputs of
``com.microsoft::MatMulNBits`` version 1 (``weight_prepacked`` unset) instead of the portable
block records. A ``[K, N]`` weight matrix is cut, column by column, into ``G = ceil(K / block)``
groups along K; block ``col * G + g`` holds rows ``g * block .. g * block + block - 1`` of column
``col``, the rows past K being zero padding codes.

* :func:`make_matmul_nbits_plan` builds the plan (one run, header
  ``[block, 0, bits, 0, 1, 0, 1, 0, 10]``, ``N * G`` blocks at scale 1 and zero point
  ``2^(bits-1)``).
* :func:`encode_ort` rounds the parameters to the source dtype, picks the zero-point storage,
  computes the codes and writes the payload ``B | scales | zero_points``.
* :func:`read_ort` validates an ORT value and splits its payload; :func:`decode_ort` turns it
  back into values, :func:`export_matmul_nbits_inputs` into MatMulNBits initializers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..errors import OnnxLightError
from .methods.affine import affine_codes, ratio_scales
from .numerics import BFLOAT16, FLOAT, FLOAT16, INT64, LOGICAL_DTYPES, UINT8, narrow, to_logical
from .packing import decode_bytes, pack_bits, unpack_bits
from .plan import (
    U32_MAX,
    QuantizationBlockLayout,
    QuantizationBlockParameters,
    QuantizationPlan,
    QuantizationRun,
)
from .profiles import WIRE_PREFIX, QuantizationFormat, require_format
from .wire import _add_tensor, _int64_constant, make_logical_type, pb, same_message

__all__ = [
    "ORT_FORMATS",
    "OrtGeometry",
    "OrtValue",
    "MatMulNBitsInputs",
    "make_matmul_nbits_plan",
    "ort_type",
    "encode_ort",
    "quantize_ort",
    "quantize_ort_with_type",
    "read_ort",
    "decode_ort",
    "ort_plan",
    "export_matmul_nbits_inputs",
]

ORT_FORMATS: dict[QuantizationFormat, int] = {
    QuantizationFormat.ORT_MATMULNBITS_INT2: 2,
    QuantizationFormat.ORT_MATMULNBITS_INT4: 4,
    QuantizationFormat.ORT_MATMULNBITS_INT8: 8,
}
"""The three ORT profiles and their code widths."""

SOURCE_DTYPES = (FLOAT, FLOAT16, BFLOAT16)
"""Source and logical dtypes of an ORT value; DOUBLE is not one of them (OL-ORT-08)."""

FIELDS = ("parameters", "B", "scales", "zero_points")
IMPLICIT, PACKED, FLOATING = "implicit", "packed", "float"


def _fail(code: str, message: str, path: str, actual: Any = None, expected: Any = None) -> OnnxLightError:
    return OnnxLightError(code, message, path=path, actual=actual, expected=expected)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_block_size(block_size: Any, path: str = "block_size") -> int:
    """A power of two in [16, 2^32 - 1] (OL-ORT-02 .. -04)."""
    if not _is_int(block_size) or int(block_size) < 16:
        raise _fail("OL-ORT-03", "block_size must be at least 16", path, block_size, ">= 16")
    size = int(block_size)
    if size > U32_MAX:
        raise _fail("OL-ORT-04", "block_size is above 2^32 - 1", path, size, "<= 4294967295")
    if size & (size - 1):
        raise _fail("OL-ORT-02", "block_size is not a power of two", path, size, "16, 32, 64, 128, ...")
    return size


def ort_bits(fmt: QuantizationFormat, path: str = "format") -> int:
    bits = ORT_FORMATS.get(fmt)
    if bits is None:
        raise _fail("OL-ORT-05", "this is not an ORT MatMulNBits profile", path, fmt.wire_name,
                    "ort_matmulnbits_int2, _int4 or _int8")
    return bits


def ort_header(block_size: int, bits: int) -> tuple[int, ...]:
    """The only run header an ORT plan may have (OL-ORT-05)."""
    return (block_size, 0, bits, 0, 1, 0, 1, 0, 10)


@dataclass(frozen=True)
class OrtGeometry:
    """What an ORT descriptor fixes: profile, K, N, block size, dtype and zero-point storage."""

    format: QuantizationFormat
    k: int
    n: int
    block_size: int
    dtype: int
    zero_points: str  # IMPLICIT, PACKED or FLOATING

    @property
    def bits(self) -> int:
        return ORT_FORMATS[self.format]

    @property
    def groups(self) -> int:
        return -(-self.k // self.block_size)

    @property
    def blob(self) -> int:
        return self.block_size * self.bits // 8

    @property
    def b_bytes(self) -> int:
        return self.n * self.groups * self.blob

    @property
    def width(self) -> int:
        return LOGICAL_DTYPES[self.dtype].itemsize

    @property
    def zp_row(self) -> int:
        """Bytes of one column's packed zero points."""
        return -(-self.groups * self.bits // 8)

    @property
    def zp_dims(self) -> list[int]:
        if self.zero_points == PACKED:
            return [self.n, self.zp_row]
        return [self.n, self.groups]

    @property
    def zp_bytes(self) -> int:
        if self.zero_points == IMPLICIT:
            return 0
        if self.zero_points == PACKED:
            return self.n * self.zp_row
        return self.n * self.groups * self.width

    @property
    def size(self) -> int:
        """The payload length: B, then scales, then any zero points (OL-ORT-20)."""
        return self.b_bytes + self.n * self.groups * self.width + self.zp_bytes


def make_matmul_nbits_plan(format: QuantizationFormat, k: int, n: int, block_size: int = 128) -> QuantizationPlan:
    """The plan of a ``[k, n]`` MatMulNBits weight (OL-ORT-01 .. -06)."""
    fmt = require_format(format)
    bits = ort_bits(fmt)
    for name, value in (("k", k), ("n", n)):
        if not _is_int(value) or int(value) <= 0:
            raise _fail("OL-ORT-01", f"{name} must be a positive integer", name, value, "> 0")
    size = check_block_size(block_size)
    k, n = int(k), int(n)
    groups = -(-k // size)
    layout = QuantizationBlockLayout.from_header(ort_header(size, bits))
    run = QuantizationRun.uniform(layout, QuantizationBlockParameters(1.0, float(1 << (bits - 1)), 0.0, []),
                                  n * groups)
    plan = QuantizationPlan(fmt, matrix_shape=[k, n])
    plan._runs = [run]   # a fresh run: no defensive copy needed
    return plan


# --- descriptor ------------------------------------------------------------------------------

def ort_type(geometry: OrtGeometry) -> pb.StructTypeProto:
    """The canonical ORT descriptor (OL-ORT-18, -19)."""
    root = pb.StructTypeProto()
    root.name = WIRE_PREFIX + geometry.format.wire_name
    s = root.structure
    s.SetInParent()
    parameters = s.field.add()
    parameters.name = FIELDS[0]
    parameters.constant.CopyFrom(_int64_constant([geometry.bits, geometry.block_size], [2]))
    _add_tensor(s, FIELDS[1], UINT8, [geometry.n, geometry.groups, geometry.blob])
    _add_tensor(s, FIELDS[2], geometry.dtype, [geometry.n, geometry.groups])
    if geometry.zero_points != IMPLICIT:
        _add_tensor(s, FIELDS[3], UINT8 if geometry.zero_points == PACKED else geometry.dtype, geometry.zp_dims)
    return root


@dataclass(frozen=True)
class OrtTypeInfo:
    """What can be read from an ORT descriptor alone (K is only bounded by G)."""

    format: QuantizationFormat
    block_size: int
    n: int
    groups: int
    dtype: int
    zero_points: str


def _tensor_field(field, path: str) -> tuple[int, list[int]]:
    if field.WhichOneof("content") != "type" or field.type.WhichOneof("value") != "tensor_type":
        raise _fail("OL-ORT-27", "expected a tensor field", path, field.name, "a tensor type")
    tensor = field.type.tensor_type
    dims = [d.dim_value if d.WhichOneof("value") == "dim_value" else -1 for d in tensor.shape.dim]
    return tensor.elem_type, dims


def read_ort_type(root: pb.StructTypeProto, fmt: QuantizationFormat, path: str) -> OrtTypeInfo:
    """Interpret an ORT descriptor (OL-ORT-25 .. -27); the caller compares it canonically."""
    bits = ORT_FORMATS[fmt]
    fields = root.structure.field if root.WhichOneof("kind") == "structure" else ()
    if len(fields) not in (3, 4):
        raise _fail("OL-ORT-27", "an ORT descriptor is a structure of 3 or 4 fields", path, len(fields), "3 or 4")
    first = fields[0]
    constant = first.constant
    if (first.name != FIELDS[0] or first.WhichOneof("content") != "constant" or constant.data_type != INT64
            or list(constant.dims) != [2] or len(constant.int64_data) != 2 or constant.HasField("raw_data")):
        raise _fail("OL-ORT-27", "the first field must be the constant INT64 [2] parameters",
                    f"{path} -> parameters", first.name, "parameters = [bits, block_size]")
    if constant.int64_data[0] != bits:
        raise _fail("OL-ORT-25", "parameters[0] differs from the profile's bits", f"{path} -> parameters[0]",
                    int(constant.int64_data[0]), bits)
    block_size = check_block_size(int(constant.int64_data[1]), f"{path} -> parameters[1]")
    if len(fields) == 4 and fields[3].name != FIELDS[3]:
        raise _fail("OL-ORT-26", "the fourth field must be named zero_points", f"{path} -> field[3]",
                    fields[3].name, FIELDS[3])
    dtype, scale_dims = _tensor_field(fields[2], f"{path} -> scales")
    if len(scale_dims) != 2 or min(scale_dims) < 0:
        raise _fail("OL-ORT-27", "scales must be [N, G]", f"{path} -> scales", scale_dims, "[N, G]")
    kind = IMPLICIT
    if len(fields) == 4:
        zp_type, _ = _tensor_field(fields[3], f"{path} -> zero_points")
        kind = PACKED if zp_type == UINT8 else FLOATING
    return OrtTypeInfo(fmt, block_size, scale_dims[0], scale_dims[1], dtype, kind)


# --- parameters ------------------------------------------------------------------------------

def round_parameters(scales: np.ndarray, zero_points: np.ndarray, dtype: int,
                     path: str) -> tuple[np.ndarray, np.ndarray]:
    """Scales and zero points rounded to the source dtype, as float64 (OL-ORT-10, -11, -14)."""
    target = LOGICAL_DTYPES[dtype]
    out = []
    for name, values in (("scale", scales), ("zero_point", zero_points)):
        if not np.isfinite(values).all():
            j = int(np.flatnonzero(~np.isfinite(values))[0])
            raise _fail("OL-ORT-14", f"a {name} is not finite", f"{path} -> blocks[{j}] -> {name}",
                        repr(float(values[j])), "finite")
        as_double = narrow(values, dtype).astype(np.float64)
        if not np.isfinite(as_double).all():
            j = int(np.flatnonzero(~np.isfinite(as_double))[0])
            raise _fail("OL-ORT-10", f"a {name} overflows {target.name}", f"{path} -> blocks[{j}] -> {name}",
                        repr(float(values[j])), f"finite in {target.name}")
        out.append(as_double)
    scale, zp = out
    under = (scale == 0) & (scales != 0)
    if under.any():
        j = int(np.flatnonzero(under)[0])
        raise _fail("OL-ORT-11", f"a non-zero scale underflows to 0 in {target.name}",
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


def _groups(values: np.ndarray, geometry: OrtGeometry) -> np.ndarray:
    """``[K, N]`` values as ``[N * G, block]`` rows, padded with zeros past K."""
    g, size = geometry.groups, geometry.block_size
    columns = np.zeros((geometry.n, g * size), dtype=np.float64)
    columns[:, :geometry.k] = values.T
    return columns.reshape(geometry.n * g, size)


def _real_rows(geometry: OrtGeometry) -> np.ndarray:
    """``[N * G, block]`` mask of the rows below K."""
    rows = np.arange(geometry.groups * geometry.block_size).reshape(geometry.groups, geometry.block_size)
    return np.broadcast_to(rows < geometry.k, (geometry.n, geometry.groups, geometry.block_size)).reshape(
        geometry.n * geometry.groups, geometry.block_size)


def encode_ort(source: np.ndarray, dtype: int, fmt: QuantizationFormat, block_size: int,
               scales: np.ndarray, zero_points: np.ndarray, path: str = "plan") -> pb.EncodedValueProto:
    """Encode a ``[K, N]`` source with one scale and zero point per block (OL-ORT-10 .. -22)."""
    flat = source.astype(np.float64)
    if not np.isfinite(flat).all():
        j = int(np.flatnonzero(~np.isfinite(flat.ravel()))[0])
        raise _fail("OL-NUM-03", "the source holds a non-finite value", f"source[{j}]",
                    repr(float(flat.ravel()[j])), "finite")
    k, n = flat.shape
    scale, zp = round_parameters(np.asarray(scales, dtype=np.float64), np.asarray(zero_points, dtype=np.float64),
                                 dtype, path)
    bits = ORT_FORMATS[fmt]
    geometry = OrtGeometry(fmt, k, n, block_size, dtype, zero_point_storage(zp, bits))
    rows = _groups(flat, geometry)
    real = _real_rows(geometry)
    zero = scale == 0
    if zero.any():
        busy = zero & (rows != 0).any(axis=1)
        if busy.any():
            j = int(np.flatnonzero(busy)[0])
            raise _fail("OL-ORT-12", "a zero scale needs a group whose source values are all 0",
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
    encoded.raw_data = _payload(geometry, codes, scale, zp)
    return encoded


def _payload(geometry: OrtGeometry, codes: np.ndarray, scale: np.ndarray, zp: np.ndarray) -> bytes:
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
    if len(matrix) != 2 or not all(_is_int(d) and int(d) > 0 for d in matrix):
        raise _fail("OL-ORT-07", "an ORT plan's matrix_shape must be [K, N] with K, N > 0",
                    f"{path} -> matrix_shape", matrix, "[K, N]")
    if len(shape) != 2 or tuple(int(d) for d in matrix) != tuple(shape):
        raise _fail("OL-ORT-07", "the source is not the plan's [K, N] matrix", "source -> shape",
                    list(shape), [int(d) for d in matrix])
    runs = plan._runs
    if len(runs) != 1:
        raise _fail("OL-ORT-05", "an ORT plan has exactly one run", f"{path} -> runs", len(runs), 1)
    layout = runs[0].layout
    block_size = check_block_size(int(layout.count), f"{path} -> runs[0] -> layout -> count")
    if layout.header() != ort_header(block_size, bits):
        raise _fail("OL-ORT-05", "the ORT run header must be [block_size, 0, bits, 0, 1, 0, 1, 0, 10]",
                    f"{path} -> runs[0] -> layout", list(layout.header()), list(ort_header(block_size, bits)))
    k, n = shape
    run = runs[0]
    if len(run) != n * -(-k // block_size):
        raise _fail("OL-ORT-06", "an ORT plan has N x ceil(K / block_size) blocks", f"{path} -> runs[0] -> blocks",
                    len(run), n * -(-k // block_size))
    for name in ("permutation", "forward", "inverse", "outliers"):
        if len(getattr(plan, name)):
            raise _fail("OL-ORT-09", f"ORT layouts have no {name}", f"{path} -> {name}",
                        len(getattr(plan, name)), 0)
    if int(plan.transform_size):
        raise _fail("OL-ORT-09", "ORT layouts have no transform", f"{path} -> transform_size", plan.transform_size, 0)
    tables = [len(t) for t in run._ragged] if run._codebook is None else [run._codebook.shape[1]] * len(run)
    if any(tables):
        j = next(i for i, t in enumerate(tables) if t)
        raise _fail("OL-ORT-09", "ORT layouts have no codebook", f"{path} -> blocks[{j}] -> codebook", tables[j], 0)
    params = np.stack([run._scale, run._zero_point, run._offset], axis=1)
    bad = params[:, 2] != 0
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise _fail("OL-ORT-09", "ORT layouts have no offset", f"{path} -> blocks[{j}] -> offset",
                    repr(float(params[j, 2])), 0.0)
    return block_size, params[:, 0].copy(), params[:, 1].copy()


def _source_code(array: np.ndarray) -> int:
    for code in SOURCE_DTYPES:
        if array.dtype == LOGICAL_DTYPES[code]:
            return code
    raise _fail("OL-ORT-08", "an ORT source is FLOAT, FLOAT16 or BFLOAT16", "source -> dtype", str(array.dtype),
                "float32, float16 or bfloat16")


def quantize_ort(array, plan: QuantizationPlan) -> pb.EncodedValueProto:
    """Encode with an explicit ORT plan: parameters as supplied, rounded to the dtype."""
    source = array if isinstance(array, np.ndarray) else np.asarray(array)
    code = _source_code(source)
    block_size, scales, zps = _check_plan(plan, source.shape)
    return encode_ort(source, code, plan._format, block_size, scales, zps)


# --- type-driven encoding and calibration (OL-CAL-20, OL-OP-13) -------------------------------

def quantize_ort_with_type(source: np.ndarray, requested: pb.StructTypeProto, resolved: pb.StructTypeProto,
                           fmt: QuantizationFormat, per_block, *, scales=None, zero_points=None,
                           refused: dict[str, Any] | None = None) -> pb.EncodedValueProto:
    """Encode into an existing ORT value's type, calibrating omitted scales per (column, group).

    ``per_block(value, name, blocks)`` parses a scalar or per-block parameter tensor (OL-CAL-04
    .. -06); ``refused`` names the inputs ORT layouts do not have (OL-ORT-09).
    """
    for name, value in (refused or {}).items():
        if value is not None and np.asarray(value).size:
            raise _fail("OL-ORT-09", f"ORT layouts take no {name}", name, np.asarray(value).size, "absent")
    code = _source_code(source)
    info = read_ort_type(resolved, fmt, "type")
    if source.ndim != 2:
        raise _fail("OL-ORT-07", "an ORT source is a [K, N] matrix", "source -> shape", list(source.shape), "[K, N]")
    k, n = source.shape
    expected = OrtGeometry(fmt, int(k), int(n), info.block_size, code, info.zero_points)
    if k == 0 or (info.n, info.groups, info.dtype) != (n, expected.groups, code):
        raise _fail("OL-OP-13", "the ORT destination type does not match this source's matrix or dtype",
                    "type", [info.n, info.groups, info.dtype], [n, expected.groups, code])
    bits = ORT_FORMATS[fmt]
    blocks = n * expected.groups
    zp = per_block(zero_points, "zero_points", blocks)
    if zp is None:
        zp = np.full(blocks, float(1 << (bits - 1)))
    scale = per_block(scales, "scales", blocks)
    if scale is None:
        rows = _groups(source.astype(np.float64), expected)   # padding rows are 0: they never count
        if not np.isfinite(rows).all():
            raise _fail("OL-NUM-03", "the source holds a non-finite value", "source", "non-finite", "finite")
        scale = ratio_scales(rows, 0 - zp, (1 << bits) - 1 - zp)
        if not np.isfinite(scale).all():
            j = int(np.flatnonzero(~np.isfinite(scale))[0])
            raise _fail("OL-CAL-17", "a calibrated scale is not finite", f"type -> blocks[{j}] -> scale",
                        repr(float(scale[j])), "finite")
    encoded = encode_ort(source, code, fmt, info.block_size, scale, zp, "type")
    if not same_message(encoded.struct_type, resolved):
        raise _fail("OL-OP-13", "the ORT destination type's zero-point storage differs from the result's",
                    "type -> zero_points", info.zero_points,
                    read_ort_type(encoded.struct_type, fmt, "result").zero_points)
    encoded.struct_type.CopyFrom(requested)
    return encoded


# --- decoding ----------------------------------------------------------------------------------

@dataclass
class OrtValue:
    """A validated ORT value split into its parts."""

    geometry: OrtGeometry
    weights: np.ndarray        # uint8 [N, G, blob]
    scales: np.ndarray         # source dtype [N, G]
    zero_points: np.ndarray    # float64 [N, G], the effective zero points
    zp_stored: np.ndarray | None  # the stored zero_points tensor, or None when implicit

    @property
    def codes(self) -> np.ndarray:
        """The codes, uint8 ``[N * G, block]`` (unpacked on request)."""
        g = self.geometry
        return unpack_bits(self.weights.reshape(g.n * g.groups, g.blob), g.block_size, g.bits, "value -> B")


def read_ort(resolved: pb.StructTypeProto, fmt: QuantizationFormat, dtype: int, shape: tuple[int, ...],
             raw: bytes, path: str = "value") -> OrtValue:
    """Validate an ORT value's descriptor and payload (OL-ORT-07, -08, -14, -23 .. -28)."""
    if dtype not in SOURCE_DTYPES:
        raise _fail("OL-ORT-08", "an ORT logical type is FLOAT, FLOAT16 or BFLOAT16", f"{path} -> logical_type",
                    dtype, "1, 10 or 16")
    if len(shape) != 2 or min(shape) <= 0:
        raise _fail("OL-ORT-07", "an ORT logical type is a [K, N] matrix with K, N > 0",
                    f"{path} -> logical_type", list(shape), "[K, N]")
    info = read_ort_type(resolved, fmt, f"{path} -> struct_type")
    geometry = OrtGeometry(fmt, shape[0], shape[1], info.block_size, dtype, info.zero_points)
    if not same_message(ort_type(geometry), resolved):
        raise _fail("OL-ORT-27", "the descriptor is not the canonical ORT schema of its logical matrix",
                    f"{path} -> struct_type")
    if len(raw) != geometry.size:
        raise _fail("OL-ORT-28", "raw_data differs from the size of B, scales and zero_points",
                    f"{path} -> raw_data", len(raw), geometry.size)
    n, g, bits = geometry.n, geometry.groups, geometry.bits
    target = LOGICAL_DTYPES[dtype]
    data = np.frombuffer(raw, dtype=np.uint8)
    at = geometry.b_bytes
    weights = data[:at].reshape(n, g, geometry.blob)
    scales = data[at:at + n * g * geometry.width].view(target.newbyteorder("<")).astype(target).reshape(n, g)
    at += n * g * geometry.width
    wide = scales.astype(np.float64)
    if not np.isfinite(wide).all():
        j = int(np.flatnonzero(~np.isfinite(wide.ravel()))[0])
        raise _fail("OL-ORT-14", "a stored scale is not finite", f"{path} -> scales[{j}]",
                    repr(float(wide.ravel()[j])), "finite").located(geometry.b_bytes + j * geometry.width)
    stored = None
    if geometry.zero_points == IMPLICIT:
        zp = np.full((n, g), float(1 << (bits - 1)))
    elif geometry.zero_points == PACKED:
        stored = data[at:].reshape(n, geometry.zp_row)
        used = g * bits
        if used % 8 and (stored[:, -1] >> (used % 8)).any():
            j = int(np.flatnonzero(stored[:, -1] >> (used % 8))[0])
            raise _fail("OL-ORT-24", "non-zero unused zero-point bits", f"{path} -> zero_points[{j}]",
                        f"0x{int(stored[j, -1]):02X}", f"bits {used % 8}..7 clear").located(
                            at + (j + 1) * geometry.zp_row - 1)
        zp = unpack_bits(stored, g, bits, f"{path} -> zero_points").astype(np.float64)
    else:
        stored = data[at:].view(target.newbyteorder("<")).astype(target).reshape(n, g)
        zp = stored.astype(np.float64)
        if not np.isfinite(zp).all():
            j = int(np.flatnonzero(~np.isfinite(zp.ravel()))[0])
            raise _fail("OL-ORT-14", "a stored zero point is not finite", f"{path} -> zero_points[{j}]",
                        repr(float(zp.ravel()[j])), "finite").located(at + j * geometry.width)
    tail = geometry.k - (g - 1) * geometry.block_size   # real rows in each column's last group
    if tail < geometry.block_size:
        last = unpack_bits(np.ascontiguousarray(weights[:, -1]), geometry.block_size, bits, f"{path} -> B")
        bad = last[:, tail:] != 0
        if bad.any():
            column, w = (int(i) for i in np.argwhere(bad)[0])
            block = column * g + g - 1
            raise _fail("OL-ORT-23", "nonzero weight padding after the K real rows of a column's last group",
                        f"{path} -> B[{column}][{g - 1}] -> row {(g - 1) * geometry.block_size + tail + w}",
                        int(last[column, tail + w]), 0).located(block * geometry.blob + (tail + w) * bits // 8)
    return OrtValue(geometry, weights, scales, zp, stored)


def decode_ort(value: OrtValue) -> np.ndarray:
    """value[row, col] = (code - zero_point) x scale, as float64 [K, N] (OL-ORT-29)."""
    geometry = value.geometry
    g = geometry
    data = value.weights.reshape(g.n * g.groups, g.blob)
    values = decode_bytes(data, g.block_size, g.bits, False)
    values -= value.zero_points.reshape(-1, 1)
    values *= value.scales.astype(np.float64).reshape(-1, 1)
    columns = values.reshape(geometry.n, geometry.groups * geometry.block_size)[:, :geometry.k]
    return np.ascontiguousarray(columns.T)


def ort_plan(value: OrtValue) -> QuantizationPlan:
    """The ORT plan a value was encoded with (its rounded parameters)."""
    g = value.geometry
    plan = make_matmul_nbits_plan(g.format, g.k, g.n, g.block_size)
    run = plan._runs[0]
    run._scale = value.scales.astype(np.float64).ravel()
    run._zero_point = value.zero_points.astype(np.float64).ravel()
    return plan


# --- export --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MatMulNBitsInputs:
    """The MatMulNBits initializers of an ORT value and the node's attributes (OL-ORT-30)."""

    weights: Any
    scales: Any
    zero_points: Any
    k: int
    n: int
    bits: int
    block_size: int


def _tensor_class():
    try:
        import onnx
    except ImportError:  # onnx is optional at run time: fall back to this package's message
        return pb.TensorProto
    return onnx.TensorProto


def _tensor(cls, name: str, data_type: int, dims: Sequence[int], raw: bytes):
    tensor = cls()
    tensor.name = name
    tensor.data_type = data_type
    tensor.dims.extend(int(d) for d in dims)
    tensor.raw_data = raw
    return tensor


def export_inputs(value: OrtValue) -> MatMulNBitsInputs:
    g = value.geometry
    cls = _tensor_class()
    target = LOGICAL_DTYPES[g.dtype]
    weights = _tensor(cls, "B", UINT8, [g.n, g.groups, g.blob], value.weights.tobytes())
    scales = _tensor(cls, "scales", g.dtype, [g.n, g.groups], value.scales.astype(target.newbyteorder("<")).tobytes())
    zero_points = None
    if g.zero_points == PACKED:
        zero_points = _tensor(cls, "zero_points", UINT8, g.zp_dims, value.zp_stored.tobytes())
    elif g.zero_points == FLOATING:
        zero_points = _tensor(cls, "zero_points", g.dtype, g.zp_dims,
                              value.zp_stored.astype(target.newbyteorder("<")).tobytes())
    return MatMulNBitsInputs(weights, scales, zero_points, g.k, g.n, g.bits, g.block_size)


def export_matmul_nbits_inputs(encoded, model=None) -> MatMulNBitsInputs:
    """Validate an ORT value and copy its bytes into MatMulNBits inputs, without dequantizing.

    Returns ``onnx.TensorProto`` messages when the ``onnx`` package is installed. A portable
    value, the portable ``matmulnbits`` profile included, is refused (OL-ORT-31).
    """
    from .codec import open_value, unwrap_value

    opened = open_value(*unwrap_value(encoded, model))
    if opened.format not in ORT_FORMATS:
        raise _fail("OL-ORT-31", "only ORT MatMulNBits values export as MatMulNBits inputs; "
                    f"{opened.format.wire_name if opened.format is not None else 'this value'} is a portable layout",
                    "value -> struct_type -> name", opened.resolved.name, "onnx_light.quantization.v1/ort_matmulnbits_*")
    return export_inputs(read_ort(opened.resolved, opened.format, opened.dtype, opened.shape, opened.value.raw_data))
