"""Valid onnx-light inputs of every profile, ORT layout and compact form, and rule-labelled mutants.

Everything here is built from a :class:`Source` of choices, so the same builders serve the
Hypothesis strategies (:mod:`.strategies`, which draw the choices and shrink them), the bundled
example corpus (:mod:`.corpus`, a seeded :class:`RandomSource`) and the fuzz harness.

* :func:`valid_value` encodes an array with a plan drawn for any profile (portable: block sizes,
  scales, zero points, learned tables, permutation, transform, outliers, mixed bit widths; ORT:
  K, N, block size, source dtype and the three zero-point storages); :func:`compact_model`
  declares a parameter set and holds a compact value of it.
* :data:`MUTANTS` maps every OL reader rule a file can break to a generator of inputs that
  break that rule and no other; each :class:`Case` says which field it changed. Byte positions
  inside ``raw_data`` come from the dump of the valid input (its rows are named by the payload
  declaration), never from offsets written here.
* :data:`EXCLUDED` lists the OL reader rules without a mutant, each with the reason.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from hurray_decl.onnx_light.codec import make_quantization_type, quantize_array
from hurray_decl.onnx_light.inputs import MODEL, TENSOR, VALUE
from hurray_decl.onnx_light.numerics import LOGICAL_DTYPES, DataType
from hurray_decl.onnx_light.ort import FLOATING, IMPLICIT, ORT_FORMATS, PACKED, make_matmul_nbits_plan
from hurray_decl.onnx_light.plan import make_quantization_plan
from hurray_decl.onnx_light.profiles import PROFILES, WIRE_PREFIX, QuantizationFormat, QuantizationMethod
from hurray_decl.onnx_light.shared import PARAMETERS_PREFIX, add_quantization_parameters, quantize_tensor_shared
from hurray_decl.onnx_light.tensors import array_to_tensor
from hurray_decl.onnx_light.wire import make_logical_type, pb

__all__ = [
    "Source", "RandomSource", "Case", "Mutant", "MUTANTS", "EXCLUDED",
    "valid_value", "ort_value", "valid_case", "compact_model", "catalogue_model", "PORTABLE", "ORT",
]

PORTABLE = tuple(f for f in QuantizationFormat if f.portable)
ORT = tuple(ORT_FORMATS)


class Source:
    """The choices a builder makes; subclasses draw them from a seed or from Hypothesis."""

    def integer(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def choice(self, options: Sequence[Any]) -> Any:
        return options[self.integer(0, len(options) - 1)]

    def coin(self) -> bool:
        return bool(self.integer(0, 1))

    def floats(self, count: int, lo: float, hi: float) -> np.ndarray:
        """``count`` values on a grid of eighths in [lo, hi] (exact in every source dtype)."""
        steps = int((hi - lo) * 8)
        return np.array([lo + self.integer(0, steps) / 8 for _ in range(count)], dtype=np.float64)


class RandomSource(Source):
    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.random.randint(lo, hi)


@dataclass(frozen=True)
class Case:
    """One input file: its bytes, kind, the rule it breaks (None when valid) and what changed."""

    data: bytes
    kind: str
    rule: str | None
    field: str = ""          # the path prefix of the changed field, as the dump names it
    description: str = ""


# --- valid values ---------------------------------------------------------------------------------

def _shape(count: int, src: Source) -> tuple[int, ...]:
    if count and count % 2 == 0 and src.coin():
        return (2, count // 2)
    return (count,)


def _portable_plan(fmt: QuantizationFormat, count: int, src: Source, block: int | None = None):
    defaults = PROFILES[fmt]
    block = src.integer(1, max(1, count)) if block is None else block
    plan = make_quantization_plan(fmt, count, block_size=block)
    for i, run in enumerate(plan.runs):
        if defaults.method == QuantizationMethod.AFFINE and i == 1 and src.coin():
            run.layout.bits = src.integer(2, 8)  # a mixed-precision run (exl2 style)
        blocks = run.blocks
        for b in blocks:
            b.scale = src.choice((0.25, 0.5, 1.0, 2.0))
            if defaults.method == QuantizationMethod.AFFINE and not defaults.signed:
                b.zero_point = float(src.integer(0, (1 << int(run.layout.bits)) - 1))
            if defaults.method == QuantizationMethod.AFFINE and src.coin():
                b.offset = src.choice((0.0, 0.5, -1.25))
            if defaults.learned:
                size = run.layout.books * run.layout.entries * run.layout.vector_size
                b.codebook = list(src.floats(size, -2.0, 2.0))
        run.blocks = blocks
        plan.set_run(i, run)
    if count and src.coin():
        order = list(range(count))
        for k in range(count - 1, 0, -1):
            j = src.integer(0, k)
            order[k], order[j] = order[j], order[k]
        plan.permutation = order
    n = 2 if count % 2 == 0 and count else 1
    if defaults.needs_transform or (count and src.coin()):
        plan.transform_size = n
        if n == 2:
            plan.forward, plan.inverse = [1.0, 1.0, 1.0, -1.0], [0.5, 0.5, 0.5, -0.5]
        else:
            plan.forward, plan.inverse = [2.0], [0.5]
    if count and src.coin():
        picked = sorted({src.integer(0, count - 1) for _ in range(src.integer(1, 3))})
        plan.outliers = picked
    return plan


def valid_value(src: Source, fmt: QuantizationFormat | None = None, *, count: int | None = None,
                block_size: int | None = None, name: str | None = None) -> pb.EncodedValueProto:
    """An encoded value of ``fmt`` (drawn when None), portable or ORT; ``count`` elements in
    blocks of ``block_size`` (both drawn when None)."""
    fmt = src.choice(tuple(QuantizationFormat)) if fmt is None else fmt
    if fmt in ORT_FORMATS:
        value = ort_value(fmt, src)
    else:
        count = src.integer(0, 24) if count is None else count
        dtype = LOGICAL_DTYPES[src.choice((DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16, DataType.DOUBLE))]
        data = src.floats(count, -6.0, 6.0).astype(dtype).reshape(_shape(count, src))
        value = quantize_array(data, _portable_plan(fmt, count, src, block_size))
    if name is not None:
        value.name = name
    return value


def ort_value(fmt: QuantizationFormat, src: Source, storage: str | None = None) -> pb.EncodedValueProto:
    """An ORT value; ``storage`` picks implicit, packed or floating zero points (drawn when None)."""
    bits = ORT_FORMATS[fmt]
    k, n = src.integer(1, 40), src.integer(1, 3)
    block = src.choice((16, 32))
    plan = make_matmul_nbits_plan(fmt, k, n, block)
    storage = src.choice((IMPLICIT, PACKED, FLOATING)) if storage is None else storage
    run = plan.run(0)
    blocks = run.blocks
    for b in blocks:
        b.scale = src.choice((0.25, 0.5, 1.0, -0.5))
        if storage == PACKED:
            b.zero_point = float(src.integer(0, (1 << bits) - 1))
        elif storage == FLOATING:
            b.zero_point = src.choice((0.5, 1.25, 2.5))
    if storage == PACKED and all(b.zero_point == 1 << (bits - 1) for b in blocks):
        blocks[0].zero_point = 0.0
    run.blocks = blocks
    plan.set_run(0, run)
    dtype = LOGICAL_DTYPES[src.choice((DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16))]
    return quantize_array(src.floats(k * n, -3.0, 3.0).reshape(k, n).astype(dtype), plan)


def _model(*values: pb.EncodedValueProto) -> pb.ModelProto:
    model = pb.ModelProto(ir_version=10)
    model.graph.name = "onnx_light_values"
    model.opset_import.add(domain="", version=21)
    model.opset_import.add(domain="ai.rt", version=1)
    for value in values:
        model.graph.encoded_initializer.add().CopyFrom(value)
    return model


def compact_model(src: Source, fmt: QuantizationFormat | None = None) -> pb.ModelProto:
    """A model declaring parameter set ``common`` and holding one compact value ``w`` of it."""
    fmt = src.choice((QuantizationFormat.INT4, QuantizationFormat.INT8, QuantizationFormat.NF4,
                      QuantizationFormat.BINARY, QuantizationFormat.TQ2_0, QuantizationFormat.ORT_MATMULNBITS_INT4)) \
        if fmt is None else fmt
    model = _model()
    if fmt in ORT_FORMATS:
        k, n = src.integer(1, 20), src.integer(1, 2)
        template = quantize_array(np.zeros((k, n), np.float32), make_matmul_nbits_plan(fmt, k, n, 16))
        storage, shape, blocks = template.struct_type, (k, n), n * -(-k // 16)
    else:
        count = src.integer(1, 16)
        block = src.integer(1, count)
        plan = make_quantization_plan(fmt, count, block_size=block)
        storage, shape, blocks = make_quantization_type(plan), (count,), sum(len(r) for r in plan.runs)
    scales = np.array([src.choice((0.5, 1.0, 2.0)) for _ in range(blocks)], np.float32)
    add_quantization_parameters(model, "common", storage, make_logical_type(DataType.FLOAT, shape), scales=scales)
    x = src.floats(int(np.prod(shape)), -4.0, 4.0).astype(np.float32).reshape(shape)
    compact = quantize_tensor_shared(x, model, "common").encoded
    compact.name = "w"
    model.graph.encoded_initializer.add().CopyFrom(compact)
    return model


def valid_case(src: Source, kind: str | None = None) -> Case:
    """A valid input of any kind: a value (any profile), a model (values, catalogue, compact) or a tensor."""
    kind = src.choice((VALUE, VALUE, VALUE, MODEL, TENSOR)) if kind is None else kind
    if kind == VALUE:
        value = valid_value(src)
        return Case(value.SerializeToString(), VALUE, None, description=value.struct_type.name)
    if kind == TENSOR:
        count = src.integer(0, 12)
        code = src.choice((DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16, DataType.DOUBLE))
        tensor = array_to_tensor(src.floats(count, -4, 4).astype(LOGICAL_DTYPES[code]), code)
        tensor.name = "t"
        return Case(tensor.SerializeToString(), TENSOR, None, description="a floating TensorProto")
    choice = src.integer(0, 2)
    if choice == 0:
        model = compact_model(src)
    elif choice == 1:
        model = catalogue_model(src)
    else:
        model = _model(valid_value(src, name="a"), valid_value(src, name="b"))
    return Case(model.SerializeToString(), MODEL, None, description="a model with encoded initializers")


def catalogue_model(src: Source, type_id: int = 7) -> pb.ModelProto:
    """A model whose value refers to its descriptor through the model catalogue (type_ref)."""
    value = valid_value(src, src.choice(PORTABLE), name="w")
    model = _model()
    entry = model.struct_types.add()
    entry.CopyFrom(value.struct_type)
    entry.type_id = type_id
    value.struct_type.Clear()
    value.struct_type.type_ref = type_id
    model.graph.encoded_initializer.add().CopyFrom(value)
    return model


# --- mutants ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mutant:
    rule: str
    build: Callable[[Source], Case]
    doc: str


MUTANTS: dict[str, Mutant] = {}


def mutant(rule: str, doc: str):
    def register(build: Callable[[Source], Case]) -> Callable[[Source], Case]:
        MUTANTS[rule] = Mutant(rule, build, doc)
        return build
    return register


def _payload_rows(value: pb.EncodedValueProto, prefix: str) -> list[tuple[int, Any]]:
    """(offset within raw_data, row) of the dump rows whose path starts with ``prefix``: the dump
    names raw_data's bytes by the payload declaration."""
    from hurray_decl.onnx_light.dump import dump

    rows = dump(value.SerializeToString(), kind=VALUE).rows
    start = next(r.offset + r.size for r in rows if r.field == "raw_data:length")
    return [(r.offset - start, r) for r in rows if r.field.startswith(prefix)]


