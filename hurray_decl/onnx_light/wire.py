"""The portable wire form: the canonical descriptor and the raw_data layout (DIGEST.md § 3-7).

* :func:`canonical_type` builds the one descriptor the encoder writes for a plan geometry.
* :func:`read_geometry` interprets a descriptor far enough to rebuild that geometry (profile,
  P, n, O and the runs); the decoder then rebuilds the canonical descriptor from it and
  requires an exact match (OL-WIRE-26).
* :data:`ROOT` and :data:`BLOCK` are the one field table of raw_data: each field's name, data
  type and dims (named sizes of the geometry or of a run's layout). The canonical descriptor,
  the descriptor reader, the Construct schema, the block record dtype and every byte offset
  (:func:`field_spans`) are built from them.
* :func:`payload_schema` declares raw_data as a Construct structure built from the geometry:
  the root fields, then one array of block records per run. NumPy does the bulk: each array is
  read or written as one structured-dtype buffer.
* :func:`struct_bits` sizes any struct type in checked arithmetic (OL-WIRE-11).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from math import prod
from typing import Any

import construct as cs
import numpy as np
from construct.core import stream_read
from numpy.typing import DTypeLike

from hurray_decl.declare.schema import Rule
from hurray_decl.errors import OnnxLightError
from hurray_decl.onnx_light._generated import onnx_light_pb2 as pb
from hurray_decl.onnx_light.numerics import LOGICAL_CODES, LOGICAL_DTYPES, LOGICAL_NAMES, LOGICAL_TYPES, DataType
from hurray_decl.onnx_light.plan import U32_MAX, U64_MAX, QuantizationBlockLayout
from hurray_decl.onnx_light.profiles import WIRE_PREFIX, QuantizationFormat, parse_quantization_format

__all__ = [
    "PARAMETER_REF_FIELD",
    "Geometry",
    "RunGeometry",
    "canonical_type",
    "check_strings",
    "payload_schema",
    "pb",
    "read_geometry",
    "resolve_struct_type",
    "same_message",
    "struct_bits",
]

PARAMETER_REF_FIELD = pb.EncodedValueProto.DESCRIPTOR.fields_by_name["parameter_ref"].number
"""OD-01: the unconfirmed field number of EncodedValueProto.parameter_ref, named once here."""

INT64_MAX = 2**63 - 1


# --- the raw_data field table (DIGEST.md § 6, § 7) --------------------------------------------

SIZES = {"P": "permutation", "n": "transform", "O": "outliers", "T": "table_size", "C": "code_bytes"}
"""The named sizes a field's dims use: the spec's letter, and the attribute of a
:class:`Geometry` (P, n, O) or of a run's :class:`QuantizationBlockLayout` (T, C) holding it."""


@dataclass(frozen=True)
class PayloadField:
    """One tensor field of raw_data: its name, data type and dims (numbers, or letters of
    :data:`SIZES`), as the canonical descriptor declares it and the payload stores it."""

    name: str
    data_type: DataType
    dims: tuple[int | str, ...]
    doc: str

    def shape(self, sizes: Any) -> list[int]:
        """The dims with the named sizes read from ``sizes`` (a geometry or a layout)."""
        return [d if isinstance(d, int) else int(getattr(sizes, SIZES[d])) for d in self.dims]

    @property
    def dtype(self) -> np.dtype:
        """One element as stored: the data type's dtype, little-endian."""
        return self.data_type.dtype.newbyteorder("<")

    def count(self, sizes: Any) -> int:
        return prod(self.shape(sizes))

    def nbytes(self, sizes: Any) -> int:
        """Bytes of the field, in exact integer arithmetic."""
        return self.count(sizes) * self.dtype.itemsize