def _patched(value: pb.EncodedValueProto, at: int, new: bytes) -> pb.EncodedValueProto:
    raw = bytearray(value.raw_data)
    raw[at:at + len(new)] = new
    value.raw_data = bytes(raw)
    return value


def _value_case(value: pb.EncodedValueProto, rule: str, field: str, description: str) -> Case:
    return Case(value.SerializeToString(), VALUE, rule, field, description)


def _model_case(model: pb.ModelProto, rule: str, field: str, description: str) -> Case:
    return Case(model.SerializeToString(), MODEL, rule, field, description)


def _portable(src: Source, profiles: Sequence[QuantizationFormat] = PORTABLE, count: int | None = None,
              minimum: int = 0) -> pb.EncodedValueProto:
    count = src.integer(max(1, minimum), 24) if count is None else count
    return valid_value(src, src.choice(tuple(profiles)), count=count)


def _fields(value: pb.EncodedValueProto):
    return value.struct_type.structure.field


def _runs(value: pb.EncodedValueProto):
    return _fields(value)[6].type.struct_type.structure.field[1:]


def _header(value: pb.EncodedValueProto, run: int = 0):
    return _runs(value)[run].type.struct_type.array.element_type.struct_type.structure.field[0].constant


RUN = "struct_type.structure.field[6].type.struct_type.structure.field"


@mutant("OL-PROF-02", "the root name carries an unknown or mis-cased profile name")
def _(src):
    value = _portable(src)
    wire = value.struct_type.name[len(WIRE_PREFIX):]
    value.struct_type.name = WIRE_PREFIX + src.choice((wire.upper(), wire + "x", "unknown", ""))
    if value.struct_type.name == WIRE_PREFIX + wire:
        value.struct_type.name = WIRE_PREFIX + "unknown"
    return _value_case(value, "OL-PROF-02", "struct_type.name", "unknown profile name")


@mutant("OL-WIRE-04", "a type_ref with another field set beside it")
def _(src):
    value = _portable(src)
    value.struct_type.Clear()
    value.struct_type.type_ref = src.integer(1, 1000)
    value.struct_type.name = src.choice(("x", WIRE_PREFIX + "int4"))
    return _value_case(value, "OL-WIRE-04", "struct_type", "type_ref with a name")


@mutant("OL-WIRE-05", "a type_ref that the (absent) model catalogue does not declare")
def _(src):
    value = _portable(src)
    value.struct_type.Clear()
    value.struct_type.type_ref = src.integer(1, 1 << 40)
    return _value_case(value, "OL-WIRE-05", "struct_type", "unresolved type_ref")


@mutant("OL-WIRE-06", "a model catalogue entry with type_id 0")
def _(src):
    model = catalogue_model(src)
    model.struct_types[0].type_id = 0
    return _model_case(model, "OL-WIRE-06", "struct_types[0]", "catalogue type_id 0")