ROOT: tuple[PayloadField, ...] = (
    PayloadField("reserved", DataType.UINT8, (1,), "reserved; 0x00"),
    PayloadField("permutation", DataType.INT64, ("P",), "gather indices"),
    PayloadField("forward", DataType.DOUBLE, ("n", "n"), "row-major forward matrix"),
    PayloadField("inverse", DataType.DOUBLE, ("n", "n"), "row-major inverse matrix"),
    PayloadField("outlier_indices", DataType.INT64, ("O",), "original flat indices"),
    PayloadField("outlier_values", DataType.DOUBLE, ("O",), "original source values"),
)
"""The root tensor fields of raw_data, in order; the block runs follow (:data:`BLOCKS`)."""

BLOCKS = "blocks"
"""The root field after :data:`ROOT`: ``count``, then one array of block records per run."""

PARAMETERS = "parameters"
"""A block record's first field: the nine-value header, a constant (it takes no bytes)."""

BLOCK: tuple[PayloadField, ...] = (
    PayloadField("scale", DataType.DOUBLE, (), "scale"),
    PayloadField("zero_point", DataType.DOUBLE, (), "zero point"),
    PayloadField("offset", DataType.DOUBLE, (), "offset"),
    PayloadField("codebook", DataType.DOUBLE, ("T",), "table of T doubles"),
    PayloadField("codes", DataType.UINT8, ("C",), "C packed code bytes"),
)
"""The stored fields of one block record, in order, after its constant :data:`PARAMETERS`."""

ROOT_FIELDS = (*(f.name for f in ROOT), BLOCKS)
BLOCK_FIELDS = (PARAMETERS, *(f.name for f in BLOCK))


def _introduced() -> dict[str, int]:
    first: dict[str, int] = {}
    for i, f in enumerate(ROOT):
        for d in f.dims:
            if isinstance(d, str):
                first.setdefault(d, i)
    return first


_INTRODUCED = _introduced()
"""Each named root size and the first root field whose dims carry it (P: permutation, n: forward,
O: outlier_indices): where the descriptor reader finds it."""

_ELEMENT_BITS: dict[int, int] = {
    code: 8 * code.dtype.itemsize for code in (DataType.UINT8, DataType.INT64, *LOGICAL_TYPES)}
"""The element types a struct type may hold, and their widths (OL-WIRE-11)."""


def field_spans(fields: Sequence[PayloadField], sizes: Any) -> dict[str, tuple[int, int]]:
    """``{name: (offset, bytes)}`` of ``fields`` laid out one after another, in exact integers
    (nothing is allocated from the sizes)."""
    spans, at = {}, 0
    for f in fields:
        size = f.nbytes(sizes)
        spans[f.name] = (at, size)
        at += size
    return spans


def record_bytes(layout: QuantizationBlockLayout) -> int:
    """Payload bytes of one block record of ``layout``."""
    return sum(f.nbytes(layout) for f in BLOCK)


@dataclass(frozen=True)
class RunGeometry:
    """One merged descriptor run: its header and number of blocks."""

    layout: QuantizationBlockLayout
    blocks: int


@dataclass(frozen=True)
class Geometry:
    """Everything the descriptor fixes: profile, P, n, O and the merged runs."""

    format: QuantizationFormat
    permutation: int
    transform: int
    outliers: int
    runs: tuple[RunGeometry, ...]

    @property
    def total_blocks(self) -> int:
        return sum(r.blocks for r in self.runs)


def merge_runs(runs: Sequence[RunGeometry]) -> tuple[RunGeometry, ...]:
    """Merge neighbours with identical nine-value headers (OL-WIRE-24)."""
    merged: list[RunGeometry] = []
    for run in runs:
        if merged and merged[-1].layout.header() == run.layout.header():
            merged[-1] = RunGeometry(merged[-1].layout, merged[-1].blocks + run.blocks)
        else:
            merged.append(run)
    return tuple(merged)


# --- building the canonical descriptor -------------------------------------------------------

def _tensor_type(elem_type: int, dims: Sequence[int]) -> pb.TypeProto:
    t = pb.TypeProto()
    t.tensor_type.elem_type = elem_type
    t.tensor_type.shape.SetInParent()  # present even for a scalar (OL-WIRE-25)
    for d in dims:
        t.tensor_type.shape.dim.add().dim_value = int(d)
    return t


def add_tensor(structure, name: str, elem_type: int, dims: Sequence[int]) -> None:
    f = structure.field.add()
    f.name = name
    f.type.CopyFrom(_tensor_type(elem_type, dims))


def int64_constant(values: Sequence[int], dims: Sequence[int]) -> pb.TensorProto:
    c = pb.TensorProto()
    c.dims.extend(dims)
    c.data_type = DataType.INT64
    c.int64_data.extend(int(v) for v in values)
    return c


def _block_element(layout: QuantizationBlockLayout) -> pb.TypeProto:
    element = pb.TypeProto()
    s = element.struct_type.structure
    s.SetInParent()
    p = s.field.add()
    p.name = PARAMETERS
    p.constant.CopyFrom(int64_constant(layout.header(), [9]))
    for f in BLOCK:
        add_tensor(s, f.name, f.data_type, f.shape(layout))
    return element


def canonical_type(geometry: Geometry) -> pb.StructTypeProto:
    """The canonical descriptor of a geometry (OL-WIRE-17 .. -19, -24, -25)."""
    root = pb.StructTypeProto()
    root.name = WIRE_PREFIX + geometry.format.wire_name
    s = root.structure
    s.SetInParent()
    for f in ROOT:
        add_tensor(s, f.name, f.data_type, f.shape(geometry))
    blocks = s.field.add()
    blocks.name = BLOCKS
    bs = blocks.type.struct_type.structure
    bs.SetInParent()
    count = bs.field.add()
    count.name = "count"
    count.constant.CopyFrom(int64_constant([geometry.total_blocks], []))
    first = 0
    for run in merge_runs(geometry.runs):
        f = bs.field.add()
        f.name = f"run_{first}"
        array = f.type.struct_type.array
        array.dimension = run.blocks
        array.element_type.CopyFrom(_block_element(run.layout))
        first += run.blocks
    return root


def same_message(a, b) -> bool:
    """Structural equality as this codec's writer serializes (OD-03)."""
    return a.SerializeToString(deterministic=True) == b.SerializeToString(deterministic=True)


# --- reading a descriptor --------------------------------------------------------------------

def _fail(code: str, message: str, path: str, actual: Any = None, expected: Any = None) -> OnnxLightError:
    return OnnxLightError(code, message, path=path, actual=actual, expected=expected)


def _tensor_dims(field, elem_type: int, rank: int, code: str, path: str) -> list[int]:
    """The dims of a tensor field of the expected element type and rank, or ``code``."""
    if field.WhichOneof("content") != "type" or field.type.WhichOneof("value") != "tensor_type":
        raise _fail(code, "expected a tensor field", path, field.name, "a tensor type")
    tensor = field.type.tensor_type
    if tensor.elem_type != elem_type:
        raise _fail(code, "wrong element type", path, tensor.elem_type, elem_type)
    if not tensor.HasField("shape") or len(tensor.shape.dim) != rank:
        raise _fail(code, "wrong tensor rank", path, len(tensor.shape.dim), rank)
    dims = []
    for d in tensor.shape.dim:
        if d.WhichOneof("value") != "dim_value" or d.dim_value < 0:
            raise _fail(code, "a dimension is not a concrete dim_value", path, str(d).strip(), ">= 0")
        dims.append(d.dim_value)
    return dims


def _structure(node: pb.TypeProto, code: str, path: str):
    if node.WhichOneof("value") != "struct_type" or node.struct_type.WhichOneof("kind") != "structure":
        raise _fail(code, "expected a structure", path)
    return node.struct_type.structure