@mutant("OL-WIRE-07", "two model catalogue entries with the same type_id")
def _(src):
    model = catalogue_model(src)
    model.struct_types.add().CopyFrom(model.struct_types[0])
    return _model_case(model, "OL-WIRE-07", "struct_types[1]", "duplicate catalogue type_id")


@mutant("OL-WIRE-08", "an inline struct_type that carries a type_id")
def _(src):
    value = _portable(src)
    value.struct_type.type_id = src.integer(1, 1 << 40)
    return _value_case(value, "OL-WIRE-08", "struct_type.type_id", "inline type_id")


@mutant("OL-WIRE-09", "raw_data and external_data both present")
def _(src):
    value = _portable(src)
    value.external_data.add(key="location", value=src.choice(("w.bin", "data")))
    return _value_case(value, "OL-WIRE-09", "external_data", "raw_data and external_data")


@mutant("OL-WIRE-10", "an external payload that is not loaded")
def _(src):
    value = _portable(src)
    value.ClearField("raw_data")
    if src.coin():
        value.external_data.add(key="location", value="w.bin")
    else:
        value.data_location = pb.TensorProto.EXTERNAL
    return _value_case(value, "OL-WIRE-10", "", "external payload not loaded")


@mutant("OL-WIRE-11", "a descriptor dimension whose size overflows 64 bits")
def _(src):
    value = _portable(src)
    index = src.choice((1, 4, 5))
    dim = _fields(value)[index].type.tensor_type.shape.dim[0]
    dim.dim_value = (1 << 61) + src.integer(0, 1 << 20)
    return _value_case(value, "OL-WIRE-11", "struct_type", "size overflow")


@mutant("OL-WIRE-12", "a root struct whose payload size is 0 bits")
def _(src):
    value = valid_value(src, src.choice([f for f in PORTABLE if not PROFILES[f].needs_transform]), count=0)
    _fields(value)[0].type.tensor_type.shape.dim[0].dim_value = 0
    return _value_case(value, "OL-WIRE-12", "struct_type", "root size 0")


@mutant("OL-WIRE-13", "raw_data holding more than one record")
def _(src):
    value = _portable(src)
    value.raw_data = value.raw_data * src.integer(2, 3)
    return _value_case(value, "OL-WIRE-13", "raw_data", "two records")


@mutant("OL-WIRE-14", "a root name without the onnx_light.quantization.v1/ prefix")
def _(src):
    value = _portable(src)
    wire = value.struct_type.name[len(WIRE_PREFIX):]
    value.struct_type.name = src.choice(("onnx_light.quantization.v2/", "quantization.v1/", "")) + wire
    return _value_case(value, "OL-WIRE-14", "struct_type.name", "wrong root prefix")


@mutant("OL-WIRE-15", "a logical type that is not a floating tensor")
def _(src):
    value = _portable(src)
    if src.coin():
        value.logical_type.tensor_type.elem_type = src.choice((0, 2, 3, 6, 7, 8, 9, 12))
    else:
        value.logical_type.Clear()
        value.logical_type.opaque_type.name = "x"
    return _value_case(value, "OL-WIRE-15", "logical_type", "logical type not floating")


@mutant("OL-WIRE-16", "a logical dimension that is not a concrete dim_value >= 0")
def _(src):
    value = _portable(src, minimum=1)
    dim = value.logical_type.tensor_type.shape.dim[0]
    if src.coin():
        dim.dim_param = "N"
    else:
        dim.dim_value = -src.integer(1, 100)
    return _value_case(value, "OL-WIRE-16", "logical_type", "symbolic logical dimension")


@mutant("OL-WIRE-21", "a block-header value outside [0, 2^32 - 1]")
def _(src):
    value = _portable(src, minimum=1)
    header = _header(value)
    position = src.integer(0, 8)
    header.int64_data[position] = src.choice((-1, -(1 << 40), (1 << 32) + src.integer(0, 1000)))
    return _value_case(value, "OL-WIRE-21", f"{RUN}[1]", "header value out of range")


@mutant("OL-WIRE-22", "a signed or base3 flag above 1")
def _(src):
    value = _portable(src, minimum=1)
    _header(value).int64_data[src.choice((3, 7))] = src.integer(2, (1 << 32) - 1)
    return _value_case(value, "OL-WIRE-22", f"{RUN}[1]", "flag above 1")


@mutant("OL-WIRE-23", "a run array of dimension 0 (its block records removed)")
def _(src):
    value = _portable(src, minimum=1)
    runs = _runs(value)
    index = src.integer(0, len(runs) - 1)
    records = _payload_rows(value, f"raw_data.runs[{index}].")
    start = records[0][0]
    end = records[-1][0] + records[-1][1].size
    runs[index].type.struct_type.array.dimension = 0
    value.raw_data = value.raw_data[:start] + value.raw_data[end:]
    return _value_case(value, "OL-WIRE-23", f"{RUN}[{index + 1}]", "empty run")