def read_header(constant: pb.TensorProto, path: str) -> QuantizationBlockLayout:
    """The nine-value header constant (OL-WIRE-20 .. -22)."""
    if (constant.data_type != DataType.INT64 or list(constant.dims) != [9] or len(constant.int64_data) != 9
            or constant.HasField("raw_data")):
        raise _fail("OL-WIRE-20", "parameters must be INT64 dims [9] with nine int64_data values "
                    "and no raw_data", path, (constant.data_type, list(constant.dims),
                                              len(constant.int64_data)), "INT64 [9] int64_data")
    values = list(constant.int64_data)
    for i, v in enumerate(values):
        if not 0 <= v <= U32_MAX:
            raise _fail("OL-WIRE-21", "a header value is outside [0, 2^32 - 1]", f"{path}[{i}]", v,
                        "0 .. 4294967295")
    if values[3] > 1 or values[7] > 1:
        raise _fail("OL-WIRE-22", "the signed or base3 flag is above 1", path, values, "flags 0 or 1")
    return QuantizationBlockLayout.from_header(values)


def read_geometry(root: pb.StructTypeProto, path: str = "value -> struct_type") -> Geometry:
    """Interpret a portable descriptor into the geometry its canonical form is rebuilt from."""
    if not isinstance(root.name, str) or not root.name.startswith(WIRE_PREFIX):
        raise _fail("OL-WIRE-14", "the root name does not start with onnx_light.quantization.v1/",
                    f"{path} -> name", root.name, WIRE_PREFIX + "<profile>")
    fmt = parse_quantization_format(root.name[len(WIRE_PREFIX):], path=f"{path} -> name")
    if root.WhichOneof("kind") != "structure" or len(root.structure.field) != len(ROOT_FIELDS):
        raise _fail("OL-WIRE-17", "the root must be a structure of seven fields", path,
                    len(root.structure.field), len(ROOT_FIELDS))
    fields = root.structure.field
    last = len(ROOT)  # the blocks field
    for i in (*dict.fromkeys(_INTRODUCED.values()), last):
        if fields[i].name != ROOT_FIELDS[i]:
            raise _fail("OL-WIRE-17", "unexpected root field name", f"{path} -> field[{i}]",
                        fields[i].name, ROOT_FIELDS[i])
    sizes: dict[str, int] = {}
    for i in dict.fromkeys(_INTRODUCED.values()):  # each size from the first field that carries it
        f = ROOT[i]
        dims = _tensor_dims(fields[i], f.data_type, len(f.dims), "OL-WIRE-17", f"{path} -> {f.name}")
        read: dict[str, int] = {}
        for d, value in zip(f.dims, dims):
            if isinstance(d, str) and read.setdefault(d, value) != value:  # n x n: a square matrix
                raise _fail("OL-WIRE-17", f"{f.name} is not square", f"{path} -> {f.name}", dims,
                            f"[{', '.join(str(d) for d in f.dims)}]")
        sizes.update(read)
    if fields[last].WhichOneof("content") != "type":
        raise _fail("OL-WIRE-17", "blocks must be a structure type", f"{path} -> {BLOCKS}")
    blocks = _structure(fields[last].type, "OL-WIRE-17", f"{path} -> {BLOCKS}")
    if not blocks.field or blocks.field[0].name != "count" or blocks.field[0].WhichOneof("content") != "constant":
        raise _fail("OL-WIRE-18", "the first field of blocks must be the constant count",
                    f"{path} -> blocks -> field[0]", blocks.field[0].name if blocks.field else None, "count")
    runs = []
    for i, f in enumerate(blocks.field[1:], start=1):
        where = f"{path} -> blocks -> {f.name or f'field[{i}]'}"
        if (f.WhichOneof("content") != "type" or f.type.WhichOneof("value") != "struct_type"
                or f.type.struct_type.WhichOneof("kind") != "array"):
            raise _fail("OL-WIRE-18", "a run must be an array field", where)
        array = f.type.struct_type.array
        if array.dimension == 0:
            raise _fail("OL-WIRE-23", "a run array has dimension 0", f"{where} -> dimension", 0, ">= 1")
        element = _structure(array.element_type, "OL-WIRE-19", f"{where} -> element_type")
        if len(element.field) != len(BLOCK_FIELDS) or element.field[0].WhichOneof("content") != "constant":
            raise _fail("OL-WIRE-19", "a block is parameters, scale, zero_point, offset, codebook, codes",
                        f"{where} -> element_type", [e.name for e in element.field], list(BLOCK_FIELDS))
        layout = read_header(element.field[0].constant, f"{where} -> parameters")
        runs.append(RunGeometry(layout, int(array.dimension)))
    return Geometry(fmt, runs=tuple(runs), **{SIZES[d]: int(v) for d, v in sizes.items()})


# --- generic sizing (OL-WIRE-11) ---------------------------------------------------------------

_STRING_RULES = {
    pb.EncodedValueProto.DESCRIPTOR.full_name: "OL-WIRE-03",
    pb.StructTypeProto.DESCRIPTOR.full_name: "OL-WIRE-02",
    pb.TensorAnnotation.DESCRIPTOR.full_name: "OL-SHR-01",
    pb.ModelProto.DESCRIPTOR.full_name: "OL-WIRE-01",
}
"""The rule of each message kind whose string fields must be UTF-8; nested messages inherit the
rule of the nearest listed message holding them (a StructTypeProto's Field is OL-WIRE-02)."""


@cache
def _own_string_rule(descriptor) -> str | None:
    """The rule of the nearest listed message holding ``descriptor`` (itself included), if any."""
    while descriptor is not None:
        if descriptor.full_name in _STRING_RULES:
            return _STRING_RULES[descriptor.full_name]
        descriptor = descriptor.containing_type
    return None


@cache
def _text_fields(descriptor) -> tuple[tuple[str, bool, bool], ...]:
    """The string and message fields of a message type: (name, repeated, a message)."""
    return tuple((f.name, f.is_repeated, f.type == f.TYPE_MESSAGE) for f in descriptor.fields
                 if f.type in (f.TYPE_STRING, f.TYPE_MESSAGE))


def check_strings(message, path: str, code: str) -> None:
    """Refuse a string field that is not UTF-8 (protobuf's Python runtime hands such a proto2
    string back as ``bytes``), with the rule of the message holding it; ``code`` is the rule
    for messages not listed in ``_STRING_RULES``."""
    descriptor = message.DESCRIPTOR
    code = _own_string_rule(descriptor) or code
    for name, repeated, nested in _text_fields(descriptor):   # not ListFields: it would copy every bytes field
        if repeated:
            items = getattr(message, name)
        elif message.HasField(name):
            items = (getattr(message, name),)
        else:
            continue
        if nested:
            for i, item in enumerate(items):
                check_strings(item, f"{path} -> {name}[{i}]" if repeated else f"{path} -> {name}", code)
        elif bytes in (kinds := list(map(type, items))):  # a string that is not UTF-8
            i = kinds.index(bytes)
            raise _fail(code, "a string field is not valid UTF-8", f"{path} -> {name}[{i}]" if repeated
                        else f"{path} -> {name}", items[i][:32].hex(" "), "UTF-8 text")


def _checked(value: int, path: str) -> int:
    if value > U64_MAX:
        raise _fail("OL-WIRE-11", "the type's size overflows 64 bits", path, value, "<= 2^64 - 1")
    return value


def struct_bits(node: pb.StructTypeProto, catalogue: dict[int, pb.StructTypeProto], path: str,
                depth: int = 0) -> int:
    """The payload size of a struct type in bits, in checked uint64 arithmetic."""
    if depth > 64:
        raise _fail("OL-WIRE-11", "the type nests too deeply (a type_ref cycle?)", path)
    kind = node.WhichOneof("kind")
    if kind == "type_ref":
        target = catalogue.get(node.type_ref)
        if target is None:
            raise _fail("OL-WIRE-05", "a type_ref does not resolve in the model's struct_types", path,
                        node.type_ref, "a declared type_id")
        return struct_bits(target, catalogue, path, depth + 1)
    if kind == "structure":
        total = 0
        for f in node.structure.field:
            where = f"{path} -> {f.name}"
            if f.WhichOneof("content") == "constant":
                continue
            if f.WhichOneof("content") != "type":
                raise _fail("OL-WIRE-11", "a field has neither a type nor a constant", where)
            total = _checked(total + type_bits(f.type, catalogue, where, depth + 1), where)
        return total
    if kind == "array":
        size = type_bits(node.array.element_type, catalogue, path, depth + 1)
        return _checked(node.array.dimension * size, path)
    raise _fail("OL-WIRE-11", f"this codec cannot size a {kind or 'kind-less'} struct type", path, kind)