@mutant("OL-WIRE-26", "a descriptor that differs from the canonical schema of its own runs")
def _(src):
    value = _portable(src, minimum=1)
    how = src.integer(0, 3)
    if how == 0:
        _fields(value)[src.choice((0, 3, 5))].name += "_"
    elif how == 1:
        _runs(value)[0].name = f"run_{src.integer(1, 99)}"
    elif how == 2:
        _fields(value)[src.integer(0, 6)].doc_string = "not canonical"
    else:
        value.struct_type.doc_string = "not canonical"
    return _value_case(value, "OL-WIRE-26", "struct_type", "non-canonical descriptor")


@mutant("OL-WIRE-28", "raw_data shorter than the descriptor's size")
def _(src):
    value = _portable(src, minimum=1)
    value.raw_data = value.raw_data[:src.integer(0, len(value.raw_data) - 1)]
    return _value_case(value, "OL-WIRE-28", "raw_data", "truncated payload")


@mutant("OL-WIRE-29", "trailing bytes after the payload")
def _(src):
    value = _portable(src, minimum=1)
    while len(value.raw_data) < 2:
        value = _portable(src, minimum=1)
    extra = src.integer(1, len(value.raw_data) - 1)
    value.raw_data = value.raw_data + bytes(src.integer(0, 255) for _ in range(extra))
    return _value_case(value, "OL-WIRE-29", "raw_data", "trailing bytes")


@mutant("OL-WIRE-30", "a reserved byte other than 0x00 (in a value file, or in a model's nested graph)")
def _(src):
    value = _portable(src)
    (at, _row), = _payload_rows(value, "raw_data.reserved")
    value = _patched(value, at, bytes([src.integer(1, 255)]))
    if src.coin():
        return _value_case(value, "OL-WIRE-30", "raw_data.reserved", "reserved byte set")
    model = _model()
    branch = model.graph.node.add(op_type="If", input=["c"], output=["y"])
    attribute = branch.attribute.add(name="then_branch", type=5)
    attribute.g.name = "then"
    attribute.g.encoded_initializer.add().CopyFrom(value)
    return _model_case(model, "OL-WIRE-30", "graph.node[0].attribute[0].g.encoded_initializer[0].raw_data.reserved",
                       "reserved byte set in a nested graph's value (OL-WIRE-42)")


def _blocks_with(value, wanted) -> list[tuple[int, Any, Any]]:
    """(raw offset, codes row, layout) of the blocks whose layout satisfies ``wanted``."""
    layouts = [run.layout for run in _merged_layouts(value)]
    found = []
    for at, row in _payload_rows(value, "raw_data.runs["):
        if row.field.endswith(".codes"):
            run = int(row.field.split("runs[", 1)[1].split("]", 1)[0])
            if wanted(layouts[run]):
                found.append((at, row, layouts[run]))
    return found


def _merged_layouts(value):
    from hurray_decl.onnx_light.wire import merge_runs, read_geometry

    return merge_runs(read_geometry(value.struct_type).runs)


def _value_with_blocks(src: Source, profiles, wanted, count_range=(1, 24)):
    while True:
        value = valid_value(src, src.choice(tuple(profiles)), count=src.integer(*count_range))
        found = _blocks_with(value, wanted)
        if found:
            return value, found


_BINARY_PACKED = tuple(f for f in PORTABLE if PROFILES[f].method != QuantizationMethod.CAST and not PROFILES[f].base3)
_BASE3 = tuple(f for f in PORTABLE if PROFILES[f].base3)


@mutant("OL-WIRE-34", "non-zero unused high bits in a block's last code byte")
def _(src):
    value, found = _value_with_blocks(src, _BINARY_PACKED,
                                      lambda l: not int(l.base3) and l.method != QuantizationMethod.CAST
                                      and (l.code_count * int(l.bits)) % 8 != 0)
    at, row, layout = src.choice(found)
    used = (layout.code_count * int(layout.bits)) % 8
    last = at + row.size - 1
    bit = 1 << src.integer(used, 7)
    return _value_case(_patched(value, last, bytes([value.raw_data[last] | bit])), "OL-WIRE-34", row.field,
                       "padding bits set")


@mutant("OL-WIRE-36", "a base-3 byte of 243 or more")
def _(src):
    value, found = _value_with_blocks(src, _BASE3, lambda l: bool(int(l.base3)))
    at, row, _layout = src.choice(found)
    k = src.integer(0, row.size - 1)
    return _value_case(_patched(value, at + k, bytes([src.integer(243, 255)])), "OL-WIRE-36", row.field,
                       "base-3 byte >= 243")