def type_bits(node: pb.TypeProto, catalogue: dict[int, pb.StructTypeProto], path: str, depth: int) -> int:
    which = node.WhichOneof("value")
    if which == "struct_type":
        return struct_bits(node.struct_type, catalogue, path, depth)
    if which != "tensor_type":
        raise _fail("OL-WIRE-11", "a field type is neither a tensor nor a struct", path, which)
    tensor = node.tensor_type
    width = _ELEMENT_BITS.get(tensor.elem_type)
    if width is None:
        raise _fail("OL-WIRE-11", "a tensor field has an element type without a bit width", path,
                    tensor.elem_type)
    if not tensor.HasField("shape"):
        raise _fail("OL-WIRE-11", "a tensor field without a shape cannot be sized (OD-10)", path)
    total = width
    for d in tensor.shape.dim:
        if d.WhichOneof("value") != "dim_value" or d.dim_value < 0:
            raise _fail("OL-WIRE-11", "a symbolic or negative dimension cannot be sized (OD-10)", path)
        total = _checked(total * d.dim_value, path)
    return total


def model_catalogue(model) -> dict[int, pb.StructTypeProto]:
    """The model's struct_types by type_id (OL-WIRE-06, -07)."""
    catalogue: dict[int, pb.StructTypeProto] = {}
    if model is None:
        return catalogue
    if not isinstance(model, pb.ModelProto):
        if not hasattr(model, "SerializeToString"):
            raise _fail("OL-WIRE-05", "model must be a ModelProto (or None)", "model",
                        type(model).__name__, "ModelProto")
        model = pb.ModelProto.FromString(model.SerializeToString())
    for i, entry in enumerate(model.struct_types):
        check_strings(entry, f"model -> struct_types[{i}]", "OL-WIRE-02")
        where = f"model -> struct_types[{i}] -> type_id"
        if not entry.HasField("type_id") or entry.type_id == 0:
            raise _fail("OL-WIRE-06", "a catalogue entry needs a non-zero type_id", where,
                        entry.type_id, "> 0")
        if entry.type_id in catalogue:
            raise _fail("OL-WIRE-07", "two catalogue entries share a type_id", where, entry.type_id, "unique")
        catalogue[entry.type_id] = entry
    return catalogue


def resolve_struct_type(node: pb.StructTypeProto, model, path: str) -> pb.StructTypeProto:
    """The inline type, or the catalogue entry a type_ref names, with type_id cleared."""
    if node.WhichOneof("kind") == "type_ref":
        alone = pb.StructTypeProto(type_ref=node.type_ref)
        if not same_message(alone, node):
            raise _fail("OL-WIRE-04", "a type_ref must be the only field set", path)
        catalogue = model_catalogue(model)
        target = catalogue.get(node.type_ref)
        if target is None:
            raise _fail("OL-WIRE-05", "the type_ref does not resolve in the model's struct_types",
                        f"{path} -> type_ref", node.type_ref, "a declared type_id")
        resolved = pb.StructTypeProto()
        resolved.CopyFrom(target)
        resolved.ClearField("type_id")
        return resolved
    if node.HasField("type_id"):
        raise _fail("OL-WIRE-08", "an inline struct_type must not carry a type_id", f"{path} -> type_id",
                    node.type_id, "absent")
    return node


# --- the raw_data schema ---------------------------------------------------------------------