@mutant("OL-WIRE-37", "a base-3 byte with a non-zero trit after the real ones")
def _(src):
    value, found = _value_with_blocks(src, _BASE3, lambda l: bool(int(l.base3)) and l.code_count % 5 != 0)
    at, row, layout = src.choice(found)
    last = at + row.size - 1
    used = layout.code_count % 5
    new = value.raw_data[last] + 3 ** src.integer(used, 4)
    if new >= 243:
        new = value.raw_data[last] + 3 ** used
    return _value_case(_patched(value, last, bytes([new])), "OL-WIRE-37", row.field, "non-zero trailing trit")


_SHORT_TABLES = tuple(f for f in PORTABLE if PROFILES[f].method == QuantizationMethod.CODEBOOK
                      and not PROFILES[f].base3 and PROFILES[f].entries < (1 << PROFILES[f].bits))


@mutant("OL-NUM-18", "a codebook index >= entries")
def _(src):
    value, found = _value_with_blocks(src, _SHORT_TABLES, lambda l: l.method == QuantizationMethod.CODEBOOK
                                      and not int(l.base3) and int(l.entries) < (1 << int(l.bits))
                                      and int(l.bits) in (1, 2, 4, 8))
    at, row, layout = src.choice(found)
    bits = int(layout.bits)
    k = src.integer(0, layout.code_count - 1)
    index = src.integer(int(layout.entries), (1 << bits) - 1)
    byte, shift = divmod(k * bits, 8)
    raw = value.raw_data[at + byte]
    mask = ((1 << bits) - 1) << shift
    return _value_case(_patched(value, at + byte, bytes([(raw & ~mask) | (index << shift)])), "OL-NUM-18",
                       row.field, "codebook index out of range")


# --- ORT mutants ------------------------------------------------------------------------------------

def _ort(src: Source, storage: str | None = None, ragged: bool = False) -> pb.EncodedValueProto:
    while True:
        value = ort_value(src.choice(ORT), src, storage)
        k = value.logical_type.tensor_type.shape.dim[0].dim_value
        block = _fields(value)[0].constant.int64_data[1]
        if not ragged or k % block:
            return value