class NumpyArray(cs.Construct):
    """``count`` items of a NumPy dtype, read and written as one buffer.

    With a structured dtype this is an array of block records: one item per block.
    """

    def __init__(self, dtype: DTypeLike, count: int, doc: str = "") -> None:
        super().__init__()
        self.dtype = np.dtype(dtype)
        self.count = int(count)
        self.docs = doc

    def _parse(self, stream, context, path):
        size = self.count * self.dtype.itemsize
        buffer = context._params.get("buffer")
        if buffer is not None and isinstance(stream, io.BytesIO):
            # parse(data, buffer=data) on the top-level stream: a read-only view, no copy
            at = stream.tell()
            if len(buffer) - at >= size:
                stream.seek(at + size)
                return np.frombuffer(buffer, dtype=self.dtype, count=self.count, offset=at)
        data = stream_read(stream, size, path)
        return np.frombuffer(data, dtype=self.dtype, count=self.count)

    def _build(self, obj, stream, context, path):
        array = np.ascontiguousarray(np.asarray(obj, dtype=self.dtype)).reshape(self.count)
        stream.write(array.data.cast("B"))   # the array's own bytes, without a copy
        return obj

    def _sizeof(self, context, path):
        return self.count * self.dtype.itemsize


def block_dtype(layout: QuantizationBlockLayout) -> np.dtype:
    """One block record, from :data:`BLOCK`: scale, zero_point, offset (f64), codebook (f64 [T]),
    codes (u8 [C])."""
    return np.dtype([(f.name, f.dtype, tuple(f.shape(layout))) if f.dims else (f.name, f.dtype) for f in BLOCK])


_RECORDS = f"block records: {', '.join(f.name for f in BLOCK)}"
_RESERVED = ROOT[0]
"""The one-byte reserved field, refused unless zero (OL-WIRE-30)."""


def payload_schema(geometry: Geometry) -> cs.Struct:
    """raw_data of a portable value as a Construct structure (OL-WIRE-27), from :data:`ROOT` and
    :data:`BLOCK`."""
    runs = []
    first = 0
    for run in merge_runs(geometry.runs):
        runs.append(f"run_{first}" / NumpyArray(block_dtype(run.layout), run.blocks, _RECORDS))
        first += run.blocks
    reserved = _RESERVED.name / Rule(cs.Int8ul, lambda v, _: v == 0, "OL-WIRE-30", "0x00",
                                     "the reserved byte is not zero", error=OnnxLightError) * _RESERVED.doc
    return cs.Struct(
        reserved,
        *(f.name / NumpyArray(f.dtype, f.count(geometry), f.doc) for f in ROOT[1:]),
        BLOCKS / cs.Struct(*runs),
    )


def logical_shape(logical: pb.TypeProto, path: str) -> tuple[int, tuple[int, ...]]:
    """The dtype code and concrete shape of a logical type (OL-WIRE-15, -16)."""
    if logical.WhichOneof("value") != "tensor_type" or logical.tensor_type.elem_type not in LOGICAL_DTYPES:
        raise _fail("OL-WIRE-15", f"the logical type is not a {LOGICAL_NAMES} tensor",
                    path, logical.tensor_type.elem_type if logical.HasField("tensor_type") else
                    logical.WhichOneof("value"), LOGICAL_CODES)
    tensor = logical.tensor_type
    if not tensor.HasField("shape"):
        raise _fail("OL-WIRE-16", "the logical type has no shape", f"{path} -> shape")
    dims = []
    count = 1
    for i, d in enumerate(tensor.shape.dim):
        if d.WhichOneof("value") != "dim_value" or d.dim_value < 0:
            raise _fail("OL-WIRE-16", "a logical dimension is not concrete and >= 0",
                        f"{path} -> shape -> dim[{i}]", str(d).strip() or "unset", ">= 0")
        dims.append(int(d.dim_value))
        count *= dims[-1]
    if count > INT64_MAX:   # the element count, in checked arithmetic (it never wraps)
        raise _fail("OL-WIRE-16", "the logical element count overflows 63 bits", f"{path} -> shape",
                    dims, f"a product <= {INT64_MAX}")
    return tensor.elem_type, tuple(dims)


def make_logical_type(code: int, shape: Sequence[int]) -> pb.TypeProto:
    return _tensor_type(code, shape)