@mutant("OL-ORT-23", "a non-zero code in a column's padding rows")
def _(src):
    value = _ort(src, ragged=True)
    bits = _fields(value)[0].constant.int64_data[0]
    block = _fields(value)[0].constant.int64_data[1]
    k = value.logical_type.tensor_type.shape.dim[0].dim_value
    groups = -(-k // block)
    column = src.integer(0, _fields(value)[1].type.tensor_type.shape.dim[0].dim_value - 1)
    (at, row), = _payload_rows(value, f"raw_data.B[{column}][{groups - 1}]")
    w = src.integer(k % block, block - 1)
    byte, shift = divmod(w * bits, 8)
    raw = value.raw_data[at + byte]
    return _value_case(_patched(value, at + byte, bytes([raw | (1 << shift)])), "OL-ORT-23", row.field,
                       "padding code set")


@mutant("OL-ORT-24", "non-zero unused bits in packed zero points")
def _(src):
    while True:
        value = _ort(src, PACKED)
        bits = _fields(value)[0].constant.int64_data[0]
        groups = _fields(value)[2].type.tensor_type.shape.dim[1].dim_value
        if (groups * bits) % 8:
            break
    rows = _payload_rows(value, "raw_data.zero_points[")
    at, row = src.choice(rows)
    last = at + row.size - 1
    bit = 1 << src.integer((groups * bits) % 8, 7)
    return _value_case(_patched(value, last, bytes([value.raw_data[last] | bit])), "OL-ORT-24", row.field,
                       "zero-point padding set")


@mutant("OL-ORT-25", "parameters[0] differs from the profile's bits")
def _(src):
    value = _ort(src)
    bits = _fields(value)[0].constant.int64_data[0]
    _fields(value)[0].constant.int64_data[0] = src.choice([b for b in (1, 2, 3, 4, 8, 16) if b != bits])
    return _value_case(value, "OL-ORT-25", "struct_type.structure.field[0]", "bits constant changed")


@mutant("OL-ORT-26", "a fourth field not named zero_points")
def _(src):
    value = _ort(src, src.choice((PACKED, FLOATING)))
    _fields(value)[3].name = src.choice(("zero_point", "zp", "offsets", ""))
    return _value_case(value, "OL-ORT-26", "struct_type.structure.field[3]", "zero_points renamed")


@mutant("OL-ORT-27", "a descriptor that is not the canonical ORT schema")
def _(src):
    value = _ort(src)
    how = src.integer(0, 2)
    if how == 0:
        _fields(value)[1].name = src.choice(("b", "weights", "B_"))
    elif how == 1:
        _fields(value)[1].type.tensor_type.shape.dim[2].dim_value += src.integer(1, 4)
    else:
        _fields(value)[2].doc_string = "not canonical"
    return _value_case(value, "OL-ORT-27", "struct_type", "non-canonical ORT descriptor")


@mutant("OL-ORT-28", "an ORT payload whose length differs from B + scales + zero_points")
def _(src):
    value = _ort(src)
    if src.coin():
        value.raw_data = value.raw_data[:src.integer(0, len(value.raw_data) - 1)]
    else:
        value.raw_data += bytes(src.integer(1, 8))
    return _value_case(value, "OL-ORT-28", "raw_data", "ORT payload length")


# --- parameter sets and compact values ----------------------------------------------------------------

def _annotation(model: pb.ModelProto):
    return next(a for a in model.graph.quantization_annotation if a.tensor_name.startswith(PARAMETERS_PREFIX))


def _initializer(model: pb.ModelProto, role: str):
    wanted = next(e.value for e in _annotation(model).quant_parameter_tensor_names if e.key == role)
    return next(t for t in model.graph.initializer if t.name == wanted)


ANNOTATION = "graph.quantization_annotation[0]"
ROLES = f"{ANNOTATION}.quant_parameter_tensor_names"
"""Where a parameter-set fault is reported: the role that names the faulty initializer."""


@mutant("OL-SHR-02", "a parameter-set role outside the allowed ten")
def _(src):
    model = compact_model(src)
    _annotation(model).quant_parameter_tensor_names.add(key=src.choice(("scale", "bias", "g_idx", "")),
                                                        value=_initializer(model, "scales").name)
    return _model_case(model, "OL-SHR-02", ANNOTATION, "unknown role")


@mutant("OL-SHR-03", "a role named twice in one parameter set")
def _(src):
    model = compact_model(src)
    entries = _annotation(model).quant_parameter_tensor_names
    twin = src.choice(list(entries))
    entries.add().CopyFrom(twin)
    return _model_case(model, "OL-SHR-03", ANNOTATION, "role named twice")


@mutant("OL-SHR-04", "a parameter set without scales")
def _(src):
    model = compact_model(src)
    entries = _annotation(model).quant_parameter_tensor_names
    kept = [e for e in entries if e.key != "scales"]
    del entries[:]
    entries.extend(kept)
    return _model_case(model, "OL-SHR-04", ANNOTATION, "no scales")


@mutant("OL-SHR-05", "two parameter sets with the same name")
def _(src):
    model = compact_model(src)
    model.graph.quantization_annotation.add().CopyFrom(_annotation(model))
    return _model_case(model, "OL-SHR-05", "graph.quantization_annotation[1]", "duplicate set name")


@mutant("OL-SHR-06", "a parameter set with an empty name")
def _(src):
    model = compact_model(src)
    model.graph.quantization_annotation.add().CopyFrom(_annotation(model))
    model.graph.quantization_annotation[-1].tensor_name = PARAMETERS_PREFIX
    return _model_case(model, "OL-SHR-06", "graph.quantization_annotation[1]", "empty set name")


@mutant("OL-SHR-07", "a role naming a missing initializer")
def _(src):
    model = compact_model(src)
    entry = src.choice(list(_annotation(model).quant_parameter_tensor_names))
    entry.value = entry.value + src.choice(("_missing", "x"))
    return _model_case(model, "OL-SHR-07", ANNOTATION, "missing initializer")


@mutant("OL-SHR-08", "a storage_type or logical_type initializer that is not inline rank-1 UINT8 bytes")
def _(src):
    model = compact_model(src)
    tensor = _initializer(model, src.choice(("storage_type", "logical_type")))
    how = src.integer(0, 2)
    if how == 0:
        tensor.data_type = src.choice((DataType.FLOAT, DataType.INT8, DataType.INT64))
    elif how == 1:
        tensor.dims[0] += src.integer(1, 5)
    else:
        tensor.raw_data = b"\xff\xff\xff"
        tensor.dims[0] = 3
    return _model_case(model, "OL-SHR-08", ANNOTATION, "descriptor initializer malformed")


@mutant("OL-SHR-09", "a numeric parameter left in external data")
def _(src):
    model = compact_model(src)
    tensor = _initializer(model, "scales")
    tensor.ClearField("raw_data")
    tensor.data_location = pb.TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value="scales.bin")
    return _model_case(model, "OL-SHR-09", ROLES, "external scales")


@mutant("OL-SHR-10", "parameters that do not fit the storage descriptor")
def _(src):
    model = compact_model(src)
    tensor = _initializer(model, "scales")
    count = (tensor.dims[0] if len(tensor.dims) else 1) + src.integer(1, 3)
    tensor.CopyFrom(array_to_tensor(np.ones(count, np.float32), DataType.FLOAT))
    tensor.name = _initializer_name(model, "scales")
    return _model_case(model, "OL-SHR-10", ROLES, "scales of the wrong size")


def _initializer_name(model: pb.ModelProto, role: str) -> str:
    return next(e.value for e in _annotation(model).quant_parameter_tensor_names if e.key == role)


def _compact(model: pb.ModelProto):
    return next(v for v in model.graph.encoded_initializer if v.HasField("parameter_ref"))


COMPACT = "graph.encoded_initializer[0]"


@mutant("OL-SHR-21", "a compact initializer whose logical type differs from its set's")
def _(src):
    model = compact_model(src)
    dims = _compact(model).logical_type.tensor_type.shape.dim
    dims[0].dim_value += src.integer(1, 4)
    return _model_case(model, "OL-SHR-21", COMPACT, "compact logical type changed")


@mutant("OL-SHR-22", "a compact initializer whose compact type differs from its set's")
def _(src):
    model = compact_model(src)
    local = _compact(model).struct_type.structure.field[0]
    if src.coin():
        local.type.tensor_type.shape.dim[0].dim_value += src.integer(1, 4)
    else:
        local.name = "locals"
    return _model_case(model, "OL-SHR-22", COMPACT, "compact type changed")


@mutant("OL-SHR-23", "a compact initializer whose payload extent differs from its set's")
def _(src):
    model = compact_model(src)
    value = _compact(model)
    value.raw_data = value.raw_data + bytes(src.integer(1, 4)) if src.coin() else value.raw_data[:-1]
    return _model_case(model, "OL-SHR-23", COMPACT, "compact payload length")


@mutant("OL-SHR-27", "a compact payload whose first byte is not 0")
def _(src):
    model = compact_model(src)
    value = _compact(model)
    value.raw_data = bytes([src.integer(1, 255)]) + value.raw_data[1:]
    return _model_case(model, "OL-SHR-27", f"{COMPACT}.raw_data", "compact reserved byte set")


@mutant("OL-SHR-29", "a compact value without the model that declares its set")
def _(src):
    model = compact_model(src)
    if src.coin():
        return _value_case(_compact(model), "OL-SHR-29", "parameter_ref", "compact value alone")
    _compact(model).parameter_ref = src.choice(("other", "common2", ""))
    return _model_case(model, "OL-SHR-29", COMPACT, "undeclared parameter set")


def _quantize_node(model: pb.ModelProto, graph=None):
    graph = model.graph if graph is None else graph
    node = graph.node.add(op_type="Quantize", domain="ai.rt", input=["x"], output=["q"])
    attribute = node.attribute.add(name="type", type=13)
    attribute.tp.struct_type.CopyFrom(_annotation_storage(model))
    return node


def _annotation_storage(model: pb.ModelProto) -> pb.StructTypeProto:
    storage = pb.StructTypeProto()
    storage.ParseFromString(_initializer(model, "storage_type").raw_data)
    return storage


@mutant("OL-SHR-31", "a parameter_ref attribute reference unresolved in graph scope")
def _(src):
    model = compact_model(src)
    node = _quantize_node(model)
    node.attribute.add(name="parameter_ref", type=3, ref_attr_name=src.choice(("set_name", "p")))
    return _model_case(model, "OL-SHR-31", "graph.node[0]", "unresolved attribute reference")


@mutant("OL-SHR-32", "a function call that omits a required function attribute")
def _(src):
    model = compact_model(src)
    function = model.functions.add(name="SharedQuantize", domain="local", input=["x"], output=["q"],
                                   attribute=["set_name"])
    function.opset_import.add(domain="ai.rt", version=1)
    model.opset_import.add(domain="local", version=1)
    model.graph.node.add(op_type="SharedQuantize", domain="local", input=["X"], output=["Q"])
    return _model_case(model, "OL-SHR-32", "graph.node[0]", "required function attribute omitted")


@mutant("OL-OP-04", "a Quantize node whose parameter_ref attribute is empty")
def _(src):
    model = compact_model(src)
    node = _quantize_node(model)
    node.attribute.add(name="parameter_ref", type=3, s=b"")
    return _model_case(model, "OL-OP-04", "graph.node[0]", "empty parameter_ref")


EXCLUDED: dict[str, str] = {
    "OL-WIRE-42": "has no code of its own: model checking of nested graphs reports the nested value's own rule "
                  "(the OL-WIRE-30 mutant family includes values inside an If branch)",
    "OL-SHR-11": "is about the error class (checker.ValidationError), not a refusal with a code of its own",
    "OL-SHR-24": "is raised by materializing a compact value against a set: in a model file the same fault is "
                 "an encoded-initializer fault, OL-SHR-22",
    "OL-SHR-25": "as OL-SHR-24; in a model file the same fault is OL-SHR-21",
    "OL-SHR-26": "as OL-SHR-24; in a model file the same fault is OL-SHR-23",
    "OL-ORT-31": "refuses exporting a valid portable matmulnbits value as MatMulNBits inputs: an API request, "
                 "not a fault a file can carry",
    "OL-OP-02": "is checked when the ai.rt operators run a graph (input dtypes at run time), not when a file is read",
    "OL-OP-03": "is checked when the ai.rt operators run a graph (a Quantize node without type), not by check_model",
    "OL-OP-07": "is checked when the ai.rt operators run a graph (Dequantize's dtype), not by check_model",
}
"""OL reader rules without a mutant, and why."""
